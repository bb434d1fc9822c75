//! Hoard's cache-scratch pattern (passive false sharing) with one heap: the main thread
//! allocates one block per thread, adjacent; each new thread frees its block and then
//! allocates its own of the same size. No thread may get a handed-over block back, and no
//! two threads may get blocks on one cache line. (The freed block used to come straight
//! back to the thread that freed it: its cache returned its pending remote frees to the
//! arena and refilled from there in the same breath; adjacent handed blocks then put the
//! threads' objects on shared lines.)

mod common;
use common::*;
use std::alloc::{Layout, alloc, dealloc};
use std::sync::Barrier;

#[cfg_attr(not(miri), global_allocator)]
static GLOBAL: Counting = Counting::new(arena_alloc::ArenaAlloc::with_heap_count(1));

const THREADS: usize = 4;
/// A size class (224 B) nothing else in this binary uses; two blocks share a line.
const SIZE: usize = 200;
const LINE: usize = 64;

fn lines(p: usize) -> std::ops::RangeInclusive<usize> {
    p / LINE..=(p + SIZE - 1) / LINE
}

fn scenario() {
    let before = snapshot(&GLOBAL);
    let l = Layout::from_size_align(SIZE, 1).unwrap();
    // SAFETY: non-zero size.
    let handed: Vec<usize> = (0..THREADS).map(|_| unsafe { alloc(l) } as usize).collect();
    assert!(handed.iter().all(|&p| p != 0));
    let barrier = Barrier::new(THREADS);
    let got: Vec<usize> = std::thread::scope(|s| {
        let hs: Vec<_> = handed
            .iter()
            .map(|&mine| {
                let barrier = &barrier;
                s.spawn(move || {
                    // SAFETY: allocated above with `l`, freed once here.
                    unsafe { dealloc(mine as *mut u8, l) };
                    barrier.wait();
                    // SAFETY: non-zero size.
                    let p = unsafe { alloc(l) };
                    assert!(!p.is_null());
                    // SAFETY: `p` is a live block of SIZE bytes.
                    unsafe { p.write_bytes(0xa5, SIZE) };
                    let addr = p as usize;
                    // Every thread holds its block until all have one (as they all run
                    // at once in the benchmark).
                    barrier.wait();
                    // SAFETY: allocated above with `l`.
                    unsafe { dealloc(p, l) };
                    addr
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for (t, &p) in got.iter().enumerate() {
        assert!(
            !handed.contains(&p),
            "thread {t} got a block handed over by the main thread back: {p:#x}"
        );
        for (u, &q) in got.iter().enumerate().skip(t + 1) {
            assert!(
                !lines(p).any(|x| lines(q).contains(&x)),
                "threads {t} and {u} got blocks on one cache line: {p:#x}, {q:#x}"
            );
        }
    }
    drop((handed, got));
    assert_no_leak(&GLOBAL, &before);
}

fn main() {
    run("handoff_no_passive_false_sharing", scenario);
}
