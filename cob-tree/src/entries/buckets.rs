//! The boxed path's index of buckets: the word core maps each key prefix to the number of
//! the [`Slab`] cell holding that prefix's bucket, one entry or the root of a tree of
//! entries ([`super::tree`]). This type is the only way to reach a bucket, so the rules
//! that make a cell number or a tree node safe to read (it was read from the core as
//! current while the reader was pinned, or under its leaf's lock) are kept here, in safe
//! methods.
//!
//! ```text
//!  word core (inline layout of u64 -> u64)      slab: type-stable cells
//!  prefix : u64  ->  cell : u64  -------------> [ one (K, V) ]                    (usual)
//!                    cell | TREE ------------> [ root ] -> B+tree of the prefix's entries
//! ```
//!
//! Every write of a prefix runs with the core leaf that owns the prefix locked (inside the
//! core's `upsert`/`edit`), so the writers of one bucket are serialised. A write builds
//! what it publishes first (a new cell, tree nodes), publishes it (the core's word, or the
//! tree's root or a child slot), and only then retires what it replaced. A reader's
//! validated read of the core pairs with the core writer's release fence, a tree's acquire
//! loads with its writer's release stores, so what a reader reaches is fully written; it
//! was current while the reader was pinned, so it is not reclaimed before the reader
//! unpins. The core's iterators yield an element of a frozen (retiring) array only while
//! that array is still current, so the same holds for them.

use super::slab::{Node, Slab, TREE, View};
use super::tree::{
    Caps, Cells, Change, Cursor as TreeCursor, Garbage, Inline, Layout, Probe, Root, Spot, Trees,
};
use crate::pma::inl::Inl;
use crate::pma::map::Map;
use crate::pma::{Edit, Guard, pin};
use crate::sync::{AtomicU64, Ordering};
use core::borrow::Borrow;
use core::ops::Bound;

/// A prefix or a cell number, as the core stores it.
type W = Inl<u64, 1>;

/// The core's iterator over the prefixes of a range of them.
type Prefixes<'a> = crate::pma::iter::Range<'a, W, (Bound<W>, Bound<W>), W, W>;

/// Whether the trees of a `K -> V` map hold their entries inline (neither needs dropping,
/// so bitwise copies are sound), else in cells.
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
pub(crate) const fn inline<K, V>() -> bool {
    !core::mem::needs_drop::<K>() && !core::mem::needs_drop::<V>()
}

/// `e`'s key with value `v`: the stored key kept, as `BTreeMap` keeps it; a bitwise copy
/// when `K` needs no drop (no clone), else a clone.
fn rekey<K: Clone, V>(e: &(K, V), v: V) -> (K, V) {
    if core::mem::needs_drop::<K>() {
        (e.0.clone(), v)
    } else {
        // SAFETY: `K` has no drop glue, so the copy and the original never both drop
        // anything; the original stays readable (readers may hold it) and is never
        // written.
        (unsafe { core::ptr::read(&e.0) }, v)
    }
}

pub(crate) struct Buckets<K, V> {
    index: Map<W, W>,
    slab: Slab<K, V>,
    caps: Caps,
    /// The order-preserving word of a key's bytes past its prefix (the cell layout's first
    /// comparison in a tree; 0 where there is none).
    word: fn(&K) -> u64,
    /// Entries beyond the first of each bucket (the core counts the buckets, i.e. the
    /// prefixes), a wrapping signed count: a key with a prefix of its own, the usual case,
    /// moves only the core's (striped) count.
    extra: AtomicU64,
    /// Drops every entry (made where the bounds the trees need hold).
    drop_all: fn(&mut Self),
}

/// A bucket, reached while `'g`'s guard was pinned.
pub(crate) enum Bucket<'g, K, V> {
    One(&'g (K, V)),
    Tree(TreeRef<'g, K, V>),
}

/// A prefix's tree, reached while `'g`'s guard was pinned.
pub(crate) struct TreeRef<'g, K, V> {
    slab: &'g Slab<K, V>,
    caps: Caps,
    root: &'g Root,
    g: &'g Guard,
}

impl<K, V> Buckets<K, V> {
    /// Entries in the map (exact when no write is in flight).
    pub(crate) fn len(&self) -> usize {
        let extra = self.extra.load(Ordering::Relaxed) as i64;
        usize::try_from((self.index.len() as i64).wrapping_add(extra)).unwrap_or(0)
    }

