//! The free pages of an arena: how many stay resident, and the empty pages idle classes
//! give up before a page is formatted on memory not touched yet.
//!
//! ```text
//!  free_pages: [dirty][dirty] [clean][clean][clean] ...   (dirty_free <= FREE_PAGES_DIRTY,
//!               ^ fresh_page takes the head                except right after a reclaim)
//! ```

use super::{ArenaState, retire_page};
use crate::class::NUM_CLASSES;
use crate::page::{self, PAGE_SIZE, Page};
use crate::sys;
use core::ptr;

/// Free (unformatted) pages of an arena that stay resident for the next page formatted;
/// a page emptied beyond them is decommitted (`MADV_DONTNEED`) first. Without a cap,
/// mimalloc-bench's mstress held 3-3.8 MiB of free pages at its peak (with 2:
/// 0.3-0.6 MiB; README, Memory).
pub const FREE_PAGES_DIRTY: u32 = 2;

/// Before a page is formatted on memory not touched yet: the empty page that another
/// class keeps at the head of its list (at most one each) becomes a free page (dirty, so
/// the next page formatted is one of them), so an idle class stops holding resident
/// memory that a growing one can use.
///
/// # Safety
/// The caller holds the arena lock.
#[cold]
pub(super) unsafe fn reclaim_empty(st: &mut ArenaState, except: usize) {
    for c in 0..NUM_CLASSES {
        let page = st.classes[c];
        // SAFETY: the lock is held; a listed page is a formatted descriptor.
        if c != except && !page.is_null() && unsafe { (*page).used } == 0 {
            // SAFETY: the lock is held; `page` is empty and heads class list `c`.
            unsafe { retire_page(st, page, c, false) };
        }
    }
}

/// Puts empty page `page` on the free pages: a dirty one at their head while fewer than
/// [`FREE_PAGES_DIRTY`] of them are dirty (or always, without `cap`); otherwise it is
/// decommitted first and goes after the dirty ones, which the next formats take first.
///
/// # Safety
/// The caller holds the arena lock; `page` is empty, unformatted (`PAGE_FREE`) and in no
/// list.
pub(super) unsafe fn push_free_page(st: &mut ArenaState, page: *mut Page, cap: bool) {
    // SAFETY: the lock is held and guards the descriptor.
    let dirty = unsafe { (*page).dirty } != 0;
    if dirty && (!cap || st.dirty_free < FREE_PAGES_DIRTY) {
        st.dirty_free += 1;
        // SAFETY: the lock is held; the page is in no list.
        return unsafe { page::list_push(&mut st.free_pages, page) };
    }
    if dirty {
        // SAFETY: the lock is held and guards the descriptor.
        let start = unsafe { (*page).start };
        // SAFETY: no block of the free page is live, and its descriptor lies in page 0,
        // outside the range.
        unsafe { sys::decommit(start, PAGE_SIZE) };
        // SAFETY: as above (lock held).
        unsafe { (*page).dirty = 0 };
    }
    // After the dirty ones (`dirty_free` of them at the head).
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arena::{ARENAS, MAX_HEAP_COUNT, alloc_small, ensure_ready, free};
    use crate::class::{SMALL_MAX, class_of};

    /// Dirty free pages of arena `idx` (and their count) and whether they all come before
    /// the clean ones.
    fn free_pages_of(idx: usize) -> (u32, u32, bool) {
        let a = &ARENAS[idx];
        let st = a.acquire();
        let (mut dirty, mut ordered, mut seen_clean) = (0, true, false);
        let mut p = st.free_pages;
        while !p.is_null() {
            // SAFETY: the lock is held; listed pages are free descriptors.
            let d = unsafe { (*p).dirty } != 0;
            if d {
                dirty += 1;
                ordered &= !seen_clean;
            }
            seen_clean |= !d;
            // SAFETY: as above.
            p = unsafe { (*p).next };
        }
        let counted = st.dirty_free;
        a.lock.unlock();
        (dirty, counted, ordered)
    }

    #[test]
    #[cfg_attr(miri, ignore = "mmap")]
    fn emptied_pages_beyond_the_cap_are_decommitted_and_idle_heads_reclaimed() {
        ensure_ready();
        // An arena no other test of this binary uses.
        let idx = MAX_HEAP_COUNT - 1;
        let big = class_of(SMALL_MAX);
        let per_page = PAGE_SIZE / SMALL_MAX;
        let blocks: Vec<*mut u8> = (0..6 * per_page)
            .map(|_| {
                let p = alloc_small(idx, big);
                assert!(!p.is_null());
                // SAFETY: a fresh block of SMALL_MAX bytes.
                unsafe { p.write_bytes(0xa5, SMALL_MAX) };
                p
            })
            .collect();
        // Every page's first block, then the rest: each page but the last empties below
        // the head of its list.
        for k in 0..per_page {
            for &p in blocks.iter().skip(k).step_by(per_page) {
                // SAFETY: each block is live and freed once.
                unsafe { free(p, idx) };
            }
        }
        // Five pages retired (the sixth stays at its class head), two kept resident.
        let (dirty, counted, ordered) = free_pages_of(idx);
        assert_eq!(dirty, FREE_PAGES_DIRTY);
        assert_eq!(counted, dirty);
        assert!(ordered, "a clean free page precedes a dirty one");
        // Use up the dirty free pages with another class, so the next format would
        // touch new memory: the idle class's empty head is taken instead.
        let other = class_of(SMALL_MAX / 2);
        let per_other = PAGE_SIZE / (SMALL_MAX / 2);
        let more: Vec<*mut u8> = (0..(FREE_PAGES_DIRTY as usize + 1) * per_other)
            .map(|_| alloc_small(idx, other))
            .collect();
        assert!(more.iter().all(|p| !p.is_null()));
        {
            let a = &ARENAS[idx];
            let st = a.acquire();
            let head = st.classes[big];
            a.lock.unlock();
            assert!(head.is_null(), "the idle class kept its empty page");
        }
        for &p in &more {
            // SAFETY: each block is live and freed once.
            unsafe { free(p, idx) };
        }
        let (dirty, counted, ordered) = free_pages_of(idx);
        assert!(dirty <= FREE_PAGES_DIRTY && counted == dirty && ordered);
    }

    #[test]
    #[cfg_attr(miri, ignore = "mmap")]
    fn a_page_emptied_at_its_class_head_does_not_sink_below_the_next() {
        ensure_ready();
        let idx = MAX_HEAP_COUNT - 2;
        let big = class_of(SMALL_MAX);
        let blocks: Vec<*mut u8> = (0..6 * (PAGE_SIZE / SMALL_MAX))
            .map(|_| alloc_small(idx, big))
            .collect();
        assert!(blocks.iter().all(|p| !p.is_null()));
        // Page by page: each one empties at the head of its list, where the next page's
        // first free puts that page.
        for &p in &blocks {
            // SAFETY: each block is live and freed once.
            unsafe { free(p, idx) };
        }
        let a = &ARENAS[idx];
        let st = a.acquire();
        let head = st.classes[big];
        // SAFETY: the lock is held; `head` is listed.
        let rest = unsafe { (*head).next };
        a.lock.unlock();
        assert!(
            rest.is_null(),
            "an empty page sank below the head of its list"
        );
        let (dirty, counted, ordered) = free_pages_of(idx);
        assert!(dirty == FREE_PAGES_DIRTY && counted == dirty && ordered);
    }
}
