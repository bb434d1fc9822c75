//! Blocks with a mapping of their own: those above [`super::LARGE_MAX`], those aligned
//! above what a large segment's units give, and those `mallopt(M_MMAP_THRESHOLD)` sends
//! here. The mapping is page-granular (the header, then the block): its address space is
//! what glibc's own mapping of the block would take.
//!
//! ```text
//!  SEGMENT_SIZE-aligned mapping, map_len bytes (whole OS pages)
//!  +------+---------------------------------------------+
//!  |header| block (map_len - block_offset bytes usable)  |
//!  +------+---------------------------------------------+
//!  (aligned at or above a segment: the header sits one segment below the block)
//! ```
//!
//! A freed mapping is kept, whole and resident, in a small cache (within the heap's retain
//! budget, see `super`), and the next request takes a cached mapping ([`Cache::take`]):
//! one at most a quarter too big as it is, a smaller one grown with `mremap` (in place,
//! else moved by its page tables), a bigger one split (its tail moved by `mremap` to a
//! mapping of its own, cached): the resident pages serve again without a fault, whatever
//! the sizes (mimalloc-bench's malloc-large: 5-25 MiB), and every cached or live mapping
//! stays one kernel mapping (a VMA), which `mremap` needs. Unmapped, a mapping keeps its header page for a while (a
//! tombstone, see `super`), so a second free of it reads a header that says "freed".

use crate::page::{
    BLOCK_FREED, BLOCK_LIVE, HUGE_HEADER, KIND_HUGE, MAGIC, NO_REGION, SEGMENT_SIZE, SegmentHeader,
};
use crate::sync::unmodeled::{AtomicU32, Ordering};
use crate::sys;
use core::ptr;

/// Freed mappings kept for reuse, at most.
pub const SOLO_CACHE: usize = 32;

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
pub(crate) fn huge_geometry(align: usize) -> (usize, usize, usize) {
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

/// `n` rounded up to whole OS pages, `None` on overflow.
pub(crate) fn round_to_os_page(n: usize) -> Option<usize> {
    let ps = sys::os_page_size();
    Some(n.checked_add(ps - 1)? & !(ps - 1))
}

/// Writes the header of a live block with a mapping of its own.
///
/// # Safety
/// `h` starts a writable range of at least `HUGE_HEADER` bytes owned by the caller.
pub(crate) unsafe fn write_header(h: *mut u8, idx: usize, len: usize, off: usize) {
    let header = SegmentHeader {
        magic: MAGIC,
        kind: KIND_HUGE,
        owner: idx as u32,
        used_pages: AtomicU32::new(0),
        map_len: len,
        block_offset: off,
        next: ptr::null_mut(),
        state: AtomicU32::new(BLOCK_LIVE),
        region: NO_REGION,
        lent: 0,
    };
    // SAFETY: forwarded from the caller.
    unsafe { h.cast::<SegmentHeader>().write(header) };
}

/// The fields of a mapping's header that do not change while its block is live.
#[derive(Clone, Copy)]
pub(crate) struct Fields {
    pub(crate) owner: usize,
    pub(crate) map_len: usize,
    pub(crate) block_offset: usize,
}

/// Reads the plain fields of the header at `seg`.
///
/// # Safety
/// `seg` is mapped and readable, and no one writes these fields meanwhile (they are the
/// holder's of a live block, and nobody's of a freed one).
pub(crate) unsafe fn fields(seg: *mut SegmentHeader) -> Fields {
    // SAFETY: forwarded from the caller; the reference ends with this function.
    let h = unsafe { &*seg };
    Fields {
        owner: h.owner as usize,
        map_len: h.map_len,
        block_offset: h.block_offset,
    }
}

/// Freed mappings (segment-aligned, header first), oldest first, with their lengths.
pub(crate) struct Cache {
    entries: [(*mut SegmentHeader, usize); SOLO_CACHE],
    n: usize,
    /// Bytes of the cached mappings.
    pub(crate) bytes: usize,
}

impl Cache {
    pub(crate) const fn new() -> Self {
        Self {
            entries: [(ptr::null_mut(), 0); SOLO_CACHE],
            n: 0,
            bytes: 0,
        }
    }

    /// Keeps the freed mapping `seg` of `len` bytes; `false` when the cache is full.
    pub(crate) fn push(&mut self, seg: *mut SegmentHeader, len: usize) -> bool {
        if self.n == SOLO_CACHE {
            return false;
        }
        self.entries[self.n] = (seg, len);
        self.n += 1;
        self.bytes += len;
        true
    }

    fn remove(&mut self, i: usize) -> (*mut SegmentHeader, usize) {
        let e = self.entries[i];
        self.entries.copy_within(i + 1..self.n, i);
        self.n -= 1;
        self.bytes -= e.1;
        e
    }

    /// Takes the cached mapping that best serves a block of `size` bytes at `off` into a
    /// mapping of `need` bytes, and says how ([`Use`]): first the shortest one it may keep
    /// whole (its usable bytes within a quarter of the request); else the longest of those
    /// at least half as long, to be grown; else the shortest longer one, to be split; else
    /// the longest, to be grown. Splitting before growing small ones, and growing before
    /// splitting, kept mimalloc-bench's malloc-large (5-25 MiB at random) at 285,000 page
    /// faults in a model of it; trimming instead of splitting took 1.7 million.
    pub(crate) fn take(
        &mut self,
        need: usize,
        size: usize,
        off: usize,
    ) -> Option<(Use, *mut SegmentHeader, usize)> {
        let live = &self.entries[..self.n];
        let pick = |ok: &dyn Fn(usize) -> bool, longest: bool| {
            let it = (0..live.len()).filter(|&i| ok(live[i].1));
            if longest {
                it.max_by_key(|&i| live[i].1)
            } else {
                it.min_by_key(|&i| live[i].1)
            }
        };
        let whole = |len: usize| len >= need && len - off <= size + size / 4;
        let (how, i) = if let Some(i) = pick(&whole, false) {
            (Use::Whole, i)
        } else if let Some(i) = pick(&|len| len < need && len >= need / 2, true) {
            (Use::Grow, i)
        } else if let Some(i) = pick(&|len| len > need, false) {
            (Use::Split, i)
        } else {
            (Use::Grow, pick(&|_| true, true)?)
        };
        let (seg, len) = self.remove(i);
        Some((how, seg, len))
    }

    /// Takes the oldest cached mapping.
    pub(crate) fn take_oldest(&mut self) -> Option<(*mut SegmentHeader, usize)> {
        (self.n > 0).then(|| self.remove(0))
    }
}

/// How a cached mapping serves a block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Use {
    /// As it is.
    Whole,
    /// Grown with `mremap` (its pages move with it, only the new ones fault).
    Grow,
    /// Its first bytes; the rest is moved to a mapping of its own (`mremap` again, no
    /// fault) and cached.
    Split,
}

