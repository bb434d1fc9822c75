//! Blocks above `SMALL_MAX` (what mimalloc calls its arenas' business): page-granular
//! extents in large segments up to [`LARGE_MAX`] (`extent.rs`), mappings of their own
//! above it (`solo.rs`). One heap for the process, under one lock.
//!
//! ```text
//!  request            where                                  usable bytes
//!  128 KiB+1 .. 1.25 MiB   extent of a large segment (4 KiB units)   its size class (<= 1.25x)
//!  above, or aligned      a mapping of its own (whole OS pages)      the pages (~1.0x)
//!  above 256 KiB
//! ```
//!
//! Freed memory stays resident for the next block, of any size, while the free resident
//! ("dirty") bytes stay within a budget: `max(RETAIN_MIN, live bytes / RETAIN_SHARE, their
//! recent peak - live)` ([`RETAIN_PEAK_WINDOW`]); beyond it, what is freed is
//! decommitted (extents) or unmapped (mappings) at once. And whenever memory the process
//! never touched is about to be touched — a fresh mapping, an extent on clean units, a
//! small page from a new segment (`reclaim_for_small`) — the same amount of that free
//! resident memory of the other kinds is given back first: memory freed by one size serves
//! another through the OS, and the free reserve never adds to the process's peak.
//!
//! Segments and cached mappings keep their headers mapped (a large segment is unmapped only
//! beyond [`LARGE_EMPTY_KEPT`] empty ones, and then its header page stays a while, as an
//! unmapped mapping's and an unmapped small segment's do: `TOMBSTONES`), so a second free
//! of a block reads a header that says the block is not live: reported, and the process
//! aborts. (Only a second free after `TOMBSTONES` more segments and mappings were unmapped
//! can fault.)

mod extent;
mod solo;

pub use extent::{LARGE_MAX, LARGE_UNIT, MAX_LARGE_SEGMENTS};
pub use solo::SOLO_CACHE;

use crate::class::{SMALL_MAX, large_class_size};
use crate::config::MAX_HEAP_COUNT;
use crate::lock::RawLock;
use crate::page::{
    BLOCK_FREED, BLOCK_LIVE, KIND_BURIED, KIND_HUGE, KIND_LARGE, MAGIC, SEGMENT_SIZE, SegmentHeader,
};
use crate::sync::unmodeled::{AtomicU32, AtomicUsize, Ordering, UnsafeCell};
use crate::sys;
use core::ptr;
use extent::{LARGE_SEGMENT_BYTES, Table, UNITS, bits, unit_addr};

/// Dirty (resident) bytes of freed blocks that are always kept for reuse (8 MiB). With 2
/// MiB, mimalloc-bench's mstress (2-2.7 MiB of live big blocks, a recent peak of 5.8 MiB)
/// decommitted a 4 MiB segment about twice per round and faulted it in again: 9,000 of its
/// 14,000 faults, 1.2x-1.4x mimalloc's time (MEASUREMENTS.md, 2026-12-03).
pub const RETAIN_MIN: usize = 8 << 20;
/// Beyond [`RETAIN_MIN`], freed blocks stay dirty up to the bytes of live blocks above
/// `SMALL_MAX` divided by this (1: as many free dirty bytes as live ones, about what
/// glibc's heap keeps; with 1/4, mimalloc-bench's malloc-large faulted 13x more often).
pub const RETAIN_SHARE: usize = 1;
/// Freed blocks also stay dirty while live and free dirty bytes together stay within the
/// highest live bytes seen in this window of releases or the one before; a window ends
/// once the bytes released in it exceed `max(its peak, RETAIN_MIN)` (this many times):
/// a program that frees its big blocks in a burst (a thread's exit, the end of a phase),
/// however many, and then allocates as many again finds them resident, as in glibc's heap
/// (whose trim threshold follows the biggest freed block); one that shrank for good gives
/// the rest back after releasing about twice its new size. With the live bytes alone,
/// mimalloc-bench's mstress faulted 5x as often as with glibc; with a window of 128
/// releases, 4,096 blocks of 200 KB freed at once and allocated again faulted all in again
/// (7.9 us a block against glibc's 3.8).
pub const RETAIN_PEAK_WINDOW: usize = 1;
/// Large segments with no live block kept mapped whatever the budget (their free units,
/// resident or not, serve the next blocks); beyond them, an empty segment stays only while
/// its resident units fit the retain budget.
pub const LARGE_EMPTY_KEPT: usize = 2;
/// Header pages of unmapped segments and mappings kept mapped (see the module doc).
const TOMBSTONES: usize = 64;
/// Largest alignment an extent is placed at (64 units); above, a mapping of its own.
const EXTENT_ALIGN_MAX: usize = 64 * LARGE_UNIT;

/// Requests of at least this many bytes get a mapping of their own (`mallopt`'s
/// `M_MMAP_THRESHOLD`); by default only those above [`LARGE_MAX`].
static DIRECT_MIN: AtomicUsize = AtomicUsize::new(usize::MAX);
/// The retain minimum (`mallopt`'s `M_TRIM_THRESHOLD`), [`RETAIN_MIN`] by default.
static RETAIN_MIN_NOW: AtomicUsize = AtomicUsize::new(RETAIN_MIN);
/// The heap's free dirty bytes as of its last unlock: read without the lock, so that a
/// small page about to touch new memory takes the lock only when there is something to
/// give back.
static FREE_DIRTY: AtomicUsize = AtomicUsize::new(0);
/// Bytes of memory the process never touched (or gave back) that blocks were placed on
/// since the last [`take_fresh`].
static FRESH: AtomicUsize = AtomicUsize::new(0);

/// Bytes of untouched memory handed out since the last call (what the caller should make
/// the OS find elsewhere: `arena::release_empty_segments`).
pub(crate) fn take_fresh() -> usize {
    if FRESH.load(Ordering::Relaxed) == 0 {
        return 0;
    }
    FRESH.swap(0, Ordering::Relaxed)
}

