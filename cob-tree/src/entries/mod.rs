//! The boxed path's store: the entries of maps whose keys or values are not plain words,
//! and the word core ([`crate::pma`]) as their index. The module holding the boxed path's
//! `unsafe`: [`slab`] (a pool of type-stable cells of epoch-reclaimed nodes) and
//! [`buckets`] (reading a node through the cell number the core holds). Everything above
//! it (`crate::boxed`) is safe code.

pub(crate) mod buckets;
pub(crate) mod slab;
