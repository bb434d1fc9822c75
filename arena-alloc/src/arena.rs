//! Arenas: one lock, per-class page lists and counters each; the global arena table;
//! huge mappings; fork handlers.

use crate::class::{NUM_CLASSES, class_for, class_size};
use crate::lock::RawLock;
use crate::page::{
    self, HUGE_HEADER, KIND_HUGE, KIND_SMALL, MAGIC, PAGE_AVAILABLE, PAGE_FREE, PAGE_FULL,
    PAGES_PER_SEGMENT, Page, SEGMENT_SIZE, SegmentHeader,
};
use crate::sync::global::{AtomicU8, AtomicU32, Ordering, UnsafeCell};
use crate::sys;
use core::ptr;

/// Most arenas (heaps) a process can use.
pub const MAX_HEAP_COUNT: usize = 128;

/// Lock-guarded state of one arena.
struct ArenaState {
    /// Pages of each class with at least one free block.
    classes: [*mut Page; NUM_CLASSES],
    /// Unformatted pages of this arena's segments.
    free_pages: *mut Page,
    /// Segments that have no page in use.
    empty_segments: u32,
    /// Small-block counters: plain integers under the lock (no extra locked instruction
    /// on the fast path); `arena_stats` takes the lock to read them.
    allocs: u64,
    frees: u64,
    remote_frees: u64,
    contended: u64,
    /// This arena's small segments (linked through their headers), for statistics.
    segments: *mut SegmentHeader,
}

/// Huge-block counters of one arena, kept under the huge cache's lock (which a cache hit
/// takes anyway, so counting costs no extra atomic operation there).
#[derive(Clone, Copy, Debug)]
struct HugeCounters {
    allocs: u64,
    frees: u64,
    remote_frees: u64,
    bytes: usize,
}

/// One arena, on its own cache lines.
#[repr(C, align(128))]
pub(crate) struct Arena {
    lock: RawLock<AtomicU32>,
    state: UnsafeCell<ArenaState>,
}

// SAFETY: `state` (raw page pointers) is only accessed while `lock` is held.
unsafe impl Sync for Arena {}

const _: () = assert!(core::mem::align_of::<Arena>() == 128);
const _: () = assert!(MAX_HEAP_COUNT <= u32::MAX as usize);

impl Arena {
    const fn new() -> Self {
        Self {
            lock: RawLock::new(AtomicU32::new(0)),
            state: UnsafeCell::new(ArenaState {
                classes: [ptr::null_mut(); NUM_CLASSES],
                free_pages: ptr::null_mut(),
                empty_segments: 0,
                allocs: 0,
                frees: 0,
                remote_frees: 0,
                contended: 0,
                segments: ptr::null_mut(),
            }),
        }
    }

    /// Takes the lock and returns the state it guards.
    #[inline]
    #[allow(clippy::mut_from_ref)]
    fn acquire(&self) -> &mut ArenaState {
        if !self.lock.try_lock() {
            return self.acquire_contended();
        }
        // SAFETY: the lock is held until the caller's matching `unlock`, and the state is
        // only reached under it, so this is the only reference.
        unsafe { &mut *self.state.get() }
    }

    /// `acquire` after `try_lock` failed; counts the contention.
    #[cold]
    #[inline(never)]
    #[allow(clippy::mut_from_ref)]
    fn acquire_contended(&self) -> &mut ArenaState {
        self.lock.lock_contended();
        // SAFETY: as in `acquire`.
        let st = unsafe { &mut *self.state.get() };
        st.contended += 1;
        st
    }
}

/// Arena `idx`.
#[inline]
fn arena(idx: usize) -> &'static Arena {
    debug_assert!(idx < MAX_HEAP_COUNT);
    // SAFETY: indices are `cpu % heap_count` with heap_count <= MAX_HEAP_COUNT, or an owner
    // recorded in a segment header from such an index.
    unsafe { ARENAS.get_unchecked(idx) }
}

static ARENAS: [Arena; MAX_HEAP_COUNT] = [const { Arena::new() }; MAX_HEAP_COUNT];

// ---------------------------------------------------------------------------------------
// Process set-up: fork handlers.

static READY: AtomicU8 = AtomicU8::new(0);

/// Registers the fork handlers once. Called with no arena lock held, because
/// `pthread_atfork` may itself allocate (and re-enter us: then the state is 1 and we go on).
#[cold]
pub(crate) fn ensure_ready() {
    if READY
        .compare_exchange(0, 1, Ordering::AcqRel, Ordering::Acquire)
        .is_ok()
    {
        sys::atfork(fork_prepare, fork_parent, fork_child);
        create_cache_key();
        READY.store(2, Ordering::Release);
    }
}

#[inline]
fn is_ready() -> bool {
    READY.load(Ordering::Relaxed) != 0
}

extern "C" fn fork_prepare() {
    // Always in index order; no path holds two arena locks, so this cannot deadlock.
    for a in &ARENAS {
        a.lock.lock();
    }
    HUGE_CACHE.lock.lock();
}

extern "C" fn fork_parent() {
    for a in &ARENAS {
        a.lock.unlock();
    }
    HUGE_CACHE.lock.unlock();
}

