//! The `tree` group's key-type series: the keys people put in an ordered map —
//! `(u32, u64)`, a `#[derive(Ord)]` struct, URL-like strings with a 26-byte shared prefix,
//! random 16-hex-digit strings and `/usr/lib/x86_64-linux-gnu/...` paths (the generators of
//! `scaling-tree`) — at 10K and 100K keys, and 1M (CobTree and BTreeMap only, all maps
//! with `--full`) with `--large`, `--full` or `--only tree` alone. `CobTree` (no prefix hint) against `BTreeMap`, `SkipMap`,
//! `scc::TreeIndex` and `ferntree` ([`super::peers`]).
//!
//! Rows are named `key OP: KEY TYPE` (so `--filter "key "` selects the series), all in
//! thread CPU time (other work on a shared machine does not inflate them), median of 3
//! samples of at least 20 ms: `insert` and `get` (per key: each sample builds the map
//! from the shuffled keys, then looks every key up) and their sum `insert+get`;
//! `growth per insert vs 10K` (per-insert time at 100K / 1M over that at 10K); `peak
//! bytes` and `live bytes` (physical bytes per entry at the peak during the build and
//! after it, the keys' heap buffers and epoch garbage not freed yet included); `iterate`
//! (the whole map by reference), `range 100` (100-entry scans from 1,000 random keys),
//! and CobTree's `range take 10`: plain `range(k..).take(10)` against the pinned view's.
//! Every row checks its answer (value sums against a sorted reference).

use std::collections::BTreeMap;
use std::ops::Bound;
use std::time::Duration;

use cob_tree::CobTree;
use crossbeam_skiplist::SkipMap;

use crate::counting;
use crate::measure::{BenchResult, Case, Ctx, Instrument, Stats};
use crate::scaling::sweep::thread_cpu;
use crate::scaling::tree::{self as shapes, KeyGen, Paths, PrefixStrings, RandomStrings};
use crate::scaling::tree::{StructKeys, TupleKeys};

use super::mix::fail;
use super::peers::{self, BT, Fern, KeyMap};

/// Sizes of every run.
pub const KEY_SIZES: [usize; 2] = [10_000, 100_000];
/// The size added when the run names the group or is `--full`.
pub const DEEP_SIZE: usize = 1_000_000;
/// Range scans per timed call.
const RANGES: usize = 1_000;
/// Minimum measured time per sample of the build rows.
const MIN_SAMPLE: Duration = Duration::from_millis(20);

