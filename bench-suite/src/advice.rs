//! The "which to use" tables at the top of `report.md`: for each crate's field (strings
//! by length, maps by size, allocators by workload), the best implementation in this run
//! and the runner-up, from the same rows as the tables below them.
//!
//! A cell scores every implementation measured at *every* parameter of its band (string
//! lengths 17-24, say) by the geometric mean of its medians there, and names the best and
//! the next. Time medians on a shared machine are noisy: a runner-up within
//! [`TIE_PCT`] of the best is called a tie.

use std::fmt::Write as _;

use crate::fmt::fmt_value;
use crate::measure::Measurement;

/// Runner-up within this many percent of the best: a tie.
pub const TIE_PCT: f64 = 10.0;

/// What one cell compares.
struct Cell {
    group: &'static str,
    operation: &'static str,
    metric: &'static str,
    /// Which parameter values the cell covers.
    params: fn(u64) -> bool,
}

/// One "which to use" table: a row per band, a column per question.
struct Table {
    title: &'static str,
    /// What the row label names (`length`, `keys`, `workload`).
    row_name: &'static str,
    columns: &'static [&'static str],
    rows: Vec<(&'static str, Vec<Cell>)>,
}

fn cell(
    group: &'static str,
    operation: &'static str,
    metric: &'static str,
    params: fn(u64) -> bool,
) -> Cell {
    Cell {
        group,
        operation,
        metric,
        params,
    }
}

