//! Arenas (what mimalloc calls heaps): small blocks, served from pages of the arena's
//! segments. Blocks above `SMALL_MAX` live in [`crate::huge`].
//!
//! ```text
//!  mod.rs        alloc / free / refill chains / statistics / trim  (the entry points)
//!   |-- loan.rs        borrowing a resident free page from another arena
//!   |-- upkeep.rs      class lists: pages that fill, empty, drain remote frees, go home
//!   |-- free_pages.rs  free pages (resident first) and empty segments
//!   `-- state.rs       the arena table: lock, class lists, counters
//! ```
//!
//! Each file uses only those below it.

mod free_pages;
mod loan;
mod state;
#[cfg(test)]
mod tests;
mod upkeep;

use crate::class::{NUM_CLASSES, class_for, class_size};
use crate::huge;
use crate::page::{
    self, KIND_SMALL, MAGIC, PAGE_AVAILABLE, PAGE_FULL, PAGES_PER_SEGMENT, Page, SEGMENT_SIZE,
};
use crate::remote;
use crate::sync::unmodeled::Ordering;
use core::ptr;

pub use free_pages::EMPTY_SEGMENTS_KEPT;
pub use loan::LEND_RESERVE;
pub(crate) use state::is_locked;
use state::{ARENAS, Arena, ArenaState, arena};
use upkeep::{drain_remote, fixup_locked};

/// Takes every arena's lock, in index order (fork's prepare handler). The one path that
/// holds two arena locks (`loan::borrow`) takes the second with `try_lock` only, so this
/// cannot deadlock.
pub(crate) fn lock_all() {
    for a in &ARENAS {
        a.lock.lock();
    }
}

/// Releases every arena's lock (fork's parent handler).
pub(crate) fn unlock_all() {
    for a in &ARENAS {
        a.lock.unlock();
    }
}

/// Resets every arena's lock to free (fork's child handler: the child has one thread).
pub(crate) fn reset_all() {
    for a in &ARENAS {
        a.lock.reset();
    }
}

// ---------------------------------------------------------------------------------------
// Small blocks.

/// Allocates a block of size class `class` from arena `idx`; null when out of memory.
///
/// The fast path makes no call that returns (slow cases are tail calls into cold
/// functions), so it needs no callee-saved registers.
#[inline]
pub(crate) fn alloc_small(idx: usize, class: usize) -> *mut u8 {
    let arena = arena(idx);
    if !arena.lock.try_lock() {
        return alloc_small_contended(arena, idx, class);
    }
    let stp = arena.state.get();
    debug_assert!(class < NUM_CLASSES);
    // SAFETY: the lock is held, and the state is only reached under it.
    let classes = unsafe { &(*stp).classes };
    // SAFETY: callers pass classes from `class_for`, below NUM_CLASSES.
    let page = unsafe { *classes.get_unchecked(class) };
    if page.is_null() {
        // SAFETY: the lock of `arena` (index `idx`) is held, `stp` is its state, and no
        // reference to the state is live.
        return unsafe { alloc_small_locked(arena, stp, idx, class) };
    }
    // SAFETY: the lock is held; `page` is in the class list, so it has a free block.
    unsafe { take_and_count(arena, stp, page, class) }
}

/// Takes a block from `page`, counts it and releases the lock.
///
/// Functions that release the lock take the state as a raw pointer: a `&mut` argument
/// stays live (protected) until the function returns, so it would still claim the state
/// while the next lock holder writes it, and the compiler could move writes through it
/// past the release.
///
/// # Safety
/// The lock of `arena` is held, `st` is its state (no reference to it live), `page` heads
/// class list `class`.
#[inline]
unsafe fn take_and_count(
    arena: &Arena,
    st: *mut ArenaState,
    page: *mut Page,
    class: usize,
) -> *mut u8 {
    // SAFETY: forwarded from the caller.
    let (block, full) = unsafe { page::take_block(page) };
    {
        // SAFETY: the lock is held; this reference ends before the release below.
        let st = unsafe { &mut *st };
        if full {
            // SAFETY: the lock is held and `page` heads this class list.
            unsafe { page::list_remove(&mut st.classes[class], page) };
            // SAFETY: the lock is held.
            unsafe { (*page).state = PAGE_FULL };
        }
        st.allocs += 1;
    }
    if arena.lock.release() {
        return wake_returning(arena, block);
    }
    block
}

