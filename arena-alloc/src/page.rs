//! Segments and pages: the metadata every block finds by masking its own address.
//!
//! A small segment is `SEGMENT_SIZE` bytes at a `SEGMENT_SIZE`-aligned address; page 0
//! holds the header and the page descriptors, pages 1.. hold blocks of one size class each.
//! A huge block gets its own mapping that starts with the same header. Either way the
//! header of block `p` is at `(p - 1) & !(SEGMENT_SIZE - 1)`: no block starts at offset 0
//! of its segment, and none starts more than `SEGMENT_SIZE` bytes after its header.

use crate::class::class_size;
use crate::sync::unmodeled::{AtomicPtr, AtomicU8, AtomicU32, Ordering};
use crate::sys;
use core::mem::{offset_of, size_of};
use core::ptr;

/// Size and alignment of a segment (the unit an arena maps).
pub const SEGMENT_SIZE: usize = 4 << 20;
/// Size and alignment of a page (all blocks of a page have one size class).
pub const PAGE_SIZE: usize = 256 << 10;
/// Pages per segment; page 0 is the header.
pub const PAGES_PER_SEGMENT: usize = SEGMENT_SIZE / PAGE_SIZE;
/// Bytes between a huge mapping's start and its block (when aligned below 64 bytes).
pub const HUGE_HEADER: usize = 64;
const PAGE_SHIFT: u32 = PAGE_SIZE.trailing_zeros();

pub(crate) const MAGIC: u32 = 0x4152_4e41;
pub(crate) const KIND_SMALL: u32 = 1;
pub(crate) const KIND_HUGE: u32 = 2;
/// A large segment of the huge heap: page-granular extents (`crate::huge`).
pub(crate) const KIND_LARGE: u32 = 3;
/// The header page of an unmapped small segment, kept mapped a while (a tombstone, see
/// `crate::huge`): a free of a block that lay in it is a double free.
pub(crate) const KIND_BURIED: u32 = 4;

/// Page is in the arena's free-page list.
pub(crate) const PAGE_FREE: u8 = 0;
/// Page has a free block and is in its class list.
pub(crate) const PAGE_AVAILABLE: u8 = 1;
/// Page has no free block and is in no list.
pub(crate) const PAGE_FULL: u8 = 2;

/// Descriptor of one page; lives in page 0 of its segment. Guarded by the lock of its
/// holder (the segment's owner unless the page is lent), except `block_size`, `class`,
/// `div_magic` and `holder`, fixed while any block of the page is live and read without
/// the lock by threads holding such a block. So no `&Page`/`&mut Page` is ever formed:
/// fields are reached through the raw pointer, one place at a time, and a reference
/// covering the whole descriptor cannot overlap those lock-free reads.
#[repr(C, align(64))]
#[derive(Debug)]
pub(crate) struct Page {
    pub(crate) free: *mut u8,
    pub(crate) bump: *mut u8,
    /// `ceil(2^64 / block_size)`: `offset * div_magic mod 2^64 < div_magic` exactly when
    /// `block_size` divides `offset` (for offsets below 2^32): the one-multiply check that
    /// a freed pointer starts a block ([`is_block_start`]).
    pub(crate) div_magic: u64,
    pub(crate) next: *mut Page,
    pub(crate) prev: *mut Page,
    pub(crate) start: *mut u8,
    pub(crate) block_size: u32,
    pub(crate) used: u32,
    pub(crate) capacity: u32,
    pub(crate) class: u8,
    pub(crate) state: u8,
    /// The page may hold touched (resident) memory: set when it is formatted, cleared
    /// when `malloc_trim` decommits it as a free page.
    pub(crate) dirty: u8,
    /// Index of the arena whose lock guards this descriptor and whose lists hold the page:
    /// the segment's owner, or the arena the page is lent to (`arena::loan`). Written only
    /// while the page is free (no block of it live, cached or pending), so a thread
    /// holding a block of the page reads it without the lock, as it reads `class`.
    pub(crate) holder: u8,
}

