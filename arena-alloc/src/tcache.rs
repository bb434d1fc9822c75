//! The per-thread cache of small blocks: the hit path of `malloc` and `free`.
//!
//! A thread keeps up to `CACHE_BLOCKS` free blocks per class for the first
//! `CACHED_CLASSES` classes, all owned by one arena (the one it last refilled from), so the
//! common alloc/free pair touches no lock and no shared line. Blocks of other arenas go onto
//! their pages' thread-free lists (see `crate::remote`), a run of one page's blocks as one
//! chain in one compare-and-swap ([`REMOTE_BATCH_BYTES`]), never into this thread's bins (no false sharing of handed-out blocks). A pthread key destructor returns everything when the thread exits;
//! `flush_thread_cache` does it on demand.

use crate::arena::{self, alloc_small, free_list};
use crate::class::{NUM_CLASSES, class_size};
use crate::page;
use crate::sync::unmodeled::{AtomicU32, Ordering};
use crate::sys;
use core::ptr;

/// Classes served from the per-thread cache (blocks up to 16 KiB).
pub const CACHED_CLASSES: usize = 36;
/// Bytes a thread's bin of one class may hold: a bin keeps `CACHE_BIN_BYTES / block size`
/// blocks, clamped to `CACHE_MIN_BLOCKS..=CACHE_BLOCKS`.
pub const CACHE_BIN_BYTES: usize = 32 << 10;
/// Fewest free blocks a bin holds (classes of 8 KiB and more).
pub const CACHE_MIN_BLOCKS: u32 = 2;
/// Most free blocks a bin holds (classes up to 32 bytes).
pub const CACHE_BLOCKS: u32 = 1024;

/// Bytes of blocks one refill takes from the arena (under one lock), at least one block
/// and at most half a bin: a refill writes a link into every block it takes, so taking
/// more than the thread uses would touch (make resident) memory for nothing.
pub const REFILL_BYTES: usize = 4 << 10;

/// Bytes of other arenas' blocks of one page a thread holds back before it pushes them
/// onto their page's thread-free list as one chain (one compare-and-swap for the chain
/// instead of one a block: a consumer that frees a producer's blocks in order frees run
/// after run of one page). A block of this size or more is pushed at once.
pub const REMOTE_BATCH_BYTES: usize = 4 << 10;

/// Blocks of class `class` a deferred remote chain holds at most (1: pushed at once).
pub const fn remote_batch(class: usize) -> u32 {
    let n = REMOTE_BATCH_BYTES / class_size(class);
    if n < 1 { 1 } else { n as u32 }
}

/// Blocks one refill of class `class` takes.
pub const fn refill_count(class: usize) -> u32 {
    let n = REFILL_BYTES / class_size(class);
    let half = bin_capacity(class) / 2;
    if n < 1 {
        1
    } else if n > half as usize {
        half
    } else {
        n as u32
    }
}

/// Free blocks the bin of class `class` (< [`CACHED_CLASSES`]) holds at most.
pub const fn bin_capacity(class: usize) -> u32 {
    let n = CACHE_BIN_BYTES / class_size(class);
    if n < CACHE_MIN_BLOCKS as usize {
        CACHE_MIN_BLOCKS
    } else if n > CACHE_BLOCKS as usize {
        CACHE_BLOCKS
    } else {
        n as u32
    }
}

/// Every class has a bin slot; those of classes without a bin (`CACHED_CLASSES..`) never
/// have room, so the free hit path needs no separate class check.
const fn build_capacities() -> [u32; NUM_CLASSES] {
    let mut t = [0; NUM_CLASSES];
    let mut c = 0;
    while c < CACHED_CLASSES {
        t[c] = bin_capacity(c);
        c += 1;
    }
    t
}

const CAPACITY: [u32; NUM_CLASSES] = build_capacities();

const fn build_remote_batches() -> [u32; NUM_CLASSES] {
    let mut t = [0; NUM_CLASSES];
    let mut c = 0;
    while c < NUM_CLASSES {
        t[c] = remote_batch(c);
        c += 1;
    }
    t
}

