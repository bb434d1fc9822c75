//! `tree`: `cob_tree::CobTree<u64, u64>` against `BTreeMap`, `RwLock<BTreeMap>`,
//! `crossbeam_skiplist::SkipMap` and a sorted `Vec` with binary search (the lookup floor).
//!
//! The seed's table (100-5,000 keys: point lookup, sequential and random insert, 80/20
//! mix, strided access) with its published numbers, then 100K and 1M keys (10M with
//! `--full`): get, random and sequential build, remove, full iteration, 100-element ranges;
//! then thread sweeps (`--threads`) of reads and of an 80/20 read/insert mix at 1M keys.

use std::collections::BTreeMap;
use std::sync::RwLock;

use cob_tree::CobTree;
use crossbeam_skiplist::SkipMap;

use crate::measure::{BenchResult, Case, Ctx, Instrument};
use crate::seeds::{Claim, Ours};

use super::group::Group;
use super::mix::{self, xorshift};

/// The group.
pub const GROUP: Group = Group {
    name: "tree",
    about: "CobTree vs BTreeMap, RwLock<BTreeMap>, SkipMap, sorted Vec: seed table, 100K-1M keys, thread sweeps",
    run,
    claims: CLAIMS,
    ab_claims: &[],
};

const COB: &str = "CobTree";
const BT: &str = "BTreeMap";
const RW: &str = "RwLock<BTreeMap>";
const SKIP: &str = "SkipMap";
const VEC: &str = "sorted Vec";

/// Map sizes of the seed's benchmark table (all fit in L2: where the seed stopped).
pub const SEED_TABLE_SIZES: [usize; 5] = [100, 500, 1_000, 2_000, 5_000];
/// Map sizes past the caches, where the layout matters (quick mode).
pub const LARGE_SIZES: [usize; 2] = [100_000, 1_000_000];
/// Extra map size of the full mode.
pub const FULL_SIZES: [usize; 1] = [10_000_000];

/// Lookups per timed call (at most; fewer for smaller maps' seed rows is not needed).
const PROBES: usize = 100_000;
/// Range queries per timed call.
const RANGES: usize = 10_000;
/// Operations per call of the single-threaded 80/20 mix (the seed's batch, assumed).
const MIX_OPS: usize = 1_000;
/// Stride of the strided-access case.
const STRIDE: usize = 16;
/// Keys of the thread sweeps.
const SWEEP_KEYS: usize = 1_000_000;

/// The value stored for key `k`: lets every read check its answer.
fn val(k: u64) -> u64 {
    k.rotate_left(17) ^ 0x5851_f42d_4c95_7f2d
}

/// `n` distinct pseudo-random keys (xorshift64 is a bijection, so no repeats).
fn random_keys(n: usize, seed: u64) -> Vec<u64> {
    let mut x = seed | 1;
    (0..n).map(|_| xorshift(&mut x)).collect()
}

/// The single-threaded interface every peer gets (sorted Vec only where it makes sense).
trait Peer: Sized {
    const NAME: &'static str;
    fn empty() -> Self;
    fn put(&mut self, k: u64, v: u64);
    fn get(&self, k: u64) -> Option<u64>;
    fn del(&mut self, k: u64) -> Option<u64>;
    fn len(&self) -> usize;
    /// (count, key sum) of a full iteration.
    fn scan(&self) -> (usize, u64);
    /// Key sum of the first `n` keys `>= from`.
    fn range_sum(&self, from: u64, n: usize) -> u64;
}

