//! The arrays a small (pinless) map keeps until it drops stay bounded whatever its history:
//! many rounds of filling and clearing, of growing and shrinking, hold no more than one
//! growth from empty does (`KEPT_TOTAL_BYTES` of leaf lines plus their indexes), counted
//! by a global allocator.
//!
//! Not under Miri or loom: there every retired array is kept until the map drops (no epoch
//! collector), by design.
#![cfg(not(any(loom, miri)))]

use cob_tree::{CobTree, KEPT_TOTAL_BYTES};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

struct Counting;

/// Bytes currently allocated through the global allocator (all threads).
static LIVE: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards to `System` unchanged; only counts bytes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        LIVE.fetch_add(l.size(), Ordering::Relaxed);
        // SAFETY: same contract as ours.
        unsafe { System.alloc(l) }
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        LIVE.fetch_add(l.size(), Ordering::Relaxed);
        // SAFETY: same contract as ours.
        unsafe { System.alloc_zeroed(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        LIVE.fetch_sub(l.size(), Ordering::Relaxed);
        // SAFETY: same contract as ours.
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        LIVE.fetch_add(n, Ordering::Relaxed);
        LIVE.fetch_sub(l.size(), Ordering::Relaxed);
        // SAFETY: same contract as ours.
        unsafe { System.realloc(p, l, n) }
    }
}

#[global_allocator]
static A: Counting = Counting;

/// What crossbeam-epoch itself may hold at any moment (its queue's nodes, a thread's
/// registration).
const COLLECTOR_SLACK: usize = 8 << 10;

/// The most an emptied map may hold: its kept arrays (`KEPT_TOTAL_BYTES`, the current one
/// included while it is pinless), the list of them (a pointer each, 2 KiB for the most
/// arrays that fit) and, once it is pinned, its current empty array (1.3 KiB).
const KEPT_BOUND: usize = KEPT_TOTAL_BYTES + (4 << 10);

/// The tests share the counter: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

fn live() -> usize {
    LIVE.load(Ordering::Relaxed)
}

/// Runs `rounds` of `round` (each leaves the map empty) on a fresh map, checking after
/// each that the live heap the map holds stays within `KEPT_BOUND`; returns the most seen.
fn bounded(rounds: usize, round: impl Fn(&CobTree<u64, u64>)) -> usize {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // This thread's epoch registration allocates once, first.
    let _ = CobTree::<u64, u64>::with_capacity(1 << 20).insert(1, 1);
    let base = live();
    let t: CobTree<u64, u64> = CobTree::new();
    let mut worst = 0;
    for r in 0..rounds {
        round(&t);
        let held = live().saturating_sub(base);
        worst = worst.max(held);
        assert!(
            t.is_empty() && held <= KEPT_BOUND + COLLECTOR_SLACK,
            "round {r}: the map holds {held} B live with {} keys ({} B by its own count)",
            t.len(),
            t.heap_bytes()
        );
    }
    drop(t);
    assert!(
        live().saturating_sub(base) <= COLLECTOR_SLACK,
        "freed at the drop"
    );
    worst
}

#[test]
fn fill_and_clear_rounds_keep_a_bounded_total() {
    let worst = bounded(40, |t| {
        for k in 0..3_000u64 {
            t.insert(k.wrapping_mul(0x9e37_79b9_7f4a_7c15), k);
        }
        t.clear();
    });
    println!("fill 3,000 and clear, 40 rounds: at most {worst} B live");
}

#[test]
fn grow_and_shrink_rounds_keep_a_bounded_total() {
    let worst = bounded(40, |t| {
        for k in 0..3_000u64 {
            t.insert(k, k);
        }
        for k in 0..3_000u64 {
            assert_eq!(t.remove(&k), Some(k));
        }
    });
    println!("insert 3,000 and remove them, 40 rounds: at most {worst} B live");
}

#[test]
fn clearing_a_tiny_map_keeps_a_bounded_total() {
    let worst = bounded(2_000, |t| {
        for k in 0..10u64 {
            t.insert(k, k);
        }
        t.clear();
        t.clear();
    });
    println!("fill 10 and clear twice, 2,000 rounds: at most {worst} B live");
}

#[test]
fn growing_past_the_bound_and_back_keeps_a_bounded_total() {
    let worst = bounded(6, |t| {
        for k in 0..40_000u64 {
            t.insert(k.wrapping_mul(0x9e37_79b9_7f4a_7c15), k);
        }
        t.clear();
        for k in 0..2_000u64 {
            t.insert(k, k);
        }
        t.clear();
    });
    println!("fill 40,000, clear, fill 2,000, clear, 6 rounds: at most {worst} B live");
}
