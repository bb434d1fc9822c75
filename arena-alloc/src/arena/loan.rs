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

use super::free_pages::{LEND_RESERVE, arenas_used, look_idle, note_arena_used, pick};
use super::{ARENAS, Arena, ArenaState, arena, drain_remote, page_freed, take_free_page};
use crate::page::{self, Page};
use crate::remote;
use crate::sync::global::{AtomicUsize, Ordering};
use core::ptr;

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
unsafe fn lend(j: usize, idx: usize, class: usize) -> *mut Page {
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

/// Gives emptied page `page`, lent to the arena whose state is `st`, back to its owner:
/// onto the owner's stack of returned pages (no lock), which the owner's next drain takes.
///
/// # Safety
/// The caller holds the lock of the arena `page` is lent to (whose state is `st`); the
/// page is empty, free (`PAGE_FREE`) and in no list but `st.borrowed`.
pub(super) unsafe fn give_back(st: &mut ArenaState, page: *mut Page) {
    // SAFETY: forwarded from the caller.
    unsafe { list_remove(st, page) };
    let seg = page::segment_of_page(page);
    // SAFETY: the segment stays mapped while the page counts as used in it; `owner`
    // never changes.
    let owner = unsafe { (*seg).owner } as usize;
    // SAFETY: the page is free and its holder's lock is held. From the push below the
    // owner guards it (the push publishes this write).
    unsafe { (*page).holder = owner as u8 };
    let words = page::remote_words(page);
    // SAFETY: as above: page 0 of the segment is mapped.
    let next = unsafe { &(*words).loan_next };
    remote::push(&arena(owner).returned.0, page.cast(), |old| {
        next.store(old, Ordering::Relaxed)
    });
}

/// Puts the pages other arenas gave back to `a` on its free pages (resident).
///
/// # Safety
/// The caller holds the lock of `a`, whose state is `st`.
pub(super) unsafe fn take_returned(a: &Arena, st: &mut ArenaState) {
    let mut pg = remote::take_all(&a.returned.0);
    while !pg.is_null() {
        let page = pg.cast::<Page>();
        // The link is read first: putting the page back may unmap its segment.
        // SAFETY: the page still counts as used in its segment, which is mapped.
        let next = unsafe {
            (*page::remote_words(page))
                .loan_next
                .load(Ordering::Relaxed)
        };
        let seg = page::segment_of_page(page);
        // SAFETY: the lock of the page's owner (`a`) is held: it guards `lent`.
        unsafe { (*seg).lent &= !(1 << page::page_index(page)) };
        // SAFETY: the page was given back to `a`, its owner, whose lock is held: it is
        // free, empty, counted in its segment's `used_pages` and in no list.
        unsafe { page_freed(st, page) };
        pg = next;
    }
}

/// Bytes in live blocks of the pages lent to the arena whose state is `st`.
///
/// # Safety
/// The caller holds that arena's lock.
pub(super) unsafe fn borrowed_bytes(st: &ArenaState) -> usize {
    let mut bytes = 0;
    let mut p = st.borrowed;
    while !p.is_null() {
        // SAFETY: the lock of the pages' holder is held.
        bytes += unsafe { page::bytes_in_use(p) };
        // SAFETY: as above; listed pages' segments are mapped.
        p = unsafe { (*page::remote_words(p)).loan_next.load(Ordering::Relaxed) }.cast();
    }
    bytes
}

/// Links `page` at the head of `st.borrowed`.
///
/// # Safety
/// The caller holds the lock of the arena whose state is `st`, which holds `page`.
unsafe fn list_insert(st: &mut ArenaState, page: *mut Page) {
    let old = st.borrowed;
    let w = page::remote_words(page);
    // SAFETY: the page's segment is mapped; its loan links are guarded by the held lock.
    unsafe { (*w).loan_prev.store(ptr::null_mut(), Ordering::Relaxed) };
    // SAFETY: as above.
    unsafe { (*w).loan_next.store(old.cast(), Ordering::Relaxed) };
    if !old.is_null() {
        // SAFETY: `old` is listed, held by the same arena.
        unsafe {
            (*page::remote_words(old))
                .loan_prev
                .store(page.cast(), Ordering::Relaxed)
        };
    }
    st.borrowed = page;
}

/// Unlinks `page` from `st.borrowed`.
///
/// # Safety
/// The caller holds the lock of the arena whose state is `st`; `page` is in its list.
unsafe fn list_remove(st: &mut ArenaState, page: *mut Page) {
    let w = page::remote_words(page);
    // SAFETY: the page's segment is mapped; its loan links are guarded by the held lock.
    let prev: *mut Page = unsafe { (*w).loan_prev.load(Ordering::Relaxed) }.cast();
    // SAFETY: as above.
    let next: *mut Page = unsafe { (*w).loan_next.load(Ordering::Relaxed) }.cast();
    if prev.is_null() {
        st.borrowed = next;
    } else {
        // SAFETY: `prev` is listed, held by the same arena.
        unsafe {
            (*page::remote_words(prev))
                .loan_next
                .store(next.cast(), Ordering::Relaxed)
        };
    }
    if !next.is_null() {
        // SAFETY: `next` is listed, held by the same arena.
        unsafe {
            (*page::remote_words(next))
                .loan_prev
                .store(prev.cast(), Ordering::Relaxed)
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arena::free_pages::retire_empty;
    use crate::arena::free_pages::tests::fill_and_free;
    use crate::arena::{
        MAX_HEAP_COUNT, alloc_small, ensure_ready, free, install_page, small_owner_class,
        small_snapshot,
    };
    use crate::class::{SMALL_MAX, class_of};
    use crate::page::PAGE_SIZE;

    /// Arena `owner` fills `pages` pages of `class` and frees them: its dirty free pages.
    fn resident_free_pages(owner: usize, class: usize, pages: usize) -> u32 {
        fill_and_free(owner, class, pages);
        let st = ARENAS[owner].acquire();
        let dirty = st.dirty_free;
        ARENAS[owner].lock.unlock();
        dirty
    }

    fn lent_bit(page: *mut Page) -> bool {
        let seg = page::segment_of_page(page);
        // SAFETY: test-only read; no other thread uses these arenas.
        unsafe { (*seg).lent & (1 << page::page_index(page)) != 0 }
    }

    #[test]
    #[cfg_attr(miri, ignore = "mmap")]
    fn a_lent_page_serves_the_borrower_and_goes_back_to_its_owner_once_empty() {
        ensure_ready();
        // Arenas no other test of this binary uses.
        let (owner, borrower) = (MAX_HEAP_COUNT - 3, MAX_HEAP_COUNT - 4);
        let big = class_of(SMALL_MAX);
        let dirty = resident_free_pages(owner, big, 6);
        assert!(dirty >= 5, "{dirty} resident free pages");
        let owner_bytes = small_snapshot(owner).unwrap().bytes_in_use;
        let borrower_bytes = small_snapshot(borrower).unwrap().bytes_in_use;

        let (o, b) = (&ARENAS[owner], &ARENAS[borrower]);
        let st = b.acquire();
        // SAFETY: the borrower's lock is held; the page goes into its list at once.
        let page = unsafe { lend(owner, borrower, big) };
        assert!(!page.is_null());
        // SAFETY: as above.
        unsafe { list_insert(st, page) };
        // SAFETY: test-only reads of a page held by the locked borrower.
        assert_eq!(unsafe { (*page).holder } as usize, borrower);
        let seg = page::segment_of_page(page);
        // SAFETY: as above; `owner` never changes.
        let seg_owner = unsafe { (*seg).owner } as usize;
        assert_eq!(seg_owner, owner);
        assert!(lent_bit(page));
        // SAFETY: the borrower's lock is held and the page is free.
        unsafe { install_page(st, page, big) };
        b.lock.unlock();

        // Its blocks are the borrower's: they count there, not with the owner, and a free
        // from any thread goes to the borrower.
        let p = alloc_small(borrower, big);
        // SAFETY: as above.
        assert_eq!(p.addr() & !(PAGE_SIZE - 1), unsafe { (*page).start }.addr());
        // SAFETY: `p` is a live small block.
        assert_eq!(unsafe { small_owner_class(p) }, Some((borrower, big)));
        assert_eq!(
            small_snapshot(borrower).unwrap().bytes_in_use,
            borrower_bytes + SMALL_MAX
        );
        assert_eq!(small_snapshot(owner).unwrap().bytes_in_use, owner_bytes);
        // SAFETY: `p` is live and freed once (as a free from the owner's CPU).
        unsafe { free(p, owner) };

        // Empty, it still heads the borrower's class list; retired, it goes back.
        let st = b.acquire();
        assert!(!st.borrowed.is_null());
        // SAFETY: the borrower's lock is held.
        unsafe { retire_empty(st) };
        assert!(st.borrowed.is_null() && st.classes[big].is_null());
        b.lock.unlock();
        // SAFETY: test-only read; the page is free on the owner's returned stack.
        assert_eq!(unsafe { (*page).holder } as usize, owner);
        let st = o.acquire();
        let before = st.dirty_free;
        // SAFETY: the owner's lock is held.
        unsafe { take_returned(o, st) };
        assert_eq!(st.dirty_free, before + 1, "the page came back resident");
        assert!(!lent_bit(page));
        o.lock.unlock();
    }

    #[test]
    #[cfg_attr(miri, ignore = "mmap")]
    fn a_busy_arena_keeps_free_pages_dirty_an_idle_one_lends_them_all() {
        ensure_ready();
        let (owner, borrower) = (MAX_HEAP_COUNT - 5, MAX_HEAP_COUNT - 6);
        let big = class_of(SMALL_MAX);
        let dirty = resident_free_pages(owner, big, 7);
        assert!(dirty > LEND_RESERVE + 1, "{dirty} resident free pages");
        let (o, b) = (&ARENAS[owner], &ARENAS[borrower]);
        let st = b.acquire();
        // Lends to the locked borrower until the owner has nothing to spare; `busy`: the
        // owner hands out a block between looks.
        let lend_all = |st: &mut ArenaState, busy: bool, lent: &mut Vec<*mut Page>| loop {
            // SAFETY: the borrower's lock is held; the page goes into its list at once.
            let page = unsafe { lend(owner, borrower, big) };
            if page.is_null() {
                break;
            }
            // SAFETY: as above.
            unsafe { list_insert(st, page) };
            lent.push(page);
            if busy {
                let so = o.acquire();
                so.allocs += 1;
                o.lock.unlock();
            }
        };
        let mut lent = Vec::new();
        // Busy at every look: it lends down to LEND_RESERVE.
        lend_all(st, true, &mut lent);
        assert_eq!(lent.len() as u32, dirty - LEND_RESERVE);
        // Idle (nothing handed out since the last look): the rest, and its empty head
        // page, retired at that look.
        lend_all(st, false, &mut lent);
        assert_eq!(lent.len() as u32, dirty + 1);
        assert!(lent.iter().all(|&p| lent_bit(p)));
        let so = o.acquire();
        assert_eq!((so.dirty_free, so.classes[big]), (0, ptr::null_mut()));
        o.lock.unlock();
        // Given back unused (as if emptied): all resident at the owner again.
        for &page in &lent {
            // SAFETY: the borrower's lock is held; the page is free, only in its list.
            unsafe { give_back(st, page) };
        }
        assert!(st.borrowed.is_null());
        b.lock.unlock();
        let so = o.acquire();
        // SAFETY: the owner's lock is held.
        unsafe { take_returned(o, so) };
        assert_eq!(so.dirty_free, dirty + 1);
        o.lock.unlock();
        assert!(lent.iter().all(|&p| !lent_bit(p)));
    }
}
