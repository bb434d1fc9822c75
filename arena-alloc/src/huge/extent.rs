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

#[cfg(test)]
std::thread_local! {
    /// Bitmap words the range operations and run scans of this thread looked at.
    static WORDS_SEEN: core::cell::Cell<usize> = const { core::cell::Cell::new(0) };
}

/// Counts `n` bitmap words looked at (tests only).
#[inline(always)]
fn seen(n: usize) {
    #[cfg(test)]
    WORDS_SEEN.with(|c| c.set(c.get() + n));
    let _ = n;
}

/// The words bits `start..end` (`start < end`) span, and the masks of the range's bits in
/// the first and the last of them.
fn span(start: usize, end: usize) -> (usize, usize, u64, u64) {
    debug_assert!(start < end && end <= UNITS);
    let (fw, lw) = (start / 64, (end - 1) / 64);
    seen(lw - fw + 1);
    (
        fw,
        lw,
        u64::MAX << (start % 64),
        u64::MAX >> (63 - (end - 1) % 64),
    )
}

/// Sets bits `start..start + n` of `w`: a word operation per 64 bits.
pub(crate) fn set_range(w: &mut [u64; WORDS], start: usize, n: usize) {
    if n == 0 {
        return;
    }
    let (fw, lw, fm, lm) = span(start, start + n);
    if fw == lw {
        w[fw] |= fm & lm;
        return;
    }
    w[fw] |= fm;
    for x in &mut w[fw + 1..lw] {
        *x = u64::MAX;
    }
    w[lw] |= lm;
}

/// Clears bits `start..start + n` of `w`: a word operation per 64 bits.
pub(crate) fn clear_range(w: &mut [u64; WORDS], start: usize, n: usize) {
    if n == 0 {
        return;
    }
    let (fw, lw, fm, lm) = span(start, start + n);
    if fw == lw {
        w[fw] &= !(fm & lm);
        return;
    }
    w[fw] &= !fm;
    for x in &mut w[fw + 1..lw] {
        *x = 0;
    }
    w[lw] &= !lm;
}

/// Set bits among `start..start + n` of `w`: a word operation per 64 bits.
pub(crate) fn count_range(w: &[u64; WORDS], start: usize, n: usize) -> usize {
    if n == 0 {
        return 0;
    }
    let (fw, lw, fm, lm) = span(start, start + n);
    if fw == lw {
        return (w[fw] & fm & lm).count_ones() as usize;
    }
    let inner: u32 = w[fw + 1..lw].iter().map(|x| x.count_ones()).sum();
    ((w[fw] & fm).count_ones() + inner + (w[lw] & lm).count_ones()) as usize
}

/// Whether bit `i` of `w` is set.
pub(crate) fn test(w: &[u64; WORDS], i: usize) -> bool {
    w[i / 64] & (1 << (i % 64)) != 0
}

/// The runs of clear bits of `used`, as `(start, end)` (end exclusive), in order.
pub(crate) fn free_runs(used: &[u64; WORDS]) -> impl Iterator<Item = (usize, usize)> + '_ {
    runs_of_clear(move |w| used[w])
}

/// The runs of clear bits of `w`, in order.
fn clear_runs(w: [u64; WORDS]) -> impl Iterator<Item = (usize, usize)> {
    runs_of_clear(move |i| w[i])
}

/// The runs of clear bits of the bitmap whose word `i` is `word(i)`, in order: a word
/// operation per 64 bits.
fn runs_of_clear(word: impl Fn(usize) -> u64) -> impl Iterator<Item = (usize, usize)> {
    let mut i = 0;
    core::iter::from_fn(move || {
        if i >= UNITS {
            return None;
        }
        // The first clear bit from `i`.
        let mut w = i / 64;
        seen(1);
        let mut x = !word(w) & (u64::MAX << (i % 64));
        while x == 0 {
            w += 1;
            if w == WORDS {
                i = UNITS;
                return None;
            }
            seen(1);
            x = !word(w);
        }
        let start = w * 64 + x.trailing_zeros() as usize;
        // The first set bit from `start`.
        let mut x = word(w) & (u64::MAX << (start % 64));
        while x == 0 {
            w += 1;
            if w == WORDS {
                i = UNITS;
                return Some((start, UNITS));
            }
            seen(1);
            x = word(w);
        }
        i = w * 64 + x.trailing_zeros() as usize;
        Some((start, i))
    })
}