    fn add_extra(&self, d: i64) {
        if d != 0 {
            self.extra.fetch_add(d as u64, Ordering::Relaxed);
        }
    }

    pub(crate) fn leaf_capacity(&self) -> usize {
        self.index.leaf_capacity()
    }

    /// The bucket of prefix `p` now, valid while `g` lives.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub(crate) fn bucket<'g>(&'g self, p: u64, g: &'g Guard) -> Option<Bucket<'g, K, V>> {
        let (_, c) = self.index.get(&Inl::new(p))?;
        // SAFETY: `c` came from a validated read of the core (`Map::get`), made while `g`
        // was pinned: the node was current then (the contract of `Slab::view`).
        Some(self.bucket_of(c.get(), g))
    }

    /// The bucket in cell `c`.
    ///
    /// (Safe to call only with a `c` read as current while `g` was pinned; private.)
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn bucket_of<'g>(&'g self, c: u64, g: &'g Guard) -> Bucket<'g, K, V> {
        // SAFETY: every caller passes a cell number read from the core as current while
        // `g` was pinned (a validated read or a core iterator's element), or under the
        // prefix's leaf lock.
        match unsafe { self.slab.view(c, g) } {
            View::One(e) => Bucket::One(e),
            View::Tree(root) => Bucket::Tree(TreeRef {
                slab: &self.slab,
                caps: self.caps,
                root,
                g,
            }),
        }
    }

    /// The prefixes from the front (or the back), `range` of them, each with its bucket.
    pub(crate) fn cursor(&self, range: (Bound<u64>, Bound<u64>)) -> Cursor<'_, K, V> {
        let b = |b: Bound<u64>| b.map(Inl::new);
        Cursor {
            prefixes: crate::pma::iter::Range::new(&self.index, (b(range.0), b(range.1))),
            buckets: self,
        }
    }

    /// The cells the core names, in prefix order.
    fn cells(&self) -> Vec<u64> {
        let r = crate::pma::iter::Range::<W, _, W, W>::new(&self.index, ..);
        r.map(|(_, c)| c.get()).collect()
    }
}

impl<K: Ord + Clone + 'static, V: 'static> Buckets<K, V> {
    pub(crate) fn new(leaves: usize, cap: usize, word: fn(&K) -> u64) -> Self {
        Buckets {
            index: Map::new(leaves, cap),
            slab: Slab::new(),
            caps: Caps::for_leaf_capacity(cap),
            word,
            extra: AtomicU64::new(0),
            drop_all: Self::drop_all,
        }
    }

    /// Bytes of the core, the cells and the trees' nodes (live and waiting).
    pub(crate) fn heap_bytes(&self) -> usize {
        let g = pin();
        let trees = self
            .cursor((Bound::Unbounded, Bound::Unbounded))
            .fold_buckets(&g, 0, |n, _, b| match b {
                Bucket::One(_) => n,
                Bucket::Tree(t) => n + t.node_bytes(),
            });
        self.index.heap_bytes() + self.slab.heap_bytes() + trees
    }

