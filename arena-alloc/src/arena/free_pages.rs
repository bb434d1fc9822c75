//! The free pages of an arena: resident ones first, and what an idle arena gives back
//! when another is about to touch new memory.
//!
//! ```text
//!  free_pages: [dirty][dirty][dirty] [clean][clean] ...   dirty_free = 3
//!               ^ fresh_page takes the head (a resident page while there is one)
//!  idle arena, trimmed: [dirty][dirty] [clean][clean][clean][clean]   (FREE_PAGES_DIRTY)
//! ```

use super::{ARENAS, ArenaState, retire_page};
use crate::class::NUM_CLASSES;
use crate::page::{self, PAGE_SIZE, Page};
use crate::sync::global::{AtomicUsize, Ordering};
use crate::sys;
use core::ptr;

/// Free (unformatted) pages that `trim_others` leaves resident in an idle arena; the
/// others are decommitted (`MADV_DONTNEED`). An arena's own frees keep every page they
/// empty resident (a page emptied and refilled at once, as in a producer/consumer, must
/// not fault in again).
pub const FREE_PAGES_DIRTY: u32 = 2;
/// Other arenas that one [`trim_others`] looks at (round robin).
const TRIM_OTHERS: usize = 4;
/// Arenas that have had a segment: `0..ARENAS_USED`.
static ARENAS_USED: AtomicUsize = AtomicUsize::new(0);

/// Notes that arena `idx` has a segment.
pub(super) fn note_arena_used(idx: usize) {
    ARENAS_USED.fetch_max(idx + 1, Ordering::Relaxed);
}

/// Every empty page of the class lists becomes a free page.
///
/// # Safety
/// The caller holds the arena lock.
unsafe fn retire_empty(st: &mut ArenaState) {
    for c in 0..NUM_CLASSES {
        let mut page = st.classes[c];
        while !page.is_null() {
            // SAFETY: the lock is held; listed pages are formatted descriptors.
            let next = unsafe { (*page).next };
            // SAFETY: as above.
            if unsafe { (*page).used } == 0 {
                // SAFETY: the lock is held; `page` is empty and in class list `c`.
                unsafe { retire_page(st, page, c) };
            }
            page = next;
        }
    }
}

/// Puts empty page `page` on the free pages, at their head (a formatted page is dirty:
/// the dirty ones come first, so the next page formatted is a resident one).
///
/// # Safety
/// The caller holds the arena lock; `page` is empty, unformatted (`PAGE_FREE`) and in no
/// list.
pub(super) unsafe fn push_free_page(st: &mut ArenaState, page: *mut Page) {
    // SAFETY: the lock is held and guards the descriptor.
    if unsafe { (*page).dirty } != 0 {
        st.dirty_free += 1;
        // SAFETY: the lock is held; the page is in no list.
        return unsafe { page::list_push(&mut st.free_pages, page) };
    }
    // A clean page goes after the dirty ones.
    let mut prev: *mut Page = ptr::null_mut();
    let mut cur = st.free_pages;
    // SAFETY: the lock is held; listed pages are free descriptors.
    while !cur.is_null() && unsafe { (*cur).dirty } != 0 {
        prev = cur;
        // SAFETY: as above.
        cur = unsafe { (*cur).next };
    }
    if prev.is_null() {
        // SAFETY: the lock is held; the page is in no list.
        return unsafe { page::list_push(&mut st.free_pages, page) };
    }
    // SAFETY: the lock is held; `prev` is listed, `page` is in no list.
    unsafe { page::list_insert_after(prev, page) };
}

/// Decommits the dirty free pages of an arena beyond the first [`FREE_PAGES_DIRTY`]
/// (they stay where they are: right after the kept ones, before the clean ones).
///
/// # Safety
/// The caller holds the arena lock.
unsafe fn trim_free(st: &mut ArenaState) {
    let mut kept = 0;
    let mut page = st.free_pages;
    // SAFETY: the lock is held; listed pages are free descriptors.
    while !page.is_null() && unsafe { (*page).dirty } != 0 {
        if kept < FREE_PAGES_DIRTY {
            kept += 1;
        } else {
            // SAFETY: as above.
            let start = unsafe { (*page).start };
            // SAFETY: no block of a free page is live, and its descriptor lies in page 0,
            // outside the range.
            unsafe { sys::decommit(start, PAGE_SIZE) };
            // SAFETY: as above (lock held).
            unsafe { (*page).dirty = 0 };
            st.dirty_free -= 1;
        }
        // SAFETY: as above.
        page = unsafe { (*page).next };
    }
}

