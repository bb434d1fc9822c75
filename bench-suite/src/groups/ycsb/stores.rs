//! The maps YCSB runs on, behind one record-store interface: `CobTree`, `scc::TreeIndex`,
//! `ferntree::Tree`, `crossbeam_skiplist::SkipMap`, and `BTreeMap` (alone for one thread,
//! behind an `RwLock` for several). Records are 100-byte `Vec<u8>` values: bytes 0..8 the
//! record id, 8..16 a version that updates and read-modify-writes change.
//!
//! Each map does each operation with its cheapest documented API: reads copy the record
//! out through a reference or a closure (`CobTree::get_with`, scc `peek_with`, ferntree
//! `lookup`); an update replaces the value in place where the map can
//! (`CobTree::update_in_place`, `BTreeMap::get_mut`, ferntree's exclusive cursor) and
//! re-inserts it where it cannot (scc `upsert_sync`, `SkipMap::insert`); a read-modify-write
//! changes the version in place where the map hands out `&mut V` (BTreeMap, ferntree) and
//! otherwise reads a copy and writes the changed copy back; scans read the id of each
//! record through the map's borrowing range (CobTree's pinned view).

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::RwLock;

use cob_tree::CobTree;
use crossbeam_skiplist::SkipMap;

/// Bytes per record value.
pub const VALUE_BYTES: usize = 100;

/// The record with id `id` at version `version`.
pub fn record(id: u64, version: u64) -> Vec<u8> {
    let mut v = vec![(id as u8) ^ 0x5a; VALUE_BYTES];
    v[..8].copy_from_slice(&id.to_le_bytes());
    v[8..16].copy_from_slice(&version.to_le_bytes());
    v
}

/// The id of a record.
pub fn id_of(v: &[u8]) -> u64 {
    u64::from_le_bytes(v[..8].try_into().expect("a record holds 100 bytes"))
}

/// Reads a record the way a client does: copies it out; returns its id.
fn copy_out(v: &[u8]) -> u64 {
    let mut buf = [0u8; VALUE_BYTES];
    buf.copy_from_slice(&v[..VALUE_BYTES]);
    id_of(std::hint::black_box(&buf))
}

/// Adds one to a record's version.
pub fn bump(v: &mut [u8]) {
    let ver = u64::from_le_bytes(v[8..16].try_into().expect("a record holds 100 bytes"));
    v[8..16].copy_from_slice(&(ver + 1).to_le_bytes());
}

/// A record store.
pub trait Store<K> {
    /// The name in the report.
    const NAME: &'static str;
    /// Whether an update replaces the entry (removes it, then links a new one), so that a
    /// concurrent request may miss a present key for a moment: misses of that kind are
    /// tolerated on several threads (and counted) for such a map.
    const REPLACE_MAY_HIDE: bool = false;
    /// Loads one new record (single-threaded load phase).
    fn load(&mut self, k: K, v: Vec<u8>);
    /// Reads the record of `k`; its id.
    fn read(&self, k: &K) -> Option<u64>;
    /// Replaces the record of `k` by `v`; whether `k` was present.
    fn update(&self, k: &K, v: Vec<u8>) -> bool;
    /// Reads the record of `k` and writes it back with its version bumped; whether `k`
    /// was present.
    fn rmw(&self, k: &K) -> bool;
    /// Inserts a new record.
    fn insert(&self, k: K, v: Vec<u8>);
    /// Reads up to `len` records from the first key `>= from`: (records, first id, id sum).
    fn scan(&self, from: &K, len: usize) -> (usize, Option<u64>, u64);
    /// Records stored.
    fn count(&self) -> usize;
}

/// Folds a scan's ids into (records, first id, id sum).
fn fold_ids(ids: impl Iterator<Item = u64>) -> (usize, Option<u64>, u64) {
    ids.fold((0, None, 0u64), |(c, f, s), id| {
        (c + 1, f.or(Some(id)), s.wrapping_add(id))
    })
}