impl Peer for CobTree<u64, u64> {
    const NAME: &'static str = COB;
    fn empty() -> Self {
        CobTree::new()
    }
    fn put(&mut self, k: u64, v: u64) {
        self.insert(k, v);
    }
    fn get(&self, k: u64) -> Option<u64> {
        CobTree::get(self, &k)
    }
    fn del(&mut self, k: u64) -> Option<u64> {
        self.remove(&k)
    }
    fn len(&self) -> usize {
        CobTree::len(self)
    }
    fn scan(&self) -> (usize, u64) {
        self.iter()
            .fold((0, 0), |(c, s), (k, _)| (c + 1, s.wrapping_add(k)))
    }
    fn range_sum(&self, from: u64, n: usize) -> u64 {
        self.range(from..)
            .take(n)
            .fold(0, |s, (k, _)| s.wrapping_add(k))
    }
}

impl Peer for BTreeMap<u64, u64> {
    const NAME: &'static str = BT;
    fn empty() -> Self {
        BTreeMap::new()
    }
    fn put(&mut self, k: u64, v: u64) {
        self.insert(k, v);
    }
    fn get(&self, k: u64) -> Option<u64> {
        BTreeMap::get(self, &k).copied()
    }
    fn del(&mut self, k: u64) -> Option<u64> {
        self.remove(&k)
    }
    fn len(&self) -> usize {
        BTreeMap::len(self)
    }
    fn scan(&self) -> (usize, u64) {
        self.iter()
            .fold((0, 0), |(c, s), (k, _)| (c + 1, s.wrapping_add(*k)))
    }
    fn range_sum(&self, from: u64, n: usize) -> u64 {
        self.range(from..)
            .take(n)
            .fold(0, |s, (k, _)| s.wrapping_add(*k))
    }
}

impl Peer for RwLock<BTreeMap<u64, u64>> {
    const NAME: &'static str = RW;
    fn empty() -> Self {
        RwLock::new(BTreeMap::new())
    }
    fn put(&mut self, k: u64, v: u64) {
        self.write().unwrap().insert(k, v);
    }
    fn get(&self, k: u64) -> Option<u64> {
        self.read().unwrap().get(&k).copied()
    }
    fn del(&mut self, k: u64) -> Option<u64> {
        self.write().unwrap().remove(&k)
    }
    fn len(&self) -> usize {
        self.read().unwrap().len()
    }
    fn scan(&self) -> (usize, u64) {
        self.read().unwrap().scan()
    }
    fn range_sum(&self, from: u64, n: usize) -> u64 {
        self.read().unwrap().range_sum(from, n)
    }
}

impl Peer for SkipMap<u64, u64> {
    const NAME: &'static str = SKIP;
    fn empty() -> Self {
        SkipMap::new()
    }
    fn put(&mut self, k: u64, v: u64) {
        self.insert(k, v);
    }
    fn get(&self, k: u64) -> Option<u64> {
        SkipMap::get(self, &k).map(|e| *e.value())
    }
    fn del(&mut self, k: u64) -> Option<u64> {
        self.remove(&k).map(|e| *e.value())
    }
    fn len(&self) -> usize {
        SkipMap::len(self)
    }
    fn scan(&self) -> (usize, u64) {
        self.iter()
            .fold((0, 0), |(c, s), e| (c + 1, s.wrapping_add(*e.key())))
    }
    fn range_sum(&self, from: u64, n: usize) -> u64 {
        self.range(from..)
            .take(n)
            .fold(0, |s, e| s.wrapping_add(*e.key()))
    }
}

/// Sorted `Vec` + binary search: reads only (building it = sorting).
struct Sorted(Vec<(u64, u64)>);

impl Sorted {
    fn of(keys: &[u64]) -> Sorted {
        let mut v: Vec<(u64, u64)> = keys.iter().map(|&k| (k, val(k))).collect();
        v.sort_unstable();
        Sorted(v)
    }
    fn get(&self, k: u64) -> Option<u64> {
        self.0
            .binary_search_by_key(&k, |e| e.0)
            .ok()
            .map(|i| self.0[i].1)
    }
    fn range_sum(&self, from: u64, n: usize) -> u64 {
        let i = self.0.partition_point(|e| e.0 < from);
        self.0[i..]
            .iter()
            .take(n)
            .fold(0, |s, e| s.wrapping_add(e.0))
    }
}

