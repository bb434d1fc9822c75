//! The std traits of [`CobTree`]: construction, extension, iteration, comparison, hashing.
//!
//! Not here, deliberately: `Index<&K>`. `Index::index` must return `&V`, a reference that
//! lives as long as the borrow of the map; but writers change the map through `&self`
//! while it is borrowed, so no such reference can be sound without keeping every removed
//! value until the map drops. The crate's REFERENCE.md ("Deliberately not provided") has the whole
//! argument. Use [`CobTree::get`], which returns a copy (a clone).

use crate::CobTree;
use crate::iters::{IntoIter, Iter};
use core::fmt;
use core::hash::{Hash, Hasher};

impl<K: Ord + Clone + 'static, V: Clone + 'static> Default for CobTree<K, V> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K: Ord + Clone + fmt::Debug + 'static, V: Clone + fmt::Debug + 'static> fmt::Debug
    for CobTree<K, V>
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl<K: Ord + Clone + 'static, V: Clone + 'static> FromIterator<(K, V)> for CobTree<K, V> {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        let t = CobTree::new();
        for (k, v) in iter {
            t.insert(k, v);
        }
        t
    }
}

impl<K: Ord + Clone + 'static, V: Clone + 'static> Extend<(K, V)> for CobTree<K, V> {
    fn extend<I: IntoIterator<Item = (K, V)>>(&mut self, iter: I) {
        for (k, v) in iter {
            self.insert(k, v);
        }
    }
}

/// Extending through a shared reference works too: every method takes `&self`.
impl<K: Ord + Clone + 'static, V: Clone + 'static> Extend<(K, V)> for &CobTree<K, V> {
    fn extend<I: IntoIterator<Item = (K, V)>>(&mut self, iter: I) {
        for (k, v) in iter {
            self.insert(k, v);
        }
    }
}

impl<'a, K: Ord + Clone + 'static, V: Clone + 'static> Extend<(&'a K, &'a V)> for CobTree<K, V> {
    fn extend<I: IntoIterator<Item = (&'a K, &'a V)>>(&mut self, iter: I) {
        for (k, v) in iter {
            self.insert(k.clone(), v.clone());
        }
    }
}

impl<'a, K: Ord + Clone + 'static, V: Clone + 'static> Extend<(&'a K, &'a V)> for &CobTree<K, V> {
    fn extend<I: IntoIterator<Item = (&'a K, &'a V)>>(&mut self, iter: I) {
        for (k, v) in iter {
            self.insert(k.clone(), v.clone());
        }
    }
}

impl<'a, K: Ord + Clone + 'static, V: Clone + 'static> IntoIterator for &'a CobTree<K, V> {
    type Item = (K, V);
    type IntoIter = Iter<'a, K, V>;
    fn into_iter(self) -> Iter<'a, K, V> {
        self.iter()
    }
}

/// By value, in key order; the count is exact ([`ExactSizeIterator`]).
impl<K: Ord + Clone + 'static, V: Clone + 'static> IntoIterator for CobTree<K, V> {
    type Item = (K, V);
    type IntoIter = IntoIter<K, V>;
    fn into_iter(self) -> IntoIter<K, V> {
        IntoIter::new(self)
    }
}

/// A copy with the same leaf capacity, built from one iteration (so, under concurrent
/// writers, a weakly consistent copy).
impl<K: Ord + Clone + 'static, V: Clone + 'static> Clone for CobTree<K, V> {
    fn clone(&self) -> Self {
        let t = self.empty_like();
        for (k, v) in self.iter() {
            t.insert(k, v);
        }
        t
    }
}

/// Equal when both iterate the same entries (exact when neither map is being written).
impl<K: Ord + Clone + 'static, V: Clone + PartialEq + 'static> PartialEq for CobTree<K, V> {
    fn eq(&self, other: &Self) -> bool {
        self.iter().eq(other.iter())
    }
}

impl<K: Ord + Clone + 'static, V: Clone + Eq + 'static> Eq for CobTree<K, V> {}

/// Hashes the entries in key order, then their count (consistent with `PartialEq`).
impl<K: Ord + Clone + Hash + 'static, V: Clone + Hash + 'static> Hash for CobTree<K, V> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        let mut n = 0usize;
        for e in self.iter() {
            e.hash(state);
            n += 1;
        }
        state.write_usize(n);
    }
}
