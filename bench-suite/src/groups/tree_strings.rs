//! The `tree` group's `String`-key series (issue 16): random 8-32-byte keys, `u64` values,
//! 1K / 100K / 1M keys; `CobTree<String, u64>` (its boxed path) against
//! `BTreeMap<String, u64>`, `RwLock<BTreeMap<..>>` and `SkipMap<String, u64>`: get, random
//! build, remove, iteration, 100-element ranges, peak bytes per entry, and the 2-thread
//! 80/20 mix. CobTree's iteration and range rows read through its borrowing view
//! (`CobTree::pin`), as the peers' iterators hand out references. Operation names start with `str ` so `--filter str` selects the series.

use std::collections::{BTreeMap, HashSet};
use std::ops::Bound;
use std::sync::RwLock;

use cob_tree::CobTree;
use crossbeam_skiplist::SkipMap;

use crate::measure::{BenchResult, Case, Ctx, Instrument};

use super::mix::{self, xorshift};

const COB: &str = "CobTree";
const BT: &str = "BTreeMap";
const RW: &str = "RwLock<BTreeMap>";
const SKIP: &str = "SkipMap";

/// Map sizes of the series.
pub const STRING_SIZES: [usize; 3] = [1_000, 100_000, 1_000_000];
/// Lookups per timed call.
const PROBES: usize = 100_000;
/// Range queries per timed call.
const RANGES: usize = 10_000;
/// Keys of the 2-thread mix.
const MIX_KEYS: usize = 1_000_000;

/// A random key of 8-32 bytes from `x` (letters and digits).
fn key_from(x: &mut u64) -> String {
    const ABC: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    let len = 8 + (xorshift(x) % 25) as usize;
    (0..len)
        .map(|_| ABC[(xorshift(x) >> 20) as usize % ABC.len()] as char)
        .collect()
}

/// `n` distinct random keys.
pub fn string_keys(n: usize, seed: u64) -> Vec<String> {
    let mut x = seed | 1;
    let mut seen = HashSet::with_capacity(n);
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        let k = key_from(&mut x);
        if seen.insert(k.clone()) {
            out.push(k);
        }
    }
    out
}

/// The value stored for key `k`: lets every read check its answer.
fn val(k: &str) -> u64 {
    k.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    })
}

trait Peer: Sized {
    const NAME: &'static str;
    fn empty() -> Self;
    fn put(&mut self, k: String, v: u64);
    fn get(&self, k: &str) -> Option<u64>;
    fn del(&mut self, k: &str) -> Option<u64>;
    fn len(&self) -> usize;
    /// (count, value sum) of a full iteration.
    fn scan(&self) -> (usize, u64);
    /// Value sum of the first `n` entries with keys `>= from`.
    fn range_sum(&self, from: &str, n: usize) -> u64;
}

impl Peer for CobTree<String, u64> {
    const NAME: &'static str = COB;
    fn empty() -> Self {
        CobTree::new()
    }
    fn put(&mut self, k: String, v: u64) {
        self.insert(k, v);
    }
    fn get(&self, k: &str) -> Option<u64> {
        CobTree::get(self, k)
    }
    fn del(&mut self, k: &str) -> Option<u64> {
        self.remove(k)
    }
    fn len(&self) -> usize {
        CobTree::len(self)
    }
    /// Through the borrowing view (`pin`): references, no clones, as the peers' rows.
    fn scan(&self) -> (usize, u64) {
        self.pin()
            .iter()
            .fold((0, 0), |(c, s), e| (c + 1, s.wrapping_add(*e.value())))
    }
    fn range_sum(&self, from: &str, n: usize) -> u64 {
        self.pin()
            .range::<str, _>((Bound::Included(from), Bound::Unbounded))
            .take(n)
            .fold(0, |s, e| s.wrapping_add(*e.value()))
    }
}

impl Peer for BTreeMap<String, u64> {
    const NAME: &'static str = BT;
    fn empty() -> Self {
        BTreeMap::new()
    }
    fn put(&mut self, k: String, v: u64) {
        self.insert(k, v);
    }
    fn get(&self, k: &str) -> Option<u64> {
        BTreeMap::get(self, k).copied()
    }
    fn del(&mut self, k: &str) -> Option<u64> {
        self.remove(k)
    }
    fn len(&self) -> usize {
        BTreeMap::len(self)
    }
    fn scan(&self) -> (usize, u64) {
        self.iter()
            .fold((0, 0), |(c, s), (_, v)| (c + 1, s.wrapping_add(*v)))
    }
    fn range_sum(&self, from: &str, n: usize) -> u64 {
        self.range::<str, _>((Bound::Included(from), Bound::Unbounded))
            .take(n)
            .fold(0, |s, (_, v)| s.wrapping_add(*v))
    }
}

