//! `ycsb`: the YCSB core workloads A-F (written from the YCSB specification: [`workload`]
//! has the mixes, [`zipf`] the request distributions) on `CobTree` against the concurrent
//! peers `scc::TreeIndex`, `ferntree` and `SkipMap`, and `BTreeMap` (alone on one thread,
//! behind an `RwLock` on more), with `String` keys (`"user"` + the decimal FNV-64 hash of
//! the record number, as YCSB names them) and `u64` keys (the hash itself), 100-byte
//! values ([`stores`]).
//!
//! Every map is loaded with the same records (100K; 1M with `--large`, `--full` or
//! `--only ycsb`; the load is a row too), then each workload runs in YCSB's order
//! (A, B, C, F, D, E) at each thread count (`--threads`, default 1 and 2): the maps take
//! turns sample by sample, so a change in the machine's load falls on all of them. One
//! thread is timed in thread CPU time, several in wall time (ns per operation over all
//! threads). Every read checks the record's id; a scan from a present key must start at
//! it; only on several threads may a request for a record that another thread is still
//! inserting miss (and, for a map whose update replaces the entry, `SkipMap`, a record
//! another thread is updating). At the end each map must hold the loaded and inserted records.
//! Target rows: CobTree's time over the best concurrent peer's (goal <= 1.0) and, on one
//! thread, over `BTreeMap`'s (goal <= 1.3), per workload and key type.

pub mod stores;
pub mod workload;
pub mod zipf;

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::RwLock;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

use cob_tree::CobTree;
use crossbeam_skiplist::SkipMap;

use crate::goal::Goal;
use crate::measure::{BenchError, BenchResult, Case, Ctx, Instrument, Stats};
use crate::scaling::sweep::thread_cpu;

use super::group::Group;
use super::mix::xorshift;
use stores::{Fern, Solo, Store, record};
use workload::{Dist, MAX_SCAN, Op, WORKLOADS, Workload};
use zipf::{Zipf, fnv64};

/// The group.
pub const GROUP: Group = Group {
    name: "ycsb",
    about: "YCSB A-F, zipfian, String and u64 keys: CobTree vs scc TreeIndex, ferntree, SkipMap, BTreeMap (1 thread) / RwLock<BTreeMap>",
    run,
    claims: &[],
    ab_claims: &[],
};

/// Records loaded in every run.
pub const RECORDS: u64 = 100_000;
/// Records loaded with `--large`, `--full` or `--only ycsb`.
pub const DEEP_RECORDS: u64 = 1_000_000;

const COB: &str = "CobTree";
const BT: &str = "BTreeMap";
const RW: &str = "RwLock<BTreeMap>";
/// The concurrent peers (the "best concurrent peer" is the fastest of these per row).
const PEERS: [&str; 3] = ["scc TreeIndex", "ferntree", "SkipMap"];

/// A YCSB key type.
pub trait YKey: Ord + Clone + Send + Sync + 'static + ferntree::OptimisticRead {
    /// The name in the report.
    const NAME: &'static str;
    /// The key of record `id`.
    fn of(id: u64) -> Self;
}

impl YKey for String {
    const NAME: &'static str = "String";
    fn of(id: u64) -> String {
        format!("user{}", fnv64(id))
    }
}

impl YKey for u64 {
    const NAME: &'static str = "u64";
    fn of(id: u64) -> u64 {
        fnv64(id)
    }
}

/// The keys of the first records, made once (requests index them; later ones are made
/// when needed).
struct Keys<K>(Vec<K>);

impl<K: YKey> Keys<K> {
    fn get(&self, id: u64) -> Cow<'_, K> {
        match self.0.get(id as usize) {
            Some(k) => Cow::Borrowed(k),
            None => Cow::Owned(K::of(id)),
        }
    }
}

