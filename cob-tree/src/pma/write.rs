//! Writes to one leaf whose lock the caller holds: insert or update through a closure,
//! remove, pop an end, retain, open the next leaf (the append fast path).

use super::geometry::append_fill;
use super::key::Borrow;
use super::key::{Key, Pod};
use super::{FENCES, HI_INF, META, Pma, copy_words};
use crate::sync::Ordering;
use core::cmp::Ordering as Cmp;

/// What [`Pma::leaf_upsert`] did.
pub(crate) enum Upsert<F, V> {
    /// The closure ran: the old value (if the key was present), and whether an element
    /// was added.
    Done(Option<V>, bool),
    /// The key is absent and the leaf has no room: the closure, not run, for the
    /// structural path.
    Full(F),
}

/// What [`Pma::leaf_edit`]'s closure asks for.
pub(crate) enum Edit<V> {
    Keep,
    Set(V),
    Remove,
}

impl<K: Key, V: Pod> Pma<K, V> {
    /// Where `k` lies relative to locked leaf `j` (fences are stable while it is locked).
    pub(crate) fn owns_locked<Q: ?Sized + Ord>(&self, j: usize, k: &Q) -> Cmp
    where
        K: Borrow<Q>,
    {
        self.owns(j, self.meta(j), k)
    }

    /// The slot of `k` among the `n` keys of locked leaf `j` (`Ok`), or where it would go.
    /// A small array is in cache, where a binary search costs the fewest instructions; in
    /// a prefetched one a linear scan starts on the leaf's first lines while the rest
    /// arrive (with the leaf in cache it beat the dependent loads of a binary search in
    /// trial builds).
    fn find<Q: ?Sized + Ord>(&self, j: usize, n: usize, k: &Q) -> Result<usize, usize>
    where
        K: Borrow<Q>,
    {
        self.leaf(j).find(n, k, !self.prefetch)
    }

    fn set_count(&self, j: usize, meta: u64, n: usize) {
        self.leaf(j).set_count(meta, n);
    }

