//! Hidden classes: a tree of immutable shapes owned by their heap.
//!
//! ```text
//!            root {}                      a shape = parent + its own key + its key count;
//!              | +x                       the keys of a path sit in one shared run:
//!            {x}        run A: [x y z w]
//!              | +y                        {x}      uses A[0..1]
//!            {x,y}                         {x,y}    uses A[0..2]
//!          +z /   \ +q                     {x,y,z}  uses A[0..3]   (z was appended to A)
//!      {x,y,z}    {x,y,q}   run B: [x y q] {x,y,q}  uses B[0..3]   (a branch copies its prefix)
//!         | +w
//!      {x,y,z,w}                           {x,y,z,w} uses A[0..4]
//! ```
//!
//! Objects built by adding the same keys in the same order share their shape. In shape mode
//! slot `i` holds the `i`-th key (a shape lists keys in insertion order, and deletes leave
//! shape mode, so there are no gaps). A lookup scans the shape's prefix of its run (at
//! most [`LINEAR_LOOKUP_MAX`] keys) or, for a shape with more keys that has been hit
//! [`HOT_LOOKUPS`] times, a hash table built for it then. A shape never has more than
//! [`MAX_SHAPE_KEYS`] keys by adds (an object that would need more enters dictionary mode),
//! so a path costs O(its keys) words, and a branch copies at most that many.
//!
//! Shapes no live object uses are freed by the collector ([`ShapeTable::sweep`]): it marks
//! the shapes of marked objects and their ancestors, and literal shapes stay forever.
//! Property caches remember shapes by a process-unique id, never by address, so freeing a
//! shape can never make a cache lie.

use std::sync::OnceLock;

use crate::key::Key;
use crate::sync::unmodeled;
// Shapes are heap metadata outside the modeled object protocol: a plain std mutex (no loom
// operation happens while it is held, so loom cannot switch threads inside it).
use std::sync::Mutex;

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    }
}

/// Shapes with at most this many keys are scanned; bigger ones get a hash table once hot.
pub const LINEAR_LOOKUP_MAX: usize = 16;
/// Hits on a shape bigger than [`LINEAR_LOOKUP_MAX`] after which it gets a hash table.
pub const HOT_LOOKUPS: u32 = 8;
/// The most keys a shape reached by adds has: the next add (and any delete) moves the
/// object to dictionary mode, its own hash table.
pub const MAX_SHAPE_KEYS: usize = if cfg!(loom) { 4 } else { 64 };

/// Shape ids are unique in the process and never reused, so a cache that remembers an id
/// can never mistake a newer shape at a reused address for the one it saw.
static NEXT_SHAPE_ID: unmodeled::AtomicU64 = unmodeled::AtomicU64::new(1);

/// The keys of one path of the tree, appended in place while the path grows.
#[derive(Debug)]
struct KeyRun {
    /// `keys[..len]` are written; a shape reads `keys[..count]` (`count <= len`), written
    /// before the shape was made.
    keys: Box<[unmodeled::AtomicU32]>,
    /// Keys written (only under the table's lock).
    len: unmodeled::AtomicU32,
    /// Shapes using this run (only under the table's lock or during a sweep).
    users: unmodeled::AtomicU32,
}

impl KeyRun {
    fn with_prefix(prefix: &[u32], key: u32, cap: usize) -> *mut KeyRun {
        let cap = cap.max(prefix.len() + 1);
        let keys: Box<[unmodeled::AtomicU32]> = (0..cap)
            .map(|i| {
                let k = if i < prefix.len() {
                    prefix[i]
                } else if i == prefix.len() {
                    key
                } else {
                    u32::MAX
                };
                unmodeled::AtomicU32::new(k)
            })
            .collect();
        Box::into_raw(Box::new(KeyRun {
            keys,
            len: unmodeled::AtomicU32::new(prefix.len() as u32 + 1),
            users: unmodeled::AtomicU32::new(0),
        }))
    }
}

