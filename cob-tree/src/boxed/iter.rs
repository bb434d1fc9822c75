//! The boxed path's iterator: the core's (weakly consistent) iterator over prefixes, each
//! bucket copied out (cloned) under its read lock as the iterator reaches it.
//!
//! Every key present for the whole iteration is yielded once, in order: its prefix is in
//! the index throughout, so the core yields that prefix once, and the bucket read then
//! holds the key. A bucket whose slot now holds another prefix (its own was removed after
//! the core yielded it) is skipped. The two ends take different prefixes from the one core
//! iterator, so they never overlap.

use super::{BoxMap, in_bounds, prefix};
use crate::pma::inl::Inl;
use core::borrow::Borrow;
use core::cmp::Ordering as Cmp;
use core::ops::{Bound, RangeBounds};
use std::collections::VecDeque;

type Prefixes<'a> = crate::iter::Range<
    'a,
    Inl<u64, 1>,
    (Bound<Inl<u64, 1>>, Bound<Inl<u64, 1>>),
    Inl<u64, 1>,
    Inl<u64, 1>,
>;

pub(crate) struct Range<'a, Q: ?Sized, R, K, V> {
    map: &'a BoxMap<K, V>,
    prefixes: Prefixes<'a>,
    range: R,
    front: VecDeque<(K, V)>,
    back: VecDeque<(K, V)>,
    _q: core::marker::PhantomData<fn(&Q)>,
}

impl<'a, Q, R, K, V> Range<'a, Q, R, K, V>
where
    Q: ?Sized + Ord + 'static,
    R: RangeBounds<Q>,
    K: Ord + Clone + Borrow<Q> + 'static,
    V: Clone + 'static,
{
    pub(crate) fn new(map: &'a BoxMap<K, V>, range: R) -> Self {
        // Keys in the range have prefixes between the bounds' prefixes (both included:
        // prefixes only say `<=`).
        let lo = match range.start_bound() {
            Bound::Included(q) | Bound::Excluded(q) => {
                Bound::Included(Inl::new(prefix::of::<K, Q>(q)))
            }
            Bound::Unbounded => Bound::Unbounded,
        };
        let hi = match range.end_bound() {
            Bound::Included(q) | Bound::Excluded(q) => {
                Bound::Included(Inl::new(prefix::of::<K, Q>(q)))
            }
            Bound::Unbounded => Bound::Unbounded,
        };
        Range {
            map,
            prefixes: crate::iter::Range::new(&map.index, (lo, hi)),
            range,
            front: VecDeque::new(),
            back: VecDeque::new(),
            _q: core::marker::PhantomData,
        }
    }

    /// Copies bucket `s` of prefix `p` (its entries in the range) into `buf`.
    fn fill(map: &BoxMap<K, V>, range: &R, p: u64, s: u64, buf: &mut VecDeque<(K, V)>) {
        let b = map.slab.read(s);
        if b.prefix != Some(p) {
            return;
        }
        buf.extend(
            b.entries
                .iter()
                .filter(|(k, _)| in_bounds(k, range) == Cmp::Equal)
                .cloned(),
        );
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

    fn next(&mut self) -> Option<(K, V)> {
        loop {
            if let Some(e) = self.front.pop_front() {
                return Some(e);
            }
            match self.prefixes.next() {
                Some((p, s)) => {
                    Self::fill(self.map, &self.range, p.get(), s.get(), &mut self.front)
                }
                None => return self.back.pop_front(),
            }
        }
    }
}

impl<Q, R, K, V> DoubleEndedIterator for Range<'_, Q, R, K, V>
where
    Q: ?Sized + Ord + 'static,
    R: RangeBounds<Q>,
    K: Ord + Clone + Borrow<Q> + 'static,
    V: Clone + 'static,
{
    fn next_back(&mut self) -> Option<(K, V)> {
        loop {
            if let Some(e) = self.back.pop_back() {
                return Some(e);
            }
            match self.prefixes.next_back() {
                Some((p, s)) => Self::fill(self.map, &self.range, p.get(), s.get(), &mut self.back),
                None => return self.front.pop_back(),
            }
        }
    }
}
