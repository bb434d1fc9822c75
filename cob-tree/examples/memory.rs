//! Live heap bytes per entry of a random build, at its peak during the build and after it,
//! CobTree against `BTreeMap`, for the key types of `examples/growth.rs` (`u64 -> u64`
//! values). Counted by a global allocator (requested bytes, not the allocator's
//! overhead); the keys' own heap (a `String`'s buffer) is counted for both maps, since
//! each map owns a clone of every key. `cargo run --release -p memlayout-cob-tree
//! --example memory [N]` (default 100,000 keys).

use cob_tree::CobTree;
use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};

struct Counting;

/// Bytes allocated now, and the most since the last [`reset_peak`].
static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn grow(n: usize) {
    let now = LIVE.fetch_add(n, Ordering::Relaxed) + n;
    PEAK.fetch_max(now, Ordering::Relaxed);
}

// SAFETY: forwards to `System` unchanged; only counts bytes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        grow(l.size());
        // SAFETY: same contract as ours.
        unsafe { System.alloc(l) }
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        grow(l.size());
        // SAFETY: same contract as ours.
        unsafe { System.alloc_zeroed(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        LIVE.fetch_sub(l.size(), Ordering::Relaxed);
        // SAFETY: same contract as ours.
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        grow(n);
        LIVE.fetch_sub(l.size(), Ordering::Relaxed);
        // SAFETY: same contract as ours.
        unsafe { System.realloc(p, l, n) }
    }
}

#[global_allocator]
static A: Counting = Counting;

fn live() -> usize {
    LIVE.load(Ordering::Relaxed)
}

fn reset_peak() {
    PEAK.store(live(), Ordering::Relaxed);
}

#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Debug)]
struct Key {
    tenant: u32,
    id: u64,
}

fn xorshift(x: &mut u64) -> u64 {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    *x
}

/// (peak during the build, live after it) in bytes per entry, over the heap before it;
/// `build` returns the map and its length.
fn measure(build: impl FnOnce() -> (Box<dyn std::any::Any>, usize)) -> (f64, f64) {
    let base = live();
    reset_peak();
    let (m, n) = build();
    let after = live() - base;
    let peak = PEAK.load(Ordering::Relaxed) - base;
    drop(m);
    (peak as f64 / n as f64, after as f64 / n as f64)
}

fn row<K: Ord + Clone + Send + Sync + 'static>(name: &str, keys: Vec<K>) {
    let n = keys.len();
    let mut lens = [0; 2];
    let mut own = 0;
    let (cp, ca) = measure(|| {
        let c: CobTree<K, u64> = CobTree::new();
        for (i, k) in keys.iter().enumerate() {
            c.insert(k.clone(), i as u64);
        }
        lens[0] = c.len();
        own = c.heap_bytes();
        (Box::new(c), lens[0])
    });
    let (bp, ba) = measure(|| {
        let mut b = BTreeMap::new();
        for (i, k) in keys.iter().enumerate() {
            b.insert(k.clone(), i as u64);
        }
        lens[1] = b.len();
        (Box::new(b), lens[1])
    });
    assert_eq!(lens[0], lens[1], "both maps hold the same keys");
    println!(
        "| {name} | {n} | {cp:.1} / {ca:.1} | {:.1} | {bp:.1} / {ba:.1} | {:.2}x / {:.2}x |",
        own as f64 / lens[0] as f64,
        cp / bp,
        ca / ba
    );
}

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(100_000);
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let raw: Vec<u64> = (0..n).map(|_| xorshift(&mut x)).collect();
    println!(
        "| key type | keys | CobTree peak / after (B/entry) | its `heap_bytes()` | BTreeMap \
         peak / after | ratio |"
    );
    println!("|---|---:|---:|---:|---:|---:|");
    row("`u64`", raw.clone());
    row(
        "`(u32, u64)`",
        raw.iter().map(|&r| ((r % 64) as u32, r)).collect(),
    );
    row(
        "struct",
        raw.iter()
            .map(|&r| Key {
                tenant: (r % 64) as u32,
                id: r,
            })
            .collect(),
    );
    row(
        "`u128`",
        raw.iter()
            .map(|&r| (u128::from(r % 8) << 64) | u128::from(r))
            .collect(),
    );
    row(
        "URL",
        raw.iter()
            .map(|&r| format!("https://example.com/users/{:08}", r % 100_000_000))
            .collect(),
    );
    row(
        "path",
        raw.iter()
            .map(|&r| format!("/usr/lib/x86_64-linux-gnu/lib{:x}.so.{}", r >> 40, r % 10))
            .collect(),
    );
    row(
        "random `String`",
        raw.iter().map(|&r| format!("{r:016x}")).collect(),
    );
}
