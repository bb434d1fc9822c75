//! Large segments: page-granular extents for blocks of `SMALL_MAX` + 1 to [`LARGE_MAX`]
//! bytes, found by masking like small blocks, and the table that finds a segment with a
//! free run long enough (mimalloc's arena bitmaps, over segments instead of blocks).
//!
//! ```text
//!  large segment: a mapping of 1 + UNITS units of 4 KiB at a SEGMENT_SIZE-aligned address
//!  +------+-----------+---------+------+------------------------------ ... ---------+
//!  |header| block 224K| free    |block |  free                                       |
//!  +------+-----------+---------+------+------------------------------ ... ---------+
//!  unit 0   units 1..56  57..96   ...                                   ... unit 1024
//!  header: SegmentHeader (kind LARGE), bitmaps used / dirty / live (1 bit per unit),
//!          len[unit] and owner[unit] at each live block's first unit
//! ```
//!
//! Every block starts in the segment's first `SEGMENT_SIZE` bytes, so `segment_of` finds
//! the header; the last unit lies just beyond (the mapping is one unit longer than a
//! segment, so that 1024 units hold four 1 MiB blocks). A block is a run of `used` units,
//! a size class long (four classes per doubling, as jemalloc's large classes: at most 25%
//! over the request); freed, its units are free at once and coalesce with their free
//! neighbours, so memory freed by one size serves any other. `dirty` marks units that may
//! be resident (touched since the segment was mapped or the unit last decommitted).
//!
//! The header's plain fields are reached under the huge heap's lock only, except `len` of
//! a live block (fixed while it is live), which `usable_size` reads without it: so the
//! header is never covered by one reference, only its bitmaps (which only the lock holder
//! touches) are.

use crate::page::{SEGMENT_SIZE, SegmentHeader};
use core::mem::{offset_of, size_of};

/// Granularity of large blocks (and of the dirty accounting): the OS page of x86_64 and
/// most aarch64 Linux kernels.
pub const LARGE_UNIT: usize = 4096;
/// Extent units of a large segment (after its header unit).
pub(crate) const UNITS: usize = SEGMENT_SIZE / LARGE_UNIT;
const WORDS: usize = UNITS / 64;
/// Bytes one large segment maps: its header unit, then [`UNITS`] units.
pub(crate) const LARGE_SEGMENT_BYTES: usize = (UNITS + 1) * LARGE_UNIT;
/// Largest block placed in a large segment (its size class, 1.25 MiB: three fit one
/// segment, so N blocks of one size take at most 1.33x their requests in address space,
/// the header included); bigger blocks get a mapping of their own (`super::solo`).
pub const LARGE_MAX: usize = 1280 << 10;
/// Most large segments (16 GiB of blocks); beyond them blocks get mappings of their own.
pub const MAX_LARGE_SEGMENTS: usize = 4096;
/// Run-length buckets: bucket `b` holds segments whose longest free run has `2^b` to
/// `2^(b+1) - 1` units.
const BUCKETS: usize = UNITS.trailing_zeros() as usize + 1;
const SLOT_WORDS: usize = MAX_LARGE_SEGMENTS / 64;

/// The bitmaps of a large segment: bit `i` stands for unit `i + 1`.
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct Bits {
    /// Units of live blocks.
    pub(crate) used: [u64; WORDS],
    /// Units that may be resident.
    pub(crate) dirty: [u64; WORDS],
    /// First units of live blocks (a free of anything else is invalid or a double free).
    pub(crate) live: [u64; WORDS],
}

#[cfg(test)]
impl Bits {
    pub(crate) const EMPTY: Bits = Bits {
        used: [0; WORDS],
        dirty: [0; WORDS],
        live: [0; WORDS],
    };
}

/// The header unit of a large segment.
#[repr(C)]
struct Header {
    seg: SegmentHeader,
    bits: Bits,
    /// Units of the live block starting at each unit.
    len: [u16; UNITS],
    /// The arena each live block is counted on (its allocating thread's).
    owner: [u8; UNITS],
}

