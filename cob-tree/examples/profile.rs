//! Where a small map's instructions go: `valgrind --tool=callgrind
//! --toggle-collect='*profile::work*' target/release/examples/profile MODE N` runs one
//! operation kind on an `N`-key `CobTree<u64, u64>` (or `BTreeMap` with `bt-MODE`), with
//! collection only inside `work`; `callgrind_annotate` then splits the count by function
//! and source line. Modes: `get`, `strided`, `mix`, `rand`, `seq`, `iter` (ten full
//! iterations), `range` (10,000 ranges of 100 keys). Every loop checks its
//! answer.

use cob_tree::CobTree;
use std::collections::BTreeMap;
use std::hint::black_box;

fn keys(n: usize, seed: u64) -> Vec<u64> {
    let mut x = seed | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        })
        .collect()
}

trait M: Default {
    fn sum_keys(&self) -> u64;
    fn put(&mut self, k: u64, v: u64);
    fn at(&self, k: u64) -> Option<u64>;
    /// Key sum of the first `n` keys from `k` on.
    fn range_sum(&self, k: u64, n: usize) -> u64;
}
impl M for CobTree<u64, u64> {
    fn sum_keys(&self) -> u64 {
        self.iter().fold(0, |s, (k, _)| s.wrapping_add(k))
    }
    fn put(&mut self, k: u64, v: u64) {
        self.insert(k, v);
    }
    fn at(&self, k: u64) -> Option<u64> {
        self.get(&k)
    }
    fn range_sum(&self, k: u64, n: usize) -> u64 {
        self.range(k..)
            .take(n)
            .fold(0, |s, (k, _)| s.wrapping_add(k))
    }
}
impl M for BTreeMap<u64, u64> {
    fn sum_keys(&self) -> u64 {
        self.iter().fold(0, |s, (k, _)| s.wrapping_add(*k))
    }
    fn put(&mut self, k: u64, v: u64) {
        self.insert(k, v);
    }
    fn at(&self, k: u64) -> Option<u64> {
        self.get(&k).copied()
    }
    fn range_sum(&self, k: u64, n: usize) -> u64 {
        self.range(k..)
            .take(n)
            .fold(0, |s, (k, _)| s.wrapping_add(*k))
    }
}

#[inline(never)]
fn work<T: M>(mode: &str, m: &mut T, ks: &[u64], probes: &[u64]) -> u64 {
    match mode {
        "get" | "strided" => probes
            .iter()
            .map(|&k| m.at(k).unwrap())
            .fold(0, u64::wrapping_add),
        "mix" => {
            let mut s = 0u64;
            for (i, &k) in probes.iter().enumerate() {
                if i % 5 == 4 {
                    m.put(k ^ 1, k);
                } else {
                    s = s.wrapping_add(m.at(k).unwrap_or(0));
                }
            }
            s
        }
        "range" => probes[..10_000]
            .iter()
            .map(|&k| m.range_sum(k, 100))
            .fold(0, u64::wrapping_add),
        "iter" => (0..10).map(|_| m.sum_keys()).fold(0, u64::wrapping_add),
        "rand" => {
            for &k in ks {
                m.put(k, k);
            }
            ks.len() as u64
        }
        "seq" => {
            for k in 0..ks.len() as u64 {
                m.put(k, k);
            }
            ks.len() as u64
        }
        _ => panic!("unknown mode {mode}"),
    }
}

fn run<T: M>(mode: &str, n: usize) {
    let ks = keys(n, 0x2545_f491_4f6c_dd1d);
    let mut m = T::default();
    let build = matches!(mode, "rand" | "seq");
    if !build {
        for &k in &ks {
            m.put(k, k);
        }
    }
    let probes: Vec<u64> = if mode == "strided" {
        let mut s = ks.clone();
        s.sort_unstable();
        s.into_iter().step_by(16).collect()
    } else {
        keys(100_000, 7)
            .iter()
            .map(|x| ks[(*x % n as u64) as usize])
            .collect()
    };
    let ops = match mode {
        "range" => 10_000,
        "iter" => 10 * n,
        _ if build => n,
        _ => probes.len(),
    };
    let r = black_box(work(mode, &mut m, &ks, &probes));
    assert!(r > 0);
    println!("{mode} n={n}: {ops} operations");
}

fn main() {
    let mode = std::env::args().nth(1).unwrap_or_else(|| "get".into());
    let n: usize = std::env::args()
        .nth(2)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1000);
    match mode.strip_prefix("bt-") {
        Some(m) => run::<BTreeMap<u64, u64>>(m, n),
        None => run::<CobTree<u64, u64>>(&mode, n),
    }
}