fn tables() -> Vec<Table> {
    let strings = |params: fn(u64) -> bool| {
        vec![
            cell("strings", "construct", "ns/op", params),
            cell("strings", "clone+drop", "ns/op", params),
            cell("strings", "traverse", "ns/op", params),
            cell("strings", "construct", "physical B/item", params),
        ]
    };
    let maps = |params: fn(u64) -> bool, large: bool| {
        let mut v = vec![
            cell("tree", "get", "ns/op", params),
            cell("tree", "random build", "ns/op", params),
        ];
        if large {
            v.push(cell("tree", "iterate", "ns/op", params));
            v.push(cell("tree", "range 100", "ns/op", params));
            v.push(cell("tree", "random build", "physical B/item", params));
        } else {
            v.push(cell("tree", "80/20 mix", "ns/op", params));
        }
        v
    };
    let any = |_: u64| true;
    let corpus = |ops: [&'static str; 6]| {
        let mut v: Vec<Cell> = ops[..5]
            .iter()
            .map(|&op| cell("real-text", op, "ns/op", any))
            .collect();
        v.push(cell("real-text", ops[5], "total B/item", any));
        v
    };
    let building = |op: &'static str| vec![cell("real-text", op, "ns/op", any)];
    // The tree group's key-type rows: `key OP: KIND`.
    let keyed = |ops: [&'static str; 5]| {
        let mut v: Vec<Cell> = ops[..4]
            .iter()
            .map(|&op| cell("tree", op, "ns/op", any))
            .collect();
        v.push(cell("tree", ops[4], "B/entry", any));
        v
    };
    let ycsb = |op: &'static str| {
        vec![
            cell("ycsb", op, "ns/op", |t| t == 1),
            cell("ycsb", op, "ns/op", |t| t > 1),
        ]
    };
    vec![
        Table {
            title: "Strings: which type for which length (construct, clone+drop and traverse \
                    16,384 strings; physical bytes per string)",
            row_name: "length (bytes)",
            columns: &[
                "fastest to build",
                "fastest to clone+drop",
                "fastest to read",
                "fewest heap bytes (beyond the handle)",
            ],
            rows: vec![
                ("0-15", strings(|l| l <= 15)),
                ("16", strings(|l| l == 16)),
                ("17-24", strings(|l| (17..=24).contains(&l))),
                ("25-64", strings(|l| (25..=64).contains(&l))),
            ],
        },
        Table {
            title: "Real text: which type for which corpus (Rust sources harvested at run \
                    time; total bytes = handle + heap per string)",
            row_name: "corpus",
            columns: &[
                "fastest to build",
                "fastest to clone",
                "fastest to sort",
                "fastest hash set build",
                "fastest hash lookup",
                "fewest total bytes",
            ],
            rows: vec![
                (
                    "identifiers",
                    corpus([
                        "identifiers build",
                        "identifiers clone",
                        "identifiers sort",
                        "identifiers hash set build",
                        "identifiers hash lookup",
                        "identifiers build",
                    ]),
                ),
                (
                    "trimmed lines",
                    corpus([
                        "lines build",
                        "lines clone",
                        "lines sort",
                        "lines hash set build",
                        "lines hash lookup",
                        "lines build",
                    ]),
                ),
                (
                    "string literals",
                    corpus([
                        "literals build",
                        "literals clone",
                        "literals sort",
                        "literals hash set build",
                        "literals hash lookup",
                        "literals build",
                    ]),
                ),
            ],
        },
        Table {
            title: "Real text: building strings (identifier pairs, number literals)",
            row_name: "operation",
            columns: &["fastest"],
            rows: vec![
                (
                    "join identifier pairs with push_str",
                    building("identifier pairs push_str"),
                ),
                (
                    "format \"{a}::{b}\" from identifier pairs",
                    building("identifier pairs format"),
                ),
                (
                    "integer literals to string",
                    building("integer literals to string"),
                ),
                (
                    "float literals to string",
                    building("float literals to string"),
                ),
            ],
        },
        Table {
            title: "Maps: which map for which size (u64 keys; the sorted Vec is the \
                    read-only floor; for 5K keys and below the third column is the seed's \
                    80/20 read/insert mix)",
            row_name: "keys",
            columns: &[
                "fastest get",
                "fastest random build",
                "fastest iteration / 80/20 mix",
                "fastest 100-key range",
                "fewest bytes",
            ],
            rows: vec![
                ("<= 5K", maps(|k| k <= 5000, false)),
                ("100K", maps(|k| k == 100_000, true)),
                ("1M", maps(|k| k == 1_000_000, true)),
            ],
        },
        Table {
            title: "Maps: which map for which key type (10K to 1M keys, no prefix hint; \
                    live bytes per entry after the build, keys' heap bytes included)",
            row_name: "key type",
            columns: &[
                "fastest insert+get",
                "fastest get",
                "fastest iteration",
                "fastest 100-key range",
                "fewest live bytes",
            ],
            rows: vec![
                (
                    "(u32, u64)",
                    keyed([
                        "key insert+get: (u32, u64)",
                        "key get: (u32, u64)",
                        "key iterate: (u32, u64)",
                        "key range 100: (u32, u64)",
                        "key live bytes: (u32, u64)",
                    ]),
                ),
                (
                    "#[derive(Ord)] struct",
                    keyed([
                        "key insert+get: struct",
                        "key get: struct",
                        "key iterate: struct",
                        "key range 100: struct",
                        "key live bytes: struct",
                    ]),
                ),
                (
                    "String, 26-byte shared prefix (URL)",
                    keyed([
                        "key insert+get: prefixed String",
                        "key get: prefixed String",
                        "key iterate: prefixed String",
                        "key range 100: prefixed String",
                        "key live bytes: prefixed String",
                    ]),
                ),
                (
                    "random String (16 hex digits)",
                    keyed([
                        "key insert+get: random String",
                        "key get: random String",
                        "key iterate: random String",
                        "key range 100: random String",
                        "key live bytes: random String",
                    ]),
                ),
                (
                    "path String (/usr/lib/...)",
                    keyed([
                        "key insert+get: path String",
                        "key get: path String",
                        "key iterate: path String",
                        "key range 100: path String",
                        "key live bytes: path String",
                    ]),
                ),
            ],
        },
        Table {
            title: "Maps under YCSB: which map for which workload (zipfian requests, \
                    100-byte values; one thread: BTreeMap alone, several: RwLock<BTreeMap>)",
            row_name: "workload",
            columns: &["fastest, 1 thread", "fastest, 2+ threads"],
            rows: vec![
                ("A, String keys (50% update)", ycsb("ycsb A (String)")),
                ("B, String keys (5% update)", ycsb("ycsb B (String)")),
                ("C, String keys (read only)", ycsb("ycsb C (String)")),
                ("D, String keys (read latest)", ycsb("ycsb D (String)")),
                ("E, String keys (short scans)", ycsb("ycsb E (String)")),
                (
                    "F, String keys (read-modify-write)",
                    ycsb("ycsb F (String)"),
                ),
                ("A, u64 keys", ycsb("ycsb A (u64)")),
                ("B, u64 keys", ycsb("ycsb B (u64)")),
                ("C, u64 keys", ycsb("ycsb C (u64)")),
                ("D, u64 keys", ycsb("ycsb D (u64)")),
                ("E, u64 keys", ycsb("ycsb E (u64)")),
                ("F, u64 keys", ycsb("ycsb F (u64)")),
            ],
        },
        Table {
            title: "Allocators: which for which workload",
            row_name: "workload",
            columns: &["fastest", "lowest peak RSS"],
            rows: vec![
                (
                    "small blocks: alloc+write+free, 8 B-1 KiB, 1 thread",
                    vec![cell("alloc", "alloc+write+free", "ns/op", |b| b <= 1024)],
                ),
                (
                    "large blocks: alloc+write+free, 64 KiB-1 MiB, 1 thread",
                    vec![cell("alloc", "alloc+write+free", "ns/op", |b| {
                        b >= 64 << 10
                    })],
                ),
                (
                    "the seed's malloc_test loop (1-128 B, realloc), every thread count",
                    vec![
                        cell("alloc", "malloc_test", "Mops/s", any),
                        cell("alloc", "malloc_test", "peak RSS MiB", any),
                    ],
                ),
                (
                    "cross-thread frees: xmalloc producer/consumer, every thread count",
                    vec![
                        cell("alloc", "xmalloc", "Mops/s", any),
                        cell("alloc", "xmalloc", "peak RSS MiB", any),
                    ],
                ),
            ],
        },
    ]
}

