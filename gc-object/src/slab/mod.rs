//! The slab heap: size classes carved from aligned chunks, mark bitmaps beside the cells.
//!
//! ```text
//!  chunk (CHUNK_BYTES, aligned to CHUNK_BYTES; a cell's chunk is found by masking)
//!  +--------------------------+------+------+------+-----   ------+
//!  | ChunkHeader (owner, class,| cell | cell | cell |  ...   cell  |
//!  | alloc + mark bitmaps)    |      |      |      |              |
//!  +--------------------------+------+------+------+-----   ------+
//!    first cell index = ceil(header / cell size); bump allocation in a fresh chunk,
//!    after a sweep the alloc bitmap is the free map.
//! ```
//!
//! A chunk is owned by at most one allocation cache at a time, so the cell bitmaps need no
//! atomics: the owning cache writes them while mutators run, the collector (which has
//! exclusive access to the heap) reads and writes them during a collection. Objects larger
//! than the largest class get their own chunk-aligned allocation with the same header.

use core::alloc::Layout;
use core::cell::Cell;
use core::ptr::NonNull;

use crate::sync::{AtomicU64, Mutex, Ordering, UnsafeCell, lock, unmodeled};

/// The highest address (exclusive) an object cell may have so that it fits the payload
/// (47 bits: user space on x86-64 and aarch64; every address on 32-bit targets).
#[cfg(target_pointer_width = "64")]
pub const ADDRESS_LIMIT: usize = 1 << 47;
/// The highest address (exclusive) an object cell may have (every address on 32-bit).
#[cfg(not(target_pointer_width = "64"))]
pub const ADDRESS_LIMIT: usize = usize::MAX;

/// The slab size classes, in bytes (each a power of two).
pub const SIZE_CLASSES: [usize; 6] = [64, 128, 256, 512, 1024, 2048];
/// The largest class; bigger cells get their own allocation.
pub const LARGEST_CLASS: usize = SIZE_CLASSES[SIZE_CLASSES.len() - 1];
/// Bytes (and alignment) of one chunk. Smaller under loom and Miri to keep models fast.
pub const CHUNK_BYTES: usize = if cfg!(any(loom, miri)) {
    16 * 1024
} else {
    64 * 1024
};
const MAX_CELLS: usize = CHUNK_BYTES / SIZE_CLASSES[0];
const BITMAP_WORDS: usize = MAX_CELLS / 64;
const LARGE_CLASS: u32 = u32::MAX;

const _: () = assert!(CHUNK_BYTES.is_power_of_two() && MAX_CELLS.is_multiple_of(64));
// The header's cells fit in the first bitmap word.
const _: () = assert!(header_cells(SIZE_CLASSES[0].trailing_zeros()) < 64);
const _: () = {
    let mut i = 0;
    while i < SIZE_CLASSES.len() {
        assert!(SIZE_CLASSES[i].is_power_of_two());
        assert!(i == 0 || SIZE_CLASSES[i] > SIZE_CLASSES[i - 1]);
        assert!(SIZE_CLASSES[i] <= CHUNK_BYTES / 8);
        i += 1;
    }
};

/// The index of the smallest class that holds `bytes`, or `None` (a large object).
pub const fn class_of(bytes: usize) -> Option<usize> {
    let mut i = 0;
    while i < SIZE_CLASSES.len() {
        if bytes <= SIZE_CLASSES[i] {
            return Some(i);
        }
        i += 1;
    }
    None
}

/// The memory under a heap: chunks and side state come from here.
///
/// # Safety
/// `alloc` must return memory valid for `layout` (or `None`), not handed out again until it
/// is passed to `dealloc` with the same layout.
pub unsafe trait RawAlloc: Send + Sync + 'static {
    /// Allocates `layout`; `None` on failure.
    fn alloc(&self, layout: Layout) -> Option<NonNull<u8>>;
    /// Frees memory.
    ///
    /// # Safety
    /// `ptr` came from `alloc` of this allocator with this `layout` and is not used again.
    unsafe fn dealloc(&self, ptr: NonNull<u8>, layout: Layout);

    /// Is this the global allocator? Then chunks of dropped heaps go to a process-wide
    /// pool (at most [`CHUNK_POOL_CHUNKS`]) that later heaps on the global allocator reuse,
    /// so a short-lived heap does not fault in fresh memory. Return `true` only if `alloc`
    /// and `dealloc` are the global allocator's.
    fn is_global(&self) -> bool {
        false
    }
}

/// Chunks kept in the process-wide pool for heaps on the global allocator (32 MiB).
pub const CHUNK_POOL_CHUNKS: usize = 512;

/// A pooled chunk's memory (owned by the pool).
struct Pooled(NonNull<u8>);