/// [`remote_batch`] of every class (no division on the remote-free path).
const REMOTE_BATCH: [u32; NUM_CLASSES] = build_remote_batches();

const _: () = assert!(CACHED_CLASSES <= NUM_CLASSES && CACHE_MIN_BLOCKS >= 2);
const _: () = assert!(class_size(CACHED_CLASSES - 1) == 16 << 10);

const CACHE_UNREGISTERED: u8 = 0;
const CACHE_ACTIVE: u8 = 1;
const CACHE_REGISTERING: u8 = 2;
/// Thread exiting, or no pthread key: every call goes to the arenas.
const CACHE_OFF: u8 = 3;

/// The bins: per class, its free blocks (linked through their first word) and how many
/// more it takes (counting down, so the hit paths compare with zero). Two arrays rather
/// than an array of pairs: an 8-byte head and a 4-byte room are each reached with one
/// scaled index (`heads[c]`, `rooms[c]`), where a 16-byte pair needed the class shifted
/// and added first, 3 instructions per `malloc`/`free` pair.
#[derive(Clone, Copy)]
struct Bins {
    heads: [*mut u8; NUM_CLASSES],
    rooms: [u32; NUM_CLASSES],
}

const EMPTY_BINS: Bins = Bins {
    heads: [ptr::null_mut(); NUM_CLASSES],
    rooms: CAPACITY,
};

/// Other arenas' blocks of one page, freed by this thread and not pushed yet: a chain
/// linked through the blocks' first words, newest first (`head`, whose page is the
/// chain's), `tail` the oldest, its link unset; `n == 0`: none (the pointers may then be
/// stale).
#[derive(Clone, Copy)]
struct Deferred {
    head: *mut u8,
    tail: *mut u8,
    n: u32,
}

struct ThreadCache {
    bins: Bins,
    deferred: Deferred,
    /// Arena whose blocks this cache holds: `NO_ARENA` from `register` to the first
    /// refill and whenever the cache is off, so that `cache_push` needs no state check
    /// (0 while unregistered, when every bin has no room).
    arena: usize,
    state: u8,
}

/// A thread's cache before its first use: all zeros, so it can live in a `.tbss` section.
/// Its bins take blocks only once `register` has given them room and set the arena.
#[cfg_attr(
    all(
        feature = "capi",
        target_arch = "x86_64",
        target_os = "linux",
        not(miri)
    ),
    allow(dead_code)
)]
const UNUSED_CACHE: ThreadCache = ThreadCache {
    bins: Bins {
        heads: [ptr::null_mut(); NUM_CLASSES],
        rooms: [0; NUM_CLASSES],
    },
    deferred: Deferred {
        head: ptr::null_mut(),
        tail: ptr::null_mut(),
        n: 0,
    },
    arena: 0,
    state: CACHE_UNREGISTERED,
};

#[cfg(all(
    feature = "capi",
    target_arch = "x86_64",
    target_os = "linux",
    not(miri)
))]
mod slot {
    //! The C ABI library's thread cache, in its static TLS block, reached with the
    //! initial-exec model: `fs:0` plus an offset loaded from the GOT. std's
    //! `thread_local!` compiles to the general-dynamic model in a `cdylib` (a
    //! `__tls_get_addr` call on every `malloc` and `free` of the `LD_PRELOAD` library, 4%
    //! of glibc-thread's time). Rust programs (no `capi` feature) keep `thread_local!`,
    //! which is local-exec in an executable and lets the compiler hoist the address.
    use super::ThreadCache;

    core::arch::global_asm!(
        ".pushsection .tbss,\"awT\",@nobits",
        ".p2align 6",
        ".globl __arena_alloc_thread_cache_v1",
        ".hidden __arena_alloc_thread_cache_v1",
        ".type __arena_alloc_thread_cache_v1, @object",
        ".size __arena_alloc_thread_cache_v1, {size}",
        "__arena_alloc_thread_cache_v1:",
        ".zero {size}",
        ".popsection",
        size = const core::mem::size_of::<ThreadCache>(),
    );