/// The best and the runner-up of one cell: (implementation, score) pairs, best first,
/// and whether lower is better.
fn rank(results: &[Measurement], c: &Cell) -> Option<(Vec<(String, f64)>, bool)> {
    let rows: Vec<&Measurement> = results
        .iter()
        .filter(|m| {
            m.group == c.group
                && m.operation == c.operation
                && m.metric == c.metric
                && (c.params)(m.param)
                && m.stats.samples > 0
                && m.stats.median >= 0.0
        })
        .collect();
    let lower = rows.first()?.lower_is_better;
    let mut params: Vec<u64> = rows.iter().map(|m| m.param).collect();
    params.sort_unstable();
    params.dedup();
    let mut imps: Vec<&str> = rows.iter().map(|m| m.implementation.as_str()).collect();
    imps.sort_unstable();
    imps.dedup();
    let mut scored: Vec<(String, f64)> = imps
        .into_iter()
        .filter_map(|imp| {
            let v: Vec<f64> = params
                .iter()
                .map(|p| {
                    rows.iter()
                        .find(|m| m.implementation == imp && m.param == *p)
                        .map(|m| m.stats.median)
                })
                .collect::<Option<_>>()?;
            // The geometric mean, or the plain mean where a value is 0 (heap bytes of an
            // inline string).
            let score = if v.iter().all(|x| *x > 0.0) {
                (v.iter().map(|x| x.ln()).sum::<f64>() / v.len() as f64).exp()
            } else {
                v.iter().sum::<f64>() / v.len() as f64
            };
            Some((imp.to_owned(), score))
        })
        .collect();
    scored.sort_by(|a, b| {
        let o = a.1.partial_cmp(&b.1).expect("medians are not NaN");
        if lower { o } else { o.reverse() }
    });
    (!scored.is_empty()).then_some((scored, lower))
}

/// How far `w` is behind the best `v`, in percent (0 for two zeros).
fn behind(v: f64, w: f64, lower: bool) -> f64 {
    let (good, bad) = if lower { (v, w) } else { (w, v) };
    if good == bad {
        0.0
    } else if good <= 0.0 {
        f64::INFINITY
    } else {
        (bad / good - 1.0) * 100.0
    }
}

/// The best, every implementation tied with it (within [`TIE_PCT`], at most three
/// named), and the next one after them.
fn describe(ranked: &[(String, f64)], lower: bool, unit: &str) -> String {
    let (best, v) = &ranked[0];
    let tied: Vec<&(String, f64)> = ranked[1..]
        .iter()
        .take_while(|(_, w)| behind(*v, *w, lower) <= TIE_PCT)
        .collect();
    let mut s = format!("**{}** {} {unit}", code(best), fmt_value(*v));
    if !tied.is_empty() {
        let names: Vec<String> = tied
            .iter()
            .take(3)
            .map(|(n, w)| format!("{} ({:+.0}%)", code(n), behind(*v, *w, lower)))
            .collect();
        let more = if tied.len() > 3 {
            format!(" and {} more", tied.len() - 3)
        } else {
            String::new()
        };
        let _ = write!(s, "; tie with {}{more}", names.join(", "));
    }
    if let Some((next, w)) = ranked.get(1 + tied.len()) {
        let _ = write!(s, "; next {} {} {unit}", code(next), fmt_value(*w));
    }
    s
}

