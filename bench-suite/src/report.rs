//! Turning measurements into Markdown tables, `report.md` and `results.json`.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::advice::code;
use crate::fmt::fmt_value;
use crate::goal::Verdict;
use crate::measure::{Instrument, Measurement, NOISE_PCT};
use crate::provenance::{Build, Machine, Provenance};
use crate::seeds::{AbClaim, Claim};

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

/// Whether `m` is a time made of several samples (its cell shows the spread).
pub fn has_spread(m: &Measurement) -> bool {
    m.instrument == Instrument::Time && m.stats.samples > 1
}

/// The marker of a noisy cell.
pub const NOISY: &str = "⚠";

/// One table cell: the median, its spread (`±IQR%`, with [`NOISY`] above
/// [`NOISE_PCT`]) for times, and the ratio to the baseline.
fn cell(all: &[Measurement], m: &Measurement, imp: &str) -> String {
    let mut c = fmt_value(m.stats.median);
    if has_spread(m) {
        let _ = write!(c, " ±{:.0}%", m.stats.spread_pct);
        if m.stats.noisy() {
            let _ = write!(c, " {NOISY}");
        }
    }
    if let (true, Some(r)) = (m.baseline.as_deref() != Some(imp), ratio(all, m)) {
        let _ = write!(c, " ({r:.2}x)");
    }
    c
}

/// How many time rows have a spread, and how many of them are noisy.
pub fn noise_count(results: &[Measurement]) -> (usize, usize) {
    let timed: Vec<&Measurement> = results.iter().filter(|m| has_spread(m)).collect();
    let noisy = timed.iter().filter(|m| m.stats.noisy()).count();
    (timed.len(), noisy)
}

/// Markdown tables: one per (group, operation, metric); rows are parameter values,
/// columns implementations; every cell with a baseline shows the ratio to it, every time
/// its spread.
pub fn markdown(results: &[Measurement]) -> String {
    markdown_in(results, None)
}