/// The longest run of clear bits of `used`: a few operations per word (the runs inside a
/// word are looked at only while no run of 62 bits was found).
pub(crate) fn max_run(used: &[u64; WORDS]) -> usize {
    let (mut best, mut cur) = (0, 0);
    for &w in used {
        if w == 0 {
            cur += 64;
            continue;
        }
        let mut pos = w.trailing_zeros() as usize;
        best = best.max(cur + pos);
        cur = w.leading_zeros() as usize;
        if best >= 62 {
            continue;
        }
        // The clear runs between set bits (bit `pos` is set).
        loop {
            pos += (!(w >> pos)).trailing_zeros() as usize;
            if pos >= 64 {
                break;
            }
            let rest = w >> pos;
            if rest == 0 {
                break; // the clear bits at the top: `cur`
            }
            let zeros = rest.trailing_zeros() as usize;
            best = best.max(zeros);
            pos += zeros;
        }
    }
    best.max(cur)
}

/// The clear run that holds bits `start..start + n` (which are clear): `(first, end)`,
/// end exclusive; a word operation per 64 bits of it.
pub(crate) fn run_around(used: &[u64; WORDS], start: usize, n: usize) -> (usize, usize) {
    // Down from `start`: just above the highest set bit below it.
    let mut first = 0;
    let mut w = start / 64;
    let mut x = used[w] & ((1u64 << (start % 64)) - 1);
    loop {
        seen(1);
        if x != 0 {
            first = w * 64 + 64 - x.leading_zeros() as usize;
            break;
        }
        if w == 0 {
            break;
        }
        w -= 1;
        x = used[w];
    }
    // Up from `start + n`: the lowest set bit at or above it.
    let mut end = UNITS;
    let e = start + n;
    if e < UNITS {
        let mut w = e / 64;
        let mut x = used[w] & (u64::MAX << (e % 64));
        loop {
            seen(1);
            if x != 0 {
                end = w * 64 + x.trailing_zeros() as usize;
                break;
            }
            w += 1;
            if w == WORDS {
                break;
            }
            x = used[w];
        }
    }
    (first, end)
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
    /// The longest free run of the segment once the block is placed.
    pub(crate) rest: usize,
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
/// One pass over the segment's free runs, a few word operations per 64 units.
pub(crate) fn place(b: &Bits, k: usize, a: usize) -> Option<Place> {
    debug_assert!(k >= 1 && a.is_power_of_two());
    let mut best: Option<(Place, usize)> = None;
    // The two longest free runs (equal lengths count twice).
    let (mut max1, mut max2) = (0, 0);
    for (s, e) in free_runs(&b.used) {
        let len = e - s;
        if len > max1 {
            (max1, max2) = (len, max1);
        } else if len > max2 {
            max2 = len;
        }
        if len < k {
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
                run: len,
                dirty: count_range(&b.dirty, start, k),
                rest: 0,
            };
            if best.is_none_or(|(q, _)| p.better_than(&q)) {
                best = Some((p, s));
            }
            if last == first {
                break;
            }
        }
    }
    let (mut p, s) = best?;
    let others = if p.run == max1 { max2 } else { max1 };
    p.rest = others.max(p.start - s).max(s + p.run - p.start - k);
    Some(p)
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
/// falls in it: a block of `k` units looks at a few segments of bucket `floor(log2 k)`
/// (those long enough) and then at the lowest bucket above that has any, found through a
/// summary word per bucket, so its cost depends neither on how many segments there are
/// nor on which slots they hold.
pub(crate) struct Table {
    segs: [*mut SegmentHeader; MAX_LARGE_SEGMENTS],
    longest: [u16; MAX_LARGE_SEGMENTS],
    /// Free dirty units per segment (what `reclaim_extents` may decommit).
    free_dirty: [u16; MAX_LARGE_SEGMENTS],
    buckets: [[u64; SLOT_WORDS]; BUCKETS],
    /// Bit `w` of `bucket_words[b]`: word `w` of `buckets[b]` is not zero.
    bucket_words: [u64; BUCKETS],
    /// Bit `b`: bucket `b` has a segment.
    nonempty: u32,
    /// Slots whose segments have free dirty units, and its summary word as above.
    dirty: [u64; SLOT_WORDS],
    dirty_words: u64,
    occupied: [u64; SLOT_WORDS],
    /// Mapped large segments.
    pub(crate) count: usize,
    /// Of them, those with no live block.
    pub(crate) empty: usize,
    /// Where the next search for free dirty units starts.
    cursor: usize,
}

const _: () = assert!(SLOT_WORDS <= 64 && BUCKETS < 32);

/// Segments of the block's own bucket whose runs turn out too short that a search looks at
/// before it tries the buckets above (all of whose segments fit); only when none of those
/// has one does it look at the rest of its bucket (before a new segment is mapped).
const BUCKET_MISSES: usize = 8;

fn bucket(run: usize) -> Option<usize> {
    (run > 0).then(|| (usize::BITS - 1 - run.leading_zeros()) as usize)
}

/// Sets (`on`) or clears bit `slot` of the slot bitmap `map` and keeps its summary word.
fn mark(map: &mut [u64; SLOT_WORDS], summary: &mut u64, slot: usize, on: bool) {
    let (w, m) = (slot / 64, 1u64 << (slot % 64));
    if on {
        map[w] |= m;
        *summary |= 1 << w;
    } else {
        map[w] &= !m;
        if map[w] == 0 {
            *summary &= !(1 << w);
        }
    }
}

impl Table {
    pub(crate) const fn new() -> Self {
        Self {
            segs: [core::ptr::null_mut(); MAX_LARGE_SEGMENTS],
            longest: [0; MAX_LARGE_SEGMENTS],
            free_dirty: [0; MAX_LARGE_SEGMENTS],
            buckets: [[0; SLOT_WORDS]; BUCKETS],
            bucket_words: [0; BUCKETS],
            nonempty: 0,
            dirty: [0; SLOT_WORDS],
            dirty_words: 0,
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
        self.set_free_dirty(slot, 0);
        self.count += 1;
        self.empty += 1;
        self.set_longest(slot, UNITS);
        Some(slot)
    }

    /// Forgets the segment in `slot`.
    pub(crate) fn remove(&mut self, slot: usize) {
        self.set_longest(slot, 0);
        self.set_free_dirty(slot, 0);
        self.occupied[slot / 64] &= !(1 << (slot % 64));
        self.segs[slot] = core::ptr::null_mut();
        self.count -= 1;
        self.empty -= 1;
    }

    /// The longest free run of the segment in `slot`, in units.
    pub(crate) fn longest(&self, slot: usize) -> usize {
        self.longest[slot].into()
    }

    /// Free dirty units of the segment in `slot`.
    pub(crate) fn free_dirty(&self, slot: usize) -> usize {
        self.free_dirty[slot].into()
    }

    /// Records that the segment in `slot` has `units` free dirty units.
    pub(crate) fn set_free_dirty(&mut self, slot: usize, units: usize) {
        debug_assert!(units <= UNITS);
        self.free_dirty[slot] = units as u16;
        mark(&mut self.dirty, &mut self.dirty_words, slot, units != 0);
    }

    /// Records that the longest free run of the segment in `slot` is `run` units.
    pub(crate) fn set_longest(&mut self, slot: usize, run: usize) {
        let old = bucket(self.longest[slot].into());
        if old == bucket(run) {
            self.longest[slot] = run as u16;
            return;
        }
        if let Some(b) = old {
            mark(&mut self.buckets[b], &mut self.bucket_words[b], slot, false);
            if self.bucket_words[b] == 0 {
                self.nonempty &= !(1 << b);
            }
        }
        if let Some(b) = bucket(run) {
            mark(&mut self.buckets[b], &mut self.bucket_words[b], slot, true);
            self.nonempty |= 1 << b;
        }
        self.longest[slot] = run as u16;
    }

    /// Adds to `out[found..]` the slots of bucket `b` whose runs hold `k` units, until
    /// `out` is full or `misses` slots were too short; the new `found`, and whether the
    /// whole bucket was looked at.
    fn scan(
        &self,
        b: usize,
        k: usize,
        out: &mut [usize],
        mut found: usize,
        misses: usize,
    ) -> (usize, bool) {
        let mut missed = 0;
        let mut words = self.bucket_words[b];
        while words != 0 {
            let w = words.trailing_zeros() as usize;
            words &= words - 1;
            let mut bits = self.buckets[b][w];
            while bits != 0 {
                let slot = w * 64 + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                if usize::from(self.longest[slot]) >= k {
                    out[found] = slot;
                    found += 1;
                    if found == out.len() {
                        return (found, false);
                    }
                } else {
                    missed += 1;
                    if missed == misses {
                        return (found, false);
                    }
                }
            }
        }
        (found, true)
    }

    /// Up to `out.len()` slots whose segments have a free run of at least `k` units, from
    /// the lowest bucket that has one (so the closest fits come first): a few segments of
    /// `k`'s own bucket, then the lowest bucket above with any segment (they all fit), and
    /// only when neither has one, the rest of `k`'s bucket.
    pub(crate) fn candidates(&self, k: usize, out: &mut [usize]) -> usize {
        let Some(b0) = bucket(k) else { return 0 };
        if b0 >= BUCKETS {
            return 0;
        }
        let (found, whole) = self.scan(b0, k, out, 0, BUCKET_MISSES);
        if found > 0 {
            return found;
        }
        let above = self.nonempty & !((2u32 << b0) - 1);
        if above != 0 {
            return self
                .scan(above.trailing_zeros() as usize, k, out, 0, usize::MAX)
                .0;
        }
        if whole {
            return 0;
        }
        self.scan(b0, k, out, 0, usize::MAX).0
    }

    /// The next slot with free dirty units at or after the cursor (wrapping), if any: a
    /// few word operations however many segments there are.
    pub(crate) fn next_free_dirty(&mut self) -> Option<usize> {
        let c = self.cursor % MAX_LARGE_SEGMENTS;
        let (w, bit) = (c / 64, c % 64);
        let here = self.dirty[w] & (u64::MAX << bit);
        let slot = if here != 0 {
            w * 64 + here.trailing_zeros() as usize
        } else {
            let above = if w + 1 < 64 {
                self.dirty_words & (u64::MAX << (w + 1))
            } else {
                0
            };
            let ww = if above != 0 {
                above.trailing_zeros() as usize
            } else if self.dirty_words != 0 {
                self.dirty_words.trailing_zeros() as usize
            } else {
                return None;
            };
            ww * 64 + self.dirty[ww].trailing_zeros() as usize
        };
        self.cursor = slot;
        Some(slot)
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

    /// Bitmap words one alloc and free of a `k`-unit block looks at in a segment that
    /// holds `live` blocks of `k` units, as `alloc_extent` and `release_units` use them.
    fn words_per_pair(k: usize, live: usize) -> usize {
        let mut b = Bits::EMPTY;
        for n in 0..live {
            set_range(&mut b.used, n * k, k);
            set_range(&mut b.dirty, n * k, k);
        }
        WORDS_SEEN.with(|c| c.set(0));
        let p = place(&b, k, 1).unwrap();
        set_range(&mut b.used, p.start, k);
        set_range(&mut b.dirty, p.start, k);
        assert_eq!(p.rest, max_run(&b.used));
        clear_range(&mut b.used, p.start, k);
        count_range(&b.dirty, p.start, k);
        run_around(&b.used, p.start, k);
        WORDS_SEEN.with(|c| c.get())
    }

    #[test]
    fn bitmap_words_per_block_grow_only_with_its_64_unit_words() {
        // 128 KiB + 1 (40 units) to LARGE_MAX (320 units): besides the scans of the
        // segment's 16 words, a block costs a word per 64 of its units, no bit-at-a-time
        // loop (which looked at 6 * k bits).
        let small = words_per_pair(40, 0);
        for k in [40, 56, 128, 256, 320] {
            let w = words_per_pair(k, 0);
            assert!(
                w <= small + 6 * (k / 64),
                "{k} units: {w} words, 40 units: {small}"
            );
            assert!(w <= 4 * WORDS + 6 * (k / 64 + 2), "{k} units: {w} words");
            // Live neighbours change the scans, not the per-block cost.
            let live = words_per_pair(k, (UNITS / k).saturating_sub(1).min(3));
            assert!(
                live <= 4 * WORDS + 6 * (k / 64 + 2),
                "{k} units, live: {live}"
            );
        }
    }

    #[test]
    fn place_reports_the_longest_run_left() {
        for (used, k) in [
            (&[(0, 10), (70, 5), (200, 824)][..], 40),
            (&[(0, 10), (70, 5), (200, 824)][..], 100),
            (&[][..], 320),
            (&[(100, 1)][..], 99),
            (&[(100, 1), (300, 1)][..], 199),
            (&[(500, 24)][..], 500),
        ] {
            let mut b = bits_with(used, &[]);
            let p = place(&b, k, 1).unwrap();
            set_range(&mut b.used, p.start, k);
            assert_eq!(p.rest, max_run(&b.used), "{used:?}, {k}");
        }
    }

    #[test]
    fn ranges_and_runs_at_word_edges() {
        for (s, n) in [
            (0, 1),
            (63, 1),
            (63, 2),
            (0, 64),
            (1, 64),
            (60, 200),
            (0, UNITS),
        ] {
            let mut w = [0u64; WORDS];
            set_range(&mut w, s, n);
            assert_eq!(count_range(&w, 0, UNITS), n, "{s} {n}");
            assert_eq!(count_range(&w, s, n), n);
            assert_eq!(max_run(&w), s.max(UNITS - s - n));
            clear_range(&mut w, s, n);
            assert_eq!(w, [0; WORDS]);
            set_range(&mut w, 0, UNITS);
            clear_range(&mut w, s, n);
            assert_eq!(run_around(&w, s, n), (s, s + n));
            assert_eq!(max_run(&w), n);
        }
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