/// The first bytes of every segment and huge mapping.
#[repr(C, align(64))]
#[derive(Debug)]
pub(crate) struct SegmentHeader {
    pub(crate) magic: u32,
    pub(crate) kind: u32,
    /// Index of the owning arena.
    pub(crate) owner: u32,
    /// Small: pages in use (under the owner's lock).
    pub(crate) used_pages: AtomicU32,
    /// Huge: bytes mapped from the header on.
    pub(crate) map_len: usize,
    /// Huge: bytes from the header to the block.
    pub(crate) block_offset: usize,
    /// Small: next segment of the owner (under the owner's lock).
    pub(crate) next: *mut SegmentHeader,
    /// Huge: [`BLOCK_LIVE`] while the block is allocated, [`BLOCK_FREED`] once freed (a
    /// second free of it is caught here).
    pub(crate) state: AtomicU32,
    /// Huge: index of the span region holding the block, or [`NO_REGION`] for a block with
    /// a mapping of its own.
    pub(crate) region: u32,
    /// Small: bit `i` is set while page `i` is lent to another arena (under the owner's
    /// lock; the owner neither lists nor reads a lent page's descriptor).
    pub(crate) lent: u32,
}

/// [`SegmentHeader::state`] of a live huge block.
pub(crate) const BLOCK_LIVE: u32 = 0x4c49_5645;
/// [`SegmentHeader::state`] of a freed huge block.
pub(crate) const BLOCK_FREED: u32 = 0x4652_4545;
/// [`SegmentHeader::region`] of a directly mapped huge block.
pub(crate) const NO_REGION: u32 = u32::MAX;

#[repr(C)]
pub(crate) struct Segment {
    pub(crate) header: SegmentHeader,
    pub(crate) pages: [Page; PAGES_PER_SEGMENT],
}

const _: () = assert!(SEGMENT_SIZE.is_power_of_two() && PAGE_SIZE.is_power_of_two());
const _: () = assert!(size_of::<Page>() == 64);
// `Page::holder` holds any arena index; `SegmentHeader::lent` a bit per page.
const _: () = assert!(crate::config::MAX_HEAP_COUNT <= u8::MAX as usize + 1);
const _: () = assert!(PAGES_PER_SEGMENT <= u32::BITS as usize);
const _: () = assert!(size_of::<SegmentHeader>() == HUGE_HEADER);
const _: () = assert!(offset_of!(Segment, pages) == HUGE_HEADER);
const _: () = assert!(size_of::<Segment>() <= PAGE_SIZE);
// At least two blocks of the largest class per page.
const _: () = assert!(2 * crate::class::SMALL_MAX <= PAGE_SIZE);
// Offsets inside a page fit the u32 fields.
const _: () = assert!(PAGE_SIZE <= u32::MAX as usize);

/// The header of the segment or huge mapping holding block `p`.
#[inline]
pub(crate) fn segment_of(p: *mut u8) -> *mut SegmentHeader {
    p.wrapping_sub(1)
        .map_addr(|a| a & !(SEGMENT_SIZE - 1))
        .cast()
}

/// Descriptor of the page holding block `p` of small segment `seg`.
#[inline]
pub(crate) fn page_of(seg: *mut SegmentHeader, p: *mut u8) -> *mut Page {
    // `p - seg` is `p`'s offset in its segment (no block starts at a segment's start):
    // taken from `p`'s low bits, one instruction shorter on the `free` path.
    debug_assert_eq!(p.addr() - seg.addr(), p.addr() & (SEGMENT_SIZE - 1));
    let idx = (p.addr() & (SEGMENT_SIZE - 1)) >> PAGE_SHIFT;
    page_desc(seg.cast(), idx)
}

#[inline]
fn page_desc(seg: *mut u8, idx: usize) -> *mut Page {
    seg.wrapping_add(offset_of!(Segment, pages) + idx * size_of::<Page>())
        .cast()
}

