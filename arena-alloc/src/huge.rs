//! Blocks above [`crate::tuning::SMALL_MAX`]: spans of whole segments carved from regions, reused
//! after they are freed, or (the biggest, and those aligned above a segment) a mapping each.
//!
//! ```text
//!  region: REGION_SEGMENTS x 4 MiB of address space (mapped on demand, never unmapped)
//!  +--------+--------+--------+--------+--------+--------+-- ... --+
//!  |hdr|blk .........|hdr|blk ...  |   | free (dirty)    |  free   |   used: bit per segment
//!  +--------+--------+--------+--------+--------+--------+-- ... --+   dirty: 64 KiB units
//!   span of 2 segments  span of 2       1 freed span of 2  never touched
//! ```
//!
//! A span block's header sits at the start of its first segment, the block 64 bytes (or its
//! alignment) in, so `segment_of` finds the header by masking, as for small blocks. A freed
//! span stays resident ("dirty") for the next block placed there (best fit over the free
//! runs of every region) while the dirty free bytes stay within
//! `max(SPAN_RETAIN_MIN, live huge bytes / SPAN_RETAIN_SHARE, their recent peak - live)`
//! ([`RETAIN_PEAK_WINDOW`]); beyond that it is
//! decommitted (`MADV_DONTNEED`). Regions are never unmapped, so a second free of a span
//! block reads a mapped header (its state word says freed, or a decommitted header reads as
//! zeros): it is reported and the process aborts, it never faults.
//!
//! A direct block's mapping is unmapped when it is freed, except its header's OS page,
//! which stays (state: freed) until `TOMBSTONES` later direct frees have passed, so a
//! double free in between is caught too.

use crate::config::MAX_HEAP_COUNT;
use crate::lock::RawLock;
use crate::page::{
    BLOCK_FREED, BLOCK_LIVE, HUGE_HEADER, KIND_HUGE, MAGIC, NO_REGION, SEGMENT_SIZE, SegmentHeader,
};
use crate::sync::global::{AtomicU32, AtomicUsize, Ordering, UnsafeCell};
use crate::sys;
use core::ptr;

/// Segments of address space in one span region (256 MiB).
pub const REGION_SEGMENTS: usize = 64;
/// Bytes of address space of one span region.
pub(crate) const REGION_BYTES: usize = REGION_SEGMENTS * SEGMENT_SIZE;
/// Most span regions (16 GiB of address space); beyond them blocks are mapped directly.
pub const MAX_REGIONS: usize = 64;
/// Largest span, in segments: blocks needing more are mapped directly (64 MiB).
pub const SPAN_MAX_SEGMENTS: usize = 16;
/// Dirty (resident) bytes of freed spans that are always kept for reuse (8 MiB). With 2
/// MiB, mimalloc-bench's mstress (2-2.7 MiB of live big blocks, a recent peak of 5.8 MiB)
/// decommitted a 4 MiB segment about twice per round and faulted it in again: 9,000 of its
/// 14,000 faults, 1.2x-1.4x mimalloc's time (MEASUREMENTS.md, 2026-12-03).
pub const SPAN_RETAIN_MIN: usize = 8 << 20;
/// Beyond [`SPAN_RETAIN_MIN`], freed spans stay dirty up to the bytes of live huge blocks
/// divided by this (1: as many free dirty bytes as live ones, about what glibc's heap
/// keeps; with 1/4, mimalloc-bench's malloc-large faulted 13x more often).
pub const SPAN_RETAIN_SHARE: usize = 1;
/// Freed spans also stay dirty while live and free dirty bytes together stay within the
/// highest live huge bytes seen at any of the last `RETAIN_PEAK_WINDOW` to
/// `2 * RETAIN_PEAK_WINDOW` releases: a program that frees its
/// big blocks in a burst (a thread's exit, the end of a phase) and then allocates as many
/// again finds them resident, as in glibc's heap (whose trim threshold follows the
/// biggest freed block). With the live bytes alone, mimalloc-bench's mstress faulted 5x
/// as often as with glibc (each round's blocks were decommitted and faulted in again).
pub const RETAIN_PEAK_WINDOW: u32 = 128;
/// Granularity of the dirty accounting of a segment.
const DIRTY_UNIT: usize = 64 << 10;
/// A block placed on dirty memory that leaves at least this many dirty bytes beyond its end
/// in its last segment, and more than `SLACK_RATIO` times the block itself, gets that
/// slack decommitted (it would be resident and unused: a small block on the memory of a
/// much bigger one). With ratio 1, bench-suite's malloc-large port (64 KiB-4 MiB) faulted
/// 2.6x more often than glibc and ran 2x slower; with 4, see the README.
const SLACK_DECOMMIT: usize = 1 << 20;
const SLACK_RATIO: usize = 4;
/// Freed direct blocks whose header page is kept mapped.
const TOMBSTONES: usize = 64;

