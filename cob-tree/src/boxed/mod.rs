//! The boxed path: keys and values that are not plain words (`String`, `Vec<u8>`, `Arc`,
//! tuples, user structs).
//!
//! ```text
//!  word core (inline path of u64 -> u64):     pool of type-stable cells
//!  prefix(k) : u64  ->  cell : u64   ------>  [ Node { prefix, sorted (K, V)s } ]
//! ```
//!
//! The core orders the buckets by an order-preserving 8-byte key prefix ([`prefix`], or a
//! user's prefix function), so a lookup searches only words until it reaches its bucket; the
//! bucket's node holds the full entries. Every change to a bucket happens with the core
//! leaf that owns its prefix locked (inside the core's `upsert`/`edit`
//! closures, see `crate::entries::buckets`), so writes of one prefix are serialised; a writer
//! builds a new node (cloning the entries it keeps), writes its cell into the core and
//! retires the old one, and a bucket is emptied and its prefix removed in one step. Readers
//! pin, read the cell from the core and read the node: no lock, no shared write, no wait.

pub(crate) mod iter;
pub(crate) mod prefix;

use crate::entries::buckets::Buckets;
use crate::pma::inl::cast_ref;
use crate::pma::{Guard, pin};
use core::borrow::Borrow;
use core::cmp::Ordering as Cmp;
use core::ops::Bound;

pub(crate) struct BoxMap<K, V> {
    pub(crate) buckets: Buckets<K, V>,
    /// The user's order-preserving prefix function, if the map was made with one.
    pub(crate) pfx: Option<fn(&K) -> u64>,
}

/// The word of every key in a map with a user prefix function (its keys' bytes past the
/// prefix are not known to be ordered by it).
fn no_word<K>(_: &K) -> u64 {
    0
}

impl<K: Ord + Clone + 'static, V: Clone + 'static> BoxMap<K, V> {
    pub(crate) fn new(leaves: usize, cap: usize, pfx: Option<fn(&K) -> u64>) -> Self {
        let word: fn(&K) -> u64 = match pfx {
            None => prefix::word::<K, K>,
            Some(_) => no_word::<K>,
        };
        BoxMap {
            buckets: Buckets::new(leaves, cap, word),
            pfx,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.buckets.len()
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        self.buckets.heap_bytes()
    }

    /// The prefix of lookup `q`: the user's function's (then `q` must be a `&K`), else the
    /// built-in one.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub(crate) fn prefix_of<Q: ?Sized + 'static>(&self, q: &Q) -> u64
    where
        K: Borrow<Q>,
    {
        match self.pfx {
            None => prefix::of::<K, Q>(q),
            Some(f) => match cast_ref::<Q, K>(q) {
                Some(k) => f(k),
                None => prefix::unknown_with_fn::<K, Q>(),
            },
        }
    }

    /// The word of lookup `q` (see `prefix::word`; 0 with a user prefix function).
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub(crate) fn word_of<Q: ?Sized + 'static>(&self, q: &Q) -> u64
    where
        K: Borrow<Q>,
    {
        match self.pfx {
            None => prefix::word::<K, Q>(q),
            Some(_) => 0,
        }
    }

    /// The entry equal to `q`, borrowed for as long as `g` lives.
    #[inline]
    pub(crate) fn get_in<'g, Q>(&'g self, q: &Q, g: &'g Guard) -> Option<&'g (K, V)>
    where
        K: Borrow<Q>,
        Q: ?Sized + Ord + 'static,
    {
        self.buckets.get(self.prefix_of(q), self.word_of(q), q, g)
    }

    /// `f(&key, &value)` of the entry equal to `q`.
    #[inline]
    pub(crate) fn with<Q, R>(&self, q: &Q, f: impl FnOnce(&K, &V) -> R) -> Option<R>
    where
        K: Borrow<Q>,
        Q: ?Sized + Ord + 'static,
    {
        let g = pin();
        self.get_in(q, &g).map(|(k, v)| f(k, v))
    }

    /// Inserts or changes `k`'s entry atomically: `f(Some(&value))` if present, `f(None)`
    /// if absent; `f` returns the value to store (`None`: leave the map as it is) and the
    /// result. Runs with the prefix's core leaf locked.
    pub(crate) fn upsert<R>(&self, k: K, f: impl FnOnce(Option<&V>) -> (Option<V>, R)) -> R {
        let p = self.prefix_of::<K>(&k);
        self.buckets.upsert(p, k, f)
    }

    /// Replaces `q`'s value by `f(&old)` atomically (copying neither); `after(&new)`.
    pub(crate) fn update<Q, R>(
        &self,
        q: &Q,
        f: impl FnOnce(&V) -> V,
        after: impl FnOnce(&V) -> R,
    ) -> Option<R>
    where
        K: Borrow<Q>,
        Q: ?Sized + Ord + 'static,
    {
        self.buckets
            .update(self.prefix_of(q), self.word_of(q), q, f, after)
    }

    /// Removes `q`; `f` of its entry (what the caller wants back, cloned: readers may
    /// still be reading the entry).
    pub(crate) fn remove<Q, R>(&self, q: &Q, f: impl FnOnce(&K, &V) -> R) -> Option<R>
    where
        K: Borrow<Q>,
        Q: ?Sized + Ord + 'static,
    {
        self.buckets
            .remove(self.prefix_of(q), self.word_of(q), q, f)
    }

    /// Keeps the entries for which `f` is true, bucket by bucket.
    pub(crate) fn retain(&self, f: &mut impl FnMut(&K, &V) -> bool) {
        let mut prefixes = self.buckets.cursor((Bound::Unbounded, Bound::Unbounded));
        while let Some(p) = prefixes.next(false, &pin()).map(|(p, _)| p) {
            self.buckets.retain(p, f);
        }
    }

    /// Removes and returns the first (`front`) or last entry.
    pub(crate) fn pop(&self, front: bool) -> Option<(K, V)> {
        loop {
            let mut ends = self.buckets.cursor((Bound::Unbounded, Bound::Unbounded));
            let (p, _) = ends.next(!front, &pin())?;
            drop(ends);
            if let Some(e) = self.buckets.pop(p, front) {
                return Some(e);
            }
        }
    }

    /// Every entry, in key order, taken out of the (owned) map.
    pub(crate) fn drain(&mut self) -> Vec<(K, V)> {
        self.buckets.drain()
    }
}

/// Whether `k` is at or after `start` and at or before `end` of a range (the boxed
/// iterator's filter).
pub(crate) fn in_bounds<K: Borrow<Q>, Q: ?Sized + Ord>(
    k: &K,
    r: &impl core::ops::RangeBounds<Q>,
) -> Cmp {
    use core::ops::Bound::*;
    let k = k.borrow();
    let below = match r.start_bound() {
        Included(s) => k < s,
        Excluded(s) => k <= s,
        Unbounded => false,
    };
    if below {
        return Cmp::Less;
    }
    let above = match r.end_bound() {
        Included(e) => k > e,
        Excluded(e) => k >= e,
        Unbounded => false,
    };
    if above { Cmp::Greater } else { Cmp::Equal }
}