/// Maps and formats a small segment owned by arena `owner`; its pages 1.. are free.
/// Returns the descriptors of pages `1..PAGES_PER_SEGMENT`, or `None` when out of memory.
#[allow(clippy::type_complexity)]
pub(crate) fn new_segment(
    owner: u32,
) -> Option<(*mut SegmentHeader, [*mut Page; PAGES_PER_SEGMENT - 1])> {
    let base = sys::map_aligned(SEGMENT_SIZE, SEGMENT_SIZE, 0);
    if base.is_null() {
        return None;
    }
    let header = SegmentHeader {
        magic: MAGIC,
        kind: KIND_SMALL,
        owner,
        used_pages: AtomicU32::new(0),
        map_len: SEGMENT_SIZE,
        block_offset: 0,
        next: ptr::null_mut(),
        state: AtomicU32::new(0),
        region: NO_REGION,
        lent: 0,
    };
    // SAFETY: `base` is a fresh, aligned, writable mapping of SEGMENT_SIZE bytes.
    unsafe { base.cast::<SegmentHeader>().write(header) };
    let mut out = [ptr::null_mut(); PAGES_PER_SEGMENT - 1];
    for (i, slot) in out.iter_mut().enumerate() {
        let idx = i + 1;
        let desc = page_desc(base, idx);
        let page = Page {
            free: ptr::null_mut(),
            bump: ptr::null_mut(),
            div_magic: 0,
            next: ptr::null_mut(),
            prev: ptr::null_mut(),
            start: base.wrapping_add(idx * PAGE_SIZE),
            block_size: 0,
            used: 0,
            capacity: 0,
            class: 0,
            state: PAGE_FREE,
            dirty: 0,
            holder: owner as u8,
        };
        // SAFETY: descriptors lie in page 0 of the fresh mapping (size asserted above).
        unsafe { desc.write(page) };
        *slot = desc;
    }
    Some((base.cast(), out))
}

/// Formats a free page for size class `class`.
///
/// # Safety
/// `page` is a free page whose holder's lock the caller holds.
pub(crate) unsafe fn format_page(page: *mut Page, class: usize) {
    let size = class_size(class);
    let capacity = PAGE_SIZE / size;
    // SAFETY: the caller holds the holder's lock.
    let start = unsafe { (*page).start };
    // SAFETY: as above.
    let holder = unsafe { (*page).holder };
    let fresh = Page {
        free: ptr::null_mut(),
        bump: start,
        div_magic: div_magic(size),
        next: ptr::null_mut(),
        prev: ptr::null_mut(),
        start,
        block_size: size as u32,
        used: 0,
        capacity: capacity as u32,
        class: class as u8,
        state: PAGE_FREE,
        dirty: 1,
        holder,
    };
    // SAFETY: as above; the page is in no list and no block of it is live, so nobody
    // reads `block_size`/`class` concurrently.
    unsafe { page.write(fresh) };
}

/// The lock-free remote-free words of one page (see `crate::remote`), on a cache line of
/// their own in page 0 (away from the descriptors, which the owner writes under its lock).
#[repr(C, align(64))]
pub(crate) struct RemoteWords {
    /// The page's thread-free list: blocks freed by other threads, not yet drained.
    pub(crate) blocks: AtomicPtr<u8>,
    /// The page's link in its arena's pending stack.
    pub(crate) next: AtomicPtr<u8>,
    /// A lent page's links: in its holder's list of borrowed pages (under the holder's
    /// lock), then, once given back, `loan_next` in its owner's stack of returned pages
    /// (`arena::loan`). Atomic only so that page 0 is never reached through a reference
    /// to plain memory another thread writes.
    pub(crate) loan_next: AtomicPtr<u8>,
    pub(crate) loan_prev: AtomicPtr<u8>,
    /// Bytes from the page's start that may be resident, rounded up to the OS page, and
    /// the class whose use reached that far (under the holder's lock; see
    /// [`release_page`]).
    pub(crate) resident: AtomicU32,
    pub(crate) resident_class: AtomicU8,
}