const _: () = assert!(size_of::<Header>() <= LARGE_UNIT);
const _: () = assert!(offset_of!(Header, seg) == 0);
const _: () = assert!(UNITS.is_multiple_of(64) && UNITS <= u16::MAX as usize);
const _: () = assert!(LARGE_MAX.is_multiple_of(LARGE_UNIT) && 3 * LARGE_MAX <= SEGMENT_SIZE);
const _: () = assert!(crate::config::MAX_HEAP_COUNT <= u8::MAX as usize + 1);
const _: () =
    assert!(MAX_LARGE_SEGMENTS.is_multiple_of(64) && MAX_LARGE_SEGMENTS < u32::MAX as usize);

/// The bitmaps of the large segment at `seg`.
pub(crate) fn bits(seg: *mut SegmentHeader) -> *mut Bits {
    seg.cast::<u8>()
        .wrapping_add(offset_of!(Header, bits))
        .cast()
}

/// The address of unit `i + 1` (bit `i`) of the segment at `seg`.
pub(crate) fn unit_addr(seg: *mut SegmentHeader, i: usize) -> *mut u8 {
    seg.cast::<u8>().wrapping_add((i + 1) * LARGE_UNIT)
}

/// The bit of the unit a block at `p` starts at, if `p` is the start of a unit that can
/// start a block of the segment at `seg`.
pub(crate) fn bit_of(seg: *mut SegmentHeader, p: *mut u8) -> Option<usize> {
    let off = p.addr().wrapping_sub(seg.addr());
    (off.is_multiple_of(LARGE_UNIT) && (LARGE_UNIT..=UNITS * LARGE_UNIT).contains(&off))
        .then(|| off / LARGE_UNIT - 1)
}

/// Units of the live block at bit `i`.
///
/// # Safety
/// `seg` is a mapped large segment; the caller holds the huge heap's lock, or the block at
/// `i` is live and its own (its length is fixed while it is live).
pub(crate) unsafe fn len(seg: *mut SegmentHeader, i: usize) -> usize {
    debug_assert!(i < UNITS);
    let at = seg
        .cast::<u8>()
        .wrapping_add(offset_of!(Header, len) + 2 * i)
        .cast::<u16>();
    // SAFETY: forwarded from the caller; the element lies in the header unit.
    usize::from(unsafe { at.read() })
}

/// Records the length and owner of the block starting at bit `i`.
///
/// # Safety
/// `seg` is a mapped large segment and the caller holds the huge heap's lock, under which
/// the block at `i` is being placed or resized.
pub(crate) unsafe fn set_len_owner(seg: *mut SegmentHeader, i: usize, units: usize, owner: usize) {
    debug_assert!(i < UNITS && units <= UNITS);
    let base = seg.cast::<u8>();
    let l = base
        .wrapping_add(offset_of!(Header, len) + 2 * i)
        .cast::<u16>();
    let o = base.wrapping_add(offset_of!(Header, owner) + i);
    // SAFETY: forwarded from the caller; both elements lie in the header unit.
    unsafe { l.write(units as u16) };
    // SAFETY: as above.
    unsafe { o.write(owner as u8) };
}

/// The arena the block at bit `i` is counted on.
///
/// # Safety
/// As for [`set_len_owner`].
pub(crate) unsafe fn owner(seg: *mut SegmentHeader, i: usize) -> usize {
    let o = seg.cast::<u8>().wrapping_add(offset_of!(Header, owner) + i);
    // SAFETY: forwarded from the caller.
    usize::from(unsafe { o.read() })
}

// ---------------------------------------------------------------------------------------
// Bitmap arithmetic (pure; unit-tested below and under Miri).

/// Sets bits `start..start + n` of `w`.
pub(crate) fn set_range(w: &mut [u64; WORDS], start: usize, n: usize) {
    for i in start..start + n {
        w[i / 64] |= 1 << (i % 64);
    }
}

/// Clears bits `start..start + n` of `w`.
pub(crate) fn clear_range(w: &mut [u64; WORDS], start: usize, n: usize) {
    for i in start..start + n {
        w[i / 64] &= !(1 << (i % 64));
    }
}

