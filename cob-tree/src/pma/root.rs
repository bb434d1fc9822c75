//! The published array pointer and its reclamation (`unsafe`, like `hint`, `inl` and two
//! unchecked accesses in the leaf search and the leaf view).
//!
//! A [`Root`] owns the current [`Pma`] through an `Arc` whose pointer it publishes in one
//! atomic word. Three ways to reach it:
//!
//! - **Pinless** ([`Root::load_pinless`]): while every array the root has published is
//!   *kept* (each at most [`KEPT_ARRAY_BYTES`], all together at most [`KEPT_TOTAL_BYTES`],
//!   retired into `kept` and freed only when the root drops), no array is ever freed under
//!   a reader, so small maps skip the epoch pin.
//! - **Pinned** ([`Root::load`]): under a `crossbeam-epoch` guard; an array retired by
//!   [`Root::replace`] is dropped by a deferred function after every thread pinned at the
//!   time has unpinned, and [`Root::replace`] flushes it to the collector at once, so
//!   [`collect`] right after the writer unpins frees it (the thread-local bag would
//!   otherwise hold it until 64 more objects are retired).
//! - **Counted** ([`Root::acquire`]): an iterator takes its own `Arc` reference (under a
//!   pin, briefly), so it holds neither a pin nor anything but the one array it reads.
//!
//! Under `cfg(loom)` (where crossbeam-epoch's atomics are not modelled) and `cfg(miri)`
//! (crossbeam-epoch 0.9 casts integers to pointers, which `-Zmiri-strict-provenance`
//! rejects) every retired array is kept until the root drops, which is trivially safe.

use super::Pma;
use crate::sync::unmodeled;
use crate::sync::{AtomicBool, AtomicPtr, Ordering};
use std::sync::Arc;

/// Arrays (leaf lines, not counting the index) of at most this many bytes are *kept*: a
/// retired one is freed only when its map drops, so that while a map has only had kept
/// arrays its reads and writes need no epoch pin (a pin and unpin cost about 70
/// instructions, more than half of what a `get` on a small map costs otherwise). A reader
/// that holds no pin cannot be waited for, so an array published while the map is pinless
/// can never be freed before the drop: what bounds that memory is [`KEPT_TOTAL_BYTES`],
/// the most heap bytes of arrays a map ever publishes while pinless. An array that would pass
/// either bound is published pinned instead, and from then on every retired array goes to
/// the epoch collector. Growing once from empty keeps the doubling steps 1 KiB ..= 128 KiB:
/// 255 KiB of leaf lines plus their indexes, about 260 KiB (`heap_bytes` 266,680 after
/// 20,000 sequential `u64` keys and `clear`); a small map that is shrunk or cleared and
/// refilled over and over stops being pinless once its kept arrays reach the same total,
/// and then holds no more. 128 KiB is an array of 128 narrow `u64 -> u64` leaves: a map
/// of up to about 6,000 such keys.
pub const KEPT_ARRAY_BYTES: usize = 128 << 10;

/// The most heap bytes (leaf lines, index and header, as `heap_bytes` counts them) of the
/// arrays a map publishes while it is pinless, summed over every array it has had, the
/// current one included: the bound on the memory a map keeps until it drops (see
/// [`KEPT_ARRAY_BYTES`]), whatever its history of growth, shrinks and `clear`s. Twice
/// [`KEPT_ARRAY_BYTES`] and a sixteenth for the indexes and headers, so that a map growing
/// from empty keeps its whole doubling sequence up to [`KEPT_ARRAY_BYTES`] pinless (255
/// KiB of leaf lines, 260 KiB in all).
pub const KEPT_TOTAL_BYTES: usize = 2 * KEPT_ARRAY_BYTES + KEPT_ARRAY_BYTES / 8;

/// Keeps every array loaded while it lives from being freed.
#[cfg(not(any(loom, miri)))]
pub(crate) type Guard = crossbeam_epoch::Guard;

/// Under loom/Miri arrays (and the boxed path's nodes, `slab`) are never freed before the
/// map (crossbeam-epoch is not modelled by loom, and casts integers to pointers, which
/// `-Zmiri-strict-provenance` rejects), so a guard protects nothing.
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

/// Runs the deferred frees that are due: a few pin-flush rounds from this thread, each of
/// which may advance the global epoch by one (an array retired at epoch `e` is freed once
/// the epoch reaches `e + 2`). Call it unpinned; threads still pinned in an older epoch
/// hold it back until they unpin.
pub(crate) fn collect() {
    #[cfg(not(any(loom, miri)))]
    for _ in 0..3 {
        crossbeam_epoch::pin().flush();
    }
}

/// An array held by an iterator: borrowed from the map when it is kept, otherwise one
/// `Arc` reference of its own. Either way it reads through one pointer (no branch on the
/// kind in an iterator's per-element path).
pub(crate) struct Held<'a, K, V> {
    /// The array: a kept one of the map (valid for `'a`) or the one `_own` keeps alive.
    ptr: core::ptr::NonNull<Pma<K, V>>,
    _own: Option<Arc<Pma<K, V>>>,
    _map: core::marker::PhantomData<&'a Pma<K, V>>,
}