#[cold]
#[inline(never)]
fn wake_returning(arena: &Arena, block: *mut u8) -> *mut u8 {
    arena.lock.wake();
    block
}

#[cold]
#[inline(never)]
fn alloc_small_contended(arena: &Arena, idx: usize, class: usize) -> *mut u8 {
    let st: *mut ArenaState = arena.acquire_contended();
    // SAFETY: the lock of `arena` (index `idx`) is held and `st` is its state; the `&mut`
    // it came from is not used again.
    unsafe { alloc_small_locked(arena, st, idx, class) }
}

/// The general allocation path, entered with the lock held; releases it.
///
/// `st` is a raw pointer, not `&mut`: when the fork handlers are not registered yet this
/// releases the lock and re-enters `alloc_small`, which takes the lock again and forms a
/// new `&mut ArenaState`; a `&mut` argument would still be live (protected) then.
///
/// # Safety
/// The lock of `arena` (index `idx`) is held, `st` is its state, and the caller holds no
/// reference to the state.
#[cold]
#[inline(never)]
unsafe fn alloc_small_locked(
    arena: &Arena,
    st: *mut ArenaState,
    idx: usize,
    class: usize,
) -> *mut u8 {
    // SAFETY: the lock is held.
    let mut page = unsafe { (*st).classes[class] };
    if page.is_null() {
        // SAFETY: the lock is held; this is the only reference to the state.
        let stm = unsafe { &mut *st };
        // SAFETY: the lock of arena `idx` is held and `stm` is its state.
        page = unsafe { page_for(arena, stm, class, idx) };
        if page.is_null() {
            arena.lock.unlock();
            return ptr::null_mut();
        }
    }
    // SAFETY: the lock is held, `page` heads the class list, no reference to the state is
    // live.
    unsafe { take_and_count(arena, st, page, class) }
}

/// A page with a free block for `class`, whose list is empty: the remote frees pending
/// in the arena are drained first (they may refill the list, or free whole pages), then
/// a free page is formatted. Null when out of memory.
///
/// # Safety
/// The caller holds the lock of `arena` (index `idx`), whose state is `st`.
#[cold]
unsafe fn page_for(arena: &Arena, st: &mut ArenaState, class: usize, idx: usize) -> *mut Page {
    // SAFETY: forwarded from the caller.
    unsafe { drain_remote(arena, st) };
    let page = st.classes[class];
    if !page.is_null() {
        return page;
    }
    // SAFETY: forwarded from the caller.
    unsafe { fresh_page(st, class, idx) }
}

/// Frees small block `p` without its owner's lock: pushes it onto its page's thread-free
/// list (and, if the list was empty, the page onto the owner's pending stack); the owner's
/// lock holder puts it back later. Not in the hardened mode (the live bitmap is kept under
/// the lock).
///
/// # Safety
/// `p` is a live small block of this allocator, given up here.
pub(crate) unsafe fn free_remote(p: *mut u8) {
    // SAFETY: forwarded from the caller: a chain of one block.
    unsafe { free_remote_chain(p, p) }
}

/// The page descriptor of small block `p`, as an opaque key: blocks with equal keys are on
/// one page (what [`free_remote_chain`] requires of a chain).
#[inline]
pub(crate) fn page_key(p: *mut u8) -> *mut u8 {
    page::page_of(page::segment_of(p), p).cast()
}

