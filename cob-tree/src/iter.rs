//! Weakly consistent iteration (both directions), and the by-value iterators.

use crate::key::{Key, Pod};
use crate::pma::map::Map;
use crate::pma::{FROZEN, Held, Pma, Probe, Seek};
use core::borrow::Borrow;
use core::marker::PhantomData;
use core::ops::{Bound, RangeBounds, RangeFull};
use std::sync::Arc;

/// One end of a [`Range`]: the array it reads and a validated position in one leaf.
struct Cursor<'a, K, V> {
    arr: Option<Held<'a, K, V>>,
    /// The leaf of `seek`, valid while `valid`.
    j: usize,
    seek: Seek<K>,
    valid: bool,
    /// The leaf was read to its end: the next seek starts at this fence (forward:
    /// `Included(hi)`; backward: `Excluded(lo)`), in leaf `hint`.
    pending: Option<K>,
    hint: Option<usize>,
    spins: u32,
}

impl<K, V> Cursor<'_, K, V> {
    fn new() -> Self {
        Cursor {
            arr: None,
            j: 0,
            seek: Seek {
                ver: 0,
                slot: 0,
                count: 0,
                fence: None,
            },
            valid: false,
            pending: None,
            hint: None,
            spins: 0,
        }
    }
}

/// What one step of a cursor found.
enum Step<K, V> {
    Item(K, V),
    /// Past the last leaf: nothing more at this end.
    End,
    /// Re-seek (the leaf changed, or was read to its end).
    Again,
}

impl<'a, K: Key, V: Pod> Cursor<'a, K, V> {
    /// Whether a read made at `ver` still holds: the leaf is unchanged and, if it was
    /// frozen, its array is still the current one (a frozen array stops being current at
    /// publish, and from then on writes go to the new array).
    #[inline(always)]
    fn holds(map: &Map<K, V>, arr: &Pma<K, V>, ver: u64) -> bool {
        ver & FROZEN == 0 || map.is_current(arr)
    }

    /// The next element at this end (`front`: forward), validated as it is read.
    #[inline(always)]
    fn step(&mut self, map: &Map<K, V>, front: bool) -> Step<K, V> {
        let Some(arr) = self.arr.as_deref() else {
            return Step::Again;
        };
        let s = &mut self.seek;
        let more = if front { s.slot < s.count } else { s.slot > 0 };
        if more {
            let at = if front { s.slot } else { s.slot - 1 };
            if let Some((k, v)) = arr.read_at(self.j, at, s.ver)
                && Self::holds(map, arr, s.ver)
            {
                if front {
                    s.slot += 1;
                } else {
                    s.slot -= 1;
                }
                return Step::Item(k, v);
            }
            self.valid = false;
            return Step::Again;
        }
        // Read to its end: if it is still unchanged, nothing in it is left to see.
        self.valid = false;
        if arr.still(self.j, s.ver) && Self::holds(map, arr, s.ver) {
            match s.fence {
                None => return Step::End,
                Some(f) => {
                    self.pending = Some(f);
                    self.hint = Some(if front { self.j + 1 } else { self.j - 1 });
                }
            }
        }
        Step::Again
    }

