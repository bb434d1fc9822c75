//! Point reads against keys nobody touches: while other threads force splits, window
//! rebalances, growth and shrinking around them, `get`, `first_key_value` and
//! `last_key_value` must always see the stable keys (a miss would be a non-linearizable
//! read: the key was present for the whole call).
#![cfg(not(loom))]

use cob_tree::CobTree;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;

/// Stable keys: few, so the writer's leaves are the readers' leaves most of the time.
const N: u64 = 64;

/// Checks the readers must have done before the writer may stop.
fn min_reads() -> u64 {
    if cfg!(miri) {
        50
    } else if cfg!(debug_assertions) {
        20_000
    } else {
        200_000
    }
}

#[test]
fn stable_keys_always_found() {
    let n = N;
    let t: CobTree<u64, u64> = CobTree::with_leaf_capacity(4);
    for k in 0..n {
        t.insert(k * 2, k);
    }
    let stop = AtomicBool::new(false);
    // Reads checked so far: the writer keeps restructuring until the readers have done a
    // fair share of their checks against it (progress, not time).
    let reads = AtomicU64::new(0);
    thread::scope(|s| {
        let (t, stop, reads) = (&t, &stop, &reads);
        // Odd keys below the largest even one: in-leaf inserts, rebalances, growth,
        // then removals down to a shrink; at least twice.
        let w = s.spawn(move || {
            let mut round = 0;
            while round < 2 || (round < 100_000 && reads.load(Ordering::Relaxed) < min_reads()) {
                round += 1;
                for k in 0..n - 1 {
                    t.insert(k * 2 + 1, k);
                }
                for k in (0..n - 1).rev() {
                    assert_eq!(t.remove(&(k * 2 + 1)), Some(k));
                }
            }
        });
        for r in 0..2u64 {
            s.spawn(move || {
                let mut x = r + 1;
                while !stop.load(Ordering::Relaxed) {
                    x = x
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    let k = (x >> 33) % n;
                    assert_eq!(t.get(&(k * 2)), Some(k), "stable key {} missed", k * 2);
                    assert_eq!(t.first_key_value(), Some((0, 0)));
                    assert_eq!(t.last_key_value(), Some((2 * (n - 1), n - 1)));
                    reads.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
        let r = w.join();
        stop.store(true, Ordering::Relaxed);
        r.unwrap();
    });
    assert_eq!(t.len(), n as usize);
}
