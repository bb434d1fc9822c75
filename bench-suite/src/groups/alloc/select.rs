//! The runner's global allocator is chosen per process: [`Selected`] forwards every call
//! to one of five allocators, picked once, on the first allocation, from the environment
//! variable [`ENV`] (`glibc`, `arena`, `arena-1`, `mimalloc`, `jemalloc`; unset = glibc).
//!
//! A global allocator is fixed for a process, so the `alloc` group measures each allocator
//! in a child process: it re-executes the runner with [`ENV`] set (see
//! [`super::child`]). One binary serves all five, so `cargo run --release -p
//! bench-suite` stays one command and the sweep kit needs no extra binaries.
//!
//! The choice is read with `libc::getenv` inside the first allocation: nothing here may
//! allocate. Racing first callers compute the same answer; after that the choice never
//! changes, so every block is freed by the allocator that made it.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU8, Ordering::Relaxed};

use arena_alloc::ArenaAlloc;

use crate::counting::UsableSize;

/// The environment variable that names the process's allocator.
pub const ENV: &str = "BENCH_SUITE_ALLOCATOR";

/// The allocators the runner can run under.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Which {
    /// glibc's malloc (`std::alloc::System`).
    Glibc,
    /// arena-alloc with its default heap count (`ARENA_ALLOC_HEAP_COUNT` or the CPU count).
    Arena,
    /// arena-alloc with one heap (one lock: the seed's "single heap" mode).
    Arena1,
    /// `mimalloc::MiMalloc`.
    Mimalloc,
    /// `tikv_jemallocator::Jemalloc`.
    Jemalloc,
}

impl Which {
    /// Every allocator, glibc (the baseline) first.
    pub const ALL: [Which; 5] = [
        Which::Glibc,
        Which::Arena,
        Which::Arena1,
        Which::Mimalloc,
        Which::Jemalloc,
    ];

    /// The value of [`ENV`] that selects it.
    pub const fn env_value(self) -> &'static str {
        match self {
            Which::Glibc => "glibc",
            Which::Arena => "arena",
            Which::Arena1 => "arena-1",
            Which::Mimalloc => "mimalloc",
            Which::Jemalloc => "jemalloc",
        }
    }

    /// The implementation name in reports.
    pub const fn label(self) -> &'static str {
        match self {
            Which::Glibc => "glibc",
            Which::Arena => "arena-alloc",
            Which::Arena1 => "arena-alloc heaps=1",
            Which::Mimalloc => "mimalloc",
            Which::Jemalloc => "jemalloc",
        }
    }

    /// Parses a value of [`ENV`].
    pub fn parse(value: &[u8]) -> Option<Which> {
        Which::ALL
            .into_iter()
            .find(|w| w.env_value().as_bytes() == value)
    }

    const fn code(self) -> u8 {
        match self {
            Which::Glibc => 1,
            Which::Arena => 2,
            Which::Arena1 => 3,
            Which::Mimalloc => 4,
            Which::Jemalloc => 5,
        }
    }

    const fn from_code(c: u8) -> Which {
        match c {
            2 => Which::Arena,
            3 => Which::Arena1,
            4 => Which::Mimalloc,
            5 => Which::Jemalloc,
            _ => Which::Glibc,
        }
    }
}

/// The arena-alloc instances (they share the process's arenas; only the heap count
/// differs).
pub static ARENA: ArenaAlloc = ArenaAlloc::new();
/// arena-alloc with one heap.
pub static ARENA_1: ArenaAlloc = ArenaAlloc::with_heap_count(1);

/// 0 = not chosen yet; else `Which::code`, plus [`INVALID`] if [`ENV`] held a bad value.
static CHOICE: AtomicU8 = AtomicU8::new(0);
const INVALID: u8 = 0x80;

#[cold]
fn choose() -> u8 {
    // SAFETY: the name is a NUL-terminated literal; getenv does not allocate, and the
    // returned string (if any) is read before anything could change the environment.
    let value = unsafe { libc::getenv(c"BENCH_SUITE_ALLOCATOR".as_ptr()) };
    let code = if value.is_null() {
        Which::Glibc.code()
    } else {
        // SAFETY: a non-null result of getenv points to a NUL-terminated string.
        let bytes = unsafe { std::ffi::CStr::from_ptr(value) }.to_bytes();
        match Which::parse(bytes) {
            Some(w) => w.code(),
            None => Which::Glibc.code() | INVALID,
        }
    };
    match CHOICE.compare_exchange(0, code, Relaxed, Relaxed) {
        Ok(_) => code,
        Err(earlier) => earlier,
    }
}

