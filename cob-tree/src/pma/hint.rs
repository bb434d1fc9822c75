//! Memory-system helpers: prefetch hints and zeroed line allocation (the crate's other
//! `unsafe`, beside `root`).

use crate::sync::AtomicU64;
#[cfg(not(loom))]
use core::ptr::NonNull;
#[cfg(not(loom))]
use std::alloc::{Layout, alloc_zeroed, dealloc, handle_alloc_error};

/// Asks the CPU to start loading the cache line holding word `i` of `ws`, where `i` may
/// lie past the end of `ws` (a descent prefetches blocks below the last level without a
/// bounds check): the address is only formed, never dereferenced.
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
pub(crate) fn prefetch_at(ws: &[AtomicU64], i: usize) {
    #[cfg(all(target_arch = "x86_64", not(any(loom, miri))))]
    {
        use core::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        let p = ws.as_ptr().wrapping_add(i).cast::<i8>();
        // SAFETY: `_mm_prefetch` needs SSE, which every x86-64 target has statically; a
        // prefetch is only a hint: it cannot fault or write, whatever address it is given,
        // and `wrapping_add` forms the address without any claim that it is in bounds.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(p) };
    }
    #[cfg(not(all(target_arch = "x86_64", not(any(loom, miri)))))]
    let _ = (ws, i);
}

/// `n` (at least one) cache lines of zeroed atomics, owned: one zeroed allocation from
/// the global allocator.
///
/// Not a `Box<[Line]>`: asking for 64-byte alignment makes `std`'s system allocator use
/// `posix_memalign` and then write every byte with zeros, which faults in every page of a
/// fresh array at once, in small pages. Asking for 16-byte alignment (and 48 spare bytes to
/// align by hand) gets `calloc`, which hands large arrays over as untouched zero pages, so
/// they can first be advised to use huge pages ([`advise_huge`]).
#[cfg(not(loom))]
pub(crate) struct Lines {
    /// The allocation exactly as the global allocator returned it.
    raw: NonNull<u8>,
    layout: Layout,
    /// `raw` rounded up to a cache line: the lines from here lie inside the allocation.
    lines: NonNull<super::Line>,
    /// The number of words (`AtomicU64`s) in the lines (`WORDS_PER_LINE` per line).
    words: usize,
}

// SAFETY: `Lines` owns its allocation exclusively (like `Box<[Line]>`, which is `Send` and
// `Sync` because `Line` is: it holds only atomics); nothing else points into it.
#[cfg(not(loom))]
unsafe impl Send for Lines {}
// SAFETY: as above; shared access goes through `&[AtomicU64]` views (`words`), i.e.
// through atomics only.
#[cfg(not(loom))]
unsafe impl Sync for Lines {}

#[cfg(not(loom))]
impl Lines {
    pub(super) fn zeroed(n: usize) -> Lines {
        assert!(n > 0, "an array has at least one line");
        const ALIGN: usize = 16;
        let bytes = n
            .checked_mul(super::CACHE_LINE)
            .and_then(|b| b.checked_add(super::CACHE_LINE - ALIGN))
            .expect("CobTree array size overflows");
        let layout = Layout::from_size_align(bytes, ALIGN).expect("CobTree array size overflows");
        // SAFETY: `layout` has non-zero size (at least one line).
        let raw = unsafe { alloc_zeroed(layout) };
        let Some(raw) = NonNull::new(raw) else {
            handle_alloc_error(layout)
        };
        let addr = raw.as_ptr().addr();
        let off = addr.next_multiple_of(super::CACHE_LINE) - addr;
        // SAFETY: `raw` is 16-aligned, so `off <= CACHE_LINE - ALIGN`, and
        // `off + n * CACHE_LINE <= bytes`: the result stays inside the allocation.
        let lines = unsafe { raw.add(off) }.cast::<super::Line>();
        advise_huge(lines.as_ptr().cast(), n * super::CACHE_LINE);
        Lines {
            raw,
            layout,
            lines,
            words: n * super::WORDS_PER_LINE,
        }
    }

    /// Bytes the allocation asked the global allocator for.
    pub(super) fn alloc_bytes(&self) -> usize {
        self.layout.size()
    }

