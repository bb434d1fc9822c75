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

use super::state::ArenaState;
use crate::huge;
use crate::page::{self, PAGE_SIZE, Page, SegmentHeader};
use crate::sync::unmodeled::{AtomicUsize, Ordering};
use crate::sys;
use core::ptr;

/// Empty small segments (no page in use) the process keeps mapped, over all arenas,
/// whatever else: their resident pages are reused or lent before new memory is touched.
/// With one per arena, mimalloc-bench's xmalloc-test (producers and consumers whose live
/// memory swings by megabytes) mapped and unmapped about 400 segments in 3 s and faulted
/// 350,000 times; with 4, 60 and 13,000. Beyond them, empty segments stay while the
/// segments in use plus the empty ones stay within the most in use at once in this window
/// of emptied segments or the one before (a window ends after `max(its peak,
/// EMPTY_SEGMENTS_KEPT)` segments emptied): a program that frees all its small blocks in a
/// burst and allocates as many again (of any size class) finds its pages resident, and one
/// that shrank for good unmaps the rest after emptying about twice its new count. With 4
/// alone, 16,000 live blocks of 8 KiB freed and allocated again faulted every page in
/// again: 3.3 us a block against 75 ns for 1,000. Big blocks about to touch new memory
/// unmap empty segments first, all but one per arena (`super::release_empty_segments`).
pub const EMPTY_SEGMENTS_KEPT: usize = 4;

/// Empty small segments of all arenas.
static EMPTY_SEGMENTS: AtomicUsize = AtomicUsize::new(0);
/// Small segments mapped, of all arenas.
static MAPPED_SEGMENTS: AtomicUsize = AtomicUsize::new(0);
/// The most segments in use at once seen when one emptied, in this window and the one
/// before (see [`EMPTY_SEGMENTS_KEPT`]); updated without a common lock, so approximate.
static USED_PEAK: [AtomicUsize; 2] = [AtomicUsize::new(0), AtomicUsize::new(0)];
/// Segments emptied in this window.
static EMPTIED: AtomicUsize = AtomicUsize::new(0);

/// Notes that a small segment was mapped.
pub(super) fn segment_mapped() {
    MAPPED_SEGMENTS.fetch_add(1, Ordering::Relaxed);
}

/// Forgets the recent peak of segments in use (`malloc_trim`).
pub(super) fn forget_peak() {
    USED_PEAK[0].store(0, Ordering::Relaxed);
    USED_PEAK[1].store(0, Ordering::Relaxed);
    EMPTIED.store(0, Ordering::Relaxed);
}

/// Empty small segments of all arenas.
pub(super) fn empty_segments() -> usize {
    EMPTY_SEGMENTS.load(Ordering::Relaxed)
}

