//! `strings`: lean-string's three types against the forced-wide header, upstream
//! `lean_string` 0.8 and the usual peers, at the documented string lengths.
//!
//! The seed's `heap_layout` cases: construct, clone+drop and traverse vectors of 16,384
//! strings per length, plus `push_str` growth and mutation of a static string. Time and
//! memory (physical bytes per string). At the end the targets are computed as
//! ratios from this run's medians and recorded as `target` rows. Times are the thread's
//! CPU time ([`Clock::ThreadCpu`]).

use std::sync::Arc;

use lean_string::{
    C_INLINE_CAPACITY, COMPACT_HEADER_SIZE, INLINE_CAPACITY, LeanCString, LeanStr, LeanString,
    WideLeanString,
};

use crate::goal::Goal;
use crate::measure::{BenchError, BenchResult, Case, Clock, Ctx, Instrument, Measurement, Stats};
use crate::seeds::{Claim, Ours};

use super::group::Group;
use super::std_strings::{VECTOR_LEN, sources};

/// The group.
pub const GROUP: Group = Group {
    name: "strings",
    about: "LeanString (compact/wide), LeanStr, LeanCString vs lean_string 0.8, compact_str, smol_str, ecow, arcstr, Arc<str>, String",
    run,
    claims: CLAIMS,
    ab_claims: &[],
};

/// The swept lengths, from lean-string's constants: both sides of the inline capacity
/// (and of `LeanCString`'s), and the allocator size-class steps an 8- vs 16-byte header
/// moves between. On 64-bit: 0, 8, 11, 12, 13, 15, 16, 17, 24, 32, 48, 64.
pub fn lengths() -> [usize; 12] {
    let i = INLINE_CAPACITY;
    [
        0,
        i / 2,
        i - 5,
        i - 4,
        i - 3,
        C_INLINE_CAPACITY,
        i,
        i + 1,
        32 - COMPACT_HEADER_SIZE,
        2 * i,
        3 * i,
        4 * i,
    ]
}

const LEAN: &str = "LeanString";
const WIDE: &str = "LeanString (forced wide)";
const UPSTREAM: &str = "lean_string 0.8";
const COMPACT_STR: &str = "compact_str";
const ARC: &str = "Arc<str>";

fn err(case: &Case, e: String) -> BenchError {
    BenchError(format!("self-check failed in {case}: {e}"))
}

/// What the traversal folds per string: its length and first byte, so every string's
/// pointer and length are both decoded.
fn fold<S: AsRef<str>>(v: &[S]) -> usize {
    v.iter()
        .map(|s| {
            let s = s.as_ref();
            s.len() + s.as_bytes().first().map_or(0, |&b| b as usize)
        })
        .sum()
}

fn one<S: AsRef<str> + Clone>(
    ctx: &mut Ctx<'_>,
    name: &str,
    len: usize,
    src: &[String],
    make: impl Fn(&str) -> S + Copy,
) -> BenchResult {
    let n = src.len() as u64;
    let expect_len = len * src.len();
    let expect_fold = fold(src);
    let check = move |v: &Vec<S>| {
        let got = fold(v);
        if got == expect_fold && v.iter().map(|s| s.as_ref().len()).sum::<usize>() == expect_len {
            Ok(())
        } else {
            Err(format!("fold {got}, expected {expect_fold}"))
        }
    };
    if ctx.wants(Instrument::Time) {
        let case = Case::new("construct", name, "len", len as u64).baseline(COMPACT_STR);
        ctx.time(
            &case,
            n,
            || Vec::with_capacity(src.len()),
            |mut v: Vec<S>| {
                v.extend(src.iter().map(|s| make(s)));
                v
            },
            check,
        )?;
        let built: Vec<S> = src.iter().map(|s| make(s)).collect();
        let case = Case::new("clone+drop", name, "len", len as u64).baseline(ARC);
        ctx.time(&case, n, || (), |()| built.to_vec(), check)?;
        let case = Case::new("traverse", name, "len", len as u64).baseline(COMPACT_STR);
        ctx.time(
            &case,
            n,
            || (),
            |()| fold(std::hint::black_box(&built)),
            |&got| {
                if got == expect_fold {
                    Ok(())
                } else {
                    Err(format!("fold {got}, expected {expect_fold}"))
                }
            },
        )?;
    }
    if ctx.wants(Instrument::Memory) {
        let case = Case::new("construct", name, "len", len as u64).baseline(COMPACT_STR);
        let mut v: Vec<S> = Vec::with_capacity(src.len());
        ctx.memory(
            &case,
            n,
            || v.extend(src.iter().map(|s| make(s))),
            |()| Ok(()),
        )?;
        // Empty when `--filter` left the case out.
        if !v.is_empty() {
            check(&v).map_err(|e| err(&case, e))?;
        }
    }
    Ok(())
}