/// What one run of a workload shares between its threads.
struct Run<'a, K> {
    keys: &'a Keys<K>,
    zipf: &'a Zipf,
    work: &'a Workload,
    /// Records loaded before the runs (always present).
    loaded: u64,
    threads: usize,
    ops: usize,
}

/// One thread's operations; the number of failed checks.
fn ops_on<K: YKey, S: Store<K>>(s: &S, next: &AtomicU64, r: &Run<'_, K>, seed: u64) -> usize {
    let mut x = seed | 1;
    let mut bad = 0;
    let per_thread = r.ops / r.threads;
    for _ in 0..per_thread {
        let op = r.work.next_op(&mut x);
        if op == Op::Insert {
            let id = next.fetch_add(1, Relaxed);
            s.insert(r.keys.get(id).into_owned(), record(id, 0));
            continue;
        }
        let records = next.load(Relaxed);
        let id = match r.work.dist {
            Dist::Zipfian => r.zipf.scrambled(&mut x, records),
            Dist::Latest => r.zipf.latest(&mut x, records),
        };
        // On one thread every record below `records` is in; on several, one that another
        // thread is inserting may not be yet.
        let must = (id < r.loaded && !(S::REPLACE_MAY_HIDE && r.threads > 1)) || r.threads == 1;
        let k = r.keys.get(id);
        let ok = match op {
            Op::Read => match s.read(&k) {
                Some(got) => got == id,
                None => !must,
            },
            Op::Update => s.update(&k, record(id, 1)) || !must,
            Op::ReadModifyWrite => s.rmw(&k) || !must,
            Op::Scan => {
                let len = 1 + (xorshift(&mut x) % MAX_SCAN as u64) as usize;
                let (n, first, _) = s.scan(&k, len);
                !must || (n >= 1 && first == Some(id))
            }
            Op::Insert => unreachable!("handled above"),
        };
        if !ok {
            bad += 1;
        }
    }
    bad
}

/// One timed run on one map: ns per operation (thread CPU time on one thread, wall time
/// over all threads on several).
fn once<K: YKey, S: Store<K> + Sync>(
    s: &S,
    next: &AtomicU64,
    r: &Run<'_, K>,
    sample: u64,
) -> Result<f64, String> {
    let seed = 0x2545_f491_4f6c_dd1d ^ (sample << 20);
    let (bad, took) = if r.threads == 1 {
        let t0 = thread_cpu();
        let bad = ops_on(s, next, r, seed);
        (bad, thread_cpu() - t0)
    } else {
        let start = Instant::now();
        let bad = std::thread::scope(|sc| {
            let hs: Vec<_> = (0..r.threads)
                .map(|t| sc.spawn(move || ops_on(s, next, r, seed ^ ((t as u64 + 1) << 40))))
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).sum::<usize>()
        });
        (bad, start.elapsed())
    };
    if bad > 0 {
        return Err(format!(
            "{bad} operations missed their record or saw a wrong one"
        ));
    }
    let done = (r.ops / r.threads * r.threads) as f64;
    Ok(took.as_nanos() as f64 / done)
}

/// The loaded maps of one key type, each with its next record id.
struct Maps<K: YKey> {
    cob: (CobTree<K, Vec<u8>>, AtomicU64),
    scc: (scc::TreeIndex<K, Vec<u8>>, AtomicU64),
    fern: (Fern<K>, AtomicU64),
    skip: (SkipMap<K, Vec<u8>>, AtomicU64),
    bt: (RwLock<BTreeMap<K, Vec<u8>>>, AtomicU64),
}

/// Loads `n` records into `s` (thread CPU time, ns per record).
fn load<K: YKey, S: Store<K>>(s: &mut S, keys: &Keys<K>, n: u64) -> f64 {
    let t0 = thread_cpu();
    for id in 0..n {
        s.load(keys.get(id).into_owned(), record(id, 0));
    }
    (thread_cpu() - t0).as_nanos() as f64 / n as f64
}

