//! Turning measurements into Markdown tables, `report.md` and `results.json`.

use std::fmt::Write as _;
use std::path::Path;

use serde::Serialize;

use crate::fmt::fmt_value;
use crate::measure::Measurement;
use crate::seeds::{AbClaim, Claim};

/// The machine a run was made on.
#[derive(Clone, Debug, Serialize)]
pub struct Machine {
    /// Logical CPUs available to this process.
    pub cores: usize,
    /// CPU model from `/proc/cpuinfo` (or `unknown`).
    pub model: String,
    /// UTC date and time of the run (`YYYY-MM-DD HH:MM`).
    pub date: String,
}

impl Machine {
    /// Reads the machine's description.
    pub fn detect() -> Machine {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let model = std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with("model name"))
                    .and_then(|l| l.split_once(':'))
                    .map(|(_, m)| m.trim().to_owned())
            })
            .unwrap_or_else(|| "unknown".to_owned());
        let secs = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        Machine {
            cores,
            model,
            date: utc_date(secs),
        }
    }
}

/// `YYYY-MM-DD HH:MM` (UTC) for Unix time `secs` (days-to-civil conversion).
pub fn utc_date(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}",
        rem / 3600,
        rem % 3600 / 60
    )
}

fn first_seen<T: PartialEq + Clone>(items: impl Iterator<Item = T>) -> Vec<T> {
    let mut out = Vec::new();
    for i in items {
        if !out.contains(&i) {
            out.push(i);
        }
    }
    out
}

/// The value of `implementation` in the same table row as `m` (same group, operation,
/// parameter and metric), if it was measured.
fn lookup<'a>(
    all: &'a [Measurement],
    m: &Measurement,
    implementation: &str,
) -> Option<&'a Measurement> {
    all.iter().find(|o| {
        o.group == m.group
            && o.operation == m.operation
            && o.param == m.param
            && o.metric == m.metric
            && o.implementation == implementation
    })
}

/// The ratio of `m` to its baseline, if both were measured in this run.
pub fn ratio(all: &[Measurement], m: &Measurement) -> Option<f64> {
    let base = lookup(all, m, m.baseline.as_deref()?)?;
    (base.stats.median != 0.0).then(|| m.stats.median / base.stats.median)
}

/// Markdown tables: one per (group, operation, metric); rows are parameter values,
/// columns implementations; every cell with a baseline shows the ratio to it.
pub fn markdown(results: &[Measurement]) -> String {
    let mut out = String::new();
    for group in first_seen(results.iter().map(|m| m.group.clone())) {
        let _ = writeln!(out, "## {group}\n");
        let in_group: Vec<&Measurement> = results.iter().filter(|m| m.group == group).collect();
        let tables = first_seen(
            in_group
                .iter()
                .map(|m| (m.operation.clone(), m.metric.clone())),
        );
        for (operation, metric) in tables {
            let rows: Vec<&Measurement> = in_group
                .iter()
                .copied()
                .filter(|m| m.operation == operation && m.metric == metric)
                .collect();
            let imps = first_seen(rows.iter().map(|m| m.implementation.clone()));
            let params = first_seen(rows.iter().map(|m| m.param));
            let param_name = &rows[0].param_name;
            let better = if rows[0].lower_is_better {
                "lower is better"
            } else {
                "higher is better"
            };
            let baselines = first_seen(rows.iter().filter_map(|m| m.baseline.clone()));
            let _ = write!(out, "### {operation}: {metric} ({better}");
            if !baselines.is_empty() {
                let _ = write!(out, "; ratio = value / {}", baselines.join(", "));
            }
            let _ = writeln!(out, ")\n");
            let _ = writeln!(out, "| {param_name} | {} |", imps.join(" | "));
            let _ = writeln!(out, "|---:|{}", "---:|".repeat(imps.len()));
            for p in params {
                let _ = write!(out, "| {p} |");
                for imp in &imps {
                    match rows
                        .iter()
                        .find(|m| m.param == p && &m.implementation == imp)
                    {
                        Some(m) => {
                            let _ = write!(out, " {}", fmt_value(m.stats.median));
                            if let (true, Some(r)) = (
                                m.baseline.as_deref() != Some(imp.as_str()),
                                ratio(results, m),
                            ) {
                                let _ = write!(out, " ({r:.2}x)");
                            }
                            let _ = write!(out, " |");
                        }
                        None => {
                            let _ = write!(out, " - |");
                        }
                    }
                }
                let _ = writeln!(out);
            }
            let _ = writeln!(out);
        }
    }
    out
}

/// The JSON document written to `results.json`.
#[derive(Debug, Serialize)]
pub struct Document<'a> {
    /// Where it ran.
    pub machine: &'a Machine,
    /// The command line.
    pub command: &'a str,
    /// Every measurement.
    pub results: &'a [Measurement],
}