    /// This thread's cache (zeroed until first used, which is `UNUSED_CACHE`).
    #[inline]
    pub(super) fn get() -> *mut ThreadCache {
        let p: usize;
        // SAFETY: reads the thread pointer (`fs:0` holds the TCB's own address on x86_64
        // Linux) and adds the symbol's TLS offset, which the dynamic linker put in the GOT;
        // the result is this thread's copy of the 64-aligned `.tbss` block above. Both
        // words are fixed for the thread's life, so the block is `nomem` (the compiler may
        // reuse the result across stores, as it does for a `thread_local!` address).
        unsafe {
            core::arch::asm!(
                "mov {p}, qword ptr fs:[0]",
                "add {p}, qword ptr [rip + __arena_alloc_thread_cache_v1@GOTTPOFF]",
                p = out(reg) p,
                options(nostack, pure, nomem),
            );
        }
        // Memory defined outside Rust (in assembly, allocated by the dynamic linker): its
        // address comes in as an integer, so it takes exposed provenance, as a pointer
        // returned by foreign code would.
        core::ptr::with_exposed_provenance_mut::<ThreadCache>(p)
    }
}

#[cfg(not(all(
    feature = "capi",
    target_arch = "x86_64",
    target_os = "linux",
    not(miri)
)))]
mod slot {
    //! The thread cache in std's `thread_local!` (const-initialised, no `Drop`: it never
    //! allocates and stays usable during thread exit).
    use super::{ThreadCache, UNUSED_CACHE};
    use crate::sync::unmodeled::UnsafeCell;

    std::thread_local! {
        static CACHE: UnsafeCell<ThreadCache> = const { UnsafeCell::new(UNUSED_CACHE) };
    }

    #[inline]
    pub(super) fn get() -> *mut ThreadCache {
        CACHE.with(|c| c.get())
    }
}

const NO_ARENA: usize = usize::MAX;

/// The pthread key whose destructor flushes a thread's cache (`u32::MAX`: none).
static CACHE_KEY: AtomicU32 = AtomicU32::new(u32::MAX);

#[inline]
fn cache_ptr() -> Option<*mut ThreadCache> {
    Some(slot::get())
}

/// Pops a cached block of class `class` (< CACHED_CLASSES).
#[inline]
pub(crate) fn cache_pop(class: usize) -> Option<*mut u8> {
    let tc = cache_ptr()?;
    // SAFETY: the cache is this thread's own; no reference to it outlives this function
    // and nothing here re-enters the allocator.
    let bins = unsafe { &mut (*tc).bins };
    let h = bins.heads[class];
    if h.is_null() {
        return None;
    }
    // SAFETY: cached blocks are free and hold the next cached block in their first word.
    bins.heads[class] = unsafe { h.cast::<*mut u8>().read() };
    bins.rooms[class] += 1;
    // SAFETY: `h` is a free block, handed out now.
    unsafe { page::untag(h) };
    Some(h)
}

/// The tag a small block carries in its second word while it is free (in a thread's bin,
/// on its page's free list or on a remote-free list), as glibc's tcache key: `free` of a
/// block that carries it looks for the block in those lists and aborts if it is there (a
/// double free); every path that hands a block out clears it (`page::untag`). One value
/// for the whole process and every thread from the start (a thread's first free needs no
/// set-up), and a sign-extended 32-bit immediate, so that the check and the store are one
/// instruction each: `cmp qword [p + 8], imm32` and `mov qword [p + 8], imm32`. Data that
/// equal it by chance only send their `free` down the search (a false alarm, then freed
/// as usual).
pub const FREE_TAG: u64 = 0x9e37_79b9_u32 as i32 as i64 as u64;

