//! The boxed path: keys and values that are not plain words (`String`, `Vec<u8>`, `Arc`,
//! tuples, user structs).
//!
//! ```text
//!  word core (inline path of u64 -> u64):     slab of buckets (type-stable slots)
//!  prefix(k) : u64  ->  slot : u64   ------>  [ RwLock { prefix, Vec<(K, V)> sorted } ]
//! ```
//!
//! The core orders the buckets by an order-preserving 8-byte key prefix ([`prefix`]), so a
//! lookup searches only words until it reaches its bucket; the bucket holds the full
//! entries. Every change to a bucket happens with the core leaf that owns its prefix
//! locked (inside the core's `upsert`/`update`/`remove_if` closures), so writes of one
//! prefix are serialised and a bucket is emptied and its prefix removed in one step.
//! Readers take the bucket's read lock (they never wait for a rebuild of the core, only
//! for a writer of the same prefix), compare full keys, and return clones.

pub(crate) mod iter;
pub(crate) mod prefix;
pub(crate) mod slab;

use crate::pma::inl::Inl;
use crate::pma::map::Map;
use crate::sync::{AtomicU64, Ordering};
use core::borrow::Borrow;
use core::cmp::Ordering as Cmp;
use slab::Slab;

pub(crate) struct BoxMap<K, V> {
    pub(crate) index: Map<Inl<u64, 1>, Inl<u64, 1>>,
    pub(crate) slab: Slab<K, V>,
    /// Entries (the core counts prefixes); a wrapping signed count.
    len: AtomicU64,
}

/// The slot of bucket `b` where `q` is (`Ok`) or would go (`Err`).
#[inline(always)]
fn find<K: Borrow<Q>, V, Q: ?Sized + Ord>(b: &[(K, V)], q: &Q) -> Result<usize, usize> {
    b.binary_search_by(|(k, _)| k.borrow().cmp(q))
}

impl<K: Ord + 'static, V: 'static> BoxMap<K, V> {
    pub(crate) fn new(leaves: usize, cap: usize) -> Self {
        BoxMap {
            index: Map::new(leaves, cap),
            slab: Slab::new(),
            len: AtomicU64::new(0),
        }
    }

    fn add_len(&self, d: i64) {
        self.len.fetch_add(d as u64, Ordering::Relaxed);
    }

    pub(crate) fn len(&self) -> usize {
        usize::try_from(self.len.load(Ordering::Relaxed) as i64).unwrap_or(0)
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        self.index.heap_bytes() + self.slab.heap_bytes()
    }

    /// `f(&key, &value)` of the entry equal to `q`, under its bucket's read lock.
    #[inline]
    pub(crate) fn with<Q, R>(&self, q: &Q, f: impl FnOnce(&K, &V) -> R) -> Option<R>
    where
        K: Borrow<Q>,
        Q: ?Sized + Ord + 'static,
    {
        let p = prefix::of::<K, Q>(q);
        let (_, s) = self.index.get(&Inl::new(p))?;
        let b = self.slab.read(s.get());
        if b.prefix != Some(p) {
            // The prefix was removed (and its slot reused) after the index was read.
            return None;
        }
        let i = find(&b.entries, q).ok()?;
        let (k, v) = &b.entries[i];
        Some(f(k, v))
    }

    /// Inserts or changes `k`'s entry atomically: `f(Some(&mut value))` if present (it may
    /// change the value in place), `f(None)` if absent (it returns the value to insert, or
    /// `None`). Runs with the prefix's core leaf and the bucket locked.
    pub(crate) fn upsert<R>(&self, k: K, f: impl FnOnce(Option<&mut V>) -> (Option<V>, R)) -> R {
        let p = prefix::of::<K, K>(&k);
        let mut out = None;
        let mut added = false;
        self.index.upsert(Inl::new(p), |cur| match cur {
            Some(s) => {
                let mut b = self.slab.write(s.get());
                debug_assert_eq!(b.prefix, Some(p));
                match find(&b.entries, &k) {
                    Ok(i) => out = Some(f(Some(&mut b.entries[i].1)).1),
                    Err(i) => {
                        let (v, r) = f(None);
                        out = Some(r);
                        if let Some(v) = v {
                            b.entries.insert(i, (k, v));
                            added = true;
                        }
                    }
                }
                None
            }
            None => {
                let (v, r) = f(None);
                out = Some(r);
                let v = v?;
                added = true;
                Some(Inl::new(self.slab.alloc(p, (k, v))))
            }
        });
        if added {
            self.add_len(1);
        }
        out.expect("CobTree: upsert ran its closure")
    }