/// Strings grown by `push_str` from empty: 8 pieces of 8 bytes each (through the inline
/// limit to a heap buffer that reallocates).
const GROW_STRINGS: usize = 1024;
const PIECE: &str = "01234567";
const PIECES: usize = 8;

fn growth<S>(
    ctx: &mut Ctx<'_>,
    name: &str,
    new: impl Fn() -> S + Copy,
    push: impl Fn(&mut S, &str) + Copy,
    as_str: impl Fn(&S) -> &str + Copy,
) -> BenchResult {
    let case = Case::new(
        "push_str growth",
        name,
        "bytes",
        (PIECE.len() * PIECES) as u64,
    )
    .baseline("String");
    let build = move || {
        (0..GROW_STRINGS)
            .map(|_| {
                let mut s = new();
                for _ in 0..PIECES {
                    push(&mut s, PIECE);
                }
                s
            })
            .collect::<Vec<S>>()
    };
    let check = move |v: &Vec<S>| {
        let ok = v.len() == GROW_STRINGS && v.iter().all(|s| as_str(s) == PIECE.repeat(PIECES));
        if ok {
            Ok(())
        } else {
            Err("grown strings differ from the expected text".into())
        }
    };
    if ctx.wants(Instrument::Time) {
        ctx.time(
            &case,
            (GROW_STRINGS * PIECES) as u64,
            || (),
            |()| build(),
            check,
        )?;
    }
    if ctx.wants(Instrument::Memory) {
        ctx.memory(&case, GROW_STRINGS as u64, build, check)?;
    }
    Ok(())
}

/// A static string mutated once (`push_str("!")`): the copy-on-write of a `&'static str`.
const STATIC_TEXT: &str = "a static string well past every inline limit";
const STATIC_C_TEXT: &std::ffi::CStr = c"a static string well past every inline limit";
const STATIC_STRINGS: usize = 4096;

fn static_mutation<S>(
    ctx: &mut Ctx<'_>,
    name: &str,
    make: impl Fn() -> S + Copy,
    push: impl Fn(&mut S, &str) + Copy,
    as_str: impl Fn(&S) -> &str + Copy,
) -> BenchResult {
    let case =
        Case::new("static mutation", name, "len", STATIC_TEXT.len() as u64).baseline("String");
    let expected = format!("{STATIC_TEXT}!");
    let check = |v: &Vec<S>| {
        if v.len() == STATIC_STRINGS && v.iter().all(|s| as_str(s) == expected) {
            Ok(())
        } else {
            Err("mutated static strings differ from the expected text".into())
        }
    };
    let build = || {
        (0..STATIC_STRINGS)
            .map(|_| {
                let mut s = make();
                push(&mut s, "!");
                s
            })
            .collect::<Vec<S>>()
    };
    if ctx.wants(Instrument::Time) {
        ctx.time(&case, STATIC_STRINGS as u64, || (), |()| build(), check)?;
    }
    if ctx.wants(Instrument::Memory) {
        ctx.memory(&case, STATIC_STRINGS as u64, build, check)?;
    }
    Ok(())
}

/// Integers converted to strings: `to_lean_string` (no formatting machinery for integers)
/// against our own `Display` path (`format_lean!`), lean_string 0.8's, compact_str's and
/// `ToString`. The values have 1 to 20 digits.
const NUMBERS: usize = 4096;

