//! The concurrent operations over the current [`Pma`]: optimistic reads, single-leaf
//! writes, and structural changes (window rebalance, append, grow, shrink, clear) under
//! one structure lock.
//!
//! Lock order (deadlock freedom): an in-leaf writer holds at most one leaf lock and never
//! waits while holding it (a failed `try_lock` makes it drop everything and retry). Only the
//! holder of `structure` ever holds several leaf locks or waits for one, so no cycle of
//! waiters can form; it takes a window's leaves in address order within each growing step.

use super::{Geometry, Growth, Guard, LOWER_ROOT, Pma, Probe, Root, UPPER_ROOT, fits, pin};
use crate::key::{Key, Pod};
use crate::sync::{AtomicU64, Mutex, Ordering, lock, spin_wait};
use core::cmp::Ordering as Cmp;
use crossbeam_utils::CachePadded;

const LEN_STRIPES: usize = 16;

pub(crate) struct Map<K, V> {
    root: Root<K, V>,
    /// Serializes structural changes (anything that moves keys between leaves).
    structure: Mutex<()>,
    /// Element count, striped by leaf so writers on different leaves do not share a line.
    /// Each stripe is a wrapping signed counter; their sum is the length.
    len: [CachePadded<AtomicU64>; LEN_STRIPES],
    /// The geometries the array steps through as it grows and shrinks (its `narrow` is
    /// `CobTree::leaf_capacity`).
    growth: Growth,
    /// Never shrink below this (what `with_capacity` asked for).
    min_leaves: usize,
}

impl<K: Key, V: Pod> Map<K, V> {
    pub(crate) fn new(leaves: usize, cap: usize) -> Self {
        Self::with_growth(leaves, Growth::new::<K, V>(cap))
    }

    /// A map whose arrays step through `growth` (tests shorten its doubling phase).
    pub(crate) fn with_growth(leaves: usize, growth: Growth) -> Self {
        Map {
            root: Root::new(Pma::new_empty(leaves, growth.narrow)),
            structure: Mutex::new(()),
            len: core::array::from_fn(|_| CachePadded::new(AtomicU64::new(0))),
            growth,
            min_leaves: leaves,
        }
    }

    pub(crate) fn leaf_capacity(&self) -> usize {
        self.growth.narrow
    }

    fn add_len(&self, leaf: usize, d: i64) {
        self.len[leaf % LEN_STRIPES].fetch_add(d as u64, Ordering::Relaxed);
    }

    pub(crate) fn len(&self) -> usize {
        let s = self
            .len
            .iter()
            .fold(0u64, |a, c| a.wrapping_add(c.load(Ordering::Relaxed)));
        (s as i64).max(0) as usize
    }

    pub(crate) fn guard(&self) -> Guard {
        pin()
    }

    pub(crate) fn pma<'g>(&'g self, guard: &'g Guard) -> &'g Pma<K, V> {
        self.root.load(guard)
    }