/// Makes requests of at least `bytes` (above `SMALL_MAX`) map their own block; `usize::MAX`:
/// only those above [`LARGE_MAX`].
#[cfg_attr(not(feature = "capi"), allow(dead_code))]
pub(crate) fn set_direct_min(bytes: usize) {
    DIRECT_MIN.store(bytes, Ordering::Relaxed);
}

/// Sets the dirty bytes freed blocks always keep.
#[cfg_attr(not(feature = "capi"), allow(dead_code))]
pub(crate) fn set_retain_min(bytes: usize) {
    RETAIN_MIN_NOW.store(bytes, Ordering::Relaxed);
}

/// Huge-block counters of one arena, kept under the huge heap's lock.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct HugeCounters {
    pub(crate) allocs: u64,
    pub(crate) frees: u64,
    pub(crate) remote_frees: u64,
    /// Usable bytes of live huge blocks.
    pub(crate) bytes: usize,
}

/// Address-space and residency figures of the huge heap (for `mallinfo`/`malloc_stats`).
#[derive(Clone, Copy, Debug, Default)]
#[cfg_attr(not(feature = "capi"), allow(dead_code))]
pub(crate) struct HugeUsage {
    /// Bytes of address space of large segments.
    pub(crate) segment_bytes: usize,
    /// Number of large segments.
    pub(crate) segments: usize,
    /// Bytes held by live blocks (extents' units, mappings).
    pub(crate) live_bytes: usize,
    /// Bytes of it in mappings of their own.
    pub(crate) direct_bytes: usize,
    /// Number of live mappings of their own.
    pub(crate) direct_count: usize,
    /// Dirty (resident, reusable) bytes of freed blocks: free extent units and cached
    /// mappings.
    pub(crate) free_dirty: usize,
    /// Bytes of cached freed mappings.
    pub(crate) cached_bytes: usize,
}

struct HugeHeap {
    table: Table,
    cache: solo::Cache,
    /// Bytes of free dirty extent units and of cached mappings.
    free_dirty: usize,
    /// Bytes held by live blocks: extents' units (all counted as touched) and mappings.
    live: usize,
    direct_bytes: usize,
    direct_count: usize,
    /// The highest `live` seen at a release in this window of releases (see
    /// [`RETAIN_PEAK_WINDOW`]), and in the window before.
    peak: [usize; 2],
    /// Bytes released in this window.
    released: usize,
    counters: [HugeCounters; MAX_HEAP_COUNT],
    tombs: [*mut u8; TOMBSTONES],
    next_tomb: usize,
    /// The last extent freed within the budget, `(slot, bit, units)`: free (counted in
    /// `free_dirty`, its live bit clear) but its units still marked used, so that the next
    /// block of its size takes it back without a search; any other use of the segments'
    /// bitmaps releases it first ([`flush_hot`]).
    hot: Option<(usize, usize, usize)>,
}

struct HeapCell {
    lock: RawLock<AtomicU32>,
    heap: UnsafeCell<HugeHeap>,
}

// SAFETY: `heap` is only accessed while `lock` is held.
unsafe impl Sync for HeapCell {}

static HEAP: HeapCell = HeapCell {
    lock: RawLock::new(AtomicU32::new(0)),
    heap: UnsafeCell::new(HugeHeap {
        table: Table::new(),
        cache: solo::Cache::new(),
        free_dirty: 0,
        live: 0,
        direct_bytes: 0,
        direct_count: 0,
        peak: [0; 2],
        released: 0,
        counters: [HugeCounters {
            allocs: 0,
            frees: 0,
            remote_frees: 0,
            bytes: 0,
        }; MAX_HEAP_COUNT],
        tombs: [ptr::null_mut(); TOMBSTONES],
        next_tomb: 0,
        hot: None,
    }),
};

/// Runs `f` on the huge heap under its lock. `f` must not re-enter the allocator (it does
/// bookkeeping, and syscalls that do not allocate).
#[inline]
fn with_heap<R>(f: impl FnOnce(&mut HugeHeap) -> R) -> R {
    HEAP.lock.lock();
    // SAFETY: the lock is held; the reference lives only during `f`, which does not
    // re-enter the allocator.
    let h = unsafe { &mut *HEAP.heap.get() };
    let r = f(h);
    FREE_DIRTY.store(h.free_dirty, Ordering::Relaxed);
    HEAP.lock.unlock();
    r
}

/// Fork handlers: the lock is taken after the arenas' in `prepare`.
pub(crate) fn fork_lock() {
    HEAP.lock.lock();
}
pub(crate) fn fork_unlock() {
    HEAP.lock.unlock();
}
pub(crate) fn fork_reset() {
    HEAP.lock.reset();
}

/// Huge-block counters of arena `idx`.
pub(crate) fn counters(idx: usize) -> HugeCounters {
    with_heap(|h| h.counters[idx])
}

/// Address-space and residency figures.
#[cfg_attr(not(feature = "capi"), allow(dead_code))]
pub(crate) fn usage() -> HugeUsage {
    with_heap(|h| HugeUsage {
        segment_bytes: h.table.count * LARGE_SEGMENT_BYTES,
        segments: h.table.count,
        live_bytes: h.live,
        direct_bytes: h.direct_bytes,
        direct_count: h.direct_count,
        free_dirty: h.free_dirty,
        cached_bytes: h.cache.bytes,
    })
}

/// Writes `msg` and the pointer to stderr and aborts: a free the allocator cannot honour
/// without corrupting itself.
#[cold]
#[inline(never)]
pub(crate) fn invalid_free(msg: &str, p: *mut u8) -> ! {
    sys::abort_with(msg, p.addr())
}

// ---------------------------------------------------------------------------------------
// The retain budget and giving memory back.

