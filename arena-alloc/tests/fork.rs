//! fork() while other threads allocate: the child allocates (including on new threads)
//! and exits cleanly.

mod common;
use common::*;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

// Under Miri (no mmap, no rseq) the binary keeps `System` and its scenarios are skipped.
#[cfg_attr(not(miri), global_allocator)]
static GLOBAL: Counting = Counting::new(arena_alloc::ArenaAlloc::new());

fn child_work() -> i32 {
    let mut v: Vec<String> = (0..10_000).map(|i| format!("child {i}")).collect();
    v.sort();
    let t = std::thread::spawn(|| (0..1000).map(|i| vec![i as u8; i].len()).sum::<usize>());
    let ok = t.join().map(|n| n == 999 * 1000 / 2).unwrap_or(false);
    let big = vec![1u8; 3 << 20];
    if ok && v.len() == 10_000 && big.iter().all(|&b| b == 1) {
        0
    } else {
        3
    }
}

fn scenario() {
    let stop = Arc::new(AtomicBool::new(false));
    let workers: Vec<_> = (0..3)
        .map(|t| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut rng = Rng(5 + t);
                let mut held = Vec::new();
                while !stop.load(Ordering::Relaxed) {
                    held.push(vec![0u8; 1 + rng.below(4000) as usize]);
                    if held.len() > 100 {
                        held.drain(..50);
                    }
                }
            })
        })
        .collect();
    for _ in 0..20 {
        // SAFETY: fork has no preconditions; the child only runs Rust code and _exit.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork failed");
        if pid == 0 {
            // A deadlocked child is killed by the alarm and the parent sees it.
            // SAFETY: alarm and _exit have no preconditions.
            unsafe { libc::alarm(20) };
            let code = child_work();
            // SAFETY: as above.
            unsafe { libc::_exit(code) };
        }
        let mut status = 0;
        // SAFETY: `pid` is our child.
        let r = unsafe { libc::waitpid(pid, &mut status, 0) };
        assert_eq!(r, pid);
        assert!(
            libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
            "child failed: status {status:#x}"
        );
    }
    stop.store(true, Ordering::Relaxed);
    for w in workers {
        w.join().unwrap();
    }
}

fn main() {
    run("fork_while_threads_allocate", scenario);
}
