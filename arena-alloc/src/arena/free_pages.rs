//! The free pages of an arena: resident ones first, and which arenas are idle.
//!
//! ```text
//!  free_pages: [dirty][dirty][dirty] [clean][clean] ...   dirty_free = 3
//!               ^ fresh_page takes the head (a resident page while there is one)
//! ```
//!
//! An arena about to touch new memory borrows a resident free page of another arena
//! first (`super::loan`): an idle arena lends all of its resident free pages, a busy one
//! those beyond [`LEND_RESERVE`].

use super::{ArenaState, retire_page};
use crate::class::NUM_CLASSES;
use crate::page::{self, PAGE_SIZE, Page};
use crate::sync::global::{AtomicUsize, Ordering};
use crate::sys;
use core::ptr;

/// Resident free (unformatted) pages that an arena which is handing out blocks keeps when
/// another arena borrows from it (`super::loan`); an idle arena lends them all. An
/// arena's own frees keep every page they empty resident (a page emptied and refilled at
/// once, as in a producer/consumer, must not fault in again). Nothing decommits them but
/// `malloc_trim`: a page touched once stays resident until its segment is unmapped, so
/// this reserve is kept small (with 2, mimalloc-bench's mstress peaked 1-2 MiB higher:
/// the other arena touched new memory while these pages sat unused).
pub const LEND_RESERVE: u32 = 1;
/// Empty small segments (no page in use) the process keeps mapped, over all arenas,
/// before an arena that has more than one unmaps one: their resident pages are reused or
/// lent before new memory is touched. With one per arena, mimalloc-bench's xmalloc-test
/// (producers and consumers whose live memory swings by megabytes) mapped and unmapped
/// about 400 segments in 3 s and faulted 350,000 times; with 4, 60 and 13,000.
pub const EMPTY_SEGMENTS_KEPT: usize = 4;
/// Empty small segments of all arenas.
static EMPTY_SEGMENTS: AtomicUsize = AtomicUsize::new(0);

/// Notes that a segment of the arena whose state is `st` has no page in use any more.
/// Returns whether one of them should be unmapped ([`EMPTY_SEGMENTS_KEPT`]).
///
/// # Safety
/// The caller holds the arena lock.
pub(super) unsafe fn segment_emptied(st: &mut ArenaState) -> bool {
    st.empty_segments += 1;
    let all = EMPTY_SEGMENTS.fetch_add(1, Ordering::Relaxed) + 1;
    st.empty_segments > 1 && all > EMPTY_SEGMENTS_KEPT
}

/// Notes that an empty segment of the arena whose state is `st` has a page in use again,
/// or was unmapped.
///
/// # Safety
/// The caller holds the arena lock.
pub(super) unsafe fn segment_no_longer_empty(st: &mut ArenaState) {
    st.empty_segments -= 1;
    EMPTY_SEGMENTS.fetch_sub(1, Ordering::Relaxed);
}

/// Arenas that have had a segment or borrowed a page: `0..ARENAS_USED`.
static ARENAS_USED: AtomicUsize = AtomicUsize::new(0);

/// Notes that arena `idx` has a segment or a borrowed page.
pub(super) fn note_arena_used(idx: usize) {
    ARENAS_USED.fetch_max(idx + 1, Ordering::Relaxed);
}

/// Arenas that have had a segment or borrowed a page are `0..arenas_used()`.
pub(super) fn arenas_used() -> usize {
    ARENAS_USED.load(Ordering::Relaxed)
}

