//! The one place this crate names atomics, `UnsafeCell` and locks.
//!
//! Normal builds use `core`/`std` types; `RUSTFLAGS="--cfg loom"` swaps in loom's, so every
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

#[cfg(not(loom))]
pub(crate) use std::sync::{Mutex, MutexGuard};

#[cfg(loom)]
pub(crate) use loom::sync::{Mutex, MutexGuard};

/// Process-wide counters that live in `static`s (loom atomics cannot) and take part in no
/// protocol (heap ids and thread ids only need uniqueness), shape metadata, which is
/// published through the modeled shape pointer or a std mutex, and the heap's allocation
/// meters (statistics the pacing of collections reads; nothing is published through them).
pub(crate) mod unmodeled {
    pub(crate) use core::sync::atomic::{
        AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering,
    };
}

/// Locks a mutex, ignoring poisoning: every critical section of this crate leaves its data
/// consistent before it can panic.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    }
}

/// Backs off while another thread holds something this one needs. `spins` counts the
/// rounds so far (start it at 0): the first 6 rounds spin 1, 2, 4 .. 32 hints, later rounds
/// yield to the scheduler. Under loom every round yields, so the model can switch threads.
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

/// `UnsafeCell` with loom's closure API, so loom can check every access.
#[derive(Debug)]
pub(crate) struct UnsafeCell<T>(
    #[cfg(not(loom))] core::cell::UnsafeCell<T>,
    #[cfg(loom)] loom::cell::UnsafeCell<T>,
);

impl<T> UnsafeCell<T> {
    pub(crate) fn new(v: T) -> Self {
        #[cfg(not(loom))]
        {
            Self(core::cell::UnsafeCell::new(v))
        }
        #[cfg(loom)]
        {
            Self(loom::cell::UnsafeCell::new(v))
        }
    }

    #[inline]
    pub(crate) fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
        #[cfg(not(loom))]
        {
            f(self.0.get())
        }
        #[cfg(loom)]
        {
            self.0.with(f)
        }
    }

    #[inline]
    pub(crate) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
        #[cfg(not(loom))]
        {
            f(self.0.get())
        }
        #[cfg(loom)]
        {
            self.0.with_mut(f)
        }
    }
}