fn fail(case: &Case, e: String) -> BenchError {
    BenchError(format!("self-check failed in {case}: {e}"))
}

/// Every workload on every map for key type `K`.
fn key_type<K: YKey>(ctx: &mut Ctx<'_>) -> BenchResult {
    let deep = ctx.full() || ctx.settings().deep;
    let n = if deep { DEEP_RECORDS } else { RECORDS };
    let ops = if deep { 200_000 } else { 50_000 };
    let samples = ctx.samples_or(3);
    let threads = ctx.threads_or(&[1, 2]);
    let kn = K::NAME;

    // Count the cases first (the counting pass builds nothing).
    let mut cases = Vec::new();
    for w in &WORKLOADS {
        for &t in &threads {
            for name in [
                COB,
                PEERS[0],
                PEERS[1],
                PEERS[2],
                if t == 1 { BT } else { RW },
            ] {
                let base = if t == 1 { BT } else { RW };
                let op = format!("ycsb {} ({kn})", w.name);
                cases.push(Case::new(&op, name, "threads", t as u64).baseline(base));
            }
        }
    }
    let load_case =
        |name: &str| Case::new(&format!("ycsb load ({kn})"), name, "records", n).baseline(BT);
    let mut wanted = Vec::new();
    for c in &cases {
        wanted.push(ctx.sweep_point(c));
    }
    let load_wanted = ctx.sweep_point(&load_case(COB));
    if ctx.counting() || !wanted.iter().any(|&w| w) {
        return Ok(());
    }

    let extra = (ops as u64 * samples as u64 * threads.len() as u64) / 8;
    let keys = Keys((0..n + extra).map(K::of).collect::<Vec<K>>());
    let zipf = Zipf::new(n);
    let mut maps = Maps::<K> {
        cob: (CobTree::new(), AtomicU64::new(n)),
        scc: (scc::TreeIndex::new(), AtomicU64::new(n)),
        fern: (Fern(ferntree::Tree::new()), AtomicU64::new(n)),
        skip: (SkipMap::new(), AtomicU64::new(n)),
        bt: (RwLock::new(BTreeMap::new()), AtomicU64::new(n)),
    };
    let loads = [
        (COB, load(&mut maps.cob.0, &keys, n)),
        (PEERS[0], load(&mut maps.scc.0, &keys, n)),
        (PEERS[1], load(&mut maps.fern.0, &keys, n)),
        (PEERS[2], load(&mut maps.skip.0, &keys, n)),
        (
            BT,
            load(&mut Solo(maps.bt.0.get_mut().unwrap().into()), &keys, n),
        ),
    ];
    if load_wanted {
        for (name, ns) in loads {
            ctx.record(
                &load_case(name),
                "ns/op",
                true,
                Instrument::Time,
                Stats::exact(ns),
            );
        }
    }

    let mut medians: BTreeMap<(String, usize, String), f64> = BTreeMap::new();
    let mut ci = 0;
    for w in &WORKLOADS {
        let ops = if w.name == "E" { ops / 5 } else { ops };
        for &t in &threads {
            let r = Run {
                keys: &keys,
                zipf: &zipf,
                work: w,
                loaded: n,
                threads: t,
                ops,
            };
            let these = &cases[ci..ci + 5];
            let on = &wanted[ci..ci + 5];
            ci += 5;
            let mut v: [Vec<f64>; 5] = Default::default();
            for sample in 0..samples as u64 {
                let m = &mut maps;
                let res = [
                    on[0].then(|| once(&m.cob.0, &m.cob.1, &r, sample)),
                    on[1].then(|| once(&m.scc.0, &m.scc.1, &r, sample)),
                    on[2].then(|| once(&m.fern.0, &m.fern.1, &r, sample)),
                    on[3].then(|| once(&m.skip.0, &m.skip.1, &r, sample)),
                    on[4].then(|| {
                        if t == 1 {
                            let solo = Solo(m.bt.0.get_mut().unwrap().into());
                            once_solo(&solo, &m.bt.1, &r, sample)
                        } else {
                            once(&m.bt.0, &m.bt.1, &r, sample)
                        }
                    }),
                ];
                for (i, x) in res.into_iter().enumerate() {
                    if let Some(x) = x {
                        v[i].push(x.map_err(|e| fail(&these[i], e))?);
                    }
                }
            }
            for (i, c) in these.iter().enumerate() {
                if !v[i].is_empty() {
                    let s = Stats::of(&v[i]);
                    ctx.record(c, "ns/op", true, Instrument::Time, s);
                    medians.insert((w.name.into(), t, c.implementation.clone()), s.median);
                }
            }
        }
    }

    // Every map holds the loaded and the inserted records.
    let check = |name: &str, count: usize, next: &AtomicU64| -> BenchResult {
        let want = next.load(Relaxed) as usize;
        if count != want {
            return Err(fail(
                &load_case(name),
                format!("{count} records at the end, expected {want}"),
            ));
        }
        Ok(())
    };
    check(COB, maps.cob.0.count(), &maps.cob.1)?;
    check(PEERS[0], maps.scc.0.count(), &maps.scc.1)?;
    check(PEERS[1], maps.fern.0.count(), &maps.fern.1)?;
    check(PEERS[2], maps.skip.0.count(), &maps.skip.1)?;
    check(BT, Store::count(&maps.bt.0), &maps.bt.1)?;

    targets(ctx, kn, &threads, &medians);
    Ok(())
}