/// [`free_remote`] of a chain of blocks of one page, linked through their first words from
/// `head` to `tail` (`tail`'s link unset), in one compare-and-swap.
///
/// # Safety
/// Every block of the chain is a live small block of this allocator, given up here, and
/// all have the same [`page_key`].
pub(crate) unsafe fn free_remote_chain(head: *mut u8, tail: *mut u8) {
    debug_assert!(!crate::config::hardened());
    debug_assert_eq!(page_key(head), page_key(tail));
    let seg = page::segment_of(head);
    let page = page::page_of(seg, head);
    let words = page::remote_words(page);
    // SAFETY: the blocks are live, so their segment (and the page's words in page 0) is
    // mapped, and the page is not free: its `holder` stays as it is until the chain is
    // drained, which needs the pushes below first.
    let holder = unsafe { (*page).holder } as usize;
    // SAFETY: as above.
    let blocks = unsafe { &(*words).blocks };
    // SAFETY: `tail` is given up and at least 16 bytes: its first word holds the link.
    let first = remote::push(blocks, head, |old| unsafe {
        tail.cast::<*mut u8>().write(old)
    });
    if first {
        // SAFETY: the segment stays mapped: the chain is counted as used until a drain
        // takes the page, which needs the push below first.
        let next = unsafe { &(*words).next };
        remote::push(&arena(holder).pending.0, page.cast(), |old| {
            next.store(old, Ordering::Relaxed)
        });
    }
}

/// Formats a page for `class`, puts it at the head of the class list and returns it.
///
/// # Safety
/// The caller holds the lock of arena `idx`, whose state is `st`.
#[cold]
unsafe fn fresh_page(st: &mut ArenaState, class: usize, idx: usize) -> *mut Page {
    let mut page = ptr::null_mut();
    if st.dirty_free == 0 {
        // No resident free page here: one of another arena's, rather than memory that
        // was never touched (or that this arena gave back to the OS).
        // SAFETY: forwarded from the caller.
        page = unsafe { loan::borrow(st, idx, class) };
    }
    if page.is_null() {
        if st.free_pages.is_null() {
            let Some((seg, pages)) = page::new_segment(idx as u32) else {
                return ptr::null_mut();
            };
            free_pages::note_arena_used(idx);
            // SAFETY: the fresh header is ours; the lock guards the list.
            unsafe { (*seg).next = st.segments };
            st.segments = seg;
            for p in pages.into_iter().rev() {
                // SAFETY: the lock is held; the fresh pages are in no list.
                unsafe { page::list_push(&mut st.free_pages, p) };
            }
            free_pages::segment_mapped();
            // SAFETY: the lock is held; the fresh segment has no page in use yet.
            let _ = unsafe { free_pages::segment_emptied(st, true) };
        }
        // SAFETY: the lock is held; the free list is not empty.
        page = unsafe { free_pages::pick(st.free_pages, class) };
        // SAFETY: the lock is held; `page` is in the free list.
        unsafe { free_pages::take_free_page(st, page) };
        // SAFETY: the lock is held; the descriptor is this arena's.
        if unsafe { (*page).dirty } == 0 {
            // Memory this process has not touched (or gave back): what big blocks freed
            // and keep resident goes back first, so it serves this page through the OS
            // instead of adding to the peak.
            huge::reclaim_for_small(page::PAGE_SIZE);
        }
    }
    // SAFETY: the lock of the page's holder (arena `idx`) is held.
    unsafe { install_page(st, page, class) };
    page
}

/// Formats free page `page` for `class` and puts it at the head of the class list.
///
/// # Safety
/// The caller holds the lock of the page's holder, whose state is `st`; the page is free
/// and in no list (but a lent page's `borrowed` list).
unsafe fn install_page(st: &mut ArenaState, page: *mut Page, class: usize) {
    // SAFETY: forwarded from the caller: no block of the page is live.
    unsafe { page::format_page(page, class) };
    // SAFETY: the lock is held; `page` is in no class list.
    unsafe { page::list_push(&mut st.classes[class], page) };
    // SAFETY: the lock is held.
    unsafe { (*page).state = PAGE_AVAILABLE };
}

