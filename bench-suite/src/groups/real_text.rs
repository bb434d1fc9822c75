//! `real-text`: every string type on text harvested at run time from Rust sources
//! ([`crate::corpus`]): identifiers, trimmed lines and string literals.
//!
//! Per corpus: build a `Vec<T>` from it, clone the vector, sort a copy, build a `HashSet<T>`
//! from a copy and look every string of the vector up in it, and the total bytes of the
//! built vector (handle + heap). On identifier pairs: join each pair with `push_str`, and
//! build `"{a}::{b}"` with the type's `format!`. On the integer and float literals of the
//! same sources: to-string. Every routine's result is checked (lengths and a fold of every
//! string, sortedness, hit counts, the digits). At the end, `LeanString`'s time on every
//! row is divided by the best peer's, and its total bytes by compact_str's: the `target`
//! rows. Times are the thread's CPU time ([`Clock::ThreadCpu`]).
//!
//! If no source can be read the group says so and measures nothing.

use std::collections::HashSet;
use std::hash::{BuildHasherDefault, DefaultHasher, Hash};
use std::sync::Arc;

use crate::corpus::{self, Caps, Corpus, Harvest};
use crate::goal::Goal;
use crate::measure::{BenchResult, Case, Clock, Ctx, Instrument, Measurement, Stats};

use super::group::Group;

/// The group.
pub const GROUP: Group = Group {
    name: "real-text",
    about: "string types on Rust sources harvested at run time (identifiers, lines, literals): build, clone, sort, hash set, concat, format, numbers",
    run,
    claims: &[],
    ab_claims: &[],
};

/// Our type: the one the targets are about.
pub const LEAN: &str = "LeanString";
/// The bytes target's reference.
pub const COMPACT_STR: &str = "compact_str";

/// A string type measured here, with the way a user builds each row's strings with it.
pub trait Peer: Clone + Ord + Hash + Eq + AsRef<str> {
    /// The column name.
    const NAME: &'static str;
    /// From a `&str`.
    fn make(s: &str) -> Self;
    /// `a` then `b`: `push_str` onto a string made from `a` where the type has it, else
    /// through the reused `scratch` buffer.
    fn concat(scratch: &mut String, a: &str, b: &str) -> Self;
    /// `"{a}::{b}"` through the type's own `format!`-style path.
    fn format_pair(a: &str, b: &str) -> Self;
    /// The decimal text of an integer.
    fn from_int(v: u64) -> Self;
    /// The text of a float (any form that parses back to the same value).
    fn from_float(v: f64) -> Self;
}

fn through_scratch<'a>(scratch: &'a mut String, a: &str, b: &str) -> &'a str {
    scratch.clear();
    scratch.push_str(a);
    scratch.push_str(b);
    scratch
}

impl Peer for lean_string::LeanString {
    const NAME: &'static str = LEAN;
    fn make(s: &str) -> Self {
        Self::from(s)
    }
    fn concat(_: &mut String, a: &str, b: &str) -> Self {
        let mut s = Self::from(a);
        s.push_str(b);
        s
    }
    fn format_pair(a: &str, b: &str) -> Self {
        lean_string::format_lean!("{a}::{b}")
    }
    fn from_int(v: u64) -> Self {
        lean_string::ToLeanString::to_lean_string(&v)
    }
    fn from_float(v: f64) -> Self {
        lean_string::ToLeanString::to_lean_string(&v)
    }
}

impl Peer for lean_string_08::LeanString {
    const NAME: &'static str = "lean_string 0.8";
    fn make(s: &str) -> Self {
        Self::from(s)
    }
    fn concat(_: &mut String, a: &str, b: &str) -> Self {
        let mut s = Self::from(a);
        s.push_str(b);
        s
    }
    fn format_pair(a: &str, b: &str) -> Self {
        use std::fmt::Write;
        let mut s = Self::new();
        write!(s, "{a}::{b}").expect("writing to a string");
        s
    }
    fn from_int(v: u64) -> Self {
        lean_string_08::ToLeanString::to_lean_string(&v)
    }
    fn from_float(v: f64) -> Self {
        lean_string_08::ToLeanString::to_lean_string(&v)
    }
}