/// Tags small block `p` free; returns `true` (and leaves it as it is) when it already
/// carries the tag: it may be free already, or its data may equal the tag by chance.
///
/// # Safety
/// `p` is a small block of at least 16 bytes that the caller is freeing.
#[inline]
pub(crate) unsafe fn tag_free(p: *mut u8) -> bool {
    let w = p.wrapping_add(8).cast::<u64>();
    // SAFETY: forwarded from the caller: the block's second word is the caller's.
    if unsafe { w.read() } == FREE_TAG {
        return true;
    }
    // SAFETY: as above.
    unsafe { w.write(FREE_TAG) };
    false
}

/// Tags small block `p` free without checking (after a false alarm of [`tag_free`]).
///
/// # Safety
/// As for [`tag_free`].
#[cold]
pub(crate) unsafe fn retag_free(p: *mut u8) {
    // SAFETY: forwarded from the caller.
    unsafe { p.wrapping_add(8).cast::<u64>().write(FREE_TAG) };
}

/// Whether small block `p` of class `class` is in this thread's cache: its bin, or the
/// chain of other arenas' blocks it holds back (a double free looks here first).
#[cold]
pub(crate) fn holds(p: *mut u8, class: usize) -> bool {
    let Some(tcp) = cache_ptr() else {
        return false;
    };
    // SAFETY: this thread's own cache; a plain read.
    let mut b = unsafe { (*tcp).bins.heads[class] };
    // SAFETY: as above.
    let d = unsafe { (*tcp).deferred };
    while !b.is_null() {
        if b == p {
            return true;
        }
        // SAFETY: cached blocks are free and linked through their first words; the bin's
        // list ends in null.
        b = unsafe { b.cast::<*mut u8>().read() };
    }
    let mut b = d.head;
    for _ in 0..d.n {
        if b == p {
            return true;
        }
        // SAFETY: the deferred chain's `n` blocks are free and linked the same way.
        b = unsafe { b.cast::<*mut u8>().read() };
    }
    false
}

/// Parks small block `p` of class `class` owned by arena `owner` in its bin if the cache
/// holds that arena's blocks and the bin has room (the whole hit path of `free`); `false`
/// means the caller goes on with [`push_miss`]. Makes no call, so `free` needs no saved
/// registers.
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
    // No state check: only an active cache has an arena and bins with room (see
    // `ThreadCache::arena`); no class check: bins of uncached classes have no room.
    if tc.arena != owner {
        return false;
    }
    debug_assert!(class < NUM_CLASSES);
    // SAFETY: `class` is a formatted page's class, below NUM_CLASSES.
    if unsafe { *tc.bins.rooms.get_unchecked(class) } == 0 {
        return false;
    }
    // SAFETY: as above.
    let head = unsafe { tc.bins.heads.get_unchecked_mut(class) };
    // SAFETY: `p` is free now and at least 16 bytes long.
    unsafe { p.cast::<*mut u8>().write(*head) };
    *head = p;
    // SAFETY: as above.
    unsafe { *tc.bins.rooms.get_unchecked_mut(class) -= 1 };
    true
}

/// `free` after [`cache_push`] declined: `false` means the caller frees `p` to its arena.
///
/// # Safety
/// As for `cache_push`.
pub(crate) unsafe fn push_miss(p: *mut u8, owner: usize, class: usize) -> bool {
    let Some(tcp) = cache_ptr() else {
        return false;
    };
    // SAFETY: forwarded from the caller; `tcp` is this thread's cache.
    unsafe { push_slow(tcp, p, owner, class) }
}

