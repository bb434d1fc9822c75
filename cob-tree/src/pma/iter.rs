//! The word core's iteration: weakly consistent (both directions), and by value. The
//! public iterators (`crate::iters`) wrap these for the inline path.

use super::key::Borrow;
use super::key::{Key, Pod};
use crate::pma::map::Map;
use crate::pma::{FROZEN, Held, Leaf, Offsets, Pma, Probe, Seek};
use core::marker::PhantomData;
use core::ops::{Bound, RangeBounds};
use std::sync::Arc;

/// One end of a [`Range`]: a validated position in one leaf of the array the range holds.
///
/// The run of slots between `seek.slot` and `seek.stop` is what this end may yield from
/// the leaf without another search: the seek validated it as a whole (its keys are in the
/// range and short of what the other end has yielded), and each element is re-checked
/// against the leaf's version when it is yielded. Outside a valid position `stop == slot`,
/// so the per-element path needs no other test.
struct Cursor<K, V> {
    /// The leaf of `seek`, valid while `valid`.
    j: usize,
    seek: Seek<K>,
    /// Leaf `j`'s words.
    at: Offsets,
    /// What the per-element path compares the version with: `seek.ver`, or for a frozen
    /// leaf a value it never equals (such a leaf's elements take the slow path, which also
    /// checks that its array is still current).
    fast_ver: u64,
    valid: bool,
    /// The leaf was read to its end: the next seek starts at this fence (forward:
    /// `Included(hi)`; backward: `Excluded(lo)`), in leaf `hint`.
    pending: Option<K>,
    hint: Option<usize>,
    spins: u32,
    _v: PhantomData<fn() -> V>,
}

impl<K, V> Cursor<K, V> {
    fn new() -> Self {
        Cursor {
            j: 0,
            seek: Seek {
                ver: 0,
                slot: 0,
                stop: 0,
                count: 0,
                fence: None,
            },
            at: Offsets::default(),
            fast_ver: 0,
            valid: false,
            pending: None,
            hint: None,
            spins: 0,
            _v: PhantomData,
        }
    }

    /// Forgets the position: the next step seeks again.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn invalidate(&mut self) {
        self.valid = false;
        self.seek.stop = self.seek.slot;
    }

    /// Forgets where this end was (at its end): the next step seeks from the last key
    /// yielded (or the range's bound), as a new search.
    fn forget(&mut self) {
        self.invalidate();
        self.pending = None;
        self.hint = None;
    }
}

/// A version no leaf ever has (odd and frozen: a frozen leaf is never locked), the
/// `fast_ver` of a frozen leaf.
const NEVER: u64 = u64::MAX;
const _: () = assert!(NEVER & FROZEN != 0 && NEVER & 1 == 1);

/// What one step of a cursor found.
enum Step<K, V> {
    Item(K, V),
    /// Past the last leaf, or the limit reached: nothing more at this end.
    End,
    /// Re-seek (the leaf changed, or was read to its end).
    Again,
}

impl<K: Key, V: Pod> Cursor<K, V> {
    /// Whether a read made at `ver` still holds: the leaf is unchanged and, if it was
    /// frozen, its array is still the current one (a frozen array stops being current at
    /// publish, and from then on writes go to the new array).
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn holds(map: &Map<K, V>, arr: &Pma<K, V>, ver: u64) -> bool {
        ver & FROZEN == 0 || map.is_current(arr)
    }

