//! Realloc chains across sizes, classes, the huge threshold and back, on several threads,
//! with alignments above 16; contents and alignment are checked at every step.

mod common;
use arena_alloc::tuning::SMALL_MAX;
use common::*;
use std::alloc::{GlobalAlloc, Layout};

// Under Miri (no mmap, no rseq) the binary keeps `System` and its scenarios are skipped.
#[cfg_attr(not(miri), global_allocator)]
static GLOBAL: Counting = Counting::new(arena_alloc::ArenaAlloc::new());

fn fill(p: *mut u8, n: usize, seed: u8) {
    // SAFETY: the caller passes a live block of `n` bytes.
    let s = unsafe { std::slice::from_raw_parts_mut(p, n) };
    for (i, b) in s.iter_mut().enumerate() {
        *b = seed.wrapping_add(i as u8);
    }
}

fn check(p: *mut u8, n: usize, seed: u8) {
    // SAFETY: the caller passes a live block of `n` bytes.
    let s = unsafe { std::slice::from_raw_parts(p, n) };
    check_pattern(s, seed);
}

fn chain(t: u64) {
    let mut rng = Rng(1234 + t);
    for round in 0..60 {
        let align = 1usize << rng.below(13);
        let mut size = 1 + rng.below(64) as usize;
        let mut l = Layout::from_size_align(size, align).unwrap();
        // SAFETY: non-zero size.
        let mut p = unsafe { GLOBAL.alloc(l) };
        assert!(!p.is_null());
        fill(p, size, round as u8);
        for step in 0..24 {
            let new = match (step + round) % 6 {
                0 => size * 2 + 1,
                1 => size + 7,
                2 => (size / 3).max(1),
                3 => SMALL_MAX + 1 + rng.below(300_000) as usize,
                4 => 1 + rng.below(SMALL_MAX as u64) as usize,
                _ => 1 + rng.below(5000) as usize,
            };
            // SAFETY: `p` is live with layout `l`; `new` is non-zero.
            let q = unsafe { GLOBAL.realloc(p, l, new) };
            assert!(!q.is_null());
            assert_eq!(q as usize % align, 0, "align {align}");
            check(q, size.min(new), round as u8);
            fill(q, new, round as u8);
            p = q;
            size = new;
            l = Layout::from_size_align(size, align).unwrap();
        }
        // SAFETY: `p` is live with layout `l`.
        unsafe { GLOBAL.dealloc(p, l) };
    }
}

fn scenario() {
    let before = snapshot(&GLOBAL);
    let hs: Vec<_> = (0..4)
        .map(|t| std::thread::spawn(move || chain(t)))
        .collect();
    for h in hs {
        h.join().unwrap();
    }
    chain(99);
    assert_no_leak(&GLOBAL, &before);
}

fn main() {
    run("realloc_chains", scenario);
}