fn numbers() -> Vec<u64> {
    (0..NUMBERS as u64)
        .map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (i % 64))
        .collect()
}

fn number_to_string<S: AsRef<str>>(
    ctx: &mut Ctx<'_>,
    name: &str,
    convert: impl Fn(u64) -> S + Copy,
) -> BenchResult {
    if !ctx.wants(Instrument::Time) {
        return Ok(());
    }
    let values = numbers();
    let expected: Vec<String> = values.iter().map(u64::to_string).collect();
    let case = Case::new("integer to string", name, "values", NUMBERS as u64).baseline("String");
    ctx.time(
        &case,
        NUMBERS as u64,
        || (),
        |()| values.iter().map(|&v| convert(v)).collect::<Vec<S>>(),
        |got| {
            if got
                .iter()
                .map(AsRef::as_ref)
                .eq(expected.iter().map(String::as_str))
            {
                Ok(())
            } else {
                Err("a converted integer differs from its Display text".into())
            }
        },
    )?;
    Ok(())
}

/// glibc serves big blocks with fresh mmaps and trims freed heap tops, both adjusted
/// dynamically: the first cases would pay page faults on every 256 KiB vector that later
/// ones do not. Fixing both thresholds gives every implementation the same warm heap.
fn warm_allocator() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: `mallopt` only changes glibc's tuning parameters; any value is valid.
        unsafe { libc::mallopt(libc::M_MMAP_THRESHOLD, 64 << 20) };
        // SAFETY: as above.
        unsafe { libc::mallopt(libc::M_TRIM_THRESHOLD, 256 << 20) };
    }
    for _ in 0..4 {
        drop(std::hint::black_box(Vec::<u8>::with_capacity(1 << 20)));
    }
}

