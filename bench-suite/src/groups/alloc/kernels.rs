//! The allocator benchmarks of the `alloc` group, as Rust ports over any [`GlobalAlloc`].
//!
//! Each kernel takes the allocator as a parameter and calls its `GlobalAlloc` methods
//! directly, as code compiled against a `#[global_allocator]` does once the allocator's
//! functions are inlined: the single-threaded cases run in the runner process (all five
//! allocators are linked in; a block is always freed by the allocator that made it), the
//! multi-threaded ones in a child process whose global allocator is the same allocator
//! (so everything else the child allocates, and its peak RSS, is that allocator's too).
//! No runner wrapper (counting, dispatch) sits in the measured path. [`Global`]
//! (`std::alloc::{alloc, realloc, dealloc}`) runs a kernel through whatever the global
//! allocator is. Every kernel checks what it reads back (a stamp written into each block,
//! verified before the block is freed) and returns a checksum that the caller compares
//! with the expected value or across allocators.
//!
//! Parameters are documented on each kernel and in `bench-suite/docs/alloc.md`.

use std::alloc::{GlobalAlloc, Layout};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Barrier, Condvar, Mutex};

/// The process's global allocator through `std::alloc::{alloc, alloc_zeroed, realloc,
/// dealloc}`: what a program calling `malloc` gets.
#[derive(Clone, Copy, Debug, Default)]
pub struct Global;

// SAFETY: forwards to the global allocator's functions with the caller's arguments.
unsafe impl GlobalAlloc for Global {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded under the caller's contract.
        unsafe { std::alloc::alloc(layout) }
    }
    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded under the caller's contract.
        unsafe { std::alloc::alloc_zeroed(layout) }
    }
    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded under the caller's contract.
        unsafe { std::alloc::dealloc(ptr, layout) }
    }
    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded under the caller's contract.
        unsafe { std::alloc::realloc(ptr, layout, new_size) }
    }
}

/// A small deterministic generator (xorshift64*), so every run does the same requests.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator from `seed` (any value; 0 is remapped).
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }

    /// The next value.
    #[inline]
    pub fn draw(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// True with probability `pct` percent.
    #[inline]
    pub fn chance(&mut self, pct: u64) -> bool {
        self.draw() % 100 < pct
    }
}

/// A kernel's answer: operations done and a checksum of what was read back.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Outcome {
    /// Operations (the unit of each kernel's throughput).
    pub ops: u64,
    /// Checksum of the values read back from the blocks.
    pub checksum: u64,
}

/// Why a kernel failed: an allocation returned null or a block did not hold what was
/// written into it.
pub type KResult<T = Outcome> = Result<T, String>;

fn layout(size: usize, align: usize) -> KResult<Layout> {
    Layout::from_size_align(size, align).map_err(|e| format!("layout {size}/{align}: {e}"))
}

#[inline]
fn alloc_or<A: GlobalAlloc>(a: &A, l: Layout) -> KResult<*mut u8> {
    // SAFETY: every layout used by the kernels has a non-zero size.
    let p = unsafe { a.alloc(l) };
    if p.is_null() {
        Err(format!("allocation of {} bytes failed", l.size()))
    } else {
        Ok(p)
    }
}

/// The single-thread 16-byte pair: `n` times allocate 16 bytes (align 8), write the loop
/// index into it, read it back, free it. Checksum: sum of the indices read back
/// (`n (n - 1) / 2`).
///
/// With `OPAQUE = false` the layout is a compile-time constant, as for `Box::new`: an
/// allocator whose `alloc` inlines can fold its size-class lookup away. With
/// `OPAQUE = true` the size is hidden from the compiler (`black_box`), as for a C
/// `malloc(n)` or a `Vec` growing: the lookup runs on every call.
#[inline(never)]
pub fn pair16<A: GlobalAlloc, const OPAQUE: bool>(a: &A, n: u64) -> KResult {
    let size = if OPAQUE { std::hint::black_box(16) } else { 16 };
    let l = layout(size, 8)?;
    let mut sum = 0u64;
    for i in 0..n {
        let p = alloc_or(a, l)?.cast::<u64>();
        // SAFETY: `p` is a fresh 16-byte block aligned to 8.
        unsafe { p.write(i) };
        // SAFETY: written just above.
        sum = sum.wrapping_add(unsafe { std::hint::black_box(p).read() });
        // SAFETY: `p` was allocated by `a` with `l`.
        unsafe { a.dealloc(p.cast(), l) };
    }
    Ok(Outcome {
        ops: n,
        checksum: sum,
    })
}

