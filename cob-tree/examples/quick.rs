//! Quick single-thread comparison at one size (default 1M): `cargo run --release -p memlayout-cob-tree
//! --example quick [-- N [MODE ...]]`. Every loop checks its answer. The bench-suite `tree`
//! group is the reference measurement; this is a tuning aid. Modes: `seq`, `rand`, `ratio
//! ROUNDS` (random builds against `BTreeMap`, interleaved), `cobrand`, `small`, `get`,
//! `getab [ROUNDS PROBES [tree]]` (gets against the sorted `Vec`, interleaved; see
//! [`getab`]).

use cob_tree::CobTree;
use std::collections::BTreeMap;
use std::hint::black_box;
use std::time::Instant;

fn keys(n: usize, seed: u64) -> Vec<u64> {
    let mut x = seed;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        })
        .collect()
}

/// A `BTreeMap` of `k -> k`, built by one insert per key in the given order.
fn bt_build(ks: &[u64]) -> BTreeMap<u64, u64> {
    let mut m = BTreeMap::new();
    for &k in ks {
        m.insert(k, k);
    }
    m
}

/// A `CobTree` of `k -> k`, built by one insert per key in the given order (leaves of
/// `leaf` elements if given).
fn cob_build(leaf: Option<usize>, ks: &[u64]) -> CobTree<u64, u64> {
    let t = leaf.map_or_else(CobTree::new, CobTree::with_leaf_capacity);
    for &k in ks {
        t.insert(k, k);
    }
    t
}