    /// Finds where this end resumes: the leaf owning `at` in the current array.
    fn seek<Q: ?Sized + Ord>(&mut self, map: &'a Map<K, V>, at: Bound<&Q>, front: bool)
    where
        K: Borrow<Q>,
    {
        if self.arr.as_deref().is_none_or(|a| !map.is_current(a)) {
            self.arr = Some(map.acquire());
            self.hint = None;
        }
        let arr = self.arr.as_deref().expect("just acquired");
        let live = arr.live_end();
        let mut j = match self.hint.take() {
            Some(h) if h < live => h,
            _ => match at {
                Bound::Unbounded if front => 0,
                Bound::Unbounded => live - 1,
                Bound::Included(k) | Bound::Excluded(k) => arr.locate(k),
            },
        };
        loop {
            match arr.seek(j, at, front) {
                Probe::Here(s) => {
                    (self.j, self.seek, self.valid) = (j, s, true);
                    self.pending = None;
                    self.spins = 0;
                    return;
                }
                Probe::Left if j > 0 => j -= 1,
                Probe::Right if j + 1 < arr.leaves() => j += 1,
                _ => {
                    crate::sync::spin_wait(&mut self.spins);
                    return;
                }
            }
        }
    }
}

/// An iterator over the entries of a [`CobTree`](crate::CobTree) in a range of keys, in key
/// order from either end, yielding copies `(K, V)`.
///
/// **Weakly consistent**, as `crossbeam_skiplist::SkipMap`'s iterators: it never blocks
/// writers and writers never block it; it never yields a key that was removed before the
/// iterator reached the key's position (each element is validated against its leaf's
/// version when it is yielded, not copied ahead), and it yields every key present for the
/// whole iteration exactly once, in order (from both ends, the two meet without overlap).
/// Keys inserted or removed during the iteration may or may not be seen.
///
/// It holds no epoch pin, so it is `Send` when `K`, `V` and the range are. What a
/// long-held one costs: it keeps the one array it last read alive (if that array is
/// replaced by a growth or shrink meanwhile, its memory is freed when the iterator moves on
/// or is dropped), and nothing else: never more than one array per end (see the crate
/// docs, "Memory"). It allocates nothing.
pub struct Range<'a, Q: ?Sized, R, K: Key, V: Pod> {
    map: &'a Map<K, V>,
    range: R,
    front: Cursor<'a, K, V>,
    back: Cursor<'a, K, V>,
    /// The last key yielded at each end: the other end stops before it.
    front_last: Option<K>,
    back_last: Option<K>,
    done: bool,
    _q: PhantomData<fn(&Q)>,
    _kv: PhantomData<(K, V)>,
}

impl<'a, Q, R, K, V> Range<'a, Q, R, K, V>
where
    Q: ?Sized + Ord,
    R: RangeBounds<Q>,
    K: Key + Borrow<Q>,
    V: Pod,
{
    pub(crate) fn new(map: &'a Map<K, V>, range: R) -> Self {
        Range {
            map,
            range,
            front: Cursor::new(),
            back: Cursor::new(),
            front_last: None,
            back_last: None,
            done: false,
            _q: PhantomData,
            _kv: PhantomData,
        }
    }

    /// Whether `k` is before the end of the range and before what the back has yielded.
    #[inline(always)]
    fn before_end(&self, k: &K) -> bool {
        before_end(&self.range, &self.back_last, k)
    }

    /// Whether `k` is after the start of the range and after what the front has yielded.
    #[inline(always)]
    fn after_start(&self, k: &K) -> bool {
        let in_range = match self.range.start_bound() {
            Bound::Unbounded => true,
            Bound::Included(s) => k.borrow() >= s,
            Bound::Excluded(s) => k.borrow() > s,
        };
        in_range && self.front_last.as_ref().is_none_or(|f| k > f)
    }

    #[cold]
    fn seek_front(&mut self) {
        let c = &mut self.front;
        match (&c.pending, &self.front_last) {
            (Some(p), _) => {
                let p = *p;
                c.seek::<K>(self.map, Bound::Included(&p), true);
            }
            (None, Some(l)) => {
                let l = *l;
                c.seek::<K>(self.map, Bound::Excluded(&l), true);
            }
            (None, None) => c.seek(self.map, self.range.start_bound(), true),
        }
    }

    #[cold]
    fn seek_back(&mut self) {
        let c = &mut self.back;
        match (&c.pending, &self.back_last) {
            (Some(p), _) => {
                let p = *p;
                c.seek::<K>(self.map, Bound::Excluded(&p), false);
            }
            (None, Some(l)) => {
                let l = *l;
                c.seek::<K>(self.map, Bound::Excluded(&l), false);
            }
            (None, None) => c.seek(self.map, self.range.end_bound(), false),
        }
    }
}