impl Peer for compact_str::CompactString {
    const NAME: &'static str = COMPACT_STR;
    fn make(s: &str) -> Self {
        Self::from(s)
    }
    fn concat(_: &mut String, a: &str, b: &str) -> Self {
        let mut s = Self::from(a);
        s.push_str(b);
        s
    }
    fn format_pair(a: &str, b: &str) -> Self {
        compact_str::format_compact!("{a}::{b}")
    }
    fn from_int(v: u64) -> Self {
        compact_str::ToCompactString::to_compact_string(&v)
    }
    fn from_float(v: f64) -> Self {
        compact_str::ToCompactString::to_compact_string(&v)
    }
}

impl Peer for String {
    const NAME: &'static str = "String";
    fn make(s: &str) -> Self {
        Self::from(s)
    }
    fn concat(_: &mut String, a: &str, b: &str) -> Self {
        let mut s = Self::from(a);
        s.push_str(b);
        s
    }
    fn format_pair(a: &str, b: &str) -> Self {
        format!("{a}::{b}")
    }
    fn from_int(v: u64) -> Self {
        v.to_string()
    }
    fn from_float(v: f64) -> Self {
        v.to_string()
    }
}

impl Peer for Box<str> {
    const NAME: &'static str = "Box<str>";
    fn make(s: &str) -> Self {
        Self::from(s)
    }
    fn concat(scratch: &mut String, a: &str, b: &str) -> Self {
        Self::from(through_scratch(scratch, a, b))
    }
    fn format_pair(a: &str, b: &str) -> Self {
        format!("{a}::{b}").into_boxed_str()
    }
    fn from_int(v: u64) -> Self {
        v.to_string().into_boxed_str()
    }
    fn from_float(v: f64) -> Self {
        v.to_string().into_boxed_str()
    }
}

impl Peer for Arc<str> {
    const NAME: &'static str = "Arc<str>";
    fn make(s: &str) -> Self {
        Self::from(s)
    }
    fn concat(scratch: &mut String, a: &str, b: &str) -> Self {
        Self::from(through_scratch(scratch, a, b))
    }
    fn format_pair(a: &str, b: &str) -> Self {
        Self::from(format!("{a}::{b}"))
    }
    fn from_int(v: u64) -> Self {
        Self::from(v.to_string())
    }
    fn from_float(v: f64) -> Self {
        Self::from(v.to_string())
    }
}

impl Peer for cold_string::ColdString {
    const NAME: &'static str = "cold-string";
    fn make(s: &str) -> Self {
        Self::from(s)
    }
    fn concat(scratch: &mut String, a: &str, b: &str) -> Self {
        Self::from(through_scratch(scratch, a, b))
    }
    fn format_pair(a: &str, b: &str) -> Self {
        Self::from(format!("{a}::{b}"))
    }
    fn from_int(v: u64) -> Self {
        Self::from(v.to_string())
    }
    fn from_float(v: f64) -> Self {
        Self::from(v.to_string())
    }
}

impl Peer for smol_str::SmolStr {
    const NAME: &'static str = "smol_str";
    fn make(s: &str) -> Self {
        Self::from(s)
    }
    fn concat(_: &mut String, a: &str, b: &str) -> Self {
        let mut s = smol_str::SmolStrBuilder::new();
        s.push_str(a);
        s.push_str(b);
        s.finish()
    }
    fn format_pair(a: &str, b: &str) -> Self {
        smol_str::format_smolstr!("{a}::{b}")
    }
    fn from_int(v: u64) -> Self {
        smol_str::ToSmolStr::to_smolstr(&v)
    }
    fn from_float(v: f64) -> Self {
        smol_str::ToSmolStr::to_smolstr(&v)
    }
}