/// The dirty bytes freed blocks may keep when live blocks hold `live` bytes and held up to
/// `peak` bytes at the releases of the last two windows.
fn retain_budget(live: usize, peak: usize) -> usize {
    RETAIN_MIN_NOW
        .load(Ordering::Relaxed)
        .max(live / RETAIN_SHARE)
        .max(peak.saturating_sub(live))
}

/// Records the live bytes at a release of `bytes`, before it (live bytes only fall at
/// releases, so their highest value in a window is seen at one of them, or is the current
/// one).
fn note_release(h: &mut HugeHeap, bytes: usize) {
    h.released += bytes;
    let window = h.peak[0].max(RETAIN_MIN_NOW.load(Ordering::Relaxed)) * RETAIN_PEAK_WINDOW;
    if h.released > window {
        h.released = bytes;
        h.peak = [0, h.peak[0]];
    }
    h.peak[0] = h.peak[0].max(h.live);
}

/// Whether `bytes` more free dirty bytes fit the budget (after a release of live bytes).
fn fits_budget(h: &HugeHeap, bytes: usize) -> bool {
    let peak = h.peak[0].max(h.peak[1]);
    h.free_dirty + bytes <= retain_budget(h.live, peak)
}

/// Keeps the header page at `page` mapped as a tombstone, unmapping the oldest one.
fn tombstone(h: &mut HugeHeap, page: *mut u8) {
    let i = h.next_tomb;
    h.next_tomb = (i + 1) % TOMBSTONES;
    let evicted = core::mem::replace(&mut h.tombs[i], page);
    if !evicted.is_null() {
        // SAFETY: a tombstone is the header page of an unmapped block or segment; nothing
        // refers to it.
        unsafe { sys::unmap(evicted, sys::os_page_size()) };
    }
}

/// Unmaps the empty small segment `seg` but its header page, which is marked
/// [`KIND_BURIED`] and kept a while as a tombstone: a late second free of one of its
/// blocks reads it and is reported as a double free instead of faulting.
///
/// # Safety
/// `seg` is a small segment's header with no page in use or listed: nothing refers to it.
pub(crate) unsafe fn bury_segment(seg: *mut SegmentHeader) {
    let ps = sys::os_page_size();
    // SAFETY: the header is mapped and nobody else reads or writes it any more (a racing
    // reader would be a free of a block that is no longer live, itself undefined).
    unsafe { (*seg).kind = KIND_BURIED };
    // SAFETY: the segment's pages beyond its header page are nobody's.
    unsafe { sys::unmap(seg.cast::<u8>().wrapping_add(ps), SEGMENT_SIZE - ps) };
    with_heap(|h| tombstone(h, seg.cast()));
}

/// Unmaps a freed mapping of its own but its header page, kept as a tombstone.
///
/// # Safety
/// `[seg, seg + len)` is a freed mapping's whole range, no longer cached.
unsafe fn unmap_mapping(h: &mut HugeHeap, seg: *mut SegmentHeader, len: usize) {
    let ps = sys::os_page_size();
    // SAFETY: the tail belongs to this freed mapping alone.
    unsafe { sys::unmap(seg.cast::<u8>().wrapping_add(ps), len - ps) };
    tombstone(h, seg.cast());
}

/// Unmaps the empty large segment in `slot` but its header page (a tombstone).
fn unmap_segment(h: &mut HugeHeap, slot: usize) {
    let seg = h.table.seg(slot);
    h.free_dirty -= h.table.free_dirty(slot) * LARGE_UNIT;
    h.table.remove(slot);
    // SAFETY: no block lives in the segment; its units lie after the header unit.
    unsafe { sys::unmap(unit_addr(seg, 0), UNITS * LARGE_UNIT) };
    tombstone(h, seg.cast());
}

/// Unmaps cached mappings, oldest first, until `bytes` are given back; the bytes given.
fn reclaim_cache(h: &mut HugeHeap, bytes: usize) -> usize {
    let mut done = 0;
    while done < bytes {
        let Some((seg, len)) = h.cache.take_oldest() else {
            break;
        };
        h.free_dirty -= len;
        // SAFETY: a cached mapping is a freed block's, taken out of the cache.
        unsafe { unmap_mapping(h, seg, len) };
        done += len;
    }
    done
}

/// Decommits free dirty extent units, segment after segment, until `bytes` are given
/// back; the bytes given.
fn reclaim_extents(h: &mut HugeHeap, bytes: usize) -> usize {
    flush_hot(h);
    let mut done = 0;
    while done < bytes && h.free_dirty > h.cache.bytes {
        let Some(slot) = h.table.next_free_dirty() else {
            break;
        };
        let seg = h.table.seg(slot);
        // SAFETY: the segment is mapped while listed; its bitmaps are the lock holder's.
        let b = unsafe { &mut *bits(seg) };
        if h.table.empty > LARGE_EMPTY_KEPT && b.used == [0; UNITS / 64] {
            // An empty segment kept for its resident units: unmapped, it gives them back
            // and its address space too.
            done += h.table.free_dirty(slot) * LARGE_UNIT;
            unmap_segment(h, slot);
            continue;
        }
        let mut found = false;
        for (s, n) in extent::free_dirty_runs(b) {
            found = true;
            // SAFETY: the units are free (no block), so nobody reads them.
            unsafe { sys::decommit(unit_addr(seg, s), n * LARGE_UNIT) };
            extent::clear_range(&mut b.dirty, s, n);
            h.table.set_free_dirty(slot, h.table.free_dirty(slot) - n);
            h.free_dirty -= n * LARGE_UNIT;
            done += n * LARGE_UNIT;
            if done >= bytes {
                break;
            }
        }
        debug_assert!(found, "free dirty units counted but none found");
        if !found {
            h.table.set_free_dirty(slot, 0);
        }
    }
    done
}