    pub(crate) fn get(&self, k: &K) -> Option<V> {
        let guard = pin();
        let mut spins = 0;
        'retry: loop {
            let pma = self.root.load(&guard);
            let mut j = pma.locate(k);
            loop {
                match pma.probe_get(j, k) {
                    Probe::Here(v) => return v,
                    Probe::Left if j > 0 => j -= 1,
                    Probe::Right if j + 1 < pma.leaves() => j += 1,
                    _ => {
                        spin_wait(&mut spins);
                        continue 'retry;
                    }
                }
            }
        }
    }

    /// Locks the leaf that owns `k` in the current array, or returns `None` after backing
    /// off when it is busy (the caller retries from the root).
    fn lock_owner<'g>(&'g self, k: &K, guard: &'g Guard) -> Option<(&'g Pma<K, V>, usize)> {
        let pma = self.root.load(guard);
        let mut j = pma.locate(k);
        pma.prefetch_leaf(j);
        loop {
            if !pma.try_lock(j) {
                return None;
            }
            match pma.owns_locked(j, k) {
                Cmp::Equal => return Some((pma, j)),
                Cmp::Less => {
                    pma.unlock(j);
                    j -= 1;
                }
                Cmp::Greater => {
                    pma.unlock(j);
                    j += 1;
                }
            }
        }
    }

    pub(crate) fn insert(&self, k: K, v: V) -> Option<V> {
        let guard = pin();
        let mut spins = 0;
        loop {
            let Some((pma, j)) = self.lock_owner(&k, &guard) else {
                spin_wait(&mut spins);
                continue;
            };
            let r = pma.leaf_insert(j, k, v);
            pma.unlock(j);
            match r {
                Ok(old) => {
                    if old.is_none() {
                        self.add_len(j, 1);
                    }
                    return old;
                }
                Err(()) => return self.insert_slow(k, v, &guard),
            }
        }
    }

    /// Insert that needs room: under the structure lock, append a leaf, rebalance the
    /// smallest window that fits, or grow the array.
    fn insert_slow(&self, k: K, v: V, guard: &Guard) -> Option<V> {
        let _s = lock(&self.structure);
        // Only the structure-lock holder replaces the root or moves fences, so both are
        // stable from here on; in-leaf writers only change counts and cells.
        let pma = self.root.load(guard);
        let mut j = pma.locate(&k);
        loop {
            pma.lock_spin(j);
            match pma.owns_locked(j, &k) {
                Cmp::Equal => break,
                Cmp::Less => {
                    pma.unlock(j);
                    j -= 1;
                }
                Cmp::Greater => {
                    pma.unlock(j);
                    j += 1;
                }
            }
        }
        if let Ok(old) = pma.leaf_insert(j, k, v) {
            pma.unlock(j);
            if old.is_none() {
                self.add_len(j, 1);
            }
            return old;
        }
        self.add_len(j, 1);
        if pma.can_append(j, &k) {
            pma.open_next_leaf(j, k, v);
            pma.unlock(j);
            return None;
        }
        let append = pma.is_tail_append(j, &k);
        let (num, den) = UPPER_ROOT;
        let (mut lo, mut hi) = (j, j + 1);
        let height = pma.leaves().trailing_zeros();
        // Sorted input that has used every leaf has packed the array to the append fill
        // (about the root bound): grow now rather than rebalance the tail again and again.
        let full_tail = append && self.len() * den * 10 >= pma.leaves() * pma.cap() * num * 9;
        for level in (1..=height).filter(|_| !full_tail) {
            let a = (j >> level) << level;
            let b = a + (1 << level);
            (a..lo).for_each(|i| pma.lock_spin(i));
            (hi..b).for_each(|i| pma.lock_spin(i));
            (lo, hi) = (a, b);
            let total = pma.count_range(a, b) + 1;
            if fits(total, b - a, pma.cap(), level, height) {
                pma.redistribute(a, b, Some((k, v)));
                (a..b).for_each(|i| pma.unlock(i));
                return None;
            }
        }
        (0..lo).for_each(|i| pma.lock_spin(i));
        (hi..pma.leaves()).for_each(|i| pma.lock_spin(i));
        // Every leaf is locked and the whole array is too dense: grow.
        let n = pma.count_range(0, pma.leaves()) + 1;
        // One step up the growth sequence (x2; or x1.5 or x1.33 once the array is large: from
        // the root bound of 3/4 that is a density of 3/8, about 1/2 or 4/7), more only if that
        // would not hold `n` within the root bound (or, for sorted input, packed left to the
        // append fill).
        let mut to = self.growth.up(pma.geometry());
        while !to.holds(n, append) {
            to = self.growth.up(to);
        }
        let at = (j, pma.insert_pos(j, &k));
        let new = pma.rebuild(to, Some(((k, v), at)), append);
        debug_assert_eq!(n, new.count_range(0, new.live_end()));
        self.root.replace(new, guard);
        None
    }

    pub(crate) fn remove(&self, k: &K) -> Option<V> {
        let guard = pin();
        let mut spins = 0;
        let (pma, j) = loop {
            match self.lock_owner(k, &guard) {
                Some(x) => break x,
                None => spin_wait(&mut spins),
            }
        };
        let r = pma.leaf_remove(j, k);
        pma.unlock(j);
        let (old, left) = r?;
        self.add_len(j, -1);
        // A sparse leaf is the cheap hint to check the whole array's density.
        if left * LOWER_ROOT.1 < pma.cap() * LOWER_ROOT.0
            && (pma.leaves() > self.min_leaves || pma.cap() != self.growth.narrow)
            && self.len() * LOWER_ROOT.1 < pma.leaves() * pma.cap() * LOWER_ROOT.0
        {
            self.shrink(&guard);
        }
        Some(old)
    }

    /// Rebuilds the array smaller if it is below the lower root density.
    fn shrink(&self, guard: &Guard) {
        let _s = lock(&self.structure);
        let pma = self.root.load(guard);
        (0..pma.leaves()).for_each(|i| pma.lock_spin(i));
        let n = pma.count_range(0, pma.leaves());
        if n * LOWER_ROOT.1 >= pma.leaves() * pma.cap() * LOWER_ROOT.0 {
            (0..pma.leaves()).for_each(|i| pma.unlock(i));
            return;
        }
        let floor = Geometry {
            leaves: self.min_leaves,
            cap: self.growth.narrow,
        };
        let to = self.growth.larger(self.growth.for_len(n), floor);
        if self.growth.larger(to, pma.geometry()) == to {
            (0..pma.leaves()).for_each(|i| pma.unlock(i));
            return;
        }
        let new = pma.rebuild(to, None, false);
        self.root.replace(new, guard);
    }

    pub(crate) fn clear(&self) {
        let guard = pin();
        let _s = lock(&self.structure);
        let pma = self.root.load(&guard);
        (0..pma.leaves()).for_each(|i| pma.lock_spin(i));
        let n = pma.count_range(0, pma.leaves());
        self.add_len(0, -(n as i64));
        self.root
            .replace(Pma::new_empty(self.min_leaves, self.growth.narrow), &guard);
    }

    /// The first or last element, linearizable by double collect: the leaves scanned to
    /// reach it are re-checked unchanged (versions only grow, so an equal sum means every
    /// one is equal), so at one moment between the two passes they held exactly this.
    pub(crate) fn edge(&self, front: bool) -> Option<(K, V)> {
        let guard = pin();
        let mut spins = 0;
        'retry: loop {
            let pma = self.root.load(&guard);
            let live = pma.live_end();
            let mut sum = 0u64;
            let mut found = None;
            let mut last = 0;
            for i in 0..live {
                let j = if front { i } else { live - 1 - i };
                let Some((ver, e)) = pma.probe_edge(j, front) else {
                    spin_wait(&mut spins);
                    continue 'retry;
                };
                sum = sum.wrapping_add(ver);
                last = i;
                if e.is_some() {
                    found = e;
                    break;
                }
            }
            let mut again = 0u64;
            for i in 0..=last {
                let j = if front { i } else { live - 1 - i };
                again = again.wrapping_add(pma.version_now(j));
            }
            // An unchanged `live_end` matters for `last`: a new leaf past it would hold
            // larger keys (and opening it bumps the old last leaf's version anyway).
            if again == sum && pma.live_end() == live {
                return found;
            }
            spin_wait(&mut spins);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::CobTree;
    use crate::pma::geometry::wide_capacity;
    use std::collections::BTreeMap;

    /// The wide-leaf steps of the growth sequence, taken from the first leaf on (shipped
    /// maps take them only from `FINE_GROWTH_BYTES`, far beyond what the model tests
    /// reach): random inserts, removes, gets, ranges and appends against `BTreeMap`, in
    /// phases that grow the map and shrink it again, then a drain to empty.
    #[test]
    fn fine_growth_matches_btreemap() {
        // Under Miri two capacities and fewer operations keep the test under 20 s.
        let caps: &[usize] = if cfg!(miri) { &[4, 9] } else { &[4, 5, 9] };
        for &cap in caps {
            let growth = Growth {
                narrow: cap,
                wide: wide_capacity::<u32, u32>(cap),
                fine_from: 1,
            };
            let t: CobTree<u32, u32> = CobTree {
                map: Map::with_growth(1, growth),
                _kv: core::marker::PhantomData,
            };
            let mut m = BTreeMap::new();
            let (mut wide_arrays, mut most, mut shrunk) = (0, 0, false);
            let mut x = 0x2545_f491_4f6c_dd1d_u64 ^ cap as u64;
            // Six phases of `ops / 6` operations (see below), then a drain.
            let ops = if cfg!(miri) { 450 } else { 30_000 };
            let phase = ops / 6;
            for i in 0..ops {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let k = (x % 3_000) as u32;
                let v = i as u32;
                // Phases: two that mostly insert, one that mostly removes keys that are
                // there (so that the array shrinks again), twice.
                let removing = (i / phase) % 3 == 2;
                match (x >> 40) % 10 {
                    0..=4 if !removing => assert_eq!(t.insert(k, v), m.insert(k, v)),
                    0..=4 | 9 if removing => {
                        // A key that is there (the first from `k`, or the first at all).
                        let there = m.range(k..).next().or(m.iter().next()).map(|(k, _)| *k);
                        if let Some(there) = there {
                            assert_eq!(t.remove(&there), m.remove(&there));
                        }
                    }
                    5 | 6 => assert_eq!(t.get(&k), m.get(&k).copied()),
                    7 => {
                        let got: Vec<_> = t.range(k..k + 40).collect();
                        let want: Vec<_> = m.range(k..k + 40).map(|(a, b)| (*a, *b)).collect();
                        assert_eq!(got, want, "range {k}..{}", k + 40);
                    }
                    8 if !removing => {
                        let next = m.last_key_value().map_or(0, |(k, _)| k + 1);
                        assert_eq!(t.insert(next, v), m.insert(next, v));
                    }
                    _ => assert_eq!(t.remove(&k), m.remove(&k)),
                }
                let guard = t.map.guard();
                let g = t.map.pma(&guard).geometry();
                wide_arrays += usize::from(g.cap == growth.wide);
                shrunk |= g.leaves * g.cap < most;
                most = most.max(g.leaves * g.cap);
                assert_eq!(t.len(), m.len());
            }
            let all: Vec<_> = m.iter().map(|(a, b)| (*a, *b)).collect();
            assert_eq!(t.iter().collect::<Vec<_>>(), all);
            // Drain in a scattered order: every shrink step back down the sequence.
            let mut keys: Vec<u32> = m.keys().copied().collect();
            keys.sort_by_key(|k| k.wrapping_mul(0x9e37_79b9));
            for k in keys {
                assert_eq!(t.remove(&k), m.remove(&k));
                let guard = t.map.guard();
                let g = t.map.pma(&guard).geometry();
                shrunk |= g.leaves * g.cap < most;
            }
            assert!(t.is_empty() && t.iter().next().is_none());
            // The test ran through what it is for.
            assert!(
                wide_arrays > 0 && shrunk,
                "cap {cap}: wide {wide_arrays}, shrunk {shrunk}"
            );
        }
    }
}