fn run(ctx: &mut Ctx<'_>) -> BenchResult {
    // Every routine runs on this thread: its CPU time leaves out other processes' turns.
    ctx.set_clock(Clock::ThreadCpu);
    warm_allocator();
    let mut lens = lengths().to_vec();
    if ctx.full() {
        lens.extend([128, 1024]);
    }
    for &len in &lens {
        let src = sources(len, VECTOR_LEN);
        one(ctx, LEAN, len, &src, |s| LeanString::from(s))?;
        one(ctx, WIDE, len, &src, |s| WideLeanString::from(s))?;
        one(ctx, "LeanStr", len, &src, |s| LeanStr::from(s))?;
        one(ctx, "LeanCString", len, &src, |s| {
            LeanCString::try_from(s).expect("the sources hold no NUL")
        })?;
        one(ctx, UPSTREAM, len, &src, |s| {
            lean_string_08::LeanString::from(s)
        })?;
        one(ctx, COMPACT_STR, len, &src, |s| {
            compact_str::CompactString::from(s)
        })?;
        one(ctx, "smol_str", len, &src, |s| smol_str::SmolStr::from(s))?;
        one(ctx, "ecow", len, &src, |s| ecow::EcoString::from(s))?;
        one(ctx, "arcstr", len, &src, |s| arcstr::ArcStr::from(s))?;
        one(ctx, ARC, len, &src, |s| Arc::<str>::from(s))?;
        one(ctx, "String", len, &src, |s| String::from(s))?;
    }

    growth(
        ctx,
        LEAN,
        LeanString::new,
        |s, p| s.push_str(p),
        |s| s.as_str(),
    )?;
    growth(
        ctx,
        WIDE,
        WideLeanString::new,
        |s, p| s.push_str(p),
        |s| s.as_str(),
    )?;
    growth(
        ctx,
        "LeanCString",
        LeanCString::new,
        |s, p| s.push_str(p).expect("no NUL"),
        |s| s.as_str(),
    )?;
    growth(
        ctx,
        UPSTREAM,
        lean_string_08::LeanString::new,
        |s, p| s.push_str(p),
        |s| s.as_str(),
    )?;
    growth(
        ctx,
        COMPACT_STR,
        compact_str::CompactString::default,
        |s, p| s.push_str(p),
        |s| s.as_str(),
    )?;
    growth(
        ctx,
        "ecow",
        ecow::EcoString::new,
        |s, p| s.push_str(p),
        |s| s.as_str(),
    )?;
    growth(
        ctx,
        "String",
        String::new,
        |s, p| s.push_str(p),
        |s| s.as_str(),
    )?;

    static_mutation(
        ctx,
        LEAN,
        || LeanString::from_static_str(STATIC_TEXT),
        |s, p| s.push_str(p),
        |s| s.as_str(),
    )?;
    static_mutation(
        ctx,
        WIDE,
        || WideLeanString::from_static_str(STATIC_TEXT),
        |s, p| s.push_str(p),
        |s| s.as_str(),
    )?;
    static_mutation(
        ctx,
        "LeanCString",
        || LeanCString::from_static_c_str(STATIC_C_TEXT).expect("UTF-8"),
        |s, p| s.push_str(p).expect("no NUL"),
        |s| s.as_str(),
    )?;
    static_mutation(
        ctx,
        UPSTREAM,
        || lean_string_08::LeanString::from_static_str(STATIC_TEXT),
        |s, p| s.push_str(p),
        |s| s.as_str(),
    )?;
    static_mutation(
        ctx,
        COMPACT_STR,
        || compact_str::CompactString::const_new(STATIC_TEXT),
        |s, p| s.push_str(p),
        |s| s.as_str(),
    )?;
    static_mutation(
        ctx,
        "String",
        || String::from(STATIC_TEXT),
        |s, p| s.push_str(p),
        |s| s.as_str(),
    )?;

    {
        use compact_str::ToCompactString;
        use lean_string::ToLeanString;
        number_to_string(ctx, LEAN, |v| v.to_lean_string())?;
        number_to_string(ctx, "LeanString (format_lean!)", |v| {
            lean_string::format_lean!("{v}")
        })?;
        number_to_string(ctx, UPSTREAM, |v| {
            lean_string_08::ToLeanString::to_lean_string(&v)
        })?;
        number_to_string(ctx, COMPACT_STR, |v| v.to_compact_string())?;
        number_to_string(ctx, "String", |v| v.to_string())?;
    }

    targets(ctx, &lens);
    Ok(())
}

/// The median of one row of this run, if it was measured.
fn median(rs: &[Measurement], op: &str, imp: &str, len: usize, metric: &str) -> Option<f64> {
    rs.iter()
        .find(|m| {
            m.group == "strings"
                && m.operation == op
                && m.implementation == imp
                && m.param == len as u64
                && m.metric == metric
                && m.stats.samples > 0
        })
        .map(|m| m.stats.median)
}

/// Geometric mean of `num / den` over `lens` (rows missing in a filtered run are skipped).
fn ratio(
    rs: &[Measurement],
    op: &str,
    num: &str,
    den: &str,
    lens: &[usize],
    metric: &str,
) -> Option<(f64, f64)> {
    let rs: Vec<f64> = lens
        .iter()
        .filter_map(|&l| Some(median(rs, op, num, l, metric)? / median(rs, op, den, l, metric)?))
        .filter(|r| r.is_finite() && *r > 0.0)
        .collect();
    if rs.is_empty() {
        return None;
    }
    let geo = (rs.iter().map(|r| r.ln()).sum::<f64>() / rs.len() as f64).exp();
    let worst = rs.iter().copied().fold(f64::MIN, f64::max);
    Some((geo, worst))
}

/// A target: name, operation, numerator and denominator implementation, the lengths it
/// covers, the metrics it is judged on, and the goal.
struct Target<'a> {
    name: &'a str,
    op: &'a str,
    num: &'a str,
    den: &'a str,
    lens: &'a [usize],
    metrics: &'a [&'a str],
    goal: Goal,
}