const _: () = assert!(REGION_SEGMENTS <= 64); // one `u64` bitmap per region
const _: () = assert!(SPAN_MAX_SEGMENTS <= REGION_SEGMENTS);
// Dirty units per segment fit the `u8` counts.
const _: () = assert!(SEGMENT_SIZE / DIRTY_UNIT <= u8::MAX as usize);
const _: () = assert!(SLACK_DECOMMIT.is_multiple_of(DIRTY_UNIT));
const _: () = assert!(MAX_REGIONS < NO_REGION as usize);

/// Requests of at least this many bytes get a mapping of their own (`mallopt`'s
/// `M_MMAP_THRESHOLD`); by default only those too big for a span.
static DIRECT_MIN: AtomicUsize = AtomicUsize::new(usize::MAX);
/// The retain minimum (`mallopt`'s `M_TRIM_THRESHOLD`), [`SPAN_RETAIN_MIN`] by default.
static RETAIN_MIN: AtomicUsize = AtomicUsize::new(SPAN_RETAIN_MIN);

/// Makes requests of at least `bytes` (above `SMALL_MAX`) map their own block; `usize::MAX`:
/// only those no span can hold.
#[cfg_attr(not(feature = "capi"), allow(dead_code))]
pub(crate) fn set_direct_min(bytes: usize) {
    DIRECT_MIN.store(bytes, Ordering::Relaxed);
}

/// Sets the dirty bytes free spans always keep.
#[cfg_attr(not(feature = "capi"), allow(dead_code))]
pub(crate) fn set_retain_min(bytes: usize) {
    RETAIN_MIN.store(bytes, Ordering::Relaxed);
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
    /// Bytes of address space in span regions.
    pub(crate) region_bytes: usize,
    /// Bytes of segments (spans) and mappings held by live huge blocks.
    pub(crate) live_bytes: usize,
    /// Bytes of it in direct mappings.
    pub(crate) direct_bytes: usize,
    /// Number of live direct mappings.
    pub(crate) direct_count: usize,
    /// Dirty (resident, reusable) bytes of free spans.
    pub(crate) free_dirty: usize,
}

#[derive(Clone, Copy)]
struct Region {
    base: *mut u8,
    /// Bit `i`: segment `i` belongs to a live block (or is being decommitted).
    used: u64,
    /// Per segment: 64 KiB units from its start that may be resident (not zero).
    dirty: [u8; REGION_SEGMENTS],
}

struct HugeHeap {
    regions: [Region; MAX_REGIONS],
    nregions: usize,
    /// Bytes of the dirty units of free segments.
    free_dirty: usize,
    /// Bytes of segments and mappings held by live huge blocks.
    live: usize,
    /// Bytes of the dirty units of used segments (what live span blocks may have touched):
    /// with `direct_bytes`, the base of the retain budget.
    live_dirty: usize,
    direct_bytes: usize,
    direct_count: usize,
    /// The highest `live_dirty + direct_bytes` seen at a release in this window of
    /// [`RETAIN_PEAK_WINDOW`] releases, and in the window before.
    peak: [usize; 2],
    /// Releases in this window.
    releases: u32,
    counters: [HugeCounters; MAX_HEAP_COUNT],
    tombs: [*mut SegmentHeader; TOMBSTONES],
    next_tomb: usize,
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
        regions: [Region {
            base: ptr::null_mut(),
            used: 0,
            dirty: [0; REGION_SEGMENTS],
        }; MAX_REGIONS],
        nregions: 0,
        free_dirty: 0,
        live: 0,
        live_dirty: 0,
        direct_bytes: 0,
        direct_count: 0,
        peak: [0; 2],
        releases: 0,
        counters: [HugeCounters {
            allocs: 0,
            frees: 0,
            remote_frees: 0,
            bytes: 0,
        }; MAX_HEAP_COUNT],
        tombs: [ptr::null_mut(); TOMBSTONES],
        next_tomb: 0,
    }),
};

/// Runs `f` on the huge heap under its lock. `f` must not re-enter the allocator (it only
/// does bookkeeping, or a syscall that does not allocate).
#[inline]
fn with_heap<R>(f: impl FnOnce(&mut HugeHeap) -> R) -> R {
    HEAP.lock.lock();
    // SAFETY: the lock is held; the reference lives only during `f`, which does not
    // re-enter the allocator.
    let r = f(unsafe { &mut *HEAP.heap.get() });
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
        region_bytes: h.nregions * REGION_BYTES,
        live_bytes: h.live,
        direct_bytes: h.direct_bytes,
        direct_count: h.direct_count,
        free_dirty: h.free_dirty,
    })
}

