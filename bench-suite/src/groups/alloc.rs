//! `alloc`: arena-alloc (default heap count and heap count 1) against glibc (`System`),
//! mimalloc and jemalloc, each called directly through its `GlobalAlloc` implementation
//! (the runner's own global allocator is the counting one, so only the benchmark's calls
//! reach these allocators).
//!
//! * `pair16`: one thread, alloc+free of a 16-byte block (instructions per pair under
//!   `--instrument instructions`);
//! * `malloc_test`: the seed's loop, one thread: `p = alloc(max(r % 128, 1));
//!   p = realloc(p, max(r' % 128, 1)); free(p)`;
//! * `size`: alloc, touch first and last byte, free, for 64 live blocks per size, at the
//!   design note's sizes (8 B - 1 MiB, both sides of arena-alloc's mmap threshold);
//! * `malloc_test threads`: the seed's loop on T threads (`--threads`, default 1-32),
//!   millions of iterations per second (a sweep, native timer only);
//! * `xmalloc threads`: an xmalloc-test-style producer/consumer sweep: T/2 producers
//!   (at least 1) allocate 64-byte blocks, write a tag, and hand them in batches of 64
//!   through a bounded channel to T/2 consumers that check the tag and free them (every
//!   free is a cross-thread free); millions of blocks per second;
//! * `cache-scratch threads` / `cache-thrash threads`: ports of Hoard's benchmarks of
//!   allocator-induced false sharing. Each of T threads does 1,000 (full: 10,000) rounds of
//!   allocate an 8-byte object, write each byte 1,000 times, free it. In cache-scratch the
//!   main thread first allocates one object per thread back to back and each thread starts
//!   by freeing its object (an allocator that hands those neighbouring blocks out again on
//!   different threads makes them share a cache line); cache-thrash skips that hand-over.
//!   Milliseconds per run (lower is better).
//!
//! Every case checks its own answer: bytes written before a realloc are read back after
//! it and summed, and the sum is compared with the expected value.

use std::alloc::{GlobalAlloc, Layout, System};
use std::time::Instant;

use arena_alloc::{ArenaAlloc, SMALL_MAX};
use mimalloc::MiMalloc;
use tikv_jemallocator::Jemalloc;

use crate::measure::{BenchError, BenchResult, Case, Ctx, Instrument, Stats};

use super::Group;

/// The group.
pub const GROUP: Group = Group {
    name: "alloc",
    about: "arena-alloc vs glibc, mimalloc, jemalloc: 16-byte pair, the seed's malloc_test loop \
            (1..32 threads), a size sweep",
    run,
};

static ARENA: ArenaAlloc = ArenaAlloc::new();
static ARENA1: ArenaAlloc = ArenaAlloc::with_heap_count(1);
static MIMALLOC: MiMalloc = MiMalloc;
static JEMALLOC: Jemalloc = Jemalloc;

/// The baseline of every ratio.
pub const BASELINE: &str = "glibc";

/// Request sizes of the size sweep: the seed loop's range, 1 KiB, and both sides of
/// arena-alloc's largest size class (its mmap threshold).
pub const SIZES: [usize; 9] = [
    8,
    16,
    64,
    128,
    1024,
    64 * 1024,
    SMALL_MAX,
    SMALL_MAX + 1,
    1 << 20,
];

/// Default thread counts of the sweep.
pub const THREADS: [usize; 6] = [1, 2, 4, 8, 16, 32];

fn run(ctx: &mut Ctx<'_>) -> BenchResult {
    each(ctx, "arena-alloc", &ARENA)?;
    each(ctx, "arena-alloc/heaps=1", &ARENA1)?;
    each(ctx, BASELINE, &System)?;
    each(ctx, "mimalloc", &MIMALLOC)?;
    each(ctx, "jemalloc", &JEMALLOC)?;
    if ctx.sweeps() {
        let threads = ctx.threads_or(&THREADS);
        for &t in &threads {
            sweep(ctx, "arena-alloc", &ARENA, t)?;
            sweep(ctx, "arena-alloc/heaps=1", &ARENA1, t)?;
            sweep(ctx, BASELINE, &System, t)?;
            sweep(ctx, "mimalloc", &MIMALLOC, t)?;
            sweep(ctx, "jemalloc", &JEMALLOC, t)?;
        }
        for &t in &threads {
            for scratch in [true, false] {
                false_sharing(ctx, "arena-alloc", &ARENA, t, scratch)?;
                false_sharing(ctx, "arena-alloc/heaps=1", &ARENA1, t, scratch)?;
                false_sharing(ctx, BASELINE, &System, t, scratch)?;
                false_sharing(ctx, "mimalloc", &MIMALLOC, t, scratch)?;
                false_sharing(ctx, "jemalloc", &JEMALLOC, t, scratch)?;
            }
        }
        for &t in &threads {
            xmalloc(ctx, "arena-alloc", &ARENA, t)?;
            xmalloc(ctx, "arena-alloc/heaps=1", &ARENA1, t)?;
            xmalloc(ctx, BASELINE, &System, t)?;
            xmalloc(ctx, "mimalloc", &MIMALLOC, t)?;
            xmalloc(ctx, "jemalloc", &JEMALLOC, t)?;
        }
    }
    Ok(())
}