/// One hidden class.
#[derive(Debug)]
pub(crate) struct Shape {
    /// Unique, never reused, never 0 (0 means "no shape" in a [`crate::PropertyCache`]).
    id: u64,
    parent: *const Shape,
    /// The key this shape added to its parent (unused for the root).
    key: Key,
    /// Keys (and slots) of objects of this shape.
    count: u32,
    /// `run.keys[..count]` are this shape's keys in order (null for the root).
    run: *const KeyRun,
    /// Children (each knows the key it added).
    transitions: Mutex<Vec<*const Shape>>,
    /// Hits counted towards [`HOT_LOOKUPS`] (racy counting is fine: it only decides when).
    hits: unmodeled::AtomicU32,
    /// Open-addressed (key id + 1) << 32 | slot, built once hot.
    table: OnceLock<Box<[u64]>>,
    /// Marked by the collector (exclusive access); literal shapes are pinned for good.
    marked: unmodeled::AtomicBool,
    pinned: unmodeled::AtomicBool,
    /// The shape of dictionary-mode objects (their keys are in their dictionary).
    is_dict: bool,
    /// Objects of this shape are in shape mode, not restricted to a thread and without
    /// attribute or accessor entries, so a [`crate::PropertyCache`] that matches this
    /// shape's id may read the slot without looking at anything else. The dictionary shape,
    /// the restricted shapes and every shape below them are not plain.
    plain: bool,
    /// This shape is the not-plain twin of its parent: the same keys and slots (it adds no
    /// key), reached when an object gets side flags (see [`ShapeTable::not_plain`]).
    twin: bool,
}

// SAFETY: a shape is immutable after construction except behind atomics and its mutex; the
// raw pointers name shapes and runs of the same table, freed only with exclusive access.
unsafe impl Send for Shape {}
// SAFETY: as for `Send`.
unsafe impl Sync for Shape {}

fn hash(key: u32) -> u64 {
    u64::from(key).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32
}

impl Shape {
    fn new(parent: *const Shape, key: Key, count: u32, run: *const KeyRun) -> Shape {
        // SAFETY: a parent is a live shape of the same table (or null for the roots).
        let plain = parent.is_null() || unsafe { &*parent }.plain;
        Shape {
            id: NEXT_SHAPE_ID.fetch_add(1, unmodeled::Ordering::Relaxed),
            parent,
            key,
            count,
            run,
            transitions: Mutex::new(Vec::new()),
            hits: unmodeled::AtomicU32::new(0),
            table: OnceLock::new(),
            marked: unmodeled::AtomicBool::new(false),
            pinned: unmodeled::AtomicBool::new(false),
            is_dict: false,
            plain,
            twin: false,
        }
    }

    /// May a property cache that matched this shape's id read the slot it remembers? (A
    /// plain shape: shape mode, no restriction, no attribute or accessor entries.)
    #[inline]
    pub(crate) fn is_plain(&self) -> bool {
        self.plain
    }

    /// Is this the dictionary-mode shape? (Seeing it means the object's dictionary is
    /// published: it is stored after the dictionary.)
    #[inline]
    pub(crate) fn is_dict(&self) -> bool {
        self.is_dict
    }

    #[inline]
    fn keys(&self) -> &[unmodeled::AtomicU32] {
        if self.run.is_null() {
            return &[];
        }
        // SAFETY: a shape's run lives at least as long as the shape (it counts as a user);
        // `count <= run.keys.len()`.
        unsafe { &(&(*self.run).keys)[..self.count as usize] }
    }

    /// The slot of `key`, if this shape has it.
    #[inline]
    pub(crate) fn lookup(&self, key: Key) -> Option<u32> {
        if self.count as usize <= LINEAR_LOOKUP_MAX {
            return self.scan(key);
        }
        self.lookup_big(key)
    }

    #[inline]
    fn scan(&self, key: Key) -> Option<u32> {
        let id = key.id();
        self.keys()
            .iter()
            .position(|k| k.load(unmodeled::Ordering::Relaxed) == id)
            .map(|i| i as u32)
    }

    #[inline(never)]
    fn lookup_big(&self, key: Key) -> Option<u32> {
        if let Some(t) = self.table.get() {
            let mask = t.len() - 1;
            let want = u64::from(key.id()) + 1;
            let mut i = hash(key.id()) as usize & mask;
            loop {
                let e = t[i];
                if e == 0 {
                    return None;
                }
                if e >> 32 == want {
                    return Some(e as u32);
                }
                i = (i + 1) & mask;
            }
        }
        let found = self.scan(key);
        if found.is_some() {
            let h = self.hits.load(unmodeled::Ordering::Relaxed) + 1;
            self.hits.store(h, unmodeled::Ordering::Relaxed);
            if h >= HOT_LOOKUPS {
                self.table.get_or_init(|| self.build_table());
            }
        }
        found
    }

