//! A tutorial: a `malloc` with an arena per CPU and no byte of per-block bookkeeping.
//!
//! [`ArenaAlloc`](crate::ArenaAlloc) serves each small request from fixed-size blocks of
//! one size class, from the arena of the CPU the thread runs on, through a per-thread
//! cache; a block can be freed by any thread, because its owner is found by masking its
//! address. Each chapter teaches one part of that design, in the same order:
//!
//! 1. the problem;
//! 2. the naive layout, and what it costs;
//! 3. the trick, with a picture of the memory;
//! 4. the invariants that keep it sound, and how the code enforces them (compile-time
//!    assertions, Miri, loom, memcheck, scenario tests);
//! 5. the measured A/B, with the `bench-suite` command that prints it.
//!
//! # Chapters
//!
//! - [Chapter 1](chapter_1): size classes: 48 block sizes, pages of one class, and
//!   alignment for free.
//! - [Chapter 2](chapter_2): per-CPU heaps: the CPU number from glibc's rseq area, and
//!   the thread cache in front.
//! - [Chapter 3](chapter_3): remote frees: any thread frees any block, without the
//!   owner's lock.
//! - [Chapter 4](chapter_4): large blocks: extents of 4 KiB units in large segments, and
//!   mappings of their own with a cache.
//!
//! Every code block is a doctest: `cargo test --doc -p memlayout-arena-alloc` runs them,
//! and each one asserts something true about the allocator through the public API (class
//! sizes, waste bounds, heap counts, usable sizes, statistics). The examples that install
//! `ArenaAlloc` as the global allocator skip their checks under Miri, which cannot run
//! `mmap` or the rseq read; the arithmetic runs everywhere.
//!
//! Each chapter's numbers come with the command that prints them. Instruction counts
//! (valgrind callgrind) repeat exactly and are quoted as the command prints them for this
//! code; times and throughputs move between runs and are quoted from the dated runs in the
//! crate's `MEASUREMENTS.md`.

#[doc = include_str!("chapter_1.md")]
pub mod chapter_1 {}

#[doc = include_str!("chapter_2.md")]
pub mod chapter_2 {}

#[doc = include_str!("chapter_3.md")]
pub mod chapter_3 {}

#[doc = include_str!("chapter_4.md")]
pub mod chapter_4 {}
