//! `crossbeam_skiplist`'s `SkipMap` and `SkipSet` APIs over [`cob_tree::CobTree`], so that
//! crossbeam-skiplist's own `tests/map.rs` and `tests/set.rs` run against cob-tree
//! unchanged. `ci/compat-cob-tree.sh` builds this folder as a crate named
//! `crossbeam_skiplist`; the tests are fetched by cargo at run time, never committed.

pub mod map;
pub mod set;

pub use map::SkipMap;
pub use set::SkipSet;