    fn trees<L: Layout<K, V>>(&self) -> Trees<'_, K, V, L> {
        Trees::new(&self.slab, self.caps)
    }

    /// The probe of `q` with word `w` for layout `L` (the inline layout compares keys only).
    fn probe<'q, L: Layout<K, V>, Q: ?Sized>(w: u64, q: &'q Q) -> Probe<'q, Q> {
        Probe {
            word: if L::INLINE { 0 } else { w },
            key: q,
        }
    }

    /// The entry equal to `q` (of prefix `p` and word `w`), borrowed for as long as `g`
    /// lives.
    #[inline]
    pub(crate) fn get<'g, Q>(&'g self, p: u64, w: u64, q: &Q, g: &'g Guard) -> Option<&'g (K, V)>
    where
        K: Borrow<Q>,
        Q: ?Sized + Ord,
    {
        match self.bucket(p, g)? {
            Bucket::One(e) => (e.0.borrow() == q).then_some(e),
            Bucket::Tree(t) => t.get(w, q),
        }
    }

    /// A new slot of layout `L` for entry `e` (cell layout: in a new cell).
    fn new_slot<L: Layout<K, V>>(&self, e: (K, V)) -> L::Slot {
        L::make(&self.slab, (self.word)(&e.0), e)
    }

    /// Inserts or changes the entry of `k` (of prefix `p`) atomically: `f(Some(&value))` if
    /// present, `f(None)` if absent; `f` returns the value to store (`None`: leave the map
    /// as it is) and the result. Runs with the prefix's core leaf locked. A value replaced
    /// keeps the stored key.
    pub(crate) fn upsert<R>(
        &self,
        p: u64,
        k: K,
        f: impl FnOnce(Option<&V>) -> (Option<V>, R),
    ) -> R {
        if inline::<K, V>() {
            self.upsert_in::<Inline<K, V>, R>(p, k, f)
        } else {
            self.upsert_in::<Cells<K, V>, R>(p, k, f)
        }
    }

    fn upsert_in<L: Layout<K, V>, R>(
        &self,
        p: u64,
        k: K,
        f: impl FnOnce(Option<&V>) -> (Option<V>, R),
    ) -> R {
        let mut out = None;
        let mut garbage = Garbage::new();
        // Cells out of the map once the upsert returns.
        let mut dead: Option<u64> = None;
        let mut added = false;
        self.index.upsert(Inl::new(p), |cur| {
            let Some(c) = cur else {
                // A new prefix (the usual insert): no node to read, so no pin.
                let (v, r) = f(None);
                out = Some(r);
                return Some(Inl::new(self.slab.store(Node::one((k, v?)))));
            };
            let g = pin();
            match self.bucket_of(c.get(), &g) {
                Bucket::One(e) if e.0 == k => {
                    let (v, r) = f(Some(&e.1));
                    out = Some(r);
                    let new = rekey(e, v?);
                    dead = Some(c.get());
                    Some(Inl::new(self.slab.store(Node::one(new))))
                }
                Bucket::One(e) => {
                    let (v, r) = f(None);
                    out = Some(r);
                    let v = v?;
                    // A second key: the bucket becomes a tree of the two.
                    let less = k < e.0;
                    // SAFETY: `c` is the live one-entry cell of the prefix, under its lock.
                    let old = unsafe { L::adopt(&self.slab, (self.word)(&e.0), c.get(), &g) };
                    let new = self.new_slot::<L>((k, v));
                    let t = self.trees::<L>();
                    let root = if less {
                        t.pair(new, old)
                    } else {
                        t.pair(old, new)
                    };
                    if L::INLINE {
                        // The entry was copied into the tree: its cell goes.
                        dead = Some(c.get());
                    }
                    added = true;
                    Some(Inl::new(self.slab.store(Node::tree(root))))
                }
                Bucket::Tree(t) => {
                    let w = (self.word)(&k);
                    let trees = self.trees::<L>();
                    let mut spot = Spot::new();
                    // SAFETY: under the prefix's leaf lock: this is the only writer of the
                    // tree, whose root is the current bucket's; `g` is pinned.
                    unsafe { trees.find(t.root, Self::probe::<L, K>(w, &k), &g, &mut spot) };
                    // SAFETY: as above, the spot just found.
                    let cur = unsafe { trees.entry_at(&spot, &g) };
                    let (v, r) = f(cur.map(|e| &e.1));
                    out = Some(r);
                    let change = match (v, cur) {
                        (None, _) => Change::Keep,
                        (Some(v), Some(e)) => Change::Put(self.new_slot::<L>(rekey(e, v))),
                        (Some(v), None) => Change::Put(self.new_slot::<L>((k, v))),
                    };
                    // SAFETY: as above: the spot of this tree, unchanged since it was found.
                    let wrote = unsafe { trees.apply(t.root, &mut spot, change, &g, &mut garbage) };
                    dead = wrote.out.and_then(|s| L::cell_of(&s));
                    added = wrote.added;
                    None
                }
            }
        });
        if added {
            self.add_extra(1);
        }
        // SAFETY: what the write replaced is out of the map now: the one-entry cell the core
        // no longer names (the upsert has returned, so its word holds the new cell), or the
        // cell a tree slot named before the write replaced the slot, and the tree nodes it
        // replaced. Each is retired once, here.
        unsafe { self.slab.retire(dead.as_slice(), garbage) };
        out.expect("CobTree: upsert ran its closure")
    }

    /// Replaces `q`'s value (of prefix `p`, word `w`) by `f(&old)` atomically (neither value
    /// is copied); `after(&new)` of the stored new value, or `None` if `q` is absent.
    pub(crate) fn update<Q, R>(
        &self,
        p: u64,
        w: u64,
        q: &Q,
        f: impl FnOnce(&V) -> V,
        after: impl FnOnce(&V) -> R,
    ) -> Option<R>
    where
        K: Borrow<Q>,
        Q: ?Sized + Ord,
    {
        if inline::<K, V>() {
            self.update_in::<Inline<K, V>, Q, R>(p, w, q, f, after)
        } else {
            self.update_in::<Cells<K, V>, Q, R>(p, w, q, f, after)
        }
    }

    fn update_in<L: Layout<K, V>, Q, R>(
        &self,
        p: u64,
        w: u64,
        q: &Q,
        f: impl FnOnce(&V) -> V,
        after: impl FnOnce(&V) -> R,
    ) -> Option<R>
    where
        K: Borrow<Q>,
        Q: ?Sized + Ord,
    {
        let mut out = None;
        let mut garbage = Garbage::new();
        let mut dead = None;
        let mut one = false;
        let (mut f, mut after) = (Some(f), Some(after));
        let mut change = |e: &(K, V)| {
            let new = rekey(e, (f.take().expect("update runs once"))(&e.1));
            out = Some((after.take().expect("update runs once"))(&new.1));
            new
        };
        let r = self.index.edit(&Inl::new(p), |c| {
            let g = pin();
            match self.bucket_of(c.get(), &g) {
                Bucket::One(e) if e.0.borrow() == q => {
                    one = true;
                    Edit::Set(Inl::new(self.slab.store(Node::one(change(e)))))
                }
                Bucket::One(_) => Edit::Keep,
                Bucket::Tree(t) => {
                    let trees = self.trees::<L>();
                    // SAFETY: under the prefix's leaf lock, as in `upsert_in`.
                    let wrote = unsafe {
                        trees.write(t.root, Self::probe::<L, Q>(w, q), &g, &mut garbage, |cur| {
                            match cur {
                                Some(e) => Change::Put(self.new_slot::<L>(change(e))),
                                None => Change::Keep,
                            }
                        })
                    };
                    dead = wrote.out.and_then(|s| L::cell_of(&s));
                    Edit::Keep
                }
            }
        });
        if one && let Some(Err(old)) = r {
            dead = Some(old.get());
        }
        // SAFETY: as in `upsert_in`: the replaced cell (the core's old word or the slot the
        // tree replaced) and the tree's replaced nodes are out of the map, retired once.
        unsafe { self.slab.retire(dead.as_slice(), garbage) };
        out
    }

    /// Removes `q` (of prefix `p`, word `w`); `f` of its entry (what the caller wants back,
    /// cloned: readers may still be reading the entry).
    pub(crate) fn remove<Q, R>(
        &self,
        p: u64,
        w: u64,
        q: &Q,
        f: impl FnOnce(&K, &V) -> R,
    ) -> Option<R>
    where
        K: Borrow<Q>,
        Q: ?Sized + Ord,
    {
        if inline::<K, V>() {
            self.remove_in::<Inline<K, V>, Q, R>(p, w, q, f)
        } else {
            self.remove_in::<Cells<K, V>, Q, R>(p, w, q, f)
        }
    }

    fn remove_in<L: Layout<K, V>, Q, R>(
        &self,
        p: u64,
        w: u64,
        q: &Q,
        f: impl FnOnce(&K, &V) -> R,
    ) -> Option<R>
    where
        K: Borrow<Q>,
        Q: ?Sized + Ord,
    {
        let mut out = None;
        let mut garbage = Garbage::new();
        let mut dead: Option<u64> = None;
        // What happened to the bucket: its one entry removed, or one of its tree's (and
        // whether the tree collapsed into a one-entry bucket).
        let (mut one, mut from_tree, mut collapsed) = (false, false, false);
        let mut f = Some(f);
        let r = self.index.edit(&Inl::new(p), |c| {
            let g = pin();
            match self.bucket_of(c.get(), &g) {
                Bucket::One(e) if e.0.borrow() == q => {
                    out = Some((f.take().expect("remove runs once"))(&e.0, &e.1));
                    one = true;
                    Edit::Remove
                }
                Bucket::One(_) => Edit::Keep,
                Bucket::Tree(t) => {
                    let trees = self.trees::<L>();
                    // SAFETY: under the prefix's leaf lock, as in `upsert_in`.
                    let wrote = unsafe {
                        trees.write(t.root, Self::probe::<L, Q>(w, q), &g, &mut garbage, |cur| {
                            match cur {
                                Some(e) => {
                                    out = Some((f.take().expect("remove runs once"))(&e.0, &e.1));
                                    Change::Remove
                                }
                                None => Change::Keep,
                            }
                        })
                    };
                    let Some(s) = wrote.out else {
                        return Edit::Keep;
                    };
                    from_tree = true;
                    dead = L::cell_of(&s);
                    // A tree left with one entry becomes a one-entry bucket again.
                    let e = self.collapse::<L>(t.root, &g, &mut garbage);
                    collapsed = matches!(e, Edit::Set(_));
                    e
                }
            }
        });
        // The core's old word goes too when it changed: the removed one-entry cell, or the
        // root cell of a tree that collapsed.
        let old = match r {
            Some(Ok((_, c))) if one => Some(c.get()),
            Some(Err(c)) if collapsed => Some(c.get()),
            _ => None,
        };
        if from_tree {
            self.add_extra(-1);
        }
        let cells = [dead, old];
        let cells: Vec<u64> = cells.into_iter().flatten().collect();
        // SAFETY: as in `upsert_in`: the removed entry's cell, the core's old word when the
        // edit removed or replaced it, and the tree's replaced nodes are out of the map,
        // retired once.
        unsafe { self.slab.retire(&cells, garbage) };
        out
    }

    /// A tree left with at most one entry after a write: what the core's word becomes
    /// (`Edit::Set` of a one-entry cell, the tree's nodes to `garbage`), or `Edit::Keep`.
    fn collapse<L: Layout<K, V>>(&self, root: &Root, g: &Guard, garbage: &mut Garbage) -> Edit<W> {
        let trees = self.trees::<L>();
        // SAFETY: under the prefix's leaf lock (every caller's), the live tree.
        let Some(s) = (unsafe { trees.single(root) }) else {
            return Edit::Keep;
        };
        // SAFETY: the tree's last live slot, under the lock.
        let cell = unsafe { L::to_cell(&self.slab, s, g) };
        // SAFETY: under the lock; the tree leaves the map with this edit (the core's word
        // becomes `cell`, which holds its one entry); the slots' copies are forgotten.
        unsafe { trees.take_all(root, garbage, &mut |s| core::mem::forget(s)) };
        Edit::Set(Inl::new(cell))
    }

    /// Removes and returns the first (`front`) or last entry of prefix `p`'s bucket (by
    /// position, not by comparing keys), if the prefix has one.
    pub(crate) fn pop(&self, p: u64, front: bool) -> Option<(K, V)>
    where
        V: Clone,
    {
        if inline::<K, V>() {
            self.pop_in::<Inline<K, V>>(p, front)
        } else {
            self.pop_in::<Cells<K, V>>(p, front)
        }
    }

    fn pop_in<L: Layout<K, V>>(&self, p: u64, front: bool) -> Option<(K, V)>
    where
        V: Clone,
    {
        let mut out = None;
        let mut garbage = Garbage::new();
        let mut dead: Option<u64> = None;
        let (mut one, mut from_tree, mut collapsed) = (false, false, false);
        let r = self.index.edit(&Inl::new(p), |c| {
            let g = pin();
            match self.bucket_of(c.get(), &g) {
                Bucket::One(e) => {
                    out = Some(e.clone());
                    one = true;
                    Edit::Remove
                }
                Bucket::Tree(t) => {
                    let trees = self.trees::<L>();
                    // SAFETY: under the prefix's leaf lock, as in `upsert_in`.
                    let mut spot = unsafe { trees.end(t.root, !front) };
                    // SAFETY: as above, the spot just found.
                    let Some(e) = (unsafe { trees.entry_at(&spot, &g) }) else {
                        return Edit::Keep;
                    };
                    out = Some(e.clone());
                    // SAFETY: as above: the spot of this tree, unchanged since it was found.
                    let wrote =
                        unsafe { trees.apply(t.root, &mut spot, Change::Remove, &g, &mut garbage) };
                    from_tree = true;
                    dead = wrote.out.and_then(|s| L::cell_of(&s));
                    let e = self.collapse::<L>(t.root, &g, &mut garbage);
                    collapsed = matches!(e, Edit::Set(_));
                    e
                }
            }
        });
        let old = match r {
            Some(Ok((_, c))) if one => Some(c.get()),
            Some(Err(c)) if collapsed => Some(c.get()),
            _ => None,
        };
        if from_tree {
            self.add_extra(-1);
        }
        let cells: Vec<u64> = [dead, old].into_iter().flatten().collect();
        // SAFETY: as in `remove_in`.
        unsafe { self.slab.retire(&cells, garbage) };
        out
    }

    /// Keeps the entries of prefix `p`'s bucket for which `f` is true (under its lock).
    pub(crate) fn retain(&self, p: u64, f: &mut impl FnMut(&K, &V) -> bool) {
        if inline::<K, V>() {
            self.retain_in::<Inline<K, V>>(p, f)
        } else {
            self.retain_in::<Cells<K, V>>(p, f)
        }
    }

    fn retain_in<L: Layout<K, V>>(&self, p: u64, f: &mut impl FnMut(&K, &V) -> bool) {
        let mut garbage = Garbage::new();
        let mut dead: Vec<u64> = Vec::new();
        let mut removed = 0i64;
        let mut from_tree = false;
        let mut replaced = false;
        let r = self.index.edit(&Inl::new(p), |c| {
            let g = pin();
            match self.bucket_of(c.get(), &g) {
                Bucket::One(e) => {
                    if f(&e.0, &e.1) {
                        Edit::Keep
                    } else {
                        Edit::Remove
                    }
                }
                Bucket::Tree(t) => {
                    from_tree = true;
                    let trees = self.trees::<L>();
                    let mut kept: Vec<*const L::Slot> = Vec::new();
                    let mut gone: Vec<*const L::Slot> = Vec::new();
                    // SAFETY: under the lock, the live tree; `g` is pinned.
                    unsafe {
                        trees.slots(t.root, &g, &mut |s, e| {
                            if f(&e.0, &e.1) {
                                kept.push(s);
                            } else {
                                gone.push(s);
                            }
                        })
                    };
                    if gone.is_empty() {
                        return Edit::Keep;
                    }
                    removed = gone.len() as i64;
                    // SAFETY: the pointers are the live tree's slots (alive while its nodes
                    // are: until they are freed, after this retire).
                    dead.extend(gone.iter().filter_map(|s| L::cell_of(unsafe { &**s })));
                    let new = match kept.len() {
                        0 => None,
                        1 => {
                            // SAFETY: a live slot of the tree (its nodes live until freed).
                            let s = unsafe { &*kept[0] };
                            // SAFETY: under the lock, a live slot.
                            Some(unsafe { L::to_cell(&self.slab, s, &g) })
                        }
                        // SAFETY: live slots of the tree, in order.
                        _ => Some(self.slab.store(Node::tree(unsafe { trees.build(&kept) }))),
                    };
                    // SAFETY: under the lock; the old tree leaves the map with this edit (the
                    // kept slots were copied into `new`); the copies read out are forgotten.
                    unsafe { trees.take_all(t.root, &mut garbage, &mut |s| core::mem::forget(s)) };
                    replaced = true;
                    match new {
                        None => Edit::Remove,
                        Some(c) => Edit::Set(Inl::new(c)),
                    }
                }
            }
        });
        let left_empty = matches!(r, Some(Ok(_)));
        match r {
            Some(Ok((_, c))) => dead.push(c.get()),
            Some(Err(c)) if replaced => dead.push(c.get()),
            _ => {}
        }
        if from_tree {
            // A bucket removed whole also took its first entry out of the core's count.
            self.add_extra(-(removed - i64::from(left_empty)));
        }
        // SAFETY: the removed entries' cells, the core's old word (a removed one-entry cell
        // or a replaced tree's root cell) and the old tree's nodes are out of the map,
        // retired once.
        unsafe { self.slab.retire(&dead, garbage) };
    }

    /// Every entry, in key order, taken out of the (owned) map, which is left empty.
    pub(crate) fn drain(&mut self) -> Vec<(K, V)> {
        let mut out = Vec::with_capacity(self.len());
        self.take_each(&mut |e| out.push(e));
        out
    }

    /// The map's drop: every entry dropped (through `drop_all`, so `Drop` needs no bounds).
    fn drop_all(&mut self) {
        self.take_each(&mut drop);
    }

    /// `f` of every entry, in key order, taken out of the (owned) map, which is left empty.
    fn take_each(&mut self, f: &mut impl FnMut((K, V))) {
        let cells = self.cells();
        // The core forgets the cells before they are read out, so nothing sees them again.
        drop(self.index.take_array());
        self.extra.store(0, Ordering::Relaxed);
        for c in cells {
            if inline::<K, V>() {
                self.take_bucket::<Inline<K, V>>(c, f);
            } else {
                self.take_bucket::<Cells<K, V>>(c, f);
            }
        }
    }

    /// `f` of the entries of bucket cell `c` (the map is owned and has forgotten `c`).
    fn take_bucket<L: Layout<K, V>>(&mut self, c: u64, f: &mut impl FnMut((K, V))) {
        // SAFETY: `&mut self`: no reader; `c` was a prefix's cell in the core, which no
        // longer has it, so it is read out once.
        let node = unsafe { self.slab.take(c & !TREE) };
        let root = match node.into_parts() {
            Ok(e) => return f(e),
            Err(r) => r,
        };
        let mut garbage = Garbage::new();
        let mut cells = Vec::new();
        let trees = Trees::<K, V, L>::new(&self.slab, self.caps);
        // SAFETY: the owned map's tree, read out once: each slot's entry (inline layout)
        // is owned from now on, each cell's is read out below.
        unsafe {
            trees.take_all(&root, &mut garbage, &mut |s| match L::into_entry(s) {
                Ok(e) => f(e),
                Err(c) => cells.push(c),
            })
        };
        for c in cells {
            // SAFETY: the cell of a slot of the owned tree, named by no other slot.
            if let Some(e) = unsafe { self.slab.take(c) }.into_entry() {
                f(e);
            }
        }
        for n in garbage.into_nodes() {
            // SAFETY: `&mut self`: no reader can hold the owned tree's nodes; each once.
            unsafe { n.free() };
        }
    }
}

