//! The borrowing view [`Pinned`] (`CobTree::pin`): reads that hand out references into
//! the map instead of clones, valid while the view lives.
//!
//! On the boxed path a view holds an epoch pin: entries are immutable nodes that are freed
//! only after every pin taken before their removal is gone, so a reference stays valid for
//! the view's lifetime even if the key is removed or overwritten meanwhile (it then shows
//! the entry as it was). On the inline path keys and values are words that writers change
//! in place, so the view hands out copies (the same [`Entry`] type).

use crate::boxed::iter::Walk;
use crate::iters::Range;
use crate::pma::{Guard, pin};
use crate::{CobTree, Repr};
use core::borrow::Borrow;
use core::ops::{RangeBounds, RangeFull};

/// A borrowing view of a [`CobTree`] (see [`CobTree::pin`]).
///
/// While it lives, no entry removed or replaced after it was made is freed (on the boxed
/// path, nor is anything retired by any other epoch-based structure of the process): keep
/// it short-lived, as a `crossbeam_epoch::Guard`.
pub struct Pinned<'m, K: Ord + 'static, V: 'static> {
    map: &'m CobTree<K, V>,
    guard: Guard,
}

/// One entry read through a [`Pinned`] view: a reference into the map (boxed path) or a
/// copy (inline path).
pub struct Entry<'g, K, V>(Inner<'g, K, V>);

enum Inner<'g, K, V> {
    Ref(&'g (K, V)),
    Own((K, V)),
}

impl<'g, K, V> Entry<'g, K, V> {
    /// The key.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn key(&self) -> &K {
        match &self.0 {
            Inner::Ref(e) => &e.0,
            Inner::Own(e) => &e.0,
        }
    }

    /// The value.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn value(&self) -> &V {
        match &self.0 {
            Inner::Ref(e) => &e.1,
            Inner::Own(e) => &e.1,
        }
    }

    /// The key and the value, by reference.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn pair(&self) -> (&K, &V) {
        (self.key(), self.value())
    }
}

impl<K: core::fmt::Debug, V: core::fmt::Debug> core::fmt::Debug for Entry<'_, K, V> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_tuple("Entry")
            .field(self.key())
            .field(self.value())
            .finish()
    }
}

impl<K: Ord + Clone + 'static, V: Clone + 'static> CobTree<K, V> {
    /// A borrowing view: its `get`, `iter` and `range` hand out [`Entry`]s that borrow
    /// the map (no clone of the key or value on the boxed path; copies on the inline path).
    /// Iteration is weakly consistent, as [`Range`]'s.
    pub fn pin(&self) -> Pinned<'_, K, V> {
        Pinned {
            map: self,
            guard: pin(),
        }
    }
}

impl<'m, K: Ord + Clone + 'static, V: Clone + 'static> Pinned<'m, K, V> {
    /// The entry of `k`.
    #[inline]
    pub fn get<Q: ?Sized + Ord + 'static>(&self, k: &Q) -> Option<Entry<'_, K, V>>
    where
        K: Borrow<Q>,
    {
        match self.map.repr() {
            Repr::Boxed(b) => b.get_in(k, &self.guard).map(|e| Entry(Inner::Ref(e))),
            _ => self.map.get_key_value(k).map(|e| Entry(Inner::Own(e))),
        }
    }

    /// The entries with keys in `range`, in key order from either end.
    ///
    /// # Panics
    /// As [`CobTree::range`].
    pub fn range<Q, R>(&self, range: R) -> PinnedRange<'_, Q, R, K, V>
    where
        Q: ?Sized + Ord + 'static,
        R: RangeBounds<Q>,
        K: Borrow<Q>,
    {
        crate::check_range(&range);
        PinnedRange(match self.map.repr() {
            Repr::Boxed(b) => Walks::Boxed(Walk::new(b, range, &self.guard)),
            _ => Walks::Copies(Range::new(self.map, range)),
        })
    }

    /// All entries in key order from either end.
    pub fn iter(&self) -> PinnedRange<'_, K, RangeFull, K, V> {
        self.range(..)
    }
}

impl<K: Ord + 'static, V: 'static> core::fmt::Debug for Pinned<'_, K, V> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Pinned").finish_non_exhaustive()
    }
}

/// The entries of a [`Pinned`] view in a range of keys, in key order from either end
/// (weakly consistent, as [`Range`]).
pub struct PinnedRange<'g, Q: ?Sized, R, K: Ord + 'static, V: 'static>(Walks<'g, Q, R, K, V>);

// The boxed walk holds its tree cursors' paths inline: boxing it would cost an allocation
// per iteration.
#[allow(clippy::large_enum_variant)]
enum Walks<'g, Q: ?Sized, R, K: Ord + 'static, V: 'static> {
    Boxed(Walk<'g, Q, R, K, V>),
    Copies(Range<'g, Q, R, K, V>),
}

impl<'g, Q, R, K, V> Iterator for PinnedRange<'g, Q, R, K, V>
where
    Q: ?Sized + Ord + 'static,
    R: RangeBounds<Q>,
    K: Ord + Clone + Borrow<Q> + 'static,
    V: Clone + 'static,
{
    type Item = Entry<'g, K, V>;

    #[inline]
    fn next(&mut self) -> Option<Entry<'g, K, V>> {
        match &mut self.0 {
            Walks::Boxed(w) => w.next().map(|e| Entry(Inner::Ref(e))),
            Walks::Copies(r) => r.next().map(|e| Entry(Inner::Own(e))),
        }
    }

    /// The walks' own internal iteration (the boxed one walks the core's runs in a tight
    /// loop).
    #[inline]
    fn fold<B, F: FnMut(B, Entry<'g, K, V>) -> B>(self, init: B, mut f: F) -> B {
        match self.0 {
            Walks::Boxed(w) => w.fold(init, |a, e| f(a, Entry(Inner::Ref(e)))),
            Walks::Copies(r) => r.fold(init, |a, e| f(a, Entry(Inner::Own(e)))),
        }
    }
}

impl<'g, Q, R, K, V> DoubleEndedIterator for PinnedRange<'g, Q, R, K, V>
where
    Q: ?Sized + Ord + 'static,
    R: RangeBounds<Q>,
    K: Ord + Clone + Borrow<Q> + 'static,
    V: Clone + 'static,
{
    fn next_back(&mut self) -> Option<Entry<'g, K, V>> {
        match &mut self.0 {
            Walks::Boxed(w) => w.next_back().map(|e| Entry(Inner::Ref(e))),
            Walks::Copies(r) => r.next_back().map(|e| Entry(Inner::Own(e))),
        }
    }
}

impl<Q: ?Sized, R, K: Ord + 'static, V: 'static> core::fmt::Debug for PinnedRange<'_, Q, R, K, V> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("PinnedRange").finish_non_exhaustive()
    }
}
