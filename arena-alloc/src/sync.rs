//! The one place this crate names atomics and `UnsafeCell`.
//!
//! Two layers:
//! - the crate root items (`AtomicU32`, ..., `UnsafeCell`) are `core`'s normally and loom's
//!   under `RUSTFLAGS="--cfg loom"`; the lock protocol is generic over its word and is
//!   model-checked with them (see `lock.rs`);
//! - [`unmodeled`] is always `core`'s: the allocator's process-wide state lives in `static`s,
//!   which need `const` constructors that loom's types do not have.
//!
//! No other file may import `core::sync::atomic` or `core::cell::UnsafeCell` directly.
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
pub(crate) use loom::cell::UnsafeCell;
#[cfg(not(loom))]
pub(crate) use unmodeled::UnsafeCell;

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

/// Always `core`'s types, for `static` state (const-constructible).
pub(crate) mod unmodeled {
    pub(crate) use core::sync::atomic::{
        AtomicBool, AtomicIsize, AtomicPtr, AtomicU8, AtomicU32, AtomicU64, AtomicUsize, Ordering,
    };

    /// `core::cell::UnsafeCell` with loom's `with`/`with_mut` shape plus a raw `get`.
    #[derive(Debug)]
    #[repr(transparent)]
    pub(crate) struct UnsafeCell<T>(core::cell::UnsafeCell<T>);

    impl<T> UnsafeCell<T> {
        pub(crate) const fn new(value: T) -> Self {
            Self(core::cell::UnsafeCell::new(value))
        }
        pub(crate) fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
            f(self.0.get())
        }
        pub(crate) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
            f(self.0.get())
        }
        pub(crate) const fn get(&self) -> *mut T {
            self.0.get()
        }
    }
}