impl<K, V> Drop for Buckets<K, V> {
    fn drop(&mut self) {
        (self.drop_all)(self);
    }
}

/// An iterator over the prefixes of a range with their buckets, reading each bucket under
/// the guard its caller passes (so it can outlive any one pin).
pub(crate) struct Cursor<'a, K, V> {
    prefixes: Prefixes<'a>,
    buckets: &'a Buckets<K, V>,
}

impl<'a, K: Ord + 'static, V: 'static> Cursor<'a, K, V> {
    /// The next prefix from the front (`back`: from the back) with its bucket.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub(crate) fn next<'g>(&mut self, back: bool, g: &'g Guard) -> Option<(u64, Bucket<'g, K, V>)>
    where
        'a: 'g,
    {
        let (p, c) = if back {
            self.prefixes.next_back()?
        } else {
            self.prefixes.next()?
        };
        // The core's iterator yields an element only after validating it in this call
        // (the leaf's version unchanged, and a frozen leaf's array still current), so `c`
        // was `p`'s current bucket at a moment of this call, while `g` is pinned.
        Some((p.get(), self.buckets.bucket_of(c.get(), g)))
    }

    /// Feeds every entry of the buckets left between the two ends to `f`, in order: the
    /// core's internal iteration of its values alone (a tight loop over each leaf's run of
    /// cell numbers; the prefixes are not read), each bucket's kind told by its cell's
    /// number. `prefix(key)` must be the prefix of a key: the core resumes after the prefix
    /// of the last bucket fed when it has to seek again.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub(crate) fn fold<'g, B>(
        self,
        g: &'g Guard,
        init: B,
        mut f: impl FnMut(B, &'g (K, V)) -> B,
        prefix: impl Fn(&K) -> u64,
    ) -> B
    where
        'a: 'g,
        K: 'static,
        V: 'static,
    {
        let b = self.buckets;
        self.prefixes.fold_values(
            init,
            |acc, c| match b.bucket_of(c.get(), g) {
                Bucket::One(e) => f(acc, e),
                Bucket::Tree(t) => t.fold(acc, &mut f),
            },
            |c| {
                Inl::new(match b.bucket_of(c.get(), g) {
                    Bucket::One(e) => prefix(&e.0),
                    Bucket::Tree(t) => prefix(&t.any().0),
                })
            },
        )
    }