extern "C" fn fork_child() {
    for a in &ARENAS {
        a.lock.reset();
    }
    HUGE_CACHE.lock.reset();
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
        if !is_ready() {
            arena.lock.unlock();
            ensure_ready();
            return alloc_small(idx, class);
        }
        // SAFETY: the lock is held; this is the only reference to the state.
        let stm = unsafe { &mut *st };
        // SAFETY: the lock of arena `idx` is held and `stm` is its state.
        page = unsafe { fresh_page(stm, class, idx) };
        if page.is_null() {
            arena.lock.unlock();
            return ptr::null_mut();
        }
    }
    // SAFETY: the lock is held, `page` heads the class list, no reference to the state is
    // live.
    unsafe { take_and_count(arena, st, page, class) }
}

/// Formats a page for `class`, puts it at the head of the class list and returns it.
///
/// # Safety
/// The caller holds the lock of arena `idx`, whose state is `st`.
#[cold]
unsafe fn fresh_page(st: &mut ArenaState, class: usize, idx: usize) -> *mut Page {
    if st.free_pages.is_null() {
        let Some((seg, pages)) = page::new_segment(idx as u32) else {
            return ptr::null_mut();
        };
        // SAFETY: the fresh header is ours; the lock guards the list.
        unsafe { (*seg).next = st.segments };
        st.segments = seg;
        for p in pages.into_iter().rev() {
            // SAFETY: the lock is held; the fresh pages are in no list.
            unsafe { page::list_push(&mut st.free_pages, p) };
        }
        st.empty_segments += 1;
    }
    let page = st.free_pages;
    // SAFETY: the lock is held; `page` heads the free list.
    unsafe { page::list_remove(&mut st.free_pages, page) };
    // SAFETY: `page` is a free page of a segment of this locked arena.
    let used = unsafe { page::used_pages(page::segment_of_page(page)) };
    let n = used.load(Ordering::Relaxed);
    if n == 0 {
        st.empty_segments -= 1;
    }
    used.store(n + 1, Ordering::Relaxed);
    // SAFETY: as above; no block of the page is live.
    unsafe { page::format_page(page, class) };
    // SAFETY: the lock is held; `page` is in no list now.
    unsafe { page::list_push(&mut st.classes[class], page) };
    // SAFETY: the lock is held.
    unsafe { (*page).state = PAGE_AVAILABLE };
    page
}

/// Frees block `p` (small or huge). `current` is the caller's arena index, for the
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
        // SAFETY: the caller passes a live huge block.
        return unsafe { free_huge(seg, current) };
    }
    // SAFETY: as above; `owner` never changes.
    let owner = unsafe { (*seg).owner } as usize;
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

/// The list upkeep of `free_fixup`, lock kept.
///
/// # Safety
/// As for `free_fixup`.
unsafe fn fixup_locked(st: &mut ArenaState, page: *mut Page, was_full: bool) {
    // SAFETY: the lock is held; `class` is fixed while the page is formatted.
    let class = unsafe { (*page).class } as usize;
    if was_full {
        // SAFETY: the lock is held; a full page is in no list.
        unsafe { page::list_push(&mut st.classes[class], page) };
        // SAFETY: the lock is held.
        unsafe { (*page).state = PAGE_AVAILABLE };
    } else {
        // SAFETY: the lock is held and the page is empty and in its class list.
        unsafe { retire_page(st, page, class) };
    }
}