// SAFETY: the pool owns the memory exclusively; it is plain bytes.
unsafe impl Send for Pooled {}

fn chunk_pool() -> std::sync::MutexGuard<'static, Vec<Pooled>> {
    // A std mutex even under loom: the pool is outside every modeled protocol and no loom
    // operation runs while it is held.
    static POOL: std::sync::Mutex<Vec<Pooled>> = std::sync::Mutex::new(Vec::new());
    match POOL.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    }
}

/// Frees a chunk, or keeps it in the pool when it came from the global allocator.
///
/// # Safety
/// `base` is a chunk allocated by `raw` with `chunk_layout()`, not used again.
unsafe fn release_chunk(raw: &dyn RawAlloc, base: NonNull<u8>) {
    if raw.is_global() {
        let mut pool = chunk_pool();
        if pool.len() < CHUNK_POOL_CHUNKS && pool.try_reserve(1).is_ok() {
            pool.push(Pooled(base));
            return;
        }
    }
    // SAFETY: allocated by `raw` with this layout (contract).
    unsafe { raw.dealloc(base, chunk_layout()) };
}

/// The global allocator.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemAlloc;

// SAFETY: forwards to the global allocator, which upholds the contract.
unsafe impl RawAlloc for SystemAlloc {
    fn alloc(&self, layout: Layout) -> Option<NonNull<u8>> {
        if layout.size() == 0 {
            return None;
        }
        // SAFETY: the layout has a non-zero size (checked above).
        NonNull::new(unsafe { std::alloc::alloc(layout) })
    }
    unsafe fn dealloc(&self, ptr: NonNull<u8>, layout: Layout) {
        // SAFETY: the caller passes a pointer from `alloc` with the same layout.
        unsafe { std::alloc::dealloc(ptr.as_ptr(), layout) }
    }
    fn is_global(&self) -> bool {
        true
    }
}

struct ChunkMeta {
    bump: u32,
    alloc: [u64; BITMAP_WORDS],
    mark: [u64; BITMAP_WORDS],
}

#[repr(C)]
struct ChunkHeader {
    owner: *const (),
    cell_shift: u32,
    class: u32,
    first: u32,
    end: u32,
    bytes: usize,
    meta: UnsafeCell<ChunkMeta>,
    /// Cells that have side state (set by any thread when it is installed, under the
    /// object's lock); the sweep finalizes only these and never touches other dead cells.
    side: [AtomicU64; BITMAP_WORDS],
}

/// A chunk (or large allocation) as handed between caches and the collector.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct Chunk(NonNull<ChunkHeader>);

// SAFETY: a chunk is used by one cache or by the exclusive collector at a time (module doc).
unsafe impl Send for Chunk {}

impl Chunk {
    fn header(&self) -> &ChunkHeader {
        // SAFETY: chunks in lists and caches are live until the slab drops (or, for an
        // empty chunk, `release_empty_chunks` takes it out of every list first).
        unsafe { self.0.as_ref() }
    }
    fn base(&self) -> *mut u8 {
        self.0.as_ptr().cast()
    }
    /// Take one free cell of this chunk.
    ///
    /// # Safety
    /// The caller owns the chunk (it is in its cache) or has exclusive heap access.
    unsafe fn take(&self) -> Option<NonNull<u8>> {
        let h = self.header();
        let idx = h.meta.with_mut(|m| {
            // SAFETY: exclusive per the function contract.
            let m = unsafe { &mut *m };
            if m.bump < h.end {
                let i = m.bump;
                m.bump += 1;
                m.alloc[(i / 64) as usize] |= 1 << (i % 64);
                return Some(i);
            }
            for w in 0..BITMAP_WORDS {
                let mut free = !m.alloc[w];
                if w == 0 {
                    // The header's cells are never free.
                    free &= !((1u64 << h.first) - 1);
                }
                if free != 0 {
                    let i = (w * 64) as u32 + free.trailing_zeros();
                    if i >= h.end {
                        return None;
                    }
                    m.alloc[w] |= 1 << (i % 64);
                    return Some(i);
                }
            }
            None
        })?;
        let off = (idx as usize) << h.cell_shift;
        // `idx < end`, so the cell lies inside the chunk allocation.
        NonNull::new(self.base().wrapping_add(off))
    }
}

/// Sets (or clears) bits `a..b` of a bitmap.
fn set_range(bits: &mut [u64; BITMAP_WORDS], a: u32, b: u32, on: bool) {
    let mut i = a;
    while i < b {
        let w = (i / 64) as usize;
        let lo = i % 64;
        let hi = (b - w as u32 * 64).min(64);
        let mask = if hi - lo == 64 {
            !0
        } else {
            ((1u64 << (hi - lo)) - 1) << lo
        };
        if on {
            bits[w] |= mask;
        } else {
            bits[w] &= !mask;
        }
        i = w as u32 * 64 + hi;
    }
}

