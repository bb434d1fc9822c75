//! Page loans: an arena about to touch new memory borrows another arena's resident free
//! pages first (mimalloc-bench's mstress: one thread grows while the other's arena holds
//! the pages its thread just freed). Thread A fills pages of one class on its arena and
//! frees them (they stay resident); thread B, on the other arena, then allocates almost
//! as much: no segment is mapped for it. B's blocks count once, on B's arena; they are
//! freed from both threads (a free on A's CPU goes to B, the pages' holder; a page may go
//! from full to empty in one drain of remote frees); and once empty, the pages are A's
//! again: A's next allocations stay within the segments its own fill needed.

mod common;
use arena_alloc::tuning::PAGE_SIZE;
use arena_alloc::{ArenaAlloc, arena_stats, flush_thread_cache, total_stats, trim};
use common::*;
use std::alloc::{GlobalAlloc, Layout};

#[cfg_attr(not(miri), global_allocator)]
static GLOBAL: Counting = Counting::new(ArenaAlloc::with_heap_count(2));

/// A class without a cache bin (blocks go straight to their pages), used by nothing else.
const SIZE: usize = 64 << 10;
const PER_PAGE: usize = PAGE_SIZE / SIZE;
/// Pages thread A fills and empties.
const PAGES: usize = 24;
/// Pages thread B fills (fewer: B's other allocations, of other classes, borrow some).
const B_PAGES: usize = 12;

fn layout() -> Layout {
    Layout::from_size_align(SIZE, 8).unwrap()
}

/// `n` blocks of SIZE, each stamped with its index in its first word.
fn blocks(n: usize) -> Vec<usize> {
    (0..n)
        .map(|i| {
            // SAFETY: a non-zero size.
            let p = unsafe { GLOBAL.alloc(layout()) };
            assert!(!p.is_null());
            // SAFETY: a fresh block of SIZE bytes: every word written, first the stamp.
            unsafe { p.write_bytes(0x5a, SIZE) };
            // SAFETY: as above.
            unsafe { p.cast::<u64>().write(i as u64) };
            p as usize
        })
        .collect()
}

/// Frees the blocks `ps[i]` for `i` in `idx` (each checked).
fn free_some(ps: &[usize], idx: impl Iterator<Item = usize>) {
    for i in idx {
        let p = ps[i] as *mut u8;
        // SAFETY: a live block of `blocks`, stamped there.
        assert_eq!(unsafe { p.cast::<u64>().read() }, i as u64, "block {i}");
        // SAFETY: allocated with `layout()`, freed once here.
        unsafe { GLOBAL.dealloc(p, layout()) };
    }
}

/// Frees every page's first block, then the rest: each page empties below the head of
/// its class list, so it becomes a free page at once.
fn free_by_pages(ps: &[usize]) {
    for k in 0..PER_PAGE {
        free_some(ps, (k..ps.len()).step_by(PER_PAGE));
    }
}

fn segment_bytes() -> usize {
    total_stats().segment_bytes
}

/// Runs `f` on a new thread pinned to `cpu`, with its own cache flushed at the end.
fn on<R: Send>(cpu: usize, f: impl FnOnce() -> R + Send) -> R {
    std::thread::scope(|s| {
        s.spawn(|| {
            assert!(pin_to(cpu));
            let r = f();
            flush_thread_cache();
            r
        })
        .join()
        .unwrap()
    })
}

fn scenario() {
    let cpus = allowed_cpus();
    let cpu_a = cpus.first().copied();
    let cpu_b = cpus
        .iter()
        .copied()
        .find(|&c| Some(c % 2) != cpu_a.map(|a| a % 2));
    let (Some(cpu_a), Some(cpu_b)) = (cpu_a, cpu_b) else {
        println!("page_loans: needs CPUs of both arenas; skipped");
        return;
    };
    let (arena_a, arena_b) = (cpu_a % 2, cpu_b % 2);

    // What spawning a thread leaves allocated the first time is not the scenario's.
    on(cpu_b, || ());
    let before = snapshot(&GLOBAL);

    // A: resident free pages on arena A.
    let peak = on(cpu_a, || {
        assert_eq!(GLOBAL.inner.arena_index(), arena_a);
        let ps = blocks(PAGES * PER_PAGE);
        let peak = segment_bytes();
        free_by_pages(&ps);
        peak
    });
    let segs = segment_bytes();
    let bytes_a = arena_stats(arena_a).unwrap().bytes_in_use;
    let bytes_b = arena_stats(arena_b).unwrap().bytes_in_use;

    // B: as many pages again, on arena B, from A's.
    let n = B_PAGES * PER_PAGE;
    let held = on(cpu_b, || {
        assert_eq!(GLOBAL.inner.arena_index(), arena_b);
        let ps = blocks(n);
        flush_thread_cache();
        assert_eq!(
            segment_bytes(),
            segs,
            "B mapped a segment while A had resident free pages"
        );
        // Counted once, by the holder.
        let got_b = arena_stats(arena_b).unwrap().bytes_in_use - bytes_b;
        let got_a = arena_stats(arena_a).unwrap().bytes_in_use as isize - bytes_a as isize;
        assert!(got_b >= n * SIZE, "B counts {got_b} bytes of {}", n * SIZE);
        assert!(
            got_a.unsigned_abs() < SIZE,
            "A's count moved by {got_a} bytes"
        );
        // B frees every other block itself.
        free_some(&ps, (0..n).step_by(2));
        ps
    });
    // A's CPU frees the rest (remote frees to their holder, B's arena).
    on(cpu_a, || free_some(&held, (1..n).step_by(2)));
    // The emptied pages go back to A: A fills them again within the segments its first
    // fill needed (a segment left with no page in use is unmapped when its arena has
    // another empty one, and may be mapped again now).
    on(cpu_a, || {
        let ps = blocks(B_PAGES * PER_PAGE);
        assert!(
            segment_bytes() <= peak,
            "A mapped more segments than its own fill needed"
        );
        free_by_pages(&ps);
    });
    drop(held);
    trim();
    assert_no_leak(&GLOBAL, &before);
}

fn main() {
    run("page_loans", scenario);
}