/// Frees a linked list of small blocks (first word = next), all owned by arena `owner`,
/// under one acquisition of its lock.
///
/// # Safety
/// Every block of the list is a live small block of arena `owner`, given up here.
unsafe fn free_list(owner: usize, mut p: *mut u8, current: usize) {
    let arena = arena(owner);
    let st = arena.acquire();
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

/// Moves an empty page from its class list to the free pages; unmaps its segment if that
/// leaves more than one segment of the arena empty.
///
/// # Safety
/// The caller holds the arena lock; `page` is empty and in class list `class`.
#[cold]
unsafe fn retire_page(st: &mut ArenaState, page: *mut Page, class: usize) {
    // SAFETY: the lock is held and the page is in this list.
    unsafe { page::list_remove(&mut st.classes[class], page) };
    // SAFETY: the lock is held.
    unsafe { (*page).state = PAGE_FREE };
    // SAFETY: the lock is held; the page is in no list now.
    unsafe { page::list_push(&mut st.free_pages, page) };
    let seg = page::segment_of_page(page);
    // SAFETY: the segment is live (it holds `page`).
    let used = unsafe { page::used_pages(seg) };
    let n = used.load(Ordering::Relaxed) - 1;
    used.store(n, Ordering::Relaxed);
    if n == 0 {
        st.empty_segments += 1;
        if st.empty_segments > 1 {
            for p in page::pages_of(seg) {
                // SAFETY: the lock is held; every page of an empty segment is free, so in
                // the free list.
                unsafe { page::list_remove(&mut st.free_pages, p) };
            }
            st.empty_segments -= 1;
            // SAFETY: the lock is held; `seg` is in the arena's segment list.
            unsafe { unlink_segment(st, seg) };
            // SAFETY: no page of the segment is in use or listed any more.
            unsafe { sys::unmap(seg.cast(), SEGMENT_SIZE) };
        }
    }
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

/// Owner arena and class of `p` if it is a small block.
///
/// # Safety
/// `p` is a live block of this allocator.
#[inline]
pub(crate) unsafe fn small_owner_class(p: *mut u8) -> Option<(usize, usize)> {
    let seg = page::segment_of(p);
    // SAFETY: `p` is live, so its header is mapped; `kind` never changes (read alone, see
    // `free`).
    if unsafe { (*seg).kind } != KIND_SMALL {
        return None;
    }
    let page = page::page_of(seg, p);
    // SAFETY: `class` is not written while a block of the page is live.
    let class = unsafe { (*page).class } as usize;
    // SAFETY: as above; `owner` never changes.
    let owner = unsafe { (*seg).owner } as usize;
    Some((owner, class))
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
        // SAFETY: a huge header is only written by the holder of its block.
        let hdr = unsafe { &*seg };
        hdr.map_len - hdr.block_offset
    }
}

// ---------------------------------------------------------------------------------------
// Huge blocks: one mapping each, header first.

/// (alignment, offset) passed to `sys::map_aligned` and the block offset, for `align`.
///
/// Written without a branch around a call: rustc 1.95 (LLVM 22) miscompiles the branchy
/// form `if align < SEGMENT_SIZE { (SEGMENT_SIZE, 0, align.max(HUGE_HEADER)) } else {
/// (align, SEGMENT_SIZE, SEGMENT_SIZE) }` in release builds (the inlined `max` gets a
/// `range` argument attribute valid only under the branch, then is hoisted out of it and
/// the `else` value is folded away), placing blocks aligned above a segment one segment
/// off. LLVM dropped only poison-generating *return* attributes when hoisting; upstream
/// llvm/llvm-project#195516 (May 2026, after LLVM 22) drops parameter ones too. The `huge`
/// test scenario catches it in `--release`; `ci/llvm_select_repro.rs` reproduces it alone.
fn huge_geometry(align: usize) -> (usize, usize, usize) {
    // Below a segment: the mapping is segment-aligned and the block sits `align` (at least
    // a header) into it. From a segment up: the header sits one segment below the block.
    let block_offset = align.clamp(HUGE_HEADER, SEGMENT_SIZE);
    let map_align = align.max(SEGMENT_SIZE);
    let map_offset = if align >= SEGMENT_SIZE {
        SEGMENT_SIZE
    } else {
        0
    };
    (map_align, map_offset, block_offset)
}

fn round_to_os_page(n: usize) -> Option<usize> {
    let ps = sys::os_page_size();
    Some(n.checked_add(ps - 1)? & !(ps - 1))
}

/// Freed huge mappings kept for reuse (segment-aligned ones only), so a program that
/// repeatedly allocates and frees large blocks does not pay the mapping syscalls each time.
const HUGE_CACHE_SLOTS: usize = 64;
/// Most bytes of address space the huge cache may hold in all.
pub const HUGE_CACHE_BYTES: usize = 32 << 20;
/// Resident bytes the huge cache may always keep as they are. Beyond this, and beyond
/// `1 / HUGE_CACHE_RESIDENT_SHARE` of the bytes in live huge blocks, a freed mapping is
/// decommitted (`MADV_DONTNEED`: still mapped, no longer resident, reads as zeros) before
/// it is cached, so idle cached memory cannot grow the peak RSS of a program by more than
/// that; a decommitted mapping can then also serve zeroed requests.
pub const HUGE_CACHE_RESIDENT_MIN: usize = 2 << 20;
/// See [`HUGE_CACHE_RESIDENT_MIN`].
pub const HUGE_CACHE_RESIDENT_SHARE: usize = 8;

/// One cached mapping: `len` bytes at `seg`; `resident`: still holds its old pages (not
/// decommitted, so not zero).
#[derive(Clone, Copy)]
struct CachedMapping {
    seg: *mut SegmentHeader,
    len: usize,
    resident: bool,
}

const NO_MAPPING: CachedMapping = CachedMapping {
    seg: ptr::null_mut(),
    len: 0,
    resident: false,
};

struct HugeCache {
    slots: [CachedMapping; HUGE_CACHE_SLOTS],
    /// Bytes of all cached mappings.
    bytes: usize,
    /// Bytes of the resident ones.
    resident: usize,
    /// Bytes mapped for live huge blocks (all arenas), for the resident budget.
    live: usize,
    /// Per-arena huge-block statistics.
    counters: [HugeCounters; MAX_HEAP_COUNT],
}

impl HugeCache {
    /// Caches `m` if a slot and the byte limit allow.
    fn insert(&mut self, m: CachedMapping) -> bool {
        if self.bytes + m.len > HUGE_CACHE_BYTES {
            return false;
        }
        let Some(slot) = self.slots.iter_mut().find(|s| s.seg.is_null()) else {
            return false;
        };
        *slot = m;
        self.bytes += m.len;
        if m.resident {
            self.resident += m.len;
        }
        true
    }
}

struct HugeCacheCell {
    lock: RawLock<AtomicU32>,
    cache: UnsafeCell<HugeCache>,
}

// SAFETY: `cache` is only accessed while `lock` is held.
unsafe impl Sync for HugeCacheCell {}

static HUGE_CACHE: HugeCacheCell = HugeCacheCell {
    lock: RawLock::new(AtomicU32::new(0)),
    cache: UnsafeCell::new(HugeCache {
        slots: [NO_MAPPING; HUGE_CACHE_SLOTS],
        bytes: 0,
        resident: 0,
        live: 0,
        counters: [HugeCounters {
            allocs: 0,
            frees: 0,
            remote_frees: 0,
            bytes: 0,
        }; MAX_HEAP_COUNT],
    }),
};

/// Runs `f` on the huge cache under its lock.
#[inline]
fn with_huge_cache<R>(f: impl FnOnce(&mut HugeCache) -> R) -> R {
    HUGE_CACHE.lock.lock();
    // SAFETY: the lock is held; the reference lives only during `f`, which cannot
    // re-enter the allocator (it only does arithmetic on the cache).
    let r = f(unsafe { &mut *HUGE_CACHE.cache.get() });
    HUGE_CACHE.lock.unlock();
    r
}

/// Takes a cached mapping of `len..=2 * len` bytes (null `seg` if none): for `zeroed` a
/// decommitted one (it reads as zeros), otherwise preferably a resident one (no page
/// faults). A mapping taken is counted as arena `idx`'s block at `block_offset`.
fn huge_cache_take(len: usize, zeroed: bool, idx: usize, block_offset: usize) -> CachedMapping {
    with_huge_cache(|c| {
        if c.bytes == 0 {
            return NO_MAPPING;
        }
        let mut pick = None;
        for (i, slot) in c.slots.iter().enumerate() {
            if slot.seg.is_null() || slot.len < len || slot.len / 2 > len {
                continue;
            }
            if slot.resident != zeroed {
                pick = Some(i);
                break;
            }
            if !zeroed && pick.is_none() {
                pick = Some(i);
            }
        }
        let Some(i) = pick else {
            return NO_MAPPING;
        };
        let found = core::mem::replace(&mut c.slots[i], NO_MAPPING);
        c.bytes -= found.len;
        if found.resident {
            c.resident -= found.len;
        }
        c.count_alloc(idx, found.len, block_offset);
        found
    })
}

impl HugeCache {
    fn count_alloc(&mut self, idx: usize, len: usize, block_offset: usize) {
        let k = &mut self.counters[idx];
        k.allocs += 1;
        k.bytes += len - block_offset;
        self.live += len;
    }
}

/// Counts the free of a huge block (`len` bytes mapped, block at `off`, owned by `owner`,
/// freed from arena `current`'s CPU) and keeps its mapping for reuse when it is
/// segment-aligned: resident if the budget allows, else decommitted. `false`: the caller
/// unmaps it.
///
/// # Safety
/// `[seg, seg + len)` is a mapping of this crate that nobody uses any more.
unsafe fn huge_release(
    seg: *mut SegmentHeader,
    len: usize,
    off: usize,
    owner: usize,
    current: usize,
) -> bool {
    // Segment-aligned mappings (alignment below a segment) can serve any later request.
    let cacheable = off < SEGMENT_SIZE;
    let kept = with_huge_cache(|c| {
        let k = &mut c.counters[owner];
        k.frees += 1;
        k.remote_frees += u64::from(owner != current);
        k.bytes -= len - off;
        c.live -= len;
        let budget = HUGE_CACHE_RESIDENT_MIN.max(c.live / HUGE_CACHE_RESIDENT_SHARE);
        cacheable
            && c.resident + len <= budget
            && c.insert(CachedMapping {
                seg,
                len,
                resident: true,
            })
    });
    if kept || !cacheable {
        return kept;
    }
    // Over the resident budget (or full): decommit outside the lock, then try again.
    // SAFETY: forwarded from the caller.
    unsafe { sys::decommit(seg.cast(), len) };
    with_huge_cache(|c| {
        c.insert(CachedMapping {
            seg,
            len,
            resident: false,
        })
    })
}

/// Maps a block of `size` bytes aligned to `align`, owned (for statistics) by arena `idx`.
/// `zeroed`: the block must read as zeros (a fresh or decommitted mapping does, a resident
/// cached one does not).
pub(crate) fn alloc_huge(idx: usize, size: usize, align: usize, zeroed: bool) -> *mut u8 {
    if !is_ready() {
        ensure_ready();
    }
    let (map_align, map_offset, block_offset) = huge_geometry(align);
    let Some(mut len) = size.checked_add(block_offset).and_then(round_to_os_page) else {
        return ptr::null_mut();
    };
    if len
        .checked_add(map_align)
        .is_none_or(|t| t > isize::MAX as usize)
    {
        return ptr::null_mut();
    }
    let mut h = ptr::null_mut();
    if map_align == SEGMENT_SIZE {
        let m = huge_cache_take(len, zeroed, idx, block_offset);
        if !m.seg.is_null() {
            h = m.seg.cast::<u8>();
            len = m.len;
        }
    }
    if h.is_null() {
        h = sys::map_aligned(len, map_align, map_offset);
        if h.is_null() {
            return h;
        }
        with_huge_cache(|c| c.count_alloc(idx, len, block_offset));
    }
    let header = SegmentHeader {
        magic: MAGIC,
        kind: KIND_HUGE,
        owner: idx as u32,
        used_pages: AtomicU32::new(0),
        map_len: len,
        block_offset,
        next: ptr::null_mut(),
    };
    // SAFETY: `h` is a fresh writable mapping of at least HUGE_HEADER bytes.
    unsafe { h.cast::<SegmentHeader>().write(header) };
    h.wrapping_add(block_offset)
}

/// # Safety
/// `seg` is the header of a live huge block that is not used afterwards.
unsafe fn free_huge(seg: *mut SegmentHeader, current: usize) {
    // SAFETY: the header is mapped until the unmap below.
    let hdr = unsafe { &*seg };
    let (owner, len, off) = (hdr.owner as usize, hdr.map_len, hdr.block_offset);
    // SAFETY: the mapping belongs to this block alone, which the caller gives up.
    if unsafe { huge_release(seg, len, off, owner, current) } {
        return;
    }
    // SAFETY: the mapping belongs to this block alone, which the caller gives up.
    unsafe { sys::unmap(seg.cast(), len) };
}

/// Resizes huge block `p` in its mapping (`mremap`, moving page tables when it cannot grow
/// where it is). Null when out of memory (the block is untouched then).
///
/// # Safety
/// `p` is a live huge block aligned to `align`; `new_size` needs the huge path.
unsafe fn realloc_huge(p: *mut u8, new_size: usize, align: usize) -> *mut u8 {
    let seg = page::segment_of(p);
    // SAFETY: live huge block: its header is mapped and only its owner touches it.
    let hdr = unsafe { &*seg };
    let (owner, old_len, off) = (hdr.owner as usize, hdr.map_len, hdr.block_offset);
    let Some(new_len) = new_size.checked_add(off).and_then(round_to_os_page) else {
        return ptr::null_mut();
    };
    if new_len == old_len {
        return p;
    }
    if new_len < old_len {
        // SAFETY: the tail beyond the new length belongs to this block only.
        unsafe { sys::unmap(seg.cast::<u8>().wrapping_add(new_len), old_len - new_len) };
        // SAFETY: the header stays mapped; only the block's owner writes it.
        unsafe { (*seg).map_len = new_len };
        with_huge_cache(|c| {
            c.counters[owner].bytes -= old_len - new_len;
            c.live -= old_len - new_len;
        });
        return p;
    }
    // SAFETY: `[seg, seg + old_len)` is this block's whole mapping.
    let new_seg = if unsafe { sys::remap_in_place(seg.cast(), old_len, new_len) } {
        seg
    } else {
        let (map_align, map_offset, _) = huge_geometry(align);
        // SAFETY: as above; on success the old range is gone and we only use the new one.
        let moved =
            unsafe { sys::remap_aligned(seg.cast(), old_len, new_len, map_align, map_offset) };
        if moved.is_null() {
            return ptr::null_mut();
        }
        moved.cast::<SegmentHeader>()
    };
    // SAFETY: the header moved with the mapping and is owned by this block.
    unsafe { (*new_seg).map_len = new_len };
    with_huge_cache(|c| {
        c.counters[owner].bytes += new_len - old_len;
        c.live += new_len - old_len;
    });
    new_seg.cast::<u8>().wrapping_add(off)
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
        return Some(unsafe { realloc_huge(p, new_size, align) });
    }
    None
}