/// [`markdown`] for a report written to folder `dir`: under each group's heading, the
/// tutorial that explains it, linked relative to `dir` where `cargo doc` rendered it.
pub fn markdown_in(results: &[Measurement], dir: Option<&Path>) -> String {
    let mut out = String::new();
    for group in first_seen(results.iter().map(|m| m.group.clone())) {
        let _ = writeln!(out, "## {group}\n");
        let page = crate::tutorial::crate_of(&group).and_then(crate::tutorial::rendered);
        if let Some(l) = crate::tutorial::line(&group, dir, page.as_deref()) {
            let _ = writeln!(out, "{l}\n");
        }
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
                let names: Vec<String> = baselines.iter().map(|b| code(b)).collect();
                let _ = write!(out, "; ratio = value / {}", names.join(", "));
            }
            if rows.iter().any(|m| has_spread(m)) {
                let _ = write!(out, "; ±: IQR as % of the median");
            }
            let _ = writeln!(out, ")\n");
            let names: Vec<String> = imps.iter().map(|i| code(i)).collect();
            let _ = writeln!(out, "| {param_name} | {} |", names.join(" | "));
            let _ = writeln!(out, "|---:|{}", "---:|".repeat(imps.len()));
            for p in params {
                let _ = write!(out, "| {p} |");
                for imp in &imps {
                    match rows
                        .iter()
                        .find(|m| m.param == p && &m.implementation == imp)
                    {
                        Some(m) => {
                            let _ = write!(out, " {} |", cell(results, m, imp));
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

/// The rows with a goal, with their verdicts.
pub fn goals(results: &[Measurement]) -> Vec<(&Measurement, Verdict)> {
    results
        .iter()
        .filter_map(|m| {
            let g = m.goal?;
            Some((m, g.judge(m.stats.median, m.stats.max)))
        })
        .collect()
}

/// The Targets table (empty if the run recorded no goal).
pub fn targets_table(results: &[Measurement]) -> String {
    let rows = goals(results);
    if rows.is_empty() {
        return String::new();
    }
    let met = rows.iter().filter(|r| r.1 == Verdict::Met).count();
    let missed = rows.iter().filter(|r| r.1 == Verdict::Missed).count();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "## Targets\n\n{met} met, {missed} missed, {} reference points. Each value is a ratio \
         of medians measured side by side in this run (geometric mean over the lengths it \
         covers; the worst length beside it); time ratios on a shared machine move by \
         several percent between runs.\n",
        rows.len() - met - missed
    );
    let _ = writeln!(out, "| group | target | value | worst | goal | verdict |");
    let _ = writeln!(out, "|---|---|---:|---:|---|---|");
    for (m, v) in rows {
        let verdict = match v {
            Verdict::Met => "met".to_owned(),
            Verdict::Missed => "**missed**".to_owned(),
            Verdict::Reference => "reference".to_owned(),
        };
        let _ = writeln!(
            out,
            "| {} | {} | {:.3} | {:.3} | {} | {verdict} |",
            m.group,
            code(&m.implementation),
            m.stats.median,
            m.stats.max,
            m.goal.map(|g| g.to_string()).unwrap_or_default()
        );
    }
    let _ = writeln!(out);
    out
}

/// The goal lines for stdout: one per target with its verdict.
pub fn goal_lines(results: &[Measurement]) -> String {
    let mut out = String::new();
    for (m, v) in goals(results) {
        let _ = writeln!(
            out,
            "  {:<70} {:6.3} [{:6.3}]  goal {}: {v}",
            m.implementation,
            m.stats.median,
            m.stats.max,
            m.goal.map(|g| g.to_string()).unwrap_or_default()
        );
    }
    out
}

/// The JSON document written to `results.json`.
#[derive(Debug, Serialize)]
pub struct Document<'a> {
    /// Where it ran.
    pub machine: &'a Machine,
    /// How the runner was built.
    pub build: &'a Build,
    /// The command line, quoted for a POSIX shell.
    pub command: &'a str,
    /// Every measurement.
    pub results: &'a [Measurement],
    /// The Scaling rows: each of our scaling series with its growth `exponent`, its fit
    /// error, its peers' fits and its cliff verdict ([`crate::scaling::fit::rows`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub scaling: Vec<crate::scaling::fit::Row>,
}

impl<'a> Document<'a> {
    /// The document of a run.
    pub fn new(p: &'a Provenance, results: &'a [Measurement]) -> Self {
        Document {
            machine: &p.machine,
            build: &p.build,
            command: &p.command,
            results,
            scaling: crate::scaling::fit::rows(results),
        }
    }
}

/// Checks that `dir` can hold the report (created if missing, a file written and
/// removed), so that a run fails before measuring rather than after.
pub fn check_writable(dir: &Path) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let probe = dir.join(".bench-suite-write-test");
    std::fs::write(&probe, b"").map_err(|e| format!("cannot write in {}: {e}", dir.display()))?;
    std::fs::remove_file(&probe).map_err(|e| format!("{}: {e}", probe.display()))
}

/// The plot files a run of any group may write into the report folder.
fn plot_files(dir: &Path) -> Vec<PathBuf> {
    let known: Vec<&str> = crate::groups::all().iter().map(|g| g.name).collect();
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            let stem = p.file_stem().and_then(|s| s.to_str()).unwrap_or("");
            p.extension().is_some_and(|x| x == "svg") && known.contains(&stem)
        })
        .collect()
}

/// The provenance lines at the top of `report.md`.
pub fn provenance_md(p: &Provenance) -> String {
    let (m, b) = (&p.machine, &p.build);
    format!(
        "- command: `{}`\n- commit: {}\n- rustc: {}; {} build; global allocator: {}\n\
         - machine: {} logical CPUs, {}; {}; {}\n- started: {} UTC\n",
        p.command,
        b.commit,
        b.rustc,
        b.profile,
        b.allocator,
        m.cores,
        m.model,
        m.kernel,
        m.libc,
        m.date
    )
}

