#![doc = include_str!("../README.md")]

mod iter;
mod key;
mod pma;
mod sync;

pub use iter::Range;
pub use key::{Key, MAX_POD_BYTES, Pod};
pub use pma::{
    CACHE_LINE, FINE_GROWTH_BYTES, LEAF_BYTES, LOWER_ROOT, MAX_LEAF_CAPACITY, MIN_LEAF_CAPACITY,
    RANGE_CHUNK, UPPER_ROOT, WIDE_LEAF_FACTOR,
};

/// Map sizes of the seed's benchmark table (all fit in L2: where the seed stopped).
pub const SEED_TABLE_SIZES: [usize; 5] = [100, 500, 1_000, 2_000, 5_000];
/// Map sizes past the caches, where the layout matters (quick benchmark mode).
pub const LARGE_SIZES: [usize; 2] = [100_000, 1_000_000];
/// Extra map size of the full benchmark mode.
pub const FULL_SIZES: [usize; 1] = [10_000_000];

use core::fmt;
use core::ops::{Bound, RangeBounds};

/// A concurrent ordered map over a packed memory array. Every method takes `&self`.
///
/// See the [crate docs](crate) for the layout and the concurrency protocol.
pub struct CobTree<K: Key, V: Pod> {
    map: pma::map::Map<K, V>,
    // Send/Sync exactly when K and V are (the storage itself is all atomics).
    _kv: core::marker::PhantomData<(K, V)>,
}

static_assertions::assert_impl_all!(CobTree<u64, u64>: Send, Sync);
static_assertions::assert_impl_all!(CobTree<[u8; 16], u128>: Send, Sync);

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

    /// Inserts `k -> v`; returns the previous value of `k`, if any.
    pub fn insert(&self, k: K, v: V) -> Option<V> {
        self.map.insert(k, v)
    }

    /// The value of `k`.
    pub fn get(&self, k: &K) -> Option<V> {
        self.map.get(k)
    }

    /// Whether `k` is present.
    pub fn contains_key(&self, k: &K) -> bool {
        self.map.get(k).is_some()
    }

    /// Removes `k`; returns its value, if it was present.
    pub fn remove(&self, k: &K) -> Option<V> {
        self.map.remove(k)
    }

    /// The number of elements. Exact when no write runs concurrently; while writes run,
    /// each write updates it just after taking effect, so it may lag by those writes.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether the map has no elements (same caveat as [`len`](Self::len)).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The smallest key and its value.
    pub fn first_key_value(&self) -> Option<(K, V)> {
        self.map.edge(true)
    }

    /// The largest key and its value.
    pub fn last_key_value(&self) -> Option<(K, V)> {
        self.map.edge(false)
    }

    /// Removes every element.
    pub fn clear(&self) {
        self.map.clear()
    }

    /// The elements with keys in `range`, in key order (weakly consistent, see [`Range`]).
    ///
    /// # Panics
    /// Like `BTreeMap::range`: if the start is greater than the end, or both are the same
    /// excluded key.
    pub fn range<R: RangeBounds<K>>(&self, range: R) -> Range<'_, K, V> {
        let start = range.start_bound().cloned();
        let end = range.end_bound().cloned();
        match (&start, &end) {
            (Bound::Excluded(s), Bound::Excluded(e)) if s == e => {
                panic!("range start and end are equal and excluded in CobTree")
            }
            (Bound::Included(s) | Bound::Excluded(s), Bound::Included(e) | Bound::Excluded(e))
                if s > e =>
            {
                panic!("range start is greater than range end in CobTree")
            }
            _ => {}
        }
        Range::new(self, start, end)
    }

    /// All elements in key order (weakly consistent, see [`Range`]).
    pub fn iter(&self) -> Range<'_, K, V> {
        Range::new(self, Bound::Unbounded, Bound::Unbounded)
    }
}

impl<K: Key, V: Pod> Default for CobTree<K, V> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K: Key + fmt::Debug, V: Pod + fmt::Debug> fmt::Debug for CobTree<K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl<K: Key, V: Pod> FromIterator<(K, V)> for CobTree<K, V> {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        let t = CobTree::new();
        for (k, v) in iter {
            t.insert(k, v);
        }
        t
    }
}

impl<K: Key, V: Pod> Extend<(K, V)> for CobTree<K, V> {
    fn extend<I: IntoIterator<Item = (K, V)>>(&mut self, iter: I) {
        for (k, v) in iter {
            self.insert(k, v);
        }
    }
}

/// Extending through a shared reference works too: every method takes `&self`.
impl<K: Key, V: Pod> Extend<(K, V)> for &CobTree<K, V> {
    fn extend<I: IntoIterator<Item = (K, V)>>(&mut self, iter: I) {
        for (k, v) in iter {
            self.insert(k, v);
        }
    }
}

impl<'a, K: Key, V: Pod> IntoIterator for &'a CobTree<K, V> {
    type Item = (K, V);
    type IntoIter = Range<'a, K, V>;
    fn into_iter(self) -> Range<'a, K, V> {
        self.iter()
    }
}

#[cfg(all(test, loom))]
mod loom_tests;