/// The size sweep: `n` times allocate `size` bytes (align 8), write the first and last
/// byte, read them back, free. Checksum: sum of the bytes read back.
#[inline(never)]
pub fn size_pair<A: GlobalAlloc>(a: &A, size: usize, n: u64) -> KResult {
    let l = layout(size, 8)?;
    let mut sum = 0u64;
    for i in 0..n {
        let p = alloc_or(a, l)?;
        let v = i as u8;
        let last = p.wrapping_add(size - 1);
        // SAFETY: `p` is a fresh block of `size >= 1` bytes.
        unsafe { p.write(v) };
        // SAFETY: `last` is its last byte.
        unsafe { last.write(v) };
        let p = std::hint::black_box(p);
        // SAFETY: written above.
        let x = unsafe { p.read() };
        // SAFETY: written above.
        let y = unsafe { last.read() };
        sum += u64::from(x) + u64::from(y);
        // SAFETY: `p` was allocated by `a` with `l`.
        unsafe { a.dealloc(p, l) };
    }
    Ok(Outcome {
        ops: n,
        checksum: sum,
    })
}

/// The checksum [`size_pair`] must return.
pub fn size_pair_expected(n: u64) -> u64 {
    (0..n).map(|i| 2 * u64::from(i as u8)).sum()
}

/// One size of the seed's loop: `r % 128`, but at least 1 (C's `malloc(0)` returns a
/// minimal block; a Rust layout must not be empty).
#[inline]
fn seed_size(r: &mut Rng) -> usize {
    ((r.draw() % 128) as usize).max(1)
}

/// The seed's `malloc_test` loop on one thread: `iters` times `p = malloc(r % 128);
/// p = realloc(p, max(r % 128, 1)); free(p)`, with a fresh draw of `r` at each use and
/// align 1 (byte buffers). The first byte is stamped after `malloc` and checked after
/// `realloc` (which must keep it). Checksum: sum of the stamps read back.
#[inline(never)]
pub fn seed_loop<A: GlobalAlloc>(a: &A, iters: u64, seed: u64) -> KResult {
    let mut r = Rng::new(seed);
    let mut sum = 0u64;
    for i in 0..iters {
        let n1 = seed_size(&mut r);
        let l1 = layout(n1, 1)?;
        let p = alloc_or(a, l1)?;
        let stamp = (i as u8) | 1;
        // SAFETY: `p` is a fresh block of `n1 >= 1` bytes.
        unsafe { p.write(stamp) };
        let n2 = seed_size(&mut r);
        // SAFETY: `p` is live, allocated by `a` with `l1`; `n2 >= 1`.
        let q = unsafe { a.realloc(p, l1, n2) };
        if q.is_null() {
            return Err(format!("realloc {n1} -> {n2} failed"));
        }
        // SAFETY: realloc keeps the first min(n1, n2) >= 1 bytes.
        let got = unsafe { q.read() };
        if got != stamp {
            return Err(format!(
                "realloc {n1} -> {n2} lost the stamp ({got} != {stamp})"
            ));
        }
        sum += u64::from(got);
        // SAFETY: `q` is the live block realloc returned, of `n2` bytes.
        unsafe { a.dealloc(q, layout(n2, 1)?) };
    }
    Ok(Outcome {
        ops: iters,
        checksum: sum,
    })
}

/// The checksum [`seed_loop`] must return.
pub fn seed_loop_expected(iters: u64) -> u64 {
    (0..iters).map(|i| u64::from((i as u8) | 1)).sum()
}