fn build<P: Peer>(keys: &[u64]) -> P {
    let mut p = P::empty();
    for &k in keys {
        p.put(k, val(k));
    }
    p
}

/// Whether `P`'s builds and removes run at `n` keys: SkipMap builds cost seconds per
/// sample at 1M keys (half a minute at 10M), so they run up to 100K keys in quick mode and
/// up to 1M in full mode, to keep the group in budget.
fn builds_here<P: Peer>(ctx: &Ctx<'_>, n: usize) -> bool {
    P::NAME != SKIP || n <= if ctx.full() { 1_000_000 } else { 100_000 }
}

/// The random or the sequential build of one peer at one size. `single_threaded` runs
/// each for every peer one right after another, so that a change in the load of a shared
/// machine falls on both sides of the ratios alike instead of on one peer's block of cases.
fn build_case<P: Peer>(ctx: &mut Ctx<'_>, n: usize, keys: &[u64], sequential: bool) -> BenchResult {
    let p = n as u64;
    let name = P::NAME;
    if !builds_here::<P>(ctx, n) {
        return Ok(());
    }
    if !sequential {
        let case = Case::new("random build", name, "keys", p).baseline(BT);
        ctx.time(
            &case,
            p,
            || (),
            |()| build::<P>(keys),
            |m| {
                (m.len() == n)
                    .then_some(())
                    .ok_or(format!("len {}", m.len()))
            },
        )?;
        return Ok(());
    }
    let case = Case::new("sequential build", name, "keys", p).baseline(BT);
    ctx.time(
        &case,
        p,
        || (),
        |()| {
            let mut m = P::empty();
            for k in 0..p {
                m.put(k, val(k));
            }
            m
        },
        |m| {
            (m.len() == n)
                .then_some(())
                .ok_or(format!("len {}", m.len()))
        },
    )?;

    Ok(())
}

/// Everything single-threaded for one peer at one size but the builds (see [`build_case`]).
fn single<P: Peer>(
    ctx: &mut Ctx<'_>,
    n: usize,
    keys: &[u64],
    sorted: &Sorted,
    probes: &[u64],
    seed_row: bool,
) -> BenchResult {
    let p = n as u64;
    let name = P::NAME;
    let built: P = build(keys);

    if ctx.wants(Instrument::Memory) && !seed_row {
        peak_memory::<P>(ctx, n, keys)?;
    }
    if !ctx.wants(Instrument::Time) {
        return Ok(());
    }

    get_case(ctx, name, n, probes, |k| built.get(k))?;

    let builds = builds_here::<P>(ctx, n);
    if seed_row {
        let case = Case::new("80/20 mix", name, "keys", p).baseline(BT);
        let extra = random_keys(MIX_OPS, 0xfeed);
        ctx.time(
            &case,
            MIX_OPS as u64,
            || build::<P>(keys),
            |mut m| {
                let mut found = 0;
                for (i, &e) in extra.iter().enumerate() {
                    if i % 5 == 4 {
                        m.put(e, val(e));
                    } else if m.get(keys[(e as usize) % n]).is_some() {
                        found += 1;
                    }
                }
                (m, found)
            },
            |(m, found)| {
                let reads = MIX_OPS - MIX_OPS / 5;
                (*found == reads && m.len() >= n)
                    .then_some(())
                    .ok_or(format!("{found} of {reads} reads found"))
            },
        )?;
        let case = Case::new("strided get", name, "keys", p).baseline(BT);
        let strided: Vec<u64> = sorted.0.iter().step_by(STRIDE).map(|e| e.0).collect();
        let want: u64 = strided.iter().fold(0, |s, &k| s.wrapping_add(val(k)));
        ctx.time(
            &case,
            strided.len() as u64,
            || (),
            |()| {
                strided
                    .iter()
                    .fold(0u64, |s, &k| s.wrapping_add(built.get(k).unwrap_or(0)))
            },
            |&got| {
                (got == want)
                    .then_some(())
                    .ok_or(format!("sum {got} != {want}"))
            },
        )?;
        return Ok(());
    }

    let case = Case::new("remove", name, "keys", p).baseline(BT);
    let want: u64 = keys.iter().fold(0, |s, &k| s.wrapping_add(val(k)));
    if builds {
        ctx.time(
            &case,
            p,
            || {
                let mut m = P::empty();
                for &(k, v) in &sorted.0 {
                    m.put(k, v);
                }
                m
            },
            |mut m| {
                let s = keys
                    .iter()
                    .fold(0u64, |s, &k| s.wrapping_add(m.del(k).unwrap_or(0)));
                (m, s)
            },
            |(m, s)| {
                (*s == want && m.len() == 0)
                    .then_some(())
                    .ok_or(format!("sum {s} != {want}, {} left", m.len()))
            },
        )?;
    }

    iterate_case(ctx, name, n, sorted, || built.scan())?;
    range_case(ctx, name, n, probes, sorted, |k| built.range_sum(k, 100))?;

    Ok(())
}

