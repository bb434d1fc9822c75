//! Validated (optimistic) reads of one leaf: version (even) -> fences, count, cells ->
//! acquire fence -> version again. Readers write nothing shared.

use super::key::Borrow;
use super::key::{Key, Pod};
use super::leaf::Leaf;
use super::{FENCES, FROZEN, HI_INF, LO_NEG_INF, Pma, Probe, VERSION, load, search};
use crate::sync::AtomicU64;
use crate::sync::{Ordering, fence};
use core::cmp::Ordering as Cmp;
use core::ops::Bound;

/// Where a validated seek left an iterator in one leaf.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Seek<K> {
    /// The leaf's version when read (an iterator re-checks it before each element).
    pub(crate) ver: u64,
    /// Forward: the first slot the bound admits; backward: how many slots it admits.
    pub(crate) slot: usize,
    /// Where the iterator's limit stops it in this leaf: forward, the first slot at or
    /// after `slot` whose key fails the limit (or `count`); backward, the first slot below
    /// `slot` from which on every key passes it (or 0). Elements between `slot` and `stop`
    /// are the run this end may yield, each re-checked against `ver` when yielded.
    pub(crate) stop: usize,
    /// The leaf's element count (stable while `ver` is).
    pub(crate) count: usize,
    /// Forward: the upper fence (`None`: +inf, the last leaf); backward: the lower fence
    /// (`None`: -inf, the first leaf).
    pub(crate) fence: Option<K>,
}

/// Flat word offsets of one leaf's version word, keys and values (for [`Pma::read_flat`]:
/// an iterator computes them once per leaf).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Offsets {
    pub(crate) ver: usize,
    pub(crate) keys: usize,
    pub(crate) vals: usize,
}

impl<K: Key, V: Pod> Pma<K, V> {
    /// Looks `k` up, starting at the leaf the index names and stepping to a neighbour
    /// while the fences say the key is further left or right: `Some(found)` from a
    /// validated read of the owning leaf, `None` when a leaf on the way was busy (the
    /// caller retries). Written as one loop over [`Leaf`] views, so the
    /// common case (the first leaf owns the key) is straight-line code.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub(crate) fn get_in<Q: ?Sized + Ord>(&self, k: &Q) -> Option<Option<(K, V)>>
    where
        K: Borrow<Q>,
    {
        let mut j = self.locate(k);
        loop {
            self.prefetch_keys(j);
            let l = self.leaf(j);
            let v = l.version().load(Ordering::Acquire);
            if v & 1 != 0 {
                return None;
            }
            let meta = l.meta();
            let side = l.owns(meta, k);
            let mut found = None;
            let n = l.count_of(meta);
            if side == Cmp::Equal && n > 0 {
                let s = search::<K, Q>(l.ks, n, k);
                let key = l.key(s);
                if Borrow::<Q>::borrow(&key) == k {
                    found = Some((key, l.val(s)));
                }
            }
            fence(Ordering::Acquire);
            if (l.version().load(Ordering::Relaxed) ^ v) & !FROZEN != 0 {
                return None;
            }
            match side {
                Cmp::Equal => return Some(found),
                Cmp::Less if j > 0 => j -= 1,
                Cmp::Greater if j + 1 < self.leaves => j += 1,
                _ => return None,
            }
        }
    }

    /// A validated look at leaf `j` for an iterator moving forward from `from` (`front`) or
    /// backward from below `to` (`!front`): the leaf that owns that position says where in
    /// it the iterator starts, and where its `limit` stops it (forward: `limit(k)` is true
    /// for the keys before the end of the iteration; backward: for the keys after its start;
    /// either way monotone over the sorted keys).
    pub(crate) fn seek<Q: ?Sized + Ord>(
        &self,
        j: usize,
        at: Bound<&Q>,
        front: bool,
        limit: impl Fn(&K) -> bool,
    ) -> Probe<Seek<K>>
    where
        K: Borrow<Q>,
    {
        let Some(ver) = self.read_begin(j) else {
            return Probe::Busy;
        };
        let meta = self.meta(j);
        let side = match (at, front) {
            (Bound::Unbounded, true) if meta & LO_NEG_INF != 0 => Cmp::Equal,
            (Bound::Unbounded, true) => Cmp::Less,
            (Bound::Unbounded, false) if meta & HI_INF != 0 => Cmp::Equal,
            (Bound::Unbounded, false) => Cmp::Greater,
            (Bound::Included(k) | Bound::Excluded(k), true) => self.owns(j, meta, k),
            (Bound::Included(k), false) => self.owns(j, meta, k),
            (Bound::Excluded(k), false) => self.owns_below(j, meta, k),
        };
        let n = self.count_of(meta);
        let (mut slot, mut stop) = (0, 0);
        let mut fence = None;
        if side == Cmp::Equal {
            let (ks, _) = self.cells(j);
            // Unvalidated keys only steer indices that stay within `0..=n`; the version
            // check below discards a torn read.
            let first_after = |k: &Q, incl: bool| {
                if n == 0 {
                    return 0;
                }
                let s = search::<K, Q>(ks, n, k);
                let x = load::<K>(ks, s);
                s + usize::from(if incl {
                    Borrow::<Q>::borrow(&x) <= k
                } else {
                    Borrow::<Q>::borrow(&x) < k
                })
            };
            slot = match (at, front) {
                (Bound::Unbounded, true) => 0,
                (Bound::Unbounded, false) => n,
                // Forward: the first key `>= k` (Included) or `> k` (Excluded). An iterator
                // that read the previous leaf to its end resumes at this leaf's lower
                // fence: slot 0, no search.
                (Bound::Included(k), true)
                    if meta & LO_NEG_INF == 0 && Borrow::<Q>::borrow(&self.lo(j)) == k =>
                {
                    0
                }
                (Bound::Included(k), true) => first_after(k, false),
                (Bound::Excluded(k), true) => first_after(k, true),
                // Backward: the number of keys `<= k` (Included) or `< k` (Excluded).
                (Bound::Included(k), false) => first_after(k, true),
                (Bound::Excluded(k), false) => first_after(k, false),
            };
            stop = run_stop(ks, slot, n, front, &limit);
            fence = if front {
                (meta & HI_INF == 0).then(|| self.hi(j))
            } else {
                (meta & LO_NEG_INF == 0).then(|| self.lo(j))
            };
        }
        if !self.read_end(j, ver) {
            return Probe::Busy;
        }
        match side {
            Cmp::Less => Probe::Left,
            Cmp::Greater => Probe::Right,
            Cmp::Equal => Probe::Here(Seek {
                ver,
                slot,
                stop,
                count: n,
                fence,
            }),
        }
    }