/// The fields of a huge header that do not change while its block is live.
#[derive(Clone, Copy)]
struct Fields {
    magic: u32,
    kind: u32,
    owner: usize,
    map_len: usize,
    block_offset: usize,
    region: u32,
}

/// Reads the plain fields of the header at `seg`.
///
/// # Safety
/// `seg` is mapped and readable, and no one writes these fields meanwhile (they are the
/// holder's of a live block, and nobody's of a freed one).
unsafe fn fields(seg: *mut SegmentHeader) -> Fields {
    // SAFETY: forwarded from the caller; the reference ends with this function.
    let h = unsafe { &*seg };
    Fields {
        magic: h.magic,
        kind: h.kind,
        owner: h.owner as usize,
        map_len: h.map_len,
        block_offset: h.block_offset,
        region: h.region,
    }
}

/// Writes `msg` and the pointer to stderr and aborts: a free the allocator cannot honour
/// without corrupting itself.
#[cold]
#[inline(never)]
pub(crate) fn invalid_free(msg: &str, p: *mut u8) -> ! {
    sys::abort_with(msg, p.addr())
}

// ---------------------------------------------------------------------------------------
// Geometry.

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

/// `n` low bits set (`n <= 64`).
#[inline]
fn low_bits(n: usize) -> u64 {
    if n >= 64 { u64::MAX } else { (1u64 << n) - 1 }
}

/// Dirty units a block reaching `end` bytes from its span's start covers in segment `j`.
fn covered_units(end: usize, j: usize) -> u8 {
    let in_seg = end.saturating_sub(j * SEGMENT_SIZE).min(SEGMENT_SIZE);
    in_seg.div_ceil(DIRTY_UNIT) as u8
}

// ---------------------------------------------------------------------------------------
// Span placement (pure bookkeeping on the locked heap; unit-tested below).

/// What placing a block reaching `end` bytes at segments `start..start + k` of region `r`
/// costs, in dirty units: the units it must fault in (not dirty yet) plus the dirty units
/// it leaves unused in its last segment (resident memory it wastes).
fn placement_cost(r: &Region, start: usize, k: usize, end: usize) -> usize {
    (0..k)
        .map(|j| {
            let (d, c) = (r.dirty[start + j] as usize, covered_units(end, j) as usize);
            c.saturating_sub(d) + if j == k - 1 { d.saturating_sub(c) } else { 0 }
        })
        .sum()
}

/// Where a block of `k` segments reaching `end` bytes into its span goes: among the free
/// runs that hold it, at either end of the run, the placement that costs least
/// ([`placement_cost`]: page faults plus wasted resident memory); ties go to the shortest
/// run (best fit), then to the first found.
fn best_fit(h: &HugeHeap, k: usize, end: usize) -> Option<(usize, usize)> {
    let mut best: Option<(usize, usize, usize, usize)> = None; // (cost, run, region, start)
    for (ri, r) in h.regions[..h.nregions].iter().enumerate() {
        let mut free = !r.used;
        while free != 0 {
            let start = free.trailing_zeros() as usize;
            let run = (!(free >> start)).trailing_zeros() as usize;
            free &= !(low_bits(run) << start);
            if run < k {
                continue;
            }
            for at in [start, start + run - k] {
                let cost = placement_cost(r, at, k, end);
                let better = match best {
                    None => true,
                    Some((bcost, brun, _, _)) => cost < bcost || (cost == bcost && run < brun),
                };
                if better {
                    best = Some((cost, run, ri, at));
                }
            }
        }
    }
    best.map(|(_, _, r, s)| (r, s))
}

/// What `claim` decided for the caller to do outside the lock.
struct Claim {
    /// Start of the span.
    base: *mut u8,
    /// Per segment of the span: dirty units before the claim (to zero for `alloc_zeroed`).
    was_dirty: [u8; SPAN_MAX_SEGMENTS],
    /// Bytes from the span's start to decommit (slack beyond the block): `(from, to)`.
    slack: (usize, usize),
}