impl Chunk {
    /// Hands out the chunk's untouched tail `bump..end` as one bump range (its cells are
    /// marked allocated now; `release_cache` gives back what was not used).
    ///
    /// # Safety
    /// As for [`Chunk::take`].
    unsafe fn take_range(&self) -> Option<(*mut u8, *mut u8)> {
        let h = self.header();
        let (a, b) = h.meta.with_mut(|m| {
            // SAFETY: exclusive per the function contract.
            let m = unsafe { &mut *m };
            let r = (m.bump, h.end);
            set_range(&mut m.alloc, r.0, r.1, true);
            m.bump = h.end;
            r
        });
        if a >= b {
            return None;
        }
        let base = self.base();
        Some((
            base.wrapping_add((a as usize) << h.cell_shift),
            base.wrapping_add((b as usize) << h.cell_shift),
        ))
    }

    /// Gives back the unused part `next..limit` of a bump range.
    ///
    /// # Safety
    /// As for [`Chunk::take`]; the range came from `take_range` of this chunk.
    unsafe fn return_range(&self, next: *mut u8, limit: *mut u8) {
        let h = self.header();
        let a = ((next.addr() - self.base().addr()) >> h.cell_shift) as u32;
        let b = ((limit.addr() - self.base().addr()) >> h.cell_shift) as u32;
        h.meta.with_mut(|m| {
            // SAFETY: exclusive per the function contract.
            let m = unsafe { &mut *m };
            set_range(&mut m.alloc, a, b, false);
            if m.bump == b {
                m.bump = a;
            }
        });
    }
}

fn chunk_of(cell: NonNull<u8>) -> Chunk {
    let p = cell.as_ptr().map_addr(|a| a & !(CHUNK_BYTES - 1));
    // SAFETY: cells never sit at offset 0 of a chunk (the header does) and chunk bases are
    // non-null allocations.
    Chunk(unsafe { NonNull::new_unchecked(p.cast()) })
}

/// The heap that owns the chunk of `cell`.
///
/// # Safety
/// `cell` is a live cell allocated by a [`Slab`].
pub(crate) unsafe fn owner_of(cell: NonNull<u8>) -> *const () {
    chunk_of(cell).header().owner
}

/// Records that `cell` now has side state, so the sweep finalizes it when it dies.
///
/// # Safety
/// `cell` is a live cell allocated by a [`Slab`].
pub(crate) unsafe fn note_side_state(cell: NonNull<u8>) {
    let c = chunk_of(cell);
    let h = c.header();
    let idx = if h.class == LARGE_CLASS {
        0
    } else {
        (cell.as_ptr().addr() - c.base().addr()) >> h.cell_shift
    };
    // Relaxed: the sweep reads it after every mutator stopped (exclusive access, which
    // itself synchronizes).
    h.side[idx / 64].fetch_or(1 << (idx % 64), Ordering::Relaxed);
}

/// Is `cell` marked (in the collection running now)?
///
/// # Safety
/// `cell` is a live cell allocated by a [`Slab`], and the caller has exclusive access to
/// its heap.
pub(crate) unsafe fn is_marked(cell: NonNull<u8>) -> bool {
    let c = chunk_of(cell);
    let h = c.header();
    let idx = if h.class == LARGE_CLASS {
        0
    } else {
        (cell.as_ptr().addr() - c.base().addr()) >> h.cell_shift
    };
    h.meta.with(|m| {
        // SAFETY: exclusive access per the contract.
        let m = unsafe { &*m };
        m.mark[idx / 64] & (1 << (idx % 64)) != 0
    })
}

/// Per-thread allocation cache: per class, the chunk it owns and a bump range in it. Its
/// fields are `Cell`s, so a mutator allocates through `&self` (a mutator is used by one
/// thread: the cache is `Send`, not `Sync`).
#[derive(Debug)]
pub(crate) struct LocalCache {
    current: [Cell<Option<Chunk>>; SIZE_CLASSES.len()],
    next: [Cell<*mut u8>; SIZE_CLASSES.len()],
    limit: [Cell<*mut u8>; SIZE_CLASSES.len()],
    /// Where the current bump range started: cells bumped from it are counted from
    /// `next - start` when the range ends or is asked for, not one by one.
    start: [Cell<*mut u8>; SIZE_CLASSES.len()],
    /// Cells handed out, per class, not counting the current bump range.
    cells: [Cell<u64>; SIZE_CLASSES.len()],
    /// Bytes of those cells (the current bump ranges not counted either).
    bytes: Cell<u64>,
}