/// `once` for the single-threaded `BTreeMap` (not `Sync`: it never leaves this thread).
fn once_solo<K: YKey>(
    s: &Solo<'_, K>,
    next: &AtomicU64,
    r: &Run<'_, K>,
    sample: u64,
) -> Result<f64, String> {
    assert_eq!(
        r.threads, 1,
        "the single-threaded BTreeMap runs on one thread"
    );
    let seed = 0x2545_f491_4f6c_dd1d ^ (sample << 20);
    let t0 = thread_cpu();
    let bad = ops_on(s, next, r, seed);
    let took: Duration = thread_cpu() - t0;
    if bad > 0 {
        return Err(format!(
            "{bad} operations missed their record or saw a wrong one"
        ));
    }
    Ok(took.as_nanos() as f64 / r.ops as f64)
}

/// The target rows: CobTree over the best concurrent peer, and over BTreeMap on one
/// thread, per workload; and a note line per key type.
fn targets(
    ctx: &mut Ctx<'_>,
    kn: &str,
    threads: &[usize],
    medians: &BTreeMap<(String, usize, String), f64>,
) {
    let get = |w: &str, t: usize, name: &str| medians.get(&(w.to_owned(), t, name.to_owned()));
    let op = format!("ycsb targets ({kn})");
    for w in &WORKLOADS {
        for &t in threads {
            let Some(&cob) = get(w.name, t, COB) else {
                continue;
            };
            let best = PEERS
                .iter()
                .filter_map(|p| get(w.name, t, p).copied())
                .fold(f64::INFINITY, f64::min);
            if best.is_finite() {
                let c = Case::new(&op, &format!("{} / best peer", w.name), "threads", t as u64);
                ctx.record_goal(
                    &c,
                    "ratio",
                    Instrument::Time,
                    Stats::exact(cob / best),
                    Goal::AtMost(1.0),
                );
            }
            if let (1, Some(&bt)) = (t, get(w.name, 1, BT)) {
                let c = Case::new(&op, &format!("{} / BTreeMap", w.name), "threads", 1);
                ctx.record_goal(
                    &c,
                    "ratio",
                    Instrument::Time,
                    Stats::exact(cob / bt),
                    Goal::AtMost(1.3),
                );
            }
        }
    }
    let mut line = format!("ycsb ({kn} keys): CobTree / best concurrent peer, / BTreeMap:");
    for w in &WORKLOADS {
        for &t in threads {
            let (Some(&cob), best) = (
                get(w.name, t, COB),
                PEERS
                    .iter()
                    .filter_map(|p| get(w.name, t, p).copied())
                    .fold(f64::INFINITY, f64::min),
            ) else {
                continue;
            };
            let bt = get(w.name, t, if t == 1 { BT } else { RW })
                .copied()
                .unwrap_or(f64::NAN);
            line += &format!(" {}@{t} {:.2}x {:.2}x;", w.name, cob / best, cob / bt);
        }
    }
    ctx.note(line);
}