/// Computes the targets from this run's medians and records them as `target` rows
/// (`ratio`, lower is better; the parameter is the number of lengths it covers). Time
/// ratios come from `ns/op`, and, with `--instrument instructions`, also from callgrind's
/// deterministic `instructions/op`.
fn targets(ctx: &mut Ctx<'_>, lens: &[usize]) {
    let rs = ctx.results().to_vec();
    let inline: Vec<usize> = lens
        .iter()
        .copied()
        .filter(|&l| l <= INLINE_CAPACITY)
        .collect();
    let heap: Vec<usize> = lens
        .iter()
        .copied()
        .filter(|&l| l > INLINE_CAPACITY)
        .collect();
    // compact_str keeps up to its own size inline; compare clones where both allocate.
    let compact_inline = std::mem::size_of::<compact_str::CompactString>();
    let both_heap: Vec<usize> = heap
        .iter()
        .copied()
        .filter(|&l| l > compact_inline)
        .collect();
    let time: &[&str] = &["ns/op", "instructions/op"];
    let t = |name, op, num, den, lens, metrics, goal| Target {
        name,
        op,
        num,
        den,
        lens,
        metrics,
        goal,
    };
    let rows = [
        t(
            "inline construct: LeanString / compact_str",
            "construct",
            LEAN,
            COMPACT_STR,
            &inline[..],
            time,
            Goal::AtMost(1.0),
        ),
        t(
            "inline construct: lean_string 0.8 / compact_str",
            "construct",
            UPSTREAM,
            COMPACT_STR,
            &inline[..],
            time,
            Goal::Reference(4.0),
        ),
        t(
            "heap clone+drop: LeanString / Arc<str>",
            "clone+drop",
            LEAN,
            ARC,
            &heap[..],
            time,
            Goal::AtMost(1.0),
        ),
        t(
            "heap clone+drop: LeanString / compact_str",
            "clone+drop",
            LEAN,
            COMPACT_STR,
            &both_heap[..],
            time,
            Goal::AtMost(0.286),
        ),
        t(
            "traverse: LeanString / compact_str",
            "traverse",
            LEAN,
            COMPACT_STR,
            lens,
            time,
            Goal::AtMost(1.0),
        ),
        t(
            "heap clone+drop: compact / forced wide",
            "clone+drop",
            LEAN,
            WIDE,
            &heap[..],
            time,
            Goal::Within(0.99, 1.01),
        ),
        t(
            "heap construct: compact / forced wide",
            "construct",
            LEAN,
            WIDE,
            &heap[..],
            time,
            Goal::AtMost(1.0),
        ),
        t(
            "heap physical bytes: compact / forced wide",
            "construct",
            LEAN,
            WIDE,
            &heap[..],
            &["physical B/item"],
            Goal::BelowSomewhereNeverAbove(1.0),
        ),
    ];
    for row in rows {
        for &metric in row.metrics {
            if let Some((geo, worst)) = ratio(&rs, row.op, row.num, row.den, row.lens, metric) {
                let case = Case::new(
                    "target",
                    &format!("{} ({metric})", row.name),
                    "lengths",
                    row.lens.len() as u64,
                );
                let stats = Stats {
                    max: worst,
                    ..Stats::exact(geo)
                };
                ctx.record_goal(&case, "ratio", Instrument::Time, stats, row.goal);
            }
        }
    }
    ctx.note("  physical bytes per string (malloc_usable_size), compact vs forced wide:".into());
    let phys = "physical B/item";
    for &l in &heap {
        if let (Some(c), Some(w)) = (
            median(&rs, "construct", LEAN, l, phys),
            median(&rs, "construct", WIDE, l, phys),
        ) {
            ctx.note(format!("    len {l:>4}: {c:6.1} vs {w:6.1}"));
        }
    }
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
pub const CLAIMS: &[Claim] = &[
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg(target_pointer_width = "64")]
    fn lengths_from_the_constants_are_the_documented_sweep() {
        assert_eq!(lengths(), super::super::std_strings::LENGTHS);
    }

    #[test]
    fn fold_reads_length_and_first_byte() {
        assert_eq!(fold(&["ab", "", "c"]), 2 + 97 + 1 + 99);
    }
}
