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

/// `n` cache lines of zeroed atomics in one zeroed allocation.
#[cfg(not(loom))]
pub(super) fn zeroed_lines(n: usize) -> Box<[super::Line]> {
    let b: Box<[core::mem::MaybeUninit<super::Line>]> = Box::new_zeroed_slice(n);
    // SAFETY: a `Line` is `#[repr(C)]` around `[AtomicU64; 8]`, and `AtomicU64` has the
    // same in-memory representation as `u64`, for which all-zero bytes are a valid value;
    // there is no padding (size 64 = 8 * 8, asserted beside `Line`). So the zeroed memory
    // is a fully initialized `[Line]`.
    unsafe { b.assume_init() }
}