impl<K: Ord + Clone + Send + Sync + 'static> Store<K> for CobTree<K, Vec<u8>> {
    const NAME: &'static str = "CobTree";
    fn load(&mut self, k: K, v: Vec<u8>) {
        self.insert(k, v);
    }
    fn read(&self, k: &K) -> Option<u64> {
        self.get_with(k, |v| copy_out(v))
    }
    fn update(&self, k: &K, v: Vec<u8>) -> bool {
        self.update_in_place(k, move |_| v)
    }
    fn rmw(&self, k: &K) -> bool {
        self.update_in_place(k, |old| {
            let mut v = old.clone();
            bump(&mut v);
            v
        })
    }
    fn insert(&self, k: K, v: Vec<u8>) {
        CobTree::insert(self, k, v);
    }
    fn scan(&self, from: &K, len: usize) -> (usize, Option<u64>, u64) {
        let pin = self.pin();
        fold_ids(
            pin.range::<K, _>((Bound::Included(from), Bound::Unbounded))
                .take(len)
                .map(|e| id_of(e.value())),
        )
    }
    fn count(&self) -> usize {
        self.len()
    }
}

impl<K: Ord + Clone + 'static> Store<K> for scc::TreeIndex<K, Vec<u8>> {
    const NAME: &'static str = "scc TreeIndex";
    fn load(&mut self, k: K, v: Vec<u8>) {
        let _ = self.insert_sync(k, v);
    }
    fn read(&self, k: &K) -> Option<u64> {
        self.peek_with(k, |_, v| copy_out(v))
    }
    fn update(&self, k: &K, v: Vec<u8>) -> bool {
        // TreeIndex values are immutable: an update is an upsert (of a present key).
        if !self.contains(k) {
            return false;
        }
        self.upsert_sync(k.clone(), v);
        true
    }
    fn rmw(&self, k: &K) -> bool {
        let Some(mut v) = self.peek_with(k, |_, v| v.clone()) else {
            return false;
        };
        bump(&mut v);
        self.upsert_sync(k.clone(), v);
        true
    }
    fn insert(&self, k: K, v: Vec<u8>) {
        let _ = self.insert_sync(k, v);
    }
    fn scan(&self, from: &K, len: usize) -> (usize, Option<u64>, u64) {
        let g = scc::Guard::new();
        fold_ids(
            self.range::<K, _>((Bound::Included(from), Bound::Unbounded), &g)
                .take(len)
                .map(|(_, v)| id_of(v)),
        )
    }
    fn count(&self) -> usize {
        self.len()
    }
}

/// ferntree's tree (keys that implement its `OptimisticRead`: `u64` and `String`).
pub struct Fern<K: ferntree::OptimisticRead + Ord + Clone>(pub ferntree::Tree<K, Vec<u8>>);

impl<K: ferntree::OptimisticRead + Ord + Clone> std::fmt::Debug for Fern<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Fern")
    }
}

impl<K: ferntree::OptimisticRead + Ord + Clone> Store<K> for Fern<K> {
    const NAME: &'static str = "ferntree";
    fn load(&mut self, k: K, v: Vec<u8>) {
        self.0.insert(k, v);
    }
    fn read(&self, k: &K) -> Option<u64> {
        self.0.lookup(k, |v| copy_out(v))
    }
    fn update(&self, k: &K, v: Vec<u8>) -> bool {
        let mut it = self.0.raw_iter_mut();
        if !it.seek_exact(k) {
            return false;
        }
        match it.peek() {
            Some((_, old)) => {
                *old = v;
                true
            }
            None => false,
        }
    }
    fn rmw(&self, k: &K) -> bool {
        let mut it = self.0.raw_iter_mut();
        if !it.seek_exact(k) {
            return false;
        }
        match it.peek() {
            Some((_, v)) => {
                bump(v);
                true
            }
            None => false,
        }
    }
    fn insert(&self, k: K, v: Vec<u8>) {
        self.0.insert(k, v);
    }
    fn scan(&self, from: &K, len: usize) -> (usize, Option<u64>, u64) {
        let mut r = self.0.range(Bound::Included(from), Bound::Unbounded);
        let (mut c, mut first, mut s) = (0, None, 0u64);
        while c < len {
            let Some((_, v)) = r.next() else { break };
            let id = id_of(v);
            first = first.or(Some(id));
            s = s.wrapping_add(id);
            c += 1;
        }
        (c, first, s)
    }
    fn count(&self) -> usize {
        self.0.len()
    }
}