/// glibc's `bench-malloc-simple` pattern on one thread: `iters` rounds of allocating
/// `blocks` blocks of `size` bytes, then freeing them all in allocation order. Each block
/// gets its index written into its first word and checked before the free. Checksum:
/// sum of the indices read back.
#[inline(never)]
pub fn simple<A: GlobalAlloc>(a: &A, size: usize, blocks: usize, iters: u64) -> KResult {
    let l = layout(size.max(8), 8)?;
    let mut arr: Vec<*mut u8> = vec![std::ptr::null_mut(); blocks];
    let mut sum = 0u64;
    for _ in 0..iters {
        for (i, slot) in arr.iter_mut().enumerate() {
            let p = alloc_or(a, l)?;
            // SAFETY: a fresh block of at least 8 bytes, aligned to 8.
            unsafe { p.cast::<u64>().write(i as u64) };
            *slot = p;
        }
        for (i, &p) in arr.iter().enumerate() {
            // SAFETY: written in the loop above; still live.
            let got = unsafe { p.cast::<u64>().read() };
            if got != i as u64 {
                return Err(format!("block {i} holds {got}"));
            }
            sum += got;
            // SAFETY: allocated by `a` with `l` above.
            unsafe { a.dealloc(p, l) };
        }
    }
    Ok(Outcome {
        ops: iters * blocks as u64,
        checksum: sum,
    })
}

/// The seed's `malloc_test` on `threads` threads: each runs [`seed_loop`] for `iters`
/// iterations (seed = thread index + 1). Checksum: sum of the threads' checksums.
pub fn malloc_test<A: GlobalAlloc + Sync>(a: &A, threads: usize, iters: u64) -> KResult {
    let outs: Vec<KResult> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..threads)
            .map(|t| s.spawn(move || seed_loop(a, iters, t as u64 + 1)))
            .collect();
        hs.into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err("a thread panicked".into())))
            .collect()
    });
    let mut total = Outcome {
        ops: 0,
        checksum: 0,
    };
    for o in outs {
        let o = o?;
        total.ops += o.ops;
        total.checksum += o.checksum;
    }
    Ok(total)
}

/// xmalloc-test parameters.
#[derive(Clone, Copy, Debug)]
pub struct Xmalloc {
    /// Blocks each producer allocates.
    pub blocks_per_producer: u64,
    /// Blocks per batch handed to the consumers.
    pub batch: usize,
    /// Block size in bytes.
    pub size: usize,
    /// Batches the queue holds before producers wait.
    pub queue_cap: usize,
}

struct Queue {
    q: Mutex<(VecDeque<Vec<usize>>, usize)>,
    not_empty: Condvar,
    not_full: Condvar,
    cap: usize,
}