    /// A validated look at the leaf next to `j` (`front`: `j + 1`, else `j - 1`) for an
    /// iterator that read leaf `j` to its end, whose fence there was `fence`: the whole
    /// of that leaf, if it is the one that continues exactly from `fence` (`None`: busy, or
    /// not that leaf; the caller then seeks).
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub(crate) fn seek_next(
        &self,
        j: usize,
        fence: &K,
        front: bool,
        limit: impl Fn(&K) -> bool,
    ) -> Option<(usize, Seek<K>)> {
        let j = if front { j + 1 } else { j.checked_sub(1)? };
        if j >= self.leaves {
            return None;
        }
        let ver = self.read_begin(j)?;
        let meta = self.meta(j);
        let continues = if front {
            meta & LO_NEG_INF == 0 && self.lo(j) == *fence
        } else {
            meta & HI_INF == 0 && self.hi(j) == *fence
        };
        let n = self.count_of(meta);
        let slot = if front { 0 } else { n };
        let (ks, _) = self.cells(j);
        let stop = run_stop(ks, slot, n, front, &limit);
        let fence = if front {
            (meta & HI_INF == 0).then(|| self.hi(j))
        } else {
            (meta & LO_NEG_INF == 0).then(|| self.lo(j))
        };
        (self.read_end(j, ver) && continues).then_some((
            j,
            Seek {
                ver,
                slot,
                stop,
                count: n,
                fence,
            },
        ))
    }

    /// Where leaf `j`'s version, keys and values lie in the flat words.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub(crate) fn offsets(&self, j: usize) -> Offsets {
        let b = self.base(j);
        Offsets {
            ver: b + VERSION,
            keys: b + FENCES + 2 * K::WORDS,
            vals: b + FENCES + 2 * K::WORDS + self.cap * K::WORDS,
        }
    }

    /// Element `s` of the leaf at `o` if its version is still exactly `ver` after reading
    /// it (`s` below the count read at that version).
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub(crate) fn read_flat(&self, o: Offsets, s: usize, ver: u64) -> Option<(K, V)> {
        let w = self.words();
        let e = (
            w.load::<K>(o.keys + s * K::WORDS),
            w.load::<V>(o.vals + s * V::WORDS),
        );
        fence(Ordering::Acquire);
        (w.at(o.ver).load(Ordering::Relaxed) == ver).then_some(e)
    }

    /// The leaf change of an iterator's internal iteration (the front): the run of leaf
    /// `j` (`l`, sought as `s`) was read to the leaf's end and fed; if the leaf is still
    /// unchanged (and not frozen) and leaf `j + 1` continues exactly at its upper fence, the
    /// whole of leaf `j + 1` as a new run, validated, with its view; `None` otherwise (the
    /// caller then steps and seeks as `next` does). The same checks as a cursor's step to
    /// [`Self::seek_next`], on leaf views sliced once each (no per-field bounds checks);
    /// a frozen leaf `j + 1` is left to that step too, so the run's version is exact (never
    /// frozen).
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub(crate) fn next_run<'a>(
        &'a self,
        j: usize,
        l: &Leaf<'a, K, V>,
        s: &Seek<K>,
        limit: impl Fn(&K) -> bool,
    ) -> Option<(usize, Leaf<'a, K, V>, Seek<K>)> {
        let fence_at = s.fence.as_ref()?;
        if s.stop != s.count || s.ver & FROZEN != 0 {
            return None;
        }
        // Leaf `j` unchanged since its seek: nothing in it is left to see.
        fence(Ordering::Acquire);
        if l.version().load(Ordering::Relaxed) != s.ver {
            return None;
        }
        let j = j + 1;
        if j >= self.leaves {
            return None;
        }
        let n = self.leaf(j);
        let ver = n.version().load(Ordering::Acquire);
        if ver & (1 | FROZEN) != 0 {
            return None;
        }
        let meta = n.meta();
        if meta & LO_NEG_INF != 0 || n.lo() != *fence_at {
            return None;
        }
        let count = n.count_of(meta);
        let stop = run_stop(n.ks, 0, count, true, &limit);
        let fence_next = (meta & HI_INF == 0).then(|| n.hi());
        fence(Ordering::Acquire);
        if n.version().load(Ordering::Relaxed) != ver {
            return None;
        }
        Some((
            j,
            n,
            Seek {
                ver,
                slot: 0,
                stop,
                count,
                fence: fence_next,
            },
        ))
    }

    /// A validated look at leaf `j` for `first`/`last`: (version, the first or last element).
    pub(crate) fn probe_edge(&self, j: usize, front: bool) -> Option<(u64, Option<(K, V)>)> {
        let v = self.read_begin(j)?;
        let n = self.count(j);
        let e = (n > 0).then(|| {
            let s = if front { 0 } else { n - 1 };
            (self.key(j, s), self.val(j, s))
        });
        self.read_end(j, v).then_some((v & !FROZEN, e))
    }

    /// The current version of leaf `j`, frozen bit cleared (for double-collect checks).
    pub(crate) fn version_now(&self, j: usize) -> u64 {
        self.version(j).load(Ordering::Acquire) & !FROZEN
    }
}

