//! A tutorial: a concurrent ordered map in one array of atomic words.
//!
//! [`CobTree`](crate::CobTree) keeps its keys sorted in a *packed memory array*: a sorted
//! array with gaps, cut into leaves of sixteen cache lines, whose leaves carry their own
//! lock-and-version word. Readers find a key with one index descent and one short scan,
//! never write shared memory and never wait; writers lock one leaf; and the whole array is
//! replaced, when it must grow, under readers that keep reading. Each chapter teaches one
//! part of that design, in the same order:
//!
//! 1. the problem;
//! 2. the naive layout, and what it costs;
//! 3. the trick, with a picture of the words;
//! 4. the invariants that keep it correct, and how the code enforces them (compile-time
//!    assertions, Miri, loom, model tests);
//! 5. the measured A/B, with the `bench-suite` command that prints it.
//!
//! # Chapters
//!
//! - [Chapter 1](chapter_1): the packed memory array: leaves with gaps, density bounds,
//!   the growth sequence and the Eytzinger index.
//! - [Chapter 2](chapter_2): inline marker words: one version word per leaf instead of a
//!   boxed marker per cell.
//! - [Chapter 3](chapter_3): the seqlock reader: validated reads that write nothing.
//! - [Chapter 4](chapter_4): epoch reclamation: replacing the whole array under readers.
//! - [Chapter 5](chapter_5): the general-key path: a B+tree under each shared prefix.
//!
//! Chapters 1-4 describe the *inline* layout, the one `u64 -> u64` and the other plain
//! word types (up to [`MAX_POD_BYTES`](crate::MAX_POD_BYTES) each) use. Other key and value
//! types (`String`, `Vec<u8>`, user structs) take the boxed path, built over the same
//! word core (see [`CobTree::is_inline`](crate::CobTree::is_inline)): chapter 5.
//!
//! Every code block is a doctest: `cargo test --doc -p memlayout-cob-tree` runs them, and
//! each one asserts something true about the layout through the public API (under Miri,
//! which interprets every step, with smaller sizes and the smallest leaves).
//!
//! Each chapter's numbers come with the command that prints them. Instruction counts
//! (valgrind callgrind) repeat exactly and are quoted as the command prints them for this
//! code; times, throughputs and peak memory move between runs and are quoted from the
//! dated runs in the crate's `MEASUREMENTS.md`.

#[doc = include_str!("chapter_1.md")]
pub mod chapter_1 {}

#[doc = include_str!("chapter_2.md")]
pub mod chapter_2 {}

#[doc = include_str!("chapter_3.md")]
pub mod chapter_3 {}

#[doc = include_str!("chapter_4.md")]
pub mod chapter_4 {}

#[doc = include_str!("chapter_5.md")]
pub mod chapter_5 {}