    /// Words `start..start + len` of the lines, as one flat slice.
    ///
    /// # Panics
    /// If the range is not inside the lines.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub(super) fn words(&self, start: usize, len: usize) -> &[AtomicU64] {
        // Natively: one slice of everything, then an ordinary range index (which the
        // compiler merges with the caller's checks). Under Miri only the range itself is
        // borrowed: Miri retags all that a reference covers, so a whole-array slice per
        // access would cost the array's size at every access there.
        #[cfg(not(miri))]
        {
            &self.range(0, self.words)[start..start + len]
        }
        #[cfg(miri)]
        {
            self.range(start, len)
        }
    }

    /// Every word of the lines, as one flat slice (no range check: it is exactly the
    /// lines). Not under Miri, where a reference that covers the whole array costs its
    /// size at every access (see [`words`](Self::words)).
    #[cfg(not(miri))]
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub(super) fn all(&self) -> &[AtomicU64] {
        // SAFETY: as in `range` with `start = 0` and `len = total`: `lines` and the
        // `words` words after it lie inside the live, zero-initialised
        // allocation `self` owns, only ever changed through these atomics, and the borrow
        // is tied to `&self`.
        unsafe { core::slice::from_raw_parts(self.lines.as_ptr().cast::<AtomicU64>(), self.words) }
    }

    /// Words `start..start + len` (checked to lie inside the lines) as a slice.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn range(&self, start: usize, len: usize) -> &[AtomicU64] {
        let total = self.words;
        assert!(
            start <= total && len <= total - start,
            "word range {start}+{len} outside an array of {total} words"
        );
        // SAFETY: `lines` is 64-byte aligned and its lines (`total` words: a `Line` is
        // `#[repr(C)]` around `[AtomicU64; WORDS_PER_LINE]` with no padding, asserted
        // beside it) from it lie inside the live allocation `self` owns (see `zeroed`), and
        // `start <= total` was checked above, so the offset stays inside it.
        let first = unsafe { self.lines.as_ptr().cast::<AtomicU64>().add(start) };
        // SAFETY: `first` and the `len <= total - start` words after it are inside that
        // allocation (checked above). That memory came zeroed, all-zero bytes are a valid
        // `AtomicU64`, and it is only ever changed through these atomics; the borrow is
        // tied to `&self`, so it ends before `drop` frees the allocation.
        unsafe { core::slice::from_raw_parts(first, len) }
    }
}

#[cfg(not(loom))]
impl Drop for Lines {
    fn drop(&mut self) {
        // SAFETY: `raw` was returned by `alloc_zeroed(self.layout)` and is freed only here.
        unsafe { dealloc(self.raw.as_ptr(), self.layout) }
    }
}

/// The transparent huge page size on x86-64 Linux.
#[cfg(not(loom))]
const HUGE_PAGE: usize = 2 << 20;

/// Only arrays of at least 32 MiB are advised: the advice stays on the address range
/// after the array is freed, and glibc's `malloc` serves anything this large with its own
/// `mmap` (its threshold never rises above 32 MiB on 64-bit), which `free` unmaps, so the
/// advice cannot leak onto memory the allocator later hands to someone else.
#[cfg(not(loom))]
const ADVISE_MIN: usize = 32 << 20;

/// Asks Linux to back the whole 2 MiB pages inside `len` bytes at `p` with huge pages
/// (where THP is in `madvise` mode): a random access into a large array then costs fewer
/// TLB misses, and a fresh array faults once per 2 MiB instead of once per 4 KiB. Pages
/// that are already touched (memory the allocator recycled) keep their small pages. Only
/// a hint: any failure leaves everything as it was.
#[cfg(not(loom))]
fn advise_huge(p: *mut u8, len: usize) {
    #[cfg(all(target_os = "linux", not(miri)))]
    {
        let start = p.addr().next_multiple_of(HUGE_PAGE);
        let end = (p.addr() + len) & !(HUGE_PAGE - 1);
        if len >= ADVISE_MIN && end > start {
            // SAFETY: `[start, end)` lies inside `[p, p + len)`, a live allocation the
            // caller owns, so no other object shares those pages; `MADV_HUGEPAGE` changes
            // only how the range is backed, never its contents.
            unsafe {
                libc::madvise(
                    p.wrapping_add(start - p.addr()).cast(),
                    end - start,
                    libc::MADV_HUGEPAGE,
                )
            };
        }
    }
    #[cfg(not(all(target_os = "linux", not(miri))))]
    let _ = (p, len);
}
