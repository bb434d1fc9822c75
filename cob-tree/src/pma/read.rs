//! Validated (optimistic) reads of one leaf: version (even) -> fences, count, cells ->
//! acquire fence -> version again. Readers write nothing shared.

use super::{FENCES, FROZEN, HI_INF, LO_NEG_INF, Pma, Probe, VERSION, load, search};
use crate::key::{Key, Pod};
use crate::sync::{Ordering, fence};
use core::borrow::Borrow;
use core::cmp::Ordering as Cmp;
use core::ops::Bound;

/// Where a validated seek left an iterator in one leaf.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Seek<K> {
    /// The leaf's version when read (an iterator re-checks it before each element).
    pub(crate) ver: u64,
    /// Forward: the first slot the bound admits; backward: how many slots it admits.
    pub(crate) slot: usize,
    /// The leaf's element count (stable while `ver` is).
    pub(crate) count: usize,
    /// Forward: the upper fence (`None`: +inf, the last leaf); backward: the lower fence
    /// (`None`: -inf, the first leaf).
    pub(crate) fence: Option<K>,
}

impl<K: Key, V: Pod> Pma<K, V> {
    /// Looks `k` up in leaf `j`: the stored key and its value.
    #[inline(always)]
    pub(crate) fn probe_get<Q: ?Sized + Ord>(&self, j: usize, k: &Q) -> Probe<Option<(K, V)>>
    where
        K: Borrow<Q>,
    {
        self.prefetch_keys(j);
        let Some(v) = self.read_begin(j) else {
            return Probe::Busy;
        };
        let meta = self.meta(j);
        let side = self.owns(j, meta, k);
        let mut found = None;
        if side == Cmp::Equal {
            let n = self.count_of(meta);
            let (ks, vs) = self.cells(j);
            if n > 0 {
                let s = search::<K, Q>(ks, n, k);
                let key = load::<K>(ks, s);
                if key.borrow() == k {
                    found = Some((key, load::<V>(vs, s)));
                }
            }
        }
        if !self.read_end(j, v) {
            return Probe::Busy;
        }
        match side {
            Cmp::Less => Probe::Left,
            Cmp::Greater => Probe::Right,
            Cmp::Equal => Probe::Here(found),
        }
    }

    /// A validated look at leaf `j` for an iterator moving forward from `from` (`front`) or
    /// backward from below `to` (`!front`): the leaf that owns that position says where in
    /// it the iterator starts.
    pub(crate) fn seek<Q: ?Sized + Ord>(
        &self,
        j: usize,
        at: Bound<&Q>,
        front: bool,
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
        let mut slot = 0;
        let mut fence = None;
        if side == Cmp::Equal {
            let (ks, _) = self.cells(j);
            // Unvalidated keys only steer an index that stays within `0..=n`; the version
            // check below discards a torn read.
            let first_after = |k: &Q, incl: bool| {
                if n == 0 {
                    return 0;
                }
                let s = search::<K, Q>(ks, n, k);
                let x = load::<K>(ks, s);
                s + usize::from(if incl {
                    x.borrow() <= k
                } else {
                    x.borrow() < k
                })
            };
            slot = match (at, front) {
                (Bound::Unbounded, true) => 0,
                (Bound::Unbounded, false) => n,
                // Forward: the first key `>= k` (Included) or `> k` (Excluded). An iterator
                // that read the previous leaf to its end resumes at this leaf's lower
                // fence: slot 0, no search.
                (Bound::Included(k), true)
                    if meta & LO_NEG_INF == 0 && self.lo(j).borrow() == k =>
                {
                    0
                }
                (Bound::Included(k), true) => first_after(k, false),
                (Bound::Excluded(k), true) => first_after(k, true),
                // Backward: the number of keys `<= k` (Included) or `< k` (Excluded).
                (Bound::Included(k), false) => first_after(k, true),
                (Bound::Excluded(k), false) => first_after(k, false),
            };
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
                count: n,
                fence,
            }),
        }
    }

    /// Element `s` of leaf `j` if the leaf is still exactly at version `ver` after reading
    /// it (`s` below the count read at that version).
    #[inline(always)]
    pub(crate) fn read_at(&self, j: usize, s: usize, ver: u64) -> Option<(K, V)> {
        // One slice of the leaf, so the three loads share one bounds check per index.
        let leaf = self.span(self.base(j), self.stride);
        let ko = FENCES + 2 * K::WORDS + s * K::WORDS;
        let vo = FENCES + 2 * K::WORDS + self.cap * K::WORDS + s * V::WORDS;
        let e = (load::<K>(&leaf[ko..], 0), load::<V>(&leaf[vo..], 0));
        fence(Ordering::Acquire);
        (leaf[VERSION].load(Ordering::Relaxed) == ver).then_some(e)
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