fn each<A: GlobalAlloc + Sync>(ctx: &mut Ctx<'_>, name: &str, a: &'static A) -> BenchResult {
    if !ctx.wants(Instrument::Time) {
        return Ok(());
    }
    const PAIRS: u64 = 10_000;
    let case = Case::new("pair16", name, "bytes", 16).baseline(BASELINE);
    ctx.time(
        &case,
        PAIRS,
        || (),
        |()| pairs(a, PAIRS as usize),
        |&sum| expect(sum, (0..PAIRS).map(|i| i % 251).sum()),
    )?;

    let iters: u64 = if ctx.full() { 200_000 } else { 20_000 };
    let case = Case::new("malloc_test", name, "threads", 1).baseline(BASELINE);
    ctx.time(
        &case,
        iters,
        || (),
        |()| malloc_test(a, iters as usize, 1),
        |&sum| expect(sum, expected(iters as usize, 1)),
    )?;

    const LIVE: usize = 64;
    for &size in &SIZES {
        let case = Case::new("size", name, "bytes", size as u64).baseline(BASELINE);
        ctx.time(
            &case,
            LIVE as u64,
            || Vec::with_capacity(LIVE),
            |mut v| sizes(a, size, &mut v),
            |&sum| expect(sum, (0..LIVE as u64).map(|i| 2 * (i % 251)).sum()),
        )?;
    }
    Ok(())
}

fn expect(got: u64, want: u64) -> Result<(), String> {
    if got == want {
        Ok(())
    } else {
        Err(format!("checksum {got}, expected {want}"))
    }
}

/// `n` alloc+free pairs of 16 bytes; returns the sum of the bytes read back.
#[inline(never)]
fn pairs<A: GlobalAlloc>(a: &A, n: usize) -> u64 {
    let l = Layout::from_size_align(16, 8).expect("valid layout");
    let mut sum = 0;
    for i in 0..n {
        // SAFETY: non-zero size.
        let p = unsafe { a.alloc(l) };
        assert!(!p.is_null(), "out of memory");
        // SAFETY: `p` is a live 16-byte block.
        unsafe { p.write((i % 251) as u8) };
        // SAFETY: as above.
        sum += u64::from(unsafe { std::hint::black_box(p).read() });
        // SAFETY: allocated above with `l`.
        unsafe { a.dealloc(p, l) };
    }
    sum
}

/// `live` blocks of `size` bytes: allocate all, write and read first and last byte, free.
fn sizes<A: GlobalAlloc>(a: &A, size: usize, v: &mut Vec<*mut u8>) -> u64 {
    let l = Layout::from_size_align(size, 8).expect("valid layout");
    for i in 0..v.capacity() {
        // SAFETY: non-zero size.
        let p = unsafe { a.alloc(l) };
        assert!(!p.is_null(), "out of memory");
        // SAFETY: `p` is live with `size` bytes.
        unsafe { p.write((i % 251) as u8) };
        // SAFETY: as above; the last byte is inside the block.
        unsafe { p.wrapping_add(size - 1).write((i % 251) as u8) };
        v.push(p);
    }
    let mut sum = 0;
    for p in v.drain(..) {
        // SAFETY: live block written above.
        sum += u64::from(unsafe { p.read() });
        // SAFETY: as above.
        sum += u64::from(unsafe { p.wrapping_add(size - 1).read() });
        // SAFETY: allocated above with `l`.
        unsafe { a.dealloc(p, l) };
    }
    sum
}

fn step(r: &mut u64) {
    *r ^= *r << 13;
    *r ^= *r >> 7;
    *r ^= *r << 17;
}

