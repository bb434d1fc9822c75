#![doc = include_str!("../README.md")]

// Hot paths are `inline(always)` only where debug assertions are off (release, bench,
// loom). In debug builds LLVM honours `alwaysinline` even at -O0, and the nested hot paths
// grew each test binary to over 100 MB and 30-100 s of LLVM time; there a plain `inline`
// hint is enough. Written at each site as
// `#[cfg_attr(debug_assertions, inline)] #[cfg_attr(not(debug_assertions), inline(always))]`.

pub mod _tutorial;

mod boxed;
mod entries;
mod iters;
mod pinned;
mod pma;
#[cfg(feature = "serde")]
mod serde_impls;
mod sync;
mod traits;

pub use entries::slab::FIRST_CHUNK;
pub use entries::tree::{TREE_FANOUT, TREE_LEAF_SLOTS};
pub use iters::{IntoIter, IntoKeys, IntoValues, Iter, Keys, Range, Values};
pub use pinned::{Entry, Pinned, PinnedRange};
pub use pma::key::MAX_POD_BYTES;
pub use pma::{
    CACHE_LINE, FINE_GROWTH_BYTES, KEPT_ARRAY_BYTES, KEPT_TOTAL_BYTES, LEAF_BYTES, LOWER_ROOT,
    MAX_LEAF_CAPACITY, MIN_LEAF_CAPACITY, UPPER_ROOT, WIDE_LEAF_FACTOR,
};

use boxed::BoxMap;
use core::borrow::Borrow;
use core::ops::{Bound, RangeBounds};
use pma::inl::{Inl, Look, is_inline};
use pma::map::Map;
use pma::repr::{Kind, on_repr};

/// A concurrent ordered map over a packed memory array. Every method takes `&self`.
///
/// Any `K: Ord + Clone + 'static` and `V: Clone + 'static`; plain word types are stored
/// inline, everything else on the boxed path (see the [crate docs](crate), "Two layouts").
/// `Send`/`Sync` exactly when `K` and `V` are.
pub struct CobTree<K, V> {
    repr: Repr<K, V>,
}

/// The storage, chosen per type when the map is made (`Kind::of` folds to a constant,
/// so each method compiles one arm of `on_repr!`). Both variants are a few KiB (the core's
/// striped length counter); boxing one would add a pointer chase to every operation.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Repr<K, V> {
    /// Inline, by the words `K` and `V` travel in (see `pma::inl::width`).
    I11(Map<Inl<K, 1>, Inl<V, 1>>),
    I12(Map<Inl<K, 1>, Inl<V, 2>>),
    I21(Map<Inl<K, 2>, Inl<V, 1>>),
    I22(Map<Inl<K, 2>, Inl<V, 2>>),
    Boxed(BoxMap<K, V>),
}

