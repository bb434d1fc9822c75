//! `crossbeam_skiplist::SkipMap`'s API, over [`CobTree`], so that crossbeam-skiplist's own
//! `tests/map.rs` runs against cob-tree unchanged (see `lib.rs`).
//!
//! Each method is one call of cob-tree's API. The one difference in kind: a SkipMap
//! [`Entry`] borrows a node of the map, while cob-tree hands out copies, so an [`Entry`] here
//! holds a copy of its key and value. Its position (`next`, `prev`, `move_*`) is its key;
//! `is_removed` is true once this entry's `remove` ran or its key is absent from the map (a
//! SkipMap entry also counts as removed when its key was removed and inserted again).
//! And one difference of choice: `CobTree::range` panics on a start above the end, as
//! `BTreeMap::range` does, where SkipMap's is empty; [`SkipMap::range`] here checks first.

use cob_tree::CobTree;
use core::cell::Cell;
use core::ops::{Bound, RangeBounds};
use std::borrow::Borrow;

/// The map: a [`CobTree`] under SkipMap's names.
pub struct SkipMap<K, V>(CobTree<K, V>);

/// A copy of one entry, and the map it came from.
pub struct Entry<'a, K, V> {
    map: &'a SkipMap<K, V>,
    key: K,
    value: V,
    removed: Cell<bool>,
}

impl<K: Ord + Clone + 'static, V: Clone + 'static> Default for SkipMap<K, V> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K: Ord + Clone + 'static, V: Clone + 'static> SkipMap<K, V> {
    pub fn new() -> Self {
        SkipMap(CobTree::new())
    }

    fn entry(&self, (key, value): (K, V)) -> Entry<'_, K, V> {
        Entry {
            map: self,
            key,
            value,
            removed: Cell::new(false),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn front(&self) -> Option<Entry<'_, K, V>> {
        self.0.first_key_value().map(|e| self.entry(e))
    }

    pub fn back(&self) -> Option<Entry<'_, K, V>> {
        self.0.last_key_value().map(|e| self.entry(e))
    }

    pub fn contains_key<Q: ?Sized + Ord + 'static>(&self, key: &Q) -> bool
    where
        K: Borrow<Q>,
    {
        self.0.contains_key(key)
    }

    pub fn get<Q: ?Sized + Ord + 'static>(&self, key: &Q) -> Option<Entry<'_, K, V>>
    where
        K: Borrow<Q>,
    {
        self.0.get_key_value(key).map(|e| self.entry(e))
    }

    pub fn lower_bound<Q: ?Sized + Ord + 'static>(&self, b: Bound<&Q>) -> Option<Entry<'_, K, V>>
    where
        K: Borrow<Q>,
    {
        self.0.lower_bound(b).map(|e| self.entry(e))
    }

    pub fn upper_bound<Q: ?Sized + Ord + 'static>(&self, b: Bound<&Q>) -> Option<Entry<'_, K, V>>
    where
        K: Borrow<Q>,
    {
        self.0.upper_bound(b).map(|e| self.entry(e))
    }

    pub fn get_or_insert(&self, key: K, value: V) -> Entry<'_, K, V> {
        let v = self.0.get_or_insert(key.clone(), value);
        self.entry((key, v))
    }

    pub fn get_or_insert_with(&self, key: K, f: impl FnOnce() -> V) -> Entry<'_, K, V> {
        let v = self.0.get_or_insert_with(key.clone(), f);
        self.entry((key, v))
    }

    pub fn iter(&self) -> impl DoubleEndedIterator<Item = Entry<'_, K, V>> + '_ {
        self.0.iter().map(|e| self.entry(e))
    }

    pub fn range<'a, Q, R>(
        &'a self,
        range: R,
    ) -> impl DoubleEndedIterator<Item = Entry<'a, K, V>> + 'a
    where
        Q: ?Sized + Ord + 'static,
        R: RangeBounds<Q> + 'a,
        K: Borrow<Q>,
    {
        let inverted = match (range.start_bound(), range.end_bound()) {
            (Bound::Included(a) | Bound::Excluded(a), Bound::Included(b) | Bound::Excluded(b)) => {
                a > b
            }
            _ => false,
        };
        // Boxed, not `Option::into_iter().flatten()`: `Flatten` would fuse the iterator,
        // and SkipMap's iterators resume after `None` (its `ordered_range` test).
        let it: Box<dyn DoubleEndedIterator<Item = (K, V)> + 'a> = if inverted {
            Box::new(core::iter::empty())
        } else {
            Box::new(self.0.range(range))
        };
        it.map(|e| self.entry(e))
    }

    pub fn insert(&self, key: K, value: V) -> Entry<'_, K, V> {
        self.0.insert(key.clone(), value.clone());
        self.entry((key, value))
    }

    pub fn compare_insert(&self, key: K, value: V, f: impl FnOnce(&V) -> bool) -> Entry<'_, K, V> {
        let v = self.0.compare_insert(key.clone(), value, f);
        self.entry((key, v))
    }

    pub fn remove<Q: ?Sized + Ord + 'static>(&self, key: &Q) -> Option<Entry<'_, K, V>>
    where
        K: Borrow<Q>,
    {
        let e = self.entry(self.0.remove_entry(key)?);
        e.removed.set(true);
        Some(e)
    }

    pub fn pop_front(&self) -> Option<Entry<'_, K, V>> {
        let e = self.entry(self.0.pop_first()?);
        e.removed.set(true);
        Some(e)
    }

    pub fn pop_back(&self) -> Option<Entry<'_, K, V>> {
        let e = self.entry(self.0.pop_last()?);
        e.removed.set(true);
        Some(e)
    }

    pub fn clear(&self) {
        self.0.clear()
    }
}

impl<K, V> Entry<'_, K, V> {
    /// The key, without `key`'s bounds (for the set's `Deref`).
    pub(crate) fn key_ref(&self) -> &K {
        &self.key
    }
}

impl<K: Ord + Clone + 'static, V: Clone + 'static> Entry<'_, K, V> {
    pub fn key(&self) -> &K {
        &self.key
    }

    pub fn value(&self) -> &V {
        &self.value
    }

    pub fn is_removed(&self) -> bool {
        self.removed.get() || !self.map.0.contains_key(&self.key)
    }

    /// Removes this entry's key; true if this call removed it.
    pub fn remove(&self) -> bool {
        if self.removed.replace(true) {
            return false;
        }
        self.map.0.remove(&self.key).is_some()
    }

    pub fn next(&self) -> Option<Self> {
        self.map.lower_bound(Bound::Excluded(&self.key))
    }

    pub fn prev(&self) -> Option<Self> {
        self.map.upper_bound(Bound::Excluded(&self.key))
    }

    pub fn move_next(&mut self) -> bool {
        match self.next() {
            Some(e) => {
                *self = e;
                true
            }
            None => false,
        }
    }

    pub fn move_prev(&mut self) -> bool {
        match self.prev() {
            Some(e) => {
                *self = e;
                true
            }
            None => false,
        }
    }
}

impl<K: Ord + Clone + 'static, V: Clone + 'static> FromIterator<(K, V)> for SkipMap<K, V> {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        let m = SkipMap::new();
        for (k, v) in iter {
            m.0.insert(k, v);
        }
        m
    }
}

impl<K: Ord + Clone + 'static, V: Clone + 'static> IntoIterator for SkipMap<K, V> {
    type Item = (K, V);
    type IntoIter = <CobTree<K, V> as IntoIterator>::IntoIter;
    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}