/// A small page is about to be formatted on memory the process has not touched (a new
/// segment, or a free page given back to the OS): first as many bytes of free resident
/// huge memory are given back, so that what big blocks freed serves small ones (through
/// the OS) instead of adding to the peak. Takes the huge heap's lock only when it holds
/// free dirty bytes.
pub(crate) fn reclaim_for_small(bytes: usize) {
    if FREE_DIRTY.load(Ordering::Relaxed) == 0 {
        return;
    }
    with_heap(|h| {
        let done = reclaim_cache(h, bytes);
        if done < bytes {
            reclaim_extents(h, bytes - done);
        }
    });
}

// ---------------------------------------------------------------------------------------
// Allocation.

/// Units of the extent for a block of `size` bytes: its size class (four per doubling),
/// or whole units for a request no bigger than `SMALL_MAX` (here for its alignment).
fn extent_units(size: usize) -> usize {
    let bytes = if size <= SMALL_MAX {
        size.max(1).next_multiple_of(LARGE_UNIT)
    } else {
        large_class_size(size)
    };
    bytes / LARGE_UNIT
}

/// Allocates a block of `size` bytes aligned to `align` (which no small size class
/// serves), counted as arena `idx`'s; `zeroed`: it must read as zeros. Null when out of
/// memory.
pub(crate) fn alloc(idx: usize, size: usize, align: usize, zeroed: bool) -> *mut u8 {
    if size <= LARGE_MAX && align <= EXTENT_ALIGN_MAX && size < DIRECT_MIN.load(Ordering::Relaxed) {
        let p = alloc_extent(idx, size, align, zeroed);
        if !p.is_null() {
            return p;
        }
        // No large segment could be mapped: a mapping of the block alone is smaller.
    }
    alloc_solo(idx, size, align, zeroed)
}

/// The best place for `k` units aligned to `a` units among the segments that have a run
/// that long: (slot, place).
fn find(h: &HugeHeap, k: usize, a: usize) -> Option<(usize, extent::Place)> {
    let mut slots = [0usize; 4];
    let n = h.table.candidates(k + a - 1, &mut slots);
    let n = if n == 0 && a > 1 {
        h.table.candidates(k, &mut slots)
    } else {
        n
    };
    let mut best: Option<(usize, extent::Place)> = None;
    for &slot in &slots[..n] {
        // SAFETY: listed segments are mapped; their bitmaps are the lock holder's.
        let b = unsafe { &*bits(h.table.seg(slot)) };
        if let Some(p) = extent::place(b, k, a)
            && best.is_none_or(|(_, q)| p.better_than(&q))
        {
            best = Some((slot, p));
        }
    }
    best
}

/// Maps a new large segment and lists it; its slot, or `None` when out of address space
/// (after giving back cached mappings and empty segments) or the table is full.
fn new_segment(h: &mut HugeHeap) -> Option<usize> {
    if h.table.count == MAX_LARGE_SEGMENTS {
        return None;
    }
    let mut base = sys::map_aligned(LARGE_SEGMENT_BYTES, SEGMENT_SIZE, 0);
    if base.is_null() {
        // Address space may be limited (`ulimit -v`): what is only cached goes first.
        release_address_space(h);
        base = sys::map_aligned(LARGE_SEGMENT_BYTES, SEGMENT_SIZE, 0);
        if base.is_null() {
            return None;
        }
    }
    let seg = base.cast::<SegmentHeader>();
    let Some(slot) = h.table.insert(seg) else {
        // SAFETY: the fresh mapping is ours and unused.
        unsafe { sys::unmap(base, LARGE_SEGMENT_BYTES) };
        return None;
    };
    // SAFETY: a fresh, zeroed mapping: its bitmaps and maps read as empty already.
    unsafe {
        seg.write(SegmentHeader {
            magic: MAGIC,
            kind: KIND_LARGE,
            owner: 0,
            used_pages: AtomicU32::new(0),
            map_len: LARGE_SEGMENT_BYTES,
            block_offset: LARGE_UNIT,
            next: ptr::null_mut(),
            state: AtomicU32::new(0),
            region: slot as u32,
            lent: 0,
        })
    };
    Some(slot)
}

/// Unmaps every cached mapping and every empty large segment (out of address space).
fn release_address_space(h: &mut HugeHeap) {
    flush_hot(h);
    reclaim_cache(h, usize::MAX);
    for slot in 0..MAX_LARGE_SEGMENTS {
        if h.table.empty == 0 {
            break;
        }
        let seg = h.table.seg(slot);
        if !seg.is_null() {
            // SAFETY: listed segments are mapped; their bitmaps are the lock holder's.
            let empty = unsafe { (*bits(seg)).used } == [0; UNITS / 64];
            if empty {
                unmap_segment(h, slot);
            }
        }
    }
}

/// What [`alloc_extent`] decided under the lock.
struct Placed {
    seg: *mut SegmentHeader,
    start: usize,
    /// The segment's dirty bits before the block was placed (which units to zero).
    dirty_before: [u64; UNITS / 64],
}

