#![doc = include_str!("../README.md")]

mod iter;
mod key;
mod pma;
#[cfg(feature = "serde")]
mod serde_impls;
mod sync;
mod traits;

pub use iter::{IntoIter, IntoKeys, IntoValues, Iter, Keys, Range, Values};
pub use key::{Key, MAX_POD_BYTES, Pod};
pub use pma::{
    CACHE_LINE, FINE_GROWTH_BYTES, KEPT_ARRAY_BYTES, LEAF_BYTES, LOWER_ROOT, MAX_LEAF_CAPACITY,
    MIN_LEAF_CAPACITY, UPPER_ROOT, WIDE_LEAF_FACTOR,
};

use core::borrow::Borrow;
use core::ops::{Bound, RangeBounds};

/// A concurrent ordered map over a packed memory array. Every method takes `&self`.
///
/// See the [crate docs](crate) for the layout, the concurrency protocol and what each
/// operation guarantees under concurrent use.
pub struct CobTree<K: Key, V: Pod> {
    map: pma::map::Map<K, V>,
    // Send/Sync exactly when K and V are (the storage itself is all atomics).
    _kv: core::marker::PhantomData<(K, V)>,
}

static_assertions::assert_impl_all!(CobTree<u64, u64>: Send, Sync);
static_assertions::assert_impl_all!(CobTree<[u8; 16], u128>: Send, Sync);
static_assertions::assert_impl_all!(CobTree<(u32, char), (bool, u64)>: Send, Sync);
static_assertions::assert_impl_all!(Range<'static, u64, core::ops::Range<u64>, u64, u64>: Send);
static_assertions::assert_impl_all!(Iter<'static, u64, u64>: Send);

impl<K: Key, V: Pod> CobTree<K, V> {
    /// An empty map.
    pub fn new() -> Self {
        Self::with_leaf_capacity(pma::default_leaf_capacity::<K, V>())
    }

    /// An empty map with room for `n` elements before its first resize.
    pub fn with_capacity(n: usize) -> Self {
        let cap = pma::default_leaf_capacity::<K, V>();
        Self::build(n, cap)
    }

    /// An empty map whose leaves hold `cap` elements (a tuning knob; tests use tiny leaves
    /// so splits, rebalances, growth and shrinking happen after a few operations).
    ///
    /// # Panics
    /// If `cap` is outside [`MIN_LEAF_CAPACITY`]`..=`[`MAX_LEAF_CAPACITY`].
    pub fn with_leaf_capacity(cap: usize) -> Self {
        Self::build(0, cap)
    }

    fn build(n: usize, cap: usize) -> Self {
        assert!(
            (MIN_LEAF_CAPACITY..=MAX_LEAF_CAPACITY).contains(&cap),
            "CobTree leaf capacity {cap} is outside {MIN_LEAF_CAPACITY}..={MAX_LEAF_CAPACITY}"
        );
        let leaves = n.saturating_mul(2).div_ceil(cap).max(1).next_power_of_two();
        CobTree {
            map: pma::map::Map::new(leaves, cap),
            _kv: core::marker::PhantomData,
        }
    }

    /// Elements per narrow leaf of this map. Its arrays alternate between narrow leaves and
    /// wide ones (about [`WIDE_LEAF_FACTOR`] times as large) as the map grows.
    pub fn leaf_capacity(&self) -> usize {
        self.map.leaf_capacity()
    }

    /// Bytes the map holds on the heap now: its current array and index, and the retired
    /// arrays it keeps until it drops (see [`KEPT_ARRAY_BYTES`]). Not counted: an array an
    /// iterator still holds, or a retired one the epoch collector has not freed yet.
    pub fn heap_bytes(&self) -> usize {
        self.map.heap_bytes()
    }

    // ----- single keys -----------------------------------------------------------------

    /// Inserts `k -> v`; returns the previous value of `k`, if any.
    #[inline]
    pub fn insert(&self, k: K, v: V) -> Option<V> {
        self.map.upsert(k, |_| Some(v))
    }

    /// The value of `k`.
    #[inline]
    pub fn get<Q: ?Sized + Ord>(&self, k: &Q) -> Option<V>
    where
        K: Borrow<Q>,
    {
        self.map.get(k).map(|(_, v)| v)
    }

    /// The stored key equal to `k`, and its value.
    pub fn get_key_value<Q: ?Sized + Ord>(&self, k: &Q) -> Option<(K, V)>
    where
        K: Borrow<Q>,
    {
        self.map.get(k)
    }

    /// Whether `k` is present.
    pub fn contains_key<Q: ?Sized + Ord>(&self, k: &Q) -> bool
    where
        K: Borrow<Q>,
    {
        self.map.get(k).is_some()
    }

    /// The value of `k`, inserting `v` first if `k` is absent (atomically: of several
    /// threads that race to insert the same absent key, exactly one inserts, and all of them
    /// return the value that one inserted).
    pub fn get_or_insert(&self, k: K, v: V) -> V {
        self.get_or_insert_with(k, || v)
    }

    /// The value of `k`, inserting `f()` first if `k` is absent (atomically, as
    /// [`get_or_insert`](Self::get_or_insert); `f` runs at most once, only when `k` is
    /// absent, with `k`'s leaf locked: it must not use this map).
    pub fn get_or_insert_with(&self, k: K, f: impl FnOnce() -> V) -> V {
        let mut out = None;
        let old = self.map.upsert(k, |old| match old {
            Some(_) => None,
            None => {
                let v = f();
                out = Some(v);
                Some(v)
            }
        });
        old.or(out)
            .expect("get_or_insert_with: either present or inserted")
    }

    /// Inserts `k -> v` if `k` is absent or `pred(&old)` is true, atomically (`pred` runs
    /// with `k`'s leaf locked: it must not use this map). `Ok(previous value)` when it
    /// stored `v`; `Err(current value)` when `pred` refused.
    pub fn insert_if(&self, k: K, v: V, pred: impl FnOnce(&V) -> bool) -> Result<Option<V>, V> {
        let mut refused = false;
        let old = self.map.upsert(k, |old| match old {
            Some(o) if !pred(&o) => {
                refused = true;
                None
            }
            _ => Some(v),
        });
        match old {
            Some(o) if refused => Err(o),
            old => Ok(old),
        }
    }

    /// `crossbeam_skiplist::SkipMap::compare_insert`'s shape: inserts `k -> v` if `k` is
    /// absent or `pred(&old)` is true (atomically, as [`insert_if`](Self::insert_if)), and
    /// returns the value stored for `k` afterwards.
    pub fn compare_insert(&self, k: K, v: V, pred: impl FnOnce(&V) -> bool) -> V {
        match self.insert_if(k, v, pred) {
            Ok(_) => v,
            Err(current) => current,
        }
    }

    /// Replaces the value of `k` by `f(&old)` atomically (`f` runs with `k`'s leaf locked: it
    /// must not use this map); returns the new value, or `None` if `k` is absent. Concurrent
    /// updates of one key never lose each other's result.
    pub fn update<Q: ?Sized + Ord>(&self, k: &Q, f: impl FnOnce(&V) -> V) -> Option<V>
    where
        K: Borrow<Q>,
    {
        self.map.update(k, f).map(|(_, new)| new)
    }

    /// Removes `k`; returns its value, if it was present.
    #[inline]
    pub fn remove<Q: ?Sized + Ord>(&self, k: &Q) -> Option<V>
    where
        K: Borrow<Q>,
    {
        self.map.remove(k).map(|(_, v)| v)
    }

    /// Removes `k`; returns the stored key and its value, if it was present.
    pub fn remove_entry<Q: ?Sized + Ord>(&self, k: &Q) -> Option<(K, V)>
    where
        K: Borrow<Q>,
    {
        self.map.remove(k)
    }

    // ----- ends ------------------------------------------------------------------------

    /// The smallest key and its value (linearizable).
    pub fn first_key_value(&self) -> Option<(K, V)> {
        self.map.edge(true)
    }

    /// The largest key and its value (linearizable).
    pub fn last_key_value(&self) -> Option<(K, V)> {
        self.map.edge(false)
    }

    /// Removes and returns the entry with the smallest key, atomically: two threads never
    /// pop the same entry, and at the moment it is taken no smaller key is present.
    pub fn pop_first(&self) -> Option<(K, V)> {
        self.map.pop(true)
    }

    /// Removes and returns the entry with the largest key (atomically, as
    /// [`pop_first`](Self::pop_first)).
    pub fn pop_last(&self) -> Option<(K, V)> {
        self.map.pop(false)
    }

    /// The entry with the smallest key above `bound` (`Included(k)`: at or above `k`;
    /// `Unbounded`: the first entry), read as an iterator reads it.
    pub fn lower_bound<Q: ?Sized + Ord>(&self, bound: Bound<&Q>) -> Option<(K, V)>
    where
        K: Borrow<Q>,
    {
        Range::new(&self.map, (bound, Bound::Unbounded)).next()
    }

    /// The entry with the largest key below `bound` (`Included(k)`: at or below `k`;
    /// `Unbounded`: the last entry), read as an iterator reads it.
    pub fn upper_bound<Q: ?Sized + Ord>(&self, bound: Bound<&Q>) -> Option<(K, V)>
    where
        K: Borrow<Q>,
    {
        Range::new(&self.map, (Bound::Unbounded, bound)).next_back()
    }

    // ----- the whole map ---------------------------------------------------------------

    /// The number of elements. Exact when no write runs concurrently; while writes run,
    /// each write updates it just after taking effect, so it may lag by those writes.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether the map has no elements (same caveat as [`len`](Self::len)).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Removes every element (readers go on seeing the old contents until the empty array
    /// is published, in one step).
    pub fn clear(&self) {
        self.map.clear()
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
        Q: ?Sized + Ord,
        R: RangeBounds<Q>,
        K: Borrow<Q>,
    {
        if let (Bound::Included(s) | Bound::Excluded(s), Bound::Included(e) | Bound::Excluded(e)) =
            (range.start_bound(), range.end_bound())
        {
            assert!(s <= e, "range start is greater than range end in CobTree");
        }
        Range::new(&self.map, range)
    }

    /// All elements in key order from either end (weakly consistent, see [`Range`]).
    pub fn iter(&self) -> Iter<'_, K, V> {
        Iter::new(&self.map)
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

    /// Keeps only the elements for which `f` is true. Leaf by leaf, each under its lock
    /// (`f` must not use this map): every element present for the whole call is visited
    /// exactly once, in key order; elements inserted meanwhile may or may not be.
    pub fn retain(&self, mut f: impl FnMut(&K, &V) -> bool) {
        self.map.retain(&mut f)
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
    pub fn split_off<Q: ?Sized + Ord>(&self, k: &Q) -> Self
    where
        K: Borrow<Q>,
    {
        let out = Self::with_leaf_capacity(self.leaf_capacity());
        for (key, _) in self.range((Bound::Included(k), Bound::Unbounded)) {
            if let Some((key, v)) = self.remove_entry::<K>(&key) {
                out.insert(key, v);
            }
        }
        out
    }
}

#[cfg(all(test, loom))]
mod loom_tests;