/// Writes the header of a cached (freed) mapping of `len` bytes.
///
/// # Safety
/// As for [`write_header`].
pub(crate) unsafe fn write_freed_header(h: *mut u8, len: usize) {
    // SAFETY: forwarded.
    unsafe { write_header(h, 0, len, HUGE_HEADER) };
    // SAFETY: as above; nobody else sees the header yet.
    unsafe {
        (*h.cast::<SegmentHeader>())
            .state
            .store(BLOCK_FREED, Ordering::Relaxed)
    };
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

    #[test]
    fn the_cache_serves_whole_then_grows_then_splits() {
        let fake = |n: usize| ptr::without_provenance_mut::<SegmentHeader>(n << 22);
        let mib = 1 << 20;
        let mut c = Cache::new();
        for (i, len) in [8 * mib, 30 * mib, 12 * mib, 2 * mib]
            .into_iter()
            .enumerate()
        {
            assert!(c.push(fake(i + 1), len));
        }
        assert_eq!(c.bytes, 52 * mib);
        // 10 MiB: the 12 MiB one is within a quarter, whole.
        let t = |c: &mut Cache, need: usize| c.take(need, need - 64, 64);
        assert_eq!(t(&mut c, 10 * mib), Some((Use::Whole, fake(3), 12 * mib)));
        // 14 MiB: nothing within a quarter; 8 MiB is more than half of it: grown.
        assert_eq!(t(&mut c, 14 * mib), Some((Use::Grow, fake(1), 8 * mib)));
        // 20 MiB: nothing within a quarter, nothing half as long: the 30 MiB one is split.
        assert_eq!(t(&mut c, 20 * mib), Some((Use::Split, fake(2), 30 * mib)));
        // 40 MiB: only 2 MiB is left, grown.
        assert_eq!(t(&mut c, 40 * mib), Some((Use::Grow, fake(4), 2 * mib)));
        assert_eq!((t(&mut c, mib), c.bytes), (None, 0));
        for i in 0..SOLO_CACHE {
            assert!(c.push(fake(i + 1), mib));
        }
        assert!(!c.push(fake(99), mib), "full");
        assert_eq!(c.take_oldest(), Some((fake(1), mib)));
    }
}
