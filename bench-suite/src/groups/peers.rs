//! The ordered maps the `tree` key-type series and the `ycsb` group measure, behind one
//! interface: `CobTree`, `BTreeMap`, `crossbeam_skiplist::SkipMap`, `scc::TreeIndex` and
//! `ferntree::Tree`. A leaf below the groups (it imports only the peers and the key
//! generators' struct type).
//!
//! Each peer is used the way its documentation shows for the job, with its cheapest API:
//! reads through a closure or a reference where the map offers one (`CobTree::get_with`,
//! scc's `peek_with`, ferntree's `lookup`), CobTree's scans through its borrowing view
//! (`pin()`). ferntree keys must implement its `OptimisticRead`: `String` and `u64` do;
//! a `(u32, u64)` tuple cannot (a foreign trait on a foreign type), so its ferntree rows
//! use [`Pair`], a newtype with the tuple's order, stored as ferntree stores `String`
//! (boxed slots, `impl_optimistic_read_boxed!`), and the derived struct the same way.

use std::collections::BTreeMap;
use std::ops::Bound;

use cob_tree::CobTree;
use crossbeam_skiplist::SkipMap;

use crate::scaling::tree::TenantId;

pub const COB: &str = "CobTree";
pub const BT: &str = "BTreeMap";
pub const SKIP: &str = "SkipMap";
pub const SCC: &str = "scc TreeIndex";
pub const FERN: &str = "ferntree";

/// A `(u32, u64)` key for ferntree, which cannot take the tuple itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Pair(pub u32, pub u64);

ferntree::impl_optimistic_read_boxed!(Pair, TenantId);

/// How a key type is stored in ferntree: as itself where it implements `OptimisticRead`.
pub trait FernKey: Ord + Clone {
    /// The stored key.
    type F: ferntree::OptimisticRead + Ord + Clone;
    /// The stored form of `self`.
    fn fern(self) -> Self::F;
    /// `f` of the stored form of `self` (no clone where the types are the same).
    fn with<R>(&self, f: impl FnOnce(&Self::F) -> R) -> R;
}

impl FernKey for String {
    type F = String;
    fn fern(self) -> String {
        self
    }
    fn with<R>(&self, f: impl FnOnce(&String) -> R) -> R {
        f(self)
    }
}

impl FernKey for u64 {
    type F = u64;
    fn fern(self) -> u64 {
        self
    }
    fn with<R>(&self, f: impl FnOnce(&u64) -> R) -> R {
        f(self)
    }
}

impl FernKey for (u32, u64) {
    type F = Pair;
    fn fern(self) -> Pair {
        Pair(self.0, self.1)
    }
    fn with<R>(&self, f: impl FnOnce(&Pair) -> R) -> R {
        f(&Pair(self.0, self.1))
    }
}

impl FernKey for TenantId {
    type F = TenantId;
    fn fern(self) -> TenantId {
        self
    }
    fn with<R>(&self, f: impl FnOnce(&TenantId) -> R) -> R {
        f(self)
    }
}

/// ferntree's tree over the stored form of `K`.
pub struct Fern<K: FernKey, V: ferntree::OptimisticRead>(pub ferntree::Tree<K::F, V>);

impl<K: FernKey, V: ferntree::OptimisticRead> std::fmt::Debug for Fern<K, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Fern")
    }
}

/// A single-threaded ordered map of `K -> u64` as the key-type series uses it.
pub trait KeyMap<K>: Sized {
    /// The name in the report.
    const NAME: &'static str;
    /// An empty map.
    fn empty() -> Self;
    /// Inserts a new key.
    fn put(&mut self, k: K, v: u64);
    /// The value of `k`.
    fn find(&self, k: &K) -> Option<u64>;
    /// The number of entries.
    fn count(&self) -> usize;
    /// (entries, value sum) of a full iteration, by reference where the map allows.
    fn scan(&self) -> (usize, u64);
    /// Value sum of the first `n` entries with keys `>= from`.
    fn range_sum(&self, from: &K, n: usize) -> u64;
}

impl<K: Ord + Clone + Send + Sync + 'static> KeyMap<K> for CobTree<K, u64> {
    const NAME: &'static str = COB;
    fn empty() -> Self {
        CobTree::new()
    }
    fn put(&mut self, k: K, v: u64) {
        self.insert(k, v);
    }
    fn find(&self, k: &K) -> Option<u64> {
        self.get_with(k, |v| *v)
    }
    fn count(&self) -> usize {
        self.len()
    }
    fn scan(&self) -> (usize, u64) {
        self.pin()
            .iter()
            .fold((0, 0), |(c, s), e| (c + 1, s.wrapping_add(*e.value())))
    }
    fn range_sum(&self, from: &K, n: usize) -> u64 {
        self.pin()
            .range::<K, _>((Bound::Included(from), Bound::Unbounded))
            .take(n)
            .fold(0, |s, e| s.wrapping_add(*e.value()))
    }
}