// SAFETY: a `Held` is a shared reference (`&'a Pma`) or an `Arc<Pma>`, both of which are
// `Send` and `Sync` when `Pma` is `Sync + Send` (it is: all its shared state is atomics).
unsafe impl<K, V> Send for Held<'_, K, V> where Pma<K, V>: Send + Sync {}
// SAFETY: as above.
unsafe impl<K, V> Sync for Held<'_, K, V> where Pma<K, V>: Send + Sync {}

impl<K, V> core::ops::Deref for Held<'_, K, V> {
    type Target = Pma<K, V>;
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn deref(&self) -> &Pma<K, V> {
        // SAFETY: `ptr` is either a kept array of the map, never freed before the map
        // (`Root::load_pinless`), which outlives `'a`, or the allocation of `_own`, which
        // this `Held` keeps alive (moving the `Arc` does not move what it points to); the
        // result borrows `self`, so it cannot outlive either. All shared mutation of a
        // `Pma` goes through atomics, so `&Pma` is sound.
        unsafe { self.ptr.as_ref() }
    }
}
/// Heap bytes of one published array: its lines, its index and its `Arc` allocation.
fn array_bytes<K, V>(p: &Pma<K, V>) -> usize {
    p.heap_bytes() + core::mem::size_of::<Pma<K, V>>() + 2 * core::mem::size_of::<usize>()
}

/// The owning pointer to the current array.
pub(crate) struct Root<K, V> {
    /// `Arc::into_raw` of the current array.
    ptr: AtomicPtr<Pma<K, V>>,
    /// Whether every array published so far is kept (see [`KEPT_ARRAY_BYTES`]). Only ever
    /// goes from true to false, just before the first array that is not kept is published.
    pinless: AtomicBool,
    /// Retired arrays freed only at drop: the kept ones (and under loom/Miri all).
    kept: unmodeled::Mutex<Kept<K, V>>,
}

/// The arrays a root keeps until it drops, and what bounds them.
struct Kept<K, V> {
    /// Retired arrays freed only at drop.
    arrays: Vec<Arc<Pma<K, V>>>,
    /// Heap bytes ([`array_bytes`]) of every array published while pinless, the current
    /// one included (at most [`KEPT_TOTAL_BYTES`]).
    bytes: usize,
}

impl<K: 'static, V: 'static> Root<K, V> {
    pub(crate) fn new(pma: Pma<K, V>) -> Self {
        let pinless = pma.lines_bytes() <= KEPT_ARRAY_BYTES;
        let bytes = if pinless { array_bytes(&pma) } else { 0 };
        Root {
            ptr: AtomicPtr::new(Arc::into_raw(Arc::new(pma)).cast_mut()),
            pinless: AtomicBool::new(pinless),
            kept: unmodeled::Mutex::new(Kept {
                arrays: Vec::new(),
                bytes,
            }),
        }
    }

