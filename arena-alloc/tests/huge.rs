//! Huge blocks: direct mappings, growth by mremap (in place or moved), shrinking, zeroed
//! memory, alignments up to and beyond a segment; statistics return to zero.

mod common;
use arena_alloc::{SEGMENT_SIZE, SMALL_MAX};
use common::*;
use std::alloc::{GlobalAlloc, Layout};

// Under Miri (no mmap, no rseq) the binary keeps `System` and its scenarios are skipped.
#[cfg_attr(not(miri), global_allocator)]
static GLOBAL: Counting = Counting::new(arena_alloc::ArenaAlloc::new());

fn scenario() {
    let before = snapshot(&GLOBAL);
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
    // Impossible sizes fail cleanly.
    let l = Layout::from_size_align(isize::MAX as usize - 4096, 8).unwrap();
    // SAFETY: non-zero size.
    assert!(unsafe { GLOBAL.alloc(l) }.is_null());
    let s = arena_alloc::total_stats();
    assert!(s.huge_allocations > before.stats.huge_allocations);
    assert_no_leak(&GLOBAL, &before);
}

fn main() {
    run("huge_allocations", scenario);
}