/// Point lookups of every probe in one implementation: `get` looks up one key.
fn get_case(
    ctx: &mut Ctx<'_>,
    name: &str,
    n: usize,
    probes: &[u64],
    get: impl Fn(u64) -> Option<u64>,
) -> BenchResult {
    let case = Case::new("get", name, "keys", n as u64).baseline(BT);
    let want: u64 = probes.iter().fold(0, |s, &k| s.wrapping_add(val(k)));
    ctx.time(
        &case,
        probes.len() as u64,
        || (),
        |()| {
            probes
                .iter()
                .fold(0u64, |s, &k| s.wrapping_add(get(k).unwrap_or(0)))
        },
        |&got| {
            (got == want)
                .then_some(())
                .ok_or(format!("sum {got} != {want}"))
        },
    )?;
    Ok(())
}

/// The memory rows of one random build: allocations per key, and the *peak* requested and
/// physical live bytes per key during the build (for CobTree that includes each growth's
/// moment with the old and the new array both alive; retired arrays are not left behind).
fn peak_memory<P: Peer>(ctx: &mut Ctx<'_>, n: usize, keys: &[u64]) -> BenchResult {
    let case = Case::new("random build", P::NAME, "keys", n as u64).baseline(BT);
    let verify = |m: &P| {
        (m.len() == n)
            .then_some(())
            .ok_or(format!("len {}", m.len()))
    };
    ctx.peak_memory(&case, n as u64, || build::<P>(keys), verify)
}

/// Full iteration of one implementation: `scan` returns (count, key sum).
fn iterate_case(
    ctx: &mut Ctx<'_>,
    name: &str,
    n: usize,
    sorted: &Sorted,
    scan: impl Fn() -> (usize, u64),
) -> BenchResult {
    let case = Case::new("iterate", name, "keys", n as u64).baseline(BT);
    let want = (n, sorted.0.iter().fold(0u64, |s, e| s.wrapping_add(e.0)));
    ctx.time(
        &case,
        n as u64,
        || (),
        |()| scan(),
        |&got| {
            (got == want)
                .then_some(())
                .ok_or(format!("{got:?} != {want:?}"))
        },
    )?;
    Ok(())
}

/// 100-element ranges from the first [`RANGES`] probes: `range_sum(k)` sums the keys of
/// the range starting at `k`.
fn range_case(
    ctx: &mut Ctx<'_>,
    name: &str,
    n: usize,
    probes: &[u64],
    sorted: &Sorted,
    range_sum: impl Fn(u64) -> u64,
) -> BenchResult {
    let case = Case::new("range 100", name, "keys", n as u64).baseline(BT);
    let starts = &probes[..RANGES.min(probes.len())];
    let want = starts
        .iter()
        .fold(0u64, |s, &k| s.wrapping_add(sorted.range_sum(k, 100)));
    ctx.time(
        &case,
        starts.len() as u64,
        || (),
        |()| {
            starts
                .iter()
                .fold(0u64, |s, &k| s.wrapping_add(range_sum(k)))
        },
        |&got| {
            (got == want)
                .then_some(())
                .ok_or(format!("sum {got} != {want}"))
        },
    )?;
    Ok(())
}

