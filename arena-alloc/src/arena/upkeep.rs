//! Page-list upkeep: what happens to a page when a free fills a hole in it, empties it, or
//! when remote frees and returned loans come in. A page with a free block heads or sits
//! in its class list; a full page is in no list; an empty page becomes a free page of its
//! owner (`super::free_pages`), going home first if it was lent (`super::loan`).

use super::free_pages::page_freed;
use super::state::{Arena, ArenaState, arena};
use crate::class::NUM_CLASSES;
use crate::page::{self, PAGE_AVAILABLE, PAGE_FREE, Page};
use crate::remote;
use crate::sync::unmodeled::Ordering;
use core::ptr;

/// Puts every block on the thread-free lists of `arena`'s pending pages back on its page
/// (see `crate::remote`), with the list upkeep a free does, then takes back the pages
/// other arenas returned (`loan`).
///
/// # Safety
/// The caller holds the lock of `arena`, whose state is `st`.
pub(super) unsafe fn drain_remote(arena: &Arena, st: &mut ArenaState) {
    let mut pg = remote::take_all(&arena.pending.0);
    while !pg.is_null() {
        let page = pg.cast::<Page>();
        let words = page::remote_words(page);
        // The page's link is read before its list is taken: from then on a remote free
        // may push the page again (rewriting the link).
        // SAFETY: the page's segment is mapped (its list holds live-counted blocks).
        let next = unsafe { (*words).next.load(Ordering::Relaxed) };
        // SAFETY: as above.
        let head = remote::take_all(unsafe { &(*words).blocks });
        if !head.is_null() {
            let (mut tail, mut n) = (head, 1u32);
            loop {
                // SAFETY: the list's blocks are free blocks of the page, taken above.
                let nx = unsafe { tail.cast::<*mut u8>().read() };
                if nx.is_null() {
                    break;
                }
                tail = nx;
                n += 1;
            }
            // SAFETY: the lock is held; the chain's blocks are given-up blocks of `page`.
            let (class, was_full, empty) = unsafe { page::put_chain(page, head, tail, n) };
            st.frees += u64::from(n);
            st.remote_frees += u64::from(n);
            if was_full && empty && !st.classes[class].is_null() {
                // Full to empty in one chain (every block freed by other threads), with
                // another page heading its list: a free page at once. Listed, it would
                // sit empty below the head.
                // SAFETY: the lock is held; the page was full, so it is in no list.
                unsafe { free_page(st, page) };
            } else if was_full || (empty && st.classes[class] != page) {
                // SAFETY: the lock is held and `page` is formatted.
                unsafe { fixup_locked(st, page, was_full) };
            }
        }
        pg = next;
    }
    // SAFETY: forwarded from the caller.
    unsafe { take_returned(arena, st) };
}

/// The list upkeep of `free_fixup`, lock kept: a page that was full goes to the head of
/// its class list (retiring an empty head: only the head of a class list is ever empty),
/// an empty page that is not the head becomes a free page.
///
/// # Safety
/// As for `free_fixup`.
pub(super) unsafe fn fixup_locked(st: &mut ArenaState, page: *mut Page, was_full: bool) {
    // SAFETY: the lock is held; `class` is fixed while the page is formatted.
    let class = unsafe { (*page).class } as usize;
    if was_full {
        // The head may be empty (an emptied head stays listed, so that an alloc/free pair
        // on one block never reformats a page); below the new head it would stay empty and
        // listed for good, its memory kept from every other class (filling 64 MiB with
        // 8 KiB blocks, freeing them and filling 64 MiB with 100-byte blocks peaked at
        // 142 MiB: every page had emptied as head and then been buried).
        let head = st.classes[class];
        // SAFETY: the lock is held; listed pages are formatted descriptors.
        if !head.is_null() && unsafe { (*head).used } == 0 {
            // SAFETY: the lock is held; `head` is empty and heads class list `class`.
            unsafe { retire_page(st, head, class) };
        }
        // SAFETY: the lock is held; a full page is in no list.
        unsafe { page::list_push(&mut st.classes[class], page) };
        // SAFETY: the lock is held.
        unsafe { (*page).state = PAGE_AVAILABLE };
    } else {
        // SAFETY: the lock is held and the page is empty and in its class list.
        unsafe { retire_page(st, page, class) };
    }
}

/// Moves an empty page from its class list to the free pages (a lent page goes back to
/// its owner instead, see `loan`).
///
/// # Safety
/// The caller holds the arena lock; `page` is empty and in class list `class`.
#[cold]
pub(super) unsafe fn retire_page(st: &mut ArenaState, page: *mut Page, class: usize) {
    // SAFETY: the lock is held and the page is in this list.
    unsafe { page::list_remove(&mut st.classes[class], page) };
    // SAFETY: the lock is held; the page is empty and in no list now.
    unsafe { free_page(st, page) };
}

/// An empty page that is in no list becomes a free page: of this arena, or of its owner
/// if it is lent (`loan`).
///
/// # Safety
/// The caller holds the arena lock; `page` is empty, formatted and in no list.
pub(super) unsafe fn free_page(st: &mut ArenaState, page: *mut Page) {
    // SAFETY: the lock is held.
    unsafe { (*page).state = PAGE_FREE };
    // No offset is a block start of a free page (`page::is_block_start`): a late free of
    // one of its blocks (a double free whose tag a decommit erased) leaves `free`'s fast
    // path and is reported.
    // SAFETY: the lock is held; no block of the page is live, so nobody reads it but such
    // a misuse.
    unsafe { (*page).div_magic = 0 };
    // SAFETY: the lock (the page's holder's) is held; the page is free.
    unsafe { page::release_page(page) };
    let seg = page::segment_of_page(page);
    // SAFETY: the lock (the page's holder's) is held; a segment's `owner` never changes.
    if u32::from(unsafe { (*page).holder }) != unsafe { (*seg).owner } {
        // SAFETY: the page is lent to this arena, empty, free and in no list now.
        return unsafe { give_back(st, page) };
    }
    // SAFETY: the lock is held; the page is an empty page of this arena, in no list.
    unsafe { page_freed(st, page) };
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
pub(super) unsafe fn list_insert(st: &mut ArenaState, page: *mut Page) {
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
pub(super) unsafe fn list_remove(st: &mut ArenaState, page: *mut Page) {
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
