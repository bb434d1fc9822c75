//! Growth exponents and the cliff rules, computed from the scaling groups' rows of a run
//! (so `--replot` recomputes them from `results.json`).
//!
//! A *series* is one implementation's points of one (group, operation, metric): the
//! per-operation cost (or bytes per element) at each `n`. Its exponent is the slope of the
//! least-squares line through `(ln n, ln cost)`, as Google Benchmark's `Complexity()` fits
//! a curve to its sizes: per-operation cost that does not grow has exponent 0, an
//! `O(log n)` operation about 0.1 over 1K-1M (`ln 20 / ln 10` over `ln 1000`), an `O(n)`
//! operation (a quadratic build) 1. The error is the slope's standard error (from the
//! residuals; 0 with two points).
//!
//! The rules ([`TIME_MARGIN`], [`TIME_OUTRIGHT`], [`MEMORY_FACTOR`], [`MEMORY_FLOOR`]) are
//! applied to our implementations' series ([`is_ours`]); peers are the other
//! implementations of the same operation and metric.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::measure::Measurement;

/// Groups whose rows are scaling sweeps start with this.
pub use crate::groups::group::SCALING_PREFIX as GROUP_PREFIX;

/// Parameter name of a sweep over element counts (block sizes use `bytes`).
pub const PARAM: &str = "n";

/// A time series is a cliff when its exponent exceeds the best (lowest) peer's by more
/// than this.
pub const TIME_MARGIN: f64 = 0.2;
/// ... or exceeds this whatever the peers do.
pub const TIME_OUTRIGHT: f64 = 0.3;
/// A memory series (bytes per element or per byte) is a cliff when, at some `n`, it
/// exceeds this multiple of the best peer's value at the same `n` ...
pub const MEMORY_FACTOR: f64 = 4.0;
/// ... while our total there (value x n) is at least this many bytes: below it a fixed
/// reservation (an allocator's first segment, a heap's first chunk) is not a blow-up.
pub const MEMORY_FLOOR: f64 = 16.0 * 1024.0 * 1024.0;
/// Fewer points than this give an exponent but no verdict.
pub const MIN_POINTS: usize = 3;

/// Implementation names of our crates (prefixes): the series the rules judge.
pub const OURS: [&str; 5] = ["CobTree", "gc-object", "arena-alloc", "Lean", "lean-string"];

/// Is `implementation` one of our crates' types?
pub fn is_ours(implementation: &str) -> bool {
    OURS.iter().any(|o| implementation.starts_with(o))
}

/// Is `metric` a memory metric (judged by [`MEMORY_FACTOR`]) rather than a time?
pub fn is_memory(metric: &str) -> bool {
    metric.contains("B/")
}

/// A least-squares line through `(ln n, ln value)`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Slope {
    /// The slope: the growth exponent of the value.
    pub exponent: f64,
    /// Its standard error (0 with two points).
    pub error: f64,
    /// Points fitted.
    pub points: usize,
}

/// Fits the log-log slope of `points` (`(n, value)`, positive); `None` with fewer than two
/// distinct `n` or a non-positive value.
pub fn fit(points: &[(f64, f64)]) -> Option<Slope> {
    if points.iter().any(|&(n, v)| !(n > 0.0 && v > 0.0)) {
        return None;
    }
    let xs: Vec<f64> = points.iter().map(|p| p.0.ln()).collect();
    let ys: Vec<f64> = points.iter().map(|p| p.1.ln()).collect();
    let k = xs.len() as f64;
    let (mx, my) = (xs.iter().sum::<f64>() / k, ys.iter().sum::<f64>() / k);
    let sxx: f64 = xs.iter().map(|x| (x - mx) * (x - mx)).sum();
    if xs.len() < 2 || sxx <= 1e-12 {
        return None;
    }
    let sxy: f64 = xs.iter().zip(&ys).map(|(x, y)| (x - mx) * (y - my)).sum();
    let exponent = sxy / sxx;
    let error = if xs.len() > 2 {
        let rss: f64 = xs
            .iter()
            .zip(&ys)
            .map(|(x, y)| {
                let r = y - (my + exponent * (x - mx));
                r * r
            })
            .sum();
        (rss / (k - 2.0) / sxx).sqrt()
    } else {
        0.0
    };
    Some(Slope {
        exponent,
        error,
        points: xs.len(),
    })
}

