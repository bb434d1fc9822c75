//! The boxed path's iterators over the core's (weakly consistent) iterator of prefixes:
//! [`Walk`] borrows the entries under an epoch guard (no lock, no clone), and [`Range`]
//! copies (clones) them out, a batch per pin.
//!
//! Every key present for the whole iteration is yielded once, in order: its prefix is in
//! the index throughout, so the core yields that prefix once, with the cell of a bucket that
//! was current during that call; a one-entry bucket holds the key, and a tree's walk reads
//! nodes that were in the tree while pinned, which hold every key present throughout (a
//! write never moves a key out of a node it leaves in the tree). The two ends take
//! different prefixes from the one core iterator, so they never overlap; when one end runs
//! out of prefixes it goes on in the other end's bucket, from its other side, short of the
//! last key that end yielded. Only the buckets of the bounds' prefixes can hold keys
//! outside the range; their walks start at the bounds and check the keys.

use super::{BoxMap, in_bounds};
use crate::entries::buckets::{Bucket, Cursor, Entries, TreeRef};
use crate::pma::{Guard, pin};
use core::borrow::Borrow;
use core::cmp::Ordering as Cmp;
use core::ops::{Bound, RangeBounds};
use std::collections::VecDeque;

/// Entries cloned per pin by [`Range`].
const BATCH: usize = 32;

/// What a walk needs of the range: the bounds and their prefixes and words.
struct Cut<'a, Q: ?Sized, R, K, V> {
    map: &'a BoxMap<K, V>,
    range: R,
    /// The prefixes of the bounds: only their buckets need cutting to the range.
    lo: Option<u64>,
    hi: Option<u64>,
    _q: core::marker::PhantomData<fn(&Q)>,
}

impl<'a, Q, R, K, V> Cut<'a, Q, R, K, V>
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
        Cut {
            map,
            range,
            lo,
            hi,
            _q: core::marker::PhantomData,
        }
    }

    /// The prefixes to walk.
    fn prefixes(&self) -> Cursor<'a, K, V> {
        let b = |p: Option<u64>| p.map_or(Bound::Unbounded, Bound::Included);
        self.map.buckets.cursor((b(self.lo), b(self.hi)))
    }

    /// Where a walk of bucket `p` starts from its front (`back`: its back): at the range's
    /// bound if the bucket holds that bound's prefix.
    fn start(&self, p: u64, back: bool) -> Bound<(u64, &Q)> {
        let (b, bp) = if back {
            (self.range.end_bound(), self.hi)
        } else {
            (self.range.start_bound(), self.lo)
        };
        if bp != Some(p) {
            return Bound::Unbounded;
        }
        b.map(|q| (self.map.word_of(q), q))
    }
}

/// One bucket as a walk holds it: its entries from both sides, each side short of the last
/// key the other yielded.
struct Run<'g, K, V> {
    p: u64,
    src: Src<'g, K, V>,
    /// The bucket holds a bound's prefix: its keys are checked against the range.
    check: bool,
    /// The last keys yielded from the front and from the back.
    lo: Option<&'g K>,
    hi: Option<&'g K>,
}

// A tree's cursors hold their paths inline (a few hundred bytes): boxing them would cost an
// allocation per tree a walk enters.
#[allow(clippy::large_enum_variant)]
enum Src<'g, K, V> {
    /// A one-entry bucket's entry, until either side takes it.
    One(Option<&'g (K, V)>),
    Tree {
        t: TreeRef<'g, K, V>,
        fwd: Option<Entries<'g, K, V>>,
        bwd: Option<Entries<'g, K, V>>,
    },
}

impl<'g, K: Ord + 'static, V: 'static> Run<'g, K, V> {
    fn new<Q: ?Sized, R>(p: u64, b: Bucket<'g, K, V>, cut: &Cut<'_, Q, R, K, V>) -> Self {
        Run {
            p,
            src: match b {
                Bucket::One(e) => Src::One(Some(e)),
                Bucket::Tree(t) => Src::Tree {
                    t,
                    fwd: None,
                    bwd: None,
                },
            },
            check: Some(p) == cut.lo || Some(p) == cut.hi,
            lo: None,
            hi: None,
        }
    }

    /// The next entry from the front (`back`: from the back); `None` when this side is done.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn next<Q, R>(&mut self, back: bool, cut: &Cut<'_, Q, R, K, V>) -> Option<&'g (K, V)>
    where
        Q: ?Sized + Ord + 'static,
        R: RangeBounds<Q>,
        K: Clone + Borrow<Q>,
        V: Clone,
    {
        loop {
            let e = match &mut self.src {
                Src::One(e) => e.take()?,
                Src::Tree { t, fwd, bwd } => {
                    let c = if back { bwd } else { fwd };
                    let c = c.get_or_insert_with(|| t.cursor(back, cut.start(self.p, back)));
                    c.next(back)?
                }
            };
            // The other side's last key ends this side (only in the bucket both ends reach).
            if back {
                if self.lo.is_some_and(|l| e.0 <= *l) {
                    return None;
                }
            } else if self.hi.is_some_and(|h| e.0 >= *h) {
                return None;
            }
            if self.check {
                match (in_bounds(&e.0, &cut.range), back) {
                    (Cmp::Equal, _) => {}
                    (Cmp::Less, false) | (Cmp::Greater, true) => continue,
                    (Cmp::Less, true) | (Cmp::Greater, false) => return None,
                }
            }
            if back {
                self.hi = Some(&e.0);
            } else {
                self.lo = Some(&e.0);
            }
            return Some(e);
        }
    }
}

