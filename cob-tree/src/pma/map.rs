//! The concurrent operations over the current [`Pma`]: optimistic reads, single-leaf
//! writes, and structural changes (window rebalance, append, grow, shrink, clear) under
//! one structure lock.
//!
//! Lock order (deadlock freedom): a thread that does not hold `structure` never waits for
//! a leaf while holding one: a failed `try_lock` makes it drop every leaf it holds and
//! retry (in-leaf writers hold one leaf; `pop_*` may hold a few, taken in order). Only the
//! holder of `structure` waits for leaves while holding others, so no cycle of waiters can
//! form. Rebuilds (grow, shrink, clear) do not lock the old array's leaves but *freeze*
//! them: readers go on reading the old array until the new one is published; writers that
//! reach a frozen leaf wait for the new array.

use super::key::Borrow;
use super::key::{Key, Pod};
use super::rebuild::Pack;
use super::{
    Edit, Geometry, Growth, Guard, Held, LOWER_ROOT, Pma, Root, UPPER_ROOT, Upsert, collect, fits,
    pin,
};
use crate::sync::{AtomicU64, Mutex, Ordering, lock, spin_wait};
use core::cmp::Ordering as Cmp;
use crossbeam_utils::CachePadded;

const LEN_STRIPES: usize = 16;

/// How many empty leaves a `pop_*` passes (holding them locked) before it takes the
/// structure lock and compacts them away.
const POP_SCAN: usize = 8;

/// Unlocks a leaf when dropped: a user closure that panics under a leaf lock (`update`,
/// `retain`, ...) leaves the leaf unlocked and consistent.
struct LeafLock<'a, K: Key, V: Pod> {
    pma: &'a Pma<K, V>,
    j: usize,
}

impl<K: Key, V: Pod> Drop for LeafLock<'_, K, V> {
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn drop(&mut self) {
        self.pma.unlock(self.j);
    }
}