// SAFETY: the pointers are a bump range of a chunk this cache owns; moving the cache to
// another thread moves that ownership with it.
unsafe impl Send for LocalCache {}

impl Default for LocalCache {
    fn default() -> Self {
        LocalCache {
            current: core::array::from_fn(|_| Cell::new(None)),
            next: core::array::from_fn(|_| Cell::new(core::ptr::null_mut())),
            limit: core::array::from_fn(|_| Cell::new(core::ptr::null_mut())),
            start: core::array::from_fn(|_| Cell::new(core::ptr::null_mut())),
            cells: core::array::from_fn(|_| Cell::new(0)),
            bytes: Cell::new(0),
        }
    }
}

impl LocalCache {
    /// Cells bumped from the current range of `class`.
    fn bumped(&self, class: usize) -> u64 {
        ((self.next[class].get().addr() - self.start[class].get().addr()) / SIZE_CLASSES[class])
            as u64
    }

    /// Cells handed out, per class.
    pub(crate) fn cells(&self) -> [u64; SIZE_CLASSES.len()] {
        core::array::from_fn(|c| self.cells[c].get() + self.bumped(c))
    }

    /// Bytes of the cells handed out (every class): what this cache added to the heap's
    /// allocation debt. A few subtractions, no division: the pacing check reads it often.
    #[inline]
    pub(crate) fn allocated_bytes(&self) -> u64 {
        let mut b = self.bytes.get();
        for c in 0..SIZE_CLASSES.len() {
            b += (self.next[c].get().addr() - self.start[c].get().addr()) as u64;
        }
        b
    }

    /// Counts one cell of `class` handed out outside a bump range.
    fn count_one(&self, class: usize) {
        self.cells[class].set(self.cells[class].get() + 1);
        self.bytes
            .set(self.bytes.get() + SIZE_CLASSES[class] as u64);
    }

    /// Ends the current bump range of `class` (its cells are counted).
    fn end_range(&self, class: usize) {
        let used = self.next[class].get().addr() - self.start[class].get().addr();
        self.cells[class].set(self.cells[class].get() + self.bumped(class));
        self.bytes.set(self.bytes.get() + used as u64);
        self.next[class].set(core::ptr::null_mut());
        self.limit[class].set(core::ptr::null_mut());
        self.start[class].set(core::ptr::null_mut());
    }

    /// Does the cache own no chunk (a mutator that allocated nothing, or one whose chunks
    /// went back to the heap)?
    pub(crate) fn holds_no_chunk(&self) -> bool {
        self.current.iter().all(|c| c.get().is_none())
    }
}

#[derive(Default)]
struct Lists {
    chunks: Vec<Chunk>,
    per_class: [usize; SIZE_CLASSES.len()],
    partial: [Vec<Chunk>; SIZE_CLASSES.len()],
    large: Vec<Chunk>,
}

/// Counts of one sweep.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SweepCounts {
    pub(crate) freed: u64,
    pub(crate) live: u64,
    /// Bytes of the live cells in chunks (large cells are counted by the metered
    /// allocator's outstanding bytes).
    pub(crate) live_bytes: u64,
    /// Dead cells with side state, handed to the finalizer.
    pub(crate) finalized: u64,
}

/// The heap's allocator, metered: every allocation but the chunks (side state, host
/// closures, handle blocks, large cells) is counted in `outstanding`, the bytes held now.
/// The pacing of collections reads it; it takes part in no protocol, so it is a plain
/// (unmodeled) atomic even under loom.
struct Metered {
    inner: Box<dyn RawAlloc>,
    outstanding: unmodeled::AtomicUsize,
}

// SAFETY: forwards to `inner`, which upholds the contract; the count is bookkeeping.
unsafe impl RawAlloc for Metered {
    fn alloc(&self, layout: Layout) -> Option<NonNull<u8>> {
        let p = self.inner.alloc(layout)?;
        self.outstanding
            .fetch_add(layout.size(), unmodeled::Ordering::Relaxed);
        Some(p)
    }
    unsafe fn dealloc(&self, ptr: NonNull<u8>, layout: Layout) {
        self.outstanding
            .fetch_sub(layout.size(), unmodeled::Ordering::Relaxed);
        // SAFETY: forwarded contract (`ptr` came from `alloc`, which is `inner`'s).
        unsafe { self.inner.dealloc(ptr, layout) }
    }
    fn is_global(&self) -> bool {
        self.inner.is_global()
    }
}

/// Chunks of one heap.
pub(crate) struct Slab {
    raw: Metered,
    owner: *const (),
    lists: Mutex<Lists>,
}