impl<Q, R, K, V> Iterator for Range<'_, Q, R, K, V>
where
    Q: ?Sized + Ord,
    R: RangeBounds<Q>,
    K: Key + Borrow<Q>,
    V: Pod,
{
    type Item = (K, V);

    #[inline]
    fn next(&mut self) -> Option<(K, V)> {
        // The common case first: the next element of the leaf being read.
        let c = &mut self.front;
        if c.valid
            && c.seek.slot < c.seek.count
            && c.seek.ver & FROZEN == 0
            && let Some(arr) = c.arr.as_deref()
            && let Some((k, v)) = arr.read_at(c.j, c.seek.slot, c.seek.ver)
            && self.before_end(&k)
        {
            self.front.seek.slot += 1;
            self.front_last = Some(k);
            return Some((k, v));
        }
        self.next_slow()
    }

    /// Internal iteration walks each leaf in a tight loop, still validating every element
    /// against the leaf's version just before handing it to `f`.
    fn fold<B, F: FnMut(B, (K, V)) -> B>(mut self, init: B, mut f: F) -> B {
        let mut acc = init;
        loop {
            let c = &mut self.front;
            if c.valid
                && c.seek.ver & FROZEN == 0
                && let Some(arr) = c.arr.as_deref()
            {
                let (j, ver, n) = (c.j, c.seek.ver, c.seek.count);
                let mut s = c.seek.slot;
                let mut last = None;
                while s < n {
                    let Some((k, v)) = arr.read_at(j, s, ver) else {
                        break;
                    };
                    if !before_end(&self.range, &self.back_last, &k) {
                        break;
                    }
                    s += 1;
                    last = Some(k);
                    acc = f(acc, (k, v));
                }
                c.seek.slot = s;
                if last.is_some() {
                    self.front_last = last;
                }
            }
            match self.next_slow() {
                Some(e) => acc = f(acc, e),
                None => return acc,
            }
        }
    }
}

impl<Q, R, K, V> Range<'_, Q, R, K, V>
where
    Q: ?Sized + Ord,
    R: RangeBounds<Q>,
    K: Key + Borrow<Q>,
    V: Pod,
{
    #[inline(never)]
    fn next_slow(&mut self) -> Option<(K, V)> {
        while !self.done {
            if !self.front.valid {
                self.seek_front();
                continue;
            }
            match self.front.step(self.map, true) {
                Step::Item(k, v) => {
                    if !self.before_end(&k) {
                        break;
                    }
                    self.front_last = Some(k);
                    return Some((k, v));
                }
                Step::End => break,
                Step::Again => {}
            }
        }
        self.done = true;
        None
    }
}

impl<Q, R, K, V> DoubleEndedIterator for Range<'_, Q, R, K, V>
where
    Q: ?Sized + Ord,
    R: RangeBounds<Q>,
    K: Key + Borrow<Q>,
    V: Pod,
{
    #[inline]
    fn next_back(&mut self) -> Option<(K, V)> {
        while !self.done {
            if !self.back.valid {
                self.seek_back();
                continue;
            }
            match self.back.step(self.map, false) {
                Step::Item(k, v) => {
                    if !self.after_start(&k) {
                        break;
                    }
                    self.back_last = Some(k);
                    return Some((k, v));
                }
                Step::End => break,
                Step::Again => {}
            }
        }
        self.done = true;
        None
    }
}

impl<Q: ?Sized, R, K: Key + core::fmt::Debug, V: Pod> core::fmt::Debug for Range<'_, Q, R, K, V> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Range")
            .field("front_last", &self.front_last)
            .field("back_last", &self.back_last)
            .field("done", &self.done)
            .finish_non_exhaustive()
    }
}

/// Whether `k` is before the end of `range` and before `back_last`.
#[inline(always)]
fn before_end<Q, R, K>(range: &R, back_last: &Option<K>, k: &K) -> bool
where
    Q: ?Sized + Ord,
    R: RangeBounds<Q>,
    K: Key + Borrow<Q>,
{
    let in_range = match range.end_bound() {
        Bound::Unbounded => true,
        Bound::Included(e) => k.borrow() <= e,
        Bound::Excluded(e) => k.borrow() < e,
    };
    in_range && back_last.as_ref().is_none_or(|b| k < b)
}

/// An iterator over all entries of a [`CobTree`](crate::CobTree), in key order from either
/// end; weakly consistent as [`Range`] is.
pub struct Iter<'a, K: Key, V: Pod>(Range<'a, K, RangeFull, K, V>);

impl<'a, K: Key, V: Pod> Iter<'a, K, V> {
    pub(crate) fn new(map: &'a Map<K, V>) -> Self {
        Iter(Range::new(map, ..))
    }
}

/// The keys of a [`CobTree`](crate::CobTree), in order (see [`Iter`]).
pub struct Keys<'a, K: Key, V: Pod>(pub(crate) Iter<'a, K, V>);
/// The values of a [`CobTree`](crate::CobTree), in key order (see [`Iter`]).
pub struct Values<'a, K: Key, V: Pod>(pub(crate) Iter<'a, K, V>);