impl<K: Key, V: Pod> Leaf<'_, K, V> {
    /// Feeds the elements of slots `from..to` to `f` in order, each only after the leaf's
    /// version was seen still equal to `ver` after reading it; stops at the first that is
    /// not. Returns the accumulator, the slot it stopped at and the last key fed.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub(crate) fn fold_run<B>(
        &self,
        (from, to): (usize, usize),
        ver: u64,
        mut acc: B,
        f: &mut impl FnMut(B, (K, V)) -> B,
    ) -> (B, usize, Option<K>) {
        // Exact slices, bounds-checked once: the loop's loads need no checks.
        let (ks, vs) = (&self.ks[..to * K::WORDS], &self.vs[..to * V::WORDS]);
        let version = self.version();
        let mut s = from;
        let mut last = None;
        while s < to {
            let (k, v) = (load::<K>(ks, s), load::<V>(vs, s));
            fence(Ordering::Acquire);
            if version.load(Ordering::Relaxed) != ver {
                break;
            }
            s += 1;
            last = Some(k);
            acc = f(acc, (k, v));
        }
        (acc, s, last)
    }

    /// [`Self::fold_run`] of the values alone (the keys are not read): returns the last
    /// value fed instead of its key.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub(crate) fn fold_run_values<B>(
        &self,
        (from, to): (usize, usize),
        ver: u64,
        mut acc: B,
        f: &mut impl FnMut(B, V) -> B,
    ) -> (B, usize, Option<V>) {
        let vs = &self.vs[..to * V::WORDS];
        let version = self.version();
        let mut s = from;
        let mut last = None;
        while s < to {
            let v = load::<V>(vs, s);
            fence(Ordering::Acquire);
            if version.load(Ordering::Relaxed) != ver {
                super::cold();
                break;
            }
            s += 1;
            last = Some(v);
            acc = f(acc, v);
        }
        (acc, s, last)
    }
}

/// Where `limit` stops an iterator that starts at `slot` of a leaf of `n` keys `ks`
/// (see [`Seek::stop`]).
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
fn run_stop<K: Key>(
    ks: &[AtomicU64],
    slot: usize,
    n: usize,
    front: bool,
    limit: &impl Fn(&K) -> bool,
) -> usize {
    // The common cases first: the whole rest of the leaf, or none of it.
    if front {
        if slot == n || limit(&load::<K>(ks, n - 1)) {
            n
        } else {
            slot + partition(ks, slot, n - 1, limit)
        }
    } else if slot == 0 || limit(&load::<K>(ks, 0)) {
        0
    } else {
        1 + partition(ks, 1, slot, &|k| !limit(k))
    }
}

/// How many of the keys in slots `lo..hi` of `ks` (sorted) pass `p`, a predicate that is
/// true for a prefix of them: a binary search (the keys may be unvalidated: the answer
/// stays within `0..=hi - lo` whatever they hold).
fn partition<K: Key>(ks: &[AtomicU64], lo: usize, hi: usize, p: &impl Fn(&K) -> bool) -> usize {
    let (mut a, mut b) = (lo, hi);
    while a < b {
        let mid = a + (b - a) / 2;
        if p(&load::<K>(ks, mid)) {
            a = mid + 1;
        } else {
            b = mid;
        }
    }
    a - lo
}
