//! The one place this crate names atomics and `UnsafeCell`.
//!
//! Normal builds use `core`'s types; `RUSTFLAGS="--cfg loom"` swaps in loom's, so every
//! atomic protocol of the crate can be model-checked. No other file may import
//! `core::sync::atomic` directly.
#![allow(unused_imports, dead_code)]

#[cfg(not(loom))]
pub(crate) use core::sync::atomic::{
    AtomicBool, AtomicPtr, AtomicU8, AtomicU16, AtomicU32, AtomicU64, AtomicUsize, Ordering, fence,
};
#[cfg(loom)]
pub(crate) use loom::sync::atomic::{
    AtomicBool, AtomicPtr, AtomicU8, AtomicU16, AtomicU32, AtomicU64, AtomicUsize, Ordering, fence,
};