/// Frees block `p` (small or huge; a pointer into a small page that does not start a block
/// aborts). `current` is the caller's arena index, for the
/// remote-free statistic.
///
/// # Safety
/// `p` is a live block returned by this allocator and not used afterwards.
#[inline]
pub(crate) unsafe fn free(p: *mut u8, current: usize) {
    let seg = page::segment_of(p);
    if cfg!(debug_assertions) {
        // SAFETY: `p` is live, so its header is mapped; `magic` never changes.
        let magic = unsafe { (*seg).magic };
        assert_eq!(magic, MAGIC, "pointer not allocated by arena-alloc");
    }
    // SAFETY: as above; `kind` never changes. (Fields are read one by one: a reference to
    // the whole header would overlap `next`, which the owner writes under its lock.)
    if unsafe { (*seg).kind } != KIND_SMALL {
        // SAFETY: the header is mapped and says the block is not small.
        return unsafe { huge::free(seg, p, current) };
    }
    let page = page::page_of(seg, p);
    // SAFETY: `p` is live or points into a live block of this formatted page.
    if !unsafe { page::is_block_start(page, p) } {
        // SAFETY: as above (a free page's magic is 0: no block of it is live).
        if unsafe { (*page).div_magic } == 0 {
            huge::invalid_free("free(): double free detected", p);
        }
        huge::invalid_free("free(): invalid pointer (not the start of a block)", p);
    }
    // SAFETY: as above; `holder` is fixed while a block of the page is live.
    let owner = unsafe { (*page).holder } as usize;
    let arena = arena(owner);
    if !arena.lock.try_lock() {
        // SAFETY: forwarded from the caller.
        return unsafe { free_contended(arena, p, owner, current) };
    }
    // SAFETY: the lock of the owner is held, no reference to its state is live, and `p`
    // is a live block of it.
    unsafe { free_locked(arena, arena.state.get(), p, owner, current) }
}

#[cold]
#[inline(never)]
unsafe fn free_contended(arena: &Arena, p: *mut u8, owner: usize, current: usize) {
    if !crate::config::hardened() {
        // The lock is busy: no waiting, the holder (or the next) puts the block back.
        // SAFETY: forwarded from the caller.
        return unsafe { free_remote(p) };
    }
    let st: *mut ArenaState = arena.acquire_contended();
    // SAFETY: the lock of the owner is held (the `&mut` from `acquire_contended` is not
    // used again) and the caller passes a live block of it.
    unsafe { free_locked(arena, st, p, owner, current) }
}

/// Returns `p` to its page, counts it and releases the lock.
///
/// # Safety
/// The lock of `arena` (index `owner`) is held, `st` is its state (no reference to it
/// live; raw for the reason given at `take_and_count`), and `p` is a live small block of
/// one of its pages.
#[inline]
unsafe fn free_locked(
    arena: &Arena,
    st: *mut ArenaState,
    p: *mut u8,
    owner: usize,
    current: usize,
) {
    let page = page::page_of(page::segment_of(p), p);
    // SAFETY: the lock is held and `p` is a live block of `page`.
    let (class, was_full, empty) = unsafe { page::put_block(page, p) };
    debug_assert!(class < NUM_CLASSES);
    let fixup = {
        // SAFETY: the lock is held; this reference ends before the release below.
        let st = unsafe { &mut *st };
        st.frees += 1;
        st.remote_frees += u64::from(owner != current);
        was_full || (empty && st.classes[class] != page)
    };
    // An emptied page that heads its class list stays there (so an alloc/free pair on one
    // block never reformats a page): only list upkeep leaves the fast path.
    if fixup {
        // SAFETY: forwarded: lock held, `page` formatted.
        return unsafe { free_fixup(arena, st, page, was_full) };
    }
    if arena.lock.release() {
        arena.lock.wake();
    }
}

/// List upkeep after a free filled a hole in a full page or emptied a page; releases the
/// lock.
///
/// # Safety
/// The lock of `arena` is held, `st` is its state (no reference to it live), `page` is
/// one of its formatted pages.
#[cold]
#[inline(never)]
unsafe fn free_fixup(arena: &Arena, st: *mut ArenaState, page: *mut Page, was_full: bool) {
    // SAFETY: the lock is held; this reference ends before the unlock below.
    let st = unsafe { &mut *st };
    // SAFETY: forwarded from the caller.
    unsafe { fixup_locked(st, page, was_full) };
    arena.lock.unlock();
}

