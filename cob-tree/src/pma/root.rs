//! The published array pointer and its reclamation: the only `unsafe` of the crate.
//!
//! A [`Root`] owns one heap [`Pma`] at a time. Readers and writers reach it through
//! [`Root::load`] while pinned with a [`Guard`]; a resize publishes a new array with
//! [`Root::replace`] and hands the old one to `crossbeam-epoch`, which frees it once every
//! thread that could still hold a reference has unpinned. Under `cfg(loom)` (where
//! crossbeam-epoch's atomics are not modelled) and `cfg(miri)` (crossbeam-epoch 0.9 casts
//! integers to pointers, which `-Zmiri-strict-provenance` rejects) retired arrays are
//! instead kept until the `Root` is dropped, which is trivially safe.

use super::Pma;
use crate::sync::{AtomicPtr, Ordering};
use core::ptr::NonNull;

/// Keeps every array loaded while it lives from being freed.
#[cfg(not(any(loom, miri)))]
pub(crate) type Guard = crossbeam_epoch::Guard;

/// Under loom/Miri arrays are never freed before the map, so a guard protects nothing.
#[cfg(any(loom, miri))]
#[derive(Debug)]
pub(crate) struct Guard(());

/// Pins the current thread (cheap when it is already pinned).
#[inline]
pub(crate) fn pin() -> Guard {
    #[cfg(not(any(loom, miri)))]
    {
        crossbeam_epoch::pin()
    }
    #[cfg(any(loom, miri))]
    {
        Guard(())
    }
}

/// Lets the epoch advance past `guard` (when it is the thread's only guard) while keeping
/// the thread pinned: long iterations call this between leaves.
#[inline]
pub(crate) fn repin(guard: &mut Guard) {
    #[cfg(not(any(loom, miri)))]
    guard.repin();
    #[cfg(any(loom, miri))]
    let _ = guard;
}

/// The owning pointer to the current array.
pub(crate) struct Root<K, V> {
    ptr: AtomicPtr<Pma<K, V>>,
    #[cfg(any(loom, miri))]
    retired: std::sync::Mutex<Vec<Retired<K, V>>>,
}

/// An unlinked array kept alive until the map is dropped (loom and Miri builds only).
#[cfg(any(loom, miri))]
struct Retired<K, V>(NonNull<Pma<K, V>>);

// SAFETY: a `Retired` is only dereferenced (freed) by `Root::drop`, which has `&mut` access
// to the whole map; the `Pma` itself holds nothing but atomics and plain integers.
#[cfg(any(loom, miri))]
unsafe impl<K, V> Send for Retired<K, V> {}

impl<K, V> Root<K, V> {
    pub(crate) fn new(pma: Pma<K, V>) -> Self {
        Root {
            ptr: AtomicPtr::new(Box::into_raw(Box::new(pma))),
            #[cfg(any(loom, miri))]
            retired: std::sync::Mutex::new(Vec::new()),
        }
    }

    /// The current array, valid for as long as `guard` is pinned and the root lives (the
    /// lifetime ties both: `drop` frees the current array whatever the pins).
    #[inline]
    pub(crate) fn load<'g>(&'g self, _guard: &'g Guard) -> &'g Pma<K, V> {
        let p = self.ptr.load(Ordering::Acquire);
        // SAFETY: (1) `p` came from `Box::into_raw` in `new` or `replace` and is never null.
        // (2) An array is freed only after `replace` unlinked it, and then only through
        // `defer_unchecked` on an epoch guard (or at `Root::drop` under loom / for the
        // current one), so it stays allocated while any thread that loaded it before the
        // unlink is still pinned and while `self` is not dropped; `_guard` is such a pin,
        // and the returned lifetime is bounded by both it and `&self`.
        // (3) All shared mutation of a `Pma` goes through atomics, so `&Pma` is sound.
        unsafe { &*p }
    }

    /// Publishes `new` and retires the current array.
    ///
    /// Callers hold the map's structure lock (so no two `replace` race) and keep every leaf
    /// of the old array locked forever, so late writers and readers of the old array fail
    /// their version checks and reload the root.
    pub(crate) fn replace(&self, new: Pma<K, V>, guard: &Guard) {
        let new = Box::into_raw(Box::new(new));
        let old = self.ptr.swap(new, Ordering::AcqRel);
        let old = NonNull::new(old).expect("root pointer is never null");
        #[cfg(not(any(loom, miri)))]
        {
            let old = old.as_ptr();
            let free = move || {
                // SAFETY: `old` came from `Box::into_raw` and this closure runs once.
                drop(unsafe { Box::from_raw(old) })
            };
            // SAFETY: `old` is unlinked by the swap above, so only threads pinned now can
            // still reach it; the deferred drop runs after all of them unpin, and only the
            // unlinking swap defers it, so it is freed exactly once.
            unsafe { guard.defer_unchecked(free) };
        }
        #[cfg(any(loom, miri))]
        {
            let _ = guard;
            crate::sync::lock_std(&self.retired).push(Retired(old));
        }
    }
}

impl<K, V> Drop for Root<K, V> {
    fn drop(&mut self) {
        let p = self.ptr.load(Ordering::Relaxed);
        // SAFETY: `&mut self` means no thread holds a reference into the map any more; the
        // current array was made by `Box::into_raw` and was never handed to the collector.
        drop(unsafe { Box::from_raw(p) });
        #[cfg(any(loom, miri))]
        for r in crate::sync::lock_std(&self.retired).drain(..) {
            // SAFETY: as above; retired arrays under loom/Miri are freed only here, once each.
            drop(unsafe { Box::from_raw(r.0.as_ptr()) });
        }
    }
}