/// The seed's loop on one thread; returns the sum of the first bytes read after realloc.
fn malloc_test<A: GlobalAlloc>(a: &A, iters: usize, seed: u64) -> u64 {
    let mut r = seed | 1;
    let mut sum = 0u64;
    for _ in 0..iters {
        step(&mut r);
        let s1 = ((r % 128) as usize).max(1);
        let s2 = (((r >> 8) % 128) as usize).max(1);
        let l = Layout::from_size_align(s1, 1).expect("valid layout");
        // SAFETY: non-zero size.
        let p = unsafe { a.alloc(l) };
        assert!(!p.is_null(), "out of memory");
        // SAFETY: at least one byte.
        unsafe { p.write(r as u8) };
        // SAFETY: live block with layout `l`, non-zero new size.
        let q = unsafe { a.realloc(p, l, s2) };
        assert!(!q.is_null(), "out of memory");
        // SAFETY: realloc keeps the first byte.
        sum += u64::from(unsafe { q.read() });
        let l2 = Layout::from_size_align(s2, 1).expect("valid layout");
        // SAFETY: live block with layout `l2`.
        unsafe { a.dealloc(q, l2) };
    }
    sum
}

fn expected(iters: usize, seed: u64) -> u64 {
    let mut r = seed | 1;
    (0..iters)
        .map(|_| {
            step(&mut r);
            u64::from(r as u8)
        })
        .sum()
}

/// The seed's loop on `threads` threads, millions of iterations per second.
fn sweep<A: GlobalAlloc + Sync>(
    ctx: &mut Ctx<'_>,
    name: &str,
    a: &'static A,
    threads: usize,
) -> BenchResult {
    let case = Case::new("malloc_test threads", name, "threads", threads as u64).baseline(BASELINE);
    if !ctx.selected(&case) {
        return Ok(());
    }
    let iters: usize = if ctx.full() { 2_000_000 } else { 50_000 };
    let samples = if ctx.full() { 5 } else { 3 };
    let mut rates = Vec::with_capacity(samples);
    for _ in 0..samples {
        let start = Instant::now();
        let handles: Vec<_> = (0..threads)
            .map(|t| std::thread::spawn(move || (malloc_test(a, iters, t as u64 + 1), t)))
            .collect();
        for h in handles {
            let (sum, t) = h
                .join()
                .map_err(|_| BenchError(format!("{case}: a thread panicked")))?;
            let want = expected(iters, t as u64 + 1);
            if sum != want {
                return Err(BenchError(format!(
                    "self-check failed in {case}: checksum {sum}, expected {want}"
                )));
            }
        }
        let secs = start.elapsed().as_secs_f64();
        rates.push((threads * iters) as f64 / secs / 1e6);
    }
    ctx.record(&case, "Miter/s", false, Instrument::Time, Stats::of(&rates));
    Ok(())
}

/// A raw block sent between threads (the allocator under test owns it).
struct Block(*mut u8);
// SAFETY: the block is plain memory handed over whole; only one thread touches it at a time.
unsafe impl Send for Block {}

impl Block {
    /// Moves the whole `Block` into a closure (a field pattern would capture the raw,
    /// non-`Send` pointer alone).
    fn into_raw(self) -> *mut u8 {
        self.0
    }
}

/// Producer/consumer cross-thread frees on `threads` threads, millions of blocks per second.
fn xmalloc<A: GlobalAlloc + Sync>(
    ctx: &mut Ctx<'_>,
    name: &str,
    a: &'static A,
    threads: usize,
) -> BenchResult {
    let case = Case::new("xmalloc threads", name, "threads", threads as u64).baseline(BASELINE);
    if !ctx.selected(&case) {
        return Ok(());
    }
    const BATCH: usize = 64;
    const SIZE: usize = 64;
    let pairs = (threads / 2).max(1);
    let per_producer: usize = if ctx.full() { 1_000_000 } else { 40_000 };
    let samples = if ctx.full() { 5 } else { 3 };
    let mut rates = Vec::with_capacity(samples);
    let l = Layout::from_size_align(SIZE, 8).expect("valid layout");
    for _ in 0..samples {
        let start = Instant::now();
        let mut handles = Vec::new();
        let mut consumers = Vec::new();
        for p in 0..pairs {
            let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<Block>>(16);
            handles.push(std::thread::spawn(move || {
                let mut batch = Vec::with_capacity(BATCH);
                for i in 0..per_producer {
                    // SAFETY: non-zero size.
                    let b = unsafe { a.alloc(l) };
                    assert!(!b.is_null(), "out of memory");
                    // SAFETY: a live 64-byte block.
                    unsafe { b.write((i + p) as u8) };
                    batch.push(Block(b));
                    if batch.len() == BATCH {
                        let full = std::mem::replace(&mut batch, Vec::with_capacity(BATCH));
                        tx.send(full).expect("consumer alive");
                    }
                }
                if !batch.is_empty() {
                    tx.send(batch).expect("consumer alive");
                }
            }));
            consumers.push(std::thread::spawn(move || {
                let mut n = 0usize;
                let mut sum = 0u64;
                for batch in rx {
                    for Block(b) in batch {
                        // SAFETY: a live block written by the producer.
                        sum += u64::from(unsafe { b.read() });
                        // SAFETY: allocated by the producer with `l`, handed over whole.
                        unsafe { a.dealloc(b, l) };
                        n += 1;
                    }
                }
                (n, sum, p)
            }));
        }
        for h in handles {
            h.join()
                .map_err(|_| BenchError(format!("{case}: a producer panicked")))?;
        }
        for c in consumers {
            let (n, sum, p) = c
                .join()
                .map_err(|_| BenchError(format!("{case}: a consumer panicked")))?;
            let want: u64 = (0..per_producer).map(|i| u64::from((i + p) as u8)).sum();
            if n != per_producer || sum != want {
                return Err(BenchError(format!(
                    "self-check failed in {case}: {n} blocks, checksum {sum}, expected {per_producer} and {want}"
                )));
            }
        }
        let secs = start.elapsed().as_secs_f64();
        rates.push((pairs * per_producer) as f64 / secs / 1e6);
    }
    ctx.record(
        &case,
        "Mblocks/s",
        false,
        Instrument::Time,
        Stats::of(&rates),
    );
    Ok(())
}