/// The sorted-Vec floor: get, iteration and ranges.
fn floor(
    ctx: &mut Ctx<'_>,
    n: usize,
    sorted: &Sorted,
    probes: &[u64],
    seed_row: bool,
) -> BenchResult {
    if !ctx.wants(Instrument::Time) {
        return Ok(());
    }
    get_case(ctx, VEC, n, probes, |k| sorted.get(k))?;
    if seed_row {
        return Ok(());
    }
    iterate_case(ctx, VEC, n, sorted, || {
        sorted
            .0
            .iter()
            .fold((0usize, 0u64), |(c, s), e| (c + 1, s.wrapping_add(e.0)))
    })?;
    range_case(ctx, VEC, n, probes, sorted, |k| sorted.range_sum(k, 100))?;
    Ok(())
}

/// A map the sweeps share between threads.
trait Shared: Sync {
    const NAME: &'static str;
    fn sget(&self, k: u64) -> Option<u64>;
    fn sput(&self, k: u64, v: u64);
}

impl Shared for CobTree<u64, u64> {
    const NAME: &'static str = COB;
    fn sget(&self, k: u64) -> Option<u64> {
        self.get(&k)
    }
    fn sput(&self, k: u64, v: u64) {
        self.insert(k, v);
    }
}

impl Shared for RwLock<BTreeMap<u64, u64>> {
    const NAME: &'static str = RW;
    fn sget(&self, k: u64) -> Option<u64> {
        self.read().unwrap().get(&k).copied()
    }
    fn sput(&self, k: u64, v: u64) {
        self.write().unwrap().insert(k, v);
    }
}

impl Shared for SkipMap<u64, u64> {
    const NAME: &'static str = SKIP;
    fn sget(&self, k: u64) -> Option<u64> {
        self.get(&k).map(|e| *e.value())
    }
    fn sput(&self, k: u64, v: u64) {
        self.insert(k, v);
    }
}

impl Shared for Sorted {
    const NAME: &'static str = VEC;
    fn sget(&self, k: u64) -> Option<u64> {
        self.get(k)
    }
    fn sput(&self, _: u64, _: u64) {
        unreachable!("the sorted Vec is read-only")
    }
}

/// Runs `threads` threads of `ops` operations each on `m` (a fraction `write_pct` of them
/// inserts of new keys) and returns million operations per second; every read checks its
/// value and every read must find its key.
fn sweep<S: Shared>(
    ctx: &mut Ctx<'_>,
    m: &S,
    keys: &[u64],
    op: &str,
    write_pct: u64,
) -> BenchResult {
    let samples = if ctx.full() { 5 } else { 3 };
    mix::sweep(ctx, op, S::NAME, RW, &[1, 2], samples, |t, ops, round| {
        mix::mix_once(t, ops, round, |x| {
            if xorshift(x) % 100 < write_pct {
                // A random key: mostly new (the map grows), its value `val(k)`.
                m.sput(*x, val(*x));
                false
            } else {
                let k = keys[(*x >> 11) as usize % keys.len()];
                m.sget(k) != Some(val(k))
            }
        })
    })
}

fn run(ctx: &mut Ctx<'_>) -> BenchResult {
    if !ctx.settings().sweeps_only {
        single_threaded(ctx)?;
    }
    sweeps(ctx)?;
    super::tree_strings::run(ctx)?;
    super::tree_keys::run(ctx)
}