// SAFETY: the lists are behind a mutex; chunk bitmaps are used by one owner at a time
// (module doc); `owner` is an opaque tag.
unsafe impl Send for Slab {}
// SAFETY: as for `Send`.
unsafe impl Sync for Slab {}

fn chunk_layout() -> Layout {
    // Panics only if the constants are nonsense, which the const asserts exclude.
    Layout::from_size_align(CHUNK_BYTES, CHUNK_BYTES).expect("chunk layout")
}

const fn header_cells(shift: u32) -> u32 {
    let cell = 1usize << shift;
    core::mem::size_of::<ChunkHeader>().div_ceil(cell) as u32
}

impl Slab {
    pub(crate) fn new(raw: Box<dyn RawAlloc>) -> Slab {
        Slab {
            raw: Metered {
                inner: raw,
                outstanding: unmodeled::AtomicUsize::new(0),
            },
            owner: core::ptr::null(),
            lists: Mutex::new(Lists::default()),
        }
    }

    /// Tags every chunk made from now on with `owner` (the heap, once it has its address).
    pub(crate) fn set_owner(&mut self, owner: *const ()) {
        self.owner = owner;
    }

    /// The heap's allocator for everything but chunks (metered).
    pub(crate) fn raw(&self) -> &dyn RawAlloc {
        &self.raw
    }

    /// Bytes allocated through [`Slab::raw`] and not freed yet: side state, host closures,
    /// handle blocks and large cells.
    pub(crate) fn outstanding_bytes(&self) -> usize {
        self.raw.outstanding.load(unmodeled::Ordering::Relaxed)
    }

    fn new_chunk(&self, class: usize) -> Option<Chunk> {
        let layout = chunk_layout();
        let inner = &*self.raw.inner;
        let pooled = if inner.is_global() {
            chunk_pool().pop()
        } else {
            None
        };
        let base = match pooled {
            Some(Pooled(p)) => p,
            None => inner.alloc(layout)?,
        };
        if base
            .as_ptr()
            .addr()
            .checked_add(CHUNK_BYTES)
            .is_none_or(|end| end > ADDRESS_LIMIT)
        {
            // SAFETY: allocated just above with this layout.
            unsafe { inner.dealloc(base, layout) };
            return None;
        }
        let shift = SIZE_CLASSES[class].trailing_zeros();
        let first = header_cells(shift);
        let header = ChunkHeader {
            owner: self.owner,
            cell_shift: shift,
            class: class as u32,
            first,
            end: (CHUNK_BYTES >> shift) as u32,
            bytes: CHUNK_BYTES,
            meta: UnsafeCell::new(ChunkMeta {
                bump: first,
                alloc: [0; BITMAP_WORDS],
                mark: [0; BITMAP_WORDS],
            }),
            side: core::array::from_fn(|_| AtomicU64::new(0)),
        };
        if pooled.is_none() {
            // Fresh memory is zeroed once, so every word of every cell is initialized
            // (object cells leave slots past their shape unwritten; pooled chunks were
            // zeroed when they were made).
            // SAFETY: `base` is a fresh allocation of `CHUNK_BYTES` bytes.
            unsafe { base.as_ptr().write_bytes(0, CHUNK_BYTES) };
        }
        let p = base.cast::<ChunkHeader>();
        // SAFETY: fresh allocation, aligned to CHUNK_BYTES >= align of the header.
        unsafe { p.as_ptr().write(header) };
        Some(Chunk(p))
    }

    /// Allocates one cell of `class` through `cache`; `None` when memory runs out.
    #[inline]
    pub(crate) fn alloc_cell(&self, cache: &LocalCache, class: usize) -> Option<NonNull<u8>> {
        let next = cache.next[class].get();
        if next != cache.limit[class].get() {
            // Bump allocation inside the range this cache owns (counted when it ends).
            cache.next[class].set(next.wrapping_add(SIZE_CLASSES[class]));
            // SAFETY: `next != limit`, so a range is set, and ranges are cells of a chunk
            // (non-null); the empty range is null..null.
            return Some(unsafe { NonNull::new_unchecked(next) });
        }
        self.alloc_slow(cache, class)
    }

    // Cold: the hot path then keeps values in registers instead of spilling them around a
    // call it rarely makes.
    #[cold]
    #[inline(never)]
    fn alloc_slow(&self, cache: &LocalCache, class: usize) -> Option<NonNull<u8>> {
        if let Some(c) = cache.current[class].get() {
            // SAFETY: the chunk is in this cache, so this cache owns it.
            if let Some(p) = unsafe { c.take() } {
                cache.count_one(class);
                return Some(p);
            }
        }
        self.refill(cache, class)
    }

