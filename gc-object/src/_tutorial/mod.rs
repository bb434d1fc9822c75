//! A tutorial: a JavaScript-style object in one 128-byte cell.
//!
//! An ordinary object of this crate is exactly one 128-byte slab cell: the fields every
//! object uses sit in the cell, and everything that only some objects need hangs behind
//! one pointer that stays null until it is needed. Each chapter teaches one part of that
//! design, in the same order:
//!
//! 1. the problem;
//! 2. the naive layout, and what it costs;
//! 3. the trick, with a picture of the bytes;
//! 4. the invariants that keep it sound, and how the code enforces them (compile-time
//!    assertions, Miri, loom, counted tests);
//! 5. the measured A/B, with the `bench-suite` command that prints it.
//!
//! # Chapters
//!
//! - [Chapter 1](chapter_1): the 128-byte cell: a 2-byte header, packed tags, 12 inline
//!   property slots.
//! - [Chapter 2](chapter_2): side state: one lazily published pointer for everything
//!   rare.
//! - [Chapter 3](chapter_3): the collector: paced by allocation debt, rooted by handle
//!   scopes in a context.
//! - [Chapter 4](chapter_4): shapes and inline caches: shared hidden classes, and a cache
//!   per access site.
//!
//! Every code block is a doctest: `cargo test --doc -p memlayout-gc-object` runs them, and
//! each one asserts something true about the layout through the public API (sizes, slot
//! counts, allocation counts). They hold for the `wide-object` build too (the "before"
//! layout, [`WIDE_OBJECT`](crate::WIDE_OBJECT)), whose differences they spell out.
//!
//! Each chapter's numbers come with the command that prints them. Instruction counts
//! (valgrind callgrind) repeat exactly and are quoted as the command prints them for this
//! code; times move between runs and are quoted from the dated runs in the crate's
//! `MEASUREMENTS.md`.

#[doc = include_str!("chapter_1.md")]
pub mod chapter_1 {}

#[doc = include_str!("chapter_2.md")]
pub mod chapter_2 {}

#[doc = include_str!("chapter_3.md")]
pub mod chapter_3 {}

#[doc = include_str!("chapter_4.md")]
pub mod chapter_4 {}