/// A snapshot of an arena's small-block counters.
pub(crate) struct SmallSnapshot {
    pub(crate) allocs: u64,
    pub(crate) frees: u64,
    pub(crate) remote_frees: u64,
    pub(crate) contended: u64,
    /// Bytes of blocks handed out (thread caches included).
    pub(crate) bytes_in_use: usize,
    /// Small segments mapped.
    pub(crate) segments: usize,
}

/// Counters of arena `index` (`None` when `index >= MAX_HEAP_COUNT`), under its lock.
pub(crate) fn small_snapshot(index: usize) -> Option<SmallSnapshot> {
    let a = ARENAS.get(index)?;
    let st = a.acquire();
    // SAFETY: the lock is held.
    unsafe { drain_remote(a, st) };
    let mut out = SmallSnapshot {
        allocs: st.allocs,
        frees: st.frees,
        remote_frees: st.remote_frees,
        contended: st.contended,
        bytes_in_use: 0,
        segments: 0,
    };
    // Bytes in use are summed from the pages rather than counted on every call: this
    // arena's own pages but those lent out (another lock guards them), and the pages lent
    // to it.
    let mut seg = st.segments;
    while !seg.is_null() {
        out.segments += 1;
        // SAFETY: the lock is held; the segment is live while listed.
        let lent = unsafe { (*seg).lent };
        for page in page::pages_of(seg) {
            if lent & (1 << page::page_index(page)) == 0 {
                // SAFETY: as above; the page is not lent, so this lock guards it.
                out.bytes_in_use += unsafe { page::bytes_in_use(page) };
            }
        }
        // SAFETY: as above.
        seg = unsafe { (*seg).next };
    }
    // SAFETY: the lock is held.
    out.bytes_in_use += unsafe { upkeep::borrowed_bytes(st) };
    a.lock.unlock();
    Some(out)
}

/// Takes up to `n` (>= 1) blocks of class `class` from arena `idx` under one acquisition of
/// its lock (first draining its pending remote frees if `drain`), as a chain linked
/// through their first words: (first, last, count), the last block's link unset; count 0
/// (and nulls) when the fork handlers are not registered yet or memory runs out before
/// the first block. Free lists are cut, not walked block by block into a new list, and
/// never-used blocks are linked from the bump pointer; a page's free list of at most
/// `whole` blocks is taken whole (see `page::take_chain`): then the chain already ends in
/// a null link, `last` is null, and `count` may exceed `n`.
pub(crate) fn take_chain(
    idx: usize,
    class: usize,
    n: u32,
    whole: u32,
    drain: bool,
) -> (*mut u8, *mut u8, u32) {
    let arena = arena(idx);
    let st = arena.acquire();
    if drain {
        // SAFETY: the lock is held.
        unsafe { drain_remote(arena, st) };
    }
    let (mut first, mut last, mut count) = (ptr::null_mut::<u8>(), ptr::null_mut::<u8>(), 0);
    while count < n {
        let mut page = st.classes[class];
        if page.is_null() {
            // SAFETY: the lock is held.
            page = unsafe { page_for(arena, st, class, idx) };
            if page.is_null() {
                break;
            }
        }
        // SAFETY: the lock is held; `page` heads the class list so has a free block.
        let (f, l, k, full) = unsafe { page::take_chain(page, n - count, whole) };
        if full {
            // SAFETY: the lock is held and `page` heads this class list.
            unsafe { page::list_remove(&mut st.classes[class], page) };
            // SAFETY: the lock is held.
            unsafe { (*page).state = PAGE_FULL };
        }
        if count == 0 {
            first = f;
        } else {
            // SAFETY: `last` is a block of the chain, taken above and free.
            unsafe { last.cast::<*mut u8>().write(f) };
        }
        last = l;
        count += k;
        if l.is_null() {
            // A whole free list: its end is not known, so nothing can follow it.
            break;
        }
    }
    st.allocs += u64::from(count);
    arena.lock.unlock();
    (first, last, count)
}

