//! The boxed path's iterators over the core's (weakly consistent) iterator of prefixes:
//! [`Walk`] borrows each bucket's entries under an epoch guard (no lock, no clone), and
//! [`Range`] copies (clones) them out, a batch of buckets per pin.
//!
//! Every key present for the whole iteration is yielded once, in order: its prefix is in
//! the index throughout, so the core yields that prefix once, with the cell of a node
//! that was current during that call (it holds the key). The two ends take different
//! prefixes from the one core iterator, so they never overlap. Only the buckets of the bounds' prefixes can hold keys
//! outside the range; they are cut to the range by binary search.

use super::{BoxMap, in_bounds};
use crate::entries::buckets::Cursor;
use crate::entries::slab::Node;
use crate::pma::{Guard, pin};
use core::borrow::Borrow;
use core::cmp::Ordering as Cmp;
use core::ops::{Bound, RangeBounds};
use std::collections::VecDeque;

/// Buckets copied per pin by [`Range`].
const BATCH: usize = 32;

/// What both iterators share: the prefixes and how to read a bucket.
struct Walker<'a, Q: ?Sized, R, K, V> {
    /// For the prefixes of the nodes' keys.
    map: &'a BoxMap<K, V>,
    prefixes: Cursor<'a, K, V>,
    cut: Cut<'a, Q, R, K, V>,
}

/// What [`Cut`] borrows and reads, for its variance only.
type Bounds<'a, Q, K, V> = fn(&'a Q, &'a (K, V));

/// How a walker reads a bucket: the range and its bounds' prefixes.
struct Cut<'a, Q: ?Sized, R, K, V> {
    range: R,
    /// The prefixes of the bounds: only their buckets need cutting to the range.
    lo: Option<u64>,
    hi: Option<u64>,
    _q: core::marker::PhantomData<Bounds<'a, Q, K, V>>,
}

impl<'a, Q, R, K, V> Cut<'a, Q, R, K, V>
where
    Q: ?Sized + Ord + 'static,
    R: RangeBounds<Q>,
    K: Ord + Clone + Borrow<Q> + 'static,
    V: Clone + 'static,
{
    /// The entries in the range of node `n` of prefix `p` (`None`: none).
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn entries<'g>(&self, p: u64, n: &'g Node<K, V>) -> Option<&'g [(K, V)]> {
        let mut e = n.entries();
        if Some(p) == self.lo || Some(p) == self.hi {
            let a = e.partition_point(|(k, _)| in_bounds(k, &self.range) == Cmp::Less);
            let b = e.partition_point(|(k, _)| in_bounds(k, &self.range) != Cmp::Greater);
            e = &e[a..b.max(a)];
        }
        (!e.is_empty()).then_some(e)
    }
}

impl<'a, Q, R, K, V> Walker<'a, Q, R, K, V>
where
    Q: ?Sized + Ord + 'static,
    R: RangeBounds<Q>,
    K: Ord + Clone + Borrow<Q> + 'static,
    V: Clone + 'static,
{
    fn new(map: &'a BoxMap<K, V>, range: R) -> Self {
        // Keys in the range have prefixes between the bounds' prefixes (both included:
        // prefixes only say `<=`).
        let lo = match range.start_bound() {
            Bound::Included(q) | Bound::Excluded(q) => Some(map.prefix_of(q)),
            Bound::Unbounded => None,
        };
        let hi = match range.end_bound() {
            Bound::Included(q) | Bound::Excluded(q) => Some(map.prefix_of(q)),
            Bound::Unbounded => None,
        };
        let b = |p: Option<u64>| p.map_or(Bound::Unbounded, Bound::Included);
        Walker {
            map,
            prefixes: map.buckets.cursor((b(lo), b(hi))),
            cut: Cut {
                range,
                lo,
                hi,
                _q: core::marker::PhantomData,
            },
        }
    }

    /// The entries in the range of the next bucket from the front; `None` at the end.
    /// Forced inline: it is the per-bucket step of the view's `next` (an out-of-line
    /// call here cost `take(n)`, which goes through `next`, about a third more
    /// instructions per element).
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn front_bucket<'g>(&mut self, g: &'g Guard) -> Option<&'g [(K, V)]>
    where
        'a: 'g,
    {
        loop {
            let (p, n) = self.prefixes.next(false, g)?;
            // The usual one-entry bucket away from the bounds: its entry, no slice made.
            if let Some(one) = n.single()
                && Some(p) != self.cut.lo
                && Some(p) != self.cut.hi
            {
                return Some(core::slice::from_ref(one));
            }
            if let Some(e) = self.cut.entries(p, n) {
                return Some(e);
            }
        }
    }

    /// The entries in the range of the next bucket from the front (`back`: from the back);
    /// `None` at the end.
    #[inline]
    fn bucket<'g>(&mut self, back: bool, g: &'g Guard) -> Option<&'g [(K, V)]>
    where
        'a: 'g,
    {
        if !back {
            return self.front_bucket(g);
        }
        loop {
            let (p, n) = self.prefixes.next(true, g)?;
            if let Some(e) = self.cut.entries(p, n) {
                return Some(e);
            }
        }
    }

    /// Feeds every entry left between the two ends to `f`, in order: the core's internal
    /// iteration of the prefixes (a tight loop over each leaf's run, every prefix validated
    /// as `next` validates it), each bucket read as [`Self::bucket`] reads it.
    #[inline]
    fn fold<'g, B>(self, g: &'g Guard, init: B, mut f: impl FnMut(B, &'g (K, V)) -> B) -> B
    where
        'a: 'g,
    {
        let Walker { map, prefixes, cut } = self;
        if cut.lo.is_none() && cut.hi.is_none() {
            // No bucket to cut (the whole map): a node's entries are never empty.
            return prefixes.fold(g, init, f, |n| map.prefix_of::<K>(&n.entries()[0].0));
        }
        prefixes.fold_with_prefix(g, init, |acc, p, n| match cut.entries(p, n) {
            Some(e) => feed(e, acc, &mut f),
            None => acc,
        })
    }
}

