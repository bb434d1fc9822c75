//! `crossbeam_skiplist::SkipSet`'s API: a [`SkipMap`] to `()`, as SkipSet is. Its entries
//! hold a copy of their element (see [`map`](crate::map) for what that changes).

use crate::map::{self, SkipMap};
use core::ops::{Bound, Deref, RangeBounds};
use std::borrow::Borrow;

/// The set: a [`SkipMap`] to `()`.
pub struct SkipSet<T>(SkipMap<T, ()>);

/// A copy of one element, and the set it came from.
pub struct Entry<'a, T>(map::Entry<'a, T, ()>);

impl<T: Ord + Clone + 'static> Default for SkipSet<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Ord + Clone + 'static> SkipSet<T> {
    pub fn new() -> Self {
        SkipSet(SkipMap::new())
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn front(&self) -> Option<Entry<'_, T>> {
        self.0.front().map(Entry)
    }

    pub fn back(&self) -> Option<Entry<'_, T>> {
        self.0.back().map(Entry)
    }

    pub fn contains<Q: ?Sized + Ord + 'static>(&self, key: &Q) -> bool
    where
        T: Borrow<Q>,
    {
        self.0.contains_key(key)
    }

    pub fn get<Q: ?Sized + Ord + 'static>(&self, key: &Q) -> Option<Entry<'_, T>>
    where
        T: Borrow<Q>,
    {
        self.0.get(key).map(Entry)
    }

    pub fn lower_bound<Q: ?Sized + Ord + 'static>(&self, b: Bound<&Q>) -> Option<Entry<'_, T>>
    where
        T: Borrow<Q>,
    {
        self.0.lower_bound(b).map(Entry)
    }

    pub fn upper_bound<Q: ?Sized + Ord + 'static>(&self, b: Bound<&Q>) -> Option<Entry<'_, T>>
    where
        T: Borrow<Q>,
    {
        self.0.upper_bound(b).map(Entry)
    }

    pub fn get_or_insert(&self, key: T) -> Entry<'_, T> {
        Entry(self.0.get_or_insert(key, ()))
    }

    pub fn iter(&self) -> impl DoubleEndedIterator<Item = Entry<'_, T>> + '_ {
        self.0.iter().map(Entry)
    }

    pub fn range<'a, Q, R>(&'a self, range: R) -> impl DoubleEndedIterator<Item = Entry<'a, T>> + 'a
    where
        Q: ?Sized + Ord + 'static,
        R: RangeBounds<Q> + 'a,
        T: Borrow<Q>,
    {
        self.0.range(range).map(Entry)
    }

    pub fn insert(&self, key: T) -> Entry<'_, T> {
        Entry(self.0.insert(key, ()))
    }

    pub fn remove<Q: ?Sized + Ord + 'static>(&self, key: &Q) -> Option<Entry<'_, T>>
    where
        T: Borrow<Q>,
    {
        self.0.remove(key).map(Entry)
    }

    pub fn pop_front(&self) -> Option<Entry<'_, T>> {
        self.0.pop_front().map(Entry)
    }

    pub fn pop_back(&self) -> Option<Entry<'_, T>> {
        self.0.pop_back().map(Entry)
    }

    pub fn clear(&self) {
        self.0.clear()
    }
}

impl<T: Ord + Clone + 'static> Entry<'_, T> {
    pub fn value(&self) -> &T {
        self.0.key()
    }

    pub fn is_removed(&self) -> bool {
        self.0.is_removed()
    }

    pub fn remove(&self) -> bool {
        self.0.remove()
    }

    pub fn next(&self) -> Option<Self> {
        self.0.next().map(Entry)
    }

    pub fn prev(&self) -> Option<Self> {
        self.0.prev().map(Entry)
    }

    pub fn move_next(&mut self) -> bool {
        self.0.move_next()
    }

    pub fn move_prev(&mut self) -> bool {
        self.0.move_prev()
    }
}

impl<T> Deref for Entry<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        self.0.key_ref()
    }
}

impl<T: Ord + Clone + 'static> FromIterator<T> for SkipSet<T> {
    fn from_iter<I: IntoIterator<Item = T>>(iter: I) -> Self {
        SkipSet(iter.into_iter().map(|k| (k, ())).collect())
    }
}

impl<T: Ord + Clone + 'static> IntoIterator for SkipSet<T> {
    type Item = T;
    type IntoIter = core::iter::Map<<SkipMap<T, ()> as IntoIterator>::IntoIter, fn((T, ())) -> T>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter().map(|(k, ())| k)
    }
}