/// The seed's table and the large sizes, one thread.
fn single_threaded(ctx: &mut Ctx<'_>) -> BenchResult {
    for n in SEED_TABLE_SIZES {
        let keys = random_keys(n, 0x2545_f491_4f6c_dd1d);
        let sorted = Sorted::of(&keys);
        let probes: Vec<u64> = random_keys(PROBES.min(n * 20), 7)
            .iter()
            .map(|x| keys[(*x % n as u64) as usize])
            .collect();
        single::<CobTree<u64, u64>>(ctx, n, &keys, &sorted, &probes, true)?;
        single::<BTreeMap<u64, u64>>(ctx, n, &keys, &sorted, &probes, true)?;
        single::<RwLock<BTreeMap<u64, u64>>>(ctx, n, &keys, &sorted, &probes, true)?;
        single::<SkipMap<u64, u64>>(ctx, n, &keys, &sorted, &probes, true)?;
        floor(ctx, n, &sorted, &probes, true)?;
        for sequential in [false, true] {
            build_case::<CobTree<u64, u64>>(ctx, n, &keys, sequential)?;
            build_case::<BTreeMap<u64, u64>>(ctx, n, &keys, sequential)?;
            build_case::<RwLock<BTreeMap<u64, u64>>>(ctx, n, &keys, sequential)?;
            build_case::<SkipMap<u64, u64>>(ctx, n, &keys, sequential)?;
        }
    }
    let mut sizes = LARGE_SIZES.to_vec();
    if ctx.full() {
        sizes.extend(FULL_SIZES);
    }
    for n in sizes {
        let keys = random_keys(n, 0x2545_f491_4f6c_dd1d);
        let sorted = Sorted::of(&keys);
        let probes: Vec<u64> = random_keys(PROBES, 7)
            .iter()
            .map(|x| keys[(*x % n as u64) as usize])
            .collect();
        single::<CobTree<u64, u64>>(ctx, n, &keys, &sorted, &probes, false)?;
        single::<BTreeMap<u64, u64>>(ctx, n, &keys, &sorted, &probes, false)?;
        single::<SkipMap<u64, u64>>(ctx, n, &keys, &sorted, &probes, false)?;
        floor(ctx, n, &sorted, &probes, false)?;
        for sequential in [false, true] {
            build_case::<CobTree<u64, u64>>(ctx, n, &keys, sequential)?;
            build_case::<BTreeMap<u64, u64>>(ctx, n, &keys, sequential)?;
            build_case::<SkipMap<u64, u64>>(ctx, n, &keys, sequential)?;
        }
    }
    Ok(())
}

/// Reads and the 80/20 mix at 1M keys for each thread count.
fn sweeps(ctx: &mut Ctx<'_>) -> BenchResult {
    if ctx.sweeps() {
        let keys = random_keys(SWEEP_KEYS, 0x2545_f491_4f6c_dd1d);
        let cob: CobTree<u64, u64> = build(&keys);
        sweep(ctx, &cob, &keys, "read sweep", 0)?;
        sweep(ctx, &cob, &keys, "80/20 sweep", 20)?;
        drop(cob);
        let rw: RwLock<BTreeMap<u64, u64>> = build(&keys);
        sweep(ctx, &rw, &keys, "read sweep", 0)?;
        sweep(ctx, &rw, &keys, "80/20 sweep", 20)?;
        drop(rw);
        let skip: SkipMap<u64, u64> = build(&keys);
        sweep(ctx, &skip, &keys, "read sweep", 0)?;
        sweep(ctx, &skip, &keys, "80/20 sweep", 20)?;
        drop(skip);
        sweep(ctx, &Sorted::of(&keys), &keys, "read sweep", 0)?;
    }
    Ok(())
}

const fn claim(
    operation: &'static str,
    param: u64,
    scale: f64,
    seed: f64,
    unit: &'static str,
    what: &'static str,
    note: &'static str,
) -> Claim {
    Claim {
        group: "tree",
        operation,
        param,
        metric: "ns/op",
        ours: Ours::Value {
            implementation: COB,
            scale,
        },
        seed,
        unit,
        what,
        note,
    }
}

