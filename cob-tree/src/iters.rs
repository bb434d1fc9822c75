//! The public iterators: each wraps the inline path's word iterator (`crate::pma::iter`) or the
//! boxed path's (`crate::boxed::iter`), picked by the map's storage.

use crate::pma::inl::{Inl, Look, LookRange};
use crate::pma::repr::on_repr;
use crate::{CobTree, Repr};
use core::borrow::Borrow;
use core::ops::{RangeBounds, RangeFull};

/// An iterator over the entries of a [`CobTree`] in a range of keys, in key order from
/// either end, yielding copies (clones) `(K, V)`.
///
/// **Weakly consistent**, as `crossbeam_skiplist::SkipMap`'s iterators: it never yields a
/// key that was removed before the iterator reached the key's position, and it yields
/// every key present for the whole iteration exactly once, in order (from both ends, the
/// two meet without overlap). Keys inserted or removed during the iteration may or may not
/// be seen. Not fused, as SkipMap's: after an end returns `None`, a later call at that end
/// looks again past the last key it yielded (and short of the other end's), so it yields
/// keys inserted there since.
///
/// Inline path: it holds no epoch pin and allocates nothing; a long-held one keeps alive
/// the one array it last read, nothing else (see the crate docs, "Memory"). Boxed path: it
/// holds no pin between calls and clones up to 32 entries per pin into a buffer
/// (for references instead of clones, see [`CobTree::pin`]).
pub struct Range<'a, Q: ?Sized, R, K: Ord + 'static, V: 'static>(RangeRepr<'a, Q, R, K, V>);

/// The core's iterator over one inline variant's map.
type Words<'a, Q, R, K, V, const A: usize, const B: usize> =
    crate::pma::iter::Range<'a, Look<Q>, LookRange<R>, Inl<K, A>, Inl<V, B>>;

enum RangeRepr<'a, Q: ?Sized, R, K: Ord + 'static, V: 'static> {
    I11(Words<'a, Q, R, K, V, 1, 1>),
    I12(Words<'a, Q, R, K, V, 1, 2>),
    I21(Words<'a, Q, R, K, V, 2, 1>),
    I22(Words<'a, Q, R, K, V, 2, 2>),
    Boxed(crate::boxed::iter::Range<'a, Q, R, K, V>),
}

impl<'a, Q, R, K, V> Range<'a, Q, R, K, V>
where
    Q: ?Sized + Ord + 'static,
    R: RangeBounds<Q>,
    K: Ord + Clone + Borrow<Q> + 'static,
    V: Clone + 'static,
{
    pub(crate) fn new(t: &'a CobTree<K, V>, range: R) -> Self {
        let range = LookRange(range);
        // The map's variant is `Kind::of::<K, V>()`'s, so this one is too.
        Range(match t.repr() {
            Repr::I11(m) => RangeRepr::I11(crate::pma::iter::Range::new(m, range)),
            Repr::I12(m) => RangeRepr::I12(crate::pma::iter::Range::new(m, range)),
            Repr::I21(m) => RangeRepr::I21(crate::pma::iter::Range::new(m, range)),
            Repr::I22(m) => RangeRepr::I22(crate::pma::iter::Range::new(m, range)),
            Repr::Boxed(b) => RangeRepr::Boxed(crate::boxed::iter::Range::new(b, range.0)),
        })
    }
}

impl<Q, R, K, V> Iterator for Range<'_, Q, R, K, V>
where
    Q: ?Sized + Ord + 'static,
    R: RangeBounds<Q>,
    K: Ord + Clone + Borrow<Q> + 'static,
    V: Clone + 'static,
{
    type Item = (K, V);

    #[inline]
    fn next(&mut self) -> Option<(K, V)> {
        on_repr!(RangeRepr, K, V; &mut self.0;
            r => r.next().map(|(k, v)| (k.get(), v.get()));
            b => b.next())
    }

    #[inline]
    fn fold<B, F: FnMut(B, (K, V)) -> B>(self, init: B, mut f: F) -> B {
        on_repr!(RangeRepr, K, V; self.0;
            r => r.fold(init, |acc, (k, v)| f(acc, (k.get(), v.get())));
            b => b.fold(init, f))
    }
}

impl<Q, R, K, V> DoubleEndedIterator for Range<'_, Q, R, K, V>
where
    Q: ?Sized + Ord + 'static,
    R: RangeBounds<Q>,
    K: Ord + Clone + Borrow<Q> + 'static,
    V: Clone + 'static,
{
    #[inline]
    fn next_back(&mut self) -> Option<(K, V)> {
        on_repr!(RangeRepr, K, V; &mut self.0;
            r => r.next_back().map(|(k, v)| (k.get(), v.get()));
            b => b.next_back())
    }
}

impl<Q: ?Sized, R, K: Ord + 'static, V: 'static> core::fmt::Debug for Range<'_, Q, R, K, V> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Range").finish_non_exhaustive()
    }
}

/// An iterator over all entries of a [`CobTree`], in key order from either end; weakly
/// consistent as [`Range`] is.
pub struct Iter<'a, K: Ord + 'static, V: 'static>(pub(crate) Range<'a, K, RangeFull, K, V>);
/// The keys of a [`CobTree`], in order (see [`Iter`]).
pub struct Keys<'a, K: Ord + 'static, V: 'static>(pub(crate) Iter<'a, K, V>);
/// The values of a [`CobTree`], in key order (see [`Iter`]).
pub struct Values<'a, K: Ord + 'static, V: 'static>(pub(crate) Iter<'a, K, V>);

