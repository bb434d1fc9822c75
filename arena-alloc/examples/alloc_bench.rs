//! Standalone allocator micro-benchmarks (until bench-suite's `alloc` group drives them):
//!
//! * `alloc_bench pair16 N ALLOC` — N alloc+free pairs of 16 bytes on one thread; run it
//!   under `valgrind --tool=callgrind --toggle-collect='*pair16_loop*'` for instructions;
//! * `alloc_bench malloc_test THREADS ITERS ALLOC` — the seed's loop: each thread does
//!   ITERS x { p = alloc(max(r % 128, 1)); p = realloc(p, max(r % 128, 1)); free(p) }.
//!
//! ALLOC is `arena` (default heap count), `arena1` (heap count 1) or `system` (glibc).
//! Every run checks its own answer (bytes written are read back through realloc).

use arena_alloc::ArenaAlloc;
use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::time::Instant;

static ARENA: ArenaAlloc = ArenaAlloc::new();
static ARENA1: ArenaAlloc = ArenaAlloc::with_heap_count(1);

#[inline(never)]
fn pair16_loop<A: GlobalAlloc>(a: &A, n: usize) -> usize {
    let l = Layout::from_size_align(16, 8).unwrap();
    let mut sum = 0;
    for i in 0..n {
        // SAFETY: non-zero size.
        let p = unsafe { a.alloc(l) };
        assert!(!p.is_null());
        // SAFETY: `p` is a live 16-byte block.
        unsafe { p.write(i as u8) };
        // SAFETY: as above.
        sum += usize::from(unsafe { black_box(p).read() });
        // SAFETY: allocated above with `l`.
        unsafe { a.dealloc(p, l) };
    }
    sum
}

fn malloc_test_thread<A: GlobalAlloc>(a: &A, iters: usize, seed: u64) -> u64 {
    let mut r = seed | 1;
    let mut check = 0u64;
    for _ in 0..iters {
        r ^= r << 13;
        r ^= r >> 7;
        r ^= r << 17;
        let s1 = ((r % 128) as usize).max(1);
        let s2 = (((r >> 8) % 128) as usize).max(1);
        let l = Layout::from_size_align(s1, 1).unwrap();
        // SAFETY: non-zero size.
        let p = unsafe { a.alloc(l) };
        assert!(!p.is_null());
        // SAFETY: `p` has at least one byte.
        unsafe { p.write(r as u8) };
        // SAFETY: live block with layout `l`, non-zero new size.
        let q = unsafe { a.realloc(p, l, s2) };
        assert!(!q.is_null());
        // SAFETY: realloc keeps the first byte.
        let b = unsafe { q.read() };
        assert_eq!(b, r as u8, "realloc lost the contents");
        check = check.wrapping_add(u64::from(b));
        // SAFETY: live block of `s2` bytes.
        unsafe { a.dealloc(q, Layout::from_size_align(s2, 1).unwrap()) };
    }
    check
}

fn expected(iters: usize, seed: u64) -> u64 {
    let mut r = seed | 1;
    let mut check = 0u64;
    for _ in 0..iters {
        r ^= r << 13;
        r ^= r >> 7;
        r ^= r << 17;
        check = check.wrapping_add(u64::from(r as u8));
    }
    check
}

fn malloc_test<A: GlobalAlloc + Sync>(a: &'static A, threads: usize, iters: usize) -> f64 {
    let start = Instant::now();
    let hs: Vec<_> = (0..threads)
        .map(|t| std::thread::spawn(move || (malloc_test_thread(a, iters, t as u64 + 1), t)))
        .collect();
    for h in hs {
        let (got, t) = h.join().unwrap();
        assert_eq!(got, expected(iters, t as u64 + 1));
    }
    start.elapsed().as_secs_f64()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: alloc_bench pair16 N ALLOC | malloc_test THREADS ITERS ALLOC";
    let num = |i: usize| -> usize { args.get(i).and_then(|s| s.parse().ok()).expect(usage) };
    match args.get(1).map(String::as_str) {
        Some("pair16") => {
            let n = num(2);
            let sum = match args.get(3).map(String::as_str).unwrap_or("arena") {
                "arena" => pair16_loop(&ARENA, n),
                "arena1" => pair16_loop(&ARENA1, n),
                "system" => pair16_loop(&System, n),
                other => panic!("unknown allocator {other}"),
            };
            assert_eq!(sum, (0..n).map(|i| usize::from(i as u8)).sum::<usize>());
            println!("pair16 {n} ok");
        }
        Some("malloc_test") => {
            let (threads, iters) = (num(2), num(3));
            let name = args.get(4).map(String::as_str).unwrap_or("arena");
            let secs = match name {
                "arena" => malloc_test(&ARENA, threads, iters),
                "arena1" => malloc_test(&ARENA1, threads, iters),
                "system" => malloc_test(&System, threads, iters),
                other => panic!("unknown allocator {other}"),
            };
            let total = (threads * iters) as f64;
            println!(
                "malloc_test {name} threads={threads} iters={iters}: {:.1} ns/iter/thread, {:.2} M iter/s",
                secs * 1e9 * threads as f64 / total,
                total / secs / 1e6
            );
        }
        _ => panic!("{usage}"),
    }
}
