//! Memory-system helpers: prefetch hints and zeroed line allocation (the crate's other
//! `unsafe`, beside `root`).

use crate::sync::AtomicU64;

/// Asks the CPU to start loading the cache line holding `w`. Never faults, changes nothing
/// observable; a no-op off x86-64 and under loom/Miri.
#[inline(always)]
pub(crate) fn prefetch(w: &AtomicU64) {
    #[cfg(all(target_arch = "x86_64", not(any(loom, miri))))]
    {
        use core::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        let p = w.as_ptr().cast::<i8>().cast_const();
        // SAFETY: `_mm_prefetch` needs SSE, which every x86-64 target has statically; a
        // prefetch is only a hint (it cannot fault or write), and `p` points into a live
        // allocation anyway.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(p) };
    }
    #[cfg(not(all(target_arch = "x86_64", not(any(loom, miri)))))]
    let _ = w;
}

/// `n` (at least one) cache lines of zeroed atomics in one zeroed allocation.
#[cfg(not(loom))]
pub(super) fn zeroed_lines(n: usize) -> Box<[super::Line]> {
    use std::alloc::{Layout, alloc_zeroed, handle_alloc_error};
    assert!(n > 0, "an array has at least one line");
    let layout = Layout::array::<super::Line>(n).expect("CobTree array size overflows");
    // SAFETY: `layout` has non-zero size (n >= 1 lines of 64 bytes).
    let p = unsafe { alloc_zeroed(layout) }.cast::<super::Line>();
    if p.is_null() {
        handle_alloc_error(layout);
    }
    let slice = core::ptr::slice_from_raw_parts_mut(p, n);
    // SAFETY: (1) `p` is a fresh allocation from the global allocator with exactly the
    // layout `Box<[Line]>` of length `n` uses, so the box may own and free it. (2) It is
    // fully initialized: a `Line` is `#[repr(C)]` around `[AtomicU64; 8]`, `AtomicU64` has
    // the in-memory representation of `u64`, all-zero bytes are a valid `u64`, and there is
    // no padding (size 64 = 8 * 8, asserted beside `Line`).
    unsafe { Box::from_raw(slice) }
}

/// The words of `lines` as one flat slice.
#[cfg(not(loom))]
#[inline(always)]
pub(super) fn flat(lines: &[super::Line]) -> &[AtomicU64] {
    let words = lines.len() * super::WORDS_PER_LINE;
    // SAFETY: a `Line` is `#[repr(C)]` around `[AtomicU64; WORDS_PER_LINE]` with no padding
    // (its size is asserted to be exactly `WORDS_PER_LINE` words), so `lines` is `words`
    // contiguous, initialized `AtomicU64`s; the pointer comes from the slice itself (its
    // provenance covers all of them) and the result borrows `lines`, so it cannot outlive it.
    unsafe { core::slice::from_raw_parts(lines.as_ptr().cast::<AtomicU64>(), words) }
}