/// Marks segments `start..start + k` of region `ri` used for a block reaching `end` bytes
/// into the span, updating the dirty accounting.
fn claim(h: &mut HugeHeap, ri: usize, start: usize, k: usize, end: usize) -> Claim {
    let r = &mut h.regions[ri];
    debug_assert_eq!(r.used & (low_bits(k) << start), 0);
    r.used |= low_bits(k) << start;
    let mut was_dirty = [0u8; SPAN_MAX_SEGMENTS];
    let mut slack = (0, 0);
    let mut taken = 0usize;
    for (j, was) in was_dirty[..k].iter_mut().enumerate() {
        let d = r.dirty[start + j];
        *was = d;
        taken += d as usize;
        let cov = covered_units(end, j);
        let slack_bytes = (d as usize).saturating_sub(cov as usize) * DIRTY_UNIT;
        if j == k - 1 && slack_bytes >= SLACK_DECOMMIT && slack_bytes > SLACK_RATIO * end {
            slack = (
                j * SEGMENT_SIZE + cov as usize * DIRTY_UNIT,
                j * SEGMENT_SIZE + d as usize * DIRTY_UNIT,
            );
            r.dirty[start + j] = cov;
        } else {
            r.dirty[start + j] = d.max(cov);
        }
    }
    h.free_dirty -= taken * DIRTY_UNIT;
    h.live_dirty += dirty_bytes(h, ri, start, k);
    Claim {
        base: h.regions[ri].base.wrapping_add(start * SEGMENT_SIZE),
        was_dirty,
        slack,
    }
}

/// The dirty bytes free spans may keep when live huge blocks hold `live` bytes of touched
/// memory (dirty units of their spans, and direct mappings) and held up to `peak` bytes
/// at the releases of the last two windows: at least what brings the huge heap's resident
/// bytes back to that peak (a burst of frees keeps what it frees; a steady load keeps
/// about as much as before the peak term).
fn retain_budget(live: usize, peak: usize) -> usize {
    RETAIN_MIN
        .load(Ordering::Relaxed)
        .max(live / SPAN_RETAIN_SHARE)
        .max(peak.saturating_sub(live))
}

/// Records the live huge bytes at a release, before it (live bytes only fall at releases,
/// so their highest value in a window is seen at one of them, or is the current one).
fn note_release(h: &mut HugeHeap) {
    let live = h.live_dirty + h.direct_bytes;
    h.releases += 1;
    if h.releases > RETAIN_PEAK_WINDOW {
        h.releases = 1;
        h.peak = [0, h.peak[0]];
    }
    h.peak[0] = h.peak[0].max(live);
}

/// Dirty bytes of segments `start..start + n` of region `ri`.
fn dirty_bytes(h: &HugeHeap, ri: usize, start: usize, n: usize) -> usize {
    let d: usize = h.regions[ri].dirty[start..start + n]
        .iter()
        .map(|&d| d as usize)
        .sum();
    d * DIRTY_UNIT
}

/// Frees segments `start..start + n` of region `ri` if their dirty bytes fit the retain
/// budget (`true`); otherwise leaves them used for the caller to decommit first.
fn release_or_defer(h: &mut HugeHeap, ri: usize, start: usize, n: usize) -> bool {
    note_release(h);
    let d = dirty_bytes(h, ri, start, n);
    h.live_dirty -= d;
    let peak = h.peak[0].max(h.peak[1]);
    if h.free_dirty + d > retain_budget(h.live_dirty + h.direct_bytes, peak) {
        return false;
    }
    h.regions[ri].used &= !(low_bits(n) << start);
    h.free_dirty += d;
    true
}

/// Frees segments `start..start + n` of region `ri` after they were decommitted.
fn release_clean(h: &mut HugeHeap, ri: usize, start: usize, n: usize) {
    let r = &mut h.regions[ri];
    r.used &= !(low_bits(n) << start);
    r.dirty[start..start + n].fill(0);
}

/// Returns the `n` segments from `seg` of region `ri` (no live block in them any more) to
/// the heap: kept dirty within the budget, else decommitted first. `pre` runs first under
/// the same lock (the caller's bookkeeping).
fn release_segments(ri: usize, seg: *mut u8, n: usize, pre: impl FnOnce(&mut HugeHeap)) {
    let (kept, start) = with_heap(|h| {
        pre(h);
        let start = (seg.addr() - h.regions[ri].base.addr()) / SEGMENT_SIZE;
        (release_or_defer(h, ri, start, n), start)
    });
    if kept {
        return;
    }
    // SAFETY: the segments are still marked used, so no block is placed there meanwhile,
    // and no live block holds them: nobody reads their contents.
    unsafe { sys::decommit(seg, n * SEGMENT_SIZE) };
    with_heap(|h| release_clean(h, ri, start, n));
}

// ---------------------------------------------------------------------------------------
// Allocation.

