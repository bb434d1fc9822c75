//! Deferred remote frees (`REMOTE_BATCH_BYTES`): a thread that frees another arena's
//! blocks holds back a run of one page's blocks and pushes it as one chain. Every such
//! block must reach its arena: when the run is full, when the next block is of another
//! page, on `flush_thread_cache`, and when the thread exits with a partial run.

mod common;
use arena_alloc::tuning::{REMOTE_BATCH_BYTES, class_of, remote_batch};
use arena_alloc::{ArenaAlloc, total_stats, trim};
use common::*;
use std::alloc::{GlobalAlloc, Layout};
use std::sync::{Arc, Barrier};

#[cfg_attr(not(miri), global_allocator)]
static GLOBAL: Counting = Counting::new(ArenaAlloc::new());

/// A size no other allocation of this binary has (so its blocks are the scenario's).
const SIZE: usize = 208;

/// Allocates `n` blocks of `SIZE` on the calling thread's arena, stamped with their index.
fn blocks(n: usize) -> Vec<usize> {
    let l = Layout::from_size_align(SIZE, 8).unwrap();
    (0..n)
        .map(|i| {
            // SAFETY: a non-zero size.
            let p = unsafe { GLOBAL.alloc(l) };
            assert!(!p.is_null());
            // SAFETY: a fresh block of SIZE bytes, aligned to 8.
            unsafe { p.cast::<u64>().write(i as u64) };
            p as usize
        })
        .collect()
}

/// Frees `ps` (every one checked) on the calling thread.
fn free_all(ps: &[usize]) {
    let l = Layout::from_size_align(SIZE, 8).unwrap();
    for (i, &p) in ps.iter().enumerate() {
        let p = p as *mut u8;
        // SAFETY: a live block allocated by `blocks`, stamped there.
        let stamp = unsafe { p.cast::<u64>().read() };
        assert_eq!(stamp, i as u64, "block {i} was overwritten");
        // SAFETY: allocated by `blocks` with `l`, freed once here.
        unsafe { GLOBAL.dealloc(p, l) };
    }
}

/// Remote frees drained so far (after a `trim`, which drains every arena).
fn drained() -> u64 {
    trim();
    total_stats().remote_frees
}

fn scenario() {
    let cpus = allowed_cpus();
    if cpus.len() < 2 || GLOBAL.inner.heap_count() < 2 {
        println!("remote_batch: needs two CPUs and two arenas; only the constants checked");
        assert_eq!(remote_batch(0), (REMOTE_BATCH_BYTES / 16) as u32);
        return;
    }
    assert!(pin_to(cpus[0]));
    arena_alloc::flush_thread_cache();
    let batch = remote_batch(class_of(SIZE)) as usize;
    assert!(batch > 1, "the scenario needs runs of several blocks");
    let before = snapshot(&GLOBAL);
    // (blocks, whether the freeing thread flushes while it is still running)
    let cases = [
        (1, true),
        (batch - 1, true),
        (batch, false),
        (batch + 1, false),
        (10 * batch + 3, false),
        (3000, true),
    ];
    for (n, flush) in cases {
        let ps = Arc::new(blocks(n));
        let start = drained();
        let (done, checked) = (Arc::new(Barrier::new(2)), Arc::new(Barrier::new(2)));
        let t = {
            let (ps, done, checked, cpu) = (ps.clone(), done.clone(), checked.clone(), cpus[1]);
            std::thread::spawn(move || {
                assert!(pin_to(cpu));
                arena_alloc::flush_thread_cache();
                free_all(&ps);
                if flush {
                    arena_alloc::flush_thread_cache();
                }
                done.wait();
                // Alive until the main thread has counted the drained blocks.
                checked.wait();
            })
        };
        done.wait();
        if flush {
            let got = drained() - start;
            assert!(
                got >= n as u64,
                "{n} blocks freed and flushed, {got} drained"
            );
        } else {
            // Full runs are pushed at once; at most one partial run waits for the exit.
            let got = drained() - start;
            let full = (n / batch * batch) as u64;
            assert!(
                got >= full,
                "{n} blocks freed, {got} drained, {full} expected"
            );
        }
        checked.wait();
        t.join().unwrap();
        let got = drained() - start;
        assert!(
            got >= n as u64,
            "{n} blocks freed by a thread that exited, {got} drained"
        );
        drop(ps);
    }
    trim();
    assert_no_leak(&GLOBAL, &before);
}

fn main() {
    run("remote_batch", scenario);
}
