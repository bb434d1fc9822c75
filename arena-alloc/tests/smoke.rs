//! Smoke and property tests against `System`'s contract, with `ArenaAlloc` as the global
//! allocator of this binary.

use arena_alloc::ArenaAlloc;
use arena_alloc::tuning::{MIN_BLOCK, SMALL_MAX};
use proptest::prelude::*;
use std::alloc::{GlobalAlloc, Layout};

// Under Miri (no mmap, no rseq) the binary keeps `System` and its scenarios are skipped.
#[cfg_attr(not(miri), global_allocator)]
static GLOBAL: ArenaAlloc = ArenaAlloc::new();

fn fill(p: *mut u8, n: usize, seed: u8) {
    for i in 0..n {
        // SAFETY: the caller passes a live block of at least `n` bytes.
        unsafe { p.wrapping_add(i).write(seed.wrapping_add(i as u8)) };
    }
}

fn check(p: *const u8, n: usize, seed: u8) {
    for i in 0..n {
        // SAFETY: the caller passes a live block of at least `n` bytes.
        let v = unsafe { p.wrapping_add(i).read() };
        assert_eq!(v, seed.wrapping_add(i as u8), "byte {i} of {n}");
    }
}

#[test]
#[cfg_attr(miri, ignore = "the allocator needs mmap/rseq FFI")]
fn every_small_size_is_usable_aligned_and_distinct() {
    let a = ArenaAlloc::new();
    let mut live = Vec::new();
    for size in 1..=4096usize {
        let l = Layout::from_size_align(size, 1).unwrap();
        // SAFETY: non-zero size.
        let p = unsafe { a.alloc(l) };
        assert!(!p.is_null());
        assert_eq!(p as usize % MIN_BLOCK, 0, "size {size}");
        // SAFETY: `p` is live.
        assert!(unsafe { a.usable_size(p) } >= size);
        fill(p, size, size as u8);
        live.push((p, l));
    }
    let mut ranges: Vec<(usize, usize)> = live
        .iter()
        .map(|&(p, l)| (p as usize, p as usize + l.size()))
        .collect();
    ranges.sort();
    for w in ranges.windows(2) {
        assert!(w[0].1 <= w[1].0, "overlap {w:?}");
    }
    for &(p, l) in &live {
        check(p, l.size(), l.size() as u8);
        // SAFETY: allocated above with `l`.
        unsafe { a.dealloc(p, l) };
    }
}

#[test]
#[cfg_attr(miri, ignore = "the allocator needs mmap/rseq FFI")]
fn large_sizes_and_every_alignment() {
    let a = ArenaAlloc::new();
    let sizes = [
        SMALL_MAX - 1,
        SMALL_MAX,
        SMALL_MAX + 1,
        200_000,
        1 << 20,
        (4 << 20) + 3,
        17 << 20,
    ];
    let mut align = 1;
    while align <= 1 << 16 {
        for &size in sizes.iter().chain([1usize, 8, 24, 100, 4096, 5000].iter()) {
            let l = Layout::from_size_align(size, align).unwrap();
            // SAFETY: non-zero size.
            let p = unsafe { a.alloc(l) };
            assert!(!p.is_null());
            assert_eq!(p as usize % align, 0, "size {size} align {align}");
            fill(p, size.min(8192), 3);
            // SAFETY: the last byte is inside the block.
            unsafe { p.wrapping_add(size - 1).write(7) };
            check(p, size.min(8192).min(size - 1), 3);
            // SAFETY: allocated above with `l`.
            unsafe { a.dealloc(p, l) };
        }
        align *= 2;
    }
}