    /// Feeds every bucket left between the two ends to `f` with its prefix.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub(crate) fn fold_buckets<'g, B>(
        self,
        g: &'g Guard,
        init: B,
        mut f: impl FnMut(B, u64, Bucket<'g, K, V>) -> B,
    ) -> B
    where
        'a: 'g,
    {
        let b = self.buckets;
        self.prefixes
            .fold(init, |acc, (p, c)| f(acc, p.get(), b.bucket_of(c.get(), g)))
    }
}

impl<'g, K: Ord + 'static, V: 'static> TreeRef<'g, K, V> {
    /// The entry equal to `q` (word `w`).
    #[inline]
    pub(crate) fn get<Q: ?Sized + Ord>(&self, w: u64, q: &Q) -> Option<&'g (K, V)>
    where
        K: Borrow<Q>,
    {
        if inline::<K, V>() {
            let probe = Probe { word: 0, key: q };
            // SAFETY: the root was reached while `g` was pinned (how a `TreeRef` is made).
            unsafe {
                Trees::<K, V, Inline<K, V>>::new(self.slab, self.caps).get(self.root, probe, self.g)
            }
        } else {
            let probe = Probe { word: w, key: q };
            // SAFETY: as above.
            unsafe {
                Trees::<K, V, Cells<K, V>>::new(self.slab, self.caps).get(self.root, probe, self.g)
            }
        }
    }