impl<K: Ord> KeyMap<K> for BTreeMap<K, u64> {
    const NAME: &'static str = BT;
    fn empty() -> Self {
        BTreeMap::new()
    }
    fn put(&mut self, k: K, v: u64) {
        self.insert(k, v);
    }
    fn find(&self, k: &K) -> Option<u64> {
        self.get(k).copied()
    }
    fn count(&self) -> usize {
        self.len()
    }
    fn scan(&self) -> (usize, u64) {
        self.values()
            .fold((0, 0), |(c, s), v| (c + 1, s.wrapping_add(*v)))
    }
    fn range_sum(&self, from: &K, n: usize) -> u64 {
        self.range::<K, _>((Bound::Included(from), Bound::Unbounded))
            .take(n)
            .fold(0, |s, (_, v)| s.wrapping_add(*v))
    }
}

impl<K: Ord + Send + 'static> KeyMap<K> for SkipMap<K, u64> {
    const NAME: &'static str = SKIP;
    fn empty() -> Self {
        SkipMap::new()
    }
    fn put(&mut self, k: K, v: u64) {
        self.insert(k, v);
    }
    fn find(&self, k: &K) -> Option<u64> {
        self.get(k).map(|e| *e.value())
    }
    fn count(&self) -> usize {
        self.len()
    }
    fn scan(&self) -> (usize, u64) {
        self.iter()
            .fold((0, 0), |(c, s), e| (c + 1, s.wrapping_add(*e.value())))
    }
    fn range_sum(&self, from: &K, n: usize) -> u64 {
        self.range::<K, _>((Bound::Included(from), Bound::Unbounded))
            .take(n)
            .fold(0, |s, e| s.wrapping_add(*e.value()))
    }
}

impl<K: Ord + Clone + 'static> KeyMap<K> for scc::TreeIndex<K, u64> {
    const NAME: &'static str = SCC;
    fn empty() -> Self {
        scc::TreeIndex::new()
    }
    fn put(&mut self, k: K, v: u64) {
        // Keys are distinct: insert, not upsert.
        let _ = self.insert_sync(k, v);
    }
    fn find(&self, k: &K) -> Option<u64> {
        self.peek_with(k, |_, v| *v)
    }
    fn count(&self) -> usize {
        self.len()
    }
    fn scan(&self) -> (usize, u64) {
        let g = scc::Guard::new();
        self.iter(&g)
            .fold((0, 0), |(c, s), (_, v)| (c + 1, s.wrapping_add(*v)))
    }
    fn range_sum(&self, from: &K, n: usize) -> u64 {
        let g = scc::Guard::new();
        self.range::<K, _>((Bound::Included(from), Bound::Unbounded), &g)
            .take(n)
            .fold(0, |s, (_, v)| s.wrapping_add(*v))
    }
}

impl<K: FernKey> KeyMap<K> for Fern<K, u64> {
    const NAME: &'static str = FERN;
    fn empty() -> Self {
        Fern(ferntree::Tree::new())
    }
    fn put(&mut self, k: K, v: u64) {
        self.0.insert(k.fern(), v);
    }
    fn find(&self, k: &K) -> Option<u64> {
        k.with(|f| self.0.lookup(f, |v| *v))
    }
    fn count(&self) -> usize {
        self.0.len()
    }
    fn scan(&self) -> (usize, u64) {
        let mut it = self.0.raw_iter();
        it.seek_to_first();
        let (mut c, mut s) = (0usize, 0u64);
        while let Some((_, v)) = it.next() {
            c += 1;
            s = s.wrapping_add(*v);
        }
        (c, s)
    }
    fn range_sum(&self, from: &K, n: usize) -> u64 {
        k_range(&self.0, from, n)
    }
}

fn k_range<K: FernKey>(t: &ferntree::Tree<K::F, u64>, from: &K, n: usize) -> u64 {
    from.with(|f| {
        let mut r = t.range(Bound::Included(f), Bound::Unbounded);
        let mut s = 0u64;
        for _ in 0..n {
            match r.next() {
                Some((_, v)) => s = s.wrapping_add(*v),
                None => break,
            }
        }
        s
    })
}
