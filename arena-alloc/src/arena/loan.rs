//! Loans of resident free pages between arenas.
//!
//! An arena that is about to format a page and has no resident free page of its own
//! borrows one from another arena rather than touching memory the process never used (or
//! that was given back to the OS). The page stays in its owner's segment; it moves to the
//! borrower for as long as it is in use there, and goes back when it empties:
//!
//! ```text
//!  owner O (segment S)                         borrower B
//!  free_pages: [p][q]..   --- borrow (B holds its lock, try_lock O) --->  classes[c]: [p]
//!  S.lent |= bit(p), S.used_pages += 1          p.holder = B, p in B.borrowed
//!
//!  O.returned (lock-free stack)  <--- give_back: p emptied in B, p.holder = O ---
//!  O's next drain: S.lent &= !bit(p), p back on O's free pages (resident)
//! ```
//!
//! A page's `holder` is the arena whose lock guards its descriptor and whose lists hold
//! it. It changes only while the page is free (no block of it live, cached or pending on
//! its thread-free list), under the holder's lock (and the owner's, for a loan), so every
//! free of one of its blocks, lock-free or not, reads a `holder` that stays put until the
//! block is back on the page. The owner keeps counting a lent page in its segment's
//! `used_pages` (the segment is never unmapped under a borrower) and reads nothing of its
//! descriptor until it comes back.
//!
//! mimalloc-bench's mstress is the case this is for: each round, one thread grows while
//! the other arena sits idle with the pages its thread just freed. Decommitting those
//! pages there and touching new memory here, as the idle-arena trim before this did, cost
//! three to four times glibc's page faults.

use super::free_pages::{arenas_used, note_arena_used, pick, take_free_page};
use super::state::{ARENAS, ArenaState, arena};
use super::upkeep::{drain_remote, list_insert, look_idle, take_returned};
use crate::page::{self, Page};
use crate::sync::unmodeled::{AtomicUsize, Ordering};
use core::ptr;

/// Resident free (unformatted) pages that an arena which is handing out blocks keeps when
/// another arena borrows from it (`super::loan`); an idle arena lends them all. An
/// arena's own frees keep every page they empty resident (a page emptied and refilled at
/// once, as in a producer/consumer, must not fault in again). Nothing decommits them but
/// `malloc_trim`: a page touched once stays resident until its segment is unmapped, so
/// this reserve is kept small (with 2, mimalloc-bench's mstress peaked 1-2 MiB higher:
/// the other arena touched new memory while these pages sat unused).
pub const LEND_RESERVE: u32 = 1;

/// Other arenas that one [`borrow`] looks at, at most (round robin).
const LOOKS: usize = 4;

/// Called by arena `idx` (its lock held, its state `st`) when it has no resident free
/// page and needs one for `class`: looks at up to [`LOOKS`] other arenas whose lock is
/// free (taken with `try_lock` only, so no lock order is needed) and borrows a resident
/// free page from the first that has one to spare: all of them when it has handed out no
/// block since the previous look, those beyond [`LEND_RESERVE`] otherwise (preferring one
/// that last held `class`, see `free_pages::pick`). Returns the page (free, in no list,
/// held by `idx`), or null; then the pages given back to `idx` meanwhile have been taken
/// back.
///
/// # Safety
/// The caller holds the lock of arena `idx`, whose state is `st`.
#[cold]
pub(super) unsafe fn borrow(st: &mut ArenaState, idx: usize, class: usize) -> *mut Page {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    // An arena with no segment of its own may hold borrowed pages: it counts as used from
    // its first borrow on.
    note_arena_used(idx);
    let used = arenas_used();
    for _ in 0..LOOKS.min(used.saturating_sub(1)) {
        let mut j = NEXT.fetch_add(1, Ordering::Relaxed) % used;
        if j == idx {
            j = (j + 1) % used;
        }
        // SAFETY: the caller holds arena `idx`'s lock; the page goes into its list below.
        let page = unsafe { lend(j, idx, class) };
        if !page.is_null() {
            // SAFETY: the page is held by `idx` now, whose lock the caller holds.
            unsafe { list_insert(st, page) };
            return page;
        }
    }
    // An idle arena looked at above may have given back empty pages it had borrowed
    // from this one.
    // SAFETY: the caller holds arena `idx`'s lock.
    unsafe { take_returned(arena(idx), st) };
    ptr::null_mut()
}

/// Arena `j` lends a resident free page (for `class`) to arena `idx` if its lock is free
/// (`try_lock`) and it has one to spare (see [`borrow`]); the page (free, in no list, held by `idx`)
/// or null. First `j` puts back its pending remote frees and takes back the pages given
/// back to it, and if it is idle, retires its empty pages.
///
/// # Safety
/// `j != idx`; the caller holds arena `idx`'s lock and puts the page in its `borrowed`
/// list before releasing it.
pub(super) unsafe fn lend(j: usize, idx: usize, class: usize) -> *mut Page {
    debug_assert_ne!(j, idx);
    let a = &ARENAS[j];
    if !a.lock.try_lock() {
        return ptr::null_mut();
    }
    // SAFETY: arena `j`'s lock is held; the reference ends before the release.
    let other = unsafe { &mut *a.state.get() };
    // Its pending remote frees first: they may empty pages (its threads may be gone).
    // SAFETY: as above.
    unsafe { drain_remote(a, other) };
    // SAFETY: as above.
    let keep = if unsafe { look_idle(other) } {
        0
    } else {
        LEND_RESERVE
    };
    let mut page = ptr::null_mut();
    if other.dirty_free > keep {
        // SAFETY: arena `j`'s lock is held; its free list holds a dirty page.
        page = unsafe { pick(other.free_pages, class) };
        // SAFETY: as above; `page` is in its free list.
        unsafe { take_free_page(other, page) };
        let seg = page::segment_of_page(page);
        // SAFETY: as above: the owner's lock guards `lent`.
        unsafe { (*seg).lent |= 1 << page::page_index(page) };
        // SAFETY: the page is free, and both its owner's lock and the borrower's are held.
        unsafe { (*page).holder = idx as u8 };
    }
    if a.lock.release() {
        a.lock.wake();
    }
    page
}
