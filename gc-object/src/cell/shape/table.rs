//! The shape table of one heap: adds, not-plain twins, literal shapes and the sweep.

// Shapes are heap metadata outside the modeled object protocol: a plain std lock (no loom
// operation happens while it is held, so loom cannot switch threads inside it).
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

use super::index::Index;
use super::run::Run;
use super::{Shape, hash_seed, mix};
use crate::key::Key;
use crate::sync::unmodeled::Ordering;

/// Whether a private shape grows in place. Not under loom: the slot store that must come
/// before the new count is a modeled operation, which may not run under the std lock.
const GROW_IN_PLACE: bool = !cfg!(loom);

/// Keys of a new run (a private shape grows into it by doubling).
const FIRST_RUN_KEYS: usize = 8;

struct Inner {
    index: Index,
    /// Runs that private shapes left when they moved to a bigger one: readers may still
    /// read them until the next collection.
    retired: Vec<Run>,
}

/// Every shape of one heap, the root and the dictionary-mode shape; freed with the heap.
pub(crate) struct ShapeTable {
    inner: RwLock<Inner>,
    root: *mut Shape,
    dict: *mut Shape,
}

impl core::fmt::Debug for ShapeTable {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ShapeTable")
            .field("shapes", &self.len())
            .finish()
    }
}

// SAFETY: shapes are changed only behind atomics and the table's lock; the raw pointers are
// owned boxes freed only in `sweep` or `Drop` (both exclusive).
unsafe impl Send for ShapeTable {}
// SAFETY: as for `Send`.
unsafe impl Sync for ShapeTable {}

fn read(l: &RwLock<Inner>) -> RwLockReadGuard<'_, Inner> {
    match l.read() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    }
}

fn write(l: &RwLock<Inner>) -> RwLockWriteGuard<'_, Inner> {
    match l.write() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    }
}

/// The index's hash of a shape with key-sequence hash `seq` (see `Shape::table_hash`).
fn table_hash(seq: u64, plain: bool) -> u64 {
    if plain { seq } else { !seq }
}

/// A shape taken from the index.
///
/// # Safety
/// `p` is a shape held by the index of a table whose lock is held (or its caller's
/// borrow of the table), alive at least as long as `'s`.
unsafe fn shape<'s>(p: *mut Shape) -> &'s Shape {
    // SAFETY: contract.
    unsafe { &*p }
}

fn boxed(s: Shape) -> *mut Shape {
    Box::into_raw(Box::new(s))
}

impl ShapeTable {
    pub(crate) fn new() -> ShapeTable {
        let empty = |plain| {
            let run = Run::new(&[], None, 0);
            run.add_user();
            let s = Shape::new(run, 0, hash_seed(plain), plain);
            s.shared.store(true, Ordering::Relaxed);
            s.pinned.store(true, Ordering::Relaxed);
            s
        };
        let root = boxed(empty(true));
        let dict = boxed(Shape {
            is_dict: true,
            ..empty(false)
        });
        ShapeTable {
            inner: RwLock::new(Inner {
                index: Index::with_room(0),
                retired: Vec::new(),
            }),
            root,
            dict,
        }
    }

    /// The empty shape.
    pub(crate) fn root(&self) -> &Shape {
        // SAFETY: `root` is an owned box freed only when `self` drops.
        unsafe { &*self.root }
    }

    /// The shape of every dictionary-mode object: no keys (its keys are in its dictionary).
    pub(crate) fn dict(&self) -> &Shape {
        // SAFETY: `dict` is an owned box freed only when `self` drops.
        unsafe { &*self.dict }
    }

    /// Shapes alive (root and dictionary shape included).
    pub(crate) fn len(&self) -> usize {
        read(&self.inner).index.len() + 2
    }