/// A block in a large segment; null when no segment can be mapped.
fn alloc_extent(idx: usize, size: usize, align: usize, zeroed: bool) -> *mut u8 {
    let k = extent_units(size);
    let a = (align / LARGE_UNIT).max(1);
    let placed = with_heap(|h| {
        if let Some((slot, i, hot_k)) = h.hot {
            if hot_k == k && (i + 1) & (a - 1) == 0 {
                // The last freed block, of this size: its units are still marked used.
                h.hot = None;
                let seg = h.table.seg(slot);
                // SAFETY: the segment is mapped while listed; its bitmaps are the lock
                // holder's.
                let b = unsafe { &mut *bits(seg) };
                b.live[i / 64] |= 1 << (i % 64);
                h.free_dirty -= k * LARGE_UNIT;
                // SAFETY: the block's first unit is in this segment, placed under the lock.
                unsafe { extent::set_len_owner(seg, i, k, idx) };
                h.live += k * LARGE_UNIT;
                let c = &mut h.counters[idx];
                c.allocs += 1;
                c.bytes += k * LARGE_UNIT;
                return Some(Placed {
                    seg,
                    start: i,
                    dirty_before: if zeroed { b.dirty } else { [0; UNITS / 64] },
                });
            }
            flush_hot(h);
        }
        let (slot, at) = match find(h, k, a) {
            Some(f) => f,
            None => {
                let slot = new_segment(h)?;
                // SAFETY: the new segment is mapped; its bitmaps are the lock holder's.
                let b = unsafe { &*bits(h.table.seg(slot)) };
                (slot, extent::place(b, k, a)?)
            }
        };
        let seg = h.table.seg(slot);
        // SAFETY: as above.
        let b = unsafe { &mut *bits(seg) };
        // Only a block that must read as zeros needs to know which units were dirty.
        let dirty_before = if zeroed { b.dirty } else { [0; UNITS / 64] };
        let longest = h.table.longest(slot);
        if longest == UNITS {
            h.table.empty -= 1;
        }
        let start = at.start;
        extent::set_range(&mut b.used, start, k);
        extent::set_range(&mut b.dirty, start, k);
        b.live[start / 64] |= 1 << (start % 64);
        h.table
            .set_free_dirty(slot, h.table.free_dirty(slot) - at.dirty);
        h.free_dirty -= at.dirty * LARGE_UNIT;
        h.table.set_longest(slot, at.rest);
        debug_assert_eq!(at.rest, extent::max_run(&b.used));
        // SAFETY: the block's first unit is in this segment, placed under the lock.
        unsafe { extent::set_len_owner(seg, start, k, idx) };
        h.live += k * LARGE_UNIT;
        let c = &mut h.counters[idx];
        c.allocs += 1;
        c.bytes += k * LARGE_UNIT;
        // Units never touched are about to be: cached mappings give back as much first.
        let clean = k - at.dirty;
        if clean > 0 {
            reclaim_cache(h, clean * LARGE_UNIT);
            FRESH.fetch_add(clean * LARGE_UNIT, Ordering::Relaxed);
        }
        Some(Placed {
            seg,
            start,
            dirty_before,
        })
    });
    let Some(Placed {
        seg,
        start,
        dirty_before,
    }) = placed
    else {
        return ptr::null_mut();
    };
    let p = unit_addr(seg, start);
    if zeroed {
        let mut i = start;
        while i < start + k {
            if extent::test(&dirty_before, i) {
                let mut j = i + 1;
                while j < start + k && extent::test(&dirty_before, j) {
                    j += 1;
                }
                // SAFETY: units `i..j` belong to the block, which is ours.
                unsafe { ptr::write_bytes(unit_addr(seg, i), 0, (j - i) * LARGE_UNIT) };
                i = j;
            } else {
                i += 1;
            }
        }
    }
    p
}

/// A block with a mapping of its own; null when out of memory.
fn alloc_solo(idx: usize, size: usize, align: usize, zeroed: bool) -> *mut u8 {
    let (map_align, map_offset, off) = solo::huge_geometry(align);
    let Some(need) = size.checked_add(off).and_then(solo::round_to_os_page) else {
        return ptr::null_mut();
    };
    if need
        .checked_add(map_align)
        .is_none_or(|t| t > isize::MAX as usize)
    {
        return ptr::null_mut();
    }
    // A cached mapping starts segment-aligned with its header, as every block below a
    // segment's alignment needs.
    if map_offset == 0 {
        let cached = with_heap(|h| {
            let e = h.cache.take(need, size, off)?;
            h.free_dirty -= e.2;
            Some(e)
        });
        if let Some((how, seg, len)) = cached
            && let Some(p) = reuse_mapping(idx, how, seg, len, need, size, off, zeroed)
        {
            return p;
        }
    }
    // Memory never touched: free resident extent units give back as much first.
    with_heap(|h| reclaim_extents(h, need));
    FRESH.fetch_add(need, Ordering::Relaxed);
    let mut base = sys::map_aligned(need, map_align, map_offset);
    if base.is_null() {
        with_heap(release_address_space);
        base = sys::map_aligned(need, map_align, map_offset);
        if base.is_null() {
            return base;
        }
    }
    // SAFETY: `base` is a fresh writable mapping of `need >= HUGE_HEADER` bytes.
    unsafe { solo::write_header(base, idx, need, off) };
    count_mapping(idx, need, off);
    base.wrapping_add(off)
}

fn count_mapping(idx: usize, len: usize, off: usize) {
    with_heap(|h| {
        h.live += len;
        h.direct_bytes += len;
        h.direct_count += 1;
        let c = &mut h.counters[idx];
        c.allocs += 1;
        c.bytes += len - off;
    });
}