/// Where the pages' [`RemoteWords`] start in page 0 (after the descriptors, before the
/// hardened bitmaps); fresh segments are zeroed, so every list starts empty.
const REMOTE_OFFSET: usize = 2048;
const _: () = assert!(size_of::<Segment>() <= REMOTE_OFFSET);
const _: () = assert!(size_of::<RemoteWords>() == 64);

/// The remote-free words of the page with descriptor `page`.
#[inline]
pub(crate) fn remote_words(page: *mut Page) -> *const RemoteWords {
    segment_of_page(page)
        .cast::<u8>()
        .wrapping_add(REMOTE_OFFSET + page_index(page) * size_of::<RemoteWords>())
        .cast()
}

/// The page just became free. If it held another class than the use that touched it
/// furthest, what that use touched beyond this one's reach is decommitted: reused for one
/// class after another, a 256 KiB page would otherwise stay resident up to the furthest
/// any of its uses went (mstress, whose pages change class all the time, held 17.4-19.4
/// MiB at 100 rounds against 13.6-16.8). A page that keeps its class keeps its memory (a
/// producer/consumer's pages fill and empty by varying amounts: decommitting on every
/// shrink cost xmalloc-test 1,900 `madvise` calls in 3 s and as many refaults).
///
/// # Safety
/// The caller holds the lock of the page's holder; the page is free (no block of it live).
pub(crate) unsafe fn release_page(page: *mut Page) {
    // SAFETY: the caller holds the holder's lock, which guards the descriptor and the
    // page's `resident` words; the segment is mapped while it holds the page.
    let start = unsafe { (*page).start };
    // SAFETY: as above.
    let bump = unsafe { (*page).bump };
    // SAFETY: as above (`class` is the class the page was formatted for).
    let class = unsafe { (*page).class };
    let reach = (bump.addr() - start.addr()).next_multiple_of(sys::os_page_size());
    let words = remote_words(page);
    // SAFETY: as above.
    let resident = unsafe { &(*words).resident };
    // SAFETY: as above.
    let by = unsafe { &(*words).resident_class };
    let before = resident.load(Ordering::Relaxed) as usize;
    if before > reach {
        if by.load(Ordering::Relaxed) == class {
            return;
        }
        // SAFETY: the range lies in the free page, whose blocks nobody uses; the
        // descriptor lies in page 0, outside it.
        unsafe { sys::decommit(start.wrapping_add(reach), before - reach) };
    }
    resident.store(reach as u32, Ordering::Relaxed);
    by.store(class, Ordering::Relaxed);
}

/// Notes that free page `page` was decommitted whole.
///
/// # Safety
/// As for [`release_page`].
pub(crate) unsafe fn page_decommitted(page: *mut Page) {
    // SAFETY: forwarded from the caller.
    unsafe { (*remote_words(page)).resident.store(0, Ordering::Relaxed) };
}

/// The index in its segment of the page with descriptor `page` (1..PAGES_PER_SEGMENT).
#[inline]
pub(crate) fn page_index(page: *mut Page) -> usize {
    (page.addr() - segment_of_page(page).addr() - offset_of!(Segment, pages)) / size_of::<Page>()
}