fn time<T>(name: &str, ops: usize, f: impl FnOnce() -> T) -> T {
    let t = Instant::now();
    let r = f();
    let ns = t.elapsed().as_nanos() as f64 / ops as f64;
    println!("{name:<34} {ns:>9.1} ns/op");
    r
}

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    if std::env::args().nth(2).as_deref() == Some("getab") {
        getab(n);
        return;
    }
    if std::env::args().nth(2).as_deref() == Some("seq") {
        for _ in 0..3 {
            seq(n);
        }
        return;
    }
    let ks = keys(n, 0x243f6a8885a308d3);
    if std::env::args().nth(2).as_deref() == Some("rand") {
        for _ in 0..2 {
            time("BTreeMap random build", n, || {
                assert_eq!(bt_build(&ks).len(), n);
            });
            time("CobTree random build", n, || {
                assert_eq!(cob_build(None, &ks).len(), n);
            });
        }
        return;
    }
    if std::env::args().nth(2).as_deref() == Some("ratio") {
        // Interleaved random builds (order alternating), the per-pair ratio CobTree/BTreeMap.
        let reps: usize = std::env::args()
            .nth(3)
            .and_then(|s| s.parse().ok())
            .unwrap_or(7);
        // Thread CPU time (ns, from the scheduler), not wall time: on a shared machine the
        // wall clock also counts the time other processes held the core.
        let cpu = || {
            let s = std::fs::read_to_string("/proc/thread-self/schedstat")
                .expect("ratio mode needs Linux /proc/thread-self/schedstat");
            s.split_whitespace()
                .next()
                .and_then(|x| x.parse::<f64>().ok())
                .expect("schedstat starts with the thread's CPU time in ns")
        };
        let bt = || {
            let t = cpu();
            assert_eq!(bt_build(&ks).len(), n);
            (cpu() - t) / n as f64
        };
        // LEAF=cap tries another leaf capacity.
        let leaf: Option<usize> = std::env::var("LEAF").ok().and_then(|s| s.parse().ok());
        let cob = || {
            let t = cpu();
            assert_eq!(cob_build(leaf, &ks).len(), n);
            (cpu() - t) / n as f64
        };
        let (mut b, mut c, mut r) = (vec![], vec![], vec![]);
        for i in 0..reps {
            let (x, y) = if i % 2 == 0 {
                let x = bt();
                (x, cob())
            } else {
                let y = cob();
                (bt(), y)
            };
            println!("BTreeMap {x:7.1}  CobTree {y:7.1}  ratio {:.3}", y / x);
            b.push(x);
            c.push(y);
            r.push(y / x);
        }
        let med = |v: &mut Vec<f64>| {
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        let (mb, mc, mr) = (med(&mut b), med(&mut c), med(&mut r));
        println!(
            "median BTreeMap {mb:.1} CobTree {mc:.1} ratio of medians {:.3} median ratio {mr:.3} min/min {:.3}",
            mc / mb,
            c[0] / b[0]
        );
        return;
    }
    if std::env::args().nth(2).as_deref() == Some("cobrand") {
        // CobTree alone, for profilers.
        for _ in 0..3 {
            time("CobTree random build", n, || {
                assert_eq!(cob_build(None, &ks).len(), n);
            });
        }
        return;
    }
    if std::env::args().nth(2).as_deref() == Some("small") {
        let reps = 2_000_000 / n;
        time("BTreeMap random build (small)", n * reps, || {
            for _ in 0..reps {
                assert_eq!(bt_build(&ks).len(), n);
            }
        });
        time("CobTree random build (small)", n * reps, || {
            for _ in 0..reps {
                assert_eq!(cob_build(None, &ks).len(), n);
            }
        });
        let t: CobTree<u64, u64> = ks.iter().map(|&k| (k, k)).collect();
        time("CobTree get (small)", n * reps, || {
            for _ in 0..reps {
                for k in &ks {
                    assert!(t.get(k).is_some());
                }
            }
        });
        return;
    }
    let probes: Vec<u64> = keys(n, 7)
        .iter()
        .map(|x| ks[(*x % n as u64) as usize])
        .collect();

    let b = time("BTreeMap random build", n, || bt_build(&ks));
    let c = time("CobTree random build", n, || cob_build(None, &ks));
    assert_eq!(b.len(), c.len());
    seq(n);
    let mut v: Vec<(u64, u64)> = b.iter().map(|(k, v)| (*k, *v)).collect();
    v.sort_unstable();
    if std::env::args().nth(2).as_deref() == Some("get") {
        for _ in 0..3 {
            time("sorted Vec get", n, || {
                probes
                    .iter()
                    .map(|k| v[v.binary_search_by_key(k, |e| e.0).unwrap()].1)
                    .fold(0u64, u64::wrapping_add)
            });
            time("BTreeMap get", n, || {
                probes.iter().map(|k| b[k]).fold(0u64, u64::wrapping_add)
            });
            time("CobTree get", n, || {
                probes
                    .iter()
                    .map(|k| c.get(k).unwrap())
                    .fold(0u64, u64::wrapping_add)
            });
        }
        return;
    }
    let s1 = time("sorted Vec get", n, || {
        probes
            .iter()
            .map(|k| v[v.binary_search_by_key(k, |e| e.0).unwrap()].1)
            .fold(0u64, u64::wrapping_add)
    });
    let s2 = time("BTreeMap get", n, || {
        probes.iter().map(|k| b[k]).fold(0u64, u64::wrapping_add)
    });
    let s3 = time("CobTree get", n, || {
        probes
            .iter()
            .map(|k| c.get(k).unwrap())
            .fold(0u64, u64::wrapping_add)
    });
    assert_eq!((s1, s1), (s2, s3));
    let i1 = time("BTreeMap full iteration (per elem)", n, || {
        b.iter().fold(0u64, |a, (k, _)| a.wrapping_add(*k))
    });
    let i2 = time("CobTree full iteration (per elem)", n, || {
        c.iter().fold(0u64, |a, (k, _)| a.wrapping_add(k))
    });
    assert_eq!(i1, i2);
    let r = 100_000.min(n);
    let r1 = time("BTreeMap 100-elem range", r, || {
        probes[..r]
            .iter()
            .map(|k| {
                b.range(k..)
                    .take(100)
                    .fold(0u64, |a, (k, _)| a.wrapping_add(*k))
            })
            .fold(0u64, u64::wrapping_add)
    });
    let r2 = time("CobTree 100-elem range", r, || {
        probes[..r]
            .iter()
            .map(|k| {
                c.range(k..)
                    .take(100)
                    .fold(0u64, |a, (k, _)| a.wrapping_add(k))
            })
            .fold(0u64, u64::wrapping_add)
    });
    assert_eq!(r1, r2);
    let mut bm = b;
    time("BTreeMap remove", n, || {
        for k in &ks {
            black_box(bm.remove(k));
        }
    });
    time("CobTree remove", n, || {
        for k in &ks {
            black_box(c.remove(k));
        }
    });
    assert!(bm.is_empty() && c.is_empty());
}

