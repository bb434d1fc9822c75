//! Huge blocks: direct mappings, growth by mremap (in place or moved), shrinking, zeroed
//! memory, alignments up to and beyond a segment; statistics return to zero.

mod common;
use arena_alloc::tuning::{SEGMENT_SIZE, SMALL_MAX};
use common::*;
use std::alloc::{GlobalAlloc, Layout};

// Under Miri (no mmap, no rseq) the binary keeps `System` and its scenarios are skipped.
#[cfg_attr(not(miri), global_allocator)]
static GLOBAL: Counting = Counting::new(arena_alloc::ArenaAlloc::new());

fn scenario() {
    let before = snapshot(&GLOBAL);
    // First, while the huge heap is empty.
    grown_in_place_then_zeroed();
    cache_reuse();
    // A growing Vec goes through the mremap path many times.
    let mut v: Vec<u64> = Vec::new();
    for i in 0..(8u64 << 20) {
        v.push(i);
    }
    assert!(v.iter().enumerate().all(|(i, &x)| x == i as u64));
    v.truncate(1000);
    v.shrink_to_fit();
    assert_eq!(v.iter().sum::<u64>(), 999 * 1000 / 2);
    drop(v);

    for align in [16usize, 4096, 1 << 16, SEGMENT_SIZE, 2 * SEGMENT_SIZE] {
        let mut size = SMALL_MAX + 1;
        let l = Layout::from_size_align(size, align).unwrap();
        // SAFETY: non-zero size.
        let mut p = unsafe { GLOBAL.alloc_zeroed(l) };
        assert!(!p.is_null());
        assert_eq!(p as usize % align, 0);
        // SAFETY: `p` has `size` bytes.
        let zeroed = unsafe { std::slice::from_raw_parts(p, size) };
        assert!(zeroed.iter().all(|&b| b == 0));
        // SAFETY: `p` is live.
        unsafe { p.write_bytes(0x5A, size) };
        for new in [3 << 20, 40 << 20, 1 << 20, SMALL_MAX + 100, 64 << 20] {
            let l = Layout::from_size_align(size, align).unwrap();
            // SAFETY: live block, non-zero size.
            let q = unsafe { GLOBAL.realloc(p, l, new) };
            assert!(!q.is_null());
            assert_eq!(q as usize % align, 0);
            // SAFETY: `q` has at least min(size, new) bytes.
            let kept = unsafe { std::slice::from_raw_parts(q, size.min(new)) };
            assert!(
                kept.iter().all(|&b| b == 0x5A),
                "align {align} {size}->{new}"
            );
            // SAFETY: `q` has `new` bytes.
            unsafe { q.write_bytes(0x5A, new) };
            // SAFETY: `q` is live.
            assert!(unsafe { GLOBAL.inner.usable_size(q) } >= new);
            p = q;
            size = new;
        }
        // SAFETY: live block with this layout.
        unsafe { GLOBAL.dealloc(p, Layout::from_size_align(size, align).unwrap()) };
    }
    every_alignment();
    // Impossible sizes fail cleanly.
    let l = Layout::from_size_align(isize::MAX as usize - 4096, 8).unwrap();
    // SAFETY: non-zero size.
    assert!(unsafe { GLOBAL.alloc(l) }.is_null());
    let s = arena_alloc::total_stats();
    assert!(s.huge_allocations > before.stats.huge_allocations);
    assert_no_leak(&GLOBAL, &before);
}

/// A span block grown in place within its segment (128 KiB + 1 to 3 MiB), filled, freed:
/// the next zeroed block placed on that memory must read as zeros. (Growth that kept the
/// segment count once left the dirty accounting at the old size, so `alloc_zeroed`
/// cleared only the first 192 KiB.)
fn grown_in_place_then_zeroed() {
    let small = Layout::from_size_align(SMALL_MAX + 1, 16).unwrap();
    let big = 3 << 20;
    for _ in 0..4 {
        // SAFETY: non-zero size.
        let p = unsafe { GLOBAL.alloc_zeroed(small) };
        assert!(!p.is_null());
        // SAFETY: live block of `small`'s layout; non-zero new size.
        let q = unsafe { GLOBAL.realloc(p, small, big) };
        assert!(!q.is_null());
        // SAFETY: `q` has `big` bytes.
        unsafe { q.write_bytes(0x5A, big) };
        let grown = Layout::from_size_align(big, 16).unwrap();
        // SAFETY: live block of this layout.
        unsafe { GLOBAL.dealloc(q, grown) };
        // SAFETY: non-zero size.
        let z = unsafe { GLOBAL.alloc_zeroed(grown) };
        assert!(!z.is_null());
        // SAFETY: `z` has `big` bytes.
        let bytes = unsafe { std::slice::from_raw_parts(z, big) };
        assert!(
            bytes.iter().all(|&b| b == 0),
            "alloc_zeroed returned {} non-zero bytes (first at {:?}) after an in-place growth",
            bytes.iter().filter(|&&b| b != 0).count(),
            bytes.iter().position(|&b| b != 0)
        );
        // SAFETY: live block of this layout.
        unsafe { GLOBAL.dealloc(z, grown) };
    }
}