    /// The current array if the map has only ever had kept arrays: valid for as long as
    /// `self`, with no pin.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub(crate) fn load_pinless(&self) -> Option<&Pma<K, V>> {
        let p = self.ptr.load(Ordering::SeqCst);
        if !self.pinless.load(Ordering::SeqCst) {
            return None;
        }
        // SAFETY: (1) `p` came from `Arc::into_raw` in `new` or `replace` and is never null.
        // (2) It is kept, i.e. freed only when `self` drops: `replace` clears `pinless`
        // (SeqCst) before it publishes (SeqCst) the first array that is not kept; both loads
        // above are SeqCst, the pointer load first, and the flag load saw `true`, so in the
        // single total order of SeqCst operations the pointer load precedes the clearing and
        // hence every publication of an array that is not kept: `p` is a kept array.
        // (3) All shared mutation of a `Pma` goes through atomics, so `&Pma` is sound.
        Some(unsafe { &*p })
    }

    /// The current array, valid for as long as `guard` is pinned and the root lives.
    #[inline]
    pub(crate) fn load<'g>(&'g self, _guard: &'g Guard) -> &'g Pma<K, V> {
        let p = self.ptr.load(Ordering::SeqCst);
        // SAFETY: (1) as in `load_pinless`. (2) An array is freed only after `replace`
        // unlinked it, and then by dropping its last `Arc`: the root's reference is dropped
        // in a function deferred on an epoch guard (or at `Root::drop`, or never before it
        // when kept), so it stays allocated while any thread that loaded it before the
        // unlink is still pinned and while `self` is not dropped; `_guard` is such a pin,
        // and the returned lifetime is bounded by both it and `&self`. (3) as above.
        unsafe { &*p }
    }

    /// The current array as an iterator holds it: borrowed when kept, else counted.
    pub(crate) fn acquire(&self) -> Held<'_, K, V> {
        if let Some(p) = self.load_pinless() {
            return Held {
                ptr: core::ptr::NonNull::from(p),
                _own: None,
                _map: core::marker::PhantomData,
            };
        }
        let guard = pin();
        let p = self.ptr.load(Ordering::SeqCst);
        // SAFETY: `p` came from `Arc::into_raw` and, by the argument in `load`, the root's
        // own reference to it is not dropped while `guard` is pinned, so the count is at
        // least one here: taking a second reference is sound.
        unsafe { Arc::increment_strong_count(p) };
        // SAFETY: the reference just taken is this `Arc`'s, from the same `into_raw` pointer.
        let held = unsafe { Arc::from_raw(p) };
        drop(guard);
        Held {
            ptr: core::ptr::NonNull::from(&*held),
            _own: Some(held),
            _map: core::marker::PhantomData,
        }
    }

    /// Whether `p` is the current array (a frozen array stops being current at publish).
    #[inline]
    pub(crate) fn is_current(&self, p: &Pma<K, V>) -> bool {
        core::ptr::eq(self.ptr.load(Ordering::SeqCst), p)
    }

    /// Publishes `new` and retires the current array.
    ///
    /// Callers hold the map's structure lock (so no two `replace` race) and have frozen every
    /// leaf of the old array, so writers that reach it fail to lock and reload the root.
    /// A retired array that is not kept is handed to the collector at once (then the
    /// result is true, and the caller runs [`collect`] once it has unpinned). `guard`: the
    /// caller's pin, if it has one (a map that has only had kept arrays needs none).
    pub(crate) fn replace(&self, new: Pma<K, V>, guard: Option<&Guard>) -> bool {
        let pinless = self.pinless.load(Ordering::Relaxed);
        // Kept only while the map's pinless total stays within `KEPT_TOTAL_BYTES`. The
        // lock is not held across the publication below (it is not modelled by loom); no
        // other `replace` runs meanwhile (the caller holds the structure lock).
        let kept_new = pinless && {
            let mut kept = unmodeled::lock(&self.kept);
            let bytes = kept.bytes + array_bytes(&new);
            let fits = new.lines_bytes() <= KEPT_ARRAY_BYTES && bytes <= KEPT_TOTAL_BYTES;
            if fits {
                kept.bytes = bytes;
            }
            fits
        };
        if pinless && !kept_new {
            self.pinless.store(false, Ordering::SeqCst);
        }
        let new = Arc::into_raw(Arc::new(new)).cast_mut();
        let old = self.ptr.swap(new, Ordering::SeqCst);
        // SAFETY: `old` came from `Arc::into_raw` and was the root's reference, which the
        // swap just unlinked; only this call (the unlinking one) takes it back.
        let old = unsafe { Arc::from_raw(old) };
        if pinless || cfg!(any(loom, miri)) {
            // Published while pinless: readers may hold it unpinned. Freed at drop.
            unmodeled::lock(&self.kept).arrays.push(old);
            return false;
        }
        #[cfg(not(any(loom, miri)))]
        {
            let own;
            let guard = match guard {
                Some(g) => g,
                None => {
                    own = pin();
                    &own
                }
            };
            // Threads pinned now may still read `old`; the collector drops this reference
            // after all of them unpin. `flush` moves it to the global queue right away.
            guard.defer(move || drop(old));
            guard.flush();
        }
        #[cfg(any(loom, miri))]
        let _ = guard;
        true
    }

    /// Publishes `new` and returns the current array (the caller owns the map exclusively).
    pub(crate) fn swap_out(&mut self, new: Pma<K, V>) -> Arc<Pma<K, V>> {
        let new = Arc::into_raw(Arc::new(new)).cast_mut();
        let old = self.ptr.swap(new, Ordering::SeqCst);
        // SAFETY: `old` came from `Arc::into_raw` and was the root's reference, unlinked by
        // the swap; `&mut self` means no reader holds it without a reference of its own.
        unsafe { Arc::from_raw(old) }
    }

    /// Bytes this root holds on the heap: its current and kept arrays (an array an iterator
    /// still holds, or one waiting for the collector, is not counted).
    pub(crate) fn heap_bytes(&self, guard: &Guard) -> usize {
        let kept = unmodeled::lock(&self.kept);
        let arrays = core::iter::once(self.load(guard)).chain(kept.arrays.iter().map(|a| &**a));
        arrays.map(array_bytes).sum::<usize>()
            + kept.arrays.capacity() * core::mem::size_of::<Arc<Pma<K, V>>>()
    }
}

impl<K, V> Drop for Root<K, V> {
    fn drop(&mut self) {
        let p = self.ptr.load(Ordering::Relaxed);
        // SAFETY: `&mut self` means no thread holds a reference into the map any more but
        // iterators' own `Arc`s; `p` is the root's reference from `Arc::into_raw`, which was
        // never handed to the collector.
        drop(unsafe { Arc::from_raw(p) });
    }
}