    /// Inserts or updates `k` in locked leaf `j`: `f(old)` says what to store (`None`:
    /// leave the key as it is, absent or not). `f` runs before anything changes, so if it
    /// panics the leaf is as it was. `Full(f)`: the key is absent and the leaf has no room
    /// (or the append fast path wants a fresh leaf); `f` has not run.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub(crate) fn leaf_upsert<F: FnOnce(Option<V>) -> Option<V>>(
        &self,
        j: usize,
        k: K,
        f: F,
    ) -> Upsert<F, V> {
        let l = self.leaf(j);
        let meta = l.meta();
        let n = l.count_of(meta);
        match l.find(n, &k, !self.prefetch) {
            Ok(s) => {
                let old = l.val(s);
                if let Some(v) = f(Some(old)) {
                    l.set_val(s, v);
                }
                Upsert::Done(Some(old), false)
            }
            Err(pos) => {
                if n == self.cap || self.wants_fresh_leaf(j, meta, n, pos) {
                    return Upsert::Full(f);
                }
                let Some(v) = f(None) else {
                    return Upsert::Done(None, false);
                };
                l.insert_at(meta, n, pos, k, v);
                Upsert::Done(None, true)
            }
        }
    }

    /// Append fast path: an insert past the last key of the last live leaf, which is
    /// already filled to the root density, opens the next (unused) leaf instead of packing
    /// this one full, so sorted input never triggers window rebalances.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn wants_fresh_leaf(&self, j: usize, meta: u64, n: usize, pos: usize) -> bool {
        meta & HI_INF != 0 && pos == n && n >= append_fill(self.cap) && j + 1 < self.leaves
    }

    /// Replaces the value of `k` in locked leaf `j` by `f(&old)` (run before anything
    /// changes); returns `(old, new)`, or `None` if `k` is absent (then `f` does not run).
    pub(crate) fn leaf_update<Q: ?Sized + Ord>(
        &self,
        j: usize,
        k: &Q,
        f: impl FnOnce(&V) -> V,
    ) -> Option<(V, V)>
    where
        K: Borrow<Q>,
    {
        let l = self.leaf(j);
        let n = l.count_of(l.meta());
        let s = l.find(n, k, !self.prefetch).ok()?;
        let old = l.val(s);
        let new = f(&old);
        l.set_val(s, new);
        Some((old, new))
    }

    /// Removes `k` from locked leaf `j`; returns the stored key, its value and the leaf's
    /// new count.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub(crate) fn leaf_remove<Q: ?Sized + Ord>(&self, j: usize, k: &Q) -> Option<(K, V, usize)>
    where
        K: Borrow<Q>,
    {
        let l = self.leaf(j);
        let meta = l.meta();
        let n = l.count_of(meta);
        let s = l.find(n, k, !self.prefetch).ok()?;
        let (k, v) = l.take(meta, n, s);
        Some((k, v, n - 1))
    }

    /// Edits `k`'s value in locked leaf `j` as `f(&value)` says (run before anything
    /// changes): `Ok((key, value, new count))` when removed, `Err(old value)` when kept or
    /// replaced.
    pub(crate) fn leaf_edit<Q: ?Sized + Ord>(
        &self,
        j: usize,
        k: &Q,
        f: impl FnOnce(&V) -> Edit<V>,
    ) -> Option<Result<(K, V, usize), V>>
    where
        K: Borrow<Q>,
    {
        let l = self.leaf(j);
        let meta = l.meta();
        let n = l.count_of(meta);
        let s = l.find(n, k, !self.prefetch).ok()?;
        let v = l.val(s);
        match f(&v) {
            Edit::Keep => Some(Err(v)),
            Edit::Set(new) => {
                l.set_val(s, new);
                Some(Err(v))
            }
            Edit::Remove => {
                let (k, v) = l.take(meta, n, s);
                Some(Ok((k, v, n - 1)))
            }
        }
    }

    /// Removes slot `s` of the `n` elements of locked leaf `j`.
    fn take(&self, j: usize, meta: u64, n: usize, s: usize) -> (K, V, usize) {
        let (k, v) = self.leaf(j).take(meta, n, s);
        (k, v, n - 1)
    }

    /// Removes the first (`front`) or last element of locked leaf `j`, if it has any.
    pub(crate) fn leaf_pop(&self, j: usize, front: bool) -> Option<(K, V, usize)> {
        let meta = self.meta(j);
        let n = self.count_of(meta);
        (n > 0).then(|| self.take(j, meta, n, if front { 0 } else { n - 1 }))
    }

    /// The element count of leaf `j`, read without validation: for an array no thread
    /// writes any more (a by-value iterator's).
    pub(crate) fn count_at(&self, j: usize) -> usize {
        self.count(j)
    }

    /// Element `s` of leaf `j`, read without validation (as [`count_at`](Self::count_at)).
    pub(crate) fn elem(&self, j: usize, s: usize) -> (K, V) {
        (self.key(j, s), self.val(j, s))
    }

    /// Whether locked leaf `j` is the last one that owns keys (its upper fence is +inf).
    pub(crate) fn is_last_locked(&self, j: usize) -> bool {
        self.meta(j) & HI_INF != 0
    }

    /// The upper fence of locked leaf `j` (`None`: +inf).
    pub(crate) fn hi_locked(&self, j: usize) -> Option<K> {
        (self.meta(j) & HI_INF == 0).then(|| self.hi(j))
    }

    /// Keeps the elements from slot `start` on of locked leaf `j` for which `f` is true, in
    /// order; returns how many it removed. If `f` panics, the elements not yet visited stay
    /// and the leaf is left consistent (the caller's lock guard unlocks it).
    pub(crate) fn leaf_retain(
        &self,
        j: usize,
        start: usize,
        f: &mut impl FnMut(&K, &V) -> bool,
    ) -> usize {
        /// Closes the gap left by the removed elements, on success and on unwind alike.
        struct Compact<'a, K: Key, V: Pod> {
            pma: &'a Pma<K, V>,
            j: usize,
            meta: u64,
            n: usize,
            /// Kept so far (slots `0..w`); the next slot to visit is `r`.
            w: usize,
            r: usize,
        }
        impl<K: Key, V: Pod> Drop for Compact<'_, K, V> {
            fn drop(&mut self) {
                let (p, j) = (self.pma, self.j);
                let (ks, vs) = p.cells(j);
                let rest = self.n - self.r;
                copy_words(ks, self.r * K::WORDS, self.w * K::WORDS, rest * K::WORDS);
                copy_words(vs, self.r * V::WORDS, self.w * V::WORDS, rest * V::WORDS);
                p.set_count(j, self.meta, self.w + rest);
            }
        }
        let meta = self.meta(j);
        let n = self.count_of(meta);
        let mut c = Compact {
            pma: self,
            j,
            meta,
            n,
            w: start,
            r: start,
        };
        while c.r < n {
            let (k, v) = (self.key(j, c.r), self.val(j, c.r));
            let keep = f(&k, &v);
            if keep {
                if c.w != c.r {
                    self.store_at(self.key_off(j, c.w), k);
                    self.store_at(self.val_off(j, c.w), v);
                }
                c.w += 1;
            }
            c.r += 1;
        }
        c.r - c.w
    }

    /// Whether `k` goes after every key of the array (`j`, locked, owns `k`).
    pub(crate) fn is_tail_append(&self, j: usize, k: &K) -> bool {
        let meta = self.meta(j);
        let n = self.count_of(meta);
        meta & HI_INF != 0 && (n == 0 || *k > self.key(j, n - 1))
    }

    /// Where `k` (absent) would go in locked (or frozen) leaf `j`.
    pub(crate) fn insert_pos(&self, j: usize, k: &K) -> usize {
        let n = self.count(j);
        match self.find(j, n, k) {
            Ok(s) | Err(s) => s,
        }
    }

    /// Whether an insert of `k` into full locked leaf `j` can open the next leaf.
    pub(crate) fn can_append(&self, j: usize, k: &K) -> bool {
        j + 1 < self.leaves && self.is_tail_append(j, k)
    }

    /// Opens leaf `j + 1` (unused) holding only `(k, v)`; `j` is locked and is the last
    /// live leaf, the caller holds the structure lock.
    pub(crate) fn open_next_leaf(&self, j: usize, k: K, v: V) {
        let e = j + 1;
        self.lock_spin(e);
        self.store_at(self.key_off(e, 0), k);
        self.store_at(self.val_off(e, 0), v);
        self.store_at(self.base(e) + FENCES, k);
        self.word(self.base(e) + META)
            .store(HI_INF | 1, Ordering::Relaxed);
        self.store_at(self.base(j) + FENCES + K::WORDS, k);
        let meta = self.meta(j);
        self.word(self.base(j) + META)
            .store(meta & !HI_INF, Ordering::Relaxed);
        self.set_index(e, k);
        self.set_tail(k);
        self.live_end.store(e + 1, Ordering::Release);
        self.unlock(e);
    }
}
