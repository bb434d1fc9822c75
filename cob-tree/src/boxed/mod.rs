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
use crate::entries::slab::Node;
use crate::pma::Edit;
use crate::pma::inl::cast_ref;
use crate::pma::{Guard, pin};
use crate::sync::{AtomicU64, Ordering};
use core::borrow::Borrow;
use core::cmp::Ordering as Cmp;
use core::ops::Bound;

pub(crate) struct BoxMap<K, V> {
    pub(crate) buckets: Buckets<K, V>,
    /// Entries beyond the first of each bucket (the core counts the buckets, i.e. the
    /// prefixes), a wrapping signed count: a key with a prefix of its own, the usual case,
    /// moves only the core's (striped) count.
    extra: AtomicU64,
    /// The user's order-preserving prefix function, if the map was made with one.
    pub(crate) pfx: Option<fn(&K) -> u64>,
}

/// The slot of `b` where `q` is (`Ok`) or would go (`Err`).
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
fn find<K: Borrow<Q>, V, Q: ?Sized + Ord>(b: &[(K, V)], q: &Q) -> Result<usize, usize> {
    b.binary_search_by(|(k, _)| k.borrow().cmp(q))
}

/// Clones of `e`'s entries with entry `i` left out.
fn without<K: Clone, V: Clone>(e: &[(K, V)], i: usize) -> Vec<(K, V)> {
    let mut out = Vec::with_capacity(e.len() - 1);
    out.extend_from_slice(&e[..i]);
    out.extend_from_slice(&e[i + 1..]);
    out
}

impl<K: Ord + Clone + 'static, V: Clone + 'static> BoxMap<K, V> {
    pub(crate) fn new(leaves: usize, cap: usize, pfx: Option<fn(&K) -> u64>) -> Self {
        BoxMap {
            buckets: Buckets::new(leaves, cap),
            extra: AtomicU64::new(0),
            pfx,
        }
    }

    fn add_extra(&self, d: i64) {
        self.extra.fetch_add(d as u64, Ordering::Relaxed);
    }

    pub(crate) fn len(&self) -> usize {
        let extra = self.extra.load(Ordering::Relaxed) as i64;
        usize::try_from((self.buckets.len() as i64).wrapping_add(extra)).unwrap_or(0)
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

    /// The entry equal to `q`, borrowed for as long as `g` lives.
    #[inline]
    pub(crate) fn get_in<'g, Q>(&'g self, q: &Q, g: &'g Guard) -> Option<&'g (K, V)>
    where
        K: Borrow<Q>,
        Q: ?Sized + Ord + 'static,
    {
        let e = self.buckets.get(self.prefix_of(q), g)?.entries();
        find(e, q).ok().map(|i| &e[i])
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
        let mut out = None;
        // An entry added to a bucket that was there (a new bucket is the core's count).
        let mut added = false;
        self.buckets.upsert(p, |cur| match cur {
            Some(node) => {
                let e = node.entries();
                match find(e, &k) {
                    Ok(i) => {
                        let (v, r) = f(Some(&e[i].1));
                        out = Some(r);
                        v.map(|v| {
                            let mut n = e.to_vec();
                            n[i].1 = v;
                            Node::new(n)
                        })
                    }
                    Err(i) => {
                        let (v, r) = f(None);
                        out = Some(r);
                        v.map(|v| {
                            let mut n = Vec::with_capacity(e.len() + 1);
                            n.extend_from_slice(&e[..i]);
                            n.push((k, v));
                            n.extend_from_slice(&e[i..]);
                            added = true;
                            Node::new(n)
                        })
                    }
                }
            }
            None => {
                let (v, r) = f(None);
                out = Some(r);
                Some(Node::one((k, v?)))
            }
        });
        if added {
            self.add_extra(1);
        }
        out.expect("CobTree: upsert ran its closure")
    }

    /// Replaces `q`'s value by `f(&old)` atomically; the new value's clone.
    pub(crate) fn update<Q>(&self, q: &Q, f: impl FnOnce(&V) -> V) -> Option<V>
    where
        K: Borrow<Q>,
        Q: ?Sized + Ord + 'static,
    {
        let p = self.prefix_of(q);
        let mut out = None;
        self.buckets.edit(p, |node| {
            let e = node.entries();
            let Ok(i) = find(e, q) else {
                return Edit::Keep;
            };
            let new = f(&e[i].1);
            let mut n = e.to_vec();
            out = Some(new.clone());
            n[i].1 = new;
            Edit::Set(Node::new(n))
        });
        out
    }

    /// Under the lock of prefix `p`'s core leaf: `f` reads the bucket's entries and returns
    /// the entries it should hold instead (`None`: unchanged); a bucket left empty is
    /// dropped from the index. If `f` panics, nothing changed.
    pub(crate) fn edit_prefix(&self, p: u64, f: impl FnOnce(&[(K, V)]) -> Option<Vec<(K, V)>>) {
        let mut d = 0i64;
        self.buckets.edit(p, |node| {
            let e = node.entries();
            let Some(n) = f(e) else {
                return Edit::Keep;
            };
            // A bucket left empty takes its first entry out of the core's count.
            d = n.len().max(1) as i64 - e.len() as i64;
            if n.is_empty() {
                Edit::Remove
            } else {
                Edit::Set(Node::new(n))
            }
        });
        if d != 0 {
            self.add_extra(d);
        }
    }

    /// Removes `q`; `f` of its entry (what the caller wants back, cloned: readers may
    /// still be reading the entry).
    pub(crate) fn remove<Q, R>(&self, q: &Q, f: impl FnOnce(&K, &V) -> R) -> Option<R>
    where
        K: Borrow<Q>,
        Q: ?Sized + Ord + 'static,
    {
        let mut out = None;
        self.edit_prefix(self.prefix_of(q), |e| {
            let i = find(e, q).ok()?;
            let n = without(e, i);
            out = Some(f(&e[i].0, &e[i].1));
            Some(n)
        });
        out
    }

    /// Keeps the entries for which `f` is true, bucket by bucket.
    pub(crate) fn retain(&self, f: &mut impl FnMut(&K, &V) -> bool) {
        let mut prefixes = self.buckets.cursor((Bound::Unbounded, Bound::Unbounded));
        while let Some(p) = prefixes.next(false, &pin()).map(|(p, _)| p) {
            self.edit_prefix(p, |e| {
                let keep: Vec<bool> = e.iter().map(|(k, v)| f(k, v)).collect();
                if keep.iter().all(|&k| k) {
                    return None;
                }
                Some(
                    e.iter()
                        .zip(&keep)
                        .filter(|(_, k)| **k)
                        .map(|(e, _)| e.clone())
                        .collect(),
                )
            });
        }
    }

    /// Removes and returns the first (`front`) or last entry.
    pub(crate) fn pop(&self, front: bool) -> Option<(K, V)> {
        loop {
            let mut ends = self.buckets.cursor((Bound::Unbounded, Bound::Unbounded));
            let (p, _) = ends.next(!front, &pin())?;
            drop(ends);
            let mut out = None;
            self.edit_prefix(p, |e| {
                let i = if front { 0 } else { e.len() - 1 };
                let n = without(e, i);
                out = Some(e[i].clone());
                Some(n)
            });
            if out.is_some() {
                return out;
            }
        }
    }

    /// Every entry, in key order, taken out of the (owned) map.
    pub(crate) fn drain(&mut self) -> Vec<(K, V)> {
        let mut out = Vec::with_capacity(self.len());
        for n in self.buckets.drain() {
            out.append(&mut n.into_entries());
        }
        self.extra.store(0, Ordering::Relaxed);
        out
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
