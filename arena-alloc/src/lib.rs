#![doc = include_str!("../README.md")]

pub mod _tutorial;

mod arena;
#[cfg(feature = "capi")]
pub mod capi;
mod class;
mod config;
mod huge;
mod init;
mod lock;
mod page;
mod remote;
mod stats;
mod sync;
mod sys;
mod tcache;
pub mod tuning;

use core::alloc::{GlobalAlloc, Layout};

pub use config::HeapCountError;
pub use stats::{ArenaStats, arena_stats, total_stats};
pub use tcache::flush_thread_cache;
use tuning::{MIN_BLOCK, check_heap_count, class_for};

/// The per-core arena allocator. `static GLOBAL: ArenaAlloc = ArenaAlloc::new();` with
/// `#[global_allocator]` is the whole set-up.
///
/// All instances share the process's arenas (ownership is recorded in the memory, so a
/// block may be freed through any instance); an instance only fixes how many of them it
/// spreads its threads over.
#[derive(Clone, Copy, Debug, Default)]
pub struct ArenaAlloc {
    /// 0: read [`tuning::HEAP_COUNT_ENV`] once, else the default.
    heap_count: usize,
}

impl ArenaAlloc {
    /// Heap count from [`tuning::HEAP_COUNT_ENV`] (read on first use), else
    /// [`tuning::default_heap_count`].
    pub const fn new() -> Self {
        Self { heap_count: 0 }
    }

    /// A fixed heap count, ignoring the environment.
    ///
    /// # Panics
    /// If `heap_count` is not in `1..=`[`tuning::MAX_HEAP_COUNT`] (at compile time in a `static`).
    pub const fn with_heap_count(heap_count: usize) -> Self {
        match check_heap_count(heap_count) {
            Ok(n) => Self { heap_count: n },
            Err(_) => panic!("ArenaAlloc::with_heap_count: heap count must be in 1..=128"),
        }
    }

    /// A fixed heap count, or why it is invalid.
    pub const fn try_with_heap_count(heap_count: usize) -> Result<Self, HeapCountError> {
        match check_heap_count(heap_count) {
            Ok(n) => Ok(Self { heap_count: n }),
            Err(e) => Err(e),
        }
    }

    /// The number of arenas this allocator spreads threads over.
    #[inline]
    pub fn heap_count(&self) -> usize {
        if self.heap_count != 0 {
            self.heap_count
        } else {
            config::env_heap_count()
        }
    }

    /// The arena the calling thread uses right now: current CPU modulo the heap count.
    #[inline]
    pub fn arena_index(&self) -> usize {
        let n = self.heap_count();
        let cpu = sys::current_cpu();
        if cpu < n { cpu } else { cpu % n }
    }

    /// Usable bytes of a block (at least the size it was allocated with).
    ///
    /// # Safety
    /// `ptr` must be a live block allocated by an `ArenaAlloc`.
    pub unsafe fn usable_size(&self, ptr: *mut u8) -> usize {
        // SAFETY: forwarded from the caller.
        unsafe { arena::usable_size(ptr) }
    }

    /// `arena_index` when it needs no call (heap count known, CPU from rseq or cache).
    #[inline]
    fn fast_index(&self) -> Option<usize> {
        let n = if self.heap_count != 0 {
            self.heap_count
        } else {
            config::env_heap_count_fast()?
        };
        let cpu = sys::current_cpu_fast()?;
        Some(if cpu < n { cpu } else { cpu % n })
    }

    /// The arena this thread allocates from without reading the CPU: its cache's arena
    /// (see [`tcache::cache_refill`]) if below this allocator's heap count and its lock is
    /// free, else the current CPU's when that is cheap to know.
    #[inline]
    fn home_index(&self) -> Option<usize> {
        let n = if self.heap_count != 0 {
            self.heap_count
        } else {
            config::env_heap_count_fast()?
        };
        match tcache::home(n) {
            Some(h) => Some(h),
            None => self.fast_index(),
        }
    }

    /// The inlined part of every allocation: cached classes by table lookup, everything
    /// else out of line (so the inlined code needs no saved registers).
    #[inline]
    fn allocate(&self, size: usize, align: usize) -> *mut u8 {
        if align <= MIN_BLOCK && size <= class::LUT_MAX {
            let c = class::class_of_lut(size);
            if let Some(p) = tcache::cache_pop(c) {
                return p;
            }
            return self.allocate_refill(c);
        }
        self.allocate_uncached(size, align)
    }