/// Set bits among `start..start + n` of `w`.
pub(crate) fn count_range(w: &[u64; WORDS], start: usize, n: usize) -> usize {
    (start..start + n)
        .filter(|&i| w[i / 64] & (1 << (i % 64)) != 0)
        .count()
}

/// Whether bit `i` of `w` is set.
pub(crate) fn test(w: &[u64; WORDS], i: usize) -> bool {
    w[i / 64] & (1 << (i % 64)) != 0
}

/// The runs of clear bits of `used`, as `(start, end)` (end exclusive), in order.
pub(crate) fn free_runs(used: &[u64; WORDS]) -> impl Iterator<Item = (usize, usize)> + use<> {
    clear_runs(*used)
}

/// The runs of clear bits of `w`, in order.
fn clear_runs(w: [u64; WORDS]) -> impl Iterator<Item = (usize, usize)> {
    let mut i = 0;
    core::iter::from_fn(move || {
        // The first clear bit from `i`.
        while i < UNITS {
            let x = !w[i / 64] >> (i % 64);
            if x != 0 {
                i += x.trailing_zeros() as usize;
                break;
            }
            i = (i / 64 + 1) * 64;
        }
        if i >= UNITS {
            return None;
        }
        let start = i;
        // The first set bit from `start`.
        while i < UNITS {
            let x = w[i / 64] >> (i % 64);
            if x != 0 {
                i += x.trailing_zeros() as usize;
                break;
            }
            i = (i / 64 + 1) * 64;
        }
        Some((start, i.min(UNITS)))
    })
}

/// The longest run of clear bits of `used`.
pub(crate) fn max_run(used: &[u64; WORDS]) -> usize {
    free_runs(used).map(|(s, e)| e - s).max().unwrap_or(0)
}

/// Where a block goes in a segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Place {
    /// Its first bit.
    pub(crate) start: usize,
    /// The length of the free run it is cut from (best fit: the shortest).
    pub(crate) run: usize,
    /// Dirty units it covers (the more, the fewer page faults).
    pub(crate) dirty: usize,
}

impl Place {
    /// Whether `self` is a better place than `o`: a shorter run (best fit, which keeps the
    /// long runs for long blocks), then more resident units.
    pub(crate) fn better_than(&self, o: &Place) -> bool {
        (self.run, usize::MAX - self.dirty) < (o.run, usize::MAX - o.dirty)
    }
}

/// The best place in a segment with bitmaps `b` for a block of `k` units whose address
/// must be a multiple of `a` units (a power of two): among the free runs that hold it, the
/// shortest; in that run, the aligned start at either end that covers more dirty units.
pub(crate) fn place(b: &Bits, k: usize, a: usize) -> Option<Place> {
    debug_assert!(k >= 1 && a.is_power_of_two());
    let mut best: Option<Place> = None;
    for (s, e) in free_runs(&b.used) {
        if e - s < k {
            continue;
        }
        // Bit `i` is unit `i + 1`: aligned when `i + 1` is a multiple of `a`.
        let first = (s + 1).next_multiple_of(a) - 1;
        if first + k > e {
            continue;
        }
        let last = ((e - k + 1) / a) * a - 1;
        for start in [first, last] {
            let p = Place {
                start,
                run: e - s,
                dirty: count_range(&b.dirty, start, k),
            };
            if best.is_none_or(|q| p.better_than(&q)) {
                best = Some(p);
            }
        }
    }
    best
}

/// The runs of free units that may be resident (dirty, in no block), as `(start, len)`.
pub(crate) fn free_dirty_runs(b: &Bits) -> impl Iterator<Item = (usize, usize)> + use<> {
    let mut not_free_dirty = [0u64; WORDS];
    for (w, f) in not_free_dirty.iter_mut().enumerate() {
        *f = !(b.dirty[w] & !b.used[w]);
    }
    clear_runs(not_free_dirty).map(|(s, e)| (s, e - s))
}

// ---------------------------------------------------------------------------------------
// The segment table.

