//! The one place this crate names atomics and `UnsafeCell`.
//!
//! Two layers:
//! - the crate root items (`AtomicU32`, ..., `UnsafeCell`) are `core`'s normally and loom's
//!   under `RUSTFLAGS="--cfg loom"`; the lock protocol is generic over its word and is
//!   model-checked with them (see `lock.rs`);
//! - [`global`] is always `core`'s: the allocator's process-wide state lives in `static`s,
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

#[cfg(not(loom))]
pub(crate) use global::UnsafeCell;
#[cfg(loom)]
pub(crate) use loom::cell::UnsafeCell;

/// A busy-wait hint (loom: a yield point, so spin loops terminate in the model).
#[inline]
pub(crate) fn spin_hint() {
    #[cfg(not(loom))]
    core::hint::spin_loop();
    #[cfg(loom)]
    loom::thread::yield_now();
}

/// Always `core`'s types, for `static` state (const-constructible).
pub(crate) mod global {
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
