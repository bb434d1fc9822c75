//! Multi-threaded stress: writers on disjoint and overlapping keys, point readers and range
//! scanners, tiny leaves so structure changes race with everything; exact final check.
#![cfg(not(loom))]

use cob_tree::CobTree;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;

const WRITERS: u64 = 4;

/// Under Miri 24 keys a writer (96 in all): the readers and the scanner spin all along, so
/// Miri's time goes with this number (40 took 133 s there).
fn per_writer() -> u64 {
    if cfg!(miri) { 24 } else { 8_000 }
}

/// Values encode their key, so a reader can tell a value that was never written.
fn val(k: u64, round: u64) -> u64 {
    (k << 16) | round
}

fn stress(cap: usize) {
    let t: CobTree<u64, u64> = CobTree::with_leaf_capacity(cap);
    let n = per_writer();
    let stop = AtomicBool::new(false);
    thread::scope(|s| {
        let t = &t;
        let stop = &stop;
        let mut writers = Vec::new();
        for w in 0..WRITERS {
            writers.push(s.spawn(move || {
                // Disjoint keys: w, w+4, ... inserted, every other one removed again.
                for i in 0..n {
                    let k = i * WRITERS + w;
                    assert_eq!(t.insert(k, val(k, 1)), None);
                    if i % 2 == 1 {
                        let old = k - WRITERS;
                        assert_eq!(t.remove(&old), Some(val(old, 1)));
                    }
                }
                // Overlapping keys: every writer inserts the same shared range (1<<40)+..
                for i in 0..n / 4 {
                    let k = (1 << 40) + i;
                    let prev = t.insert(k, val(k, 2 + w));
                    if let Some(p) = prev {
                        assert_eq!(p >> 16, k, "value of another key");
                    }
                }
            }));
        }
        for _ in 0..2 {
            s.spawn(move || {
                let mut x = 1u64;
                while !stop.load(Ordering::Relaxed) {
                    x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
                    let k = (x >> 20) % (n * WRITERS);
                    if let Some(v) = t.get(&k) {
                        assert_eq!(v, val(k, 1), "reader saw a value never written");
                    }
                }
            });
        }
        s.spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let mut prev = None;
                for (k, v) in t.range(100..(1 << 41)) {
                    assert!(prev.is_none_or(|p| p < k), "iteration out of order");
                    assert_eq!(v >> 16, k, "scanner saw a value never written");
                    prev = Some(k);
                }
                let _ = t.first_key_value();
                let _ = t.last_key_value();
            }
        });
        // Stop the readers even if a writer panicked, so the failure is reported.
        let results: Vec<_> = writers.into_iter().map(|w| w.join()).collect();
        stop.store(true, Ordering::Relaxed);
        for r in results {
            r.unwrap();
        }
    });
    let mut want = BTreeMap::new();
    for w in 0..WRITERS {
        for i in 0..n {
            let k = i * WRITERS + w;
            want.insert(k, val(k, 1));
        }
        for i in (0..n).filter(|i| i % 2 == 1) {
            want.remove(&((i - 1) * WRITERS + w));
        }
    }
    for (k, v) in t.range(1 << 40..) {
        assert!((2..2 + WRITERS).contains(&(v & 0xffff)));
        want.insert(k, v);
    }
    assert_eq!(t.len(), want.len());
    assert!(t.iter().eq(want.iter().map(|(k, v)| (*k, *v))));
    assert_eq!(want.range(1 << 40..).count() as u64, n / 4);
}

#[test]
fn stress_tiny_leaves() {
    stress(4);
}

#[test]
fn stress_default_leaves() {
    stress(cob_tree::CobTree::<u64, u64>::new().leaf_capacity());
}

/// A scanner running over keys nobody touches must see all of them, once, in order,
/// while writers restructure the array around them.
#[test]
fn iteration_sees_stable_keys() {
    let n = if cfg!(miri) { 50 } else { 20_000u64 };
    let t: CobTree<u64, u64> = CobTree::with_leaf_capacity(4);
    for k in 0..n {
        t.insert(k * 2, k);
    }
    thread::scope(|s| {
        let t = &t;
        s.spawn(move || {
            for k in 0..n {
                t.insert(k * 2 + 1, k);
            }
            for k in 0..n {
                t.remove(&(k * 2 + 1));
            }
        });
        for _ in 0..3 {
            let evens: Vec<u64> = t.iter().map(|(k, _)| k).filter(|k| k % 2 == 0).collect();
            assert_eq!(evens, (0..n).map(|k| k * 2).collect::<Vec<_>>());
        }
    });
    assert_eq!(t.len(), n as usize);
}

/// Counters under contention: every thread increments every counter through
/// `get_or_insert` then `update` (and `insert_if` as a compare-and-swap loop on half of
/// them); no increment may be lost: the totals are exact. Tiny leaves, so the counters'
/// first inserts also race with splits and growth.
#[test]
fn counters_lose_no_update() {
    const THREADS: u64 = 4;
    let (keys, rounds) = if cfg!(miri) { (8u64, 3u64) } else { (300, 60) };
    let t: CobTree<u64, u64> = CobTree::with_leaf_capacity(4);
    thread::scope(|s| {
        for w in 0..THREADS {
            let t = &t;
            s.spawn(move || {
                for r in 0..rounds {
                    for i in 0..keys {
                        // Each thread walks the keys in its own order.
                        let k = (i * 7 + w * 13 + r) % keys;
                        if k % 2 == 0 {
                            t.get_or_insert(k, 0);
                            assert!(t.update(&k, |c| c + 1).is_some());
                        } else {
                            // A CAS loop: read, then store old + 1 only if still old.
                            loop {
                                let old = t.get_or_insert_with(k, || 0);
                                if t.insert_if(k, old + 1, |c| *c == old).is_ok() {
                                    break;
                                }
                            }
                        }
                    }
                }
            });
        }
    });
    assert_eq!(t.len() as u64, keys);
    for (k, c) in t.iter() {
        assert_eq!(c, THREADS * rounds, "counter {k}");
    }
}

/// Concurrent `pop_first` / `pop_last` while writers insert: no entry is popped twice, none
/// is lost, and each pop took an entry that was there.
#[test]
fn pops_are_atomic() {
    const POPPERS: usize = 3;
    let n: u64 = if cfg!(miri) { 60 } else { 20_000 };
    let t: CobTree<u64, u64> = CobTree::with_leaf_capacity(4);
    for k in 0..n {
        t.insert(k * 2, val(k * 2, 1));
    }
    let popped: Vec<Vec<(u64, u64)>> = thread::scope(|s| {
        let t = &t;
        // A writer adds the odd keys meanwhile.
        s.spawn(move || {
            for k in 0..n {
                t.insert(k * 2 + 1, val(k * 2 + 1, 1));
            }
        });
        let hs: Vec<_> = (0..POPPERS)
            .map(|p| {
                s.spawn(move || {
                    let mut got = Vec::new();
                    for i in 0..n / 2 {
                        let e = if (i + p as u64).is_multiple_of(2) {
                            t.pop_first()
                        } else {
                            t.pop_last()
                        };
                        got.extend(e);
                    }
                    got
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut all: Vec<u64> = Vec::new();
    for (k, v) in popped.iter().flatten() {
        assert_eq!(*v, val(*k, 1), "popped a value never written");
        all.push(*k);
    }
    let popped_n = all.len();
    all.extend(t.keys());
    all.sort_unstable();
    let want: Vec<u64> = (0..2 * n).collect();
    assert_eq!(all, want, "every key popped once or still there");
    assert_eq!(t.len(), 2 * n as usize - popped_n);
}