    fn build_table(&self) -> Box<[u64]> {
        let len = (self.count as usize * 2).next_power_of_two();
        let mut t = vec![0u64; len].into_boxed_slice();
        let mask = len - 1;
        for (slot, k) in self.keys().iter().enumerate() {
            let id = k.load(unmodeled::Ordering::Relaxed);
            let mut i = hash(id) as usize & mask;
            while t[i] != 0 {
                i = (i + 1) & mask;
            }
            t[i] = ((u64::from(id) + 1) << 32) | slot as u64;
        }
        t
    }

    /// The process-unique id of this shape.
    #[inline]
    pub(crate) fn id(&self) -> u64 {
        self.id
    }

    /// Keys in insertion order (key `i` is in slot `i`).
    pub(crate) fn keys_in_order(&self) -> impl Iterator<Item = Key> + '_ {
        self.keys()
            .iter()
            .map(|k| Key::from_raw(k.load(unmodeled::Ordering::Relaxed)))
    }

    /// Number of keys, and of slots an object of this shape uses.
    #[inline]
    pub(crate) fn slot_count(&self) -> u32 {
        self.count
    }

    /// Marks this shape and its ancestors (collector only: exclusive access to the heap).
    pub(crate) fn mark(&self) {
        self.mark_with(&mut |_| {});
    }

    /// [`Shape::mark`], calling `symbol` with the own key of every newly marked shape that
    /// is a symbol's (so the collector keeps the symbols of live shapes).
    #[inline]
    pub(crate) fn mark_with(&self, symbol: &mut dyn FnMut(Key)) {
        // Most objects' shapes are marked already (objects built alike share one).
        if !self.marked.load(unmodeled::Ordering::Relaxed) {
            self.mark_path(symbol);
        }
    }

    #[inline(never)]
    fn mark_path(&self, symbol: &mut dyn FnMut(Key)) {
        let mut s: *const Shape = self;
        while !s.is_null() {
            // SAFETY: ancestors of a live shape are alive (a sweep frees only unmarked
            // shapes, and a marked shape marks its ancestors).
            let r = unsafe { &*s };
            if r.marked.swap(true, unmodeled::Ordering::Relaxed) {
                return;
            }
            if let Some(k) = r.keys().last()
                && let k = Key::from_raw(k.load(unmodeled::Ordering::Relaxed))
                && k.is_symbol()
            {
                symbol(k);
            }
            s = r.parent;
        }
    }

    /// Keeps this shape (and its ancestors) for as long as the table lives (literals).
    pub(crate) fn pin(&self) {
        self.pinned.store(true, unmodeled::Ordering::Relaxed);
    }

    #[cfg(all(test, not(loom)))]
    fn has_table(&self) -> bool {
        self.table.get().is_some()
    }
}

/// Every shape of one heap, the root and the dictionary-mode shape; freed with the heap.
#[derive(Debug)]
pub(crate) struct ShapeTable {
    all: Mutex<Vec<*mut Shape>>,
    root: *const Shape,
    dict: *const Shape,
}

// SAFETY: shapes are immutable after construction except behind atomics and mutexes; the raw
// pointers are owned boxes freed only in `sweep` or `Drop` (both exclusive).
unsafe impl Send for ShapeTable {}
// SAFETY: as for `Send`.
unsafe impl Sync for ShapeTable {}

impl ShapeTable {
    pub(crate) fn new() -> ShapeTable {
        let root = Box::into_raw(Box::new(Shape::new(
            core::ptr::null(),
            Key::from_raw(0),
            0,
            core::ptr::null(),
        )));
        let dict = Box::into_raw(Box::new(Shape {
            is_dict: true,
            plain: false,
            ..Shape::new(core::ptr::null(), Key::from_raw(0), 0, core::ptr::null())
        }));
        ShapeTable {
            all: Mutex::new(vec![root, dict]),
            root,
            dict,
        }
    }

    /// The empty shape.
    pub(crate) fn root(&self) -> &Shape {
        // SAFETY: `root` is an owned box freed only when `self` drops.
        unsafe { &*self.root }
    }

    /// The shape of every dictionary-mode object: no keys (its keys are in its dictionary)
    /// and no transitions.
    pub(crate) fn dict(&self) -> &Shape {
        // SAFETY: `dict` is an owned box freed only when `self` drops.
        unsafe { &*self.dict }
    }

    /// Shapes alive (root and dictionary shape included).
    pub(crate) fn len(&self) -> usize {
        lock(&self.all).len()
    }