/// Why a series is flagged.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Cliff {
    /// Its exponent exceeds the best peer's by more than [`TIME_MARGIN`].
    FasterThanPeers,
    /// Its exponent exceeds [`TIME_OUTRIGHT`].
    Outright,
    /// Its bytes per element exceed [`MEMORY_FACTOR`] x the best peer's at `n`.
    Memory {
        /// Where.
        n: u64,
        /// Our value over the best peer's there.
        ratio: f64,
    },
}

/// The time rule: `ours` against the peers' exponents. Above [`TIME_OUTRIGHT`] a row is
/// flagged unless some peer grows at least as fast: past the caches every map's lookups
/// grow by 0.3 or more on some machines, and flagging a row that grows no faster than a
/// peer would send the reader after the machine, not the crate.
pub fn time_cliff(ours: f64, peers: &[f64]) -> Option<Cliff> {
    let best = peers.iter().copied().reduce(f64::min);
    if best.is_some_and(|p| ours > p + TIME_MARGIN) {
        Some(Cliff::FasterThanPeers)
    } else if ours > TIME_OUTRIGHT && peers.iter().all(|&p| ours > p) {
        Some(Cliff::Outright)
    } else {
        None
    }
}

/// The memory rule: the first `n` where ours exceeds [`MEMORY_FACTOR`] x the lowest peer
/// value at the same `n` while `ours x n` >= [`MEMORY_FLOOR`]; `peers` are
/// `(n, value)` of every peer.
pub fn memory_cliff(ours: &[(u64, f64)], peers: &[(u64, f64)]) -> Option<Cliff> {
    ours.iter().find_map(|&(n, v)| {
        let best = peers
            .iter()
            .filter(|p| p.0 == n)
            .map(|p| p.1)
            .fold(f64::INFINITY, f64::min);
        let ratio = v / best.max(1e-9);
        (best.is_finite() && v * n as f64 >= MEMORY_FLOOR && ratio > MEMORY_FACTOR)
            .then_some(Cliff::Memory { n, ratio })
    })
}

/// Whether `ours` is still at most every peer's value at its largest `n` that a peer also
/// measured: then its growth starts from a lower floor (a fast operation meeting the
/// memory bus) and is not a cliff, whatever its exponent.
pub fn cheapest_at_the_end(ours: &Series, peers: &[Series]) -> bool {
    ours.points.iter().rev().find_map(|&(n, v)| {
        let at_n: Vec<f64> = peers
            .iter()
            .filter_map(|p| p.points.iter().find(|q| q.0 == n).map(|q| q.1))
            .collect();
        (!at_n.is_empty()).then(|| at_n.iter().all(|&p| v <= p))
    }) == Some(true)
}

/// One implementation's series and its fit.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Series {
    /// The implementation.
    pub implementation: String,
    /// The fit (`None`: fewer than two usable points).
    pub fit: Option<Slope>,
    /// `(n, value)` per point, in increasing `n`.
    pub points: Vec<(u64, f64)>,
}

/// A row of the Scaling section: one of our series with its peers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// The scaling group (`scaling-tree`, ...).
    pub group: String,
    /// The operation and input shape.
    pub operation: String,
    /// The metric (`ns/op`, `peak B/elem`, ...).
    pub metric: String,
    /// What `n` counts.
    pub param_name: String,
    /// Our implementation.
    pub implementation: String,
    /// Its growth exponent (`None`: fewer than two points).
    pub exponent: Option<f64>,
    /// The exponent's standard error.
    pub error: Option<f64>,
    /// Our series.
    pub ours: Series,
    /// Every peer's series.
    pub peers: Vec<Series>,
    /// The peer with the lowest exponent (time) or the lowest values (memory).
    pub best_peer: Option<String>,
    /// Why it is flagged (`None`: no cliff).
    pub cliff: Option<Cliff>,
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