/// Returns the chain `head..=tail` of `n` blocks of `page` (linked through their first
/// words) to its free list; returns (its class, page was full, page is now empty).
///
/// # Safety
/// The caller holds the holder's lock; the chain's blocks are blocks of `page` counted as
/// used and given up.
pub(crate) unsafe fn put_chain(
    page: *mut Page,
    head: *mut u8,
    tail: *mut u8,
    n: u32,
) -> (usize, bool, bool) {
    // SAFETY: the caller holds the holder's lock, which guards the descriptor.
    let used = unsafe { (*page).used };
    // SAFETY: as above.
    let capacity = unsafe { (*page).capacity };
    // SAFETY: as above.
    let free = unsafe { (*page).free };
    // SAFETY: `tail` is a given-up block of at least 16 bytes.
    unsafe { tail.cast::<*mut u8>().write(free) };
    // SAFETY: as above (lock held).
    unsafe { (*page).free = head };
    debug_assert!(used >= n);
    // SAFETY: as above.
    unsafe { (*page).used = used - n };
    // SAFETY: `class` is fixed while the page is formatted.
    let class = unsafe { (*page).class } as usize;
    (class, used == capacity, used == n)
}

/// Where the hardened mode's bitmaps of live blocks start in page 0 (after the header and
/// descriptors): one bit per 16 bytes of each page, `BITMAP_BYTES` per page.
const BITMAP_OFFSET: usize = 4096;
const BITMAP_BYTES: usize = PAGE_SIZE / crate::class::MIN_BLOCK / 8;
const _: () =
    assert!(REMOTE_OFFSET + PAGES_PER_SEGMENT * size_of::<RemoteWords>() <= BITMAP_OFFSET);
const _: () = assert!(BITMAP_OFFSET + PAGES_PER_SEGMENT * BITMAP_BYTES <= PAGE_SIZE);

/// The bitmap word and bit of block `p` (in a page of a small segment).
fn live_bit(p: *mut u8) -> (*mut u64, u64) {
    let seg = segment_of(p).cast::<u8>();
    let page = (p.addr() - seg.addr()) >> PAGE_SHIFT;
    let bit = (p.addr() & (PAGE_SIZE - 1)) / crate::class::MIN_BLOCK;
    let word = seg
        .wrapping_add(BITMAP_OFFSET + page * BITMAP_BYTES + bit / 64 * 8)
        .cast::<u64>();
    (word, 1 << (bit % 64))
}

/// Hardened mode: records block `p` as live.
///
/// # Safety
/// The caller holds the holder's lock (which guards the bitmap) and `p` is a block of a
/// formatted page of a small segment.
#[cold]
unsafe fn mark_live(p: *mut u8) {
    let (w, m) = live_bit(p);
    // SAFETY: the word lies in page 0 of the segment, guarded by the caller's lock.
    unsafe { *w |= m };
}

/// Hardened mode: records block `p` as free; aborts if it was not live (a double free).
///
/// # Safety
/// As for `mark_live`.
#[cold]
unsafe fn mark_free(p: *mut u8) {
    let (w, m) = live_bit(p);
    // SAFETY: as in `mark_live`.
    let v = unsafe { *w };
    if v & m == 0 {
        sys::abort_with("free(): double free detected (small block)", p.addr());
    }
    // SAFETY: as above.
    unsafe { *w = v & !m };
}

/// Takes a block from `page`; returns it and whether the page is now full.
///
/// # Safety
/// The caller holds the holder's lock and `page` is formatted and not full.
#[inline]
pub(crate) unsafe fn take_block(page: *mut Page) -> (*mut u8, bool) {
    // SAFETY: the caller holds the holder's lock, which guards every field written here.
    let free = unsafe { (*page).free };
    let block = if !free.is_null() {
        // SAFETY: free blocks store the next free block in their first word.
        let next = unsafe { free.cast::<*mut u8>().read() };
        // SAFETY: as above (lock held).
        unsafe { (*page).free = next };
        free
    } else {
        // SAFETY: as above (lock held; `block_size` is fixed while the page is formatted).
        let b = unsafe { (*page).bump };
        // SAFETY: as above.
        let size = unsafe { (*page).block_size };
        // SAFETY: as above.
        debug_assert!(b < unsafe { (*page).start.wrapping_add(PAGE_SIZE) });
        // SAFETY: as above.
        unsafe { (*page).bump = b.wrapping_add(size as usize) };
        b
    };
    // SAFETY: as above.
    let used = unsafe { (*page).used + 1 };
    // SAFETY: as above.
    let capacity = unsafe { (*page).capacity };
    // SAFETY: as above.
    unsafe { (*page).used = used };
    if crate::config::hardened() {
        // SAFETY: the lock is held and `block` is a block of this formatted page.
        unsafe { mark_live(block) };
    }
    // SAFETY: `block` is a free block of the page, handed out to the caller.
    unsafe { untag(block) };
    (block, used == capacity)
}