impl<K: Ord + Clone + Send + 'static> Store<K> for SkipMap<K, Vec<u8>> {
    const NAME: &'static str = "SkipMap";
    /// `SkipMap::insert` of a present key removes the old entry, then inserts.
    const REPLACE_MAY_HIDE: bool = true;
    fn load(&mut self, k: K, v: Vec<u8>) {
        SkipMap::insert(self, k, v);
    }
    fn read(&self, k: &K) -> Option<u64> {
        self.get(k).map(|e| copy_out(e.value()))
    }
    fn update(&self, k: &K, v: Vec<u8>) -> bool {
        // SkipMap values are immutable: an update re-inserts (a present key).
        if !self.contains_key(k) {
            return false;
        }
        SkipMap::insert(self, k.clone(), v);
        true
    }
    fn rmw(&self, k: &K) -> bool {
        let Some(mut v) = self.get(k).map(|e| e.value().clone()) else {
            return false;
        };
        bump(&mut v);
        SkipMap::insert(self, k.clone(), v);
        true
    }
    fn insert(&self, k: K, v: Vec<u8>) {
        SkipMap::insert(self, k, v);
    }
    fn scan(&self, from: &K, len: usize) -> (usize, Option<u64>, u64) {
        fold_ids(
            self.range::<K, _>((Bound::Included(from), Bound::Unbounded))
                .take(len)
                .map(|e| id_of(e.value())),
        )
    }
    fn count(&self) -> usize {
        self.len()
    }
}

/// The operations on a `BTreeMap` itself, shared by its one-thread and locked forms.
fn bt_update<K: Ord>(m: &mut BTreeMap<K, Vec<u8>>, k: &K, v: Vec<u8>) -> bool {
    match m.get_mut(k) {
        Some(old) => {
            *old = v;
            true
        }
        None => false,
    }
}

fn bt_rmw<K: Ord>(m: &mut BTreeMap<K, Vec<u8>>, k: &K) -> bool {
    m.get_mut(k).map(|v| bump(v)).is_some()
}

fn bt_scan<K: Ord>(m: &BTreeMap<K, Vec<u8>>, from: &K, len: usize) -> (usize, Option<u64>, u64) {
    fold_ids(
        m.range::<K, _>((Bound::Included(from), Bound::Unbounded))
            .take(len)
            .map(|(_, v)| id_of(v)),
    )
}

/// `BTreeMap` on one thread, the single-threaded reference. Borrowed mutably through a
/// `RefCell` (one flag check per operation) so it takes `&self` like the others.
#[derive(Debug)]
pub struct Solo<'a, K>(pub RefCell<&'a mut BTreeMap<K, Vec<u8>>>);

impl<K: Ord> Store<K> for Solo<'_, K> {
    const NAME: &'static str = "BTreeMap";
    fn load(&mut self, k: K, v: Vec<u8>) {
        self.0.get_mut().insert(k, v);
    }
    fn read(&self, k: &K) -> Option<u64> {
        self.0.borrow().get(k).map(|v| copy_out(v))
    }
    fn update(&self, k: &K, v: Vec<u8>) -> bool {
        bt_update(&mut self.0.borrow_mut(), k, v)
    }
    fn rmw(&self, k: &K) -> bool {
        bt_rmw(&mut self.0.borrow_mut(), k)
    }
    fn insert(&self, k: K, v: Vec<u8>) {
        self.0.borrow_mut().insert(k, v);
    }
    fn scan(&self, from: &K, len: usize) -> (usize, Option<u64>, u64) {
        bt_scan(&self.0.borrow(), from, len)
    }
    fn count(&self) -> usize {
        self.0.borrow().len()
    }
}

impl<K: Ord> Store<K> for RwLock<BTreeMap<K, Vec<u8>>> {
    const NAME: &'static str = "RwLock<BTreeMap>";
    fn load(&mut self, k: K, v: Vec<u8>) {
        self.get_mut().expect("not poisoned").insert(k, v);
    }
    fn read(&self, k: &K) -> Option<u64> {
        RwLock::read(self)
            .expect("not poisoned")
            .get(k)
            .map(|v| copy_out(v))
    }
    fn update(&self, k: &K, v: Vec<u8>) -> bool {
        bt_update(&mut RwLock::write(self).expect("not poisoned"), k, v)
    }
    fn rmw(&self, k: &K) -> bool {
        bt_rmw(&mut RwLock::write(self).expect("not poisoned"), k)
    }
    fn insert(&self, k: K, v: Vec<u8>) {
        RwLock::write(self).expect("not poisoned").insert(k, v);
    }
    fn scan(&self, from: &K, len: usize) -> (usize, Option<u64>, u64) {
        bt_scan(&RwLock::read(self).expect("not poisoned"), from, len)
    }
    fn count(&self) -> usize {
        RwLock::read(self).expect("not poisoned").len()
    }
}