/// `cache_push` when the block is not simply parked: registers the cache on first use,
/// returns half of a full bin to the arena in one batch, and frees blocks of other arenas
/// lock-free ([`arena::free_remote`]).
///
/// # Safety
/// As for `cache_push`; `tcp` is this thread's cache.
#[inline]
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
    if tc.arena == owner {
        if class >= CACHED_CLASSES {
            // A block of a class without a bin, of this thread's own arena: straight back
            // to its page, where the next request of its class finds it. (Batched as if
            // remote, up to 32 such blocks sat idle while the page handed out
            // fresh ones: espresso touched 3.5 MB of pages for 1.1 MB of per-class peaks.)
            return false;
        }
        // The bin is full: its older half goes back under one lock (the half freed last,
        // likely still in the CPU's cache, stays for the next allocations: returning the
        // whole bin made the next allocation miss and refill), then `p` is parked.
        let bins = &mut tc.bins;
        let keep = CAPACITY[class] / 2;
        let mut cut = bins.heads[class];
        for _ in 1..keep {
            // SAFETY: the bin holds CAPACITY[class] > keep blocks, linked through their
            // first words.
            cut = unsafe { cut.cast::<*mut u8>().read() };
        }
        // SAFETY: as above: `cut` is the bin's `keep`-th block, not its last.
        let rest = unsafe { cut.cast::<*mut u8>().read() };
        // SAFETY: `cut` is a free block of the bin; it ends the kept half now.
        unsafe { cut.cast::<*mut u8>().write(ptr::null_mut()) };
        bins.rooms[class] = CAPACITY[class] - keep;
        // SAFETY: the blocks after `cut` are free blocks of this arena, detached above.
        unsafe { free_list(owner, rest, owner) };
        // SAFETY: `p` is free and at least 16 bytes; the bin is this thread's.
        unsafe { cache_insert(tcp, class, p) };
        return true;
    }
    // A block of another arena: onto its page's thread-free list, no lock taken (its
    // arena's lock holder puts it back; see `crate::remote`), with the blocks of the same
    // page freed just before it, as one chain.
    // SAFETY: forwarded from the caller.
    unsafe { defer_remote(tc, p, class) };
    true
}

/// Adds block `p` of another arena to the deferred chain, pushing the chain when it is of
/// another page or full; a block of a class whose run is one block is pushed at once.
///
/// # Safety
/// `p` is a live small block of class `class`, given up; `tc` is this thread's cache.
#[inline]
unsafe fn defer_remote(tc: &mut ThreadCache, p: *mut u8, class: usize) {
    debug_assert!(class < NUM_CLASSES);
    // SAFETY: `class` is a formatted page's class, below NUM_CLASSES.
    let batch = unsafe { *REMOTE_BATCH.get_unchecked(class) };
    if batch == 1 {
        // SAFETY: forwarded from the caller.
        return unsafe { arena::free_remote(p) };
    }
    let d = &mut tc.deferred;
    if d.n != 0 && arena::page_key(d.head) == arena::page_key(p) {
        // SAFETY: `p` is given up and at least 16 bytes: its first word holds the link.
        unsafe { p.cast::<*mut u8>().write(d.head) };
        d.head = p;
        d.n += 1;
        if d.n >= batch {
            // SAFETY: the chain's blocks are given-up blocks of one page.
            unsafe { push_deferred(d) };
        }
        return;
    }
    // SAFETY: as above.
    unsafe { push_deferred(d) };
    *d = Deferred {
        head: p,
        tail: p,
        n: 1,
    };
}

/// Pushes the deferred chain (if any) onto its page's thread-free list.
///
/// # Safety
/// `d` is this thread's deferred chain.
unsafe fn push_deferred(d: &mut Deferred) {
    if d.n != 0 {
        d.n = 0;
        // SAFETY: the chain's blocks are given-up small blocks of one page, linked from
        // `head` to `tail`.
        unsafe { arena::free_remote_chain(d.head, d.tail) };
    }
}

/// This thread's arena (the one its cached blocks belong to) if it is below `heap_count`
/// and its lock is free right now; `None` otherwise (then the current CPU's arena is used).
#[inline]
pub(crate) fn home(heap_count: usize) -> Option<usize> {
    let tcp = cache_ptr()?;
    // SAFETY: this thread's own cache; a plain read.
    let state = unsafe { (*tcp).state };
    // SAFETY: as above.
    let a = unsafe { (*tcp).arena };
    (state == CACHE_ACTIVE && a < heap_count && !arena::is_locked(a)).then_some(a)
}