/// xmalloc-test (Lever and Boreham): producer threads allocate blocks and hand them in
/// batches, through a mutex-protected queue, to consumer threads that free them (every
/// free is a cross-thread free). `threads / 2` producers (at least 1) and the rest
/// consumers (at least 1: `threads = 1` runs one of each). Each block is stamped with
/// (producer, sequence) and checked by the consumer. Operations: blocks; checksum: sum of
/// the stamps.
pub fn xmalloc<A: GlobalAlloc + Sync>(a: &A, threads: usize, p: Xmalloc) -> KResult {
    let producers = (threads / 2).max(1);
    let consumers = threads.saturating_sub(producers).max(1);
    let l = layout(p.size.max(8), 8)?;
    let queue = Queue {
        q: Mutex::new((VecDeque::new(), producers)),
        not_empty: Condvar::new(),
        not_full: Condvar::new(),
        cap: p.queue_cap.max(1),
    };
    let queue = &queue;
    let (outs, sums): (Vec<KResult<()>>, Vec<KResult<u64>>) = std::thread::scope(|s| {
        let ph: Vec<_> = (0..producers)
            .map(|id| {
                s.spawn(move || -> KResult<()> {
                    let mut batch = Vec::with_capacity(p.batch);
                    for seq in 0..p.blocks_per_producer {
                        let b = alloc_or(a, l)?;
                        // SAFETY: a fresh block of at least 8 bytes, aligned to 8.
                        unsafe { b.cast::<u64>().write(((id as u64) << 40) | seq) };
                        batch.push(b as usize);
                        if batch.len() == p.batch || seq + 1 == p.blocks_per_producer {
                            let full = std::mem::replace(&mut batch, Vec::with_capacity(p.batch));
                            let mut g = queue.q.lock().expect("queue lock");
                            while g.0.len() >= queue.cap {
                                g = queue.not_full.wait(g).expect("queue lock");
                            }
                            g.0.push_back(full);
                            queue.not_empty.notify_one();
                        }
                    }
                    let mut g = queue.q.lock().expect("queue lock");
                    g.1 -= 1;
                    queue.not_empty.notify_all();
                    Ok(())
                })
            })
            .collect();
        let ch: Vec<_> = (0..consumers)
            .map(|_| {
                s.spawn(move || -> KResult<u64> {
                    let mut sum = 0u64;
                    loop {
                        let batch = {
                            let mut g = queue.q.lock().expect("queue lock");
                            loop {
                                if let Some(b) = g.0.pop_front() {
                                    queue.not_full.notify_one();
                                    break Some(b);
                                }
                                if g.1 == 0 {
                                    break None;
                                }
                                g = queue.not_empty.wait(g).expect("queue lock");
                            }
                        };
                        let Some(batch) = batch else { return Ok(sum) };
                        for b in batch {
                            let b = b as *mut u8;
                            // SAFETY: a live block stamped by its producer.
                            sum = sum.wrapping_add(unsafe { b.cast::<u64>().read() });
                            // SAFETY: allocated with `l` by the producer, freed once here.
                            unsafe { a.dealloc(b, l) };
                        }
                    }
                })
            })
            .collect();
        let outs = ph
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err("producer panicked".into())))
            .collect();
        let sums = ch
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err("consumer panicked".into())))
            .collect();
        (outs, sums)
    });
    for o in outs {
        o?;
    }
    let mut checksum = 0u64;
    for s in sums {
        checksum = checksum.wrapping_add(s?);
    }
    Ok(Outcome {
        ops: producers as u64 * p.blocks_per_producer,
        checksum,
    })
}

/// The checksum [`xmalloc`] must return.
pub fn xmalloc_expected(threads: usize, blocks_per_producer: u64) -> u64 {
    let producers = (threads / 2).max(1) as u64;
    let seqs = blocks_per_producer * (blocks_per_producer.saturating_sub(1)) / 2;
    (0..producers).fold(0u64, |acc, id| {
        acc.wrapping_add(((id << 40).wrapping_mul(blocks_per_producer)).wrapping_add(seqs))
    })
}

/// larson parameters.
#[derive(Clone, Copy, Debug)]
pub struct Larson {
    /// Live blocks per thread.
    pub chunks: usize,
    /// Smallest and largest request.
    pub min: usize,
    /// Largest request.
    pub max: usize,
    /// Replacements each thread makes before handing its blocks to its successor.
    pub ops_per_generation: u64,
    /// Threads in each lineage (a thread exits after its round; a new one continues).
    pub generations: u32,
}

/// A larson block: its address and size; the block holds its size in its first four
/// bytes and in its last byte (byte 7 or later: the minimum size is 8).
type Slot = (usize, usize);

fn larson_new<A: GlobalAlloc>(a: &A, r: &mut Rng, p: &Larson) -> KResult<Slot> {
    let size = p.min + (r.draw() as usize) % (p.max - p.min + 1);
    let b = alloc_or(a, layout(size, 8)?)?;
    // SAFETY: a fresh block of `size >= 8` bytes, aligned to 8.
    unsafe { b.cast::<u32>().write(size as u32) };
    // SAFETY: its last byte (byte 7 or later, so not inside the first four).
    unsafe { b.wrapping_add(size - 1).write(size as u8) };
    Ok((b as usize, size))
}

