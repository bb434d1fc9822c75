//! The memlayout benchmark runner as a library: the CLI ([`cli`]), the measurement core
//! ([`measure`]), the counting allocator behind the memory instrument ([`counting`]),
//! the report writer ([`report`], which links each group to its crate's tutorial:
//! [`tutorial`]), the benchmark groups ([`groups`]) and the scaling sweeps ([`scaling`]).
//!
//! The binary (`src/main.rs`) installs [`counting::CountingAlloc`] over
//! [`groups::alloc::select::Selected`] (glibc unless `BENCH_SUITE_ALLOCATOR` names another) as its
//! global allocator and calls [`cli::main`] (or [`groups::alloc::child`] in a child of the `alloc`
//! group).

pub mod advice;
pub mod callgrind;
pub mod cli;
pub mod corpus;
pub mod counting;
pub mod fmt;
pub mod goal;
pub mod groups;
pub mod measure;
pub mod plot;
pub mod provenance;
pub mod report;
pub mod scaling;
pub mod seeds;
pub mod tutorial;
