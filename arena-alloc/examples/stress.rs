//! A stress binary for valgrind memcheck (`arena-alloc/ci/valgrind.sh`): cross-thread
//! frees, realloc chains, aligned and huge blocks, all checked, with `ArenaAlloc` as the
//! global allocator. Exits non-zero if any check or the final leak count fails.

use arena_alloc::{ArenaAlloc, flush_thread_cache, total_stats};
use std::sync::mpsc;

#[global_allocator]
static GLOBAL: ArenaAlloc = ArenaAlloc::new();

fn pattern(n: usize, seed: u8) -> Vec<u8> {
    (0..n).map(|i| seed.wrapping_add(i as u8)).collect()
}

fn ok(v: &[u8], seed: u8) -> bool {
    v.iter()
        .enumerate()
        .all(|(i, &b)| b == seed.wrapping_add(i as u8))
}

fn main() {
    let iters: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(2000);
    flush_thread_cache();
    let before = total_stats();
    let (tx, rx) = mpsc::channel::<(Vec<u8>, u8)>();
    let consumer = std::thread::spawn(move || rx.iter().filter(|(v, s)| ok(v, *s)).count());
    let producers: Vec<_> = (0..3u64)
        .map(|t| {
            let tx = tx.clone();
            std::thread::spawn(move || {
                let mut x = 0x1234_5678_u64 + t;
                for i in 0..iters {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let size = match x % 50 {
                        0 => 150_000 + (x % 100_000) as usize,
                        1..=5 => 1 + (x % 9000) as usize,
                        _ => 1 + (x % 200) as usize,
                    };
                    let seed = i as u8;
                    let mut v = pattern(size, seed);
                    // A realloc chain through several classes.
                    v.reserve(size * 2);
                    v.shrink_to_fit();
                    let mut aligned: Vec<[u8; 4096]> = Vec::with_capacity(1 + i % 3);
                    aligned.push([seed; 4096]);
                    assert_eq!(aligned.as_ptr() as usize % 4096, 0);
                    tx.send((v, seed)).unwrap();
                }
            })
        })
        .collect();
    drop(tx);
    for p in producers {
        p.join().unwrap();
    }
    let good = consumer.join().unwrap();
    // This thread's cached blocks count as allocated until returned.
    flush_thread_cache();
    let after = total_stats();
    let leaked = after.live_allocations() as i64 - before.live_allocations() as i64;
    println!(
        "stress: {good}/{} blocks intact, {leaked} leaked, {} remote frees",
        3 * iters,
        after.remote_frees
    );
    if good != 3 * iters || leaked != 0 {
        std::process::exit(1);
    }
}