// ---------------------------------------------------------------------------------------
// Per-thread cache of small blocks.
//
// A thread keeps up to CACHE_BLOCKS free blocks per class for the first CACHED_CLASSES
// classes, all owned by one arena (the one it last refilled from), so the common
// alloc/free pair touches no lock and no shared line. Blocks of other arenas are freed to
// their owner directly (no false sharing of handed-out blocks). A pthread key destructor
// returns everything when the thread exits; `flush_thread_cache` does it on demand.

/// Classes served from the per-thread cache (blocks up to 1 KiB).
pub const CACHED_CLASSES: usize = 20;
/// Most free blocks a thread keeps per cached class.
pub const CACHE_BLOCKS: u32 = 32;
/// Blocks taken from the arena in one refill (one lock acquisition).
const REFILL: u32 = CACHE_BLOCKS / 2;

const _: () = assert!(CACHED_CLASSES <= NUM_CLASSES && REFILL >= 1);

const CACHE_UNREGISTERED: u8 = 0;
const CACHE_ACTIVE: u8 = 1;
const CACHE_REGISTERING: u8 = 2;
/// Thread exiting, or no pthread key: every call goes to the arenas.
const CACHE_OFF: u8 = 3;

#[derive(Clone, Copy)]
struct Bin {
    head: *mut u8,
    count: u32,
}

