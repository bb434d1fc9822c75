//! The seeds' published numbers, printed beside ours.
//!
//! Every design in this workspace started from a write-up with numbers (`shared/seeds/`).
//! For each number that one of our rows measures the same way, [`claims`] names the row;
//! the report prints the seed's figure, ours, and the ratio, with a note where the seed's
//! machine or allocator differs.

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

/// The claims, per group. Groups add theirs here.
pub fn claims() -> Vec<Claim> {
    [STRING_CLAIMS, crate::groups::tree::CLAIMS, ALLOC_CLAIMS].concat()
}

const fn heap_layout(len: u64, seed: f64, what: &'static str) -> Claim {
    Claim {
        group: "strings",
        operation: "construct",
        param: len,
        metric: "physical B/item",
        ours: Ours::Ratio {
            implementation: "LeanString",
            over: "LeanString (forced wide)",
        },
        seed,
        unit: "x",
        what,
        note: "seed: CodSpeed memory of the whole 16,384-string vector on macOS's allocator; here: physical bytes per string under glibc (its size classes differ: the gains move to 25-32 and 41-48 bytes)",
    }
}

/// The lean-string seed's `heap_layout` memory rows: 8-byte header (after) over 16-byte
/// header (before), beside our compact over forced-wide physical bytes per string.
const STRING_CLAIMS: &[Claim] = &[
    heap_layout(
        17,
        656.0 / 784.0,
        "heap_layout construction[17] memory, after / before (784 -> 656 KB)",
    ),
    heap_layout(
        24,
        768.0 / 896.0,
        "heap_layout construction[24] memory, after / before (896 -> 768 KB)",
    ),
    heap_layout(
        32,
        896.0 / 1024.0,
        "heap_layout construction[32] memory, after / before (1,024 -> 896 KB)",
    ),
    heap_layout(
        48,
        1.1 / 1.3,
        "heap_layout construction[48] memory, after / before (1.3 -> 1.1 MB)",
    ),
];

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

const CHURN_AB_NOTE: &str = "seed: exact-parent A/B of a Zig engine's object (256- vs 128-byte slab class), 7 samples; here: the wide-object build (B) over the 128-byte build (A), time per object, > 1 = the 128-byte layout is faster";

/// The gc-object seed's A/B (`gc-object-128-byte-slab.txt`): every direct and
/// independent-context churn row 1.04-1.65x faster; shared 1 / 4 / 8 lanes 1.19x, 1.39x,
/// 1.16x.
pub const AB_CLAIMS: &[AbClaim] = &[
    AbClaim {
        group: "objects",
        operation: "churn",
        implementation: "gc-object independent",
        param: 1,
        seed: "1.04-1.65x (every independent row)",
        note: CHURN_AB_NOTE,
    },
    AbClaim {
        group: "objects",
        operation: "churn",
        implementation: "gc-object independent",
        param: 2,
        seed: "1.04-1.65x (every independent row)",
        note: CHURN_AB_NOTE,
    },
    AbClaim {
        group: "objects",
        operation: "churn",
        implementation: "gc-object independent",
        param: 4,
        seed: "1.04-1.65x (every independent row)",
        note: CHURN_AB_NOTE,
    },
    AbClaim {
        group: "objects",
        operation: "churn",
        implementation: "gc-object independent",
        param: 8,
        seed: "1.04-1.65x (every independent row)",
        note: CHURN_AB_NOTE,
    },
    AbClaim {
        group: "objects",
        operation: "churn",
        implementation: "gc-object shared",
        param: 1,
        seed: "1.19x",
        note: CHURN_AB_NOTE,
    },
    AbClaim {
        group: "objects",
        operation: "churn",
        implementation: "gc-object shared",
        param: 4,
        seed: "1.39x",
        note: CHURN_AB_NOTE,
    },
    AbClaim {
        group: "objects",
        operation: "churn",
        implementation: "gc-object shared",
        param: 8,
        seed: "1.16x",
        note: CHURN_AB_NOTE,
    },
];

// One claim of the `alloc` group: a constructor keeps the table below readable.
#[allow(clippy::too_many_arguments)]
const fn alloc_value(
    operation: &'static str,
    param: u64,
    metric: &'static str,
    implementation: &'static str,
    seed: f64,
    unit: &'static str,
    what: &'static str,
    note: &'static str,
) -> Claim {
    Claim {
        group: "alloc",
        operation,
        param,
        metric,
        ours: Ours::Value {
            implementation,
            scale: 1.0,
        },
        seed,
        unit,
        what,
        note,
    }
}

const ONE_THREAD: &str = "seed/design note: another 2-core x86_64 machine; here: this machine";
const SIXTEEN_CORES: &str = "design note: 16-core x86_64, 2M iterations per thread; here: this machine (compare on a 16-core run of the sweep kit)";

