//! Tuning aid for `get`: a CobTree built by random inserts of `N` keys (sorted inserts
//! with `SEQ=1`, leaves of `LEAF` elements if set) against a sorted `Vec` + binary search,
//! `ROUNDS` interleaved rounds of `PROBES` distinct random probes repeated to `N` lookups;
//! prints the medians and the median of the per-round time ratios. Every round checks
//! the sum of the values found. With `tree` as the fourth argument it only builds the map
//! and runs one pass of gets (for `valgrind --tool=callgrind`).
//!
//! `cargo run --release -p cob-tree --example getlab [-- N ROUNDS PROBES [tree]]`
//! (defaults 1000000 9 100000). The bench-suite `tree` group is the reference measurement.
use cob_tree::CobTree;
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

fn main() {
    let mut a = std::env::args().skip(1);
    let n: usize = a.next().and_then(|s| s.parse().ok()).unwrap_or(1_000_000);
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
    // Fisher-Yates with the same generator.
    let mut x = 0x9e3779b97f4a7c15u64;
    for i in (1..n).rev() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        probes.swap(i, (x % (i as u64 + 1)) as usize);
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
