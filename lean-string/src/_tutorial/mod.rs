//! A tutorial: how a string fits in two machine words.
//!
//! `LeanString` is 16 bytes on 64-bit targets (8 on 32-bit), the same as a `&str`, and yet
//! it holds short strings without allocating, shares long ones between clones, wraps a
//! `&'static str` without copying, and offers a NUL-terminated sibling that C code can read
//! in place. Each chapter teaches one of the layout tricks that make this work, in the same
//! order:
//!
//! 1. the problem;
//! 2. the naive layout, and what it costs;
//! 3. the trick, with a picture of the bytes;
//! 4. the invariants that keep it sound, and how the code enforces them (compile-time
//!    assertions, Miri, loom, model tests);
//! 5. the measured A/B, with the `bench-suite` command that prints it.
//!
//! # Chapters
//!
//! - [Chapter 1](chapter_1): the 16-byte small-string optimisation, and the last byte
//!   that tells the forms apart.
//! - [Chapter 2](chapter_2): the 8-byte heap header, and its wide fallback.
//! - [Chapter 3](chapter_3): the static form: a `&'static str` wrapped in O(1).
//! - [Chapter 4](chapter_4): [`LeanCString`](crate::LeanCString), where the NUL
//!   terminator doubles as the tag.
//!
//! Every code block is a doctest: `cargo test --doc -p memlayout-lean-string` runs them,
//! and each one asserts something true about the layout through the public API (sizes,
//! capacities, allocation counts, behaviour). They are written for every target the crate
//! is tested on (64- and 32-bit, little- and big-endian), so sizes are spelled with the
//! public boundary constants such as [`INLINE_CAPACITY`](crate::INLINE_CAPACITY).
//!
//! Each chapter's numbers come with the `bench-suite` command that prints them. They are
//! instruction counts (valgrind callgrind) and byte counts, which repeat exactly from run
//! to run; the crate's `MEASUREMENTS.md` has the full tables of each dated run.

#[doc = include_str!("chapter_1.md")]
pub mod chapter_1 {}

#[doc = include_str!("chapter_2.md")]
pub mod chapter_2 {}

#[doc = include_str!("chapter_3.md")]
pub mod chapter_3 {}

#[doc = include_str!("chapter_4.md")]
pub mod chapter_4 {}