/// Every power-of-two alignment from 16 B to 32 segments, through `alloc`, `alloc_zeroed`
/// and `realloc` (grown in place or moved by mremap, and shrunk). Release builds of rustc
/// 1.95 once misplaced blocks aligned above a segment (see `huge_geometry`), so CI runs
/// this scenario with `--release` too.
fn every_alignment() {
    for shift in 4..=SEGMENT_SIZE.trailing_zeros() + 5 {
        let align = 1usize << shift;
        for zeroed in [false, true] {
            let size = SMALL_MAX + 1;
            let l = Layout::from_size_align(size, align).unwrap();
            let p = if zeroed {
                // SAFETY: non-zero size.
                unsafe { GLOBAL.alloc_zeroed(l) }
            } else {
                // SAFETY: non-zero size.
                unsafe { GLOBAL.alloc(l) }
            };
            assert!(!p.is_null(), "align {align}");
            assert_eq!(p as usize % align, 0, "align {align} zeroed {zeroed}");
            // SAFETY: `p` is live: the allocator finds its header from the pointer.
            let usable = unsafe { GLOBAL.inner.usable_size(p) };
            assert!(usable >= size, "align {align}");
            // SAFETY: `p` has `size` bytes.
            unsafe { p.write_bytes(0xA5, size) };
            let mut cur = (p, size);
            for new in [2 * SEGMENT_SIZE + 12345, SMALL_MAX + 7] {
                let l = Layout::from_size_align(cur.1, align).unwrap();
                // SAFETY: live block with layout `l`; non-zero size.
                let q = unsafe { GLOBAL.realloc(cur.0, l, new) };
                assert!(!q.is_null(), "align {align}");
                assert_eq!(q as usize % align, 0, "align {align} realloc to {new}");
                // SAFETY: `q` keeps the first min(old, new) bytes.
                let kept = unsafe { std::slice::from_raw_parts(q, cur.1.min(new)) };
                assert!(kept.iter().all(|&b| b == 0xA5), "align {align} -> {new}");
                // SAFETY: `q` has `new` bytes.
                unsafe { q.write_bytes(0xA5, new) };
                cur = (q, new);
            }
            // SAFETY: live block with this layout.
            unsafe { GLOBAL.dealloc(cur.0, Layout::from_size_align(cur.1, align).unwrap()) };
        }
    }
}

/// Freed spans stay dirty within the retain budget and are decommitted beyond it; both
/// may serve zeroed requests: those must read as zeros whatever the span held before, and
/// reused spans must keep what is written into them.
fn cache_reuse() {
    let n = 2 * arena_alloc::tuning::RETAIN_MIN / (1 << 20) + 4;
    for round in 0..3 {
        let l = Layout::from_size_align(1 << 20, 16).unwrap();
        let blocks: Vec<*mut u8> = (0..n)
            .map(|_| {
                // SAFETY: non-zero size.
                let p = unsafe { GLOBAL.alloc(l) };
                assert!(!p.is_null());
                // SAFETY: `p` has `l.size()` bytes.
                unsafe { p.write_bytes(0xEE, l.size()) };
                p
            })
            .collect();
        for p in blocks {
            // SAFETY: live block with layout `l`.
            unsafe { GLOBAL.dealloc(p, l) };
        }
        // Sizes from half the freed mappings to all of them, so cached ones are reused.
        for size in [
            (1 << 20) - 4096,
            600 << 10,
            (1 << 20) + 1,
            5 << 20,
            200 << 10,
        ] {
            let l = Layout::from_size_align(size, 16).unwrap();
            let zeroed: Vec<*mut u8> = (0..n)
                .map(|_| {
                    // SAFETY: non-zero size.
                    let p = unsafe { GLOBAL.alloc_zeroed(l) };
                    assert!(!p.is_null());
                    // SAFETY: `p` has `size` bytes.
                    let b = unsafe { std::slice::from_raw_parts(p, size) };
                    assert!(b.iter().all(|&x| x == 0), "round {round} size {size}");
                    // SAFETY: as above.
                    unsafe { p.write_bytes(0x77, size) };
                    p
                })
                .collect();
            for p in zeroed {
                // SAFETY: `p` has `size` bytes.
                let b = unsafe { std::slice::from_raw_parts(p, size) };
                assert!(b.iter().all(|&x| x == 0x77), "round {round} size {size}");
                // SAFETY: live block with layout `l`.
                unsafe { GLOBAL.dealloc(p, l) };
            }
        }
    }
}

fn main() {
    run("huge_allocations", scenario);
}