    /// The shape `want` accepts among those of `hash`, taken by one more object: from here
    /// on it is shared (marked under the lock, so its owner cannot grow it any more).
    fn take<'s>(
        &'s self,
        inner: &Inner,
        hash: u64,
        want: &dyn Fn(*mut Shape) -> bool,
    ) -> Option<&'s Shape> {
        let t = inner.index.find(hash, want)?;
        // SAFETY: indexed; shapes are freed only by a sweep (exclusive), and `'s` borrows
        // the table.
        let t = unsafe { shape(t) };
        t.shared.store(true, Ordering::Release);
        Some(t)
    }

    /// The shape of an object of shape `from` after it adds `key` (which `from` lacks;
    /// [`Shape::can_add`] holds). The caller holds the object's lock and has room
    /// for the new slot; `store` writes the slot, and is called before the new shape can be
    /// seen by the object's readers: if the result is `from` itself (a private shape that
    /// grew in place) the add is complete, else the caller publishes the result.
    ///
    /// Objects that add the same keys in the same order get the same shape. Expected O(1):
    /// one hash probe (and, when the shape found was made from another path, one compare
    /// of the keys, remembered for next time).
    pub(crate) fn add<'s>(&'s self, from: &'s Shape, key: Key, store: impl FnOnce()) -> &'s Shape {
        debug_assert!(from.lookup(key).is_none());
        debug_assert!(!from.is_dict);
        // Only this object changes `from` while it is private, and only under its lock
        // (held), so its count and sequence are stable here.
        let n = from.count.load(Ordering::Relaxed);
        let seq = mix(from.seq.load(Ordering::Relaxed), key.id());
        let hash = table_hash(seq, from.plain);
        let want = |p: *mut Shape| {
            // SAFETY: an indexed shape, the lock held.
            let t = unsafe { shape(p) };
            t.count.load(Ordering::Relaxed) == n + 1
                && t.plain == from.plain
                && t.keys()[n as usize] == key.id()
                && t.same_prefix(from, n)
        };
        // Most adds to a shared shape find their shape: a read lock does. (The read lock
        // goes with this statement: `store` runs without it.) A private shape most often
        // grows, which takes the write lock anyway.
        if from.shared.load(Ordering::Relaxed) {
            let found = self.take(&read(&self.inner), hash, &want);
            if let Some(t) = found {
                store();
                return t;
            }
        }
        let mut w = write(&self.inner);
        if let Some(t) = self.take(&w, hash, &want) {
            drop(w);
            store();
            return t;
        }
        if GROW_IN_PLACE && !from.shared.load(Ordering::Relaxed) {
            // Private: no other object ever took it, and none can now (the write lock).
            let run = from.run();
            if run.len() == n && n < run.cap() {
                // SAFETY: write lock held; `n < cap`.
                unsafe { run.push(key.id()) };
            } else {
                let cap = (2 * (n as usize + 1)).max(FIRST_RUN_KEYS);
                // SAFETY: `from`'s first `n` keys are written (it is at `n` keys).
                let bigger = Run::new(unsafe { run.prefix(n) }, Some(key.id()), cap);
                bigger.add_user();
                if run.drop_user() {
                    w.retired.push(run);
                }
                from.keys.store(bigger.keys(), Ordering::Release);
            }
            // The index's own pointer goes back in (`from` is a shared borrow).
            let own = w.index.remove(from.table_hash(), from);
            from.seq.store(seq, Ordering::Relaxed);
            if key.is_symbol() {
                from.symbols.store(true, Ordering::Relaxed);
            }
            store();
            from.count.store(n + 1, Ordering::Release);
            w.index.insert(hash, own);
            return from;
        }
        // A new shape, private to this object. It extends `from`'s run in place when
        // `from` ends it, else starts a run with a copy of `from`'s keys.
        let run = from.run();
        let run = if run.len() == n && n < run.cap() {
            // SAFETY: write lock held; `n < cap`.
            unsafe { run.push(key.id()) };
            run
        } else {
            let cap = (2 * (n as usize + 1)).max(FIRST_RUN_KEYS);
            // SAFETY: `from`'s first `n` keys are written.
            Run::new(unsafe { run.prefix(n) }, Some(key.id()), cap)
        };
        run.add_user();
        let t = Shape::new(run, n + 1, seq, from.plain);
        t.base.store(super::pack(from.id, n), Ordering::Relaxed);
        t.symbols.store(
            from.symbols.load(Ordering::Relaxed) || key.is_symbol(),
            Ordering::Relaxed,
        );
        let t = boxed(t);
        w.index.insert(hash, t);
        drop(w);
        store();
        // SAFETY: just indexed; freed only by a sweep (exclusive) or when the table drops.
        unsafe { shape(t) }
    }

    /// The shape an object of shape `from` takes when it gets side flags (restriction,
    /// attribute or accessor entries): `from` itself if it is not plain, else its twin,
    /// which has the same keys in the same slots and a new id, and from which only shapes
    /// that are not plain are reached. Expected O(1), like [`ShapeTable::add`].
    pub(crate) fn not_plain<'s>(&'s self, from: &'s Shape) -> &'s Shape {
        if !from.plain {
            return from;
        }
        let n = from.count.load(Ordering::Relaxed);
        let hash = table_hash(from.seq.load(Ordering::Relaxed), false);
        let want = |p: *mut Shape| {
            // SAFETY: an indexed shape, the lock held.
            let t = unsafe { shape(p) };
            !t.plain && t.count.load(Ordering::Relaxed) == n && t.same_prefix(from, n)
        };
        let found = self.take(&read(&self.inner), hash, &want);
        if let Some(t) = found {
            return t;
        }
        let mut w = write(&self.inner);
        if let Some(t) = self.take(&w, hash, &want) {
            return t;
        }
        // The twin reads `from`'s run: its first `n` keys never change.
        let run = from.run();
        run.add_user();
        let t = Shape::new(run, n, from.seq.load(Ordering::Relaxed), false);
        t.base.store(super::pack(from.id, n), Ordering::Relaxed);
        t.symbols
            .store(from.symbols.load(Ordering::Relaxed), Ordering::Relaxed);
        let t = boxed(t);
        w.index.insert(hash, t);
        // SAFETY: just indexed.
        unsafe { shape(t) }
    }

    /// The plain shape of `keys` in this order (a literal's: it may have more than
    /// [`MAX_SHAPE_KEYS`](super::MAX_SHAPE_KEYS) keys), and on the way the shape of each of
    /// its prefixes, so that objects built by adding the same keys in the same order find
    /// them all. Pinned: they live as long as the table, and never change.
    pub(crate) fn for_keys(&self, keys: &[Key]) -> &Shape {
        let mut s = self.root();
        for &k in keys {
            // No object has `s` (a new shape is private to nobody here), so marking it
            // shared after the add is in time: only an object that has a shape grows it.
            s = self.add(s, k, || {});
            s.shared.store(true, Ordering::Release);
            s.pinned.store(true, Ordering::Relaxed);
        }
        s
    }

    /// Frees every shape that is neither marked (by [`Shape::mark_with`] during this
    /// collection) nor pinned, and the runs private shapes left, and clears the marks.
    /// Returns how many shapes were freed. O(1) per shape.
    ///
    /// # Safety
    /// Exclusive access to the heap: no object, literal use or add is in progress, and
    /// every live object's shape was marked.
    pub(crate) unsafe fn sweep(&self) -> usize {
        let mut w = write(&self.inner);
        let w = &mut *w;
        for run in w.retired.drain(..) {
            // SAFETY: no shape uses a retired run, and no reader is left (exclusive).
            unsafe { run.free() };
        }
        for s in [self.root, self.dict] {
            // SAFETY: owned boxes, alive with the table.
            unsafe { &*s }.marked.store(false, Ordering::Relaxed);
        }
        let keep = |p: *mut Shape| {
            // SAFETY: indexed shapes are alive.
            let s = unsafe { shape(p) };
            s.pinned.load(Ordering::Relaxed) || s.marked.load(Ordering::Relaxed)
        };
        let kept = w.index.iter().filter(|&p| keep(p)).count();
        if kept == w.index.len() {
            for p in w.index.iter() {
                // SAFETY: as above.
                unsafe { shape(p) }.marked.store(false, Ordering::Relaxed);
            }
            return 0;
        }
        let mut index = Index::with_room(kept);
        let mut freed = 0;
        for (hash, p) in w.index.drain() {
            if keep(p) {
                // SAFETY: as above.
                unsafe { shape(p) }.marked.store(false, Ordering::Relaxed);
                index.insert(hash, p);
            } else {
                // SAFETY: unmarked, unpinned: no object or literal uses it (contract), and
                // it has left the index.
                unsafe { free_shape(p) };
                freed += 1;
            }
        }
        w.index = index;
        freed
    }
}