/// A walk of a range's entries under one guard, from both ends.
struct Walker<'g, Q: ?Sized, R, K, V> {
    prefixes: Cursor<'g, K, V>,
    cut: Cut<'g, Q, R, K, V>,
    front: Option<Run<'g, K, V>>,
    back: Option<Run<'g, K, V>>,
    g: &'g Guard,
}

impl<'g, Q, R, K, V> Walker<'g, Q, R, K, V>
where
    Q: ?Sized + Ord + 'static,
    R: RangeBounds<Q>,
    K: Ord + Clone + Borrow<Q> + 'static,
    V: Clone + 'static,
{
    fn new(map: &'g BoxMap<K, V>, range: R, g: &'g Guard) -> Self {
        let cut = Cut::new(map, range);
        Walker {
            prefixes: cut.prefixes(),
            cut,
            front: None,
            back: None,
            g,
        }
    }

    /// The next entry from the front (`back`: from the back).
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn next(&mut self, back: bool) -> Option<&'g (K, V)> {
        loop {
            let run = if back {
                &mut self.back
            } else {
                &mut self.front
            };
            if let Some(e) = run.as_mut().and_then(|r| r.next(back, &self.cut)) {
                return Some(e);
            }
            match self.prefixes.next(back, self.g) {
                Some((p, b)) => *run = Some(Run::new(p, b, &self.cut)),
                // Out of prefixes: what is left is in the other end's bucket.
                None => {
                    let other = if back {
                        &mut self.front
                    } else {
                        &mut self.back
                    };
                    return other.as_mut()?.next(back, &self.cut);
                }
            }
        }
    }

    /// Feeds every entry left between the two ends to `f`, in order: the rest of the front
    /// bucket, the buckets between in the core's internal iteration (a tight loop over each
    /// leaf's run of cell numbers), then the back bucket from its front side.
    #[inline]
    fn fold<B>(self, init: B, mut f: impl FnMut(B, &'g (K, V)) -> B) -> B {
        let Walker {
            prefixes,
            cut,
            mut front,
            mut back,
            g,
        } = self;
        let mut acc = init;
        if let Some(r) = &mut front {
            while let Some(e) = r.next(false, &cut) {
                acc = f(acc, e);
            }
        }
        let map = cut.map;
        acc = if cut.lo.is_none() && cut.hi.is_none() {
            // No bucket to cut (the whole map).
            prefixes.fold(g, acc, &mut f, |k| map.prefix_of::<K>(k))
        } else {
            prefixes.fold_buckets(g, acc, |mut acc, p, b| {
                let mut r = Run::new(p, b, &cut);
                while let Some(e) = r.next(false, &cut) {
                    acc = f(acc, e);
                }
                acc
            })
        };
        if let Some(r) = &mut back {
            while let Some(e) = r.next(false, &cut) {
                acc = f(acc, e);
            }
        }
        acc
    }
}

/// The borrowing iterator: entries by reference, valid while the guard lives.
pub(crate) struct Walk<'g, Q: ?Sized, R, K, V>(Walker<'g, Q, R, K, V>);

impl<'g, Q, R, K, V> Walk<'g, Q, R, K, V>
where
    Q: ?Sized + Ord + 'static,
    R: RangeBounds<Q>,
    K: Ord + Clone + Borrow<Q> + 'static,
    V: Clone + 'static,
{
    pub(crate) fn new(map: &'g BoxMap<K, V>, range: R, guard: &'g Guard) -> Self {
        Walk(Walker::new(map, range, guard))
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
        self.0.next(false)
    }

    #[inline]
    fn fold<B, F: FnMut(B, &'g (K, V)) -> B>(self, init: B, f: F) -> B {
        self.0.fold(init, f)
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
        self.0.next(true)
    }
}

/// The copying iterator: it holds no pin between calls (a long-lived one keeps nothing
/// from being freed); it clones up to [`BATCH`] entries per pin into a buffer, and walks
/// the rest of the range again from just past the last key each end took.
pub(crate) struct Range<'a, Q: ?Sized, R, K, V> {
    map: &'a BoxMap<K, V>,
    range: R,
    /// The last key each end took (the next walk starts past it), and whether that end is
    /// done.
    front_key: Option<K>,
    back_key: Option<K>,
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
        Range {
            map,
            range,
            front_key: None,
            back_key: None,
            front: VecDeque::new(),
            back: VecDeque::new(),
            _q: core::marker::PhantomData,
        }
    }

    /// Clones up to [`BATCH`] entries from one end into its buffer; whether any was left.
    fn fill(&mut self, back: bool) -> bool {
        let g = pin();
        let start = match &self.front_key {
            Some(k) => Bound::Excluded(k.borrow()),
            None => self.range.start_bound(),
        };
        let end = match &self.back_key {
            Some(k) => Bound::Excluded(k.borrow()),
            None => self.range.end_bound(),
        };
        let mut w = Walker::new(self.map, (start, end), &g);
        let buf = if back {
            &mut self.back
        } else {
            &mut self.front
        };
        let mut last = None;
        for _ in 0..BATCH {
            match w.next(back) {
                Some(e) => {
                    if back {
                        buf.push_front(e.clone());
                    } else {
                        buf.push_back(e.clone());
                    }
                    last = Some(&e.0);
                }
                None => break,
            }
        }
        let Some(k) = last else {
            return false;
        };
        let k = k.clone();
        drop(w);
        if back {
            self.back_key = Some(k);
        } else {
            self.front_key = Some(k);
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
            if !self.fill(false) {
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
            if !self.fill(true) {
                return self.front.pop_back();
            }
        }
    }
}