/// Writes `report.md` and `results.json` into `dir` (created if missing); `claims` are
/// the seed figures printed beside ours.
pub fn write(
    dir: &Path,
    machine: &Machine,
    command: &str,
    results: &[Measurement],
    claims: &[Claim],
) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let mut md = String::new();
    let _ = writeln!(md, "# memlayout bench-suite report\n");
    let _ = writeln!(md, "- command: `{command}`");
    let _ = writeln!(
        md,
        "- machine: {} logical CPUs, {}",
        machine.cores, machine.model
    );
    let _ = writeln!(md, "- date: {} UTC\n", machine.date);
    let _ = writeln!(
        md,
        "Times are medians over repeated samples; ratios compare implementations measured \
         side by side in this run. Memory rows come from the counting allocator \
         (physical bytes = the allocator's usable size).\n"
    );
    let mut groups: Vec<&str> = Vec::new();
    for m in results {
        if !groups.contains(&m.group.as_str()) {
            groups.push(&m.group);
        }
    }
    let mut plots = Vec::new();
    for g in groups {
        match crate::plot::group_svg(dir, g, results) {
            Ok(Some(p)) => plots.push(p),
            Ok(None) => {}
            Err(e) => return Err(std::io::Error::other(e)),
        }
    }
    if !plots.is_empty() {
        let _ = writeln!(md, "Plots:");
        for p in &plots {
            let name = p
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let _ = writeln!(md, "- [{name}]({name})");
        }
        let _ = writeln!(md);
    }
    let claims = crate::seeds::table(results, claims);
    if !claims.is_empty() {
        let _ = writeln!(md, "## Seed claims beside our numbers\n");
        md.push_str(&claims);
        let _ = writeln!(md);
    }
    md.push_str(&markdown(results));
    std::fs::write(dir.join("report.md"), md)?;
    let doc = Document {
        machine,
        command,
        results,
    };
    let json = serde_json::to_string_pretty(&doc).map_err(std::io::Error::other)?;
    std::fs::write(dir.join("results.json"), json)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::{Instrument, Stats};

    fn m(imp: &str, param: u64, v: f64, base: Option<&str>) -> Measurement {
        Measurement {
            group: "g".into(),
            operation: "op".into(),
            implementation: imp.into(),
            param_name: "len".into(),
            param,
            metric: "ns/op".into(),
            lower_is_better: true,
            instrument: Instrument::Time,
            stats: Stats::exact(v),
            baseline: base.map(Into::into),
            ops: None,
        }
    }

    #[test]
    fn table_has_a_column_per_implementation_and_ratios_to_the_baseline() {
        let rs = vec![
            m("A", 8, 10.0, Some("A")),
            m("B", 8, 5.0, Some("A")),
            m("A", 16, 20.0, Some("A")),
        ];
        let md = markdown(&rs);
        assert!(md.contains("## g"), "{md}");
        assert!(
            md.contains("### op: ns/op (lower is better; ratio = value / A)"),
            "{md}"
        );
        assert!(md.contains("| len | A | B |"), "{md}");
        assert!(md.contains("| 8 | 10 | 5 (0.50x) |"), "{md}");
        assert!(md.contains("| 16 | 20 | - |"), "{md}");
    }

    #[test]
    fn ratio_needs_the_baseline_in_the_same_run() {
        let rs = vec![m("B", 8, 5.0, Some("A"))];
        assert_eq!(ratio(&rs, &rs[0]), None);
        let rs = vec![m("A", 8, 4.0, None), m("B", 8, 5.0, Some("A"))];
        assert_eq!(ratio(&rs, &rs[1]), Some(1.25));
    }

    #[test]
    fn dates_are_civil_utc() {
        assert_eq!(utc_date(0), "1970-01-01 00:00");
        assert_eq!(utc_date(951_782_400), "2000-02-29 00:00");
        assert_eq!(utc_date(1_796_000_000), "2026-11-30 00:53");
    }

    #[test]
    fn write_creates_report_and_json() {
        let dir =
            std::env::temp_dir().join(format!("bench-suite-report-test-{}", std::process::id()));
        let machine = Machine {
            cores: 2,
            model: "test cpu".into(),
            date: "2026-11-30 00:00".into(),
        };
        write(
            &dir,
            &machine,
            "bench-suite --only g",
            &[m("A", 8, 10.0, None)],
            &[],
        )
        .unwrap();
        let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
        assert!(md.contains("test cpu") && md.contains("| 8 | 10 |"), "{md}");
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("results.json")).unwrap())
                .unwrap();
        assert_eq!(json["results"][0]["implementation"], "A");
        assert_eq!(json["machine"]["cores"], 2);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

/// Reads the `results` array of every `*.json` file in `dir` (one file per run).
pub fn read_runs(dir: &Path) -> Result<Vec<Vec<Measurement>>, String> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(format!("{}: no .json result files", dir.display()));
    }
    files
        .iter()
        .map(|f| {
            let text = std::fs::read_to_string(f).map_err(|e| format!("{}: {e}", f.display()))?;
            let doc: serde_json::Value =
                serde_json::from_str(&text).map_err(|e| format!("{}: {e}", f.display()))?;
            serde_json::from_value(doc["results"].clone())
                .map_err(|e| format!("{}: {e}", f.display()))
        })
        .collect()
}