/// Every large segment, and for each run-length bucket the segments whose longest free run
/// falls in it: a block of `k` units looks at the segments of bucket `floor(log2 k)`
/// (those long enough) and then of the buckets above, a few bitmap words each, however
/// many segments there are.
pub(crate) struct Table {
    segs: [*mut SegmentHeader; MAX_LARGE_SEGMENTS],
    longest: [u16; MAX_LARGE_SEGMENTS],
    /// Free dirty units per segment (what [`Table::reclaim_from`] may decommit).
    pub(crate) free_dirty: [u16; MAX_LARGE_SEGMENTS],
    buckets: [[u64; SLOT_WORDS]; BUCKETS],
    occupied: [u64; SLOT_WORDS],
    /// Mapped large segments.
    pub(crate) count: usize,
    /// Of them, those with no live block.
    pub(crate) empty: usize,
    /// Where the next search for free dirty units starts.
    pub(crate) cursor: usize,
}

fn bucket(run: usize) -> Option<usize> {
    (run > 0).then(|| (usize::BITS - 1 - run.leading_zeros()) as usize)
}

impl Table {
    pub(crate) const fn new() -> Self {
        Self {
            segs: [core::ptr::null_mut(); MAX_LARGE_SEGMENTS],
            longest: [0; MAX_LARGE_SEGMENTS],
            free_dirty: [0; MAX_LARGE_SEGMENTS],
            buckets: [[0; SLOT_WORDS]; BUCKETS],
            occupied: [0; SLOT_WORDS],
            count: 0,
            empty: 0,
            cursor: 0,
        }
    }

    /// The segment in slot `slot` (null if none).
    pub(crate) fn seg(&self, slot: usize) -> *mut SegmentHeader {
        self.segs[slot]
    }

    /// Records the segment at `seg` (all free) in a free slot; `None` when the table is
    /// full.
    pub(crate) fn insert(&mut self, seg: *mut SegmentHeader) -> Option<usize> {
        let w = self.occupied.iter().position(|&w| w != u64::MAX)?;
        let slot = w * 64 + (!self.occupied[w]).trailing_zeros() as usize;
        self.occupied[w] |= 1 << (slot % 64);
        self.segs[slot] = seg;
        self.longest[slot] = 0;
        self.free_dirty[slot] = 0;
        self.count += 1;
        self.empty += 1;
        self.set_longest(slot, UNITS);
        Some(slot)
    }

    /// Forgets the segment in `slot`.
    pub(crate) fn remove(&mut self, slot: usize) {
        self.set_longest(slot, 0);
        self.free_dirty[slot] = 0;
        self.occupied[slot / 64] &= !(1 << (slot % 64));
        self.segs[slot] = core::ptr::null_mut();
        self.count -= 1;
        self.empty -= 1;
    }

    /// Records that the longest free run of the segment in `slot` is `run` units.
    pub(crate) fn set_longest(&mut self, slot: usize, run: usize) {
        let (w, m) = (slot / 64, 1u64 << (slot % 64));
        if let Some(b) = bucket(self.longest[slot].into()) {
            self.buckets[b][w] &= !m;
        }
        if let Some(b) = bucket(run) {
            self.buckets[b][w] |= m;
        }
        self.longest[slot] = run as u16;
    }

    /// Up to `n` slots whose segments have a free run of at least `k` units, from the
    /// lowest bucket that has one (so the closest fits come first).
    pub(crate) fn candidates(&self, k: usize, out: &mut [usize]) -> usize {
        let mut found = 0;
        let Some(b0) = bucket(k) else { return 0 };
        for b in b0..BUCKETS {
            for (w, &word) in self.buckets[b].iter().enumerate() {
                let mut bits = word;
                while bits != 0 {
                    let slot = w * 64 + bits.trailing_zeros() as usize;
                    bits &= bits - 1;
                    if usize::from(self.longest[slot]) >= k {
                        out[found] = slot;
                        found += 1;
                        if found == out.len() {
                            return found;
                        }
                    }
                }
            }
            if found > 0 {
                break;
            }
        }
        found
    }