    /// Feeds the tree's entries, in order, to `f`.
    #[inline]
    pub(crate) fn fold<B>(&self, init: B, f: &mut impl FnMut(B, &'g (K, V)) -> B) -> B {
        if inline::<K, V>() {
            // SAFETY: as in `get`.
            unsafe {
                Trees::<K, V, Inline<K, V>>::new(self.slab, self.caps)
                    .fold(self.root, self.g, init, f)
            }
        } else {
            // SAFETY: as in `get`.
            unsafe {
                Trees::<K, V, Cells<K, V>>::new(self.slab, self.caps)
                    .fold(self.root, self.g, init, f)
            }
        }
    }

    /// Some entry of the tree (its first).
    pub(crate) fn any(&self) -> &'g (K, V) {
        let mut c = self.cursor::<K>(false, Bound::Unbounded);
        c.next(false).expect("CobTree: a tree holds entries")
    }

    /// A cursor at the tree's front (`back`: its back), or at `from` (with its word): the
    /// first entry at or after it (`back`: at or before it).
    pub(crate) fn cursor<Q: ?Sized + Ord>(
        &self,
        back: bool,
        from: Bound<(u64, &Q)>,
    ) -> Entries<'g, K, V>
    where
        K: Borrow<Q>,
    {
        if inline::<K, V>() {
            let from = from.map(|(_, q)| Probe { word: 0, key: q });
            let t = Trees::<K, V, Inline<K, V>>::new(self.slab, self.caps);
            // SAFETY: as in `get`.
            Entries::Inline(unsafe { t.cursor(self.root, back, from, self.g) })
        } else {
            let from = from.map(|(w, q)| Probe { word: w, key: q });
            let t = Trees::<K, V, Cells<K, V>>::new(self.slab, self.caps);
            // SAFETY: as in `get`.
            Entries::Cells(
                unsafe { t.cursor(self.root, back, from, self.g) },
                self.slab,
                self.g,
            )
        }
    }