/// The allocator seed (`sso-string-and-per-core-arenas.txt`) and the anchors of the
/// design note `arena-alloc.md`, beside the `alloc` group's rows.
const ALLOC_CLAIMS: &[Claim] = &[
    alloc_value(
        "malloc_test loop",
        1,
        "ns/op",
        "glibc",
        121.0,
        "ns/iteration",
        "seed loop, 1 thread: glibc",
        ONE_THREAD,
    ),
    alloc_value(
        "malloc_test loop",
        1,
        "ns/op",
        "mimalloc",
        50.0,
        "ns/iteration",
        "seed loop, 1 thread: mimalloc",
        ONE_THREAD,
    ),
    alloc_value(
        "malloc_test loop",
        1,
        "ns/op",
        "arena-alloc",
        121.0,
        "ns/iteration",
        "seed loop, 1 thread: arena-alloc vs the seed's glibc (target: no slower than glibc)",
        ONE_THREAD,
    ),
    alloc_value(
        "alloc+free 16 B, size opaque",
        16,
        "instructions/op",
        "glibc",
        136.0,
        "instructions",
        "16-byte alloc+free pair: glibc",
        "callgrind; ours includes the loop (~6 instructions)",
    ),
    alloc_value(
        "alloc+free 16 B, size opaque",
        16,
        "instructions/op",
        "mimalloc",
        70.0,
        "instructions",
        "16-byte alloc+free pair: mimalloc",
        "callgrind; ours includes the loop (~6 instructions)",
    ),
    alloc_value(
        "alloc+free 16 B, size opaque",
        16,
        "instructions/op",
        "jemalloc",
        61.0,
        "instructions",
        "16-byte alloc+free pair: jemalloc",
        "callgrind; ours includes the loop (~6 instructions)",
    ),
    alloc_value(
        "alloc+free 16 B, size opaque",
        16,
        "instructions/op",
        "arena-alloc",
        100.0,
        "instructions",
        "16-byte alloc+free pair, size opaque: arena-alloc (target <= 100)",
        "design target, not a measurement; ours includes the loop (~6 instructions)",
    ),
    alloc_value(
        "alloc+free 16 B",
        16,
        "instructions/op",
        "arena-alloc",
        100.0,
        "instructions",
        "16-byte alloc+free pair, constant layout (Box::new): arena-alloc (target <= 100)",
        "design target, not a measurement; the size-class lookup folds at compile time",
    ),
    alloc_value(
        "malloc_test",
        1,
        "Mops/s",
        "glibc",
        13.0,
        "M iterations/s",
        "seed loop, 1 thread: glibc",
        SIXTEEN_CORES,
    ),
    alloc_value(
        "malloc_test",
        1,
        "Mops/s",
        "mimalloc",
        32.9,
        "M iterations/s",
        "seed loop, 1 thread: mimalloc",
        SIXTEEN_CORES,
    ),
    alloc_value(
        "malloc_test",
        1,
        "Mops/s",
        "jemalloc",
        20.0,
        "M iterations/s",
        "seed loop, 1 thread: jemalloc",
        SIXTEEN_CORES,
    ),
    alloc_value(
        "malloc_test",
        16,
        "Mops/s",
        "glibc",
        158.0,
        "M iterations/s",
        "seed loop, 16 threads: glibc",
        SIXTEEN_CORES,
    ),
    alloc_value(
        "malloc_test",
        16,
        "Mops/s",
        "mimalloc",
        234.0,
        "M iterations/s",
        "seed loop, 16 threads: mimalloc",
        SIXTEEN_CORES,
    ),
    alloc_value(
        "malloc_test",
        16,
        "Mops/s",
        "jemalloc",
        218.0,
        "M iterations/s",
        "seed loop, 16 threads: jemalloc",
        SIXTEEN_CORES,
    ),
    alloc_value(
        "malloc_test",
        16,
        "Mops/s",
        "arena-alloc heaps=1",
        1.25,
        "M iterations/s",
        "seed loop, 16 threads: one global lock",
        SIXTEEN_CORES,
    ),
    alloc_value(
        "malloc_test",
        32,
        "Mops/s",
        "glibc",
        42.0,
        "M iterations/s",
        "seed loop, 32 threads: glibc (collapses)",
        SIXTEEN_CORES,
    ),
    alloc_value(
        "malloc_test",
        32,
        "Mops/s",
        "mimalloc",
        270.0,
        "M iterations/s",
        "seed loop, 32 threads: mimalloc",
        SIXTEEN_CORES,
    ),
    alloc_value(
        "malloc_test",
        32,
        "Mops/s",
        "jemalloc",
        232.0,
        "M iterations/s",
        "seed loop, 32 threads: jemalloc",
        SIXTEEN_CORES,
    ),
    alloc_value(
        "malloc_test",
        32,
        "Mops/s",
        "arena-alloc heaps=1",
        1.3,
        "M iterations/s",
        "seed loop, 32 threads: one global lock",
        SIXTEEN_CORES,
    ),
    Claim {
        group: "alloc",
        operation: "malloc_test",
        param: 32,
        metric: "Mops/s",
        ours: Ours::Ratio {
            implementation: "arena-alloc",
            over: "arena-alloc heaps=1",
        },
        seed: 200.0,
        unit: "x",
        what: "seed loop, 32 threads: per-core heaps vs one heap (seed: 200x wall, 250x CPU time; target >= 10x)",
        note: "seed: a large machine, its own dlmalloc heaps; ours: throughput ratio, same binary",
    },
    Claim {
        group: "alloc",
        operation: "malloc_test",
        param: 4,
        metric: "Mops/s",
        ours: Ours::Ratio {
            implementation: "arena-alloc",
            over: "arena-alloc heaps=1",
        },
        seed: 200.0,
        unit: "x",
        what: "seed loop, 4 threads (2 x ncpu on 2 cores): per-core heaps vs one heap",
        note: "seed: 2 x ncpu threads on a large machine; 2 cores here cannot show it",
    },
    alloc_value(
        "xmalloc",
        16,
        "Mops/s",
        "glibc",
        45.0,
        "M blocks/s",
        "producer/consumer cross-thread frees, 16 threads: glibc",
        SIXTEEN_CORES,
    ),
    alloc_value(
        "xmalloc",
        16,
        "Mops/s",
        "mimalloc",
        75.0,
        "M blocks/s",
        "producer/consumer cross-thread frees, 16 threads: mimalloc",
        SIXTEEN_CORES,
    ),
    alloc_value(
        "xmalloc",
        16,
        "Mops/s",
        "jemalloc",
        266.0,
        "M blocks/s",
        "producer/consumer cross-thread frees, 16 threads: jemalloc",
        SIXTEEN_CORES,
    ),
];

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