struct ThreadCache {
    bins: [Bin; CACHED_CLASSES],
    /// Arena whose blocks this cache holds (`NO_ARENA` until the first refill).
    arena: usize,
    state: u8,
    /// Freed blocks of arena `remote_owner` (another arena's when they were freed; kept
    /// when the cache switches to that arena, see `cache_refill`), returned in one batch.
    remote: *mut u8,
    remote_owner: usize,
    remote_count: u32,
}

std::thread_local! {
    /// Const-initialised and without `Drop`: never allocates, usable during thread exit.
    static CACHE: UnsafeCell<ThreadCache> = const {
        UnsafeCell::new(ThreadCache {
            bins: [Bin { head: ptr::null_mut(), count: 0 }; CACHED_CLASSES],
            arena: NO_ARENA,
            state: CACHE_UNREGISTERED,
            remote: ptr::null_mut(),
            remote_owner: 0,
            remote_count: 0,
        })
    };
}

/// `ThreadCache::arena` of a thread that has not allocated yet: every block it frees is
/// some other arena's.
const NO_ARENA: usize = usize::MAX;

/// The pthread key whose destructor flushes a thread's cache (`u32::MAX`: none).
static CACHE_KEY: AtomicU32 = AtomicU32::new(u32::MAX);

#[inline]
fn cache_ptr() -> Option<*mut ThreadCache> {
    CACHE.try_with(|c| c.get()).ok()
}