/// Serves a block from the cached mapping `seg` of `len` bytes, as `how` says
/// ([`solo::Use`]); `None` (the mapping unmapped) when it could not be grown.
#[allow(clippy::too_many_arguments)]
fn reuse_mapping(
    idx: usize,
    how: solo::Use,
    seg: *mut SegmentHeader,
    len: usize,
    need: usize,
    size: usize,
    off: usize,
    zeroed: bool,
) -> Option<*mut u8> {
    let (seg, len, dirty) = match how {
        solo::Use::Whole => (seg, len, len),
        solo::Use::Split => {
            split_off(seg.cast::<u8>().wrapping_add(need), len - need);
            (seg, need, need)
        }
        solo::Use::Grow => {
            // SAFETY: `[seg, seg + len)` is a whole freed mapping, ours now.
            let grown = if unsafe { sys::remap_in_place(seg.cast(), len, need) } {
                seg
            } else {
                // SAFETY: as above; on success the old range is gone.
                let moved = unsafe { sys::remap_aligned(seg.cast(), len, need, SEGMENT_SIZE, 0) };
                if moved.is_null() {
                    // SAFETY: as above; the mapping is no longer cached.
                    with_heap(|h| unsafe { unmap_mapping(h, seg, len) });
                    return None;
                }
                moved.cast()
            };
            with_heap(|h| reclaim_extents(h, need - len));
            FRESH.fetch_add(need - len, Ordering::Relaxed);
            (grown, need, len)
        }
    };
    let base = seg.cast::<u8>();
    if zeroed && dirty > off {
        // SAFETY: the block's bytes up to the old length may hold old data; it is ours.
        unsafe { ptr::write_bytes(base.wrapping_add(off), 0, (dirty - off).min(size)) };
    }
    // SAFETY: the mapping is ours and at least a header long.
    unsafe { solo::write_header(base, idx, len, off) };
    count_mapping(idx, len, off);
    Some(base.wrapping_add(off))
}

/// Moves the tail `[tail, tail + len)` of a freed mapping (whole OS pages, resident) to a
/// segment-aligned mapping of its own and caches it, or unmaps it when that fails or it
/// does not fit the cache.
fn split_off(tail: *mut u8, len: usize) {
    let to = sys::map_aligned(len, SEGMENT_SIZE, 0);
    // SAFETY: the tail belongs to a freed mapping that the caller took out of the cache;
    // `to` is a fresh mapping of `len` bytes, replaced by the move.
    if to.is_null() || unsafe { !sys::remap_fixed(tail, len, to) } {
        if !to.is_null() {
            // SAFETY: the fresh mapping is ours and unused.
            unsafe { sys::unmap(to, len) };
        }
        // SAFETY: as above.
        unsafe { sys::unmap(tail, len) };
        return;
    }
    // SAFETY: `to` is ours now, `len >= HUGE_HEADER` bytes.
    unsafe { solo::write_freed_header(to, len) };
    let seg = to.cast::<SegmentHeader>();
    with_heap(|h| {
        if fits_budget(h, len) && h.cache.push(seg, len) {
            h.free_dirty += len;
        } else {
            // SAFETY: a mapping no block uses.
            unsafe { sys::unmap(to, len) };
        }
    });
}

// ---------------------------------------------------------------------------------------
// Free.

/// Frees huge block `p` whose header is `seg`, from a thread on arena `current`'s CPU.
/// Aborts with a message for a pointer that is not a live huge block's start.
///
/// # Safety
/// `seg` is mapped (the header of the segment `p` lies in, which `kind` said is not
/// small).
pub(crate) unsafe fn free(seg: *mut SegmentHeader, p: *mut u8, current: usize) {
    // SAFETY: the header is mapped (caller); `magic` never changes.
    let magic = unsafe { (*seg).magic };
    // SAFETY: as above, for `kind`.
    let kind = unsafe { (*seg).kind };
    if magic != MAGIC {
        invalid_free("free(): invalid pointer", p);
    }
    match kind {
        // SAFETY: forwarded.
        KIND_LARGE => unsafe { free_extent(seg, p, current) },
        // SAFETY: forwarded.
        KIND_HUGE => unsafe { free_mapping(seg, p, current) },
        // A block of a small segment that was unmapped: freed before.
        KIND_BURIED => invalid_free("free(): double free detected", p),
        _ => invalid_free("free(): invalid pointer", p),
    }
}

/// Frees the extent at `p` of the large segment `seg`.
///
/// # Safety
/// `seg` is a mapped large segment header (or a tombstone of one).
unsafe fn free_extent(seg: *mut SegmentHeader, p: *mut u8, current: usize) {
    let Some(i) = extent::bit_of(seg, p) else {
        invalid_free("free(): invalid pointer", p);
    };
    let r = with_heap(|h| {
        // SAFETY: the header is mapped (the caller); its bitmaps are the lock holder's.
        let b = unsafe { &mut *bits(seg) };
        // Any unit of the hot extent is free (as a freed extent's units would be clear).
        if h.hot
            .is_some_and(|(s, j, n)| (j..j + n).contains(&i) && h.table.seg(s) == seg)
        {
            return Err("free(): double free detected");
        }
        if !extent::test(&b.live, i) {
            return Err(if extent::test(&b.used, i) {
                "free(): invalid pointer (not the start of a block)"
            } else {
                "free(): double free detected"
            });
        }
        b.live[i / 64] &= !(1 << (i % 64));
        // SAFETY: a live block of this segment: its length and owner are recorded.
        let k = unsafe { extent::len(seg, i) };
        // SAFETY: as above.
        let owner = unsafe { extent::owner(seg, i) };
        // SAFETY: a live block's segment is listed; `region` holds its slot.
        let slot = unsafe { (*seg).region } as usize;
        let c = &mut h.counters[owner];
        c.frees += 1;
        c.remote_frees += u64::from(owner != current);
        c.bytes -= k * LARGE_UNIT;
        note_release(h, k * LARGE_UNIT);
        h.live -= k * LARGE_UNIT;
        if !fits_budget(h, k * LARGE_UNIT) {
            // Decommitted first, outside the lock: the units stay used meanwhile.
            return Ok(Some((slot, k)));
        }
        if h.table.empty < LARGE_EMPTY_KEPT {
            // Kept hot for the next block of its size (its segment, were it to empty, would
            // stay mapped anyway); the one before is released.
            flush_hot(h);
            // SAFETY: as above (re-derived: `flush_hot` may have written the bitmaps).
            debug_assert_eq!(extent::count_range(unsafe { &(*bits(seg)).dirty }, i, k), k);
            h.hot = Some((slot, i, k));
            h.free_dirty += k * LARGE_UNIT;
        } else {
            release_units(h, slot, i, k);
        }
        Ok(None)
    });
    match r {
        Err(msg) => invalid_free(msg, p),
        Ok(None) => {}
        Ok(Some((slot, k))) => {
            // SAFETY: the units belong to the freed block, still marked used.
            unsafe { sys::decommit(p, k * LARGE_UNIT) };
            with_heap(|h| {
                // SAFETY: the segment is mapped (its units are still used).
                extent::clear_range(unsafe { &mut (*bits(seg)).dirty }, i, k);
                release_units(h, slot, i, k);
            });
        }
    }
}