fn seq(n: usize) {
    let ks: Vec<u64> = (0..n as u64).collect();
    time("BTreeMap sequential build", n, || {
        assert_eq!(bt_build(&ks).len(), n)
    });
    time("CobTree sequential build", n, || {
        assert_eq!(cob_build(None, &ks).len(), n)
    });
}

/// `getab` mode: a CobTree built by random inserts of `n` keys (sorted inserts with
/// `SEQ=1`, leaves of `LEAF` elements if set) against a sorted `Vec` + binary search:
/// `ROUNDS` interleaved rounds of `PROBES` distinct random probes, repeated to `n`
/// lookups per round; prints the medians and the median of the per-round time ratios.
/// Every round checks the sum of the values found. With `tree` as the last argument it
/// only builds the map and runs one pass of gets (for `valgrind --tool=callgrind`).
fn getab(n: usize) {
    let mut a = std::env::args().skip(3);
    let rounds: usize = a.next().and_then(|s| s.parse().ok()).unwrap_or(9);
    let np: usize = a.next().and_then(|s| s.parse().ok()).unwrap_or(100_000);
    let only_tree = a.next().as_deref() == Some("tree");
    let ks = keys(n, 0x243f6a8885a308d3);
    let c: CobTree<u64, u64> = match std::env::var("LEAF").ok().and_then(|s| s.parse().ok()) {
        Some(cap) => CobTree::with_leaf_capacity(cap),
        None => CobTree::new(),
    };
    let mut order = ks.clone();
    if std::env::var_os("SEQ").is_some() {
        order.sort_unstable();
    }
    for &k in &order {
        c.insert(k, k ^ 0x5555);
    }
    let mut probes = ks.clone();
    // Fisher-Yates, drawing from the same generator.
    let draws = keys(n, 0x9e3779b97f4a7c15);
    for i in (1..n).rev() {
        probes.swap(i, (draws[i] % (i as u64 + 1)) as usize);
    }
    probes.truncate(np);
    let reps = (n / np).max(1);
    let want = probes.iter().fold(0u64, |s, &k| s.wrapping_add(k ^ 0x5555));
    if only_tree {
        let got = probes
            .iter()
            .fold(0u64, |s, k| s.wrapping_add(c.get(k).unwrap_or(0)));
        assert_eq!(got, want);
        return;
    }
    let mut v: Vec<(u64, u64)> = ks.iter().map(|&k| (k, k ^ 0x5555)).collect();
    v.sort_unstable();
    let mut ratios = Vec::new();
    let (mut tv, mut tc) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        let t = Instant::now();
        for _ in 0..reps {
            let s = probes.iter().fold(0u64, |s, k| {
                s.wrapping_add(
                    v.binary_search_by_key(k, |e| e.0)
                        .map(|i| v[i].1)
                        .unwrap_or(0),
                )
            });
            assert_eq!(s, want);
        }
        let a = t.elapsed().as_nanos() as f64 / (reps * np) as f64;
        let t = Instant::now();
        for _ in 0..reps {
            let s = probes
                .iter()
                .fold(0u64, |s, k| s.wrapping_add(c.get(k).unwrap_or(0)));
            assert_eq!(s, want);
        }
        let b = t.elapsed().as_nanos() as f64 / (reps * np) as f64;
        tv.push(a);
        tc.push(b);
        ratios.push(b / a);
    }
    let med = |v: &mut Vec<f64>| {
        v.sort_by(|a, b| a.partial_cmp(b).unwrap());
        v[v.len() / 2]
    };
    println!(
        "vec {:.1} ns  cob {:.1} ns  median ratio {:.3}",
        med(&mut tv),
        med(&mut tc),
        med(&mut ratios)
    );
}
