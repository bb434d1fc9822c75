//! The memlayout benchmark runner as a library: the CLI ([`cli`]), the measurement core
//! ([`measure`]), the counting allocator behind the memory instrument ([`counting`]),
//! the report writer ([`report`]) and the benchmark groups ([`groups`]).
//!
//! The binary (`src/main.rs`) installs [`counting::CountingAlloc`] as its global
//! allocator and calls [`cli::main`].

pub mod callgrind;
pub mod cli;
pub mod counting;
pub mod groups;
pub mod measure;
pub mod plot;
pub mod report;
pub mod seeds;