    /// The shape after adding `key`, shared by every object that adds the same keys in the
    /// same order; `None` when `from` has [`MAX_SHAPE_KEYS`] keys (dictionary mode next).
    pub(crate) fn with_added<'s>(&'s self, from: &'s Shape, key: Key) -> Option<&'s Shape> {
        if from.count as usize >= MAX_SHAPE_KEYS {
            return None;
        }
        Some(self.child(from, key))
    }

    /// The shape an object of shape `from` takes when it gets side flags (restriction,
    /// attribute or accessor entries): `from` itself if it is not plain, else its twin, which
    /// has the same keys in the same slots (it shares `from`'s key run) and a new id, and
    /// whose descendants are not plain either. Made once per shape, on demand.
    pub(crate) fn not_plain<'s>(&'s self, from: &'s Shape) -> &'s Shape {
        if !from.plain {
            return from;
        }
        let mut trans = lock(&from.transitions);
        // SAFETY: as in `child`.
        if let Some(&to) = trans.iter().find(|&&c| unsafe { &*c }.twin) {
            // SAFETY: as above.
            return unsafe { &*to };
        }
        let mut all = lock(&self.all);
        if !from.run.is_null() {
            // SAFETY: `from`'s run is alive (counted user); users are counted under `all`'s
            // lock, held.
            let users = &unsafe { &*from.run }.users;
            users.store(
                users.load(unmodeled::Ordering::Relaxed) + 1,
                unmodeled::Ordering::Relaxed,
            );
        }
        let to = Box::into_raw(Box::new(Shape {
            plain: false,
            twin: true,
            ..Shape::new(from, from.key, from.count, from.run)
        }));
        all.push(to);
        trans.push(to.cast_const());
        drop(all);
        // SAFETY: just boxed; freed only by a sweep (exclusive) or when `self` drops.
        unsafe { &*to }
    }

    fn child<'s>(&'s self, from: &'s Shape, key: Key) -> &'s Shape {
        debug_assert!(from.lookup(key).is_none());
        debug_assert!(!core::ptr::eq(from, self.dict));
        let mut trans = lock(&from.transitions);
        if let Some(&to) = trans.iter().find(|&&c| {
            // SAFETY: transition targets are live shapes of this table (a sweep removes a
            // freed shape from its parent's list).
            let c = unsafe { &*c };
            !c.twin && c.key == key
        }) {
            // SAFETY: as above.
            return unsafe { &*to };
        }
        let mut all = lock(&self.all);
        let n = from.count as usize;
        // Extend `from`'s run in place if `from` is its tip, else start a run (a branch, or
        // a full run) with a copy of the prefix.
        let run = match from.run {
            // SAFETY: `from`'s run is alive (counted user); its `len` changes only under
            // `all`'s lock, held.
            r if !r.is_null()
                && unsafe { &*r }.len.load(unmodeled::Ordering::Relaxed) as usize == n
                && n < unsafe { &*r }.keys.len() =>
            {
                // SAFETY: as above; index `n` is written by nobody else (lock held) and read
                // by no shape yet (every shape of this run has `count <= n`).
                let run = unsafe { &*r };
                run.keys[n].store(key.id(), unmodeled::Ordering::Relaxed);
                run.len.store(n as u32 + 1, unmodeled::Ordering::Relaxed);
                r
            }
            _ => {
                let prefix: Vec<u32> = from
                    .keys()
                    .iter()
                    .map(|k| k.load(unmodeled::Ordering::Relaxed))
                    .collect();
                let cap = (2 * (n + 1)).clamp(4, MAX_SHAPE_KEYS.max(n + 1));
                KeyRun::with_prefix(&prefix, key.id(), cap).cast_const()
            }
        };
        // SAFETY: `run` is alive; users are counted under `all`'s lock.
        let users = &unsafe { &*run }.users;
        users.store(
            users.load(unmodeled::Ordering::Relaxed) + 1,
            unmodeled::Ordering::Relaxed,
        );
        let to = Box::into_raw(Box::new(Shape::new(from, key, n as u32 + 1, run)));
        all.push(to);
        trans.push(to.cast_const());
        // SAFETY: just boxed; freed only by a sweep (exclusive) or when `self` drops.
        unsafe { &*to }
    }

    /// The shape reached by adding `keys` in order to the empty shape (a literal's: it may
    /// have more than [`MAX_SHAPE_KEYS`] keys). Pinned: it lives as long as the table.
    pub(crate) fn for_keys(&self, keys: &[Key]) -> &Shape {
        let mut s = self.root();
        for &k in keys {
            s = self.child(s, k);
        }
        s.pin();
        s
    }