impl Peer for ecow::EcoString {
    const NAME: &'static str = "ecow";
    fn make(s: &str) -> Self {
        Self::from(s)
    }
    fn concat(_: &mut String, a: &str, b: &str) -> Self {
        let mut s = Self::from(a);
        s.push_str(b);
        s
    }
    fn format_pair(a: &str, b: &str) -> Self {
        ecow::eco_format!("{a}::{b}")
    }
    fn from_int(v: u64) -> Self {
        ecow::eco_format!("{v}")
    }
    fn from_float(v: f64) -> Self {
        ecow::eco_format!("{v}")
    }
}

/// The hasher of every set here: SipHash with fixed keys, so instruction counts repeat.
type Hasher = BuildHasherDefault<DefaultHasher>;

/// What every check folds: each string's length and first byte, so a wrong pointer or a
/// wrong length both show.
fn fold<S: AsRef<str>>(v: &[S]) -> u64 {
    v.iter()
        .map(|s| {
            let s = s.as_ref();
            s.len() as u64 * 257 + u64::from(s.as_bytes().first().copied().unwrap_or(0))
        })
        .fold(0u64, u64::wrapping_add)
}

fn same_fold<S: AsRef<str>>(v: &[S], n: usize, want: u64) -> Result<(), String> {
    let got = fold(v);
    if v.len() == n && got == want {
        Ok(())
    } else {
        Err(format!(
            "{} strings folding to {got}, expected {n} folding to {want}",
            v.len()
        ))
    }
}

/// The corpus rows of one type: build, clone, sort, hash set build and lookup (time), and
/// total bytes (memory).
fn corpus_rows<T: Peer>(ctx: &mut Ctx<'_>, c: &Corpus, distinct: usize) -> BenchResult {
    let src = &c.strings;
    let n = src.len();
    let want = fold(src);
    let op = |what: &str| format!("{} {what}", c.name);
    let case =
        |what: &str| Case::new(&op(what), T::NAME, "strings", n as u64).baseline(COMPACT_STR);
    if ctx.wants(Instrument::Time) {
        ctx.time(
            &case("build"),
            n as u64,
            || Vec::with_capacity(n),
            |mut v: Vec<T>| {
                v.extend(src.iter().map(|s| T::make(s)));
                v
            },
            |v| same_fold(v, n, want),
        )?;
        // The vector and set the other rows read, built only when one of them runs (not in
        // the counting pass, nor for a `--filter` that leaves them out).
        let needed = !ctx.counting()
            && ["clone", "sort", "hash set build", "hash lookup"]
                .iter()
                .any(|w| ctx.selected(&case(w)));
        let built: Vec<T> = if needed {
            src.iter().map(|s| T::make(s)).collect()
        } else {
            Vec::new()
        };
        ctx.time(
            &case("clone"),
            n as u64,
            || (),
            |()| built.clone(),
            |v| same_fold(v, n, want),
        )?;
        ctx.time(
            &case("sort"),
            n as u64,
            || built.clone(),
            |mut v| {
                v.sort_unstable();
                v
            },
            |v| {
                same_fold(v, n, want)?;
                match v.windows(2).position(|w| w[0].as_ref() > w[1].as_ref()) {
                    None => Ok(()),
                    Some(i) => Err(format!("not sorted at {i}")),
                }
            },
        )?;
        ctx.time(
            &case("hash set build"),
            n as u64,
            || built.clone(),
            |v| v.into_iter().collect::<HashSet<T, Hasher>>(),
            |set| {
                if set.len() == distinct {
                    Ok(())
                } else {
                    Err(format!(
                        "{} distinct strings, expected {distinct}",
                        set.len()
                    ))
                }
            },
        )?;
        let set: HashSet<T, Hasher> = built.iter().cloned().collect();
        ctx.time(
            &case("hash lookup"),
            n as u64,
            || (),
            |()| built.iter().filter(|s| set.contains(*s)).count(),
            |&hits| {
                if hits == n {
                    Ok(())
                } else {
                    Err(format!("{hits} hits, expected {n}"))
                }
            },
        )?;
    }
    if ctx.wants(Instrument::Memory) {
        let case = case("build");
        // The vector's buffer is allocated before counting starts; its handles are added
        // below as `size_of::<T>()` per string.
        let v: Vec<T> = Vec::with_capacity(n);
        let snap = ctx.memory(
            &case,
            n as u64,
            move || {
                let mut v = v;
                v.extend(src.iter().map(|s| T::make(s)));
                v
            },
            |v| same_fold(v, n, want),
        )?;
        // Only where the case ran (not filtered out, not the counting pass).
        let ran = ctx.results().last().is_some_and(|m| {
            m.operation == case.operation
                && m.implementation == case.implementation
                && m.metric == "physical B/item"
        });
        if ran {
            let total = std::mem::size_of::<T>() as f64 + snap.physical_live as f64 / n as f64;
            ctx.record(
                &case,
                "total B/item",
                true,
                Instrument::Memory,
                Stats::exact(total),
            );
        }
    }
    Ok(())
}