/// A name as Markdown code when it has characters Markdown would eat (`Arc<str>`).
pub fn code(name: &str) -> String {
    if name.contains(['<', '>', '*', '|']) {
        format!("`{name}`")
    } else {
        name.to_owned()
    }
}

fn unit(metric: &str) -> &str {
    match metric {
        "ns/op" => "ns",
        "physical B/item" | "total B/item" => "B",
        "peak RSS MiB" => "MiB",
        m => m,
    }
}

/// The "which to use" section (empty if no table has a measured cell).
pub fn section(results: &[Measurement]) -> String {
    let mut out = String::new();
    for t in tables() {
        let mut body = String::new();
        let mut any = false;
        for (label, cells) in &t.rows {
            let _ = write!(body, "| {label} |");
            for c in cells {
                match rank(results, c) {
                    Some((ranked, lower)) => {
                        any = true;
                        let _ = write!(body, " {} |", describe(&ranked, lower, unit(c.metric)));
                    }
                    None => {
                        let _ = write!(body, " - |");
                    }
                }
            }
            for _ in cells.len()..t.columns.len() {
                let _ = write!(body, " - |");
            }
            let _ = writeln!(body);
        }
        if any {
            let _ = writeln!(out, "### {}\n", t.title);
            let _ = writeln!(out, "| {} | {} |", t.row_name, t.columns.join(" | "));
            let _ = writeln!(out, "|---|{}", "---|".repeat(t.columns.len()));
            out.push_str(&body);
            let _ = writeln!(out);
        }
    }
    if !out.is_empty() {
        out.insert_str(
            0,
            &format!(
                "## Which to use\n\nFrom this run: per band, the best implementation by the \
                 geometric mean of its medians over the band's sizes (only implementations \
                 measured at all of them), then the runner-up; a runner-up within {TIE_PCT}% \
                 is a tie (times on a shared machine are noisy: see the spreads below).\n\n"
            ),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::{Instrument, Stats};

    fn m(op: &str, imp: &str, param: u64, v: f64) -> Measurement {
        Measurement {
            group: "strings".into(),
            operation: op.into(),
            implementation: imp.into(),
            param_name: "len".into(),
            param,
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
    fn best_by_geometric_mean_over_the_band_and_ties_within_ten_percent() {
        let rs = vec![
            m("construct", "A", 17, 10.0),
            m("construct", "A", 24, 40.0), // geo 20
            m("construct", "B", 17, 21.0),
            m("construct", "B", 24, 21.0), // geo 21: a tie
            m("construct", "C", 17, 1.0),  // not measured at 24: left out
            m("construct", "A", 8, 1000.0),
            m("construct", "B", 8, 1.0),
            m("clone+drop", "Arc<str>", 32, 3.0),
            m("clone+drop", "B", 32, 9.0),
        ];
        let s = section(&rs);
        assert!(
            s.contains("| 17-24 | **A** 20 ns; tie with B (+5%) | - |"),
            "{s}"
        );
        assert!(s.contains("| 0-15 | **B** 1 ns; next A 1000 ns |"), "{s}");
        let zeros = [
            ("A".to_owned(), 0.0),
            ("B".to_owned(), 0.0),
            ("C".to_owned(), 24.0),
        ];
        assert_eq!(
            describe(&zeros, true, "B"),
            "**A** 0 B; tie with B (+0%); next C 24 B"
        );
        let higher = [
            ("A".to_owned(), 20.0),
            ("B".to_owned(), 19.0),
            ("C".to_owned(), 5.0),
        ];
        assert_eq!(
            describe(&higher, false, "Mops/s"),
            "**A** 20 Mops/s; tie with B (+5%); next C 5 Mops/s"
        );
        assert!(
            s.contains("| 25-64 | - | **`Arc<str>`** 3 ns; next B 9 ns |"),
            "{s}"
        );
        assert!(!s.contains("Maps"), "{s}");
        assert_eq!(section(&[]), "");
    }
}