/// Takes up to `n` (>= 1) blocks from `page` as a chain linked through their first words
/// (the last block's link is left as it was: the caller writes it): the page's free list
/// is cut after its first `n` blocks (no block is rewritten), and blocks never used are
/// linked in address order from the bump pointer. A free list of at most `whole` blocks
/// is taken whole instead, without reading a block (cutting it reads every block up to the
/// cut, one dependent load and often one cache miss each, as blocks freed in random order
/// lie anywhere in the page); the chain then ends in a null link already and `last` is
/// null. Returns (first, last, count, page is now full). Not for the hardened mode (no
/// live bits are set).
///
/// # Safety
/// The caller holds the holder's lock and `page` is formatted and not full.
#[inline]
pub(crate) unsafe fn take_chain(
    page: *mut Page,
    n: u32,
    whole: u32,
) -> (*mut u8, *mut u8, u32, bool) {
    debug_assert!(n >= 1 && !crate::config::hardened());
    // SAFETY: the caller holds the holder's lock, which guards every descriptor field read
    // and written here ("as above" below); free blocks hold the next free block in their
    // first word, and blocks beyond the bump pointer are unused blocks of the page.
    let used = unsafe { (*page).used };
    // SAFETY: as above.
    let capacity = unsafe { (*page).capacity };
    // SAFETY: as above.
    let free = unsafe { (*page).free };
    let (first, last, k);
    // Blocks on the free list: those below the bump pointer not in use.
    // SAFETY: as above.
    let bump = unsafe { (*page).bump };
    // SAFETY: as above.
    let start = unsafe { (*page).start };
    // SAFETY: as above (`block_size` is fixed while the page is formatted).
    let size = unsafe { (*page).block_size } as usize;
    let bumped = (bump.addr() - start.addr()) / size;
    let listed = bumped as u32 - used;
    if !free.is_null() && listed <= whole {
        // SAFETY: as above.
        unsafe { (*page).free = ptr::null_mut() };
        (first, last, k) = (free, ptr::null_mut(), listed);
    } else if !free.is_null() {
        let mut tail = free;
        let mut count = 1;
        // SAFETY: as above.
        let mut next = unsafe { tail.cast::<*mut u8>().read() };
        while count < n && !next.is_null() {
            tail = next;
            count += 1;
            // SAFETY: as above.
            next = unsafe { tail.cast::<*mut u8>().read() };
        }
        // SAFETY: as above.
        unsafe { (*page).free = next };
        (first, last, k) = (free, tail, count);
    } else {
        let b = bump;
        // With the free list empty, every block not in use lies beyond the bump pointer.
        let count = n.min(capacity - used);
        let mut cur = b;
        for _ in 1..count {
            let next = cur.wrapping_add(size);
            // SAFETY: `cur` is an unused block of the page, at least 16 bytes.
            unsafe { cur.cast::<*mut u8>().write(next) };
            cur = next;
        }
        // SAFETY: as above.
        unsafe { (*page).bump = cur.wrapping_add(size) };
        (first, last, k) = (b, cur, count);
    }
    // SAFETY: as above.
    unsafe { (*page).used = used + k };
    (first, last, k, used + k == capacity)
}

