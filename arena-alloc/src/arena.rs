//! Arenas: one lock, per-class page lists and counters each; the global arena table;
//! huge mappings; fork handlers.

use crate::class::{NUM_CLASSES, class_for, class_size};
use crate::lock::RawLock;
use crate::page::{
    self, HUGE_HEADER, KIND_HUGE, KIND_SMALL, MAGIC, PAGE_AVAILABLE, PAGE_FREE, PAGE_FULL,
    PAGES_PER_SEGMENT, Page, SEGMENT_SIZE, SegmentHeader,
};
use crate::sync::global::{AtomicU8, AtomicU32, AtomicU64, AtomicUsize, Ordering, UnsafeCell};
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
}

/// Counters; the small-path ones are only written under the arena lock (plain load+store,
/// no locked instruction), the huge-path ones are updated atomically without it.
#[derive(Debug)]
struct Counters {
    allocs: AtomicU64,
    frees: AtomicU64,
    remote_frees: AtomicU64,
    bytes: AtomicUsize,
    contended: AtomicU64,
    huge_allocs: AtomicU64,
    huge_frees: AtomicU64,
    huge_remote_frees: AtomicU64,
    huge_bytes: AtomicUsize,
}

/// One arena, on its own cache lines.
#[repr(C, align(128))]
pub(crate) struct Arena {
    lock: RawLock<AtomicU32>,
    state: UnsafeCell<ArenaState>,
    stats: Counters,
}

// SAFETY: `state` (raw page pointers) is only accessed while `lock` is held; the rest is
// atomics.
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
            }),
            stats: Counters {
                allocs: AtomicU64::new(0),
                frees: AtomicU64::new(0),
                remote_frees: AtomicU64::new(0),
                bytes: AtomicUsize::new(0),
                contended: AtomicU64::new(0),
                huge_allocs: AtomicU64::new(0),
                huge_frees: AtomicU64::new(0),
                huge_remote_frees: AtomicU64::new(0),
                huge_bytes: AtomicUsize::new(0),
            },
        }
    }

    #[inline]
    fn acquire(&self) {
        if self.lock.lock() {
            bump64(&self.stats.contended, 1);
        }
    }
}

static ARENAS: [Arena; MAX_HEAP_COUNT] = [const { Arena::new() }; MAX_HEAP_COUNT];

/// Adds to a counter only written under the arena lock.
#[inline]
fn bump64(c: &AtomicU64, n: u64) {
    c.store(c.load(Ordering::Relaxed).wrapping_add(n), Ordering::Relaxed);
}

#[inline]
fn add_bytes(c: &AtomicUsize, n: usize) {
    c.store(c.load(Ordering::Relaxed).wrapping_add(n), Ordering::Relaxed);
}

#[inline]
fn sub_bytes(c: &AtomicUsize, n: usize) {
    c.store(c.load(Ordering::Relaxed).wrapping_sub(n), Ordering::Relaxed);
}

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
}

extern "C" fn fork_parent() {
    for a in &ARENAS {
        a.lock.unlock();
    }
}

extern "C" fn fork_child() {
    for a in &ARENAS {
        a.lock.reset();
    }
}

// ---------------------------------------------------------------------------------------
// Small blocks.

/// Allocates a block of size class `class` from arena `idx`; null when out of memory.
#[inline]
pub(crate) fn alloc_small(idx: usize, class: usize) -> *mut u8 {
    let arena = &ARENAS[idx];
    arena.acquire();
    // SAFETY: the lock is held: this is the only reference to the state.
    let st = unsafe { &mut *arena.state.get() };
    let mut page = st.classes[class];
    if page.is_null() {
        if !is_ready() {
            arena.lock.unlock();
            ensure_ready();
            return alloc_small(idx, class);
        }
        // SAFETY: the lock is held.
        page = unsafe { fresh_page(st, class, idx) };
        if page.is_null() {
            arena.lock.unlock();
            return ptr::null_mut();
        }
    }
    // SAFETY: the lock is held and pages in a class list have a free block.
    let (block, full) = unsafe { page::take_block(page) };
    if full {
        // SAFETY: the lock is held and `page` heads this class list.
        unsafe { page::list_remove(&mut st.classes[class], page) };
        // SAFETY: the lock is held.
        unsafe { (*page).state = PAGE_FULL };
    }
    bump64(&arena.stats.allocs, 1);
    add_bytes(&arena.stats.bytes, class_size(class));
    arena.lock.unlock();
    block
}