/// Joining identifier pairs with `push_str`, and `format!`-style `"{a}::{b}"`.
fn pair_rows<T: Peer>(ctx: &mut Ctx<'_>, pairs: &[(&str, &str)]) -> BenchResult {
    let n = pairs.len();
    let case = |what: &str| Case::new(what, T::NAME, "pairs", n as u64).baseline(COMPACT_STR);
    let joined: Vec<String> = pairs.iter().map(|(a, b)| format!("{a}{b}")).collect();
    let want = fold(&joined);
    ctx.time(
        &case("identifier pairs push_str"),
        n as u64,
        || (Vec::with_capacity(n), String::with_capacity(256)),
        |(mut v, mut scratch): (Vec<T>, String)| {
            v.extend(pairs.iter().map(|(a, b)| T::concat(&mut scratch, a, b)));
            v
        },
        |v| {
            same_fold(v, n, want)?;
            match v.iter().zip(&joined).position(|(s, j)| s.as_ref() != j) {
                None => Ok(()),
                Some(i) => Err(format!("pair {i} joined to {:?}", v[i].as_ref())),
            }
        },
    )?;
    let formatted: Vec<String> = pairs.iter().map(|(a, b)| format!("{a}::{b}")).collect();
    let want = fold(&formatted);
    ctx.time(
        &case("identifier pairs format"),
        n as u64,
        || Vec::with_capacity(n),
        |mut v: Vec<T>| {
            v.extend(pairs.iter().map(|(a, b)| T::format_pair(a, b)));
            v
        },
        |v| {
            same_fold(v, n, want)?;
            match v.iter().zip(&formatted).position(|(s, j)| s.as_ref() != j) {
                None => Ok(()),
                Some(i) => Err(format!("pair {i} formatted as {:?}", v[i].as_ref())),
            }
        },
    )?;
    Ok(())
}

/// Integer and float literals to strings.
fn number_rows<T: Peer>(ctx: &mut Ctx<'_>, ints: &[u64], floats: &[f64]) -> BenchResult {
    if !ints.is_empty() {
        let n = ints.len();
        let case = Case::new("integer literals to string", T::NAME, "values", n as u64)
            .baseline(COMPACT_STR);
        let want: Vec<String> = ints.iter().map(u64::to_string).collect();
        ctx.time(
            &case,
            n as u64,
            || Vec::with_capacity(n),
            |mut v: Vec<T>| {
                v.extend(ints.iter().map(|&x| T::from_int(x)));
                v
            },
            |v| match v.iter().zip(&want).position(|(s, w)| s.as_ref() != w) {
                None if v.len() == n => Ok(()),
                None => Err(format!("{} strings, expected {n}", v.len())),
                Some(i) => Err(format!("{} written as {:?}", ints[i], v[i].as_ref())),
            },
        )?;
    }
    if !floats.is_empty() {
        let n = floats.len();
        let case = Case::new("float literals to string", T::NAME, "values", n as u64)
            .baseline(COMPACT_STR);
        ctx.time(
            &case,
            n as u64,
            || Vec::with_capacity(n),
            |mut v: Vec<T>| {
                v.extend(floats.iter().map(|&x| T::from_float(x)));
                v
            },
            |v| {
                let bad = v.iter().zip(floats).position(|(s, &x)| {
                    s.as_ref().parse::<f64>().map(f64::to_bits) != Ok(x.to_bits())
                });
                match bad {
                    None if v.len() == n => Ok(()),
                    None => Err(format!("{} strings, expected {n}", v.len())),
                    Some(i) => Err(format!("{} written as {:?}", floats[i], v[i].as_ref())),
                }
            },
        )?;
    }
    Ok(())
}