/// Returns block `p` to `page`; returns (its class, page was full, page is now empty).
///
/// # Safety
/// The caller holds the holder's lock and `p` is a live block of `page`.
#[inline]
pub(crate) unsafe fn put_block(page: *mut Page, p: *mut u8) -> (usize, bool, bool) {
    if crate::config::hardened() {
        // SAFETY: the lock is held and `p` is a block of this formatted page.
        unsafe { mark_free(p) };
    }
    // SAFETY: the caller holds the holder's lock, which guards every field written here.
    let used = unsafe { (*page).used };
    // SAFETY: as above.
    let capacity = unsafe { (*page).capacity };
    // SAFETY: as above.
    let free = unsafe { (*page).free };
    // SAFETY: `p` is a block of at least 16 bytes that nobody uses any more.
    unsafe { p.cast::<*mut u8>().write(free) };
    // SAFETY: as above (lock held).
    unsafe { (*page).free = p };
    // SAFETY: as above.
    unsafe { (*page).used = used - 1 };
    // SAFETY: `class` is fixed while the page is formatted.
    let class = unsafe { (*page).class } as usize;
    (class, used == capacity, used == 1)
}

/// Clears the free tag (see `crate::tcache::tag_free`) of free block `p`, which is being
/// handed out.
///
/// # Safety
/// `p` is a free small block (at least 16 bytes) that the caller is handing out.
#[inline]
pub(crate) unsafe fn untag(p: *mut u8) {
    // SAFETY: forwarded from the caller.
    unsafe { p.wrapping_add(8).cast::<u64>().write(0) };
}

/// Whether `p` is on the free list of `page` (walked block by block).
///
/// # Safety
/// The caller holds the lock of the page's holder; the page is formatted.
#[cold]
pub(crate) unsafe fn free_list_holds(page: *mut Page, p: *mut u8) -> bool {
    // SAFETY: the caller holds the holder's lock, which guards the list.
    let mut b = unsafe { (*page).free };
    while !b.is_null() {
        if b == p {
            return true;
        }
        // SAFETY: free blocks hold the next free block in their first word.
        b = unsafe { b.cast::<*mut u8>().read() };
    }
    false
}

/// The [`Page::div_magic`] of blocks of `size` bytes (`16 <= size < 2^32`).
pub(crate) const fn div_magic(size: usize) -> u64 {
    u64::MAX / size as u64 + 1
}

/// Whether `size` (with magic `magic = div_magic(size)`) divides `offset < 2^32`.
#[inline]
pub(crate) const fn divides(magic: u64, offset: u32) -> bool {
    (offset as u64).wrapping_mul(magic) < magic
}

/// Whether `p`, a pointer into small page `page` (formatted, a block of it live or the
/// caller's), is the start of one of its blocks: its offset in the page is a multiple of
/// the block size. Pages are `PAGE_SIZE`-aligned, so the offset is `p`'s low bits.
///
/// # Safety
/// `page` is the descriptor of a formatted page (its `div_magic` is fixed while any of its
/// blocks is live).
#[inline]
pub(crate) unsafe fn is_block_start(page: *mut Page, p: *mut u8) -> bool {
    // SAFETY: forwarded from the caller.
    let magic = unsafe { (*page).div_magic };
    divides(magic, (p.addr() & (PAGE_SIZE - 1)) as u32)
}

/// Block size of the page holding live block `p` of small segment `seg`.
///
/// # Safety
/// `p` is a live block of the small segment `seg`.
#[inline]
pub(crate) unsafe fn block_size(seg: *mut SegmentHeader, p: *mut u8) -> usize {
    let page = page_of(seg, p);
    // SAFETY: `block_size` is not written while a block of the page is live.
    (unsafe { (*page).block_size }) as usize
}

/// Bytes in live blocks of `page` (0 for a free page).
///
/// # Safety
/// The caller holds the holder's lock.
pub(crate) unsafe fn bytes_in_use(page: *mut Page) -> usize {
    // SAFETY: guarded by the caller's lock.
    let state = unsafe { (*page).state };
    // SAFETY: as above.
    let used = unsafe { (*page).used };
    // SAFETY: as above.
    let size = unsafe { (*page).block_size };
    if state == PAGE_FREE {
        0
    } else {
        used as usize * size as usize
    }
}