/// Formats a page for `class`, puts it at the head of the class list and returns it.
///
/// # Safety
/// The caller holds the lock of arena `idx`, whose state is `st`.
#[cold]
unsafe fn fresh_page(st: &mut ArenaState, class: usize, idx: usize) -> *mut Page {
    if st.free_pages.is_null() {
        let Some(pages) = page::new_segment(idx as u32) else {
            return ptr::null_mut();
        };
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
    // SAFETY: `p` is live, so its header is mapped; `kind`/`owner` never change.
    let hdr = unsafe { &*seg };
    debug_assert_eq!(hdr.magic, MAGIC, "pointer not allocated by arena-alloc");
    let owner = hdr.owner as usize;
    if hdr.kind != KIND_SMALL {
        // SAFETY: the caller passes a live huge block.
        unsafe { free_huge(seg, current) };
        return;
    }
    let page = page::page_of(seg, p);
    let arena = &ARENAS[owner];
    arena.acquire();
    // SAFETY: the lock is held.
    let st = unsafe { &mut *arena.state.get() };
    // SAFETY: the lock is held and `p` is a live block of `page`.
    let (size, was_full, empty) = unsafe { page::put_block(page, p) };
    // SAFETY: the lock is held; `class` is fixed while the page is formatted.
    let class = unsafe { (*page).class } as usize;
    if was_full {
        // SAFETY: the lock is held; a full page is in no list.
        unsafe { page::list_push(&mut st.classes[class], page) };
        // SAFETY: the lock is held.
        unsafe { (*page).state = PAGE_AVAILABLE };
    } else if empty && st.classes[class] != page {
        // Keep one page per class even when empty, so an alloc/free pair on an empty class
        // does not format a page each time.
        // SAFETY: the lock is held and the page is empty and in its class list.
        unsafe { retire_page(st, page, class) };
    }
    bump64(&arena.stats.frees, 1);
    if owner != current {
        bump64(&arena.stats.remote_frees, 1);
    }
    sub_bytes(&arena.stats.bytes, size);
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
            // SAFETY: no page of the segment is in use or listed any more.
            unsafe { sys::unmap(seg.cast(), SEGMENT_SIZE) };
        }
    }
}

/// Usable bytes of live block `p`.
///
/// # Safety
/// `p` is a live block of this allocator.
pub(crate) unsafe fn usable_size(p: *mut u8) -> usize {
    let seg = page::segment_of(p);
    // SAFETY: `p` is live, so its header is mapped.
    let hdr = unsafe { &*seg };
    if hdr.kind == KIND_SMALL {
        // SAFETY: `p` is a live block of this small segment.
        unsafe { page::block_size(seg, p) }
    } else {
        hdr.map_len - hdr.block_offset
    }
}

// ---------------------------------------------------------------------------------------
// Huge blocks: one mapping each, header first.

/// (alignment, offset) passed to `sys::map_aligned` and the block offset, for `align`.
fn huge_geometry(align: usize) -> (usize, usize, usize) {
    if align < SEGMENT_SIZE {
        (SEGMENT_SIZE, 0, align.max(HUGE_HEADER))
    } else {
        (align, SEGMENT_SIZE, SEGMENT_SIZE)
    }
}

fn round_to_os_page(n: usize) -> Option<usize> {
    let ps = sys::os_page_size();
    Some(n.checked_add(ps - 1)? & !(ps - 1))
}

