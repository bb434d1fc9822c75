//! Producer/consumer: blocks allocated on one thread (pinned to one CPU when there are
//! two) are checked and freed on another; every block comes back.

mod common;
use common::*;
use std::sync::mpsc;

// Under Miri (no mmap, no rseq) the binary keeps `System` and its scenarios are skipped.
#[cfg_attr(not(miri), global_allocator)]
static GLOBAL: Counting = Counting::new(arena_alloc::ArenaAlloc::new());

const PRODUCERS: usize = 4;
const PER_PRODUCER: usize = 20_000;

fn scenario() {
    let before = snapshot(&GLOBAL);
    let cpus = allowed_cpus();
    let pinned = cpus.len() >= 2 && GLOBAL.inner.heap_count() >= 2;
    let (tx, rx) = mpsc::sync_channel::<(Vec<u8>, u8)>(256);
    let consumer = std::thread::spawn(move || {
        if pinned {
            assert!(pin_to(cpus[1]));
            // A thread keeps its first arena: start over on this CPU's.
            arena_alloc::flush_thread_cache();
        }
        let mut n = 0;
        for (v, seed) in rx {
            check_pattern(&v, seed);
            n += 1;
        }
        n
    });
    let producers: Vec<_> = (0..PRODUCERS)
        .map(|t| {
            let tx = tx.clone();
            let cpu0 = allowed_cpus()[0];
            std::thread::spawn(move || {
                if pinned {
                    assert!(pin_to(cpu0));
                    arena_alloc::flush_thread_cache();
                }
                let mut rng = Rng(0x9E37_79B9 + t as u64);
                for i in 0..PER_PRODUCER {
                    let size = match rng.below(100) {
                        0 => 200_000 + rng.below(100_000) as usize,
                        1..=9 => 1 + rng.below(8192) as usize,
                        _ => 1 + rng.below(256) as usize,
                    };
                    let seed = (i + t) as u8;
                    tx.send((pattern(size, seed), seed)).unwrap();
                }
            })
        })
        .collect();
    drop(tx);
    for p in producers {
        p.join().unwrap();
    }
    let received = consumer.join().unwrap();
    assert_eq!(received, PRODUCERS * PER_PRODUCER);
    let after = arena_alloc::total_stats();
    if pinned {
        assert!(
            after.remote_frees - before.stats.remote_frees >= (PRODUCERS * PER_PRODUCER) as u64,
            "frees on the consumer's CPU must count as remote: {after:?}"
        );
    }
    assert_no_leak(&GLOBAL, &before);
}

fn main() {
    run("cross_thread_producer_consumer", scenario);
}