macro_rules! forward {
    ($t:ident, $item:ty, |$e:ident| $map:expr) => {
        impl<K: Key, V: Pod> Iterator for $t<'_, K, V> {
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
        impl<K: Key, V: Pod> DoubleEndedIterator for $t<'_, K, V> {
            #[inline]
            fn next_back(&mut self) -> Option<$item> {
                self.0.next_back().map(|$e| $map)
            }
        }
        impl<K: Key + core::fmt::Debug, V: Pod> core::fmt::Debug for $t<'_, K, V> {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                f.debug_struct(stringify!($t)).finish_non_exhaustive()
            }
        }
    };
}
forward!(Iter, (K, V), |e| e);
forward!(Keys, K, |e| e.0);
forward!(Values, V, |e| e.1);

/// The entries of a [`CobTree`](crate::CobTree) by value, in key order from either end
/// (`CobTree::into_iter`). The map was owned, so the count is exact.
pub struct IntoIter<K, V> {
    arr: Arc<Pma<K, V>>,
    /// Forward: the next element is slot `.1` of leaf `.0` (or later).
    front: (usize, usize),
    /// Backward: the elements left are the slots below `.1` of leaf `.0` (or earlier).
    back: (usize, usize),
    left: usize,
}

impl<K: Key, V: Pod> IntoIter<K, V> {
    pub(crate) fn new(arr: Arc<Pma<K, V>>, len: usize) -> Self {
        let last = arr.live_end() - 1;
        let back = (last, arr.count_at(last));
        IntoIter {
            arr,
            front: (0, 0),
            back,
            left: len,
        }
    }
}

impl<K: Key, V: Pod> Iterator for IntoIter<K, V> {
    type Item = (K, V);

    fn next(&mut self) -> Option<(K, V)> {
        if self.left == 0 {
            return None;
        }
        while self.front.1 >= self.arr.count_at(self.front.0) {
            self.front = (self.front.0 + 1, 0);
        }
        self.left -= 1;
        let e = self.arr.elem(self.front.0, self.front.1);
        self.front.1 += 1;
        Some(e)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl<K: Key, V: Pod> DoubleEndedIterator for IntoIter<K, V> {
    fn next_back(&mut self) -> Option<(K, V)> {
        if self.left == 0 {
            return None;
        }
        while self.back.1 == 0 {
            self.back.0 -= 1;
            self.back.1 = self.arr.count_at(self.back.0);
        }
        self.left -= 1;
        self.back.1 -= 1;
        Some(self.arr.elem(self.back.0, self.back.1))
    }
}

impl<K: Key, V: Pod> ExactSizeIterator for IntoIter<K, V> {}
impl<K: Key, V: Pod> core::iter::FusedIterator for IntoIter<K, V> {}

impl<K: Key + core::fmt::Debug, V: Pod> core::fmt::Debug for IntoIter<K, V> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("IntoIter")
            .field("left", &self.left)
            .finish_non_exhaustive()
    }
}

/// The keys of a [`CobTree`](crate::CobTree) by value, in order (`CobTree::into_keys`).
pub struct IntoKeys<K, V>(pub(crate) IntoIter<K, V>);
/// The values of a [`CobTree`](crate::CobTree) by value, in key order
/// (`CobTree::into_values`).
pub struct IntoValues<K, V>(pub(crate) IntoIter<K, V>);

macro_rules! forward_owned {
    ($t:ident, $item:ty, |$e:ident| $map:expr) => {
        impl<K: Key, V: Pod> Iterator for $t<K, V> {
            type Item = $item;
            fn next(&mut self) -> Option<$item> {
                self.0.next().map(|$e| $map)
            }
            fn size_hint(&self) -> (usize, Option<usize>) {
                self.0.size_hint()
            }
        }
        impl<K: Key, V: Pod> DoubleEndedIterator for $t<K, V> {
            fn next_back(&mut self) -> Option<$item> {
                self.0.next_back().map(|$e| $map)
            }
        }
        impl<K: Key, V: Pod> ExactSizeIterator for $t<K, V> {}
        impl<K: Key, V: Pod> core::iter::FusedIterator for $t<K, V> {}
        impl<K: Key + core::fmt::Debug, V: Pod> core::fmt::Debug for $t<K, V> {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                f.debug_struct(stringify!($t))
                    .field("left", &self.0.left)
                    .finish_non_exhaustive()
            }
        }
    };
}
forward_owned!(IntoKeys, K, |e| e.0);
forward_owned!(IntoValues, V, |e| e.1);