    /// The next occupied slot with free dirty units at or after the cursor (wrapping),
    /// if any.
    pub(crate) fn next_free_dirty(&mut self) -> Option<usize> {
        for n in 0..MAX_LARGE_SEGMENTS {
            let slot = (self.cursor + n) % MAX_LARGE_SEGMENTS;
            if self.free_dirty[slot] != 0 {
                self.cursor = slot;
                return Some(slot);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bits_with(used: &[(usize, usize)], dirty: &[(usize, usize)]) -> Bits {
        let mut b = Bits::EMPTY;
        for &(s, n) in used {
            set_range(&mut b.used, s, n);
        }
        for &(s, n) in dirty {
            set_range(&mut b.dirty, s, n);
        }
        b
    }

    #[test]
    fn runs_and_longest() {
        let b = bits_with(&[(0, 10), (70, 5), (200, 824)], &[]);
        let runs: Vec<_> = free_runs(&b.used).collect();
        assert_eq!(runs, vec![(10, 70), (75, 200)]);
        assert_eq!(max_run(&b.used), 125);
        assert_eq!(max_run(&Bits::EMPTY.used), UNITS);
        let full = bits_with(&[(0, UNITS)], &[]);
        assert_eq!(free_runs(&full.used).count(), 0);
        assert_eq!(count_range(&b.used, 60, 20), 5);
    }

    #[test]
    fn place_takes_the_shortest_run_and_its_dirtier_end() {
        // Free runs: 10..70 (60 units), 75..200 (125), clean; the 60-unit run is the fit.
        let b = bits_with(&[(0, 10), (70, 5), (200, 824)], &[]);
        let p = place(&b, 40, 1).unwrap();
        assert_eq!((p.start, p.run), (10, 60));
        assert_eq!(place(&b, 100, 1).unwrap().start, 75);
        assert_eq!(place(&b, 126, 1), None);
        // Dirty units at the far end of the run: the block goes there.
        let b = bits_with(&[(0, 10), (70, 5), (200, 824)], &[(40, 30)]);
        let p = place(&b, 40, 1).unwrap();
        assert_eq!((p.start, p.dirty), (30, 30));
    }

    #[test]
    fn place_aligns_the_address_not_the_bit() {
        // 64 KiB alignment: units that are multiples of 16, so bits 15, 31, ...
        let b = bits_with(&[(0, 3)], &[]);
        let p = place(&b, 40, 16).unwrap();
        assert_eq!((p.start + 1) % 16, 0);
        assert!(p.start >= 3);
        // A run too short once aligned.
        let b = bits_with(&[(0, 1), (50, UNITS - 50)], &[]);
        assert_eq!(place(&b, 40, 16), None);
        assert_eq!(place(&b, 40, 1).unwrap().start, 1);
    }

    #[test]
    fn free_dirty_runs_skip_used_and_clean_units() {
        let b = bits_with(&[(10, 10)], &[(0, 30), (100, 2)]);
        let r: Vec<_> = free_dirty_runs(&b).collect();
        assert_eq!(r, vec![(0, 10), (20, 10), (100, 2)]);
    }

    #[test]
    fn table_finds_a_segment_with_a_long_enough_run() {
        let mut t = Box::new(Table::new());
        let fake = |n: usize| core::ptr::without_provenance_mut::<SegmentHeader>(n << 22);
        let a = t.insert(fake(1)).unwrap();
        let b = t.insert(fake(2)).unwrap();
        let c = t.insert(fake(3)).unwrap();
        t.set_longest(a, 40);
        t.set_longest(b, 50);
        t.set_longest(c, 200);
        let mut out = [0; 4];
        // 45 units: bucket 5 holds 40 and 50; only `b` is long enough.
        assert_eq!(t.candidates(45, &mut out), 1);
        assert_eq!(out[0], b);
        // 60 units: nothing in bucket 5 fits; bucket 7 has `c`.
        assert_eq!(t.candidates(60, &mut out), 1);
        assert_eq!(out[0], c);
        assert_eq!(t.candidates(201, &mut out), 0);
        t.remove(c);
        assert_eq!(t.candidates(60, &mut out), 0);
        assert_eq!(t.insert(fake(4)), Some(c), "a free slot is reused");
        assert_eq!(t.count, 3);
    }
}