impl Peer for SkipMap<String, u64> {
    const NAME: &'static str = SKIP;
    fn empty() -> Self {
        SkipMap::new()
    }
    fn put(&mut self, k: String, v: u64) {
        self.insert(k, v);
    }
    fn get(&self, k: &str) -> Option<u64> {
        SkipMap::get(self, k).map(|e| *e.value())
    }
    fn del(&mut self, k: &str) -> Option<u64> {
        self.remove(k).map(|e| *e.value())
    }
    fn len(&self) -> usize {
        SkipMap::len(self)
    }
    fn scan(&self) -> (usize, u64) {
        self.iter()
            .fold((0, 0), |(c, s), e| (c + 1, s.wrapping_add(*e.value())))
    }
    fn range_sum(&self, from: &str, n: usize) -> u64 {
        self.range::<str, _>((Bound::Included(from), Bound::Unbounded))
            .take(n)
            .fold(0, |s, e| s.wrapping_add(*e.value()))
    }
}

fn build<P: Peer>(keys: &[String]) -> P {
    let mut p = P::empty();
    for k in keys {
        p.put(k.clone(), val(k));
    }
    p
}

/// SkipMap builds and removes cost seconds per sample at 1M keys: up to 100K only.
fn builds_here<P: Peer>(n: usize) -> bool {
    P::NAME != SKIP || n <= 100_000
}

fn timed_sum(
    ctx: &mut Ctx<'_>,
    case: &Case,
    ops: usize,
    want: u64,
    f: impl Fn() -> u64,
) -> BenchResult {
    ctx.time(
        case,
        ops as u64,
        || (),
        |()| f(),
        |&got| {
            (got == want)
                .then_some(())
                .ok_or(format!("sum {got} != {want}"))
        },
    )?;
    Ok(())
}

/// Every single-threaded case of one peer at one size.
fn single<P: Peer>(
    ctx: &mut Ctx<'_>,
    keys: &[String],
    sorted: &[(String, u64)],
    probes: &[String],
) -> BenchResult {
    let n = keys.len();
    let p = n as u64;
    let name = P::NAME;
    if ctx.wants(Instrument::Memory) {
        peak_memory::<P>(ctx, keys)?;
    }
    if !ctx.wants(Instrument::Time) {
        return Ok(());
    }
    if builds_here::<P>(n) {
        let case = Case::new("str random build", name, "keys", p).baseline(BT);
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
    }
    let built: P = build(keys);
    let case = Case::new("str get", name, "keys", p).baseline(BT);
    let want = probes.iter().fold(0u64, |s, k| s.wrapping_add(val(k)));
    timed_sum(ctx, &case, probes.len(), want, || {
        probes
            .iter()
            .fold(0u64, |s, k| s.wrapping_add(built.get(k).unwrap_or(0)))
    })?;

    if builds_here::<P>(n) {
        let case = Case::new("str remove", name, "keys", p).baseline(BT);
        let want = keys.iter().fold(0u64, |s, k| s.wrapping_add(val(k)));
        ctx.time(
            &case,
            p,
            || build::<P>(keys),
            |mut m| {
                let s = keys
                    .iter()
                    .fold(0u64, |s, k| s.wrapping_add(m.del(k).unwrap_or(0)));
                (m, s)
            },
            |(m, s)| {
                (*s == want && m.len() == 0)
                    .then_some(())
                    .ok_or(format!("sum {s} != {want}, {} left", m.len()))
            },
        )?;
    }

    let case = Case::new("str iterate", name, "keys", p).baseline(BT);
    let want = (n, sorted.iter().fold(0u64, |s, e| s.wrapping_add(e.1)));
    ctx.time(
        &case,
        p,
        || (),
        |()| built.scan(),
        |&got| {
            (got == want)
                .then_some(())
                .ok_or(format!("{got:?} != {want:?}"))
        },
    )?;

    let case = Case::new("str range 100", name, "keys", p).baseline(BT);
    let starts = &probes[..RANGES.min(probes.len())];
    let want = starts.iter().fold(0u64, |s, k| {
        let i = sorted.partition_point(|e| e.0.as_str() < k.as_str());
        s.wrapping_add(
            sorted[i..]
                .iter()
                .take(100)
                .fold(0u64, |a, e| a.wrapping_add(e.1)),
        )
    });
    timed_sum(ctx, &case, starts.len(), want, || {
        starts
            .iter()
            .fold(0u64, |s, k| s.wrapping_add(built.range_sum(k, 100)))
    })?;
    Ok(())
}