    /// `allocate` for sizes above the table or alignments above 16.
    #[inline(never)]
    extern "C" fn allocate_uncached(&self, size: usize, align: usize) -> *mut u8 {
        if let Some(c) = class_for(size, align) {
            if c < tcache::CACHED_CLASSES {
                if let Some(p) = tcache::cache_pop(c) {
                    return p;
                }
                return self.allocate_refill(c);
            }
            if init::is_ready()
                && let Some(idx) = self.home_index()
            {
                return arena::alloc_small(idx, c);
            }
        }
        self.allocate_slow(size, align, false)
    }

    /// `allocate`, then zeroed: small blocks are cleared, huge ones are fresh mappings.
    fn allocate_zeroed(&self, size: usize, align: usize) -> *mut u8 {
        if class_for(size, align).is_none() {
            return self.allocate_slow(size, align, true);
        }
        let p = self.allocate(size, align);
        if !p.is_null() {
            // SAFETY: `p` is a fresh block of at least `size` bytes.
            unsafe { core::ptr::write_bytes(p, 0, size) };
        }
        p
    }

    #[cold]
    #[inline(never)]
    extern "C" fn allocate_refill(&self, class: usize) -> *mut u8 {
        if !init::is_ready() {
            init::ensure_ready();
        }
        let n = self.heap_count();
        tcache::cache_refill(self.arena_index(), n, class)
    }

    #[cold]
    #[inline(never)]
    fn allocate_slow(&self, size: usize, align: usize, zeroed: bool) -> *mut u8 {
        if !init::is_ready() {
            init::ensure_ready();
        }
        let idx = match self.home_index() {
            Some(i) => i,
            None => self.arena_index(),
        };
        match class_for(size, align) {
            Some(c) => arena::alloc_small(idx, c),
            None => {
                let p = huge::alloc(idx, size, align, zeroed);
                // Memory the block will touch for the first time: empty small segments
                // kept resident are unmapped first, so that it does not add to the peak.
                let fresh = huge::take_fresh();
                if fresh > 0 {
                    arena::release_empty_segments(fresh);
                }
                p
            }
        }
    }

    /// Frees a live block: the hit path parks it in this thread's cache; everything else
    /// is a tail call, so the inlined code needs no saved registers.
    ///
    /// # Safety
    /// `ptr` is a live block of this allocator, not used afterwards.
    #[inline]
    unsafe fn free(&self, ptr: *mut u8) {
        // SAFETY: the caller passes a live block of ours.
        if let Some((owner, class)) = unsafe { arena::small_owner_class(ptr) } {
            // SAFETY: `ptr` is a small block being freed, at least 16 bytes.
            if unsafe { tcache::tag_free(ptr) } {
                // SAFETY: as above.
                return unsafe { self.free_marked(ptr, owner, class) };
            }
            // SAFETY: `ptr` is a live small block of `class`; on `true` the cache keeps it.
            if unsafe { tcache::cache_push(ptr, owner, class) } {
                return;
            }
            // SAFETY: as above.
            return unsafe { self.free_small_miss(ptr, owner, class) };
        }
        // SAFETY: forwarded from the caller.
        unsafe { self.free_to_arena(ptr) }
    }

    /// `free` of a small block that already carries the free tag (`tcache::tag_free`): a
    /// double free when the block is in this thread's cache or on its page's lists (free
    /// list, pending remote frees), and then the process aborts; otherwise its data
    /// matched the tag by chance, and it is freed as usual. A block in another thread's
    /// cache is not found (as in glibc, whose tcache key is checked against the freeing
    /// thread's cache only).
    ///
    /// # Safety
    /// `ptr` is a small block of `class` owned by arena `owner` that the caller frees.
    #[cold]
    #[inline(never)]
    unsafe extern "C" fn free_marked(&self, ptr: *mut u8, owner: usize, class: usize) {
        if tcache::holds(ptr, class) || arena::holds_free(ptr) {
            huge::invalid_free("free(): double free detected", ptr);
        }
        // SAFETY: forwarded from the caller.
        unsafe { tcache::retag_free(ptr) };
        // SAFETY: as above; on `true` the cache keeps it.
        if unsafe { tcache::cache_push(ptr, owner, class) } {
            return;
        }
        // SAFETY: as above.
        unsafe { self.free_small_miss(ptr, owner, class) }
    }

    /// `free` of a small block the cache did not simply park.
    ///
    /// # Safety
    /// `ptr` is a live small block of `class` owned by arena `owner`.
    #[inline(never)]
    unsafe extern "C" fn free_small_miss(&self, ptr: *mut u8, owner: usize, class: usize) {
        // SAFETY: forwarded from the caller.
        if unsafe { tcache::push_miss(ptr, owner, class) } {
            return;
        }
        // SAFETY: forwarded from the caller.
        unsafe { self.free_to_arena(ptr) }
    }