fn larson_free<A: GlobalAlloc>(a: &A, (b, size): Slot) -> KResult<u64> {
    let b = b as *mut u8;
    // SAFETY: a live block written by `larson_new` with this size.
    let head = unsafe { b.cast::<u32>().read() };
    // SAFETY: as above: its last byte.
    let tail = unsafe { b.wrapping_add(size - 1).read() };
    if head != size as u32 || tail != size as u8 {
        return Err(format!("larson block of {size} bytes holds {head}/{tail}"));
    }
    // SAFETY: allocated with this layout by `larson_new`; freed once.
    unsafe { a.dealloc(b, layout(size, 8)?) };
    Ok(size as u64)
}

enum Step {
    Next(std::thread::JoinHandle<KResult<Step>>),
    Done(Vec<Slot>, u64),
}

fn larson_round<A: GlobalAlloc + Sync>(
    a: &'static A,
    mut slots: Vec<Slot>,
    mut r: Rng,
    mut sum: u64,
    generation: u32,
    p: Larson,
) -> KResult<Step> {
    for _ in 0..p.ops_per_generation {
        let i = (r.draw() as usize) % slots.len();
        sum = sum.wrapping_add(larson_free(a, slots[i])?);
        slots[i] = larson_new(a, &mut r, &p)?;
    }
    if generation + 1 == p.generations {
        return Ok(Step::Done(slots, sum));
    }
    // The successor thread takes over the blocks this thread allocated.
    Ok(Step::Next(std::thread::spawn(move || {
        larson_round(a, slots, r, sum, generation + 1, p)
    })))
}

/// larson (Larson and Krishnan's server simulation): the main thread allocates `chunks`
/// blocks (`min..=max` bytes) per thread; each of `threads` threads then repeatedly frees
/// a random one of its blocks and allocates a new one of random size, and after
/// `ops_per_generation` replacements exits, handing its blocks to a new thread (so blocks
/// are freed by threads other than their allocator), `generations` times. Operations:
/// replacements; checksum: sum of the sizes freed (each block checked before its free).
pub fn larson<A: GlobalAlloc + Sync>(a: &'static A, threads: usize, p: Larson) -> KResult {
    if p.min < 8 || p.max < p.min || p.chunks == 0 || p.generations == 0 {
        return Err(format!("bad larson parameters {p:?}"));
    }
    let mut lineages = Vec::with_capacity(threads);
    for t in 0..threads {
        let mut r = Rng::new(1000 + t as u64);
        let slots = (0..p.chunks)
            .map(|_| larson_new(a, &mut r, &p))
            .collect::<KResult<Vec<_>>>()?;
        lineages.push((slots, r));
    }
    let mut handles: Vec<_> = lineages
        .into_iter()
        .map(|(slots, r)| std::thread::spawn(move || larson_round(a, slots, r, 0, 0, p)))
        .collect();
    let mut checksum = 0u64;
    for h in handles.drain(..) {
        let mut h = h;
        loop {
            match h
                .join()
                .map_err(|_| "a larson thread panicked".to_owned())??
            {
                Step::Next(n) => h = n,
                Step::Done(slots, sum) => {
                    checksum = checksum.wrapping_add(sum);
                    for s in slots {
                        checksum = checksum.wrapping_add(larson_free(a, s)?);
                    }
                    break;
                }
            }
        }
    }
    Ok(Outcome {
        ops: threads as u64 * u64::from(p.generations) * p.ops_per_generation,
        checksum,
    })
}

/// cache-scratch / cache-thrash parameters, named as in Hoard's `cache-scratch nthreads
/// iterations objSize repetitions` (Hoard suggests `P 1000 1 1000000`, mimalloc-bench
/// runs `P 1000 1 2000000`).
#[derive(Clone, Copy, Debug)]
pub struct Cache {
    /// Objects each thread allocates, writes and frees in turn (Hoard: 1000).
    pub iterations: u64,
    /// Write passes over each object, in total: each of `threads` threads makes
    /// `repetitions / threads` passes per object (as Hoard divides them), so the total
    /// work is the same at every thread count and the ideal is a P-fold speedup.
    pub repetitions: u64,
    /// Object size in bytes (Hoard: 1).
    pub object_size: usize,
}