/// Pushes `page` at the front of the list `head`.
///
/// # Safety
/// The caller holds the lock guarding the list and `page`, which is in no list.
pub(crate) unsafe fn list_push(head: &mut *mut Page, page: *mut Page) {
    let old = *head;
    // SAFETY: guarded by the caller's lock.
    unsafe { (*page).prev = ptr::null_mut() };
    // SAFETY: as above.
    unsafe { (*page).next = old };
    if !old.is_null() {
        // SAFETY: `old` is in the same guarded list.
        unsafe { (*old).prev = page };
    }
    *head = page;
}

/// Links `page` into a list right after `prev`.
///
/// # Safety
/// The caller holds the lock guarding the list, which holds `prev` but not `page`.
pub(crate) unsafe fn list_insert_after(prev: *mut Page, page: *mut Page) {
    // SAFETY: guarded by the caller's lock.
    let next = unsafe { (*prev).next };
    // SAFETY: as above.
    unsafe { (*page).prev = prev };
    // SAFETY: as above.
    unsafe { (*page).next = next };
    if !next.is_null() {
        // SAFETY: `next` is in the same guarded list.
        unsafe { (*next).prev = page };
    }
    // SAFETY: as above.
    unsafe { (*prev).next = page };
}

/// Removes `page` from the list `head`.
///
/// # Safety
/// The caller holds the lock guarding the list, and `page` is in it.
pub(crate) unsafe fn list_remove(head: &mut *mut Page, page: *mut Page) {
    // SAFETY: guarded by the caller's lock.
    let prev = unsafe { (*page).prev };
    // SAFETY: as above.
    let next = unsafe { (*page).next };
    if prev.is_null() {
        *head = next;
    } else {
        // SAFETY: `prev` is in the same guarded list.
        unsafe { (*prev).next = next };
    }
    if !next.is_null() {
        // SAFETY: `next` is in the same guarded list.
        unsafe { (*next).prev = prev };
    }
    // SAFETY: as above.
    unsafe { (*page).prev = ptr::null_mut() };
    // SAFETY: as above.
    unsafe { (*page).next = ptr::null_mut() };
}

/// The header of the segment containing page descriptor `page`.
#[inline]
pub(crate) fn segment_of_page(page: *mut Page) -> *mut SegmentHeader {
    page.cast::<u8>()
        .map_addr(|a| a & !(SEGMENT_SIZE - 1))
        .cast()
}

/// Descriptors of pages 1.. of segment `seg`.
pub(crate) fn pages_of(seg: *mut SegmentHeader) -> impl Iterator<Item = *mut Page> {
    (1..PAGES_PER_SEGMENT).map(move |i| page_desc(seg.cast(), i))
}

/// The `used_pages` counter of a segment (written under the owner's lock).
///
/// # Safety
/// `seg` is a live small segment and stays mapped for `'a`.
pub(crate) unsafe fn used_pages<'a>(seg: *mut SegmentHeader) -> &'a AtomicU32 {
    // SAFETY: the header lives as long as the segment; the field is atomic.
    unsafe { &(*seg).used_pages }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::class::{NUM_CLASSES, class_size};

    /// The one-multiply divisibility check is exact for every class and every offset in a
    /// page (every 4093rd offset under Miri).
    #[test]
    fn divides_is_exact_for_every_class_and_offset() {
        let step = if cfg!(miri) { 4093 } else { 1 };
        for c in 0..NUM_CLASSES {
            let size = class_size(c);
            let m = div_magic(size);
            let mut off = 0;
            while off < PAGE_SIZE {
                assert_eq!(
                    divides(m, off as u32),
                    off % size == 0,
                    "size {size} off {off}"
                );
                off += step;
            }
        }
    }
}