macro_rules! forward {
    ($t:ident, $item:ty, |$e:ident| $map:expr) => {
        impl<K: Ord + Clone + 'static, V: Clone + 'static> Iterator for $t<'_, K, V> {
            type Item = $item;
            #[inline]
            fn next(&mut self) -> Option<$item> {
                self.0.next().map(|$e| $map)
            }
            #[inline]
            fn fold<B, F: FnMut(B, $item) -> B>(self, init: B, mut f: F) -> B {
                self.0.fold(init, |acc, $e| f(acc, $map))
            }
        }
        impl<K: Ord + Clone + 'static, V: Clone + 'static> DoubleEndedIterator for $t<'_, K, V> {
            #[inline]
            fn next_back(&mut self) -> Option<$item> {
                self.0.next_back().map(|$e| $map)
            }
        }
        impl<K: Ord + 'static, V: 'static> core::fmt::Debug for $t<'_, K, V> {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                f.debug_struct(stringify!($t)).finish_non_exhaustive()
            }
        }
    };
}
forward!(Iter, (K, V), |e| e);
forward!(Keys, K, |e| e.0);
forward!(Values, V, |e| e.1);

/// The entries of a [`CobTree`] by value, in key order from either end
/// (`CobTree::into_iter`). The map was owned, so the count is exact.
pub struct IntoIter<K: Ord + 'static, V: 'static>(IntoRepr<K, V>);

enum IntoRepr<K: Ord + 'static, V: 'static> {
    I11(crate::pma::iter::IntoIter<Inl<K, 1>, Inl<V, 1>>),
    I12(crate::pma::iter::IntoIter<Inl<K, 1>, Inl<V, 2>>),
    I21(crate::pma::iter::IntoIter<Inl<K, 2>, Inl<V, 1>>),
    I22(crate::pma::iter::IntoIter<Inl<K, 2>, Inl<V, 2>>),
    Boxed(std::vec::IntoIter<(K, V)>),
}

impl<K: Ord + Clone + 'static, V: Clone + 'static> IntoIter<K, V> {
    pub(crate) fn new(t: CobTree<K, V>) -> Self {
        let len = t.len();
        use crate::pma::iter::IntoIter as Words;
        IntoIter(match t.into_repr() {
            Repr::I11(mut m) => IntoRepr::I11(Words::new(m.take_array(), len)),
            Repr::I12(mut m) => IntoRepr::I12(Words::new(m.take_array(), len)),
            Repr::I21(mut m) => IntoRepr::I21(Words::new(m.take_array(), len)),
            Repr::I22(mut m) => IntoRepr::I22(Words::new(m.take_array(), len)),
            Repr::Boxed(mut b) => IntoRepr::Boxed(b.drain().into_iter()),
        })
    }
}

impl<K: Ord + 'static, V: 'static> Iterator for IntoIter<K, V> {
    type Item = (K, V);
    fn next(&mut self) -> Option<(K, V)> {
        on_repr!(IntoRepr, K, V; &mut self.0;
            r => r.next().map(|(k, v)| (k.get(), v.get()));
            b => b.next())
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        on_repr!(IntoRepr, K, V; &self.0; r => r.size_hint(); b => b.size_hint())
    }
}

impl<K: Ord + 'static, V: 'static> DoubleEndedIterator for IntoIter<K, V> {
    fn next_back(&mut self) -> Option<(K, V)> {
        on_repr!(IntoRepr, K, V; &mut self.0;
            r => r.next_back().map(|(k, v)| (k.get(), v.get()));
            b => b.next_back())
    }
}

impl<K: Ord + 'static, V: 'static> ExactSizeIterator for IntoIter<K, V> {}
impl<K: Ord + 'static, V: 'static> core::iter::FusedIterator for IntoIter<K, V> {}

impl<K: Ord + 'static, V: 'static> core::fmt::Debug for IntoIter<K, V> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("IntoIter")
            .field("left", &self.size_hint().0)
            .finish_non_exhaustive()
    }
}

/// The keys of a [`CobTree`] by value, in order (`CobTree::into_keys`).
pub struct IntoKeys<K: Ord + 'static, V: 'static>(pub(crate) IntoIter<K, V>);
/// The values of a [`CobTree`] by value, in key order (`CobTree::into_values`).
pub struct IntoValues<K: Ord + 'static, V: 'static>(pub(crate) IntoIter<K, V>);

macro_rules! forward_owned {
    ($t:ident, $item:ty, |$e:ident| $map:expr) => {
        impl<K: Ord + 'static, V: 'static> Iterator for $t<K, V> {
            type Item = $item;
            fn next(&mut self) -> Option<$item> {
                self.0.next().map(|$e| $map)
            }
            fn size_hint(&self) -> (usize, Option<usize>) {
                self.0.size_hint()
            }
        }
        impl<K: Ord + 'static, V: 'static> DoubleEndedIterator for $t<K, V> {
            fn next_back(&mut self) -> Option<$item> {
                self.0.next_back().map(|$e| $map)
            }
        }
        impl<K: Ord + 'static, V: 'static> ExactSizeIterator for $t<K, V> {}
        impl<K: Ord + 'static, V: 'static> core::iter::FusedIterator for $t<K, V> {}
        impl<K: Ord + 'static, V: 'static> core::fmt::Debug for $t<K, V> {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                f.debug_struct(stringify!($t))
                    .field("left", &self.0.size_hint().0)
                    .finish_non_exhaustive()
            }
        }
    };
}
forward_owned!(IntoKeys, K, |e| e.0);
forward_owned!(IntoValues, V, |e| e.1);