/// What one attempt of [`Map::upsert`] on one array did.
enum Try<F, V> {
    Done(Option<V>),
    /// The owning leaf was busy (or frozen): retry from the root.
    Busy(F),
    /// The key is absent and its leaf full: the structural path.
    Full(F),
}

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

    #[cfg(test)]
    pub(crate) fn guard(&self) -> Guard {
        pin()
    }

    #[cfg(test)]
    pub(crate) fn pma<'g>(&'g self, guard: &'g Guard) -> &'g Pma<K, V> {
        self.root.load(guard)
    }

    /// The current array as an iterator holds it.
    pub(crate) fn acquire(&self) -> Held<'_, K, V> {
        self.root.acquire()
    }

    /// Whether `p` is the current array.
    pub(crate) fn is_current(&self, p: &Pma<K, V>) -> bool {
        self.root.is_current(p)
    }

    /// Bytes the map holds on the heap (see `CobTree::heap_bytes`).
    pub(crate) fn heap_bytes(&self) -> usize {
        self.root.heap_bytes(&pin())
    }

    /// Takes the current array out (for a by-value iterator), leaving an empty one.
    pub(crate) fn take_array(&mut self) -> std::sync::Arc<Pma<K, V>> {
        let empty = Pma::new_empty(1, self.growth.narrow);
        self.len.iter().for_each(|c| c.store(0, Ordering::Relaxed));
        self.root.swap_out(empty)
    }

    /// Runs `f` on the current array until it answers: once without a pin when the map
    /// is pinless, then pinned, backing off between attempts.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn read<R>(&self, f: impl Fn(&Pma<K, V>) -> Option<R>) -> R {
        self.read_counting(f, &mut 0)
    }

    /// [`read`](Self::read), adding the failed attempts to `retries`.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn read_counting<R>(&self, f: impl Fn(&Pma<K, V>) -> Option<R>, retries: &mut usize) -> R {
        if let Some(pma) = self.root.load_pinless() {
            if let Some(r) = f(pma) {
                return r;
            }
            *retries += 1;
        }
        self.read_pinned(f, retries)
    }

    #[inline(never)]
    fn read_pinned<R>(&self, f: impl Fn(&Pma<K, V>) -> Option<R>, retries: &mut usize) -> R {
        let guard = pin();
        let mut spins = 0;
        loop {
            if let Some(r) = f(self.root.load(&guard)) {
                return r;
            }
            *retries += 1;
            spin_wait(&mut spins);
        }
    }

    #[inline]
    pub(crate) fn get<Q: ?Sized + Ord>(&self, k: &Q) -> Option<(K, V)>
    where
        K: Borrow<Q>,
    {
        self.read(|pma| pma.get_in(k))
    }

    /// `get`, also saying how many times it had to retry (tests).
    #[cfg(all(test, not(loom)))]
    pub(crate) fn get_counting(&self, k: &K) -> (Option<(K, V)>, usize) {
        let mut retries = 0;
        let r = self.read_counting(|pma| pma.get_in(k), &mut retries);
        (r, retries)
    }

    /// Locks the leaf that owns `k` in `pma`, or `None` when a leaf on the way is busy or
    /// frozen (the caller backs off and retries from the root).
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn lock_owner<Q: ?Sized + Ord>(pma: &Pma<K, V>, k: &Q) -> Option<usize>
    where
        K: Borrow<Q>,
    {
        let mut j = pma.locate(k);
        pma.prefetch_leaf(j);
        loop {
            let l = pma.leaf(j);
            if !l.try_lock() {
                return None;
            }
            match l.owns(l.meta(), k) {
                Cmp::Equal => return Some(j),
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

    /// Inserts or updates `k` atomically: `f(old)` (run once, under the leaf's lock) says
    /// what to store, `None` for nothing. Returns the old value.
    #[inline]
    pub(crate) fn upsert<F: FnOnce(Option<V>) -> Option<V>>(&self, k: K, f: F) -> Option<V> {
        let mut f = f;
        if let Some(pma) = self.root.load_pinless() {
            match self.try_upsert(pma, k, f) {
                Try::Done(old) => return old,
                Try::Busy(g) => f = g,
                Try::Full(g) => return self.upsert_slow(k, g, None),
            }
        }
        self.upsert_pinned(k, f)
    }

    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn try_upsert<F: FnOnce(Option<V>) -> Option<V>>(
        &self,
        pma: &Pma<K, V>,
        k: K,
        f: F,
    ) -> Try<F, V> {
        let Some(j) = Self::lock_owner(pma, &k) else {
            return Try::Busy(f);
        };
        let lock = LeafLock { pma, j };
        let r = pma.leaf_upsert(j, k, f);
        drop(lock);
        match r {
            Upsert::Done(old, added) => {
                if added {
                    self.add_len(j, 1);
                }
                Try::Done(old)
            }
            Upsert::Full(f) => Try::Full(f),
        }
    }

    #[inline(never)]
    fn upsert_pinned<F: FnOnce(Option<V>) -> Option<V>>(&self, k: K, f: F) -> Option<V> {
        let guard = pin();
        let mut spins = 0;
        let mut f = f;
        loop {
            match self.try_upsert(self.root.load(&guard), k, f) {
                Try::Done(old) => return old,
                Try::Busy(g) => f = g,
                Try::Full(g) => return self.upsert_slow(k, g, Some(guard)),
            }
            spin_wait(&mut spins);
        }
    }

    /// Upsert that may need room: under the structure lock, with the owning leaf locked,
    /// run `f` and, if it asks to insert and the leaf is full, append a leaf, rebalance the
    /// smallest window that fits, or grow the array. `guard`: the caller's pin, if any (a
    /// map that has only had kept arrays needs none; whether it has is stable while the
    /// structure lock is held).
    #[inline(never)]
    fn upsert_slow<F: FnOnce(Option<V>) -> Option<V>>(
        &self,
        k: K,
        f: F,
        guard: Option<Guard>,
    ) -> Option<V> {
        let s = lock(&self.structure);
        // Only the structure-lock holder replaces the root, freezes or moves fences, so the
        // array is current and unfrozen and its fences are stable from here on; in-leaf
        // writers only change counts and cells.
        let guard = match self.root.load_pinless() {
            Some(_) => guard,
            None => Some(guard.unwrap_or_else(pin)),
        };
        let pma = match &guard {
            Some(g) => self.root.load(g),
            None => self
                .root
                .load_pinless()
                .expect("still pinless: only the structure-lock holder changes that"),
        };
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
        let lock = LeafLock { pma, j };
        let f = match pma.leaf_upsert(j, k, f) {
            Upsert::Done(old, added) => {
                drop(lock);
                if added {
                    self.add_len(j, 1);
                }
                return old;
            }
            Upsert::Full(f) => f,
        };
        // Absent, and no room: `f` decides now (once, with the leaf locked).
        let v = f(None)?;
        core::mem::forget(lock);
        self.add_len(j, 1);
        if pma.can_append(j, &k) {
            pma.open_next_leaf(j, k, v);
            pma.unlock(j);
            return None;
        }
        let deferred = match self.insert_rebalance(pma, j, k, v, guard.as_ref()) {
            Ok(()) => return None,
            Err(deferred) => deferred,
        };
        drop(s);
        drop(guard);
        if deferred {
            collect();
        }
        None
    }

    /// Makes room for `(k, v)` in the window around locked leaf `j` (structure lock held):
    /// rebalances the smallest window within its density bound (`Ok`), or grows the array
    /// (`Err(true)` when the old array went to the collector: the caller runs [`collect`]
    /// once it has unpinned).
    fn insert_rebalance(
        &self,
        pma: &Pma<K, V>,
        j: usize,
        k: K,
        v: V,
        guard: Option<&Guard>,
    ) -> Result<(), bool> {
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
                pma.redistribute(a, b, Some((k, v)), Pack::Even);
                (a..b).for_each(|i| pma.unlock(i));
                return Ok(());
            }
        }
        // The whole array is too dense: grow. The leaves held stay unchanged and are
        // frozen as they are unlocked; the rest are frozen (waiting for their writers).
        (lo..hi).for_each(|i| pma.unlock_frozen(i));
        (0..lo).chain(hi..pma.leaves()).for_each(|i| pma.freeze(i));
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
        Err(self.root.replace(new, guard))
    }

    /// Locks the owner of `k` and runs `op` on it; then accounts for a removal and shrinks
    /// if the array became sparse. `op` returns the removed element and the leaf's count.
    #[inline]
    fn remove_with<Q: ?Sized + Ord>(
        &self,
        k: &Q,
        op: impl Fn(&Pma<K, V>, usize) -> Option<(K, V, usize)>,
    ) -> Option<(K, V)>
    where
        K: Borrow<Q>,
    {
        if let Some(pma) = self.root.load_pinless()
            && let Some(j) = Self::lock_owner(pma, k)
        {
            let r = op(pma, j);
            pma.unlock(j);
            let (rk, rv, left) = r?;
            self.removed(j, left, pma.geometry());
            return Some((rk, rv));
        }
        let guard = pin();
        let mut spins = 0;
        let (r, j, geo) = loop {
            let pma = self.root.load(&guard);
            if let Some(j) = Self::lock_owner(pma, k) {
                let r = op(pma, j);
                pma.unlock(j);
                break (r, j, pma.geometry());
            }
            spin_wait(&mut spins);
        };
        drop(guard);
        let (rk, rv, left) = r?;
        self.removed(j, left, geo);
        Some((rk, rv))
    }

    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn removed(&self, j: usize, left: usize, geo: Geometry) {
        self.add_len(j, -1);
        // A sparse leaf is the cheap hint to check the whole array's density.
        if left * LOWER_ROOT.1 < geo.cap * LOWER_ROOT.0 && self.may_shrink(geo) {
            self.shrink();
        }
    }

    /// Whether an array of geometry `geo` is below the lower root density and above the
    /// floor.
    fn may_shrink(&self, geo: Geometry) -> bool {
        (geo.leaves > self.min_leaves || geo.cap != self.growth.narrow)
            && self.len() * LOWER_ROOT.1 < geo.leaves * geo.cap * LOWER_ROOT.0
    }

    /// Replaces the value of `k` by `f(&old)` under its leaf's lock: `(old, new)`.
    pub(crate) fn update<Q: ?Sized + Ord>(&self, k: &Q, f: impl FnOnce(&V) -> V) -> Option<(V, V)>
    where
        K: Borrow<Q>,
    {
        let guard = pin();
        let mut spins = 0;
        loop {
            let pma = self.root.load(&guard);
            if let Some(j) = Self::lock_owner(pma, k) {
                // Unlocks after `f` ran (or as it unwinds).
                let _lock = LeafLock { pma, j };
                return pma.leaf_update(j, k, f);
            }
            spin_wait(&mut spins);
        }
    }

    pub(crate) fn remove<Q: ?Sized + Ord>(&self, k: &Q) -> Option<(K, V)>
    where
        K: Borrow<Q>,
    {
        self.remove_with(k, |pma, j| pma.leaf_remove(j, k))
    }

    /// Keeps, replaces or removes `k`'s value as `f(&value)` says, deciding under the
    /// leaf's lock (`f` runs there, exactly once if `k` is present; if it panics the leaf
    /// unlocks unchanged). `None`: absent; `Some(Ok(entry))`: removed; `Some(Err(old))`:
    /// kept or replaced.
    pub(crate) fn edit<Q: ?Sized + Ord>(
        &self,
        k: &Q,
        f: impl FnOnce(&V) -> Edit<V>,
    ) -> Option<Result<(K, V), V>>
    where
        K: Borrow<Q>,
    {
        let guard = pin();
        let mut spins = 0;
        let mut f = Some(f);
        let (r, j, geo) = loop {
            let pma = self.root.load(&guard);
            if let Some(j) = Self::lock_owner(pma, k) {
                let lock = LeafLock { pma, j };
                let f = f.take().expect("edit: the closure runs once");
                let r = pma.leaf_edit(j, k, f);
                drop(lock);
                break (r, j, pma.geometry());
            }
            spin_wait(&mut spins);
        };
        drop(guard);
        match r? {
            Ok((rk, rv, left)) => {
                self.removed(j, left, geo);
                Some(Ok((rk, rv)))
            }
            Err(v) => Some(Err(v)),
        }
    }

    /// Rebuilds the array smaller if it is below the lower root density.
    #[inline(never)]
    fn shrink(&self) {
        let guard = pin();
        let s = lock(&self.structure);
        let pma = self.root.load(&guard);
        let n = pma.count_range(0, pma.live_end());
        if n * LOWER_ROOT.1 >= pma.leaves() * pma.cap() * LOWER_ROOT.0 {
            return;
        }
        let floor = Geometry {
            leaves: self.min_leaves,
            cap: self.growth.narrow,
        };
        let to = self.growth.larger(self.growth.for_len(n), floor);
        if self.growth.larger(to, pma.geometry()) == to {
            return;
        }
        (0..pma.leaves()).for_each(|i| pma.freeze(i));
        // Counted again now that nothing can change.
        let n = pma.count_range(0, pma.leaves());
        let to = self.growth.larger(self.growth.for_len(n), floor);
        if self.growth.larger(to, pma.geometry()) == to {
            (0..pma.leaves()).for_each(|i| pma.thaw(i));
            return;
        }
        let new = pma.rebuild(to, None, false);
        let deferred = self.root.replace(new, Some(&guard));
        drop(s);
        drop(guard);
        if deferred {
            collect();
        }
    }

    pub(crate) fn clear(&self) {
        let guard = pin();
        let s = lock(&self.structure);
        let pma = self.root.load(&guard);
        let floor = Geometry {
            leaves: self.min_leaves,
            cap: self.growth.narrow,
        };
        (0..pma.leaves()).for_each(|i| pma.freeze(i));
        let n = pma.count_range(0, pma.leaves());
        if n == 0 && pma.geometry() == floor {
            // Already what `clear` would publish: replacing it would only retire (and, on a
            // pinless map, keep) one more array.
            (0..pma.leaves()).for_each(|i| pma.thaw(i));
            return;
        }
        self.add_len(0, -(n as i64));
        let empty = Pma::new_empty(floor.leaves, floor.cap);
        let deferred = self.root.replace(empty, Some(&guard));
        drop(s);
        drop(guard);
        if deferred {
            collect();
        }
    }

    /// The first or last element, linearizable by double collect: the leaves scanned to
    /// reach it are re-checked unchanged (versions only grow, so an equal sum means every
    /// one is equal), so at one moment between the two passes they held exactly this.
    pub(crate) fn edge(&self, front: bool) -> Option<(K, V)> {
        self.read(|pma| {
            let live = pma.live_end();
            let mut sum = 0u64;
            let mut found = None;
            let mut last = 0;
            for i in 0..live {
                let j = if front { i } else { live - 1 - i };
                let (ver, e) = pma.probe_edge(j, front)?;
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
            (again == sum && pma.live_end() == live).then_some(found)
        })
    }

    /// Removes the first (`front`) or last element atomically: the leaves before it are
    /// locked and seen empty while it is taken from its leaf.
    pub(crate) fn pop(&self, front: bool) -> Option<(K, V)> {
        let r = {
            let guard = pin();
            let mut spins = 0;
            loop {
                let pma = self.root.load(&guard);
                match Self::try_pop(pma, front) {
                    Ok(r) => break r.map(|(k, v, j, left)| (k, v, j, left, pma.geometry())),
                    Err(true) => spin_wait(&mut spins),
                    Err(false) => break self.pop_slow(front, &guard),
                }
            }
        };
        let (k, v, j, left, geo) = r?;
        self.removed(j, left, geo);
        Some((k, v))
    }

    /// One attempt at a pop holding leaves by `try_lock` only: `Err(true)`: busy, retry;
    /// `Err(false)`: more than [`POP_SCAN`] empty leaves, take the slow path.
    fn try_pop(pma: &Pma<K, V>, front: bool) -> Result<Option<(K, V, usize, usize)>, bool> {
        let live = pma.live_end();
        let order = |i: usize| if front { i } else { live - 1 - i };
        let release = |upto: usize| (0..upto).for_each(|i| pma.unlock(order(i)));
        for i in 0..live {
            let j = order(i);
            if !pma.try_lock(j) {
                release(i);
                return Err(true);
            }
            // From the back the first leaf must still be the last one that owns keys.
            if !front && i == 0 && !pma.is_last_locked(j) {
                release(1);
                return Err(true);
            }
            if let Some((k, v, left)) = pma.leaf_pop(j, front) {
                release(i + 1);
                return Ok(Some((k, v, j, left)));
            }
            let end = if front { pma.is_last_locked(j) } else { j == 0 };
            if end {
                release(i + 1);
                return Ok(None);
            }
            if i >= POP_SCAN {
                release(i + 1);
                return Err(false);
            }
        }
        release(live);
        Err(true)
    }

    /// A pop under the structure lock, which then compacts the empty leaves it passed.
    #[allow(clippy::type_complexity)]
    fn pop_slow(&self, front: bool, guard: &Guard) -> Option<(K, V, usize, usize, Geometry)> {
        let _s = lock(&self.structure);
        let pma = self.root.load(guard);
        let live = pma.live_end();
        let order = |i: usize| if front { i } else { live - 1 - i };
        let mut r = None;
        let mut passed = 0;
        for i in 0..live {
            let j = order(i);
            pma.lock_spin(j);
            passed = i + 1;
            if let Some((k, v, left)) = pma.leaf_pop(j, front) {
                r = Some((k, v, j, left, pma.geometry()));
                break;
            }
        }
        (0..passed).for_each(|i| pma.unlock(order(i)));
        if passed > POP_SCAN {
            let (a, b) = if front {
                (0, passed)
            } else {
                (live - passed, live)
            };
            self.compact(pma, a, b, front);
        }
        r
    }

    /// Removes the empty leaves `a..b` that a pop passed (structure lock held): the
    /// smallest aligned window covering them that holds any element is packed towards the
    /// popped end (`front`: its first leaves, at the append fill), so the next pops find
    /// elements at once, and each compaction is paid for by the pops that empty it again.
    /// A window that reaches the last live leaf (front) or that the fill cannot hold is
    /// spread evenly instead.
    fn compact(&self, pma: &Pma<K, V>, a: usize, b: usize, front: bool) {
        let mut level = 0;
        while (a >> level) != ((b - 1) >> level) {
            level += 1;
        }
        let height = pma.leaves().trailing_zeros();
        let live = pma.live_end();
        while level <= height {
            let wa = (a >> level) << level;
            let wb = wa + (1 << level);
            (wa..wb).for_each(|i| pma.lock_spin(i));
            let total = pma.count_range(wa, wb.min(live));
            if total > 0 {
                let fits_fill = total <= (wb - wa) * super::geometry::append_fill(pma.cap());
                let pack = match (front, fits_fill) {
                    (true, true) if wb < live => Pack::Left,
                    (false, true) => Pack::Right,
                    _ => Pack::Even,
                };
                pma.redistribute(wa, wb, None, pack);
                (wa..wb).for_each(|i| pma.unlock(i));
                return;
            }
            (wa..wb).for_each(|i| pma.unlock(i));
            level += 1;
        }
    }

    /// Keeps the elements for which `f` is true, leaf by leaf (each under its lock).
    pub(crate) fn retain(&self, f: &mut impl FnMut(&K, &V) -> bool) {
        let mut from: Option<K> = None;
        loop {
            let guard = pin();
            let mut spins = 0;
            let (removed, hi, j, geo) = loop {
                let pma = self.root.load(&guard);
                let j = match &from {
                    None => pma.try_lock(0).then_some(0),
                    Some(k) => Self::lock_owner(pma, k),
                };
                if let Some(j) = j {
                    let lock = LeafLock { pma, j };
                    let start = from.as_ref().map_or(0, |k| pma.insert_pos(j, k));
                    let removed = pma.leaf_retain(j, start, f);
                    let hi = pma.hi_locked(j);
                    drop(lock);
                    break (removed, hi, j, pma.geometry());
                }
                spin_wait(&mut spins);
            };
            drop(guard);
            if removed > 0 {
                self.add_len(j, -(removed as i64));
                if self.may_shrink(geo) {
                    self.shrink();
                }
            }
            match hi {
                Some(h) => from = Some(h),
                None => return,
            }
        }
    }
}
#[cfg(test)]
mod tests {
    use super::*;
    use crate::CobTree;
    use crate::pma::inl::Inl;

    /// Readers never wait on a rebuild: a reader thread keeps reading stable keys while a
    /// writer appends keys past them, forcing growth after growth (each copying the whole
    /// array). The old array's leaves are frozen, not locked, so the reader goes on reading
    /// it until the new one is published: it must never retry. It prints its longest
    /// single `get` (timing is reported, never asserted).
    #[cfg(not(loom))]
    #[test]
    fn readers_do_not_wait_for_growth() {
        let (stable, appended) = if cfg!(miri) {
            (300u64, 600u64)
        } else {
            (100_000, 400_000)
        };
        let t: CobTree<u64, u64> = CobTree::new();
        for k in 0..stable {
            t.insert(k * 2, k);
        }
        let geometry = |t: &CobTree<u64, u64>| {
            let g = t.words().guard();
            t.words().pma(&g).geometry()
        };
        let start = geometry(&t);
        let done = crate::sync::AtomicBool::new(false);
        let (gets, retries, longest) = std::thread::scope(|s| {
            let (t, done) = (&t, &done);
            let reader = s.spawn(move || {
                let (mut gets, mut retries, mut longest) =
                    (0u64, 0usize, core::time::Duration::ZERO);
                let mut x = 7u64;
                while !done.load(Ordering::Relaxed) {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let k = x % stable;
                    let at = std::time::Instant::now();
                    let (r, n) = t.words().get_counting(&Inl::new(k * 2));
                    let r = r.map(|(a, b)| (a.get(), b.get()));
                    longest = longest.max(at.elapsed());
                    assert_eq!(r, Some((k * 2, k)), "stable key {} missed", k * 2);
                    (gets, retries) = (gets + 1, retries + n);
                }
                (gets, retries, longest)
            });
            for k in 0..appended {
                t.insert(stable * 2 + k, k);
            }
            done.store(true, Ordering::Relaxed);
            reader.join().unwrap()
        });
        let end = geometry(&t);
        println!(
            "{gets} gets while the array grew from {start:?} to {end:?}: {retries} retries, \
             longest get {longest:?}"
        );
        assert!(
            end.leaves * end.cap >= 2 * start.leaves * start.cap,
            "the array grew"
        );
        assert_eq!(retries, 0, "a reader retried during growth");
    }
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
                wide: wide_capacity::<Inl<u32>, Inl<u32>>(cap),
                fine_from: 1,
            };
            let t: CobTree<u32, u32> = CobTree::from_words(Map::with_growth(1, growth));
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
                let guard = t.words().guard();
                let g = t.words().pma(&guard).geometry();
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
                let guard = t.words().guard();
                let g = t.words().pma(&guard).geometry();
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