/// If the arena has handed out no block since the last call (`trim_mark`), its empty
/// pages become free pages and its resident free pages beyond [`FREE_PAGES_DIRTY`] are
/// decommitted; `true` if so.
///
/// # Safety
/// The caller holds the arena lock.
unsafe fn trim_if_idle(st: &mut ArenaState) -> bool {
    let idle = st.trim_mark == st.allocs;
    st.trim_mark = st.allocs;
    if idle {
        // SAFETY: forwarded from the caller.
        unsafe { retire_empty(st) };
        // SAFETY: as above.
        unsafe { trim_free(st) };
    }
    idle
}

/// Called by arena `idx` (its lock held) when it is about to format a page on memory not
/// touched yet: of up to [`TRIM_OTHERS`] other arenas whose lock is free, those that have
/// handed out no block since the last such look are trimmed ([`trim_if_idle`]), so what
/// an arena whose threads went idle or exited holds does not add to the peak while this
/// one grows. (Trimming busy arenas too, or capping every arena's own free pages, made
/// mimalloc-bench's xmalloc-test decommit pages it reused at once: 3,500 `madvise` calls
/// in 3 s, 6-10x the faults.) Holds a second arena lock, taken with `try_lock` only
/// (never waits, so no lock order is needed).
#[cold]
pub(super) fn trim_others(idx: usize) {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let used = ARENAS_USED.load(Ordering::Relaxed);
    for _ in 0..TRIM_OTHERS.min(used.saturating_sub(1)) {
        let mut j = NEXT.fetch_add(1, Ordering::Relaxed) % used;
        if j == idx {
            j = (j + 1) % used;
        }
        let a = &ARENAS[j];
        if !a.lock.try_lock() {
            continue;
        }
        // SAFETY: arena `j`'s lock is held; the reference ends before the release.
        let st = unsafe { &mut *a.state.get() };
        // SAFETY: as above.
        unsafe { trim_if_idle(st) };
        if a.lock.release() {
            a.lock.wake();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arena::{ARENAS, MAX_HEAP_COUNT, alloc_small, ensure_ready, free};
    use crate::class::{SMALL_MAX, class_of};

    /// Dirty free pages of `st`, and whether they all come before the clean ones.
    fn dirty_free_pages(st: &ArenaState) -> (u32, bool) {
        let (mut dirty, mut ordered, mut seen_clean) = (0, true, false);
        let mut p = st.free_pages;
        while !p.is_null() {
            // SAFETY: the caller holds the lock; listed pages are free descriptors.
            let d = unsafe { (*p).dirty } != 0;
            if d {
                dirty += 1;
                ordered &= !seen_clean;
            }
            seen_clean |= !d;
            // SAFETY: as above.
            p = unsafe { (*p).next };
        }
        (dirty, ordered)
    }

    #[test]
    #[cfg_attr(miri, ignore = "mmap")]
    fn an_idle_arena_keeps_free_pages_dirty_up_to_the_cap() {
        ensure_ready();
        // An arena no other test of this binary uses.
        let idx = MAX_HEAP_COUNT - 1;
        let big = class_of(SMALL_MAX);
        let per_page = PAGE_SIZE / SMALL_MAX;
        let pages = 6;
        let blocks: Vec<*mut u8> = (0..pages * per_page)
            .map(|_| {
                let p = alloc_small(idx, big);
                assert!(!p.is_null());
                // SAFETY: a fresh block of SMALL_MAX bytes.
                unsafe { p.write_bytes(0xa5, SMALL_MAX) };
                p
            })
            .collect();
        // Every page's first block, then the rest: each page but the last empties below
        // the head of its list and becomes a free page, resident.
        for k in 0..per_page {
            for &p in blocks.iter().skip(k).step_by(per_page) {
                // SAFETY: each block is live and freed once.
                unsafe { free(p, idx) };
            }
        }
        let a = &ARENAS[idx];
        let st = a.acquire();
        let (dirty, ordered) = dirty_free_pages(st);
        assert!(dirty as usize >= pages - 1 && st.dirty_free == dirty && ordered);
        // The first look only marks the arena; the second finds it idle.
        // SAFETY: the lock is held.
        assert!(!unsafe { trim_if_idle(st) });
        assert_eq!(dirty_free_pages(st).0, dirty);
        // SAFETY: as above.
        assert!(unsafe { trim_if_idle(st) });
        let (left, ordered) = dirty_free_pages(st);
        assert!(left == FREE_PAGES_DIRTY && st.dirty_free == left && ordered);
        // The empty page at the class head became a free page too.
        assert!(st.classes[big].is_null());
        a.lock.unlock();
        // An arena that hands out a block is busy at the next look.
        let p = alloc_small(idx, big);
        assert!(!p.is_null());
        let st = a.acquire();
        // SAFETY: the lock is held.
        assert!(!unsafe { trim_if_idle(st) });
        a.lock.unlock();
        // SAFETY: `p` is live and freed once.
        unsafe { free(p, idx) };
    }
}