/// The value stored with key number `i` (every read checks it).
fn val(i: usize) -> u64 {
    (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1
}

/// The sizes of this run.
pub fn sizes(ctx: &Ctx<'_>) -> Vec<usize> {
    let mut s = KEY_SIZES.to_vec();
    if ctx.full() || ctx.settings().deep {
        s.push(DEEP_SIZE);
    }
    s
}

/// What one key type's run shares between the maps: keys in insertion (shuffled) order,
/// their values by position, and the sorted reference for scans.
struct Input<K> {
    keys: Vec<K>,
    sorted: Vec<(K, u64)>,
    starts: Vec<usize>,
}

impl<K: Ord + Clone> Input<K> {
    fn of<G: KeyGen<Key = K>>(n: usize) -> Self {
        let keys = shapes::keys::<G>(n as u64);
        let mut sorted: Vec<(K, u64)> = keys
            .iter()
            .enumerate()
            .map(|(i, k)| (k.clone(), val(i)))
            .collect();
        sorted.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        let mut x = 0x1234_5678_9abc_def1_u64 ^ n as u64;
        let starts = (0..RANGES.min(n))
            .map(|_| (super::mix::xorshift(&mut x) % n as u64) as usize)
            .collect();
        Input {
            keys,
            sorted,
            starts,
        }
    }

    fn value_sum(&self) -> u64 {
        (0..self.keys.len()).fold(0u64, |s, i| s.wrapping_add(val(i)))
    }

    /// Reference value sum of the first `take` entries from each start key.
    fn scan_sum(&self, take: usize) -> u64 {
        self.starts.iter().fold(0u64, |s, &i| {
            let p = self.sorted.partition_point(|e| e.0 < self.keys[i]);
            self.sorted[p..]
                .iter()
                .take(take)
                .fold(s, |a, e| a.wrapping_add(e.1))
        })
    }
}

fn build<K: Clone, M: KeyMap<K>>(keys: Vec<K>) -> M {
    let mut m = M::empty();
    for (i, k) in keys.into_iter().enumerate() {
        m.put(k, val(i));
    }
    m
}

fn check_map<K: Ord + Clone, M: KeyMap<K>>(m: &M, input: &Input<K>) -> Result<u64, String> {
    if m.count() != input.keys.len() {
        return Err(format!(
            "{} entries, expected {}",
            m.count(),
            input.keys.len()
        ));
    }
    let got = input
        .keys
        .iter()
        .fold(0u64, |s, k| s.wrapping_add(m.find(k).unwrap_or(0)));
    let want = input.value_sum();
    if got != want {
        return Err(format!("lookup sum {got}, expected {want}"));
    }
    Ok(got)
}

/// Samples of a map's build and of looking up every key: (insert ns/key, get ns/key).
fn build_samples<K: Ord + Clone, M: KeyMap<K>>(
    input: &Input<K>,
    samples: usize,
) -> Result<(Vec<f64>, Vec<f64>), String> {
    let n = input.keys.len();
    let (mut ins, mut get) = (Vec::new(), Vec::new());
    for _ in 0..samples {
        let (mut ti, mut tg, mut reps) = (Duration::ZERO, Duration::ZERO, 0u32);
        while ti + tg < MIN_SAMPLE || reps == 0 {
            let keys = input.keys.clone();
            let t0 = thread_cpu();
            let m: M = std::hint::black_box(build(keys));
            let t1 = thread_cpu();
            let sum = input
                .keys
                .iter()
                .fold(0u64, |s, k| s.wrapping_add(m.find(k).unwrap_or(0)));
            let t2 = thread_cpu();
            let want = input.value_sum();
            if m.count() != n || sum != want {
                return Err(format!("{} entries, lookup sum {sum} != {want}", m.count()));
            }
            drop(m);
            ti += t1 - t0;
            tg += t2 - t1;
            reps += 1;
        }
        let per = |d: Duration| d.as_nanos() as f64 / (f64::from(reps) * n as f64);
        ins.push(per(ti));
        get.push(per(tg));
    }
    Ok((ins, get))
}

/// Samples of `f` (one call does `ops` operations and checks its answer) in thread CPU
/// time: each sample repeats `f` for at least [`MIN_SAMPLE`]; ns per operation.
fn cpu_samples(
    samples: usize,
    ops: usize,
    mut f: impl FnMut() -> Result<(), String>,
) -> Result<Vec<f64>, String> {
    f()?; // warm-up
    let mut out = Vec::with_capacity(samples);
    for _ in 0..samples {
        let (mut t, mut reps) = (Duration::ZERO, 0u32);
        while t < MIN_SAMPLE || reps == 0 {
            let t0 = thread_cpu();
            f()?;
            t += thread_cpu() - t0;
            reps += 1;
        }
        out.push(t.as_nanos() as f64 / (f64::from(reps) * ops as f64));
    }
    Ok(out)
}

/// The operation name of a row: `key OP: KIND`.
fn op(what: &str, kind: &str) -> String {
    format!("key {what}: {kind}")
}

/// Every row of one map on one key type at one size.
fn rows<K: Ord + Clone, M: KeyMap<K>>(
    ctx: &mut Ctx<'_>,
    kind: &str,
    input: &Input<K>,
    growth_base: &mut Vec<(String, f64)>,
) -> BenchResult {
    let n = input.keys.len();
    let p = n as u64;
    let name = M::NAME;
    let case = |what: &str| Case::new(&op(what, kind), name, "keys", p).baseline(BT);
    if !ctx.native() {
        return Ok(());
    }
    if ctx.wants(Instrument::Memory) {
        let c = case("bytes");
        if ctx.sweep_point(&c) {
            // Each key cloned into the map inside the counted region: its heap bytes
            // count as the map's, as they would in a user's map.
            let (m, after, (_, peak)) = counting::measure_peak(|| {
                let mut m = M::empty();
                for (i, k) in input.keys.iter().enumerate() {
                    m.put(k.clone(), val(i));
                }
                m
            });
            check_map(&m, input).map_err(|e| fail(&c, e))?;
            drop(m);
            let per = |b: i64| Stats::exact(b as f64 / n as f64);
            let memory = Instrument::Memory;
            ctx.record(&case("peak bytes"), "B/entry", true, memory, per(peak));
            let live = per(after.physical_live);
            ctx.record(&case("live bytes"), "B/entry", true, memory, live);
        }
    }
    if !ctx.wants(Instrument::Time) {
        return Ok(());
    }
    let both_case = case("insert+get");
    if ctx.sweep_point(&both_case) {
        let samples = ctx.samples_or(3);
        let (ins, get) = build_samples::<K, M>(input, samples).map_err(|e| fail(&both_case, e))?;
        let both: Vec<f64> = ins.iter().zip(&get).map(|(a, b)| a + b).collect();
        let si = Stats::of(&ins);
        ctx.record(&case("insert"), "ns/op", true, Instrument::Time, si);
        ctx.record(
            &case("get"),
            "ns/op",
            true,
            Instrument::Time,
            Stats::of(&get),
        );
        ctx.record(
            &both_case,
            "ns/op",
            true,
            Instrument::Time,
            Stats::of(&both),
        );
        let key = format!("{name}/{kind}");
        if n == KEY_SIZES[0] {
            growth_base.push((key, si.median));
        } else if let Some(&(_, base)) = growth_base.iter().find(|(k, _)| *k == key) {
            let g = Stats::exact(si.median / base);
            let c = case("growth per insert vs 10K");
            ctx.record(&c, "x", true, Instrument::Time, g);
        }
    }

    let built: M = build(input.keys.clone());
    check_map(&built, input).map_err(|e| fail(&both_case, e))?;
    let c = case("iterate");
    if ctx.sweep_point(&c) {
        let want = (n, input.value_sum());
        let v = cpu_samples(ctx.samples_or(3), n, || {
            let got = std::hint::black_box(built.scan());
            (got == want)
                .then_some(())
                .ok_or(format!("{got:?} != {want:?}"))
        })
        .map_err(|e| fail(&c, e))?;
        ctx.record(&c, "ns/op", true, Instrument::Time, Stats::of(&v));
    }
    let c = case("range 100");
    if ctx.sweep_point(&c) {
        let want = input.scan_sum(100);
        let v = cpu_samples(ctx.samples_or(3), input.starts.len(), || {
            let got = input.starts.iter().fold(0u64, |s, &i| {
                s.wrapping_add(built.range_sum(&input.keys[i], 100))
            });
            (std::hint::black_box(got) == want)
                .then_some(())
                .ok_or(format!("sum {got} != {want}"))
        })
        .map_err(|e| fail(&c, e))?;
        ctx.record(&c, "ns/op", true, Instrument::Time, Stats::of(&v));
    }
    Ok(())
}

/// CobTree's `range(k..).take(10)` (clones each entry it yields) against the pinned view's
/// range (references): the "clones nothing ahead of what the caller takes".
fn take10<K: Ord + Clone + Send + Sync + 'static>(
    ctx: &mut Ctx<'_>,
    kind: &str,
    input: &Input<K>,
) -> BenchResult {
    const PINNED: &str = "CobTree pin().range";
    if !ctx.native() || !ctx.wants(Instrument::Time) {
        return Ok(());
    }
    let p = input.keys.len() as u64;
    let map: CobTree<K, u64> = build(input.keys.clone());
    let want = input.scan_sum(10);
    let ops = input.starts.len();
    let samples = ctx.samples_or(3);
    let check = |got: u64| {
        (got == want)
            .then_some(())
            .ok_or(format!("sum {got} != {want}"))
    };
    let operation = op("range take 10", kind);
    let case = Case::new(&operation, PINNED, "keys", p).baseline(PINNED);
    if ctx.sweep_point(&case) {
        let v = cpu_samples(samples, ops, || {
            check(input.starts.iter().fold(0u64, |s, &i| {
                map.pin()
                    .range::<K, _>((Bound::Included(&input.keys[i]), Bound::Unbounded))
                    .take(10)
                    .fold(s, |a, e| a.wrapping_add(*e.value()))
            }))
        })
        .map_err(|e| fail(&case, e))?;
        ctx.record(&case, "ns/op", true, Instrument::Time, Stats::of(&v));
    }
    let case = Case::new(&operation, "CobTree range", "keys", p).baseline(PINNED);
    if ctx.sweep_point(&case) {
        let v = cpu_samples(samples, ops, || {
            check(input.starts.iter().fold(0u64, |s, &i| {
                map.range::<K, _>((Bound::Included(&input.keys[i]), Bound::Unbounded))
                    .take(10)
                    .fold(s, |a, (_, v)| a.wrapping_add(v))
            }))
        })
        .map_err(|e| fail(&case, e))?;
        ctx.record(&case, "ns/op", true, Instrument::Time, Stats::of(&v));
    }
    Ok(())
}