impl Cache {
    /// Write passes per object on each of `threads` threads.
    pub fn passes(&self, threads: usize) -> u64 {
        self.repetitions / threads.max(1) as u64
    }
}

/// The byte written at offset `k` of an object: Hoard writes `k`; one more here, so the
/// checksum of a one-byte object is not zero.
#[inline]
fn cache_byte(k: usize) -> u8 {
    (k as u8).wrapping_add(1)
}

/// `passes` passes of write + read-back over the `size` bytes at `o`; returns the sum of
/// the bytes read. Not generic and never inlined: every allocator runs this same machine
/// code (as every allocator runs the same compiled loop of the C benchmark), so only
/// where the block lies differs between allocators, not the alignment of the hot loop.
///
/// # Safety
/// `o` is a live block of at least `size` bytes, not accessed by anyone else meanwhile.
#[inline(never)]
unsafe fn write_passes(o: *mut u8, size: usize, passes: u64) -> u64 {
    let mut sum = 0u64;
    for _ in 0..passes {
        for k in 0..size {
            let b = o.wrapping_add(k);
            // Volatile, as Hoard's `obj[k] = k; volatile char ch = obj[k];`: every write
            // and read-back reaches the cache line (the point of the benchmark).
            // SAFETY: inside the caller's block.
            unsafe { b.write_volatile(cache_byte(k)) };
            // SAFETY: as above.
            sum += u64::from(unsafe { b.read_volatile() });
        }
    }
    sum
}

fn cache_worker<A: GlobalAlloc>(a: &A, p: &Cache, passes: u64, l: Layout) -> KResult<u64> {
    let mut sum = 0u64;
    for _ in 0..p.iterations {
        let o = alloc_or(a, l)?;
        // SAFETY: `o` is a live block of `object_size` bytes, this thread's alone.
        sum += unsafe { write_passes(o, p.object_size, passes) };
        // SAFETY: allocated above with `l`.
        unsafe { a.dealloc(o, l) };
    }
    Ok(sum)
}

/// The checksum of [`cache`] on `threads` threads: every byte read back, summed.
pub fn cache_expected(threads: usize, p: &Cache) -> u64 {
    let per_pass: u64 = (0..p.object_size).map(|k| u64::from(cache_byte(k))).sum();
    per_pass * p.passes(threads) * p.iterations * threads as u64
}

/// Hoard's cache-thrash (`scratch = false`: active false sharing: each thread allocates
/// small objects and writes them; an allocator that hands neighbouring blocks to
/// different threads makes them share cache lines) and cache-scratch (`scratch = true`:
/// passive false sharing: the main thread first allocates one object per thread,
/// adjacent, and each thread frees its object before starting; an allocator that reuses
/// that block for the thread's own objects makes them share cache lines). Each thread
/// then allocates `iterations` objects in turn, makes [`Cache::passes`] passes of
/// write + volatile read-back over each, and frees it (Hoard increments the byte read in
/// a volatile local; here it is summed for the checksum). As in Hoard the time includes
/// starting and joining the threads; here it also includes the main thread's few
/// allocations of the handed objects, and the threads meet at a barrier before they
/// start. Operations: object passes (`threads x iterations x passes`, the same total at
/// every thread count); checksum: every byte read back.
pub fn cache<A: GlobalAlloc + Sync>(a: &A, threads: usize, p: Cache, scratch: bool) -> KResult {
    let l = layout(p.object_size.max(1), 1)?;
    let passes = p.passes(threads);
    let handed: Vec<usize> = if scratch {
        (0..threads)
            .map(|_| alloc_or(a, l).map(|o| o as usize))
            .collect::<KResult<_>>()?
    } else {
        Vec::new()
    };
    let barrier = Barrier::new(threads);
    let barrier = &barrier;
    let sums: Vec<KResult<u64>> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..threads)
            .map(|t| {
                let mine = handed.get(t).copied();
                s.spawn(move || {
                    if let Some(o) = mine {
                        // SAFETY: allocated by the main thread with `l`; freed once here.
                        unsafe { a.dealloc(o as *mut u8, l) };
                    }
                    barrier.wait();
                    cache_worker(a, &p, passes, l)
                })
            })
            .collect();
        hs.into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err("a thread panicked".into())))
            .collect()
    });
    let mut checksum = 0;
    for s in sums {
        checksum += s?;
    }
    Ok(Outcome {
        ops: threads as u64 * p.iterations * passes,
        checksum,
    })
}