/// Cache miss on class `class` (< CACHED_CLASSES): refills under one lock and returns one
/// block (null when out of memory). The refill comes from the cache's own arena while its
/// lock is free (a thread keeps one arena: a single thread that the OS moves between CPUs
/// does not spread its blocks over every CPU's arena), else from arena `cpu_idx`, the
/// current CPU's (threads that meet on one arena move apart).
#[cold]
#[inline(never)]
pub(crate) fn cache_refill(cpu_idx: usize, heap_count: usize, class: usize) -> *mut u8 {
    let Some(tcp) = cache_ptr() else {
        return alloc_small(cpu_idx, class);
    };
    let idx = home(heap_count).unwrap_or(cpu_idx);
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
    // Blocks of the previous arena go home before the cache switches arenas.
    // SAFETY: as above.
    let switched = unsafe { (*tcp).arena } != idx;
    if switched {
        // SAFETY: as above.
        unsafe { flush_bins(tcp) };
        // SAFETY: as above.
        unsafe { (*tcp).arena = idx };
    }
    // A refill drains the arena's pending remote frees (so their memory is reused before
    // more is touched), except the first one from an arena: the blocks this thread has
    // just freed to it are typically blocks another thread allocated and handed over
    // (Hoard's cache-scratch); drained now, this very refill would hand them straight
    // back, putting this thread's objects on that thread's cache lines (passive false
    // sharing, `tests/handoff.rs`).
    // A page's free list of up to half a bin is taken whole (no block read under the lock).
    let whole = CAPACITY[class] / 2 + 1;
    let (first, last, count) = arena::take_chain(idx, class, refill_count(class), whole, !switched);
    if count == 0 {
        // Not ready yet (fork handlers) or out of memory: the general path handles both.
        return alloc_small(idx, class);
    }
    if count > 1 {
        // SAFETY: this thread's own cache; no other reference to it is live.
        let bins = unsafe { &mut (*tcp).bins };
        // A refill follows a miss: the bin is empty, so the chain's end link is null.
        debug_assert!(bins.heads[class].is_null() && bins.rooms[class] >= count - 1);
        // SAFETY: `first` heads a chain of `count` free blocks linked through their first
        // words (the last link unset unless `last` is null); all but `first` go to the bin.
        let second = unsafe { first.cast::<*mut u8>().read() };
        if !last.is_null() {
            // SAFETY: `last` is the chain's last block, free.
            unsafe { last.cast::<*mut u8>().write(ptr::null_mut()) };
        }
        bins.heads[class] = second;
        bins.rooms[class] -= count - 1;
    }
    // SAFETY: `first` is a free block, handed out now.
    unsafe { page::untag(first) };
    first
}

/// # Safety
/// `tcp` is this thread's cache and `block` a free block of class `class` it may keep.
unsafe fn cache_insert(tcp: *mut ThreadCache, class: usize, block: *mut u8) {
    // SAFETY: forwarded from the caller.
    let bins = unsafe { &mut (*tcp).bins };
    // SAFETY: `block` is free and at least 16 bytes.
    unsafe { block.cast::<*mut u8>().write(bins.heads[class]) };
    bins.heads[class] = block;
    bins.rooms[class] -= 1;
}

/// Arms the exit destructor for this thread's cache.
///
/// # Safety
/// `tcp` is this thread's cache.
#[cold]
unsafe fn register(tcp: *mut ThreadCache) {
    if crate::config::hardened() {
        // Hardened: no cache, every block goes through its arena (and its bitmap).
        // SAFETY: forwarded from the caller.
        unsafe { (*tcp).state = CACHE_OFF };
        // SAFETY: as above.
        unsafe { (*tcp).arena = NO_ARENA };
        return;
    }
    let key = CACHE_KEY.load(Ordering::Acquire);
    if key == u32::MAX {
        // No key (yet): stay unregistered, serve from the arenas.
        return;
    }
    // `pthread_setspecific` may allocate (keys beyond the first 32): such calls bypass
    // the cache because the state is not ACTIVE meanwhile.
    // SAFETY: forwarded from the caller.
    unsafe { (*tcp).state = CACHE_REGISTERING };
    // SAFETY: as above; the bins are empty (nothing was cached while unregistered).
    unsafe { (*tcp).bins = EMPTY_BINS };
    // SAFETY: as above.
    unsafe { (*tcp).arena = NO_ARENA };
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
    // SAFETY: as above; no other reference to the cache is live.
    let d = unsafe { &mut (*tcp).deferred };
    // SAFETY: the thread's own deferred chain.
    unsafe { push_deferred(d) };
}