/// One key type at every size, every map.
fn key_type<G: KeyGen>(ctx: &mut Ctx<'_>, growth_base: &mut Vec<(String, f64)>) -> BenchResult
where
    G::Key: peers::FernKey,
{
    let kind = G::SHAPE.name();
    for n in sizes(ctx) {
        let input = Input::of::<G>(n);
        rows::<G::Key, CobTree<G::Key, u64>>(ctx, kind, &input, growth_base)?;
        rows::<G::Key, BTreeMap<G::Key, u64>>(ctx, kind, &input, growth_base)?;
        // At 1M keys only the targets' pair (CobTree against BTreeMap), unless --full:
        // the three peers' builds would add minutes.
        if n < DEEP_SIZE || ctx.full() {
            rows::<G::Key, scc::TreeIndex<G::Key, u64>>(ctx, kind, &input, growth_base)?;
            rows::<G::Key, Fern<G::Key, u64>>(ctx, kind, &input, growth_base)?;
            rows::<G::Key, SkipMap<G::Key, u64>>(ctx, kind, &input, growth_base)?;
        }
        take10(ctx, kind, &input)?;
    }
    Ok(())
}

/// The series (single-threaded; skipped by `--sweeps-only`).
pub fn run(ctx: &mut Ctx<'_>) -> BenchResult {
    if ctx.settings().sweeps_only {
        return Ok(());
    }
    let (start, cpu) = (std::time::Instant::now(), thread_cpu());
    let mut base = Vec::new();
    key_type::<TupleKeys>(ctx, &mut base)?;
    key_type::<StructKeys>(ctx, &mut base)?;
    key_type::<PrefixStrings>(ctx, &mut base)?;
    key_type::<RandomStrings>(ctx, &mut base)?;
    key_type::<Paths>(ctx, &mut base)?;
    ctx.note(format!(
        "tree key-type series ({} sizes): {:.0} s wall, {:.0} s CPU",
        sizes(ctx).len(),
        start.elapsed().as_secs_f64(),
        (thread_cpu() - cpu).as_secs_f64()
    ));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn agree<G: KeyGen>()
    where
        G::Key: peers::FernKey,
    {
        let input = Input::of::<G>(3_000);
        let want_scan = (input.keys.len(), input.value_sum());
        let want_range = input.scan_sum(100);
        fn one<K: Ord + Clone, M: KeyMap<K>>(input: &Input<K>, scan: (usize, u64), range: u64) {
            let m: M = build(input.keys.clone());
            check_map(&m, input).unwrap();
            assert_eq!(m.scan(), scan, "{}", M::NAME);
            let got = input.starts.iter().fold(0u64, |s, &i| {
                s.wrapping_add(m.range_sum(&input.keys[i], 100))
            });
            assert_eq!(got, range, "{}", M::NAME);
        }
        one::<G::Key, CobTree<G::Key, u64>>(&input, want_scan, want_range);
        one::<G::Key, BTreeMap<G::Key, u64>>(&input, want_scan, want_range);
        one::<G::Key, scc::TreeIndex<G::Key, u64>>(&input, want_scan, want_range);
        one::<G::Key, Fern<G::Key, u64>>(&input, want_scan, want_range);
        one::<G::Key, SkipMap<G::Key, u64>>(&input, want_scan, want_range);
    }

    #[test]
    fn every_map_agrees_on_every_key_type() {
        agree::<TupleKeys>();
        agree::<StructKeys>();
        agree::<PrefixStrings>();
        agree::<RandomStrings>();
        agree::<Paths>();
    }

    #[test]
    fn build_samples_check_and_time() {
        let input = Input::of::<PrefixStrings>(500);
        let (i, g) = build_samples::<String, BTreeMap<String, u64>>(&input, 2).unwrap();
        assert_eq!((i.len(), g.len()), (2, 2));
    }
}