    /// Frees a live block to its arena (or the huge heap), not through the cache.
    ///
    /// # Safety
    /// `ptr` is a live block of this allocator, not used afterwards.
    #[inline(never)]
    unsafe extern "C" fn free_to_arena(&self, ptr: *mut u8) {
        let current = match self.fast_index() {
            Some(i) => i,
            None => self.arena_index(),
        };
        // SAFETY: forwarded from the caller.
        unsafe { arena::free(ptr, current) }
    }

    /// Resizes in place when possible, else allocates, copies `old_size.min(new_size)`
    /// bytes and frees; null (and `ptr` untouched) when out of memory.
    ///
    /// # Safety
    /// `ptr` is a live block aligned to `align` with `old_size` meaningful bytes;
    /// `new_size > 0`.
    unsafe fn reallocate(
        &self,
        ptr: *mut u8,
        old_size: usize,
        new_size: usize,
        align: usize,
    ) -> *mut u8 {
        // SAFETY: forwarded from the caller.
        if let Some(q) = unsafe { arena::resize_in_place(ptr, new_size, align) } {
            return q;
        }
        let q = self.allocate(new_size, align);
        if !q.is_null() {
            // SAFETY: both blocks are live and distinct, each at least this long.
            unsafe { core::ptr::copy_nonoverlapping(ptr, q, old_size.min(new_size)) };
            // SAFETY: `ptr` is live and given up on success.
            unsafe { self.free(ptr) };
        }
        q
    }
}

/// Returns free memory to the OS, as `malloc_trim` does: the calling thread's cached
/// blocks go back to their arenas, empty segments kept for a recent peak are unmapped,
/// then every empty page and every free span that still holds resident pages is
/// decommitted (`MADV_DONTNEED`). `true` if any memory was
/// released. Other threads' caches are untouched.
pub fn trim() -> bool {
    flush_thread_cache();
    arena::trim()
}

/// Where the current CPU number comes from on this machine: `"rseq"` (glibc's
/// restartable-sequence area) or `"sched_getcpu"`.
pub fn cpu_source() -> &'static str {
    sys::cpu::cpu_source()
}

// SAFETY: every block is at least `layout.size()` bytes, aligned to `layout.align()`
// (size classes are multiples of the alignment and pages are aligned; huge blocks are
// placed at an aligned offset), and is not handed out again until freed.
unsafe impl GlobalAlloc for ArenaAlloc {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        self.allocate(layout.size(), layout.align())
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        // SAFETY: the caller passes a live block of this allocator.
        unsafe { self.free(ptr) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        self.allocate_zeroed(layout.size(), layout.align())
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller passes a live block aligned to `layout.align()` and a non-zero
        // `new_size` that does not overflow when rounded to the alignment.
        unsafe { self.reallocate(ptr, layout.size(), new_size, layout.align()) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A live block whose second word equals the free tag by chance (the search finds it
    /// in no free list) is freed as usual, and the blocks stay distinct.
    #[test]
    #[cfg_attr(miri, ignore = "mmap")]
    fn a_block_whose_data_equal_the_free_tag_is_freed_as_usual() {
        let a = ArenaAlloc::new();
        let l = Layout::from_size_align(64, 16).unwrap();
        // SAFETY: non-zero size; the block is freed once below.
        let p = unsafe { a.alloc(l) };
        assert!(!p.is_null());
        let tag = tcache::FREE_TAG;
        // SAFETY: `p` is a live block of 64 bytes.
        unsafe { p.wrapping_add(8).cast::<u64>().write(tag) };
        // SAFETY: `p` is live and freed once: a false alarm, not a double free.
        unsafe { a.dealloc(p, l) };
        // SAFETY: non-zero size.
        let q = unsafe { a.alloc(l) };
        // SAFETY: as above.
        let r = unsafe { a.alloc(l) };
        assert!(!q.is_null() && !r.is_null() && q != r);
        assert_eq!(
            q, p,
            "the block went to this thread's bin, tag cleared on the way out"
        );
        // SAFETY: `q` is live and was handed out: its second word is no longer the tag.
        assert_ne!(unsafe { q.wrapping_add(8).cast::<u64>().read() }, tag);
        // SAFETY: live blocks, freed once.
        unsafe { a.dealloc(q, l) };
        // SAFETY: as above.
        unsafe { a.dealloc(r, l) };
    }
}