fn run(ctx: &mut Ctx<'_>) -> BenchResult {
    if ctx.settings().sweeps_only || !ctx.native() || !ctx.wants(Instrument::Time) {
        return Ok(());
    }
    let (start, cpu) = (Instant::now(), thread_cpu());
    key_type::<String>(ctx)?;
    key_type::<u64>(ctx)?;
    ctx.note(format!(
        "ycsb: {:.0} s wall, {:.0} s CPU of the main thread",
        start.elapsed().as_secs_f64(),
        (thread_cpu() - cpu).as_secs_f64()
    ));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every map runs every workload on a small load and passes its checks, alone and on
    /// two threads.
    #[test]
    fn every_map_runs_every_workload() {
        let n = 2_000;
        let keys = Keys((0..n + 500).map(String::of).collect());
        let zipf = Zipf::new(n);
        let mut cob = CobTree::new();
        let mut sk = SkipMap::new();
        let mut fern = Fern(ferntree::Tree::new());
        let mut sc = scc::TreeIndex::new();
        let mut bt = RwLock::new(BTreeMap::new());
        load(&mut cob, &keys, n);
        load(&mut sk, &keys, n);
        load(&mut fern, &keys, n);
        load(&mut sc, &keys, n);
        load(&mut bt, &keys, n);
        let nexts: Vec<AtomicU64> = (0..6).map(|_| AtomicU64::new(n)).collect();
        for w in &WORKLOADS {
            for t in [1, 2] {
                let r = Run {
                    keys: &keys,
                    zipf: &zipf,
                    work: w,
                    loaded: n,
                    threads: t,
                    ops: 2_000,
                };
                once(&cob, &nexts[0], &r, 1).unwrap();
                once(&sk, &nexts[1], &r, 1).unwrap();
                once(&fern, &nexts[2], &r, 1).unwrap();
                once(&sc, &nexts[3], &r, 1).unwrap();
                once(&bt, &nexts[4], &r, 1).unwrap();
                if t == 1 {
                    let solo = Solo(bt.get_mut().unwrap().into());
                    once_solo(&solo, &nexts[4], &r, 2).unwrap();
                }
            }
        }
        assert_eq!(cob.count(), nexts[0].load(Relaxed) as usize);
        assert_eq!(Store::count(&bt), nexts[4].load(Relaxed) as usize);
        assert!(nexts[0].load(Relaxed) > n, "D and E inserted records");
    }

    /// A map that loses writes fails the run.
    #[test]
    fn a_lost_record_fails_the_check() {
        let n = 500;
        let keys = Keys((0..n).map(u64::of).collect());
        let zipf = Zipf::new(n);
        let mut bt = BTreeMap::new();
        let mut solo = Solo(std::cell::RefCell::new(&mut bt));
        load(&mut solo, &keys, n);
        solo.0.get_mut().remove(&keys.0[0]);
        let next = AtomicU64::new(n);
        let r = Run {
            keys: &keys,
            zipf: &zipf,
            work: &WORKLOADS[2],
            loaded: n,
            threads: 1,
            ops: 5_000,
        };
        let e = once_solo(&solo, &next, &r, 0).unwrap_err();
        assert!(e.contains("missed"), "{e}");
    }
}