/// The Scaling rows of `results` (the scaling groups' rows), flagged ones first.
pub fn rows(results: &[Measurement]) -> Vec<Row> {
    let scaled: Vec<&Measurement> = results
        .iter()
        .filter(|m| m.group.starts_with(GROUP_PREFIX) && m.stats.samples > 0)
        .collect();
    let mut out = Vec::new();
    let tables = first_seen(
        scaled
            .iter()
            .map(|m| (m.group.clone(), m.operation.clone(), m.metric.clone())),
    );
    for (group, operation, metric) in tables {
        let in_table: Vec<&Measurement> = scaled
            .iter()
            .copied()
            .filter(|m| m.group == group && m.operation == operation && m.metric == metric)
            .collect();
        let series: Vec<Series> = first_seen(in_table.iter().map(|m| m.implementation.clone()))
            .into_iter()
            .map(|imp| {
                let mut points: Vec<(u64, f64)> = in_table
                    .iter()
                    .filter(|m| m.implementation == imp)
                    .map(|m| (m.param, m.stats.median))
                    .collect();
                points.sort_by_key(|p| p.0);
                // A memory growth of 0 bytes has no logarithm: fitted without it.
                let xy: Vec<(f64, f64)> = points
                    .iter()
                    .filter(|p| p.1 > 0.0)
                    .map(|&(n, v)| (n as f64, v))
                    .collect();
                Series {
                    implementation: imp,
                    fit: fit(&xy),
                    points,
                }
            })
            .collect();
        let memory = is_memory(&metric);
        for s in series.iter().filter(|s| is_ours(&s.implementation)) {
            let peers: Vec<Series> = series
                .iter()
                .filter(|p| !is_ours(&p.implementation))
                .cloned()
                .collect();
            let (best_peer, cliff) = if memory {
                let all: Vec<(u64, f64)> = peers.iter().flat_map(|p| p.points.clone()).collect();
                let best = peers
                    .iter()
                    .min_by(|a, b| {
                        let m = |s: &Series| s.points.last().map_or(f64::INFINITY, |p| p.1);
                        m(a).total_cmp(&m(b))
                    })
                    .map(|p| p.implementation.clone());
                (best, memory_cliff(&s.points, &all))
            } else {
                let fitted: Vec<(&Series, Slope)> = peers
                    .iter()
                    .filter_map(|p| Some((p, p.fit?)))
                    .filter(|(_, f)| f.points >= MIN_POINTS)
                    .collect();
                let best = fitted
                    .iter()
                    .min_by(|a, b| a.1.exponent.total_cmp(&b.1.exponent));
                let exps: Vec<f64> = fitted.iter().map(|f| f.1.exponent).collect();
                let cliff = s
                    .fit
                    .filter(|f| f.points >= MIN_POINTS && !cheapest_at_the_end(s, &peers))
                    .and_then(|f| time_cliff(f.exponent, &exps));
                (best.map(|b| b.0.implementation.clone()), cliff)
            };
            out.push(Row {
                group: group.clone(),
                operation: operation.clone(),
                metric: metric.clone(),
                param_name: in_table[0].param_name.clone(),
                implementation: s.implementation.clone(),
                exponent: s.fit.map(|f| f.exponent),
                error: s.fit.map(|f| f.error),
                ours: s.clone(),
                peers,
                best_peer,
                cliff,
            });
        }
    }
    // Stable: flagged rows first, each part in run order.
    out.sort_by_key(|r| r.cliff.is_none());
    out
}

fn fmt_fit(f: Option<Slope>) -> String {
    match f {
        Some(f) if f.points > 2 => format!("{:.2} ±{:.2}", f.exponent, f.error),
        Some(f) => format!("{:.2} (2 points)", f.exponent),
        None => "-".into(),
    }
}

fn range(s: &Series) -> String {
    match (s.points.first(), s.points.last()) {
        (Some(a), Some(b)) => format!(
            "{}-{} ({})",
            crate::plot::tick(a.0 as f64),
            crate::plot::tick(b.0 as f64),
            s.points.len()
        ),
        _ => "-".into(),
    }
}

/// What the cliff column says.
fn why(r: &Row) -> String {
    let best = r
        .peers
        .iter()
        .find(|p| Some(&p.implementation) == r.best_peer.as_ref());
    match &r.cliff {
        None => String::new(),
        Some(Cliff::FasterThanPeers) => format!(
            "**cliff**: {:.2} over the best peer's {}",
            r.exponent.unwrap_or(0.0) - best.and_then(|b| b.fit).map_or(0.0, |f| f.exponent),
            TIME_MARGIN
        ),
        Some(Cliff::Outright) => {
            format!("**cliff**: exponent above {TIME_OUTRIGHT} and every peer's")
        }
        Some(Cliff::Memory { n, ratio }) => format!(
            "**cliff**: {ratio:.1}x the best peer's bytes at {}={}",
            r.param_name,
            crate::plot::param_tick(&r.param_name, *n)
        ),
    }
}

/// The first and last value of our series over the same of the best peer (memory rows:
/// where the memory rule looks).
fn last_ratio(r: &Row) -> String {
    let Some(best) = r
        .peers
        .iter()
        .find(|p| Some(&p.implementation) == r.best_peer.as_ref())
    else {
        return "-".into();
    };
    let at = |s: &Series, n: u64| s.points.iter().find(|p| p.0 == n).map(|p| p.1);
    let ratios: Vec<f64> = r
        .ours
        .points
        .iter()
        .filter_map(|&(n, v)| Some(v / at(best, n)?))
        .filter(|x| x.is_finite())
        .collect();
    match (ratios.first(), ratios.last()) {
        (Some(a), Some(b)) => format!("{a:.2}x → {b:.2}x"),
        _ => "-".into(),
    }
}