/// Writes `report.md`, `results.json` and the plots into `dir` (created if missing), and
/// removes the plots of groups this run did not plot; `claims` are the seed figures
/// printed (and plotted) beside ours.
pub fn write(
    dir: &Path,
    prov: &Provenance,
    results: &[Measurement],
    claims: &[Claim],
) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let mut md = String::new();
    let _ = writeln!(md, "# memlayout bench-suite report\n");
    md.push_str(&provenance_md(prov));
    let _ = writeln!(md);
    md.push_str(&crate::scaling::fit::section(results));
    md.push_str(&targets_table(results));
    md.push_str(&crate::advice::section(results));
    let (timed, noisy) = noise_count(results);
    let _ = writeln!(
        md,
        "## How to read the tables\n\nTimes are medians over repeated samples, shown as \
         `median ±IQR%` (the interquartile range as a percentage of the median); {NOISY} \
         marks a noisy cell, whose spread exceeds {NOISE_PCT}% of its median: {noisy} of \
         {timed} time cells in this run. Ratios compare implementations measured side by \
         side in this run. Memory rows come from the counting allocator (physical bytes = \
         the allocator's usable size) and instruction counts from callgrind: both are exact \
         and carry no spread.\n"
    );
    let groups = first_seen(results.iter().map(|m| m.group.clone()));
    let mut plots = Vec::new();
    for g in &groups {
        match crate::plot::group_svg(dir, g, results, claims) {
            Ok(Some(p)) => plots.push(p),
            Ok(None) => {}
            Err(e) => return Err(std::io::Error::other(e)),
        }
    }
    for stale in plot_files(dir) {
        if !plots.contains(&stale) {
            std::fs::remove_file(&stale)?;
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
    md.push_str(&markdown_in(results, Some(dir)));
    std::fs::write(dir.join("report.md"), md)?;
    let json = serde_json::to_string_pretty(&Document::new(prov, results))
        .map_err(std::io::Error::other)?;
    std::fs::write(dir.join("results.json"), json)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::goal::Goal;
    use crate::measure::Stats;

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
            goal: None,
        }
    }

    #[test]
    fn each_crate_group_names_its_tutorial() {
        let mut t = m("CobTree", 8, 10.0, None);
        t.group = "tree".into();
        let md = markdown(&[t, m("A", 8, 1.0, None)]);
        let tree = md.find("## tree").unwrap();
        let g = md.find("## g").unwrap();
        let line = md[tree..g].lines().nth(2).unwrap();
        assert!(line.contains("`cob_tree::_tutorial`"), "{md}");
        assert!(
            !md[g..].contains("_tutorial"),
            "a group of no crate has none: {md}"
        );
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
    fn times_show_their_spread_and_noisy_ones_are_marked() {
        let mut a = m("Arc<str>", 8, 0.0, None);
        a.stats = Stats::of(&[10.0, 10.0, 10.2, 10.4, 10.4]);
        let mut b = m("B", 8, 0.0, Some("Arc<str>"));
        b.stats = Stats::of(&[4.0, 5.0, 5.0, 6.0, 9.0]);
        let md = markdown(&[a.clone(), b.clone()]);
        assert!(md.contains("| len | `Arc<str>` | B |"), "{md}");
        assert!(md.contains("ratio = value / `Arc<str>`; ±: IQR"), "{md}");
        assert!(md.contains("| 8 | 10.2 ±4% | 5 ±20% ⚠ (0.49x) |"), "{md}");
        assert_eq!(noise_count(&[a, b]), (2, 1));
    }

    #[test]
    fn targets_say_met_or_missed() {
        let mut t = m("inline construct: X / Y (ns/op)", 5, 0.0, None);
        t.stats = Stats {
            max: 1.2,
            ..Stats::exact(1.077)
        };
        t.goal = Some(Goal::AtMost(1.0));
        let mut u = t.clone();
        u.implementation = "heap: X / Z".into();
        u.stats = Stats::exact(0.5);
        let md = targets_table(&[t.clone(), u, m("A", 1, 1.0, None)]);
        assert!(md.contains("1 met, 1 missed, 0 reference points"), "{md}");
        assert!(
            md.contains(
                "| g | inline construct: X / Y (ns/op) | 1.077 | 1.200 | <= 1 | **missed** |"
            ),
            "{md}"
        );
        assert!(goal_lines(&[t]).contains("goal <= 1: MISSED"));
        assert_eq!(targets_table(&[m("A", 1, 1.0, None)]), "");
    }

    #[test]
    fn ratio_needs_the_baseline_in_the_same_run() {
        let rs = vec![m("B", 8, 5.0, Some("A"))];
        assert_eq!(ratio(&rs, &rs[0]), None);
        let rs = vec![m("A", 8, 4.0, None), m("B", 8, 5.0, Some("A"))];
        assert_eq!(ratio(&rs, &rs[1]), Some(1.25));
    }

    fn prov() -> Provenance {
        Provenance {
            machine: Machine {
                cores: 2,
                model: "test cpu".into(),
                date: "2026-11-30 00:00".into(),
                kernel: "Linux 6.1".into(),
                libc: "glibc 2.36".into(),
            },
            build: Build {
                commit: "abc-dirty".into(),
                rustc: "rustc 1.95.0".into(),
                profile: "release".into(),
                allocator: "glibc".into(),
            },
            command: "bench-suite --filter 'a b'".into(),
        }
    }

    #[test]
    fn write_creates_report_and_json_and_removes_stale_plots() {
        let dir =
            std::env::temp_dir().join(format!("bench-suite-report-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        // A plot of a group this run does not have, and a file that is not ours.
        std::fs::write(dir.join("tree.svg"), "<svg/>").unwrap();
        std::fs::write(dir.join("notes.svg"), "<svg/>").unwrap();
        write(
            &dir,
            &prov(),
            &[m("A", 8, 10.0, None), m("A", 9, 11.0, None)],
            &[],
        )
        .unwrap();
        let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
        for want in [
            "test cpu",
            "| 8 | 10 |",
            "- command: `bench-suite --filter 'a b'`",
            "- commit: abc-dirty",
            "rustc 1.95.0; release build; global allocator: glibc",
            "Linux 6.1; glibc 2.36",
        ] {
            assert!(md.contains(want), "{want}: {md}");
        }
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("results.json")).unwrap())
                .unwrap();
        assert_eq!(json["results"][0]["implementation"], "A");
        assert_eq!(json["machine"]["cores"], 2);
        assert_eq!(json["build"]["commit"], "abc-dirty");
        assert_eq!(json["command"], "bench-suite --filter 'a b'");
        assert!(!dir.join("tree.svg").exists(), "stale plot kept");
        assert!(
            dir.join("notes.svg").exists(),
            "a file that is not a plot was removed"
        );
        assert!(dir.join("g.svg").exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn an_unwritable_folder_is_refused() {
        assert!(check_writable(Path::new("/proc/forbidden")).is_err());
        let dir = std::env::temp_dir().join(format!("bench-suite-writable-{}", std::process::id()));
        check_writable(&dir).unwrap();
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

/// Rewrites `report.md` and the plots in `dir` from its `results.json` (a run's own
/// provenance and rows): for a report made before a change to the report or the plots.
pub fn replot(dir: &Path, claims: &[Claim]) -> Result<(), String> {
    let path = dir.join("results.json");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let doc: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    fn field<T: serde::de::DeserializeOwned>(
        doc: &serde_json::Value,
        path: &Path,
        k: &str,
    ) -> Result<T, String> {
        serde_json::from_value(doc[k].clone()).map_err(|e| format!("{}: {k}: {e}", path.display()))
    }
    let prov = Provenance {
        machine: field(&doc, &path, "machine")?,
        build: field(&doc, &path, "build")?,
        command: field(&doc, &path, "command")?,
    };
    let results: Vec<Measurement> = field(&doc, &path, "results")?;
    write(dir, &prov, &results, claims).map_err(|e| e.to_string())
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
/// of B, B / A, and the ratio's noise band: each side's band is the union of its runs'
/// interquartile bands (`median ± IQR/2`), and the band of B / A runs from B's low over
/// A's high to B's high over A's low. A ratio whose band contains 1 is a **tie**: the
/// difference is inside the noise. Rows are keyed by group, operation, implementation,
/// parameter and metric. Rows a seed measured (`seed_ab`) are repeated beside the seed's figure.
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
    type Side = (Key, f64, (f64, f64));
    let medians = |runs: &[Vec<Measurement>]| -> Vec<Side> {
        let keys = first_seen(
            runs.iter()
                .flatten()
                .filter(|m| m.stats.samples > 0)
                .map(key),
        );
        keys.into_iter()
            .map(|k| {
                let rows: Vec<&Measurement> =
                    runs.iter().flatten().filter(|m| key(m) == k).collect();
                let v: Vec<f64> = rows.iter().map(|m| m.stats.median).collect();
                let band = rows
                    .iter()
                    .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), m| {
                        let (l, h) = m.stats.band();
                        (lo.min(l), hi.max(h))
                    });
                (k, crate::measure::Stats::of(&v).median, band)
            })
            .collect()
    };
    let (ma, mb) = (medians(a), medians(b));
    let mut out = String::new();
    let mut seeds = String::new();
    let _ = writeln!(
        out,
        "| group | operation | implementation | param | metric | {a_name} (median of {}) | {b_name} (median of {}) | {b_name} / {a_name} | noise band | verdict |",
        a.len(),
        b.len()
    );
    let _ = writeln!(out, "|---|---|---|---:|---|---:|---:|---:|---:|---|");
    let mut ties = 0;
    let mut rows = 0;
    for (k, va, band_a) in &ma {
        if let Some((_, vb, band_b)) = mb.iter().find(|(kb, _, _)| kb == k) {
            rows += 1;
            let (r, band, verdict) = if *va != 0.0 && band_a.0 > 0.0 {
                let (lo, hi) = (band_b.0 / band_a.1, band_b.1 / band_a.0);
                let tie = lo <= 1.0 && 1.0 <= hi;
                ties += usize::from(tie);
                (
                    format!("{:.3}x", vb / va),
                    format!("{lo:.3}-{hi:.3}x"),
                    if tie { "**tie**" } else { "differs" },
                )
            } else {
                ("-".into(), "-".into(), "-")
            };
            let _ = writeln!(
                out,
                "| {} | {} | {} | {}={} | {} | {} | {} | {r} | {band} | {verdict} |",
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
    let _ = writeln!(
        out,
        "\n{ties} of {rows} rows are ties: their B / A lies inside the combined noise band \
         (the runs' interquartile bands of A and of B overlap)."
    );
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
            goal: None,
        }
    }

    #[test]
    fn medians_over_runs_and_the_ratio() {
        let a = vec![vec![m(10.0)], vec![m(12.0)], vec![m(11.0)]];
        let b = vec![vec![m(20.0)], vec![m(22.0)], vec![m(100.0)]];
        let ab = crate::groups::objects::AB_CLAIMS;
        let t = ab_table("128B", &a, "wide", &b, ab);
        assert!(
            t.contains(
                "| objects | churn | gc-object | lanes=8 | ns/op | 11 | 22 | 2.000x | 1.667-10.000x | differs |"
            ),
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
        // Noisy runs whose interquartile bands overlap: a tie, whatever the ratio says.
        let (mut x, mut y) = (m(0.0), m(0.0));
        x.stats = Stats::of(&[9.0, 10.0, 11.0, 12.0, 13.0]);
        y.stats = Stats::of(&[10.0, 11.0, 12.0, 13.0, 14.0]);
        let t = ab_table("a", &[vec![x]], "b", &[vec![y]], &[]);
        assert!(t.contains("| 1.091x | 0.917-1.300x | **tie** |"), "{t}");
        assert!(t.contains("1 of 1 rows are ties"), "{t}");
    }
}