/// `f` of every entry of `e`, in order; a one-entry bucket (the usual case) without a loop.
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
fn feed<'g, K, V, B>(e: &'g [(K, V)], acc: B, f: &mut impl FnMut(B, &'g (K, V)) -> B) -> B {
    match e {
        [one] => f(acc, one),
        _ => e.iter().fold(acc, f),
    }
}

/// The borrowing iterator: entries by reference, valid while the guard lives.
pub(crate) struct Walk<'g, Q: ?Sized, R, K, V> {
    walker: Walker<'g, Q, R, K, V>,
    guard: &'g Guard,
    front: core::slice::Iter<'g, (K, V)>,
    back: core::slice::Iter<'g, (K, V)>,
}

impl<'g, Q, R, K, V> Walk<'g, Q, R, K, V>
where
    Q: ?Sized + Ord + 'static,
    R: RangeBounds<Q>,
    K: Ord + Clone + Borrow<Q> + 'static,
    V: Clone + 'static,
{
    pub(crate) fn new(map: &'g BoxMap<K, V>, range: R, guard: &'g Guard) -> Self {
        Walk {
            walker: Walker::new(map, range),
            guard,
            front: [].iter(),
            back: [].iter(),
        }
    }
}

impl<'g, Q, R, K, V> Iterator for Walk<'g, Q, R, K, V>
where
    Q: ?Sized + Ord + 'static,
    R: RangeBounds<Q>,
    K: Ord + Clone + Borrow<Q> + 'static,
    V: Clone + 'static,
{
    type Item = &'g (K, V);

    #[inline]
    fn next(&mut self) -> Option<&'g (K, V)> {
        if let Some(e) = self.front.next() {
            return Some(e);
        }
        loop {
            match self.walker.front_bucket(self.guard) {
                // The usual one-entry bucket is handed out without becoming `front`.
                Some([one]) => return Some(one),
                Some(e) => {
                    self.front = e.iter();
                    if let Some(e) = self.front.next() {
                        return Some(e);
                    }
                }
                None => return self.back.next(),
            }
        }
    }

    /// The front bucket's rest, then the buckets between the ends in one internal
    /// iteration of the core (no per-element refill test), then the back bucket's rest.
    #[inline]
    fn fold<B, F: FnMut(B, &'g (K, V)) -> B>(self, init: B, mut f: F) -> B {
        let acc = self.front.fold(init, &mut f);
        let acc = self.walker.fold(self.guard, acc, &mut f);
        self.back.fold(acc, f)
    }
}

impl<'g, Q, R, K, V> DoubleEndedIterator for Walk<'g, Q, R, K, V>
where
    Q: ?Sized + Ord + 'static,
    R: RangeBounds<Q>,
    K: Ord + Clone + Borrow<Q> + 'static,
    V: Clone + 'static,
{
    fn next_back(&mut self) -> Option<&'g (K, V)> {
        loop {
            if let Some(e) = self.back.next_back() {
                return Some(e);
            }
            match self.walker.bucket(true, self.guard) {
                Some(e) => self.back = e.iter(),
                None => return self.front.next_back(),
            }
        }
    }
}

/// The copying iterator: it holds no pin between calls (a long-lived one keeps nothing
/// from being freed); it clones up to [`BATCH`] buckets per pin into a buffer it reuses.
pub(crate) struct Range<'a, Q: ?Sized, R, K, V> {
    walker: Walker<'a, Q, R, K, V>,
    front: VecDeque<(K, V)>,
    back: VecDeque<(K, V)>,
}

impl<'a, Q, R, K, V> Range<'a, Q, R, K, V>
where
    Q: ?Sized + Ord + 'static,
    R: RangeBounds<Q>,
    K: Ord + Clone + Borrow<Q> + 'static,
    V: Clone + 'static,
{
    pub(crate) fn new(map: &'a BoxMap<K, V>, range: R) -> Self {
        Range {
            walker: Walker::new(map, range),
            front: VecDeque::new(),
            back: VecDeque::new(),
        }
    }

    /// Clones up to [`BATCH`] buckets from one end into `buf`; whether any was left.
    fn fill(walker: &mut Walker<'a, Q, R, K, V>, back: bool, buf: &mut VecDeque<(K, V)>) -> bool {
        let g = pin();
        for n in 0..BATCH {
            match walker.bucket(back, &g) {
                Some(e) if back => e.iter().rev().for_each(|e| buf.push_front(e.clone())),
                Some(e) => buf.extend(e.iter().cloned()),
                None => return n > 0,
            }
        }
        true
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
            if !Self::fill(&mut self.walker, false, &mut self.front) {
                return self.back.pop_front();
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
            if !Self::fill(&mut self.walker, true, &mut self.back) {
                return self.front.pop_back();
            }
        }
    }
}
