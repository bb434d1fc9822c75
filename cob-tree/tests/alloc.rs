//! Counts heap allocations: none per `get`, none per `insert`/`remove` that does not resize
//! the array (in-leaf writes and window rebalances are in place).
#![cfg(not(loom))]

use cob_tree::CobTree;
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

struct Counting;

thread_local! {
    static ALLOCS: Cell<usize> = const { Cell::new(0) };
}

// SAFETY: forwards to `System` unchanged; only counts calls on this thread.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let _ = ALLOCS.try_with(|c| c.set(c.get() + 1));
        // SAFETY: same contract as ours.
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        // SAFETY: same contract as ours.
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        let _ = ALLOCS.try_with(|c| c.set(c.get() + 1));
        // SAFETY: same contract as ours.
        unsafe { System.realloc(p, l, n) }
    }
}

#[global_allocator]
static A: Counting = Counting;

fn allocs() -> usize {
    ALLOCS.with(|c| c.get())
}

#[test]
#[cfg_attr(
    miri,
    ignore = "counts allocations: `cargo test` checks them; the same operations run under Miri in the model tests"
)]
fn no_allocation_per_operation() {
    let n: u64 = if cfg!(miri) { 200 } else { 20_000 };
    // Room for all keys up front, so no insert below resizes.
    let t: CobTree<u64, u64> = CobTree::with_capacity(4 * n as usize);
    t.insert(u64::MAX, 0);
    t.get(&0); // registers this thread with the epoch collector
    let mut x = 12345u64;
    let before = allocs();
    for i in 0..n {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let k = x >> 8;
        assert_eq!(t.insert(k, i), None);
        assert_eq!(t.get(&k), Some(i));
        assert_eq!(t.get(&(k ^ 1)), None);
        if i % 3 == 0 {
            assert_eq!(t.remove(&k), Some(i));
        }
    }
    assert_eq!(
        allocs() - before,
        0,
        "allocations during non-resizing operations"
    );
    let before = allocs();
    for _ in 0..n {
        t.get(&(x >> 8));
        t.contains_key(&3);
    }
    assert_eq!(allocs() - before, 0, "allocations during gets");
    let before = allocs();
    let mut seen = 0usize;
    for i in 0..n / 100 {
        seen += t.range(i << 40..).take(100).count();
        seen += t.iter().take(3).count();
    }
    assert!(seen > 0);
    assert_eq!(allocs() - before, 0, "allocations during ranges");
}

/// The boxed path: `get` of a `String` key through `&str` (as `BTreeMap` allows) and of a
/// `Vec<u8>` key through `&[u8]` allocates nothing, hit or miss.
#[test]
#[cfg_attr(
    miri,
    ignore = "counts allocations: `cargo test` checks them; the same operations run under Miri in the model tests"
)]
fn no_allocation_per_get_of_a_string_key() {
    let n: usize = if cfg!(miri) { 100 } else { 20_000 };
    let t: CobTree<String, u64> = CobTree::new();
    let keys: Vec<String> = (0..n).map(|i| format!("key-{:x}-{i}", i * 7919)).collect();
    for (i, k) in keys.iter().enumerate() {
        t.insert(k.clone(), i as u64);
    }
    let misses: Vec<String> = keys.iter().map(|k| format!("{k}!")).collect();
    let b: CobTree<Vec<u8>, u64> = CobTree::new();
    b.insert(b"abcdefghijk".to_vec(), 1);
    // Counted on a fresh thread: the epoch collector's thread-local bag of this thread
    // holds the nodes the inserts retired, and a bag that spills (when the collector
    // defers its own bookkeeping) allocates; a new thread's bag starts empty.
    let sum = std::thread::scope(|s| {
        s.spawn(|| {
            t.get("warm-up");
            b.get(&b"warm-up"[..]);
            let before = allocs();
            let mut sum = 0;
            for (k, m) in keys.iter().zip(&misses) {
                let k: &str = k.as_str();
                sum += t.get(k).expect("present");
                assert!(t.get(m.as_str()).is_none());
                assert!(t.contains_key(k));
            }
            assert_eq!(b.get(&b"abcdefghijk"[..]), Some(1));
            assert_eq!(b.get(&b"abcdefghij"[..]), None);
            assert_eq!(allocs() - before, 0);
            sum
        })
        .join()
        .expect("counting thread")
    });
    assert_eq!(sum, (0..n as u64).sum::<u64>());
}