/// The A/B table: for every row measured in both variants, the median over runs of A,
/// of B, and B / A. Rows are keyed by group, operation, implementation, parameter and
/// metric. Rows a seed measured (`seed_ab`) are repeated beside the seed's figure.
pub fn ab_table(
    a_name: &str,
    a: &[Vec<Measurement>],
    b_name: &str,
    b: &[Vec<Measurement>],
    seed_ab: &[AbClaim],
) -> String {
    type Key = (String, String, String, String, u64, String);
    let key = |m: &Measurement| -> Key {
        (
            m.group.clone(),
            m.operation.clone(),
            m.implementation.clone(),
            m.param_name.clone(),
            m.param,
            m.metric.clone(),
        )
    };
    let medians = |runs: &[Vec<Measurement>]| -> Vec<(Key, f64, usize)> {
        let keys = first_seen(
            runs.iter()
                .flatten()
                .filter(|m| m.stats.samples > 0)
                .map(key),
        );
        keys.into_iter()
            .map(|k| {
                let v: Vec<f64> = runs
                    .iter()
                    .flatten()
                    .filter(|m| key(m) == k)
                    .map(|m| m.stats.median)
                    .collect();
                let n = v.len();
                (k, crate::measure::Stats::of(&v).median, n)
            })
            .collect()
    };
    let (ma, mb) = (medians(a), medians(b));
    let mut out = String::new();
    let mut seeds = String::new();
    let _ = writeln!(
        out,
        "| group | operation | implementation | param | metric | {a_name} (median of {}) | {b_name} (median of {}) | {b_name} / {a_name} |",
        a.len(),
        b.len()
    );
    let _ = writeln!(out, "|---|---|---|---:|---|---:|---:|---:|");
    for (k, va, _) in &ma {
        if let Some((_, vb, _)) = mb.iter().find(|(kb, _, _)| kb == k) {
            let r = if *va != 0.0 {
                format!("{:.3}x", vb / va)
            } else {
                "-".into()
            };
            let _ = writeln!(
                out,
                "| {} | {} | {} | {}={} | {} | {} | {} | {r} |",
                k.0,
                k.1,
                k.2,
                k.3,
                k.4,
                k.5,
                fmt_value(*va),
                fmt_value(*vb)
            );
            let seed = seed_ab.iter().find(|c| {
                c.group == k.0 && c.operation == k.1 && c.implementation == k.2 && c.param == k.4
            });
            if let (Some(c), true) = (seed, *va != 0.0) {
                if seeds.is_empty() {
                    let _ = writeln!(seeds, "\nThe seed's A/B beside ours:\n");
                    let _ = writeln!(seeds, "| row | seed | here ({b_name} / {a_name}) | note |");
                    let _ = writeln!(seeds, "|---|---:|---:|---|");
                }
                let _ = writeln!(
                    seeds,
                    "| {} {} {}={} | {} | {:.3}x | {} |",
                    k.1,
                    k.2,
                    k.3,
                    k.4,
                    c.seed,
                    vb / va,
                    c.note
                );
            }
        }
    }
    out.push_str(&seeds);
    out
}

#[cfg(test)]
mod ab_tests {
    use super::*;
    use crate::measure::{Instrument, Stats};

    fn m(v: f64) -> Measurement {
        Measurement {
            group: "objects".into(),
            operation: "churn".into(),
            implementation: "gc-object".into(),
            param_name: "lanes".into(),
            param: 8,
            metric: "ns/op".into(),
            lower_is_better: true,
            instrument: Instrument::Time,
            stats: Stats::exact(v),
            baseline: None,
            ops: None,
        }
    }

    #[test]
    fn medians_over_runs_and_the_ratio() {
        let a = vec![vec![m(10.0)], vec![m(12.0)], vec![m(11.0)]];
        let b = vec![vec![m(20.0)], vec![m(22.0)], vec![m(100.0)]];
        let ab = crate::groups::objects::AB_CLAIMS;
        let t = ab_table("128B", &a, "wide", &b, ab);
        assert!(
            t.contains("| objects | churn | gc-object | lanes=8 | ns/op | 11 | 22 | 2.000x |"),
            "{t}"
        );
        assert!(t.contains("128B (median of 3)"), "{t}");
        // The row is not one the seed measured: no seed table.
        assert!(!t.contains("The seed's A/B"), "{t}");
        let mut shared = m(10.0);
        shared.implementation = "gc-object shared".into();
        let mut wide = shared.clone();
        wide.stats = Stats::exact(13.0);
        let t = ab_table("a", &[vec![shared]], "b", &[vec![wide]], ab);
        assert!(
            t.contains("| churn gc-object shared lanes=8 | 1.16x | 1.300x |"),
            "{t}"
        );
    }
}