/// Allocates a block of `size` bytes aligned to `align` (which no size class serves),
/// counted as arena `idx`'s; `zeroed`: it must read as zeros. Null when out of memory.
pub(crate) fn alloc(idx: usize, size: usize, align: usize, zeroed: bool) -> *mut u8 {
    let (map_align, map_offset, block_offset) = huge_geometry(align);
    let Some(end) = size.checked_add(block_offset) else {
        return ptr::null_mut();
    };
    if map_align == SEGMENT_SIZE
        && end <= SPAN_MAX_SEGMENTS * SEGMENT_SIZE
        && size < DIRECT_MIN.load(Ordering::Relaxed)
    {
        let p = alloc_span(idx, size, block_offset, zeroed);
        if !p.is_null() {
            return p;
        }
    }
    alloc_direct(idx, end, map_align, map_offset, block_offset)
}

/// A span block; null when the regions are exhausted (the caller maps it directly).
fn alloc_span(idx: usize, size: usize, off: usize, zeroed: bool) -> *mut u8 {
    let end = size + off;
    let k = end.div_ceil(SEGMENT_SIZE);
    let placed = with_heap(|h| {
        let (ri, start) = match best_fit(h, k, end) {
            Some(at) => at,
            None => {
                if h.nregions == MAX_REGIONS {
                    return None;
                }
                // A new region (address space only; nothing is touched).
                let base = sys::map_aligned(REGION_BYTES, SEGMENT_SIZE, 0);
                if base.is_null() {
                    return None;
                }
                let ri = h.nregions;
                h.regions[ri] = Region {
                    base,
                    used: 0,
                    dirty: [0; REGION_SEGMENTS],
                };
                h.nregions += 1;
                (ri, 0)
            }
        };
        let c = claim(h, ri, start, k, end);
        h.live += k * SEGMENT_SIZE;
        let ctr = &mut h.counters[idx];
        ctr.allocs += 1;
        ctr.bytes += k * SEGMENT_SIZE - off;
        Some((c, ri))
    });
    let Some((c, ri)) = placed else {
        return ptr::null_mut();
    };
    if c.slack.1 > c.slack.0 {
        // SAFETY: the slack lies in this span (ours now), beyond the block's end.
        unsafe { sys::decommit(c.base.wrapping_add(c.slack.0), c.slack.1 - c.slack.0) };
    }
    if zeroed {
        for j in 0..k {
            let dirty_end = (j * SEGMENT_SIZE + c.was_dirty[j] as usize * DIRTY_UNIT).min(end);
            let from = (j * SEGMENT_SIZE).max(off);
            if dirty_end > from {
                // SAFETY: `[from, dirty_end)` lies in the block, which is ours.
                unsafe { ptr::write_bytes(c.base.wrapping_add(from), 0, dirty_end - from) };
            }
        }
    }
    // SAFETY: the span is ours; its first bytes hold the header.
    unsafe { write_header(c.base, idx, k * SEGMENT_SIZE, off, ri as u32) };
    c.base.wrapping_add(off)
}

/// # Safety
/// `h` starts a writable range of at least `HUGE_HEADER` bytes owned by the caller.
unsafe fn write_header(h: *mut u8, idx: usize, len: usize, off: usize, region: u32) {
    let header = SegmentHeader {
        magic: MAGIC,
        kind: KIND_HUGE,
        owner: idx as u32,
        used_pages: AtomicU32::new(0),
        map_len: len,
        block_offset: off,
        next: ptr::null_mut(),
        state: AtomicU32::new(BLOCK_LIVE),
        region,
        lent: 0,
    };
    // SAFETY: forwarded from the caller.
    unsafe { h.cast::<SegmentHeader>().write(header) };
}