    /// Takes over a validated position in leaf `j` of the range's array.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn settle(&mut self, j: usize, s: Seek<K>, at: Offsets) {
        (self.j, self.seek, self.valid, self.at) = (j, s, true, at);
        self.fast_ver = if s.ver & FROZEN == 0 { s.ver } else { NEVER };
        self.pending = None;
        self.spins = 0;
    }

    /// The next element at this end (`front`: forward), validated as it is read; `limit`
    /// as in [`Pma::seek`].
    fn step(
        &mut self,
        map: &Map<K, V>,
        arr: &Pma<K, V>,
        front: bool,
        limit: impl Fn(&K) -> bool,
    ) -> Step<K, V> {
        // Read to its end and still unchanged: move straight on to the next leaf if it
        // continues at this one's fence (and this array is still the current one: a
        // frozen array's reader moves to the new array instead).
        if self.valid
            && self.seek.slot == self.seek.stop
            && self.seek.stop == if front { self.seek.count } else { 0 }
            && let Some(f) = &self.seek.fence
            && self.seek.ver & FROZEN == 0
            && arr.still(self.j, self.seek.ver)
            && let Some((j, s)) = arr.seek_next(self.j, f, front, &limit)
        {
            let at = arr.offsets(j);
            self.settle(j, s, at);
        }
        let s = &mut self.seek;
        let more = if front {
            s.slot < s.stop
        } else {
            s.slot > s.stop
        };
        if more {
            let at = if front { s.slot } else { s.slot - 1 };
            if let Some((k, v)) = arr.read_flat(self.at, at, s.ver)
                && Self::holds(map, arr, s.ver)
            {
                if front {
                    s.slot += 1;
                } else {
                    s.slot -= 1;
                }
                return Step::Item(k, v);
            }
            self.invalidate();
            return Step::Again;
        }
        // The limit (the range's end or the other end's last key, as of the seek, which
        // validated the keys up to it) is reached: nothing more at this end.
        if (front && s.stop < s.count) || (!front && s.stop > 0) {
            return Step::End;
        }
        // Read to its end: if it is still unchanged, nothing in it is left to see.
        let unchanged = arr.still(self.j, s.ver) && Self::holds(map, arr, s.ver);
        self.invalidate();
        let s = &self.seek;
        if unchanged {
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

    /// Finds where this end resumes: the leaf owning `at` in `arr` (the current array),
    /// and the run in it that `limit` admits.
    fn seek<Q: ?Sized + Ord>(
        &mut self,
        arr: &Pma<K, V>,
        at: Bound<&Q>,
        front: bool,
        limit: impl Fn(&K) -> bool,
    ) where
        K: Borrow<Q>,
    {
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
            match arr.seek(j, at, front, &limit) {
                Probe::Here(s) => {
                    let at = arr.offsets(j);
                    self.settle(j, s, at);
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
/// or is dropped), and nothing else: never more than one array (both ends read the same
/// one; see the crate docs, "Memory"). It allocates nothing.
pub(crate) struct Range<'a, Q: ?Sized, R, K: Key, V: Pod> {
    map: &'a Map<K, V>,
    /// The array both ends read (taken when the range is made, replaced when an end
    /// seeks and finds it no longer current; the other end then seeks again too).
    arr: Held<'a, K, V>,
    range: R,
    front: Cursor<K, V>,
    back: Cursor<K, V>,
    /// The last key yielded at each end: the other end stops before it.
    front_last: Option<K>,
    back_last: Option<K>,
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
            arr: map.acquire(),
            range,
            front: Cursor::new(),
            back: Cursor::new(),
            front_last: None,
            back_last: None,
            _q: PhantomData,
            _kv: PhantomData,
        }
    }

    /// Before an end seeks: if the array held is no longer the current one, takes the
    /// current one; leaf hints of the old one mean nothing in it, and the other end's run
    /// is in the old one, so it seeks again too (from its last key, in the new array).
    fn refresh(&mut self) {
        if !self.map.is_current(&self.arr) {
            self.arr = self.map.acquire();
            self.front.hint = None;
            self.back.hint = None;
            self.front.invalidate();
            self.back.invalidate();
        }
    }

    #[cold]
    fn seek_front(&mut self) {
        self.refresh();
        let (range, back_last) = (&self.range, &self.back_last);
        let limit = |k: &K| before_end(range, back_last, k);
        let (c, arr) = (&mut self.front, &*self.arr);
        match (&c.pending, &self.front_last) {
            (Some(p), _) => {
                let p = *p;
                c.seek::<K>(arr, Bound::Included(&p), true, limit);
            }
            (None, Some(l)) => {
                let l = *l;
                c.seek::<K>(arr, Bound::Excluded(&l), true, limit);
            }
            (None, None) => c.seek(arr, range.start_bound(), true, limit),
        }
    }

    #[cold]
    fn seek_back(&mut self) {
        self.refresh();
        let (range, front_last) = (&self.range, &self.front_last);
        let limit = |k: &K| after_start(range, front_last, k);
        let (c, arr) = (&mut self.back, &*self.arr);
        match (&c.pending, &self.back_last) {
            (Some(p), _) => {
                let p = *p;
                c.seek::<K>(arr, Bound::Excluded(&p), false, limit);
            }
            (None, Some(l)) => {
                let l = *l;
                c.seek::<K>(arr, Bound::Excluded(&l), false, limit);
            }
            (None, None) => c.seek(arr, range.end_bound(), false, limit),
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
        // The common case first: the next element of the run being read.
        let c = &mut self.front;
        if c.seek.slot < c.seek.stop
            && let Some((k, v)) = self.arr.read_flat(c.at, c.seek.slot, c.fast_ver)
        {
            c.seek.slot += 1;
            self.front_last = Some(k);
            return Some((k, v));
        }
        self.next_slow()
    }

    /// Internal iteration walks each run in a tight loop, still validating every element
    /// against the leaf's version just before handing it to `f`.
    fn fold<B, F: FnMut(B, (K, V)) -> B>(mut self, init: B, mut f: F) -> B {
        let mut acc = init;
        loop {
            if self.front.seek.slot < self.front.seek.stop {
                acc = self.front_runs(
                    acc,
                    |acc, l, run, ver| l.fold_run(run, ver, acc, &mut f),
                    |k| k,
                );
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
    /// [`Iterator::fold`] of the values alone, for a map whose value names where the
    /// entry's key can be found again (the boxed path's cell): the keys are not read per
    /// element; `key_of(v)` of the last value fed gives the key to resume after, when the
    /// front has to seek again.
    #[inline]
    pub(crate) fn fold_values<B>(
        mut self,
        init: B,
        mut f: impl FnMut(B, V) -> B,
        key_of: impl Fn(V) -> K,
    ) -> B {
        let mut acc = init;
        loop {
            if self.front.seek.slot < self.front.seek.stop {
                acc = self.front_runs(
                    acc,
                    |acc, l, run, ver| l.fold_run_values(run, ver, acc, &mut f),
                    &key_of,
                );
            }
            match self.next_slow() {
                Some((_, v)) => acc = f(acc, v),
                None => return acc,
            }
        }
    }

    /// Feeds the front's run (`run(acc, leaf, (from, to), version)`, which returns the slot
    /// it stopped at and the last element it fed) and, while each run is read to its
    /// leaf's end and the next leaf continues it ([`Pma::next_run`]: `step`'s checks), the
    /// next leaves' runs, in one loop with the position in locals; then writes the front's
    /// position back (and the key of the last element fed, `key(last)`), for `next_slow`.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn front_runs<B, X>(
        &mut self,
        mut acc: B,
        mut run: impl FnMut(B, Leaf<'_, K, V>, (usize, usize), u64) -> (B, usize, Option<X>),
        key: impl Fn(X) -> K,
    ) -> B {
        let arr: &Pma<K, V> = &self.arr;
        let (range, back_last) = (&self.range, &self.back_last);
        // Tested once, not per leaf: with no end (the whole map, the back unused) every
        // key passes.
        let endless = matches!(range.end_bound(), Bound::Unbounded) && back_last.is_none();
        let limit = |k: &K| endless || before_end(range, back_last, k);
        let c = &mut self.front;
        let (j0, mut seek, mut ver) = (c.j, c.seek, c.fast_ver);
        let (mut j, mut l) = (j0, arr.leaf(j0));
        let mut last = None;
        loop {
            let (a, s, x) = run(acc, l, (seek.slot, seek.stop), ver);
            acc = a;
            seek.slot = s;
            if x.is_some() {
                last = x;
            }
            if s < seek.stop {
                break;
            }
            match arr.next_run(j, &l, &seek, limit) {
                // Never frozen (`next_run`): its elements take the fast check.
                Some((nj, nl, ns)) => (j, l, seek, ver) = (nj, nl, ns, ns.ver),
                None => break,
            }
        }
        // Leaves are only taken forward: a new one is a greater index.
        if j != j0 {
            c.settle(j, seek, arr.offsets(j));
        } else {
            c.seek.slot = seek.slot;
        }
        if let Some(x) = last {
            self.front_last = Some(key(x));
        }
        acc
    }

    #[inline(never)]
    fn next_slow(&mut self) -> Option<(K, V)> {
        loop {
            if !self.front.valid {
                self.seek_front();
                continue;
            }
            let (range, back_last) = (&self.range, &self.back_last);
            let limit = |k: &K| before_end(range, back_last, k);
            match self.front.step(self.map, &self.arr, true, limit) {
                Step::Item(k, v) => {
                    self.front_last = Some(k);
                    return Some((k, v));
                }
                Step::End => {
                    // Not fused, as SkipMap's iterators: a later call seeks again from
                    // the last key yielded, and finds what was inserted after it since.
                    self.front.forget();
                    return None;
                }
                Step::Again => {}
            }
        }
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
        loop {
            if !self.back.valid {
                self.seek_back();
                continue;
            }
            let (range, front_last) = (&self.range, &self.front_last);
            let limit = |k: &K| after_start(range, front_last, k);
            match self.back.step(self.map, &self.arr, false, limit) {
                Step::Item(k, v) => {
                    // The front may have moved since this run was sought (its per-element
                    // path does not tell the back), so the back checks every key.
                    if !after_start(&self.range, &self.front_last, &k) {
                        self.back.forget();
                        return None;
                    }
                    self.back_last = Some(k);
                    // The front's run must now stop before `k`: it seeks again.
                    self.front.invalidate();
                    return Some((k, v));
                }
                Step::End => {
                    self.back.forget();
                    return None;
                }
                Step::Again => {}
            }
        }
    }
}

impl<Q: ?Sized, R, K: Key + core::fmt::Debug, V: Pod> core::fmt::Debug for Range<'_, Q, R, K, V> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Range")
            .field("front_last", &self.front_last)
            .field("back_last", &self.back_last)
            .finish_non_exhaustive()
    }
}

/// Whether `k` is after the start of `range` and after `front_last`.
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
fn after_start<Q, R, K>(range: &R, front_last: &Option<K>, k: &K) -> bool
where
    Q: ?Sized + Ord,
    R: RangeBounds<Q>,
    K: Key + Borrow<Q>,
{
    let in_range = match range.start_bound() {
        Bound::Unbounded => true,
        Bound::Included(s) => Borrow::<Q>::borrow(k) >= s,
        Bound::Excluded(s) => Borrow::<Q>::borrow(k) > s,
    };
    in_range && front_last.as_ref().is_none_or(|f| k > f)
}

/// Whether `k` is before the end of `range` and before `back_last`.
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
fn before_end<Q, R, K>(range: &R, back_last: &Option<K>, k: &K) -> bool
where
    Q: ?Sized + Ord,
    R: RangeBounds<Q>,
    K: Key + Borrow<Q>,
{
    let in_range = match range.end_bound() {
        Bound::Unbounded => true,
        Bound::Included(e) => Borrow::<Q>::borrow(k) <= e,
        Bound::Excluded(e) => Borrow::<Q>::borrow(k) < e,
    };
    in_range && back_last.as_ref().is_none_or(|b| k < b)
}

/// The entries of a [`CobTree`](crate::CobTree) by value, in key order from either end
/// (`CobTree::into_iter`). The map was owned, so the count is exact.
pub(crate) struct IntoIter<K, V> {
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
