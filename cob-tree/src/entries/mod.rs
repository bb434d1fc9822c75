//! The boxed path's store: the entries of maps whose keys or values are not plain words,
//! with the word core ([`crate::pma`]) as their index. The module holding the boxed path's
//! `unsafe`: [`slab`] (a pool of type-stable cells of epoch-reclaimed nodes: one entry, or a
//! tree's root), [`tree`] (the bounded B+trees of the entries that share a prefix) and
//! [`buckets`] (reaching a bucket through the cell number the core holds). Everything above
//! it (`crate::boxed`) is safe code.

pub(crate) mod buckets;
pub(crate) mod slab;
pub(crate) mod tree;