/// Releases the hot extent's units (see [`HugeHeap::hot`]), as its free would have.
fn flush_hot(h: &mut HugeHeap) {
    if let Some((slot, i, k)) = h.hot.take() {
        // Counted free already; `release_units` counts it again.
        h.free_dirty -= k * LARGE_UNIT;
        release_units(h, slot, i, k);
    }
}

/// Marks units `i..i + k` of the segment in `slot` free (their dirty units join the free
/// dirty bytes); unmaps the segment when it empties beyond [`LARGE_EMPTY_KEPT`].
fn release_units(h: &mut HugeHeap, slot: usize, i: usize, k: usize) {
    let seg = h.table.seg(slot);
    // SAFETY: the segment is mapped while listed; its bitmaps are the lock holder's.
    let b = unsafe { &mut *bits(seg) };
    extent::clear_range(&mut b.used, i, k);
    let d = extent::count_range(&b.dirty, i, k);
    h.table.set_free_dirty(slot, h.table.free_dirty(slot) + d);
    h.free_dirty += d * LARGE_UNIT;
    // The freed units join their free neighbours in one run; the others are as they were.
    let (first, end) = extent::run_around(&b.used, i, k);
    let longest = h.table.longest(slot).max(end - first);
    h.table.set_longest(slot, longest);
    if longest == UNITS {
        h.table.empty += 1;
        // Beyond the few kept always, an empty segment stays while its resident units fit
        // the budget (they serve the next blocks without a fault); a clean one only costs
        // address space, and goes.
        if h.table.empty > LARGE_EMPTY_KEPT && (h.table.free_dirty(slot) == 0 || !fits_budget(h, 0))
        {
            unmap_segment(h, slot);
        }
    }
}

/// Frees the block with a mapping of its own at `p`, header `seg`: cached within the
/// budget, else unmapped.
///
/// # Safety
/// `seg` is mapped and says `KIND_HUGE`.
unsafe fn free_mapping(seg: *mut SegmentHeader, p: *mut u8, current: usize) {
    // SAFETY: the header is mapped (caller); these fields never change while it is live,
    // and nobody writes a freed one's.
    let solo::Fields {
        owner,
        map_len: len,
        block_offset: off,
    } = unsafe { solo::fields(seg) };
    if seg.cast::<u8>().wrapping_add(off) != p {
        invalid_free("free(): invalid pointer", p);
    }
    // SAFETY: as above; the state word is atomic, so two racing frees see one winner.
    let state = unsafe { &(*seg).state };
    if state
        .compare_exchange(BLOCK_LIVE, BLOCK_FREED, Ordering::AcqRel, Ordering::Relaxed)
        .is_err()
    {
        invalid_free("free(): double free detected", p);
    }
    with_heap(|h| {
        let c = &mut h.counters[owner];
        c.frees += 1;
        c.remote_frees += u64::from(owner != current);
        c.bytes -= len - off;
        note_release(h, len);
        h.live -= len;
        h.direct_bytes -= len;
        h.direct_count -= 1;
        // A mapping aligned above a segment has its header one segment below its block;
        // any other starts segment-aligned with its header, as the cache needs.
        let cacheable = off < SEGMENT_SIZE;
        if cacheable && fits_budget(h, len) && h.cache.push(seg, len) {
            h.free_dirty += len;
        } else {
            // SAFETY: the mapping is this freed block's alone.
            unsafe { unmap_mapping(h, seg, len) };
        }
    });
}

// ---------------------------------------------------------------------------------------
// Size and resizing.

/// Usable bytes of live huge block `p`, header `seg`.
///
/// # Safety
/// `p` is a live huge block with header `seg`.
pub(crate) unsafe fn usable_size(seg: *mut SegmentHeader, p: *mut u8) -> usize {
    // SAFETY: a live block's header is mapped; `kind` never changes.
    if unsafe { (*seg).kind } == KIND_LARGE {
        let i = extent::bit_of(seg, p).unwrap_or(0);
        // SAFETY: `p` is live and the caller's: its length is fixed meanwhile.
        return unsafe { extent::len(seg, i) } * LARGE_UNIT;
    }
    // SAFETY: a live block's header is only written by the block's holder.
    let f = unsafe { solo::fields(seg) };
    f.map_len - f.block_offset
}

/// Resizes live huge block `p` (header `seg`) to `new_size` bytes that still need the
/// huge path: `Some(q)` when done without copying (null: out of memory, `p` untouched),
/// `None` when the caller must allocate, copy and free.
///
/// # Safety
/// `p` is a live huge block aligned to `align` with header `seg`.
pub(crate) unsafe fn resize(
    seg: *mut SegmentHeader,
    p: *mut u8,
    new_size: usize,
    align: usize,
) -> Option<*mut u8> {
    // SAFETY: a live block's header is mapped; `kind` never changes.
    if unsafe { (*seg).kind } == KIND_LARGE {
        if new_size > LARGE_MAX || new_size >= DIRECT_MIN.load(Ordering::Relaxed) {
            return None;
        }
        let i = extent::bit_of(seg, p)?;
        let k_new = extent_units(new_size);
        return with_heap(|h| resize_extent(h, seg, i, k_new)).then_some(p);
    }
    // SAFETY: live block: its header is mapped and only its holder (the caller) writes it.
    let f = unsafe { solo::fields(seg) };
    let (owner, len, off) = (f.owner, f.map_len, f.block_offset);
    // SAFETY: forwarded.
    Some(unsafe { resize_mapping(seg, p, new_size, align, owner, len, off) })
}