/// Frees a linked list of small blocks (first word = next), all owned by arena `owner`,
/// under one acquisition of its lock.
///
/// # Safety
/// Every block of the list is a live small block of arena `owner`, given up here.
pub(crate) unsafe fn free_list(owner: usize, mut p: *mut u8, current: usize) {
    let arena = arena(owner);
    let st = arena.acquire();
    // SAFETY: the lock is held.
    unsafe { drain_remote(arena, st) };
    while !p.is_null() {
        // SAFETY: list links live in the blocks' first word.
        let next = unsafe { p.cast::<*mut u8>().read() };
        let page = page::page_of(page::segment_of(p), p);
        // SAFETY: the lock is held and `p` is a live block of `page`.
        let (class, was_full, empty) = unsafe { page::put_block(page, p) };
        st.frees += 1;
        st.remote_frees += u64::from(owner != current);
        if was_full || (empty && st.classes[class] != page) {
            // SAFETY: the lock is held and `page` is formatted.
            unsafe { fixup_locked(st, page, was_full) };
        }
        p = next;
    }
    arena.lock.unlock();
}

/// Returns the memory of every empty page of every arena to the OS, then the huge heap's
/// dirty free spans (`malloc_trim`); `true` if it released any.
pub(crate) fn trim() -> bool {
    // Empty pages kept at the head of their class list become free pages first (lent ones
    // go back to their owners, taken back in the second pass).
    for a in &ARENAS {
        let st = a.acquire();
        // SAFETY: the lock is held.
        unsafe { drain_remote(a, st) };
        // SAFETY: as above.
        unsafe { upkeep::retire_empty(st) };
        a.lock.unlock();
    }
    // Empty segments kept for a recent peak are unmapped (what was freed before is given
    // back now: the peak no longer speaks for it).
    free_pages::forget_peak();
    let before = free_pages::empty_segments();
    release_empty_segments(usize::MAX);
    let mut released = free_pages::empty_segments() < before;
    for a in &ARENAS {
        let st = a.acquire();
        // SAFETY: the lock is held.
        unsafe { drain_remote(a, st) };
        // SAFETY: as above.
        released |= unsafe { free_pages::decommit_free(st) };
        a.lock.unlock();
    }
    huge::trim() | released
}

/// Unmaps empty small segments, all but one per arena, until `bytes` are given back (or
/// none is left): big blocks call it when they are about to touch memory
/// the process has not touched, so that what small blocks freed serves them (through the
/// OS) instead of adding to the peak. Walks the segment lists of the arenas in use, only
/// when such segments exist.
pub(crate) fn release_empty_segments(bytes: usize) {
    let mut done = 0;
    let arenas = free_pages::arenas_used();
    for idx in 0..arenas {
        // One empty segment per arena stays: with no more than that in all, there is
        // likely nothing to do (no walk; a rare leftover waits for the next call).
        if done >= bytes || free_pages::empty_segments() <= arenas {
            return;
        }
        let a = arena(idx);
        let st = a.acquire();
        let mut seg = st.segments;
        while !seg.is_null() && done < bytes && st.empty_segments > 1 {
            // SAFETY: the lock is held; listed segments are live and their `next` is
            // guarded by it.
            let next = unsafe { (*seg).next };
            // SAFETY: as above; `used_pages` changes only under this lock.
            let used = unsafe { page::used_pages(seg) }.load(Ordering::Relaxed);
            // SAFETY: the lock is held; the segment is this arena's, empty and counted so.
            if used == 0 && unsafe { free_pages::unmap_empty_segment(st, seg) } {
                done += SEGMENT_SIZE;
            }
            seg = next;
        }
        a.lock.unlock();
    }
}

