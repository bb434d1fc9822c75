//! The one place this crate names atomics, locks and spin hints.
//!
//! Normal builds use `core`/`std`'s types; `RUSTFLAGS="--cfg loom"` swaps in loom's, so every
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

#[cfg(loom)]
pub(crate) use loom::sync::{Mutex, MutexGuard};
#[cfg(not(loom))]
pub(crate) use std::sync::{Mutex, MutexGuard};

/// Backs off while another thread holds something we need: a few spin hints first, then
/// yielding to the scheduler (under loom: always yield, so the model can switch threads).
#[inline]
pub(crate) fn spin_wait(spins: &mut u32) {
    #[cfg(loom)]
    {
        let _ = spins;
        loom::thread::yield_now();
    }
    #[cfg(not(loom))]
    {
        if *spins < 6 {
            for _ in 0..(1u32 << *spins) {
                core::hint::spin_loop();
            }
            *spins += 1;
        } else {
            std::thread::yield_now();
        }
    }
}

/// Locks a mutex, ignoring poisoning: every structure change it guards is completed or not
/// started before any code that can panic, so a poisoned lock guards consistent data.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(poisoned) => poisoned.into_inner(),
    }
}

/// Locks a `std` mutex that is never held across a loom scheduling point (bookkeeping only).
/// What loom never models: locks whose holders never race a modeled atomic (bookkeeping
/// taken with no other lock held). Always `std`'s types, under loom too.
pub(crate) mod unmodeled {
    pub(crate) use std::sync::{Mutex, MutexGuard};

    /// Locks `m`; a poisoned lock is taken anyway (its data stays consistent: no holder
    /// panics between two writes that must go together).
    pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
        match m.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        }
    }
}