/// Resizes the extent at bit `i` of `seg` to `k_new` units in place: shrinks it, or grows
/// it into the free units after it; `false` when they are not free.
fn resize_extent(h: &mut HugeHeap, seg: *mut SegmentHeader, i: usize, k_new: usize) -> bool {
    flush_hot(h);
    // SAFETY: the block is live: its segment is mapped and listed, its length and owner
    // recorded; the header's fields are the lock holder's.
    let k = unsafe { extent::len(seg, i) };
    // SAFETY: as above.
    let owner = unsafe { extent::owner(seg, i) };
    // SAFETY: as above.
    let slot = unsafe { (*seg).region } as usize;
    if k_new == k {
        return true;
    }
    if k_new < k {
        // SAFETY: as above.
        unsafe { extent::set_len_owner(seg, i, k_new, owner) };
        let d = (k - k_new) * LARGE_UNIT;
        h.live -= d;
        h.counters[owner].bytes -= d;
        release_units(h, slot, i + k_new, k - k_new);
        return true;
    }
    // SAFETY: as above.
    let b = unsafe { &mut *bits(seg) };
    if i + k_new > UNITS || extent::count_range(&b.used, i + k, k_new - k) != 0 {
        return false;
    }
    let d = extent::count_range(&b.dirty, i + k, k_new - k);
    extent::set_range(&mut b.used, i + k, k_new - k);
    extent::set_range(&mut b.dirty, i + k, k_new - k);
    h.table.set_free_dirty(slot, h.table.free_dirty(slot) - d);
    h.free_dirty -= d * LARGE_UNIT;
    h.table.set_longest(slot, extent::max_run(&b.used));
    // SAFETY: as above.
    unsafe { extent::set_len_owner(seg, i, k_new, owner) };
    let grow = (k_new - k) * LARGE_UNIT;
    h.live += grow;
    h.counters[owner].bytes += grow;
    true
}

/// `resize` of a block with a mapping of its own: `mremap` in place, else moving the page
/// tables; shrinking unmaps the tail.
///
/// # Safety
/// As for `resize`; `(owner, old_len, off)` are the header's.
unsafe fn resize_mapping(
    seg: *mut SegmentHeader,
    p: *mut u8,
    new_size: usize,
    align: usize,
    owner: usize,
    old_len: usize,
    off: usize,
) -> *mut u8 {
    let Some(new_len) = new_size.checked_add(off).and_then(solo::round_to_os_page) else {
        return ptr::null_mut();
    };
    if new_len == old_len {
        return p;
    }
    if new_len < old_len {
        // SAFETY: the tail beyond the new length belongs to this block only.
        unsafe { sys::unmap(seg.cast::<u8>().wrapping_add(new_len), old_len - new_len) };
        // SAFETY: the header stays mapped; only the block's holder writes it.
        unsafe { (*seg).map_len = new_len };
        with_heap(|h| {
            let d = old_len - new_len;
            h.counters[owner].bytes -= d;
            h.live -= d;
            h.direct_bytes -= d;
        });
        return p;
    }
    // SAFETY: `[seg, seg + old_len)` is this block's whole mapping.
    let new_seg = if unsafe { sys::remap_in_place(seg.cast(), old_len, new_len) } {
        seg
    } else {
        let (map_align, map_offset, _) = solo::huge_geometry(align);
        // SAFETY: as above; on success the old range is gone and only the new one is used.
        let moved =
            unsafe { sys::remap_aligned(seg.cast(), old_len, new_len, map_align, map_offset) };
        if moved.is_null() {
            return ptr::null_mut();
        }
        moved.cast::<SegmentHeader>()
    };
    // SAFETY: the header moved with the mapping and is the block holder's.
    unsafe { (*new_seg).map_len = new_len };
    with_heap(|h| {
        let d = new_len - old_len;
        h.counters[owner].bytes += d;
        h.live += d;
        h.direct_bytes += d;
        reclaim_extents(h, d);
    });
    new_seg.cast::<u8>().wrapping_add(off)
}

// ---------------------------------------------------------------------------------------
// Trimming.

/// Gives back every free resident byte (`malloc_trim`): cached mappings are unmapped, free
/// dirty extent units decommitted, empty large segments unmapped; `true` if any memory was
/// released.
pub(crate) fn trim() -> bool {
    with_heap(|h| {
        // What was freed before is released now: the peak it held no longer speaks for it.
        h.peak = [0; 2];
        h.released = 0;
        let mut released = reclaim_cache(h, usize::MAX) > 0;
        released |= reclaim_extents(h, usize::MAX) > 0;
        let before = h.table.count;
        release_address_space(h);
        released | (h.table.count < before)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extent_units_follow_the_size_classes() {
        assert_eq!(extent_units(SMALL_MAX + 1), 40);
        assert_eq!(extent_units(200_000), 56);
        assert_eq!(extent_units(LARGE_MAX), LARGE_MAX / LARGE_UNIT);
        assert_eq!(extent_units(100), 1);
        let mut size = SMALL_MAX + 1;
        while size <= LARGE_MAX {
            let bytes = extent_units(size) * LARGE_UNIT;
            assert!(bytes >= size && bytes <= size + size / 4, "size {size}");
            size += if cfg!(miri) { 4099 } else { 61 };
        }
    }

    #[test]
    fn the_budget_follows_live_bytes_and_their_recent_peak() {
        assert_eq!(retain_budget(400 << 20, 0), (400 << 20) / RETAIN_SHARE);
        assert_eq!(retain_budget(0, 300 << 20), 300 << 20);
        assert_eq!(retain_budget(0, 0), RETAIN_MIN);
    }
}