/// The seed's published "after" numbers (`cob-tree-inline-cell-marker.txt`), each beside
/// the row of ours that measures the same thing. Totals are ns/op times the operations of
/// one seed run.
pub const CLAIMS: &[Claim] = &[
    claim(
        "get",
        100,
        1.0,
        78.7,
        "ns",
        "point lookup, 100 keys",
        "per lookup",
    ),
    claim(
        "get",
        500,
        1.0,
        87.6,
        "ns",
        "point lookup, 500 keys",
        "per lookup",
    ),
    claim(
        "get",
        1000,
        1.0,
        87.9,
        "ns",
        "point lookup, 1,000 keys",
        "per lookup",
    ),
    claim(
        "get",
        2000,
        1.0,
        91.9,
        "ns",
        "point lookup, 2,000 keys",
        "per lookup",
    ),
    claim(
        "get",
        5000,
        1.0,
        104.7,
        "ns",
        "point lookup, 5,000 keys",
        "per lookup",
    ),
    claim(
        "sequential build",
        100,
        1e-4,
        2.80,
        "ms",
        "sequential inserts, 100 keys",
        "whole build",
    ),
    claim(
        "sequential build",
        500,
        5e-4,
        13.4,
        "ms",
        "sequential inserts, 500 keys",
        "whole build",
    ),
    claim(
        "sequential build",
        1000,
        1e-3,
        26.5,
        "ms",
        "sequential inserts, 1,000 keys",
        "whole build",
    ),
    claim(
        "random build",
        100,
        0.1,
        417.0,
        "µs",
        "random inserts, 100 keys",
        "whole build",
    ),
    claim(
        "random build",
        500,
        0.5,
        725.0,
        "µs",
        "random inserts, 500 keys",
        "whole build",
    ),
    claim(
        "random build",
        1000,
        1.0,
        888.0,
        "µs",
        "random inserts, 1,000 keys",
        "whole build",
    ),
    claim(
        "random build",
        2000,
        2.0,
        1710.0,
        "µs",
        "random inserts, 2,000 keys",
        "whole build",
    ),
    claim(
        "random build",
        5000,
        5.0,
        3440.0,
        "µs",
        "random inserts, 5,000 keys",
        "whole build",
    ),
    claim(
        "80/20 mix",
        500,
        1.0,
        96.0,
        "µs",
        "80/20 mix, 500 keys",
        "per 1,000 ops (seed's batch size assumed)",
    ),
    claim(
        "80/20 mix",
        1000,
        1.0,
        96.5,
        "µs",
        "80/20 mix, 1,000 keys",
        "per 1,000 ops (seed's batch size assumed)",
    ),
    claim(
        "80/20 mix",
        2000,
        1.0,
        102.0,
        "µs",
        "80/20 mix, 2,000 keys",
        "per 1,000 ops (seed's batch size assumed)",
    ),
    claim(
        "strided get",
        5000,
        1.0,
        929.0,
        "ns",
        "strided access",
        "seed's size and unit unstated; ours per lookup, 5,000 keys",
    ),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_keys_are_distinct() {
        let mut k = random_keys(10_000, 3);
        k.sort_unstable();
        k.dedup();
        assert_eq!(k.len(), 10_000);
    }

    #[test]
    fn peers_agree_on_a_small_map() {
        let keys = random_keys(500, 9);
        let sorted = Sorted::of(&keys);
        let c: CobTree<u64, u64> = build(&keys);
        let b: BTreeMap<u64, u64> = build(&keys);
        let s: SkipMap<u64, u64> = build(&keys);
        assert_eq!(c.scan(), b.scan());
        assert_eq!(s.scan(), b.scan());
        for &k in &keys[..50] {
            assert_eq!(c.range_sum(k, 100), sorted.range_sum(k, 100));
            assert_eq!(Peer::get(&c, k), Some(val(k)));
        }
    }
}