/// Runs `$f::<T>($args)` for every type, ours first.
macro_rules! each_peer {
    ($f:ident($($arg:expr),*)) => {{
        $f::<lean_string::LeanString>($($arg),*)?;
        $f::<lean_string_08::LeanString>($($arg),*)?;
        $f::<compact_str::CompactString>($($arg),*)?;
        $f::<String>($($arg),*)?;
        $f::<Box<str>>($($arg),*)?;
        $f::<Arc<str>>($($arg),*)?;
        $f::<cold_string::ColdString>($($arg),*)?;
        $f::<smol_str::SmolStr>($($arg),*)?;
        $f::<ecow::EcoString>($($arg),*)?;
    }};
}

/// The corpus description as rows (shown in the report's tables) and notes (stdout).
fn describe(ctx: &mut Ctx<'_>, h: &Harvest) {
    for (root, files, bytes) in &h.sources {
        ctx.note(format!(
            "  read {files} files, {bytes} bytes under {}",
            root.display()
        ));
    }
    for c in h.corpora() {
        ctx.note(format!("  {}", c.summary()));
        let n = c.strings.len() as u64;
        for (metric, value) in [("strings", n as f64), ("bytes", c.bytes() as f64)] {
            let case = Case::new("corpus size", c.name, "corpus", 0);
            ctx.record(
                &case,
                metric,
                false,
                Instrument::Memory,
                Stats::exact(value),
            );
        }
        for len in [4, 8, 12, 16, 20, 24, 32, 48, 64, 128] {
            let case = Case::new(
                "corpus share of strings at most this long",
                c.name,
                "bytes",
                len,
            );
            let share = Stats::exact(100.0 * c.share_at_most(len as usize));
            ctx.record(&case, "% of strings", false, Instrument::Memory, share);
        }
    }
    ctx.note(format!(
        "  integer literals: {}, float literals: {}",
        h.integers.len(),
        h.floats.len()
    ));
}

fn run(ctx: &mut Ctx<'_>) -> BenchResult {
    // Every routine runs on this thread: its CPU time leaves out other processes' turns.
    ctx.set_clock(Clock::ThreadCpu);
    let caps = if ctx.full() { Caps::FULL } else { Caps::QUICK };
    let h = corpus::shared(caps);
    if h.is_empty() {
        ctx.note(format!(
            "  no Rust source could be read (looked in {} and {}): the group is skipped",
            corpus::workspace_root().display(),
            corpus::registry_src()
                .map_or_else(|| "no cargo home".into(), |p| p.display().to_string())
        ));
        return Ok(());
    }
    describe(ctx, h);
    for c in h.corpora() {
        if c.strings.is_empty() {
            continue;
        }
        let distinct = c
            .strings
            .iter()
            .map(String::as_str)
            .collect::<HashSet<&str>>()
            .len();
        each_peer!(corpus_rows(ctx, c, distinct));
    }
    let ids = &h.identifiers.strings;
    let pairs: Vec<(&str, &str)> = ids
        .chunks_exact(2)
        .map(|p| (p[0].as_str(), p[1].as_str()))
        .collect();
    if ctx.wants(Instrument::Time) && !pairs.is_empty() {
        each_peer!(pair_rows(ctx, &pairs));
    }
    if ctx.wants(Instrument::Time) {
        each_peer!(number_rows(ctx, &h.integers, &h.floats));
    }
    targets(ctx);
    Ok(())
}

/// The median of one row of this run.
fn median(rs: &[Measurement], op: &str, imp: &str, metric: &str) -> Option<f64> {
    rs.iter()
        .find(|m| {
            m.group == GROUP.name
                && m.operation == op
                && m.implementation == imp
                && m.metric == metric
                && m.stats.samples > 0
        })
        .map(|m| m.stats.median)
}