/// Frees a shape, its hot table, and its run if it was the run's last user.
///
/// # Safety
/// `s` is a shape of a table, no longer used or referenced, freed once; exclusive access.
unsafe fn free_shape(s: *mut Shape) {
    // SAFETY: contract.
    let b = unsafe { Box::from_raw(s) };
    let run = b.run();
    if run.drop_user() {
        // SAFETY: the last user is gone, no reader is left (exclusive).
        unsafe { run.free() };
    }
    let hot = b.hot.load(Ordering::Relaxed);
    if !hot.is_null() {
        // SAFETY: published by `build_hot` from `Box::into_raw`, freed once, here.
        drop(unsafe { Box::from_raw(hot) });
    }
}

impl Drop for ShapeTable {
    fn drop(&mut self) {
        let w = self.inner.get_mut().unwrap_or_else(|p| p.into_inner());
        for run in w.retired.drain(..) {
            // SAFETY: no shape uses a retired run; exclusive (`&mut self`).
            unsafe { run.free() };
        }
        for (_, p) in w.index.drain() {
            // SAFETY: every indexed shape came from `Box::into_raw` and is freed once, here;
            // no reference outlives the table (they borrow it).
            unsafe { free_shape(p) };
        }
        // SAFETY: as above, for the two shapes outside the index.
        unsafe { free_shape(self.root) };
        // SAFETY: as above.
        unsafe { free_shape(self.dict) };
    }
}
