//! Measures the three static search layouts the index could use, over the same sorted
//! fences (65,535 keys: the index of a 1M-key map with 30-element leaves):
//! sorted array (halving binary search), Eytzinger (BFS order) and van Emde Boas
//! (recursive blocks, pointer-free navigation with per-depth tables). Each search
//! returns the number of fences `<= x` (the leaf index); all three are checked equal.
//!
//! `cargo run --release -p memlayout-cob-tree --example index_layouts [-- HEIGHT]`

use std::hint::black_box;
use std::time::Instant;

fn xorshift(x: &mut u64) -> u64 {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    *x
}

/// In-order rank of BFS index `p` (1-based) in a perfect tree of height `h`.
fn rank(p: usize, h: u32) -> usize {
    let d = usize::BITS - 1 - p.leading_zeros();
    let j = p - (1 << d);
    ((2 * j + 1) << (h - 1 - d)) - 1
}

/// Number of keys `<= x` from the BFS index where an upper-bound descent ended.
fn finish(mut p: usize, n: usize, h: u32) -> usize {
    p >>= p.trailing_ones() + 1;
    if p == 0 { n } else { rank(p, h) }
}

struct Veb {
    keys: Vec<u64>,
    t: Vec<usize>,
    b: Vec<usize>,
    d: Vec<usize>,
    h: u32,
}

fn veb_tables(d0: usize, h: usize, t: &mut [usize], b: &mut [usize], d: &mut [usize]) {
    if h <= 1 {
        return;
    }
    let ht = h / 2;
    let hb = h - ht;
    let split = d0 + ht;
    t[split] = (1 << ht) - 1;
    b[split] = (1 << hb) - 1;
    d[split] = d0;
    veb_tables(d0, ht, t, b, d);
    veb_tables(split, hb, t, b, d);
}

/// Places BFS node `i` (height-`h` subtree) in vEB order, for building.
fn veb_place(i: usize, h: usize, pos: &mut usize, out: &mut [usize]) {
    if h == 1 {
        out[i] = *pos;
        *pos += 1;
        return;
    }
    let ht = h / 2;
    let hb = h - ht;
    veb_place(i, ht, pos, out);
    for j in 0..(1usize << ht) {
        veb_place((i << ht) + j, hb, pos, out);
    }
}

impl Veb {
    fn new(sorted: &[u64], eyt: &[u64], h: u32) -> Veb {
        let n = sorted.len();
        let mut place = vec![0; n + 1];
        let mut pos = 0;
        veb_place(1, h as usize, &mut pos, &mut place);
        let mut keys = vec![0; n];
        for i in 1..=n {
            keys[place[i]] = eyt[i];
        }
        let (mut t, mut b, mut d) = (
            vec![0; h as usize],
            vec![0; h as usize],
            vec![0; h as usize],
        );
        veb_tables(0, h as usize, &mut t, &mut b, &mut d);
        Veb { keys, t, b, d, h }
    }

    fn search(&self, x: u64) -> usize {
        let mut pos = [0usize; 64];
        let mut i = 1usize;
        for depth in 0..self.h as usize {
            if depth > 0 {
                let td = self.t[depth];
                pos[depth] = pos[self.d[depth]] + td + (i & td) * self.b[depth];
            }
            i = 2 * i + usize::from(self.keys[pos[depth]] <= x);
        }
        finish(i, self.keys.len(), self.h)
    }
}

fn eytzinger(sorted: &[u64]) -> Vec<u64> {
    fn fill(s: &[u64], out: &mut [u64], i: &mut usize, k: usize) {
        if k < out.len() {
            fill(s, out, i, 2 * k);
            out[k] = s[*i];
            *i += 1;
            fill(s, out, i, 2 * k + 1);
        }
    }
    let mut out = vec![0; sorted.len() + 1];
    let mut i = 0;
    fill(sorted, &mut out, &mut i, 1);
    out
}

fn eyt_search(t: &[u64], x: u64, h: u32) -> usize {
    let n = t.len() - 1;
    let mut p = 1;
    while p <= n {
        p = 2 * p + usize::from(t[p] <= x);
    }
    finish(p, n, h)
}

fn sorted_search(s: &[u64], x: u64) -> usize {
    // Halving search: number of keys <= x.
    let mut base = 0usize;
    let mut len = s.len();
    while len > 1 {
        let half = len / 2;
        if s[base + half - 1] <= x {
            base += half;
        }
        len -= half;
    }
    base + usize::from(len == 1 && s[base] <= x)
}

fn time(name: &str, probes: &[u64], f: impl Fn(u64) -> usize) -> usize {
    let mut best = f64::MAX;
    let mut sum = 0;
    for _ in 0..5 {
        let t = Instant::now();
        sum = probes
            .iter()
            .map(|&x| f(black_box(x)))
            .fold(0usize, usize::wrapping_add);
        best = best.min(t.elapsed().as_nanos() as f64 / probes.len() as f64);
    }
    println!("{name:<28} {best:>7.1} ns/search (best of 5)");
    sum
}

fn main() {
    let h: u32 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(16);
    let n = (1usize << h) - 1;
    let mut x = 0x243f_6a88_85a3_08d3;
    let mut sorted: Vec<u64> = (0..n).map(|_| xorshift(&mut x)).collect();
    sorted.sort_unstable();
    let eyt = eytzinger(&sorted);
    let veb = Veb::new(&sorted, &eyt, h);
    let probes: Vec<u64> = (0..2_000_000).map(|_| xorshift(&mut x)).collect();
    for &p in probes.iter().take(10_000) {
        let want = sorted.partition_point(|&k| k <= p);
        assert_eq!(sorted_search(&sorted, p), want);
        assert_eq!(eyt_search(&eyt, p, h), want);
        assert_eq!(veb.search(p), want);
    }
    println!(
        "{n} fences ({} KiB), {} random searches",
        n * 8 / 1024,
        probes.len()
    );
    let a = time("sorted array, binary search", &probes, |p| {
        sorted_search(&sorted, p)
    });
    let b = time("Eytzinger (BFS order)", &probes, |p| eyt_search(&eyt, p, h));
    let c = time("van Emde Boas", &probes, |p| veb.search(p));
    assert!(a == b && b == c, "layouts disagree");
}