/// Returns the cached blocks of the bins to the cache's arena.
///
/// # Safety
/// `tcp` is this thread's cache.
unsafe fn flush_bins(tcp: *mut ThreadCache) {
    // Every cached block belongs to the cache's arena, so none of these frees is remote.
    // SAFETY: forwarded from the caller.
    let current = unsafe { (*tcp).arena };
    for (class, &capacity) in CAPACITY.iter().enumerate() {
        // SAFETY: forwarded from the caller; the bin is detached before freeing.
        let p = unsafe {
            let bins = &mut (*tcp).bins;
            let h = bins.heads[class];
            bins.heads[class] = ptr::null_mut();
            bins.rooms[class] = capacity;
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
    // SAFETY: as above. Off: no arena, so `cache_push` takes nothing more.
    unsafe { (*tcp).arena = NO_ARENA };
}

/// Creates the cache key (from `ensure_ready`, with no lock held).
pub(crate) fn create_cache_key() {
    if let Some(key) = sys::create_thread_key(cache_exit) {
        CACHE_KEY.store(key, Ordering::Release);
    }
}

/// Returns the calling thread's cached free blocks to their arenas (statistics then count
/// them as freed), and lets its next refill pick the arena of the CPU it is on then (a
/// thread otherwise keeps its arena while that arena's lock is free). Threads return their
/// blocks automatically when they exit.
pub fn flush_thread_cache() {
    if let Some(tcp) = cache_ptr() {
        // SAFETY: this thread's own cache.
        unsafe { flush(tcp) };
        // SAFETY: as above; the bins are empty now (with room: only an active cache may
        // have an arena, see `ThreadCache::arena`).
        unsafe { (*tcp).arena = NO_ARENA };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `.tbss` copy of the cache starts as zero bytes: that must be `UNUSED_CACHE`.
    #[test]
    fn unused_cache_is_all_zeros() {
        let c = UNUSED_CACHE;
        assert!(c.bins.heads.iter().all(|h| h.is_null()));
        assert!(c.bins.rooms.iter().all(|&r| r == 0));
        assert_eq!((c.arena, c.state), (0, 0));
        assert_eq!(CACHE_UNREGISTERED, 0);
    }

    #[test]
    fn the_free_tag_is_one_sign_extended_immediate() {
        assert_eq!(FREE_TAG as i64, i64::from(FREE_TAG as i32));
        assert!(FREE_TAG != 0 && FREE_TAG.count_ones() > 16);
    }

    #[test]
    fn refill_counts() {
        assert_eq!(refill_count(0), (REFILL_BYTES / 16) as u32);
        assert_eq!(refill_count(CACHED_CLASSES - 1), 1);
        for c in 0..CACHED_CLASSES {
            assert!(refill_count(c) >= 1 && refill_count(c) <= bin_capacity(c) / 2);
        }
    }

    #[test]
    fn bin_capacities() {
        assert_eq!(bin_capacity(0), CACHE_BLOCKS);
        assert_eq!(bin_capacity(CACHED_CLASSES - 1), CACHE_MIN_BLOCKS);
        for c in 0..CACHED_CLASSES {
            let n = bin_capacity(c) as usize;
            assert!(n * class_size(c) <= CACHE_BIN_BYTES || n == CACHE_MIN_BLOCKS as usize);
        }
    }
}
