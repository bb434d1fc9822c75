//! Shared by the scenario binaries: a counting wrapper around `ArenaAlloc` (the global
//! allocator of each binary), a leak check, and CPU pinning helpers.
#![allow(dead_code)]

use arena_alloc::{ArenaAlloc, ArenaStats, total_stats};
use std::alloc::{GlobalAlloc, Layout};
use std::sync::atomic::{AtomicIsize, Ordering};

/// Counts live blocks and bytes passing through the wrapped allocator.
pub struct Counting {
    pub inner: ArenaAlloc,
    pub live: AtomicIsize,
    pub bytes: AtomicIsize,
}

impl Counting {
    pub const fn new(inner: ArenaAlloc) -> Self {
        Self {
            inner,
            live: AtomicIsize::new(0),
            bytes: AtomicIsize::new(0),
        }
    }
}

// SAFETY: forwards every call to `ArenaAlloc`, only adding counters.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        // SAFETY: forwarded.
        let p = unsafe { self.inner.alloc(l) };
        if !p.is_null() {
            self.live.fetch_add(1, Ordering::Relaxed);
            self.bytes.fetch_add(l.size() as isize, Ordering::Relaxed);
        }
        p
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        // SAFETY: forwarded.
        let p = unsafe { self.inner.alloc_zeroed(l) };
        if !p.is_null() {
            self.live.fetch_add(1, Ordering::Relaxed);
            self.bytes.fetch_add(l.size() as isize, Ordering::Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        self.live.fetch_sub(1, Ordering::Relaxed);
        self.bytes.fetch_sub(l.size() as isize, Ordering::Relaxed);
        // SAFETY: forwarded.
        unsafe { self.inner.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        // SAFETY: forwarded.
        let q = unsafe { self.inner.realloc(p, l, n) };
        if !q.is_null() {
            self.bytes
                .fetch_add(n as isize - l.size() as isize, Ordering::Relaxed);
        }
        q
    }
}

/// Snapshot of both the wrapper's and the allocator's own counters.
#[derive(Debug, Clone, Copy)]
pub struct Snapshot {
    pub live: isize,
    pub bytes: isize,
    pub stats: ArenaStats,
}

pub fn snapshot(c: &Counting) -> Snapshot {
    // Blocks parked in this thread's cache count as allocated for the arenas.
    arena_alloc::flush_thread_cache();
    Snapshot {
        live: c.live.load(Ordering::SeqCst),
        bytes: c.bytes.load(Ordering::SeqCst),
        stats: total_stats(),
    }
}

/// Asserts that everything allocated since `before` was freed, by both counts.
pub fn assert_no_leak(c: &Counting, before: &Snapshot) {
    let after = snapshot(c);
    assert_eq!(after.live, before.live, "wrapper: live blocks changed");
    assert_eq!(after.bytes, before.bytes, "wrapper: live bytes changed");
    assert_eq!(
        after.stats.live_allocations(),
        before.stats.live_allocations(),
        "arena stats: live allocations changed ({:?} -> {:?})",
        before.stats,
        after.stats
    );
    assert_eq!(
        after.stats.bytes_in_use, before.stats.bytes_in_use,
        "arena stats: bytes in use changed"
    );
    assert!(after.stats.allocations > before.stats.allocations);
}

/// Runs a `harness = false` scenario unless a name filter excludes it.
pub fn run(name: &str, f: impl FnOnce()) {
    let filters: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    if !filters.is_empty() && !filters.iter().any(|f| name.contains(f.as_str())) {
        println!("{name}: filtered out");
        return;
    }
    if cfg!(miri) {
        println!("{name}: skipped under Miri (the allocator needs mmap and rseq FFI)");
        return;
    }
    f();
    println!("{name}: ok");
}

/// CPUs this process may run on.
pub fn allowed_cpus() -> Vec<usize> {
    // SAFETY: an all-zero cpu_set_t is a valid empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let size = std::mem::size_of::<libc::cpu_set_t>();
    // SAFETY: `set` is writable for `size` bytes.
    if unsafe { libc::sched_getaffinity(0, size, &mut set) } != 0 {
        return vec![];
    }
    (0..libc::CPU_SETSIZE as usize)
        .filter(|&c| {
            // SAFETY: `c` < CPU_SETSIZE.
            unsafe { libc::CPU_ISSET(c, &set) }
        })
        .collect()
}

/// Pins the calling thread to `cpu`; true on success.
pub fn pin_to(cpu: usize) -> bool {
    // SAFETY: an all-zero cpu_set_t is a valid empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `cpu` comes from `allowed_cpus`, so it is < CPU_SETSIZE.
    unsafe { libc::CPU_SET(cpu, &mut set) };
    // SAFETY: `set` is readable for its size.
    unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0 }
}

/// A small deterministic generator (xorshift).
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// A block with a checkable pattern.
pub fn pattern(size: usize, seed: u8) -> Vec<u8> {
    (0..size).map(|i| seed.wrapping_add(i as u8)).collect()
}

pub fn check_pattern(v: &[u8], seed: u8) {
    for (i, &b) in v.iter().enumerate() {
        assert_eq!(b, seed.wrapping_add(i as u8), "byte {i} of {}", v.len());
    }
}