    /// Frees every shape that is neither marked (by [`Shape::mark`] during this collection)
    /// nor pinned, nor the root or the dictionary shape, and clears the marks. Returns how
    /// many were freed.
    ///
    /// # Safety
    /// Exclusive access to the heap: no object, literal use or transition walk is in
    /// progress, and every live object's shape was marked.
    pub(crate) unsafe fn sweep(&self) -> usize {
        let mut all = lock(&self.all);
        // Pinned shapes keep their ancestors.
        for &s in all.iter() {
            // SAFETY: every pointer in `all` is a live shape.
            let r = unsafe { &*s };
            if r.pinned.load(unmodeled::Ordering::Relaxed) {
                r.mark();
            }
        }
        let keep = |s: *mut Shape| {
            // SAFETY: as above.
            let r = unsafe { &*s };
            core::ptr::eq(s, self.root)
                || core::ptr::eq(s, self.dict)
                || r.marked.load(unmodeled::Ordering::Relaxed)
        };
        let before = all.len();
        // A freed shape's children are freed too (a marked child marks its parent), so only
        // the list of a kept parent needs to forget a freed child.
        for &s in all.iter() {
            if keep(s) {
                continue;
            }
            // SAFETY: as above.
            let parent = unsafe { &*s }.parent.cast_mut();
            if !parent.is_null() && keep(parent) {
                // SAFETY: a kept shape is alive.
                lock(&unsafe { &*parent }.transitions).retain(|&c| !core::ptr::eq(c, s));
            }
        }
        all.retain(|&s| {
            if keep(s) {
                // SAFETY: as above.
                unsafe { &*s }
                    .marked
                    .store(false, unmodeled::Ordering::Relaxed);
                true
            } else {
                // SAFETY: unmarked, unpinned: no object, literal or kept shape refers to it
                // (contract), and it is in `all` exactly once.
                unsafe { free_shape(s) };
                false
            }
        });
        before - all.len()
    }
}

/// Frees a shape and, if it was its last user, its run.
///
/// # Safety
/// `s` is a shape of a table, no longer referenced, freed once.
unsafe fn free_shape(s: *mut Shape) {
    // SAFETY: contract.
    let b = unsafe { Box::from_raw(s) };
    if !b.run.is_null() {
        // SAFETY: the run is alive while it has users; this shape is one.
        let users = &unsafe { &*b.run }.users;
        let n = users.load(unmodeled::Ordering::Relaxed) - 1;
        users.store(n, unmodeled::Ordering::Relaxed);
        if n == 0 {
            // SAFETY: the last user is gone; runs are made by `Box::into_raw`.
            drop(unsafe { Box::from_raw(b.run.cast_mut()) });
        }
    }
}

