//! The seeds' published numbers, printed beside ours.
//!
//! Every design in this workspace started from a write-up with numbers (`shared/seeds/`).
//! For each number that one of our rows measures the same way, a [`Claim`] names the row;
//! every group lists its own claims ([`crate::groups::Group::claims`]), and the report
//! prints the seed's figure, ours, and the ratio, with a note where the seed's machine or
//! allocator differs.

use std::fmt::Write as _;

use crate::fmt::fmt_value;
use crate::measure::Measurement;

/// Which of our numbers answers a claim.
#[derive(Clone, Copy, Debug)]
pub enum Ours {
    /// One row's median, times `scale` (to convert to the seed's unit).
    Value {
        /// The implementation.
        implementation: &'static str,
        /// Multiplier from our metric to the seed's unit.
        scale: f64,
    },
    /// The ratio of two implementations' medians in the same row (`implementation / over`).
    Ratio {
        /// Numerator.
        implementation: &'static str,
        /// Denominator.
        over: &'static str,
    },
}

/// One published number of a seed.
#[derive(Clone, Copy, Debug)]
pub struct Claim {
    /// Our group.
    pub group: &'static str,
    /// Our operation.
    pub operation: &'static str,
    /// Our parameter value.
    pub param: u64,
    /// Our metric.
    pub metric: &'static str,
    /// How our number is made from our rows.
    pub ours: Ours,
    /// The seed's number, in the seed's unit.
    pub seed: f64,
    /// The seed's unit (for the table).
    pub unit: &'static str,
    /// What the seed measured, in a few words.
    pub what: &'static str,
    /// Where the seed's setting differs from ours.
    pub note: &'static str,
}

/// A seed's A/B figure (B / A) beside the row of ours that an A/B run measures.
#[derive(Clone, Copy, Debug)]
pub struct AbClaim {
    /// Our group.
    pub group: &'static str,
    /// Our operation.
    pub operation: &'static str,
    /// Our implementation.
    pub implementation: &'static str,
    /// Our parameter value.
    pub param: u64,
    /// The seed's figure, as published.
    pub seed: &'static str,
    /// Where the seed's setting differs.
    pub note: &'static str,
}

fn find<'a>(
    results: &'a [Measurement],
    c: &Claim,
    implementation: &str,
) -> Option<&'a Measurement> {
    results.iter().find(|m| {
        m.group == c.group
            && m.operation == c.operation
            && m.param == c.param
            && m.metric == c.metric
            && m.implementation == implementation
            && m.stats.samples > 0
    })
}

/// Our number for a claim, if the run measured it.
pub fn ours(results: &[Measurement], c: &Claim) -> Option<f64> {
    match c.ours {
        Ours::Value {
            implementation,
            scale,
        } => find(results, c, implementation).map(|m| m.stats.median * scale),
        Ours::Ratio {
            implementation,
            over,
        } => {
            let (a, b) = (find(results, c, implementation)?, find(results, c, over)?);
            (b.stats.median != 0.0).then(|| a.stats.median / b.stats.median)
        }
    }
}

/// The "seed claim vs measured here" table for the groups in `results` (empty if no
/// claim was measured).
pub fn table(results: &[Measurement], claims: &[Claim]) -> String {
    let mut out = String::new();
    for c in claims {
        let Some(v) = ours(results, c) else { continue };
        if out.is_empty() {
            let _ = writeln!(
                out,
                "| group | seed claim | seed | measured here | here / seed | note |"
            );
            let _ = writeln!(out, "|---|---|---:|---:|---:|---|");
        }
        let ratio = if c.seed != 0.0 {
            format!("{}x", fmt_value(v / c.seed))
        } else {
            "-".into()
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} {} | {} {} | {ratio} | {} |",
            c.group,
            c.what,
            fmt_value(c.seed),
            c.unit,
            fmt_value(v),
            c.unit,
            c.note
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::{Instrument, Stats};

    fn m(imp: &str, v: f64) -> Measurement {
        Measurement {
            group: "tree".into(),
            operation: "get".into(),
            implementation: imp.into(),
            param_name: "keys".into(),
            param: 100,
            metric: "ns/op".into(),
            lower_is_better: true,
            instrument: Instrument::Time,
            stats: Stats::exact(v),
            baseline: None,
            ops: None,
            goal: None,
        }
    }

    const C: [Claim; 3] = [
        Claim {
            group: "tree",
            operation: "get",
            param: 100,
            metric: "ns/op",
            ours: Ours::Value {
                implementation: "CobTree",
                scale: 1.0,
            },
            seed: 78.7,
            unit: "ns",
            what: "point lookup, 100 keys",
            note: "other machine",
        },
        Claim {
            group: "tree",
            operation: "get",
            param: 100,
            metric: "ns/op",
            ours: Ours::Ratio {
                implementation: "CobTree",
                over: "BTreeMap",
            },
            seed: 4.0,
            unit: "x",
            what: "lookup vs BTreeMap",
            note: "",
        },
        Claim {
            group: "tree",
            operation: "get",
            param: 5000,
            metric: "ns/op",
            ours: Ours::Value {
                implementation: "CobTree",
                scale: 1.0,
            },
            seed: 104.7,
            unit: "ns",
            what: "not measured",
            note: "",
        },
    ];

    #[test]
    fn prints_seed_ours_and_ratio_for_measured_claims_only() {
        let rs = [m("CobTree", 20.0), m("BTreeMap", 10.0)];
        let t = table(&rs, &C);
        assert!(
            t.contains(
                "| tree | point lookup, 100 keys | 78.7 ns | 20 ns | 0.254x | other machine |"
            ),
            "{t}"
        );
        assert!(
            t.contains("| tree | lookup vs BTreeMap | 4 x | 2 x | 0.5x |"),
            "{t}"
        );
        assert!(!t.contains("not measured"), "{t}");
        assert_eq!(table(&[], &C), "");
    }
}