/// [`cache`] on one thread, run on the calling thread (no thread start; the handed object
/// is allocated and freed here): for the single-threaded table, whose instruction counts
/// callgrind takes only from the thread that runs the measured region.
pub fn cache_inline<A: GlobalAlloc>(a: &A, p: Cache, scratch: bool) -> KResult {
    let l = layout(p.object_size.max(1), 1)?;
    if scratch {
        let o = alloc_or(a, l)?;
        // SAFETY: allocated above with `l`.
        unsafe { a.dealloc(o, l) };
    }
    let passes = p.passes(1);
    Ok(Outcome {
        ops: p.iterations * passes,
        checksum: cache_worker(a, &p, passes, l)?,
    })
}

/// mstress parameters (mimalloc's stress test).
#[derive(Clone, Copy, Debug)]
pub struct Mstress {
    /// Work scale: thread `t` makes `100 x scale x (t % 8 + 1)` allocations and retains
    /// half as many.
    pub scale: usize,
    /// Rounds: each starts `threads` fresh threads and joins them.
    pub rounds: usize,
}

/// Slots of the shared transfer array.
pub const MSTRESS_TRANSFERS: usize = 1000;
const COOKIE: u64 = 0x1ce4_e5b9;

struct Counters {
    allocs: AtomicUsize,
    frees: AtomicUsize,
}

fn items_alloc<A: GlobalAlloc>(a: &A, items: usize, r: &mut Rng, c: &Counters) -> KResult<usize> {
    let mut items = items;
    if r.chance(1) {
        // 1% large objects, of which 10% huge and 0.1% giant.
        items *= if r.chance(1) {
            10_000
        } else if r.chance(10) {
            1000
        } else {
            100
        };
    }
    let items = items.max(1);
    let l = layout(items * 8, 8)?;
    // SAFETY: non-zero size.
    let p = unsafe { a.alloc_zeroed(l) }.cast::<u64>();
    if p.is_null() {
        return Err(format!("calloc of {items} words failed"));
    }
    // The first and last words must be zero. Not every word: the original writes without
    // reading, and a read before the first write of an untouched page maps the kernel's
    // shared zero page, which the write then replaces (a second fault per page, and a TLB
    // shootdown on the other CPUs running the process). A block handed out again without
    // clearing holds the cookie pattern in every word, the first and last included.
    for i in [0, items - 1] {
        // SAFETY: in bounds (`items >= 1`).
        let w = unsafe { p.add(i) };
        // SAFETY: in bounds; zeroed by alloc_zeroed.
        if unsafe { w.read() } != 0 {
            return Err(format!(
                "alloc_zeroed returned a block whose word {i} is not zero"
            ));
        }
    }
    for i in 0..items {
        // SAFETY: `p` holds `items` words.
        let w = unsafe { p.add(i) };
        // SAFETY: in bounds.
        unsafe { w.write((items - i) as u64 ^ COOKIE) };
    }
    c.allocs.fetch_add(1, Ordering::Relaxed);
    Ok(p as usize)
}

fn items_free<A: GlobalAlloc>(a: &A, p: usize, c: &Counters) -> KResult<()> {
    if p == 0 {
        return Ok(());
    }
    let p = p as *mut u64;
    // SAFETY: a live block from `items_alloc`: its first word encodes its length.
    let items = (unsafe { p.read() } ^ COOKIE) as usize;
    for i in 0..items {
        // SAFETY: `p` holds `items` words.
        let got = unsafe { p.wrapping_add(i).read() } ^ COOKIE;
        if got != (items - i) as u64 {
            return Err(format!("mstress block of {items} words corrupted at {i}"));
        }
    }
    // SAFETY: allocated with this layout by `items_alloc`; freed once.
    unsafe { a.dealloc(p.cast(), layout(items * 8, 8)?) };
    c.frees.fetch_add(1, Ordering::Relaxed);
    Ok(())
}