    /// Replaces `q`'s value by `f(&old)` atomically; the new value's clone.
    pub(crate) fn update<Q>(&self, q: &Q, f: impl FnOnce(&V) -> V) -> Option<V>
    where
        K: Borrow<Q>,
        Q: ?Sized + Ord + 'static,
        V: Clone,
    {
        let p = prefix::of::<K, Q>(q);
        let mut out = None;
        self.index.update(&Inl::new(p), |s| {
            let mut b = self.slab.write(s.get());
            if let Ok(i) = find(&b.entries, q) {
                let new = f(&b.entries[i].1);
                out = Some(new.clone());
                b.entries[i].1 = new;
            }
            *s
        });
        out
    }

    /// Under the lock of prefix `p`'s core leaf: `f` edits the bucket, which is dropped
    /// from the index (and its slot freed) if that left it empty. If `f` panics, the
    /// bucket keeps what `f` left (a valid `Vec`) and the length still accounts for it.
    pub(crate) fn edit_prefix(&self, p: u64, f: impl FnOnce(&mut Vec<(K, V)>)) {
        /// Adds the bucket's change in length to the map's, on return and on unwind
        /// (after unlocking the bucket: no atomic of the model checker runs under it).
        struct Adjust<'a, K, V> {
            len: &'a AtomicU64,
            b: Option<std::sync::RwLockWriteGuard<'a, slab::Bucket<K, V>>>,
            before: usize,
        }
        impl<K, V> Drop for Adjust<'_, K, V> {
            fn drop(&mut self) {
                let after = self.b.take().map_or(self.before, |b| b.entries.len());
                let d = after as i64 - self.before as i64;
                self.len.fetch_add(d as u64, Ordering::Relaxed);
            }
        }
        let r = self.index.remove_if(&Inl::new(p), |s| {
            let b = self.slab.write(s.get());
            let before = b.entries.len();
            let mut g = Adjust {
                len: &self.len,
                b: Some(b),
                before,
            };
            let b = g.b.as_mut().expect("held");
            if b.prefix == Some(p) {
                f(&mut b.entries);
            }
            b.entries.is_empty()
        });
        if let Some(Ok((_, s))) = r {
            self.slab.release(s.get());
        }
    }

    /// Removes `q`; its entry.
    pub(crate) fn remove<Q>(&self, q: &Q) -> Option<(K, V)>
    where
        K: Borrow<Q>,
        Q: ?Sized + Ord + 'static,
    {
        let mut out = None;
        self.edit_prefix(prefix::of::<K, Q>(q), |e| {
            if let Ok(i) = find(e, q) {
                out = Some(e.remove(i));
            }
        });
        out
    }

    /// Keeps the entries for which `f` is true, bucket by bucket.
    pub(crate) fn retain(&self, f: &mut impl FnMut(&K, &V) -> bool) {
        let prefixes = crate::iter::Range::<Inl<u64, 1>, _, _, _>::new(&self.index, ..);
        for (p, _) in prefixes {
            self.edit_prefix(p.get(), |e| e.retain(|(k, v)| f(k, v)));
        }
    }

    /// Removes and returns the first (`front`) or last entry.
    pub(crate) fn pop(&self, front: bool) -> Option<(K, V)> {
        loop {
            let mut ends = crate::iter::Range::<Inl<u64, 1>, _, _, _>::new(&self.index, ..);
            let (p, _) = if front { ends.next() } else { ends.next_back() }?;
            drop(ends);
            let mut out = None;
            self.edit_prefix(p.get(), |e| {
                if !e.is_empty() {
                    out = Some(if front {
                        e.remove(0)
                    } else {
                        e.pop().expect("non-empty")
                    });
                }
            });
            if out.is_some() {
                return out;
            }
        }
    }

    /// Every entry, in key order, taken out of the (owned) map.
    pub(crate) fn drain(&mut self) -> Vec<(K, V)> {
        let mut out = Vec::with_capacity(self.len());
        for (_, s) in crate::iter::Range::<Inl<u64, 1>, _, _, _>::new(&self.index, ..) {
            out.append(&mut self.slab.write(s.get()).entries);
        }
        self.len.store(0, Ordering::Relaxed);
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
