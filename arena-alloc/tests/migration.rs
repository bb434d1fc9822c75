//! Threads re-pin themselves to every allowed CPU with `sched_setaffinity` while they
//! allocate and free; blocks allocated on one CPU are freed on another; the arena used
//! follows the CPU.

mod common;
use common::*;

// Under Miri (no mmap, no rseq) the binary keeps `System` and its scenarios are skipped.
#[cfg_attr(not(miri), global_allocator)]
static GLOBAL: Counting = Counting::new(arena_alloc::ArenaAlloc::new());

fn scenario() {
    let before = snapshot(&GLOBAL);
    let cpus = allowed_cpus();
    assert!(!cpus.is_empty());
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let cpus = cpus.clone();
            std::thread::spawn(move || {
                let mut rng = Rng(77 + t);
                let mut held: Vec<(Vec<u8>, u8)> = Vec::new();
                for round in 0..40 {
                    let cpu = cpus[(round + t as usize) % cpus.len()];
                    assert!(pin_to(cpu), "sched_setaffinity to {cpu}");
                    // Pinned: the arena must be this CPU's.
                    let n = GLOBAL.inner.heap_count();
                    assert_eq!(GLOBAL.inner.arena_index(), cpu % n);
                    for i in 0..500 {
                        let seed = (round * 31 + i) as u8;
                        let size = 1 + rng.below(2048) as usize;
                        held.push((pattern(size, seed), seed));
                        if rng.below(3) == 0 {
                            let k = rng.below(held.len() as u64) as usize;
                            let (v, s) = held.swap_remove(k);
                            check_pattern(&v, s);
                        }
                    }
                    // Free half of what was allocated (often on earlier CPUs).
                    let keep = held.len() / 2;
                    for (v, s) in held.drain(keep..) {
                        check_pattern(&v, s);
                    }
                }
                for (v, s) in held {
                    check_pattern(&v, s);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let several = cpus.len() >= 2 && GLOBAL.inner.heap_count() >= 2;
    drop(cpus);
    if several {
        assert!(arena_alloc::total_stats().remote_frees > before.stats.remote_frees);
    }
    assert_no_leak(&GLOBAL, &before);
}

fn main() {
    run("migration_with_sched_setaffinity", scenario);
}