    #[cold]
    fn refill(&self, cache: &LocalCache, class: usize) -> Option<NonNull<u8>> {
        // A full chunk stays in `chunks` only; the sweep puts it back on `partial`.
        cache.current[class].set(None);
        cache.end_range(class);
        loop {
            let mut l = lock(&self.lists);
            let chunk = match l.partial[class].pop() {
                Some(c) => c,
                None => {
                    let count = l.per_class[class] + 1;
                    let need_partial = count.saturating_sub(l.partial[class].len());
                    l.chunks.try_reserve(1).ok()?;
                    l.partial[class].try_reserve(need_partial).ok()?;
                    let c = self.new_chunk(class)?;
                    l.chunks.push(c);
                    l.per_class[class] = count;
                    c
                }
            };
            drop(l);
            // SAFETY: the chunk was just taken out of the shared lists into this cache.
            if let Some((next, limit)) = unsafe { chunk.take_range() } {
                cache.current[class].set(Some(chunk));
                cache.start[class].set(next);
                cache.next[class].set(next.wrapping_add(SIZE_CLASSES[class]));
                cache.limit[class].set(limit);
                return NonNull::new(next);
            }
            // SAFETY: as above.
            if let Some(p) = unsafe { chunk.take() } {
                cache.current[class].set(Some(chunk));
                cache.count_one(class);
                return Some(p);
            }
            // A full chunk handed back: it stays in `chunks` only; try the next one.
        }
    }

    /// Hands a cache's chunks back (when its mutator ends, or before its exclusive mutator
    /// collects). Its counts stay.
    pub(crate) fn release_cache(&self, cache: &LocalCache) {
        // A mutator that never allocated (an interpreter's short read-only steps) holds no
        // chunk: no lock to take.
        if cache.holds_no_chunk() {
            return;
        }
        let mut l = lock(&self.lists);
        for class in 0..SIZE_CLASSES.len() {
            if let Some(c) = cache.current[class].take() {
                let (next, limit) = (cache.next[class].get(), cache.limit[class].get());
                if next != limit {
                    // SAFETY: the cache owns the chunk and the range came from it.
                    unsafe { c.return_range(next, limit) };
                }
                cache.end_range(class);
                // Capacity was reserved when the chunk was made (one slot per chunk).
                l.partial[class].push(c);
            }
        }
    }

    /// Allocates a cell bigger than the largest class as its own chunk-aligned allocation.
    /// (Object cells are proved to fit a class; long string values use it.)
    pub(crate) fn alloc_large(&self, bytes: usize) -> Option<NonNull<u8>> {
        let head = core::mem::size_of::<ChunkHeader>().next_multiple_of(64);
        let total = head.checked_add(bytes)?;
        let layout = Layout::from_size_align(total, CHUNK_BYTES).ok()?;
        let mut l = lock(&self.lists);
        l.large.try_reserve(1).ok()?;
        let base = self.raw.alloc(layout)?;
        if base
            .as_ptr()
            .addr()
            .checked_add(total)
            .is_none_or(|end| end > ADDRESS_LIMIT)
        {
            // SAFETY: allocated just above with this layout.
            unsafe { self.raw.dealloc(base, layout) };
            return None;
        }
        let header = ChunkHeader {
            owner: self.owner,
            cell_shift: 0,
            class: LARGE_CLASS,
            first: 0,
            end: 1,
            bytes: total,
            meta: UnsafeCell::new(ChunkMeta {
                bump: 1,
                alloc: [0; BITMAP_WORDS],
                mark: [0; BITMAP_WORDS],
            }),
            side: core::array::from_fn(|_| AtomicU64::new(0)),
        };
        let p = base.cast::<ChunkHeader>();
        // SAFETY: fresh allocation aligned to CHUNK_BYTES.
        unsafe { p.as_ptr().write(header) };
        l.large.push(Chunk(p));
        // SAFETY: `head + bytes == total`, inside the allocation.
        Some(unsafe { base.add(head) })
    }

    /// Marks `cell`; returns whether it was unmarked before.
    ///
    /// # Safety
    /// `cell` is a live cell of this slab and the caller has exclusive access to the heap.
    pub(crate) unsafe fn mark(cell: NonNull<u8>) -> bool {
        let c = chunk_of(cell);
        let h = c.header();
        let idx = if h.class == LARGE_CLASS {
            0
        } else {
            (cell.as_ptr().addr() - c.base().addr()) >> h.cell_shift
        };
        h.meta.with_mut(|m| {
            // SAFETY: exclusive access per the contract.
            let m = unsafe { &mut *m };
            let (w, bit) = (idx / 64, 1u64 << (idx % 64));
            let fresh = m.mark[w] & bit == 0;
            m.mark[w] |= bit;
            fresh
        })
    }