/// Notes that a segment of the arena whose state is `st` has no page in use any more (or
/// was just mapped: `fresh`). Returns whether one of them should be unmapped (see
/// [`EMPTY_SEGMENTS_KEPT`]).
///
/// # Safety
/// The caller holds the arena lock.
pub(super) unsafe fn segment_emptied(st: &mut ArenaState, fresh: bool) -> bool {
    st.empty_segments += 1;
    let all = EMPTY_SEGMENTS.fetch_add(1, Ordering::Relaxed) + 1;
    if fresh {
        return false;
    }
    let used = MAPPED_SEGMENTS.load(Ordering::Relaxed).saturating_sub(all);
    let peak0 = USED_PEAK[0].load(Ordering::Relaxed);
    if EMPTIED.fetch_add(1, Ordering::Relaxed) + 1 > peak0.max(EMPTY_SEGMENTS_KEPT) {
        EMPTIED.store(1, Ordering::Relaxed);
        USED_PEAK[1].store(peak0, Ordering::Relaxed);
        USED_PEAK[0].store(0, Ordering::Relaxed);
    }
    // In use before this one emptied.
    USED_PEAK[0].fetch_max(used + 1, Ordering::Relaxed);
    let peak = USED_PEAK[0]
        .load(Ordering::Relaxed)
        .max(USED_PEAK[1].load(Ordering::Relaxed));
    st.empty_segments > 1 && all > EMPTY_SEGMENTS_KEPT.max(peak.saturating_sub(used))
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

/// Takes free page `page` off the free list of the arena whose state is `st`: it counts
/// as a page in use of its segment from now on.
///
/// # Safety
/// The caller holds the arena lock; `page` is in its free list.
pub(super) unsafe fn take_free_page(st: &mut ArenaState, page: *mut Page) {
    // SAFETY: the lock is held; `page` is in the free list.
    unsafe { page::list_remove(&mut st.free_pages, page) };
    // SAFETY: the lock is held and guards the descriptor.
    if unsafe { (*page).dirty } != 0 {
        st.dirty_free -= 1;
    }
    // SAFETY: `page` is a free page of a segment of this locked arena.
    let used = unsafe { page::used_pages(page::segment_of_page(page)) };
    let n = used.load(Ordering::Relaxed);
    if n == 0 {
        // SAFETY: the lock is held.
        unsafe { segment_no_longer_empty(st) };
    }
    used.store(n + 1, Ordering::Relaxed);
}

/// Puts empty page `page` of one of this arena's segments on the free pages; unmaps its
/// segment if that leaves more than one segment of the arena empty.
///
/// # Safety
/// The caller holds the arena lock (whose state is `st`); `page` is a free, empty page of
/// one of its segments, counted in its `used_pages`, in no list.
pub(super) unsafe fn page_freed(st: &mut ArenaState, page: *mut Page) {
    // SAFETY: forwarded from the caller.
    unsafe { push_free_page(st, page) };
    let seg = page::segment_of_page(page);
    // SAFETY: the segment is live (it holds `page`).
    let used = unsafe { page::used_pages(seg) };
    let n = used.load(Ordering::Relaxed) - 1;
    used.store(n, Ordering::Relaxed);
    // SAFETY: the lock is held (both calls below).
    if n == 0 && unsafe { segment_emptied(st, false) } {
        // SAFETY: the lock is held; the segment is this arena's and empty.
        unsafe { unmap_empty_segment(st, seg) };
    }
}

/// Unmaps empty segment `seg` of the arena whose state is `st` (but its header page, see
/// `huge::bury_segment`); in hardened mode segments stay mapped, so that a late double
/// free reads a mapped header. Returns whether it was unmapped.
///
/// # Safety
/// The caller holds the arena lock; `seg` is one of its segments, counted empty, with no
/// page in use.
pub(super) unsafe fn unmap_empty_segment(st: &mut ArenaState, seg: *mut SegmentHeader) -> bool {
    if crate::config::hardened() {
        return false;
    }
    for p in page::pages_of(seg) {
        // SAFETY: the lock is held; every page of an empty segment is free, so in the free
        // list.
        unsafe { page::list_remove(&mut st.free_pages, p) };
        // SAFETY: as above.
        if unsafe { (*p).dirty } != 0 {
            st.dirty_free -= 1;
        }
    }
    // SAFETY: the lock is held.
    unsafe { segment_no_longer_empty(st) };
    // SAFETY: the lock is held; `seg` is in the arena's segment list.
    unsafe { unlink_segment(st, seg) };
    MAPPED_SEGMENTS.fetch_sub(1, Ordering::Relaxed);
    // SAFETY: no page of the segment is in use or listed any more, and nothing refers to
    // the segment: it is unmapped but its header page.
    unsafe { huge::bury_segment(seg) };
    true
}

/// Removes `seg` from the arena's segment list.
///
/// # Safety
/// The arena lock is held and `seg` is in `st.segments`.
unsafe fn unlink_segment(st: &mut ArenaState, seg: *mut SegmentHeader) {
    // SAFETY: `seg` is live and its `next` guarded by the lock.
    let after = unsafe { (*seg).next };
    if st.segments == seg {
        st.segments = after;
        return;
    }
    let mut cur = st.segments;
    loop {
        // SAFETY: every listed header is live and guarded by the lock.
        let next = unsafe { (*cur).next };
        if next == seg {
            // SAFETY: as above.
            unsafe { (*cur).next = after };
            return;
        }
        cur = next;
    }
}