/// Owner arena and class of `p` if it is a small block that starts a block; `None` for a
/// huge block and for a pointer into a small page that is not the start of one of its
/// blocks (`free(p + 16)`), which [`free`] then reports before it aborts the process:
/// accepted, it would be handed out again overlapping a live block.
///
/// # Safety
/// `p` is a live block of this allocator (or a pointer into one: then this aborts).
#[inline]
pub(crate) unsafe fn small_owner_class(p: *mut u8) -> Option<(usize, usize)> {
    let seg = page::segment_of(p);
    // SAFETY: `p` is live, so its header is mapped; `kind` never changes (read alone, see
    // `free`).
    if unsafe { (*seg).kind } != KIND_SMALL {
        return None;
    }
    let page = page::page_of(seg, p);
    // SAFETY: the page holds `p`'s block, so it is formatted and stays so.
    if !unsafe { page::is_block_start(page, p) } {
        // Reported by `free` (the general path checks again): no call here, so the hit
        // path of `free` saves no register.
        return None;
    }
    // SAFETY: `class` is not written while a block of the page is live.
    let class = unsafe { (*page).class } as usize;
    // SAFETY: as above, for `holder`.
    let owner = unsafe { (*page).holder } as usize;
    Some((owner, class))
}

/// Whether small block `p` (the start of a block of its page) is free: on its page's free
/// list, or pending there from another thread (drained first), or its page is free
/// altogether. For `free` of a block that carries the free mark.
pub(crate) fn holds_free(p: *mut u8) -> bool {
    let page = page::page_of(page::segment_of(p), p);
    loop {
        // SAFETY: the segment is mapped (the caller's block lies in it); `holder` is read
        // again under the lock below, where it cannot change.
        let holder = usize::from(unsafe { (*page).holder });
        let a = arena(holder);
        let st = a.acquire();
        // SAFETY: the lock is held.
        unsafe { drain_remote(a, st) };
        // SAFETY: as above.
        if usize::from(unsafe { (*page).holder }) != holder {
            // Lent or given back meanwhile (only a free page moves): look again.
            a.lock.unlock();
            continue;
        }
        // SAFETY: the lock of the page's holder is held.
        let found = unsafe { (*page).state } == page::PAGE_FREE
            // SAFETY: as above; the page is formatted.
            || unsafe { page::free_list_holds(page, p) };
        a.lock.unlock();
        return found;
    }
}

/// Usable bytes of live block `p`.
///
/// # Safety
/// `p` is a live block of this allocator.
pub(crate) unsafe fn usable_size(p: *mut u8) -> usize {
    let seg = page::segment_of(p);
    // SAFETY: `p` is live, so its header is mapped; `kind` never changes.
    if unsafe { (*seg).kind } == KIND_SMALL {
        // SAFETY: `p` is a live block of this small segment.
        unsafe { page::block_size(seg, p) }
    } else {
        // SAFETY: `p` is a live huge block with this header.
        unsafe { huge::usable_size(seg, p) }
    }
}

/// Resizes `p` without moving its contents when possible: `Some(q)` (for a huge block `q`
/// may differ: its mapping moved; null when out of memory), `None` when the caller must
/// allocate, copy and free.
///
/// # Safety
/// `p` is a live block of this allocator aligned to `align`; `new_size > 0`.
pub(crate) unsafe fn resize_in_place(p: *mut u8, new_size: usize, align: usize) -> Option<*mut u8> {
    let seg = page::segment_of(p);
    // SAFETY: `p` is live, so its header is mapped; `kind` never changes.
    let kind = unsafe { (*seg).kind };
    let target = class_for(new_size, align);
    if kind == KIND_SMALL {
        // SAFETY: `p` is a live block of this small segment.
        let bs = unsafe { page::block_size(seg, p) };
        if let Some(t) = target
            && class_size(t) <= bs
            && (class_size(t) * 2 > bs || bs == class_size(0))
        {
            return Some(p);
        }
    } else if target.is_none() {
        // SAFETY: `p` is a live huge block and the new size stays huge.
        return unsafe { huge::resize(seg, p, new_size, align) };
    }
    None
}

const _: () = assert!(PAGES_PER_SEGMENT >= 2);
