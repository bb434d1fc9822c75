//! Cache prefetch hints (the crate's second and last `unsafe`, beside `root`).

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