/// Hoard's cache-scratch (`scratch`) or cache-thrash on `threads` threads: milliseconds
/// per run.
fn false_sharing<A: GlobalAlloc + Sync>(
    ctx: &mut Ctx<'_>,
    name: &str,
    a: &'static A,
    threads: usize,
    scratch: bool,
) -> BenchResult {
    let op = if scratch {
        "cache-scratch threads"
    } else {
        "cache-thrash threads"
    };
    let case = Case::new(op, name, "threads", threads as u64).baseline(BASELINE);
    if !ctx.selected(&case) {
        return Ok(());
    }
    const OBJ: usize = 8;
    const REPS: usize = 1000;
    let rounds: usize = if ctx.full() { 10_000 } else { 1_000 };
    let samples = if ctx.full() { 5 } else { 3 };
    let l = Layout::from_size_align(OBJ, 1).expect("valid layout");
    let mut times = Vec::with_capacity(samples);
    for _ in 0..samples {
        // The hand-over objects, allocated back to back by this thread.
        let initial: Vec<Block> = (0..threads)
            .map(|_| {
                // SAFETY: non-zero size.
                let b = unsafe { a.alloc(l) };
                assert!(!b.is_null(), "out of memory");
                Block(b)
            })
            .collect();
        let start = Instant::now();
        let handles: Vec<_> = initial
            .into_iter()
            .enumerate()
            .map(|(t, first)| {
                std::thread::spawn(move || {
                    let first = first.into_raw();
                    if scratch {
                        // SAFETY: allocated by the main thread with `l`, handed over.
                        unsafe { a.dealloc(first, l) };
                    }
                    let mut sum = 0u64;
                    for _ in 0..rounds {
                        // SAFETY: non-zero size.
                        let p = unsafe { a.alloc(l) };
                        assert!(!p.is_null(), "out of memory");
                        for r in 0..REPS {
                            for i in 0..OBJ {
                                // SAFETY: `p` has OBJ bytes; volatile keeps every write.
                                unsafe {
                                    std::ptr::write_volatile(p.wrapping_add(i), (r + i + t) as u8)
                                };
                            }
                        }
                        // SAFETY: as above.
                        sum += u64::from(unsafe { std::ptr::read_volatile(p) });
                        // SAFETY: allocated above with `l`.
                        unsafe { a.dealloc(p, l) };
                    }
                    if !scratch {
                        // SAFETY: allocated by the main thread with `l`, handed over.
                        unsafe { a.dealloc(first, l) };
                    }
                    (sum, t)
                })
            })
            .collect();
        for h in handles {
            let (sum, t) = h
                .join()
                .map_err(|_| BenchError(format!("{case}: a thread panicked")))?;
            let want = (rounds as u64) * u64::from((REPS - 1 + t) as u8);
            if sum != want {
                return Err(BenchError(format!(
                    "self-check failed in {case}: checksum {sum}, expected {want}"
                )));
            }
        }
        times.push(start.elapsed().as_secs_f64() * 1e3);
    }
    ctx.record(&case, "ms", true, Instrument::Time, Stats::of(&times));
    Ok(())
}