/// Pops a cached block of class `class` (< CACHED_CLASSES).
#[inline]
pub(crate) fn cache_pop(class: usize) -> Option<*mut u8> {
    let tc = cache_ptr()?;
    // SAFETY: the cache is this thread's own; no reference to it outlives this function
    // and nothing here re-enters the allocator.
    let bin = unsafe { &mut (*tc).bins[class] };
    let h = bin.head;
    if h.is_null() {
        return None;
    }
    // SAFETY: cached blocks are free and hold the next cached block in their first word.
    bin.head = unsafe { h.cast::<*mut u8>().read() };
    bin.count -= 1;
    Some(h)
}

/// Blocks of another arena a thread collects before returning them under one lock.
pub const REMOTE_BATCH: u32 = 32;

/// Offers small block `p` of class `class` owned by arena `owner` to the cache; `false`
/// means the caller frees it to the arena.
///
/// # Safety
/// `p` is a live small block of class `class`, given up by the caller if accepted.
#[inline]
pub(crate) unsafe fn cache_push(p: *mut u8, owner: usize, class: usize) -> bool {
    let Some(tcp) = cache_ptr() else {
        return false;
    };
    // SAFETY: this thread's own cache (see `cache_pop`).
    let tc = unsafe { &mut *tcp };
    if tc.state != CACHE_ACTIVE || tc.arena != owner || class >= CACHED_CLASSES {
        // SAFETY: forwarded from the caller.
        return unsafe { push_slow(tcp, p, owner, class) };
    }
    let bin = &mut tc.bins[class];
    if bin.count >= CACHE_BLOCKS {
        // SAFETY: forwarded from the caller.
        return unsafe { push_slow(tcp, p, owner, class) };
    }
    // SAFETY: `p` is free now and at least 16 bytes long.
    unsafe { p.cast::<*mut u8>().write(bin.head) };
    bin.head = p;
    bin.count += 1;
    true
}

/// `cache_push` when the block is not simply parked: registers the cache on first use,
/// returns a full bin to the arena in one batch, and batches blocks of other arenas.
///
/// # Safety
/// As for `cache_push`; `tcp` is this thread's cache.
#[cold]
#[inline(never)]
unsafe fn push_slow(tcp: *mut ThreadCache, p: *mut u8, owner: usize, class: usize) -> bool {
    // SAFETY: this thread's own cache; no reference outlives a call that may re-enter.
    if unsafe { (*tcp).state } == CACHE_UNREGISTERED {
        // SAFETY: as above.
        unsafe { register(tcp) };
    }
    // SAFETY: as above.
    let tc = unsafe { &mut *tcp };
    if tc.state != CACHE_ACTIVE {
        return false;
    }
    if tc.arena == owner && class < CACHED_CLASSES {
        // The bin is full: return it whole under one lock, then park `p`.
        let bin = &mut tc.bins[class];
        let head = bin.head;
        *bin = Bin {
            head: ptr::null_mut(),
            count: 0,
        };
        // SAFETY: the bin's blocks are free blocks of this arena, detached above.
        unsafe { free_list(owner, head, owner) };
        // SAFETY: `p` is free and at least 16 bytes; the bin is this thread's.
        unsafe { cache_insert(tcp, class, p) };
        return true;
    }
    // A block of another arena: batch it (one owner at a time).
    if tc.remote_count > 0 && tc.remote_owner != owner {
        // SAFETY: as above.
        unsafe { flush_remote(tcp) };
    }
    // SAFETY: as above.
    let tc = unsafe { &mut *tcp };
    // SAFETY: `p` is free and at least 16 bytes long.
    unsafe { p.cast::<*mut u8>().write(tc.remote) };
    tc.remote = p;
    tc.remote_owner = owner;
    tc.remote_count += 1;
    if tc.remote_count >= REMOTE_BATCH {
        // SAFETY: as above.
        unsafe { flush_remote(tcp) };
    }
    true
}

/// Returns the batched blocks of another arena.
///
/// # Safety
/// `tcp` is this thread's cache.
unsafe fn flush_remote(tcp: *mut ThreadCache) {
    // SAFETY: forwarded; the batch is detached before the blocks are freed.
    let (head, owner, current) = unsafe {
        let tc = &mut *tcp;
        let h = tc.remote;
        tc.remote = ptr::null_mut();
        tc.remote_count = 0;
        (h, tc.remote_owner, tc.arena)
    };
    if !head.is_null() {
        // SAFETY: the batch holds free blocks of `owner`, detached above.
        unsafe { free_list(owner, head, current) };
    }
}