#[test]
#[cfg_attr(miri, ignore = "the allocator needs mmap/rseq FFI")]
fn alignment_beyond_a_segment() {
    let a = ArenaAlloc::new();
    for align in [1usize << 22, 1 << 23] {
        for size in [1usize, 5000, 3 << 20] {
            let l = Layout::from_size_align(size, align).unwrap();
            // SAFETY: non-zero size.
            let p = unsafe { a.alloc(l) };
            assert!(!p.is_null());
            assert_eq!(p as usize % align, 0);
            fill(p, size.min(4096), 9);
            // SAFETY: live block, new size non-zero.
            let q = unsafe { a.realloc(p, l, size * 3) };
            assert_eq!(q as usize % align, 0);
            check(q, size.min(4096), 9);
            // SAFETY: reallocated above.
            unsafe { a.dealloc(q, Layout::from_size_align(size * 3, align).unwrap()) };
        }
    }
}

#[test]
#[cfg_attr(miri, ignore = "the allocator needs mmap/rseq FFI")]
fn zeroed_memory_is_zero_even_after_reuse() {
    let a = ArenaAlloc::new();
    for size in [
        1usize,
        16,
        17,
        100,
        1000,
        4096,
        70_000,
        SMALL_MAX + 10,
        1 << 20,
    ] {
        let l = Layout::from_size_align(size, 8).unwrap();
        // SAFETY: non-zero size.
        let p = unsafe { a.alloc(l) };
        fill(p, size, 0xAB);
        // SAFETY: allocated above.
        unsafe { a.dealloc(p, l) };
        // SAFETY: non-zero size.
        let z = unsafe { a.alloc_zeroed(l) };
        // SAFETY: `z` is live with `size` bytes.
        let s = unsafe { std::slice::from_raw_parts(z, size) };
        assert!(s.iter().all(|&b| b == 0), "size {size}");
        // SAFETY: allocated above.
        unsafe { a.dealloc(z, l) };
    }
}

fn cases() -> u32 {
    if cfg!(miri) { 4 } else { 64 }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    /// realloc keeps contents and alignment, like `System`'s contract says.
    #[test]
    #[cfg_attr(miri, ignore = "the allocator needs mmap/rseq FFI")]
    fn realloc_preserves_contents_and_alignment(
        steps in proptest::collection::vec((1usize..300_000, 0u32..13), 1..12)
    ) {
        let a = ArenaAlloc::new();
        let (first, shift) = steps[0];
        let align = 1usize << shift;
        let mut l = Layout::from_size_align(first, align).unwrap();
        // SAFETY: non-zero size.
        let mut p = unsafe { a.alloc(l) };
        prop_assert!(!p.is_null());
        fill(p, first, 1);
        for &(size, _) in &steps[1..] {
            // SAFETY: live block with layout `l`, non-zero new size.
            let q = unsafe { a.realloc(p, l, size) };
            prop_assert!(!q.is_null());
            prop_assert_eq!(q as usize % align, 0);
            check(q, l.size().min(size), 1);
            fill(q, size, 1);
            p = q;
            l = Layout::from_size_align(size, align).unwrap();
        }
        // SAFETY: live block with layout `l`.
        unsafe { a.dealloc(p, l) };
    }

    /// Live blocks never overlap, and a model Vec of contents stays intact.
    #[test]
    #[cfg_attr(miri, ignore = "the allocator needs mmap/rseq FFI")]
    fn live_blocks_do_not_overlap(ops in proptest::collection::vec((0usize..3000, any::<bool>()), 1..200)) {
        let mut live: Vec<Vec<u8>> = Vec::new();
        for (i, &(size, free)) in ops.iter().enumerate() {
            if free && !live.is_empty() {
                let v = live.swap_remove(i % live.len());
                prop_assert!(v.iter().all(|&b| b == v.len() as u8));
            } else {
                live.push(vec![size as u8; size]);
            }
        }
        let mut ranges: Vec<(usize, usize)> = live
            .iter()
            .filter(|v| !v.is_empty())
            .map(|v| (v.as_ptr() as usize, v.as_ptr() as usize + v.len()))
            .collect();
        ranges.sort();
        for w in ranges.windows(2) {
            prop_assert!(w[0].1 <= w[1].0);
        }
        for v in &live {
            prop_assert!(v.iter().all(|&b| b == v.len() as u8));
        }
    }
}