/// A block with a mapping of its own (`end` = block offset + size).
fn alloc_direct(
    idx: usize,
    end: usize,
    map_align: usize,
    map_offset: usize,
    off: usize,
) -> *mut u8 {
    let Some(len) = round_to_os_page(end) else {
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
    with_heap(|hp| {
        hp.live += len;
        hp.direct_bytes += len;
        hp.direct_count += 1;
        let c = &mut hp.counters[idx];
        c.allocs += 1;
        c.bytes += len - off;
    });
    // SAFETY: `h` is a fresh writable mapping of `len >= HUGE_HEADER` bytes.
    unsafe { write_header(h, idx, len, off, NO_REGION) };
    h.wrapping_add(off)
}

// ---------------------------------------------------------------------------------------
// Free.

/// Frees huge block `p` whose header is `seg`, from a thread on arena `current`'s CPU.
/// Aborts with a message for a pointer that is not a live huge block's start.
///
/// # Safety
/// `seg` is mapped (the header of the segment `p` lies in, which `kind` said is huge).
pub(crate) unsafe fn free(seg: *mut SegmentHeader, p: *mut u8, current: usize) {
    // SAFETY: the header is mapped (caller); these fields never change while it is live.
    let f = unsafe { fields(seg) };
    let off = f.block_offset;
    if f.magic != MAGIC || f.kind != KIND_HUGE || seg.cast::<u8>().wrapping_add(off) != p {
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
    let (owner, len, region) = (f.owner, f.map_len, f.region);
    let count = move |h: &mut HugeHeap| {
        let c = &mut h.counters[owner];
        c.frees += 1;
        c.remote_frees += u64::from(owner != current);
        c.bytes -= len - off;
        h.live -= len;
    };
    if region == NO_REGION {
        with_heap(|h| {
            count(h);
            h.direct_bytes -= len;
            h.direct_count -= 1;
        });
        // SAFETY: the mapping is this block's alone, given up by the caller.
        unsafe { free_direct(seg, len) };
    } else {
        release_segments(region as usize, seg.cast(), len / SEGMENT_SIZE, count);
    }
}

/// Unmaps a freed direct block but its header page, kept as a tombstone.
///
/// # Safety
/// `[seg, seg + len)` is a freed direct block's whole mapping.
unsafe fn free_direct(seg: *mut SegmentHeader, len: usize) {
    let ps = sys::os_page_size();
    // SAFETY: the tail belongs to this block alone.
    unsafe { sys::unmap(seg.cast::<u8>().wrapping_add(ps), len - ps) };
    let evicted = with_heap(|h| {
        let i = h.next_tomb;
        h.next_tomb = (i + 1) % TOMBSTONES;
        core::mem::replace(&mut h.tombs[i], seg)
    });
    if !evicted.is_null() {
        // SAFETY: a tombstone page is the remnant of a freed block; nothing refers to it.
        unsafe { sys::unmap(evicted.cast(), ps) };
    }
}

// ---------------------------------------------------------------------------------------
// Resizing.

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
    // SAFETY: live block: its header is mapped and only its holder writes it.
    // SAFETY: live block: its header is mapped and only its holder (the caller) writes it.
    let f = unsafe { fields(seg) };
    let (owner, len, off, region) = (f.owner, f.map_len, f.block_offset, f.region);
    if region == NO_REGION {
        // SAFETY: forwarded.
        return Some(unsafe { resize_direct(seg, p, new_size, align, owner, len, off) });
    }
    let end = new_size.checked_add(off)?;
    let k_new = end.div_ceil(SEGMENT_SIZE);
    let k = len / SEGMENT_SIZE;
    if k_new > SPAN_MAX_SEGMENTS {
        return None;
    }
    // (No early return when the span keeps its segment count: a block that grows within
    // its last segment makes more of it dirty, and the accounting must say so, or a later
    // `alloc_zeroed` placed there would skip clearing those bytes.)
    let ri = region as usize;
    if k_new < k {
        // SAFETY: the header is the block holder's to write.
        unsafe { (*seg).map_len = k_new * SEGMENT_SIZE };
        let tail = seg.cast::<u8>().wrapping_add(k_new * SEGMENT_SIZE);
        release_segments(ri, tail, k - k_new, |h| {
            let d = (k - k_new) * SEGMENT_SIZE;
            h.live -= d;
            h.counters[owner].bytes -= d;
        });
        return Some(p);
    }
    // Grow into the free segments right after the span, if there are enough (none when
    // `k_new == k`: then only the last segment's dirty extent may grow).
    with_heap(|h| {
        let start = (seg.addr() - h.regions[ri].base.addr()) / SEGMENT_SIZE;
        // (Checked first: a span that ends the region has nothing after it to grow into,
        // and `start + k` may then be 64, too far to shift by.)
        if start + k_new > REGION_SEGMENTS {
            return None;
        }
        // (No shift when the count is unchanged: `start + k` may be 64 then.)
        let extra = if k_new > k {
            low_bits(k_new - k) << (start + k)
        } else {
            0
        };
        if h.regions[ri].used & extra != 0 {
            return None;
        }
        let r = &mut h.regions[ri];
        r.used |= extra;
        let (mut taken, mut grew) = (0usize, 0usize);
        for j in k - 1..k_new {
            let d = r.dirty[start + j];
            let nd = d.max(covered_units(end, j));
            if j >= k {
                taken += d as usize;
                grew += nd as usize;
            } else {
                grew += (nd - d) as usize;
            }
            r.dirty[start + j] = nd;
        }
        h.free_dirty -= taken * DIRTY_UNIT;
        h.live_dirty += grew * DIRTY_UNIT;
        let d = (k_new - k) * SEGMENT_SIZE;
        h.live += d;
        h.counters[owner].bytes += d;
        Some(())
    })?;
    // SAFETY: the header is the block holder's to write.
    unsafe { (*seg).map_len = k_new * SEGMENT_SIZE };
    Some(p)
}

/// `resize` of a direct block: `mremap` in place, else moving the page tables.
///
/// # Safety
/// As for `resize`; `(owner, old_len, off)` are the header's.
unsafe fn resize_direct(
    seg: *mut SegmentHeader,
    p: *mut u8,
    new_size: usize,
    align: usize,
    owner: usize,
    old_len: usize,
    off: usize,
) -> *mut u8 {
    let Some(new_len) = new_size.checked_add(off).and_then(round_to_os_page) else {
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
        let (map_align, map_offset, _) = huge_geometry(align);
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
    });
    new_seg.cast::<u8>().wrapping_add(off)
}