/// Cache miss on class `class` (< CACHED_CLASSES): refills from arena `idx` under one
/// lock and returns one block (null when out of memory).
#[cold]
#[inline(never)]
pub(crate) fn cache_refill(idx: usize, class: usize) -> *mut u8 {
    let Some(tcp) = cache_ptr() else {
        return alloc_small(idx, class);
    };
    // SAFETY: this thread's own cache; `register` and `flush` below take it by pointer.
    let state = unsafe { (*tcp).state };
    if state == CACHE_UNREGISTERED {
        // SAFETY: `tcp` is this thread's cache.
        unsafe { register(tcp) };
    }
    // SAFETY: as above.
    if unsafe { (*tcp).state } != CACHE_ACTIVE {
        return alloc_small(idx, class);
    }
    // Blocks of the previous arena go home before the cache switches arenas. A batch of
    // freed blocks of arena `idx` itself stays batched: returned now, this very refill
    // would hand them straight back to this thread. They are typically blocks another
    // thread allocated and handed over (Hoard's cache-scratch); reusing one here would
    // put this thread's objects on that thread's cache lines (passive false sharing).
    // SAFETY: as above.
    if unsafe { (*tcp).arena } != idx {
        // SAFETY: as above.
        unsafe { flush_bins(tcp) };
        // SAFETY: as above.
        if unsafe { (*tcp).remote_owner } != idx {
            // SAFETY: as above.
            unsafe { flush_remote(tcp) };
        }
        // SAFETY: as above.
        unsafe { (*tcp).arena = idx };
    }
    let arena = arena(idx);
    let st = arena.acquire();
    let mut first = ptr::null_mut();
    for i in 0..REFILL {
        let mut page = st.classes[class];
        if page.is_null() {
            if !is_ready() {
                break;
            }
            // SAFETY: the lock is held.
            page = unsafe { fresh_page(st, class, idx) };
            if page.is_null() {
                break;
            }
        }
        // SAFETY: the lock is held; `page` heads the class list so has a free block.
        let (block, full) = unsafe { page::take_block(page) };
        if full {
            // SAFETY: the lock is held and `page` heads this class list.
            unsafe { page::list_remove(&mut st.classes[class], page) };
            // SAFETY: the lock is held.
            unsafe { (*page).state = PAGE_FULL };
        }
        st.allocs += 1;
        if i == 0 {
            first = block;
        } else {
            // SAFETY: this thread's own cache; `block` is ours and free.
            unsafe { cache_insert(tcp, class, block) };
        }
    }
    arena.lock.unlock();
    if first.is_null() {
        // Not ready yet (fork handlers) or out of memory: the general path handles both.
        return alloc_small(idx, class);
    }
    first
}

/// # Safety
/// `tcp` is this thread's cache and `block` a free block of class `class` it may keep.
unsafe fn cache_insert(tcp: *mut ThreadCache, class: usize, block: *mut u8) {
    // SAFETY: forwarded from the caller.
    let bin = unsafe { &mut (*tcp).bins[class] };
    // SAFETY: `block` is free and at least 16 bytes.
    unsafe { block.cast::<*mut u8>().write(bin.head) };
    bin.head = block;
    bin.count += 1;
}

/// Arms the exit destructor for this thread's cache.
///
/// # Safety
/// `tcp` is this thread's cache.
#[cold]
unsafe fn register(tcp: *mut ThreadCache) {
    let key = CACHE_KEY.load(Ordering::Acquire);
    if key == u32::MAX {
        // No key (yet): stay unregistered, serve from the arenas.
        return;
    }
    // `pthread_setspecific` may allocate (keys beyond the first 32): such calls bypass
    // the cache because the state is not ACTIVE meanwhile.
    // SAFETY: forwarded from the caller.
    unsafe { (*tcp).state = CACHE_REGISTERING };
    let ok = sys::set_thread_value(key, tcp.cast());
    // SAFETY: as above.
    unsafe { (*tcp).state = if ok { CACHE_ACTIVE } else { CACHE_OFF } };
}

/// Returns every cached block of the thread cache `tcp` to its arena.
///
/// # Safety
/// `tcp` is this thread's cache.
unsafe fn flush(tcp: *mut ThreadCache) {
    // SAFETY: forwarded from the caller.
    unsafe { flush_bins(tcp) };
    // SAFETY: forwarded from the caller.
    unsafe { flush_remote(tcp) };
}

/// Returns the cached blocks of the bins (not the remote batch) to the cache's arena.
///
/// # Safety
/// `tcp` is this thread's cache.
unsafe fn flush_bins(tcp: *mut ThreadCache) {
    // Every cached block belongs to the cache's arena, so none of these frees is remote.
    // SAFETY: forwarded from the caller.
    let current = unsafe { (*tcp).arena };
    for class in 0..CACHED_CLASSES {
        // SAFETY: forwarded from the caller; the bin is detached before freeing.
        let p = unsafe {
            let bin = &mut (*tcp).bins[class];
            let h = bin.head;
            *bin = Bin {
                head: ptr::null_mut(),
                count: 0,
            };
            h
        };
        if !p.is_null() {
            // SAFETY: the bin's blocks are free blocks of the cache's arena, detached.
            unsafe { free_list(current, p, current) };
        }
    }
}

/// The pthread key destructor: runs in the exiting thread with its cache pointer.
extern "C" fn cache_exit(tcp: *mut libc::c_void) {
    let tcp = tcp.cast::<ThreadCache>();
    // SAFETY: the value set by `register` is the exiting thread's own cache, alive until
    // its TLS is released after key destructors.
    unsafe { (*tcp).state = CACHE_OFF };
    // SAFETY: as above.
    unsafe { flush(tcp) };
}