/// Peak requested and physical live bytes per entry while the map is built (keys' own
/// heap bytes included, for every peer alike), and allocations per entry.
fn peak_memory<P: Peer>(ctx: &mut Ctx<'_>, keys: &[String]) -> BenchResult {
    let n = keys.len();
    let case = Case::new("str random build", P::NAME, "keys", n as u64).baseline(BT);
    if !builds_here::<P>(n) {
        return Ok(());
    }
    let verify = |m: &P| {
        (m.len() == n)
            .then_some(())
            .ok_or(format!("len {}", m.len()))
    };
    ctx.peak_memory(&case, n as u64, || build::<P>(keys), verify)
}

/// A map shared by the threads of the mix.
trait Shared: Sync {
    const NAME: &'static str;
    fn sget(&self, k: &str) -> Option<u64>;
    fn sput(&self, k: String, v: u64);
}

impl Shared for CobTree<String, u64> {
    const NAME: &'static str = COB;
    fn sget(&self, k: &str) -> Option<u64> {
        self.get(k)
    }
    fn sput(&self, k: String, v: u64) {
        self.insert(k, v);
    }
}

impl Shared for RwLock<BTreeMap<String, u64>> {
    const NAME: &'static str = RW;
    fn sget(&self, k: &str) -> Option<u64> {
        self.read().unwrap().get(k).copied()
    }
    fn sput(&self, k: String, v: u64) {
        self.write().unwrap().insert(k, v);
    }
}

impl Shared for SkipMap<String, u64> {
    const NAME: &'static str = SKIP;
    fn sget(&self, k: &str) -> Option<u64> {
        self.get(k).map(|e| *e.value())
    }
    fn sput(&self, k: String, v: u64) {
        self.insert(k, v);
    }
}

/// `threads` threads of `ops` operations on `m`, 20% inserts of fresh random keys, 80%
/// reads of present keys (each checked); million operations per second.
fn mix<S: Shared>(ctx: &mut Ctx<'_>, m: &S, keys: &[String]) -> BenchResult {
    mix::sweep(
        ctx,
        "str 80/20 sweep",
        S::NAME,
        RW,
        &[2],
        3,
        |t, ops, round| {
            mix::mix_once(t, ops, round, |x| {
                if xorshift(x) % 100 < 20 {
                    let k = key_from(x);
                    let v = val(&k);
                    m.sput(k, v);
                    false
                } else {
                    let k = &keys[(xorshift(x) >> 11) as usize % keys.len()];
                    m.sget(k) != Some(val(k))
                }
            })
        },
    )
}

/// The series: single-threaded cases at each size, then the 2-thread mix at 1M keys.
pub fn run(ctx: &mut Ctx<'_>) -> BenchResult {
    if !ctx.settings().sweeps_only {
        for n in STRING_SIZES {
            let keys = string_keys(n, 0x2545_f491_4f6c_dd1d ^ n as u64);
            let mut sorted: Vec<(String, u64)> = keys.iter().map(|k| (k.clone(), val(k))).collect();
            sorted.sort_unstable();
            let mut x = 7u64;
            let probes: Vec<String> = (0..PROBES.min(n * 20))
                .map(|_| keys[(xorshift(&mut x) >> 11) as usize % n].clone())
                .collect();
            single::<CobTree<String, u64>>(ctx, &keys, &sorted, &probes)?;
            single::<BTreeMap<String, u64>>(ctx, &keys, &sorted, &probes)?;
            single::<SkipMap<String, u64>>(ctx, &keys, &sorted, &probes)?;
        }
    }
    if ctx.sweeps() {
        let keys = string_keys(MIX_KEYS, 0x5eed);
        let cob: CobTree<String, u64> = build(&keys);
        mix(ctx, &cob, &keys)?;
        drop(cob);
        let rw = RwLock::new(build::<BTreeMap<String, u64>>(&keys));
        mix(ctx, &rw, &keys)?;
        drop(rw);
        let skip: SkipMap<String, u64> = build(&keys);
        mix(ctx, &skip, &keys)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_distinct_and_sized() {
        let k = string_keys(5_000, 3);
        assert!(k.iter().all(|s| (8..=32).contains(&s.len())));
        assert_eq!(k.iter().collect::<HashSet<_>>().len(), 5_000);
    }

    #[test]
    fn peers_agree() {
        let keys = string_keys(2_000, 9);
        let c: CobTree<String, u64> = build(&keys);
        let b: BTreeMap<String, u64> = build(&keys);
        let s: SkipMap<String, u64> = build(&keys);
        assert_eq!(c.scan(), b.scan());
        let cloned = c
            .iter()
            .fold((0, 0u64), |(n, s), (_, v)| (n + 1, s.wrapping_add(v)));
        assert_eq!(cloned, b.scan());
        assert_eq!(s.scan(), b.scan());
        for k in &keys[..100] {
            assert_eq!(c.range_sum(k, 100), b.range_sum(k, 100));
            assert_eq!(Peer::get(&c, k), Some(val(k)));
        }
    }
}