fn mstress_thread<A: GlobalAlloc>(
    a: &A,
    tid: usize,
    round: usize,
    p: &Mstress,
    transfer: &[AtomicUsize],
    c: &Counters,
) -> KResult<()> {
    let mut r = Rng::new(((tid + 1) * 43 + round * 7919) as u64);
    let mut allocs = 100 * p.scale * (tid % 8 + 1);
    let mut retain = allocs / 2;
    let mut data: Vec<usize> = Vec::new();
    let mut retained: Vec<usize> = Vec::with_capacity(retain);
    while allocs > 0 || retain > 0 {
        if retain == 0 || (r.chance(50) && allocs > 0) {
            allocs -= 1;
            let n = 1 << (r.draw() % 5);
            data.push(items_alloc(a, n, &mut r, c)?);
        } else {
            let n = 1 << (r.draw() % 7);
            retained.push(items_alloc(a, n, &mut r, c)?);
            retain -= 1;
        }
        if r.chance(66) && !data.is_empty() {
            let i = (r.draw() as usize) % data.len();
            items_free(a, std::mem::take(&mut data[i]), c)?;
        }
        if r.chance(25) && !data.is_empty() {
            // Swap a local block with the shared transfer array: another thread frees it.
            let i = (r.draw() as usize) % data.len();
            let t = (r.draw() as usize) % transfer.len();
            data[i] = transfer[t].swap(data[i], Ordering::AcqRel);
        }
    }
    for p in retained.into_iter().chain(data) {
        items_free(a, p, c)?;
    }
    Ok(())
}

/// mstress (mimalloc's `test-stress`, "mstress" in mimalloc-bench): `rounds` times,
/// `threads` fresh threads each make a random mix of allocations (1-16 words, retained ones
/// 1-64 words; 1% of them 100x, 1000x or 10,000x larger), zeroed (`calloc`), filled
/// with a cookie pattern, freeing 66% of the time and swapping blocks with a shared
/// transfer array 25% of the time (cross-thread frees); after each round half of the
/// transfer slots are freed (all after the last). Every block's pattern is checked at its
/// free. Operations: allocations; checksum: allocations (must equal frees).
pub fn mstress<A: GlobalAlloc + Sync>(a: &A, threads: usize, p: Mstress) -> KResult {
    let transfer: Vec<AtomicUsize> = (0..MSTRESS_TRANSFERS)
        .map(|_| AtomicUsize::new(0))
        .collect();
    let c = Counters {
        allocs: AtomicUsize::new(0),
        frees: AtomicUsize::new(0),
    };
    let mut r = Rng::new(42);
    for round in 0..p.rounds {
        let res: Vec<KResult<()>> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..threads)
                .map(|tid| {
                    let (transfer, c) = (&transfer, &c);
                    s.spawn(move || mstress_thread(a, tid, round, &p, transfer, c))
                })
                .collect();
            hs.into_iter()
                .map(|h| h.join().unwrap_or_else(|_| Err("a thread panicked".into())))
                .collect()
        });
        for x in res {
            x?;
        }
        for t in &transfer {
            if r.chance(50) || round + 1 == p.rounds {
                items_free(a, t.swap(0, Ordering::AcqRel), &c)?;
            }
        }
    }
    let (allocs, frees) = (c.allocs.into_inner(), c.frees.into_inner());
    if allocs != frees {
        return Err(format!("mstress: {allocs} allocations but {frees} frees"));
    }
    Ok(Outcome {
        ops: allocs as u64,
        checksum: allocs as u64,
    })
}

/// The number of allocations [`mstress`] makes (each thread's count is fixed by its id).
pub fn mstress_expected(threads: usize, p: &Mstress) -> u64 {
    let per_round: usize = (0..threads)
        .map(|t| {
            let allocs = 100 * p.scale * (t % 8 + 1);
            allocs + allocs / 2
        })
        .sum();
    (per_round * p.rounds) as u64
}