impl Drop for ShapeTable {
    fn drop(&mut self) {
        for &p in lock(&self.all).iter() {
            // SAFETY: every pointer in `all` came from `Box::into_raw` and is freed once,
            // here; no reference outlives the table (they borrow it).
            unsafe { free_shape(p) };
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn keys(n: usize, prefix: &str) -> Vec<Key> {
        (0..n).map(|i| Key::new(&format!("{prefix}{i}"))).collect()
    }

    #[test]
    fn transitions_are_shared_and_slots_follow_insertion_order() {
        let t = ShapeTable::new();
        let (a, b, c) = (Key::new("a"), Key::new("b"), Key::new("c"));
        let s1 = t.for_keys(&[a, b]);
        let s2 = t.for_keys(&[a, b]);
        assert!(core::ptr::eq(s1, s2));
        assert_eq!(s1.lookup(b), Some(1));
        assert_eq!(s1.lookup(c), None);
        let s3 = t.with_added(s1, c).unwrap();
        assert_eq!(s3.lookup(c), Some(2));
        assert_eq!(s3.keys_in_order().collect::<Vec<_>>(), vec![a, b, c]);
        // A branch: {a, c} next to {a, b}.
        let br = t.with_added(t.for_keys(&[a]), c).unwrap();
        assert_eq!(br.lookup(c), Some(1));
        assert_eq!(br.lookup(b), None);
        assert_eq!(s3.lookup(c), Some(2));
    }

    #[test]
    fn a_path_shares_runs_and_stops_at_the_key_limit() {
        let t = ShapeTable::new();
        let ks = keys(MAX_SHAPE_KEYS + 1, "run");
        let mut s = t.root();
        let mut runs = std::collections::HashSet::new();
        for &k in &ks[..MAX_SHAPE_KEYS] {
            s = t.with_added(s, k).unwrap();
            runs.insert(s.run as usize);
        }
        assert!(t.with_added(s, ks[MAX_SHAPE_KEYS]).is_none());
        // Runs double: a path of n keys uses O(log n) runs of O(n) keys in all.
        assert!(runs.len() <= 6, "{} runs", runs.len());
        for (i, &k) in ks[..MAX_SHAPE_KEYS].iter().enumerate() {
            assert_eq!(s.lookup(k), Some(i as u32));
        }
    }

    #[test]
    fn hot_big_shapes_get_a_table_with_the_same_answers() {
        let t = ShapeTable::new();
        let ks = keys(LINEAR_LOOKUP_MAX + 5, "hot");
        let s = t.for_keys(&ks);
        let missing = Key::new("hot-missing");
        for _ in 0..HOT_LOOKUPS * 2 {
            assert_eq!(s.lookup(missing), None);
        }
        assert!(!s.has_table(), "misses do not make a shape hot");
        for _ in 0..HOT_LOOKUPS {
            assert_eq!(s.lookup(ks[3]), Some(3));
        }
        assert!(s.has_table());
        for (i, &k) in ks.iter().enumerate() {
            assert_eq!(s.lookup(k), Some(i as u32));
        }
        assert_eq!(s.lookup(missing), None);
    }

    #[test]
    fn a_not_plain_twin_has_the_same_keys_a_new_id_and_not_plain_children() {
        let t = ShapeTable::new();
        let ks = keys(4, "tw");
        let s = t.for_keys(&ks[..2]);
        assert!(s.is_plain() && t.root().is_plain());
        assert!(!t.dict().is_plain());
        let tw = t.not_plain(s);
        assert!(!tw.is_plain());
        assert_ne!(tw.id(), s.id());
        assert!(core::ptr::eq(t.not_plain(s), tw), "made once");
        assert!(core::ptr::eq(t.not_plain(tw), tw), "not plain already");
        assert_eq!(tw.keys_in_order().collect::<Vec<_>>(), ks[..2].to_vec());
        assert_eq!(tw.lookup(ks[1]), Some(1));
        // Growing either side: the twin's child is not plain; the plain path is not
        // confused with it (the same key from `s` gives a plain shape).
        let c = t.with_added(tw, ks[2]).unwrap();
        assert!(!c.is_plain());
        assert_eq!(c.lookup(ks[2]), Some(2));
        let p = t.with_added(s, ks[2]).unwrap();
        assert!(p.is_plain() && !core::ptr::eq(p, c));
        let q = t.with_added(s, ks[3]).unwrap();
        assert_eq!((q.lookup(ks[3]), q.lookup(ks[2])), (Some(2), None));
        assert_eq!(c.lookup(ks[3]), None);
        // Twins of the root, and their collection.
        let rt = t.not_plain(t.root());
        assert_eq!(rt.slot_count(), 0);
        let before = t.len();
        // SAFETY: nothing else uses the table.
        let freed = unsafe { t.sweep() };
        assert_eq!(
            freed, 5,
            "twin, its child, the two plain children, root twin"
        );
        assert_eq!(t.len(), before - 5);
        assert_eq!(s.lookup(ks[1]), Some(1));
    }

    #[test]
    fn sweep_frees_unmarked_shapes_and_keeps_pinned_and_marked_ones() {
        let t = ShapeTable::new();
        let ks = keys(6, "sw");
        let lit = t.for_keys(&ks[..2]);
        let live = t
            .with_added(t.with_added(t.root(), ks[3]).unwrap(), ks[4])
            .unwrap();
        let dead = t.with_added(lit, ks[5]).unwrap();
        let dead_id = dead.id();
        assert_eq!(t.len(), 2 + 2 + 2 + 1);
        live.mark();
        // SAFETY: nothing else uses the table.
        let freed = unsafe { t.sweep() };
        assert_eq!(freed, 1);
        assert_eq!(t.len(), 6);
        // The path is rebuilt on demand, as a new shape.
        let again = t.with_added(lit, ks[5]).unwrap();
        assert_ne!(again.id(), dead_id);
        assert_eq!(again.lookup(ks[5]), Some(2));
        // Nothing marked: the live path goes too, the literal stays.
        // SAFETY: as above.
        assert_eq!(unsafe { t.sweep() }, 3);
        assert_eq!(lit.lookup(ks[1]), Some(1));
    }
}