/// The **Scaling** section of `report.md` (empty when the run swept nothing).
pub fn section(results: &[Measurement]) -> String {
    let rows = rows(results);
    if rows.is_empty() {
        return String::new();
    }
    let flagged = rows.iter().filter(|r| r.cliff.is_some()).count();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "## Scaling\n\n{flagged} of {} rows flagged. Each row is one of our implementations \
         on one operation and input shape, swept over n spaced 4x (per-operation thread CPU \
         time, or bytes per element); exponent = slope of ln(value) over ln(n) by least squares, \
         ± its standard error (0 per-op growth = linear total, ~0.1 = n log n, 1 = \
         quadratic total). Rules: a time row is a **cliff** when its exponent exceeds the \
         best peer's by more than {TIME_MARGIN}, or exceeds {TIME_OUTRIGHT} outright while \
         no peer grows as fast (cache effects make every structure's exponent rise); a row \
         still cheaper than every peer at its largest n is not flagged; a \
         memory row when its value at some n exceeds {MEMORY_FACTOR}x the best peer's \
         there while ours totals at least {} MiB (smaller totals are fixed reservations). \
         Rows need {MIN_POINTS} points for a verdict. Per-row points: the `scaling-*` \
         tables and plots below.\n",
        rows.len(),
        MEMORY_FLOOR as u64 >> 20
    );
    let _ = writeln!(
        out,
        "| group | operation | metric | ours | exponent | n (points) | peers' exponents | ours / best peer (first → last n) | verdict |"
    );
    let _ = writeln!(out, "|---|---|---|---|---:|---|---|---:|---|");
    for r in &rows {
        let peers: Vec<String> = r
            .peers
            .iter()
            .map(|p| {
                let best = if Some(&p.implementation) == r.best_peer.as_ref() {
                    "**"
                } else {
                    ""
                };
                format!(
                    "{best}{}{best} {}",
                    crate::advice::code(&p.implementation),
                    fmt_fit(p.fit)
                )
            })
            .collect();
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            r.group.trim_start_matches(GROUP_PREFIX),
            r.operation,
            r.metric,
            crate::advice::code(&r.implementation),
            fmt_fit(r.ours.fit),
            range(&r.ours),
            if peers.is_empty() {
                "-".into()
            } else {
                peers.join(", ")
            },
            last_ratio(r),
            why(r)
        );
    }
    let _ = writeln!(out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::{Instrument, Stats};

    /// Per-operation cost of a total cost `total(n)` at n = 1K, 4K, ..., 1M.
    fn per_op(total: impl Fn(f64) -> f64) -> Vec<(f64, f64)> {
        (0..6)
            .map(|k| {
                let n = 1024.0 * 4f64.powi(k);
                (n, total(n) / n)
            })
            .collect()
    }

    #[test]
    fn linear_n_log_n_and_quadratic_totals() {
        let lin = fit(&per_op(|n| 7.0 * n)).unwrap();
        assert!(lin.exponent.abs() < 1e-9 && lin.error < 1e-9, "{lin:?}");
        assert_eq!(lin.points, 6);
        let nlogn = fit(&per_op(|n| n * n.log2())).unwrap();
        assert!((0.07..0.15).contains(&nlogn.exponent), "n log n: {nlogn:?}");
        assert!(nlogn.error > 0.0 && nlogn.error < 0.02, "{nlogn:?}");
        let quad = fit(&per_op(|n| 3.0 * n * n)).unwrap();
        assert!((quad.exponent - 1.0).abs() < 1e-9, "{quad:?}");
    }

    #[test]
    fn noise_shows_in_the_error_and_bad_points_give_no_fit() {
        let noisy = [(1e3, 10.0), (4e3, 14.0), (16e3, 9.0), (64e3, 12.0)];
        let f = fit(&noisy).unwrap();
        assert!(f.error > 0.05, "{f:?}");
        assert_eq!(fit(&[(1e3, 1.0)]), None);
        assert_eq!(fit(&[(1e3, 1.0), (1e3, 2.0)]), None);
        assert_eq!(fit(&[(1e3, 0.0), (4e3, 2.0)]), None);
        assert_eq!(fit(&[(1e3, 1.0), (4e3, 4.0)]).unwrap().error, 0.0);
    }

    #[test]
    fn time_rule() {
        // Within the margin of the best peer and under the outright limit: fine.
        assert_eq!(time_cliff(0.25, &[0.1, 0.3]), None);
        assert_eq!(time_cliff(0.05, &[]), None);
        // More than 0.2 over the best peer.
        assert_eq!(time_cliff(0.29, &[0.05, 0.4]), Some(Cliff::FasterThanPeers));
        // Over 0.3 outright, when every peer grows more slowly ...
        assert_eq!(time_cliff(0.35, &[0.33, 0.2]), Some(Cliff::Outright));
        assert_eq!(time_cliff(0.31, &[]), Some(Cliff::Outright));
        // ... but not when some peer grows as fast (the machine's caches).
        assert_eq!(time_cliff(0.33, &[0.2, 0.36]), None);
    }

    #[test]
    fn memory_rule() {
        let peers = [(1000, 200_000.0), (1000, 300_000.0), (16, 200_000.0)];
        // 21x the best peer with 4.2 GB in all: flagged at n = 1000.
        assert_eq!(
            memory_cliff(&[(16, 4.2e6), (1000, 4.2e6)], &peers),
            Some(Cliff::Memory { n: 16, ratio: 21.0 })
        );
        // 21x but only 64 KiB in all: a fixed reservation, not flagged.
        assert_eq!(memory_cliff(&[(16, 4096.0)], &[(16, 195.0)]), None);
        // Big but within 4x.
        assert_eq!(memory_cliff(&[(1000, 790_000.0)], &peers), None);
        // No peer at that n: no verdict.
        assert_eq!(memory_cliff(&[(64, 1e9)], &peers), None);
    }

    fn m(imp: &str, metric: &str, n: u64, v: f64) -> Measurement {
        Measurement {
            group: "scaling-tree".into(),
            operation: "insert (u64)".into(),
            implementation: imp.into(),
            param_name: PARAM.into(),
            param: n,
            metric: metric.into(),
            lower_is_better: true,
            instrument: Instrument::Time,
            stats: Stats::exact(v),
            baseline: None,
            ops: None,
            goal: None,
        }
    }

    #[test]
    fn rows_flag_ours_against_the_best_peer_and_come_first() {
        let mut rs = Vec::new();
        for k in 0..4 {
            let n = 1024 * 4u64.pow(k);
            let x = n as f64;
            rs.push(m("BTreeMap", "ns/op", n, 50.0 * x.log2()));
            rs.push(m("SkipMap", "ns/op", n, 90.0 * x.log2() * x.powf(0.05)));
            rs.push(m("CobTree", "ns/op", n, 0.5 * x));
            rs.push(m("CobTree", "peak B/elem", n, 40.0));
            rs.push(m("BTreeMap", "peak B/elem", n, 30.0));
        }
        let mut healthy = m("CobTree", "ns/op", 1024, 1.0);
        healthy.operation = "get (u64)".into();
        rs.push(healthy);
        let rows = rows(&rs);
        assert_eq!(rows.len(), 3, "{rows:#?}");
        assert_eq!(rows[0].implementation, "CobTree");
        assert_eq!(rows[0].metric, "ns/op");
        assert_eq!(rows[0].cliff, Some(Cliff::FasterThanPeers));
        assert!((rows[0].exponent.unwrap() - 1.0).abs() < 1e-9);
        assert_eq!(rows[0].best_peer.as_deref(), Some("BTreeMap"));
        assert_eq!(rows[0].peers.len(), 2);
        // Cheaper than every peer at the end: growth from a lower floor, not a cliff.
        let ours = Series {
            implementation: "CobTree".into(),
            fit: None,
            points: vec![(1000, 1.0), (4000, 4.0)],
        };
        let peer = |v| Series {
            implementation: "BTreeMap".into(),
            fit: None,
            points: vec![(1000, 5.0), (4000, v)],
        };
        assert!(cheapest_at_the_end(&ours, &[peer(4.0)]));
        assert!(!cheapest_at_the_end(&ours, &[peer(3.9)]));
        assert!(!cheapest_at_the_end(&ours, &[]));
        // The one-point row has no verdict; the memory row is within 4x.
        assert!(rows[1..].iter().all(|r| r.cliff.is_none()));
        let md = section(&rs);
        assert!(md.starts_with("## Scaling\n\n1 of 3 rows flagged."), "{md}");
        assert!(
            md.contains("| tree | insert (u64) | ns/op | CobTree | 1.00 ±0.00 | 1k-65.5k (4) |"),
            "{md}"
        );
        assert!(md.contains("**cliff**"), "{md}");
        assert_eq!(section(&[]), "");
    }
}