    /// Frees every allocated, unmarked cell (calling `finalize` on it first), clears the
    /// marks and rebuilds the partial lists.
    ///
    /// # Safety
    /// The caller has exclusive access to the heap: no cache holds a chunk and no other
    /// thread uses the slab (a collection).
    pub(crate) unsafe fn sweep(
        &self,
        finalize: &mut dyn FnMut(NonNull<u8>, &dyn RawAlloc),
    ) -> SweepCounts {
        let mut counts = SweepCounts::default();
        let raw: &dyn RawAlloc = &self.raw;
        // Exclusive access: the lock is uncontended.
        let mut guard = lock(&self.lists);
        let l = &mut *guard;
        for p in l.partial.iter_mut() {
            p.clear();
        }
        for &c in &l.chunks {
            let h = c.header();
            let mut has_free = false;
            h.meta.with_mut(|m| {
                // SAFETY: exclusive access (contract): no cache owns the chunk.
                let m = unsafe { &mut *m };
                for w in 0..BITMAP_WORDS {
                    let dead = m.alloc[w] & !m.mark[w];
                    let live = u64::from(m.mark[w].count_ones());
                    counts.live += live;
                    counts.live_bytes += live << h.cell_shift;
                    counts.freed += u64::from(dead.count_ones());
                    // Only dead cells with side state are visited; the rest are freed by
                    // clearing their bits, without touching their memory.
                    let side = h.side[w].load(Ordering::Relaxed);
                    let mut fin = dead & side;
                    if fin != 0 {
                        h.side[w].store(side & !dead, Ordering::Relaxed);
                    }
                    while fin != 0 {
                        let i = w * 64 + fin.trailing_zeros() as usize;
                        fin &= fin - 1;
                        counts.finalized += 1;
                        // `i < end` (only such bits are ever set): inside the chunk.
                        if let Some(cell) = NonNull::new(c.base().wrapping_add(i << h.cell_shift)) {
                            finalize(cell, raw);
                        }
                    }
                    m.alloc[w] &= m.mark[w];
                    m.mark[w] = 0;
                }
                let used: u32 = m.alloc.iter().map(|w| w.count_ones()).sum();
                if used == 0 {
                    // Empty: bump allocation again from the first cell.
                    m.bump = h.first;
                }
                has_free = used < h.end - h.first;
            });
            if has_free {
                l.partial[h.class as usize].push(c);
            }
        }
        let mut i = 0;
        while i < l.large.len() {
            let c = l.large[i];
            let h = c.header();
            let marked = h.meta.with_mut(|m| {
                // SAFETY: exclusive, as above.
                let m = unsafe { &mut *m };
                let was = m.mark[0] & 1 != 0;
                m.mark[0] = 0;
                was
            });
            if marked {
                counts.live += 1;
                i += 1;
            } else {
                counts.freed += 1;
                let head = core::mem::size_of::<ChunkHeader>().next_multiple_of(64);
                // The large cell sits `head` bytes into its allocation.
                if h.side[0].load(Ordering::Relaxed) & 1 != 0
                    && let Some(cell) = NonNull::new(c.base().wrapping_add(head))
                {
                    counts.finalized += 1;
                    finalize(cell, raw);
                }
                l.large.swap_remove(i);
                let layout = Layout::from_size_align(h.bytes, CHUNK_BYTES).expect("large layout");
                // SAFETY: allocated in `alloc_large` with this layout; removed from the list.
                unsafe { raw.dealloc(c.0.cast(), layout) };
            }
        }
        counts
    }

    /// Clears every mark bit (after a collection was interrupted by a panic).
    ///
    /// # Safety
    /// As for [`Slab::sweep`].
    pub(crate) unsafe fn clear_marks(&self) {
        // Exclusive access: the lock is uncontended.
        let guard = lock(&self.lists);
        for c in guard.chunks.iter().chain(&guard.large) {
            c.header().meta.with_mut(|m| {
                // SAFETY: exclusive access (contract): no cache owns the chunk.
                unsafe { &mut *m }.mark = [0; BITMAP_WORDS];
            });
        }
    }

    /// Returns chunks without live cells to the allocator. `&mut self`: no cache holds one.
    pub(crate) fn release_empty_chunks(&mut self) -> usize {
        let raw = &*self.raw.inner;
        // `&mut self`: the lock is uncontended.
        let mut guard = lock(&self.lists);
        let l = &mut *guard;
        let mut released = 0;
        let mut i = 0;
        while i < l.chunks.len() {
            let c = l.chunks[i];
            let empty = c.header().meta.with(|m| {
                // SAFETY: exclusive (`&mut self`).
                unsafe { &*m }.alloc.iter().all(|&w| w == 0)
            });
            if empty {
                let class = c.header().class as usize;
                l.chunks.swap_remove(i);
                l.partial[class].retain(|&p| p != c);
                l.per_class[class] -= 1;
                // SAFETY: allocated in `new_chunk` with this layout; in no list any more.
                unsafe { release_chunk(raw, c.0.cast()) };
                released += 1;
            } else {
                i += 1;
            }
        }
        // The lists shrink with the chunks, so a heap that held many chunks once returns to
        // what it holds now.
        l.chunks.shrink_to_fit();
        l.large.shrink_to_fit();
        for p in l.partial.iter_mut() {
            p.shrink_to_fit();
        }
        released
    }