static_assertions::assert_impl_all!(CobTree<u64, u64>: Send, Sync);
static_assertions::assert_impl_all!(CobTree<[u8; 16], (u64, u64)>: Send, Sync);
static_assertions::assert_impl_all!(CobTree<String, Vec<u8>>: Send, Sync);
static_assertions::assert_not_impl_any!(CobTree<std::rc::Rc<u8>, u8>: Send, Sync);
static_assertions::assert_not_impl_any!(CobTree<u8, std::cell::Cell<u8>>: Sync);
static_assertions::assert_impl_all!(Range<'static, u64, core::ops::Range<u64>, u64, u64>: Send);
static_assertions::assert_impl_all!(Iter<'static, String, u64>: Send);

/// Whether `(K, V)` takes the inline path: both plain words.
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
fn inline_kv<K: 'static, V: 'static>() -> bool {
    is_inline::<K>() && is_inline::<V>()
}

impl<K: Ord + Clone + 'static, V: Clone + 'static> CobTree<K, V> {
    /// An empty map.
    pub fn new() -> Self {
        Self::build(0, Self::default_cap(), None)
    }

    fn default_cap() -> usize {
        if inline_kv::<K, V>() {
            pma::default_leaf_capacity::<Inl<K>, Inl<V>>()
        } else {
            pma::default_leaf_capacity::<Inl<u64, 1>, Inl<u64, 1>>()
        }
    }

    /// An empty map with room for `n` elements before its first resize.
    pub fn with_capacity(n: usize) -> Self {
        Self::build(n, Self::default_cap(), None)
    }

    /// An empty map whose leaves hold `cap` elements (a tuning knob; tests use tiny leaves
    /// so splits, rebalances, growth and shrinking happen after a few operations). On the
    /// boxed path the leaves hold prefixes.
    ///
    /// # Panics
    /// If `cap` is outside [`MIN_LEAF_CAPACITY`]`..=`[`MAX_LEAF_CAPACITY`].
    pub fn with_leaf_capacity(cap: usize) -> Self {
        Self::build(0, cap, None)
    }

    /// An empty map that orders its boxed-path buckets by `prefix(&key)`, for key types
    /// with no built-in prefix (tuples, user structs: without one, all their keys share one
    /// bucket, whose writes copy the whole bucket). `prefix` must be **order-preserving**:
    /// `a < b` implies `prefix(a) <= prefix(b)` (e.g. a struct's leading integer field, or
    /// the first 8 bytes of its leading string, big-endian). One that is not gives a wrong
    /// iteration order and lookups that may miss, but stays memory-safe. Lookups in such a
    /// map must be by `&K` (another borrowed type panics). Ignored on the inline path.
    pub fn with_prefix(prefix: fn(&K) -> u64) -> Self {
        Self::build(0, Self::default_cap(), Some(prefix))
    }

    /// [`with_prefix`](Self::with_prefix) with leaves of `cap` prefixes (see
    /// [`with_leaf_capacity`](Self::with_leaf_capacity)).
    pub fn with_prefix_and_leaf_capacity(prefix: fn(&K) -> u64, cap: usize) -> Self {
        Self::build(0, cap, Some(prefix))
    }

    fn build(n: usize, cap: usize, pfx: Option<fn(&K) -> u64>) -> Self {
        // Every `Repr` is made here, by `Kind::of::<K, V>()` (what `on_repr!` relies on).
        assert!(
            (MIN_LEAF_CAPACITY..=MAX_LEAF_CAPACITY).contains(&cap),
            "CobTree leaf capacity {cap} is outside {MIN_LEAF_CAPACITY}..={MAX_LEAF_CAPACITY}"
        );
        let leaves = n.saturating_mul(2).div_ceil(cap).max(1).next_power_of_two();
        let repr = match Kind::of::<K, V>() {
            Kind::I11 => Repr::I11(Map::new(leaves, cap)),
            Kind::I12 => Repr::I12(Map::new(leaves, cap)),
            Kind::I21 => Repr::I21(Map::new(leaves, cap)),
            Kind::I22 => Repr::I22(Map::new(leaves, cap)),
            Kind::Boxed => Repr::Boxed(BoxMap::new(leaves, cap, pfx)),
        };
        CobTree { repr }
    }

    pub(crate) fn repr(&self) -> &Repr<K, V> {
        &self.repr
    }

    /// Whether this map stores its keys and values inline in the array's words (else on
    /// the boxed path).
    pub fn is_inline(&self) -> bool {
        !matches!(self.repr, Repr::Boxed(_))
    }

    /// Elements per narrow leaf of this map. Its arrays alternate between narrow leaves and
    /// wide ones (about [`WIDE_LEAF_FACTOR`] times as large) as the map grows.
    pub fn leaf_capacity(&self) -> usize {
        on_repr!(Repr, K, V; &self.repr;
         m => m.leaf_capacity();
         b => b.buckets.leaf_capacity()
        )
    }

    /// Bytes the map holds on the heap now: its current array and index, and the retired
    /// arrays it keeps until it drops (at most [`KEPT_TOTAL_BYTES`] of leaf lines, see
    /// [`KEPT_ARRAY_BYTES`]); on the boxed path also the bucket cells and entry vectors
    /// (not what keys and values own themselves). Not counted: an array an iterator still
    /// holds, or a retired one the epoch collector has not freed yet.
    pub fn heap_bytes(&self) -> usize {
        on_repr!(Repr, K, V; &self.repr;
         m => m.heap_bytes();
         b => b.heap_bytes()
        )
    }

    // ----- single keys -----------------------------------------------------------------

    /// Inserts `k -> v`; returns the previous value of `k`, if any (the stored key is
    /// kept, as in `BTreeMap`).
    #[inline]
    pub fn insert(&self, k: K, v: V) -> Option<V> {
        on_repr!(Repr, K, V; &self.repr;
         m => m.upsert(Inl::new(k), |_| Some(Inl::new(v))).map(Inl::get);
         b => b.upsert(k, |cur| match cur {
                        Some(old) => (Some(v), Some(old.clone())),
                        None => (Some(v), None),
                    })
        )
    }

    /// The value of `k` (a clone).
    #[inline]
    pub fn get<Q: ?Sized + Ord + 'static>(&self, k: &Q) -> Option<V>
    where
        K: Borrow<Q>,
    {
        on_repr!(Repr, K, V; &self.repr;
         m => m.get(Look::new(k)).map(|(_, v)| v.get());
         b => b.with(k, |_, v| v.clone())
        )
    }

    /// `f` of the value of `k`, read where it is stored (no clone), as scc `TreeIndex`'s
    /// `peek_with`; `None` if `k` is absent. `O(log n)`. On the inline path `f` sees a copy
    /// (the words move under readers); on the boxed path `f` runs under an epoch pin, so
    /// keep it short.
    #[inline]
    pub fn get_with<Q: ?Sized + Ord + 'static, R>(
        &self,
        k: &Q,
        f: impl FnOnce(&V) -> R,
    ) -> Option<R>
    where
        K: Borrow<Q>,
    {
        on_repr!(Repr, K, V; &self.repr;
         m => m.get(Look::new(k)).map(|(_, v)| f(v.as_ref()));
         b => b.with(k, |_, v| f(v))
        )
    }

    /// The stored key equal to `k`, and its value.
    pub fn get_key_value<Q: ?Sized + Ord + 'static>(&self, k: &Q) -> Option<(K, V)>
    where
        K: Borrow<Q>,
    {
        on_repr!(Repr, K, V; &self.repr;
         m => m.get(Look::new(k)).map(|(k, v)| (k.get(), v.get()));
         b => b.with(k, |k, v| (k.clone(), v.clone()))
        )
    }

    /// Whether `k` is present.
    pub fn contains_key<Q: ?Sized + Ord + 'static>(&self, k: &Q) -> bool
    where
        K: Borrow<Q>,
    {
        on_repr!(Repr, K, V; &self.repr;
         m => m.get(Look::new(k)).is_some();
         b => b.with(k, |_, _| ()).is_some()
        )
    }

    /// The value of `k`, inserting `v` first if `k` is absent (atomically: of several
    /// threads that race to insert the same absent key, exactly one inserts, and all of them
    /// return the value that one inserted).
    pub fn get_or_insert(&self, k: K, v: V) -> V {
        on_repr!(Repr, K, V; &self.repr;
         m => {
                        let v = Inl::new(v);
                        m.upsert(Inl::new(k), |old| match old {
                            Some(_) => None,
                            None => Some(v),
                        })
                        .unwrap_or(v)
                        .get()
                    };
         b => b.upsert(k, |cur| match cur {
                        Some(old) => (None, old.clone()),
                        None => {
                            let c = v.clone();
                            (Some(v), c)
                        }
                    })
        )
    }

    /// The value of `k`; if `k` is absent, inserts `f()` first (atomically, as
    /// [`get_or_insert`](Self::get_or_insert)), as `crossbeam_skiplist::SkipMap` does: `f`
    /// runs at most once, only if `k` was absent when looked up, and outside any lock, so
    /// it may take long or use this map. If another thread inserts `k` while `f` runs, that
    /// value is kept and returned, and `f`'s result is dropped.
    pub fn get_or_insert_with(&self, k: K, f: impl FnOnce() -> V) -> V {
        match self.get(&k) {
            Some(v) => v,
            None => self.get_or_insert(k, f()),
        }
    }

    /// Inserts `k -> v` if `k` is absent or `pred(&old)` is true, atomically (`pred` runs
    /// with `k`'s leaf locked: it must not use this map). `Ok(previous value)` when it
    /// stored `v`; `Err(current value)` when `pred` refused.
    pub fn insert_if(&self, k: K, v: V, pred: impl FnOnce(&V) -> bool) -> Result<Option<V>, V> {
        on_repr!(Repr, K, V; &self.repr;
         m => {
                        let mut refused = false;
                        let old = m.upsert(Inl::new(k), |old| match old {
                            Some(o) if !pred(o.as_ref()) => {
                                refused = true;
                                None
                            }
                            _ => Some(Inl::new(v)),
                        });
                        match old.map(Inl::get) {
                            Some(o) if refused => Err(o),
                            old => Ok(old),
                        }
                    };
         b => b.upsert(k, |cur| match cur {
                        Some(old) if !pred(old) => (None, Err(old.clone())),
                        Some(old) => (Some(v), Ok(Some(old.clone()))),
                        None => (Some(v), Ok(None)),
                    })
        )
    }

    /// `crossbeam_skiplist::SkipMap::compare_insert`'s shape: inserts `k -> v` if `k` is
    /// absent or `pred(&old)` is true (atomically, as [`insert_if`](Self::insert_if)), and
    /// returns the value stored for `k` afterwards.
    pub fn compare_insert(&self, k: K, v: V, pred: impl FnOnce(&V) -> bool) -> V {
        let stored = v.clone();
        match self.insert_if(k, v, pred) {
            Ok(_) => stored,
            Err(current) => current,
        }
    }

    /// Replaces the value of `k` by `f(&old)` atomically (`f` runs with `k`'s leaf locked: it
    /// must not use this map); returns the new value, or `None` if `k` is absent. Concurrent
    /// updates of one key never lose each other's result.
    pub fn update<Q: ?Sized + Ord + 'static>(&self, k: &Q, f: impl FnOnce(&V) -> V) -> Option<V>
    where
        K: Borrow<Q>,
    {
        on_repr!(Repr, K, V; &self.repr;
         m => m
                        .update(Look::new(k), |v| Inl::new(f(v.as_ref())))
                        .map(|(_, new)| new.get());
         b => b.update(k, f, V::clone)
        )
    }

    /// Replaces the value of `k` by `f(&old)` atomically, copying neither value: `f` reads
    /// the old one in place and its result is moved into the map (where
    /// [`update`](Self::update) clones the new value to return it). Whether `k` was
    /// present. `O(log n)`; `f` runs with `k`'s leaf locked (it must not use this map).
    pub fn update_in_place<Q: ?Sized + Ord + 'static>(&self, k: &Q, f: impl FnOnce(&V) -> V) -> bool
    where
        K: Borrow<Q>,
    {
        on_repr!(Repr, K, V; &self.repr;
         m => m.update(Look::new(k), |v| Inl::new(f(v.as_ref()))).is_some();
         b => b.update(k, f, |_| ()).is_some()
        )
    }

    /// Removes `k`; returns its value, if it was present.
    #[inline]
    pub fn remove<Q: ?Sized + Ord + 'static>(&self, k: &Q) -> Option<V>
    where
        K: Borrow<Q>,
    {
        on_repr!(Repr, K, V; &self.repr;
         m => m.remove(Look::new(k)).map(|(_, v)| v.get());
         b => b.remove(k, |_, v| v.clone())
        )
    }

    /// Removes `k`; returns the stored key and its value, if it was present.
    #[inline]
    pub fn remove_entry<Q: ?Sized + Ord + 'static>(&self, k: &Q) -> Option<(K, V)>
    where
        K: Borrow<Q>,
    {
        on_repr!(Repr, K, V; &self.repr;
         m => m.remove(Look::new(k)).map(|(k, v)| (k.get(), v.get()));
         b => b.remove(k, |k, v| (k.clone(), v.clone()))
        )
    }

    // ----- ends ------------------------------------------------------------------------

    /// The smallest key and its value (inline path: linearizable; boxed path: read as an
    /// iterator reads it).
    pub fn first_key_value(&self) -> Option<(K, V)> {
        on_repr!(Repr, K, V; &self.repr;
         m => m.edge(true).map(|(k, v)| (k.get(), v.get()));
         _b => self.iter().next()
        )
    }

    /// The largest key and its value (as [`first_key_value`](Self::first_key_value)).
    pub fn last_key_value(&self) -> Option<(K, V)> {
        on_repr!(Repr, K, V; &self.repr;
         m => m.edge(false).map(|(k, v)| (k.get(), v.get()));
         _b => self.iter().next_back()
        )
    }

    /// Removes and returns the entry with the smallest key, atomically: two threads never
    /// pop the same entry. Inline path: at the moment it is taken no smaller key is
    /// present. Boxed path: no smaller key was present when its bucket was found (a
    /// smaller key inserted concurrently may be present when it is taken).
    pub fn pop_first(&self) -> Option<(K, V)> {
        on_repr!(Repr, K, V; &self.repr;
         m => m.pop(true).map(|(k, v)| (k.get(), v.get()));
         b => b.pop(true)
        )
    }

    /// Removes and returns the entry with the largest key (atomically, as
    /// [`pop_first`](Self::pop_first)).
    pub fn pop_last(&self) -> Option<(K, V)> {
        on_repr!(Repr, K, V; &self.repr;
         m => m.pop(false).map(|(k, v)| (k.get(), v.get()));
         b => b.pop(false)
        )
    }

    /// The entry with the smallest key above `bound` (`Included(k)`: at or above `k`;
    /// `Unbounded`: the first entry), read as an iterator reads it.
    pub fn lower_bound<Q: ?Sized + Ord + 'static>(&self, bound: Bound<&Q>) -> Option<(K, V)>
    where
        K: Borrow<Q>,
    {
        Range::new(self, (bound, Bound::Unbounded)).next()
    }

    /// The entry with the largest key below `bound` (`Included(k)`: at or below `k`;
    /// `Unbounded`: the last entry), read as an iterator reads it.
    pub fn upper_bound<Q: ?Sized + Ord + 'static>(&self, bound: Bound<&Q>) -> Option<(K, V)>
    where
        K: Borrow<Q>,
    {
        Range::new(self, (Bound::Unbounded, bound)).next_back()
    }

    // ----- the whole map ---------------------------------------------------------------

    /// The number of elements. Exact when no write runs concurrently; while writes run,
    /// each write updates it just after taking effect, so it may lag by those writes.
    pub fn len(&self) -> usize {
        on_repr!(Repr, K, V; &self.repr;
         m => m.len();
         b => b.len()
        )
    }

    /// Whether the map has no elements (same caveat as [`len`](Self::len)).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Removes every element. Inline path: readers go on seeing the old contents until the
    /// empty array is published, in one step. Boxed path: bucket by bucket, as
    /// [`retain`](Self::retain) with a predicate that is always false.
    pub fn clear(&self) {
        on_repr!(Repr, K, V; &self.repr;
         m => m.clear();
         b => b.retain(&mut |_, _| false)
        )
    }

    /// The elements with keys in `range`, in key order from either end (weakly
    /// consistent, see [`Range`]).
    ///
    /// Unlike `BTreeMap::range`, a range whose start and end are the same excluded key,
    /// `(Excluded(x), Excluded(x))`, is empty, as in `crossbeam_skiplist::SkipMap`.
    ///
    /// # Panics
    /// Like `BTreeMap::range`: if the start is greater than the end.
    pub fn range<Q, R>(&self, range: R) -> Range<'_, Q, R, K, V>
    where
        Q: ?Sized + Ord + 'static,
        R: RangeBounds<Q>,
        K: Borrow<Q>,
    {
        check_range(&range);
        Range::new(self, range)
    }

    /// All elements in key order from either end (weakly consistent, see [`Range`]).
    pub fn iter(&self) -> Iter<'_, K, V> {
        Iter(Range::new(self, ..))
    }

    /// All keys in order (see [`iter`](Self::iter)).
    pub fn keys(&self) -> Keys<'_, K, V> {
        Keys(self.iter())
    }

    /// All values in key order (see [`iter`](Self::iter)).
    pub fn values(&self) -> Values<'_, K, V> {
        Values(self.iter())
    }

    /// The keys in order, by value.
    pub fn into_keys(self) -> IntoKeys<K, V> {
        IntoKeys(self.into_iter())
    }

    /// The values in key order, by value.
    pub fn into_values(self) -> IntoValues<K, V> {
        IntoValues(self.into_iter())
    }

    /// Keeps only the elements for which `f` is true. Leaf by leaf (boxed path: bucket by
    /// bucket), each under its lock (`f` must not use this map): every element present for
    /// the whole call is visited exactly once, in key order; elements inserted meanwhile
    /// may or may not be.
    pub fn retain(&self, mut f: impl FnMut(&K, &V) -> bool) {
        on_repr!(Repr, K, V; &self.repr;
         m => m.retain(&mut |k, v| f(k.as_ref(), v.as_ref()));
         b => b.retain(&mut f)
        )
    }

    /// Moves every element of `other` into `self` (a value from `other` replaces the value
    /// of an equal key in `self`). Each element is removed from `other` before it is
    /// inserted here, so none is in both maps at once to a reader of one key; elements
    /// inserted into `other` during the call may stay there.
    pub fn append(&self, other: &Self) {
        for k in other.keys() {
            if let Some((k, v)) = other.remove_entry(&k) {
                self.insert(k, v);
            }
        }
    }

    /// Moves the elements with keys at or above `k` into a new map and returns it (same
    /// caveat about concurrent inserts as [`append`](Self::append)).
    pub fn split_off<Q: ?Sized + Ord + 'static>(&self, k: &Q) -> Self
    where
        K: Borrow<Q>,
    {
        let out = self.empty_like();
        for (key, _) in self.range((Bound::Included(k), Bound::Unbounded)) {
            if let Some((key, v)) = self.remove_entry::<K>(&key) {
                out.insert(key, v);
            }
        }
        out
    }

    /// The inline path's word map (tests of the core).
    #[cfg(test)]
    pub(crate) fn words(&self) -> &Map<Inl<K, 1>, Inl<V, 1>> {
        match &self.repr {
            Repr::I11(m) => m,
            _ => panic!("not a one-word inline map"),
        }
    }

    #[cfg(test)]
    pub(crate) fn from_words(m: Map<Inl<K, 1>, Inl<V, 1>>) -> Self {
        CobTree { repr: Repr::I11(m) }
    }

    /// An empty map with this one's leaf capacity and prefix function.
    pub(crate) fn empty_like(&self) -> Self {
        let pfx = match &self.repr {
            Repr::Boxed(b) => b.pfx,
            _ => None,
        };
        Self::build(0, self.leaf_capacity(), pfx)
    }

    /// The storage, taken for the by-value iterators.
    pub(crate) fn into_repr(self) -> Repr<K, V> {
        self.repr
    }
}

#[cfg(all(test, loom))]
mod loom_tests;

/// Panics, as `BTreeMap::range` does, if `range` starts after it ends; a range whose start
/// and end are the same excluded key is allowed (it is empty).
pub(crate) fn check_range<Q: ?Sized + Ord, R: RangeBounds<Q>>(range: &R) {
    if let (Bound::Included(s) | Bound::Excluded(s), Bound::Included(e) | Bound::Excluded(e)) =
        (range.start_bound(), range.end_bound())
    {
        assert!(s <= e, "range start is greater than range end in CobTree");
    }
}