/// Usable bytes of live huge block `seg`'s block.
///
/// # Safety
/// `seg` is the header of a live huge block.
pub(crate) unsafe fn usable_size(seg: *mut SegmentHeader) -> usize {
    // SAFETY: a live huge header is only written by the block's holder.
    let f = unsafe { fields(seg) };
    f.map_len - f.block_offset
}

// ---------------------------------------------------------------------------------------
// Trimming.

/// Decommits every dirty free segment (`malloc_trim`); `true` if it released any memory.
pub(crate) fn trim() -> bool {
    let mut released = false;
    with_heap(|h| {
        // What was freed before is released now: the peak it held no longer speaks for it.
        h.peak = [0; 2];
        h.releases = 0;
        for ri in 0..h.nregions {
            let r = &mut h.regions[ri];
            for s in 0..REGION_SEGMENTS {
                let d = r.dirty[s] as usize;
                if r.used & (1 << s) == 0 && d > 0 {
                    // SAFETY: a free segment holds no block; the lock keeps others from
                    // placing one there meanwhile.
                    unsafe { sys::decommit(r.base.wrapping_add(s * SEGMENT_SIZE), d * DIRTY_UNIT) };
                    r.dirty[s] = 0;
                    h.free_dirty -= d * DIRTY_UNIT;
                    released = true;
                }
            }
        }
    });
    released
}

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
            assert!(block_offset >= HUGE_HEADER, "align {align}");
            assert!(block_offset <= SEGMENT_SIZE, "align {align}");
            assert_eq!(
                (block_offset + map_align - map_offset) % align,
                0,
                "align {align}: {:?}",
                (map_align, map_offset, block_offset)
            );
            let h = map_align - map_offset;
            assert_eq!(h % SEGMENT_SIZE, 0, "align {align}");
            let block = ptr::without_provenance_mut::<u8>(h + block_offset);
            assert_eq!(crate::page::segment_of(block).addr(), h, "align {align}");
        }
    }

    fn heap_with(used: &[u64]) -> HugeHeap {
        let mut h = HugeHeap {
            regions: [Region {
                base: ptr::null_mut(),
                used: 0,
                dirty: [0; REGION_SEGMENTS],
            }; MAX_REGIONS],
            nregions: used.len(),
            free_dirty: 0,
            live: 0,
            live_dirty: 0,
            direct_bytes: 0,
            direct_count: 0,
            peak: [0; 2],
            releases: 0,
            counters: [HugeCounters::default(); MAX_HEAP_COUNT],
            tombs: [ptr::null_mut(); TOMBSTONES],
            next_tomb: 0,
        };
        for (i, &u) in used.iter().enumerate() {
            h.regions[i].used = u;
        }
        h
    }

    const SEG: usize = SEGMENT_SIZE;

    #[test]
    fn best_fit_takes_the_smallest_run_when_nothing_is_dirty() {
        // Region 0: free runs of 3 (bits 2..5) and 1 (bit 7) and the tail from bit 10.
        let used0 = !(0b111u64 << 2) & !(1 << 7) & !(low_bits(54) << 10);
        let h = heap_with(&[used0]);
        assert_eq!(best_fit(&h, 1, SEG), Some((0, 7)));
        assert_eq!(best_fit(&h, 2, 2 * SEG), Some((0, 2)));
        assert_eq!(best_fit(&h, 3, 3 * SEG), Some((0, 2)));
        assert_eq!(best_fit(&h, 4, 4 * SEG), Some((0, 10)));
        assert_eq!(best_fit(&h, 55, 55 * SEG), None);
        // A full region and an empty one.
        let h = heap_with(&[u64::MAX, 0]);
        assert_eq!(best_fit(&h, 64, 64 * SEG), Some((1, 0)));
        assert_eq!(best_fit(&h, 1, SEG), Some((1, 0)));
    }

    #[test]
    fn best_fit_weighs_faults_and_wasted_dirty_memory() {
        // Free: segments 4-5 (clean) and 20-21; 20 fully dirty.
        let used = !((0b11 << 4) | (0b11 << 20));
        let mut h = heap_with(&[used]);
        h.regions[0].dirty[20] = 64;
        // A whole segment: the dirty one costs no fault.
        assert_eq!(best_fit(&h, 1, SEG), Some((0, 20)));
        // 256 KiB: the clean segment faults 4 units; the dirty one would waste 60.
        assert_eq!(best_fit(&h, 1, 256 << 10), Some((0, 4)));
        // Two segments: only the dirty run's faults are fewer.
        assert_eq!(best_fit(&h, 2, 2 * SEG), Some((0, 20)));
        // The far end of a run when that is where the dirty memory is.
        h.regions[0].dirty[20] = 0;
        h.regions[0].dirty[21] = 64;
        assert_eq!(best_fit(&h, 1, SEG), Some((0, 21)));
    }

    #[test]
    fn claim_and_release_keep_the_dirty_accounting() {
        let mut h = heap_with(&[0]);
        // A block of 5 MiB + 64 B: two segments, the second covered 1 MiB + 64 B.
        let end = (5 << 20) + 64;
        let c = claim(&mut h, 0, 0, 2, end);
        assert_eq!(c.was_dirty[..2], [0, 0]);
        assert_eq!(c.slack, (0, 0));
        assert_eq!(h.regions[0].used, 0b11);
        assert_eq!(h.regions[0].dirty[..2], [64, 17]);
        assert_eq!(h.live_dirty, 81 * DIRTY_UNIT);
        // 8 MiB of other live huge memory (a direct mapping): the budget keeps the 5 MiB.
        h.direct_bytes = 8 << 20;
        assert!(release_or_defer(&mut h, 0, 0, 2));
        assert_eq!(h.live_dirty, 0);
        assert_eq!(h.regions[0].used, 0);
        assert_eq!(h.free_dirty, 81 * DIRTY_UNIT);
        // A small block on the dirty memory: the second segment is not taken, and no slack
        // is decommitted in the first (64 units dirty, 2 covered: 62 units of slack).
        let c = claim(&mut h, 0, 0, 1, 100 << 10);
        assert_eq!(c.was_dirty[0], 64);
        assert_eq!(c.slack, (2 * DIRTY_UNIT, 64 * DIRTY_UNIT));
        assert_eq!(h.regions[0].dirty[0], 2);
        assert_eq!(h.free_dirty, 17 * DIRTY_UNIT);
    }

    #[test]
    fn release_beyond_the_budget_is_deferred() {
        let mut h = heap_with(&[0]);
        h.free_dirty = SPAN_RETAIN_MIN;
        h.regions[0].used = 1;
        h.regions[0].dirty[0] = 1;
        h.live_dirty = DIRTY_UNIT;
        assert!(!release_or_defer(&mut h, 0, 0, 1));
        assert_eq!(h.regions[0].used, 1);
        release_clean(&mut h, 0, 0, 1);
        assert_eq!((h.regions[0].used, h.regions[0].dirty[0]), (0, 0));
        assert_eq!(retain_budget(400 << 20, 0), (400 << 20) / SPAN_RETAIN_SHARE);
        assert_eq!(retain_budget(0, 300 << 20), 300 << 20);
    }

    #[test]
    fn a_burst_of_releases_stays_within_the_recent_peak() {
        let mut h = heap_with(&[0]);
        // Eight live blocks of one whole segment each: 32 MiB dirty.
        for s in 0..8 {
            claim(&mut h, 0, s, 1, SEG);
        }
        assert_eq!(h.live_dirty, 8 * SEG);
        // All freed at once: every one stays dirty (the live bytes alone would have kept
        // four of them: the fifth would have found 16 MiB free against 12 MiB live).
        for s in 0..8 {
            assert!(release_or_defer(&mut h, 0, s, 1), "segment {s}");
        }
        assert_eq!((h.free_dirty, h.live_dirty), (8 * SEG, 0));
        // Two windows of releases with little live memory forget the peak.
        let c = claim(&mut h, 0, 0, 1, 64 << 10);
        assert_eq!(c.slack, (DIRTY_UNIT, SEG));
        for _ in 0..2 * RETAIN_PEAK_WINDOW {
            note_release(&mut h);
        }
        assert_eq!(h.peak, [64 << 10, 64 << 10]);
        // 28 MiB free dirty already: the small block's unit is decommitted first.
        assert!(!release_or_defer(&mut h, 0, 0, 1));
    }
}