#[inline]
fn choice() -> Which {
    let c = CHOICE.load(Relaxed);
    let c = if c != 0 { c } else { choose() };
    Which::from_code(c & !INVALID)
}

/// The allocator this process runs under, or `None` if [`Selected`] is not its global
/// allocator (it never served an allocation).
pub fn current() -> Option<Which> {
    let c = CHOICE.load(Relaxed);
    (c != 0).then(|| Which::from_code(c & !INVALID))
}

/// The bad value of [`ENV`] if it named no allocator (the process then runs on glibc).
pub fn invalid_env() -> Option<String> {
    (CHOICE.load(Relaxed) & INVALID != 0)
        .then(|| std::env::var(ENV).unwrap_or_else(|_| "(not unicode)".into()))
}

/// The dispatching global allocator; wrap it in
/// [`CountingAlloc`](crate::counting::CountingAlloc) for the memory instrument.
#[derive(Clone, Copy, Debug, Default)]
pub struct Selected;

macro_rules! dispatch {
    ($a:ident => $e:expr) => {
        match choice() {
            Which::Glibc => {
                let $a = &System;
                $e
            }
            Which::Arena => {
                let $a = &ARENA;
                $e
            }
            Which::Arena1 => {
                let $a = &ARENA_1;
                $e
            }
            Which::Mimalloc => {
                let $a = &mimalloc::MiMalloc;
                $e
            }
            Which::Jemalloc => {
                let $a = &tikv_jemallocator::Jemalloc;
                $e
            }
        }
    };
}

// SAFETY: every call goes to the same allocator for the life of the process (the choice
// is made once and never changes), with the caller's arguments unchanged, so each block
// is resized and freed by the allocator that made it, under that allocator's contract.
unsafe impl GlobalAlloc for Selected {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded under the caller's contract.
        dispatch!(a => unsafe { a.alloc(layout) })
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded under the caller's contract.
        dispatch!(a => unsafe { a.alloc_zeroed(layout) })
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded under the caller's contract; `ptr` came from the same target.
        dispatch!(a => unsafe { a.dealloc(ptr, layout) })
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded under the caller's contract; `ptr` came from the same target.
        dispatch!(a => unsafe { a.realloc(ptr, layout, new_size) })
    }
}

// SAFETY: each target's usable-size function returns the real usable size (>= the
// request) of a live block it allocated: glibc's `malloc_usable_size` (System serves
// every layout from malloc/posix_memalign), `ArenaAlloc::usable_size`, `mi_usable_size`
// and jemalloc's `malloc_usable_size` (`tikv_jemallocator::usable_size`).
unsafe impl UsableSize for Selected {
    unsafe fn usable_size(&self, ptr: *mut u8, layout: Layout) -> usize {
        match choice() {
            // SAFETY: `ptr` is a live block of System (caller's contract).
            Which::Glibc => unsafe { System.usable_size(ptr, layout) },
            // SAFETY: `ptr` is a live block of arena-alloc.
            Which::Arena => unsafe { ARENA.usable_size(ptr) },
            // SAFETY: as above.
            Which::Arena1 => unsafe { ARENA_1.usable_size(ptr) },
            // SAFETY: `ptr` is a live block of mimalloc.
            Which::Mimalloc => unsafe { mimalloc::MiMalloc.usable_size(ptr) },
            // SAFETY: `ptr` is a live block of jemalloc.
            Which::Jemalloc => unsafe { tikv_jemallocator::usable_size(ptr) },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_bad_names_are_rejected() {
        for w in Which::ALL {
            assert_eq!(Which::parse(w.env_value().as_bytes()), Some(w));
            assert_eq!(Which::from_code(w.code()), w);
        }
        for bad in ["", "Glibc", "arena1", "jemalloc ", "tcmalloc"] {
            assert_eq!(Which::parse(bad.as_bytes()), None, "{bad:?}");
        }
    }
}