/// Every operation of this run with a `LeanString` row, in order.
fn operations(rs: &[Measurement], metric: &str) -> Vec<String> {
    let mut ops: Vec<String> = Vec::new();
    for m in rs {
        if m.group == GROUP.name
            && m.implementation == LEAN
            && m.metric == metric
            && m.stats.samples > 0
            && !ops.contains(&m.operation)
        {
            ops.push(m.operation.clone());
        }
    }
    ops
}

/// `LeanString` over the best peer of each row, for time (and instructions, when counted),
/// and total bytes over compact_str's per corpus; each a `target` row.
fn targets(ctx: &mut Ctx<'_>) {
    let rs = ctx.results().to_vec();
    let mut lines = Vec::new();
    for metric in ["ns/op", "instructions/op"] {
        for op in operations(&rs, metric) {
            let Some(ours) = median(&rs, &op, LEAN, metric) else {
                continue;
            };
            let best = rs
                .iter()
                .filter(|m| {
                    m.group == GROUP.name
                        && m.operation == op
                        && m.metric == metric
                        && m.implementation != LEAN
                        && m.stats.samples > 0
                        && m.stats.median > 0.0
                })
                .min_by(|a, b| a.stats.median.total_cmp(&b.stats.median));
            let Some(best) = best else { continue };
            let r = ours / best.stats.median;
            let name = format!("{op}: LeanString / best peer ({metric})");
            lines.push(format!(
                "    {name:<66} {r:6.3}  (best peer: {})",
                best.implementation
            ));
            let case = Case::new("target", &name, "peers", 1);
            ctx.record_goal(
                &case,
                "ratio",
                Instrument::Time,
                Stats::exact(r),
                Goal::AtMost(1.05),
            );
        }
    }
    for op in operations(&rs, "total B/item") {
        if let (Some(ours), Some(theirs)) = (
            median(&rs, &op, LEAN, "total B/item"),
            median(&rs, &op, COMPACT_STR, "total B/item"),
        ) {
            let corpus = op.trim_end_matches(" build");
            let name = format!("{corpus} total bytes: LeanString / compact_str");
            let r = ours / theirs;
            lines.push(format!(
                "    {name:<66} {r:6.3}  ({ours:.1} vs {theirs:.1} B/string)"
            ));
            let case = Case::new("target", &name, "corpora", 1);
            ctx.record_goal(
                &case,
                "ratio",
                Instrument::Memory,
                Stats::exact(r),
                Goal::AtMost(1.0),
            );
        }
    }
    if !lines.is_empty() {
        ctx.note(
            "  LeanString against the best peer, per row (goal <= 1.05; bytes <= 1.00):".into(),
        );
        for l in lines {
            ctx.note(l);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_peer_builds_the_same_text() {
        fn check<T: Peer>() {
            let mut scratch = String::new();
            assert_eq!(T::make("abc").as_ref(), "abc", "{}", T::NAME);
            let long = "an_identifier_long_enough";
            assert_eq!(
                T::concat(&mut scratch, long, "x").as_ref(),
                format!("{long}x")
            );
            assert_eq!(T::format_pair("a", long).as_ref(), format!("a::{long}"));
            assert_eq!(T::from_int(u64::MAX).as_ref(), u64::MAX.to_string());
            for x in [0.5, 1e300, 3.0] {
                assert_eq!(
                    T::from_float(x).as_ref().parse::<f64>(),
                    Ok(x),
                    "{}",
                    T::NAME
                );
            }
        }
        fn all() -> Result<(), ()> {
            fn c<T: Peer>() -> Result<(), ()> {
                check::<T>();
                Ok(())
            }
            each_peer!(c());
            Ok(())
        }
        all().unwrap();
    }

    #[test]
    fn the_fold_sees_lengths_and_first_bytes() {
        assert_ne!(fold(&["ab"]), fold(&["b"]));
        assert_ne!(fold(&["ab"]), fold(&["a", "b"]));
        assert!(same_fold(&["x"], 1, fold(&["x"])).is_ok());
        assert!(same_fold(&["x"], 2, fold(&["x"])).is_err());
    }
}