/// Every empty page of the class lists becomes a free page (or goes back to its owner).
///
/// # Safety
/// The caller holds the arena lock.
pub(super) unsafe fn retire_empty(st: &mut ArenaState) {
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

/// Free pages [`pick`] looks at, at most.
const PICK_LOOKS: usize = 16;

/// The free page to format for `class`, from the list headed by `head` (not empty): among
/// the first [`PICK_LOOKS`] resident ones, one that last held blocks of `class` (its
/// resident part is what that class touched, see `page::release_page`), else the head
/// (resident if any is).
///
/// # Safety
/// The caller holds the lock of the arena whose free list `head` heads.
pub(super) unsafe fn pick(head: *mut Page, class: usize) -> *mut Page {
    let mut p = head;
    for _ in 0..PICK_LOOKS {
        // SAFETY: the lock is held; listed pages are free descriptors, the dirty ones
        // first; a free page's `class` is the one it was last formatted for.
        if p.is_null() || unsafe { (*p).dirty } == 0 {
            break;
        }
        // SAFETY: as above.
        if unsafe { (*p).class } as usize == class {
            return p;
        }
        // SAFETY: as above.
        p = unsafe { (*p).next };
    }
    head
}

/// Decommits every dirty free page of an arena (they stay where they are, clean);
/// `true` if there was one.
///
/// # Safety
/// The caller holds the arena lock.
pub(super) unsafe fn decommit_free(st: &mut ArenaState) -> bool {
    let mut released = false;
    let mut page = st.free_pages;
    // SAFETY: the lock is held; listed pages are free descriptors, the dirty ones first.
    while !page.is_null() && unsafe { (*page).dirty } != 0 {
        // SAFETY: as above.
        let start = unsafe { (*page).start };
        // SAFETY: no block of a free page is live, and its descriptor lies in page 0,
        // outside the range.
        unsafe { sys::decommit(start, PAGE_SIZE) };
        // SAFETY: as above (lock held).
        unsafe { (*page).dirty = 0 };
        // SAFETY: as above.
        unsafe { page::page_decommitted(page) };
        st.dirty_free -= 1;
        released = true;
        // SAFETY: as above.
        page = unsafe { (*page).next };
    }
    released
}

/// Whether the arena has handed out no block since the previous look (`idle_mark`); if
/// so, its empty pages become free pages (its lent ones go back to their owners).
///
/// # Safety
/// The caller holds the arena lock.
pub(super) unsafe fn look_idle(st: &mut ArenaState) -> bool {
    let idle = st.idle_mark == st.allocs;
    st.idle_mark = st.allocs;
    if idle {
        // SAFETY: forwarded from the caller.
        unsafe { retire_empty(st) };
    }
    idle
}

#[cfg(test)]
pub(super) mod tests {
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

    /// Arena `idx` fills `pages` pages of class `class` (blocks of `SMALL_MAX` bytes) and
    /// frees every page's first block, then the rest: each page but the last empties below
    /// the head of its list and becomes a free page, resident.
    pub(in crate::arena) fn fill_and_free(idx: usize, class: usize, pages: usize) {
        let per_page = PAGE_SIZE / SMALL_MAX;
        let blocks: Vec<*mut u8> = (0..pages * per_page)
            .map(|_| {
                let p = alloc_small(idx, class);
                assert!(!p.is_null());
                // SAFETY: a fresh block of SMALL_MAX bytes.
                unsafe { p.write_bytes(0xa5, SMALL_MAX) };
                p
            })
            .collect();
        for k in 0..per_page {
            for &p in blocks.iter().skip(k).step_by(per_page) {
                // SAFETY: each block is live and freed once.
                unsafe { free(p, idx) };
            }
        }
    }

    #[test]
    #[cfg_attr(miri, ignore = "mmap")]
    fn an_idle_arena_retires_its_empty_pages_and_trim_decommits_them() {
        ensure_ready();
        // An arena no other test of this binary uses.
        let idx = MAX_HEAP_COUNT - 1;
        let big = class_of(SMALL_MAX);
        let pages = 6;
        fill_and_free(idx, big, pages);
        let a = &ARENAS[idx];
        let st = a.acquire();
        let (dirty, ordered) = dirty_free_pages(st);
        assert!(dirty as usize >= pages - 1 && st.dirty_free == dirty && ordered);
        assert!(
            !st.classes[big].is_null(),
            "the emptied head page stays listed"
        );
        // The first look only marks the arena; the second finds it idle, and its empty
        // head page becomes a free page too.
        // SAFETY: the lock is held.
        assert!(!unsafe { look_idle(st) });
        assert!(!st.classes[big].is_null());
        // SAFETY: as above.
        assert!(unsafe { look_idle(st) });
        assert!(st.classes[big].is_null());
        let (all, ordered) = dirty_free_pages(st);
        assert!(all == dirty + 1 && st.dirty_free == all && ordered);
        // `malloc_trim`'s part: every dirty free page decommitted, once.
        // SAFETY: as above.
        assert!(unsafe { decommit_free(st) });
        assert_eq!((dirty_free_pages(st).0, st.dirty_free), (0, 0));
        // SAFETY: as above.
        assert!(!unsafe { decommit_free(st) });
        a.lock.unlock();
        // An arena that hands out a block is busy at the next look.
        let p = alloc_small(idx, big);
        assert!(!p.is_null());
        let st = a.acquire();
        // SAFETY: the lock is held.
        assert!(!unsafe { look_idle(st) });
        a.lock.unlock();
        // SAFETY: `p` is live and freed once.
        unsafe { free(p, idx) };
    }

    #[test]
    #[cfg_attr(miri, ignore = "mmap")]
    fn a_page_that_changes_class_gives_back_what_the_old_one_touched_and_pick_prefers_its_class() {
        ensure_ready();
        // An arena no other test of this binary uses.
        let idx = MAX_HEAP_COUNT - 8;
        let a = &ARENAS[idx];
        let (big, small) = (class_of(SMALL_MAX), class_of(64));
        let retire = || {
            let st = a.acquire();
            // SAFETY: the lock is held.
            unsafe { retire_empty(st) };
            a.lock.unlock();
        };
        // First use: a whole page of SMALL_MAX blocks, every byte written.
        let blocks: Vec<*mut u8> = (0..PAGE_SIZE / SMALL_MAX)
            .map(|_| alloc_small(idx, big))
            .collect();
        let page_start = blocks[0].map_addr(|x| x & !(PAGE_SIZE - 1));
        for &p in &blocks {
            assert!(!p.is_null() && p.map_addr(|x| x & !(PAGE_SIZE - 1)) == page_start);
            // SAFETY: a fresh block of SMALL_MAX bytes.
            unsafe { p.write_bytes(0xa5, SMALL_MAX) };
        }
        for &p in &blocks {
            // SAFETY: each block is live and freed once.
            unsafe { free(p, idx) };
        }
        retire();
        let far = page_start.wrapping_add(PAGE_SIZE / 2 + 8);
        // Second use, same class: one block, the first half. Freed, the page keeps what
        // the first use touched (the same class is likely to reach it again).
        let p = alloc_small(idx, big);
        assert_eq!(p, page_start, "the resident page is formatted again");
        // SAFETY: `p` is a live block; freed once.
        unsafe { free(p, idx) };
        retire();
        // SAFETY: the page is free and stays mapped; nobody uses its memory.
        let far_byte = unsafe { far.read_volatile() };
        assert_eq!(
            far_byte, 0xa5,
            "a page that keeps its class keeps its memory"
        );
        // Third use, another class: one 64-byte block. Freed, the page keeps its first OS
        // page; the rest is decommitted (reads zero again).
        let p = alloc_small(idx, small);
        assert_eq!(p, page_start, "the resident page is formatted again");
        // SAFETY: `p` is a live block; freed once.
        unsafe { free(p, idx) };
        retire();
        // SAFETY: as above.
        let far_byte = unsafe { far.read_volatile() };
        assert_eq!(far_byte, 0, "the other class's bytes were released");
        let near = page_start.wrapping_add(8);
        // SAFETY: as above.
        assert_eq!(unsafe { near.read_volatile() }, 0xa5);
        // A page that last held `big` is picked for `big` even below a page of another
        // class at the head of the free list.
        let b = alloc_small(idx, big);
        let q = alloc_small(idx, small);
        // SAFETY: live blocks, freed once.
        unsafe { free(b, idx) };
        retire();
        // SAFETY: as above.
        unsafe { free(q, idx) };
        retire();
        let st = a.acquire();
        let head = st.free_pages;
        // SAFETY: the lock is held; the head is a free descriptor.
        assert_eq!(unsafe { (*head).class } as usize, small);
        // SAFETY: as above.
        let picked = unsafe { pick(head, big) };
        // SAFETY: as above.
        assert!(picked != head && unsafe { (*picked).class } as usize == big);
        a.lock.unlock();
    }
}