/// Creates the cache key (from `ensure_ready`, with no lock held).
fn create_cache_key() {
    if let Some(key) = sys::create_thread_key(cache_exit) {
        CACHE_KEY.store(key, Ordering::Release);
    }
}

/// Returns the calling thread's cached free blocks to their arenas (statistics then count
/// them as freed). Threads do this automatically when they exit.
pub fn flush_thread_cache() {
    if let Some(tcp) = cache_ptr() {
        // SAFETY: this thread's own cache.
        unsafe { flush(tcp) };
    }
}

// ---------------------------------------------------------------------------------------
// Statistics.

/// A snapshot of one arena's counters (or their sum).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ArenaStats {
    /// Blocks allocated (small and huge).
    pub allocations: u64,
    /// Blocks freed (small and huge).
    pub frees: u64,
    /// Frees made while the freeing thread was on another arena's CPU.
    pub remote_frees: u64,
    /// Bytes in live blocks (usable sizes: block size for small, mapping for huge).
    pub bytes_in_use: usize,
    /// Lock acquisitions that found the arena lock held.
    pub contended_locks: u64,
    /// Of `allocations`, those mapped directly (huge).
    pub huge_allocations: u64,
}

impl ArenaStats {
    /// Blocks allocated and not yet freed.
    pub fn live_allocations(&self) -> u64 {
        self.allocations.wrapping_sub(self.frees)
    }

    fn add(&mut self, o: &ArenaStats) {
        self.allocations = self.allocations.wrapping_add(o.allocations);
        self.frees = self.frees.wrapping_add(o.frees);
        self.remote_frees = self.remote_frees.wrapping_add(o.remote_frees);
        self.bytes_in_use = self.bytes_in_use.wrapping_add(o.bytes_in_use);
        self.contended_locks = self.contended_locks.wrapping_add(o.contended_locks);
        self.huge_allocations = self.huge_allocations.wrapping_add(o.huge_allocations);
    }
}

/// Counters of arena `index` (`None` when `index >= MAX_HEAP_COUNT`).
pub fn arena_stats(index: usize) -> Option<ArenaStats> {
    let a = ARENAS.get(index)?;
    let st = a.acquire();
    let (allocs, frees, remote, contended) = (st.allocs, st.frees, st.remote_frees, st.contended);
    // Bytes in use are summed from the pages rather than counted on every call.
    let mut bytes = 0usize;
    let mut seg = st.segments;
    while !seg.is_null() {
        for page in page::pages_of(seg) {
            // SAFETY: the lock is held; the segment is live while listed.
            bytes += unsafe { page::bytes_in_use(page) };
        }
        // SAFETY: as above.
        seg = unsafe { (*seg).next };
    }
    a.lock.unlock();
    let h = with_huge_cache(|c| c.counters[index]);
    Some(ArenaStats {
        allocations: allocs.wrapping_add(h.allocs),
        frees: frees.wrapping_add(h.frees),
        remote_frees: remote.wrapping_add(h.remote_frees),
        bytes_in_use: bytes.wrapping_add(h.bytes),
        contended_locks: contended,
        huge_allocations: h.allocs,
    })
}

/// Sum of the counters of all arenas.
pub fn total_stats() -> ArenaStats {
    let mut t = ArenaStats::default();
    for i in 0..MAX_HEAP_COUNT {
        if let Some(s) = arena_stats(i) {
            t.add(&s);
        }
    }
    t
}

const _: () = assert!(PAGES_PER_SEGMENT >= 2);

#[cfg(test)]
mod tests {
    use super::*;

    /// Every power-of-two alignment gets a placement whose block is aligned and finds its
    /// header. (The release-only miscompilation described at `huge_geometry` depends on
    /// how the function is inlined, and does not show in this test binary; the `huge`
    /// scenario, which links the library as users do, is the regression test for it.)
    #[test]
    fn huge_geometry_places_every_alignment() {
        // Called through an opaque pointer, so the test runs the function as compiled on
        // its own rather than a copy specialised for this loop.
        let geometry: fn(usize) -> (usize, usize, usize) = core::hint::black_box(huge_geometry);
        for shift in 0..=40 {
            let align = core::hint::black_box(1usize << shift);
            let (map_align, map_offset, block_offset) = geometry(align);
            assert!(
                map_align.is_power_of_two() && map_align >= SEGMENT_SIZE,
                "align {align}"
            );
            assert!(map_offset <= SEGMENT_SIZE && map_offset.is_multiple_of(4096));
            // The header (at the mapping start) holds a whole `SegmentHeader`.
            assert!(block_offset >= HUGE_HEADER, "align {align}");
            // The header is where `segment_of` looks: the segment below the block.
            assert!(block_offset <= SEGMENT_SIZE, "align {align}");
            // A mapping `h` with `(h + map_offset) % map_align == 0` puts the block at an
            // `align`-aligned address.
            assert_eq!(
                (block_offset + map_align - map_offset) % align,
                0,
                "align {align}: {:?}",
                (map_align, map_offset, block_offset)
            );
            // The block starts in the header's segment-aligned unit or right after it.
            let h = map_align - map_offset;
            assert_eq!(h % SEGMENT_SIZE, 0, "align {align}");
            let block = ptr::without_provenance_mut::<u8>(h + block_offset);
            assert_eq!(page::segment_of(block).addr(), h, "align {align}");
        }
    }
}