    /// Bytes held now: the chunks and what the metered allocator has outstanding.
    pub(crate) fn held_bytes(&self) -> usize {
        self.chunk_count() * CHUNK_BYTES + self.outstanding_bytes()
    }

    /// Number of chunks (excluding large allocations).
    pub(crate) fn chunk_count(&self) -> usize {
        lock(&self.lists).chunks.len()
    }
}

impl Drop for Slab {
    /// Frees every chunk. The owner finalizes live cells first (a sweep with nothing
    /// marked).
    fn drop(&mut self) {
        let inner = &*self.raw.inner;
        let raw: &dyn RawAlloc = &self.raw;
        // `&mut self`: the lock is uncontended.
        let mut guard = lock(&self.lists);
        let l = &mut *guard;
        for c in l.chunks.drain(..) {
            // SAFETY: allocated in `new_chunk`; dropped once.
            unsafe { release_chunk(inner, c.0.cast()) };
        }
        for c in l.large.drain(..) {
            let layout =
                Layout::from_size_align(c.header().bytes, CHUNK_BYTES).expect("large layout");
            // SAFETY: allocated in `alloc_large` with this layout; dropped once.
            unsafe { raw.dealloc(c.0.cast(), layout) };
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn classes_and_large_objects() {
        assert_eq!(class_of(1), Some(0));
        assert_eq!(class_of(128), Some(1));
        assert_eq!(class_of(129), Some(2));
        assert_eq!(class_of(2048), Some(5));
        assert_eq!(class_of(2049), None);

        let mut slab = Slab::new(Box::new(SystemAlloc));
        let cache = LocalCache::default();
        let mut cells = Vec::new();
        for (class, &bytes) in SIZE_CLASSES.iter().enumerate() {
            for _ in 0..(CHUNK_BYTES / bytes) + 3 {
                let p = slab.alloc_cell(&cache, class).expect("alloc");
                // SAFETY: a fresh cell of `bytes` bytes.
                unsafe { p.as_ptr().write_bytes(0xAB, bytes) };
                cells.push(p);
            }
        }
        let big = slab.alloc_large(10_000).expect("large");
        // SAFETY: a fresh 10,000-byte cell.
        unsafe { big.as_ptr().write_bytes(1, 10_000) };
        let mut sorted: Vec<usize> = cells.iter().map(|p| p.as_ptr().addr()).collect();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), cells.len(), "cells are distinct");
        slab.release_cache(&cache);
        // Every third cell has side state: only dead ones of those reach the finalizer.
        for p in cells.iter().step_by(3) {
            // SAFETY: live cells of this slab.
            unsafe { note_side_state(*p) };
        }
        // Keep every other cell and the large one.
        for p in cells.iter().step_by(2) {
            // SAFETY: live cells of this slab; exclusive access.
            assert!(unsafe { Slab::mark(*p) });
        }
        // SAFETY: as above.
        unsafe { Slab::mark(big) };
        let mut finalized = 0u64;
        // SAFETY: the cache gave its chunks back; this thread is the slab's only user.
        let counts = unsafe { slab.sweep(&mut |_, _| finalized += 1) };
        assert_eq!(counts.freed, (cells.len() / 2) as u64);
        // Dead (odd index) cells with side state (index divisible by 3): odd multiples of 3.
        let want = (0..cells.len())
            .filter(|i| i % 2 == 1 && i % 3 == 0)
            .count() as u64;
        assert_eq!(finalized, want);
        assert_eq!(counts.finalized, want);
        assert_eq!(counts.live, cells.len().div_ceil(2) as u64 + 1);
        // Freed cells are reused before new chunks are made.
        let before = slab.chunk_count();
        for _ in 0..10 {
            slab.alloc_cell(&cache, 1).expect("alloc");
        }
        assert_eq!(slab.chunk_count(), before);
        slab.release_cache(&cache);
        // SAFETY: as above.
        let counts = unsafe { slab.sweep(&mut |_, _| {}) };
        assert_eq!(counts.live, 0);
        assert_eq!(slab.release_empty_chunks(), before);
        assert_eq!(slab.chunk_count(), 0);
    }
}