    /// Bytes of the tree's nodes.
    fn node_bytes(&self) -> usize {
        if inline::<K, V>() {
            // SAFETY: as in `get`.
            unsafe {
                Trees::<K, V, Inline<K, V>>::new(self.slab, self.caps).node_bytes(self.root, self.g)
            }
        } else {
            // SAFETY: as in `get`.
            unsafe {
                Trees::<K, V, Cells<K, V>>::new(self.slab, self.caps).node_bytes(self.root, self.g)
            }
        }
    }
}

/// A position in a tree reached while `'g`'s guard was pinned: its entries from there.
pub(crate) enum Entries<'g, K, V> {
    Inline(TreeCursor<'g, (K, V), K>),
    Cells(
        TreeCursor<'g, [u64; 2], [u64; 2]>,
        &'g Slab<K, V>,
        &'g Guard,
    ),
}

impl<'g, K: Ord + 'static, V: 'static> Entries<'g, K, V> {
    /// The next entry from the front (`back`: from the back).
    #[inline]
    pub(crate) fn next(&mut self, back: bool) -> Option<&'g (K, V)> {
        match self {
            Entries::Inline(c) => c.step(
                back,
                |last, s| if back { s.0 >= last.0 } else { s.0 <= last.0 },
            ),
            Entries::Cells(c, slab, g) => {
                let (slab, g) = (*slab, *g);
                let key = |s: &'g [u64; 2]| {
                    // SAFETY: the slot is in a node the cursor reached while `g` was pinned:
                    // its cell held the entry then, and is freed only after every reader
                    // pinned when it was retired unpins (this one is pinned).
                    &unsafe { slab.entry(s[1], g) }.0
                };
                let s = c.step(back, |last, s| {
                    if back {
                        key(s) >= key(last)
                    } else {
                        key(s) <= key(last)
                    }
                })?;
                // SAFETY: as above.
                Some(unsafe { slab.entry(s[1], g) })
            }
        }
    }
}