/// Maps a block of `size` bytes aligned to `align`, owned (for statistics) by arena `idx`.
pub(crate) fn alloc_huge(idx: usize, size: usize, align: usize) -> *mut u8 {
    if !is_ready() {
        ensure_ready();
    }
    let (map_align, map_offset, block_offset) = huge_geometry(align);
    let Some(len) = size.checked_add(block_offset).and_then(round_to_os_page) else {
        return ptr::null_mut();
    };
    if len
        .checked_add(map_align)
        .is_none_or(|t| t > isize::MAX as usize)
    {
        return ptr::null_mut();
    }
    let h = sys::map_aligned(len, map_align, map_offset);
    if h.is_null() {
        return h;
    }
    let header = SegmentHeader {
        magic: MAGIC,
        kind: KIND_HUGE,
        owner: idx as u32,
        used_pages: AtomicU32::new(0),
        map_len: len,
        block_offset,
    };
    // SAFETY: `h` is a fresh writable mapping of at least HUGE_HEADER bytes.
    unsafe { h.cast::<SegmentHeader>().write(header) };
    let s = &ARENAS[idx].stats;
    s.huge_allocs.fetch_add(1, Ordering::Relaxed);
    s.huge_bytes
        .fetch_add(len - block_offset, Ordering::Relaxed);
    h.wrapping_add(block_offset)
}

/// # Safety
/// `seg` is the header of a live huge block that is not used afterwards.
unsafe fn free_huge(seg: *mut SegmentHeader, current: usize) {
    // SAFETY: the header is mapped until the unmap below.
    let hdr = unsafe { &*seg };
    let (owner, len, off) = (hdr.owner as usize, hdr.map_len, hdr.block_offset);
    let s = &ARENAS[owner].stats;
    s.huge_frees.fetch_add(1, Ordering::Relaxed);
    if owner != current {
        s.huge_remote_frees.fetch_add(1, Ordering::Relaxed);
    }
    s.huge_bytes.fetch_sub(len - off, Ordering::Relaxed);
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
    let s = &ARENAS[owner].stats;
    if new_len == old_len {
        return p;
    }
    if new_len < old_len {
        // SAFETY: the tail beyond the new length belongs to this block only.
        unsafe { sys::unmap(seg.cast::<u8>().wrapping_add(new_len), old_len - new_len) };
        // SAFETY: the header stays mapped; only the block's owner writes it.
        unsafe { (*seg).map_len = new_len };
        s.huge_bytes.fetch_sub(old_len - new_len, Ordering::Relaxed);
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
    s.huge_bytes.fetch_add(new_len - old_len, Ordering::Relaxed);
    new_seg.cast::<u8>().wrapping_add(off)
}

/// Reallocates `p` (with `old_size` meaningful bytes) to `new_size` bytes aligned to
/// `align`, in place when possible. Null when out of memory (then `p` is untouched).
///
/// # Safety
/// `p` is a live block of this allocator aligned to `align`; `new_size > 0`.
pub(crate) unsafe fn realloc(
    p: *mut u8,
    old_size: usize,
    new_size: usize,
    align: usize,
    idx: usize,
) -> *mut u8 {
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
            return p;
        }
    } else if target.is_none() {
        // SAFETY: `p` is a live huge block and the new size stays huge.
        return unsafe { realloc_huge(p, new_size, align) };
    }
    let q = match target {
        Some(c) => alloc_small(idx, c),
        None => alloc_huge(idx, new_size, align),
    };
    if q.is_null() {
        return q;
    }
    // SAFETY: both blocks are live, distinct, and at least this long.
    unsafe { ptr::copy_nonoverlapping(p, q, old_size.min(new_size)) };
    // SAFETY: `p` is live and the caller gives it up on success.
    unsafe { free(p, idx) };
    q
}

/// Whether a fresh block for (`size`, `align`) is known to be zeroed already.
pub(crate) fn fresh_is_zeroed(size: usize, align: usize) -> bool {
    class_for(size, align).is_none()
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
    let s = &ARENAS.get(index)?.stats;
    let r = Ordering::Relaxed;
    let huge_allocs = s.huge_allocs.load(r);
    Some(ArenaStats {
        allocations: s.allocs.load(r).wrapping_add(huge_allocs),
        frees: s.frees.load(r).wrapping_add(s.huge_frees.load(r)),
        remote_frees: s
            .remote_frees
            .load(r)
            .wrapping_add(s.huge_remote_frees.load(r)),
        bytes_in_use: s.bytes.load(r).wrapping_add(s.huge_bytes.load(r)),
        contended_locks: s.contended.load(r),
        huge_allocations: huge_allocs,
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
