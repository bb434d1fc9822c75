//! Hidden classes: immutable shapes with a transition table, owned by their heap.
//!
//! A shape lists the named properties of an object in insertion order with the slot each
//! one occupies. Slots are never reused while an object lives: deleting a property makes a
//! shape without it but keeps `slot_count`, so a racing lock-free reader can never see a
//! slot change meaning. Shapes live as long as their heap (they are few: one per distinct
//! way of building an object).

use std::collections::HashMap;

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

/// Shapes with more properties than this get a hash index; smaller ones are scanned.
const LINEAR_LOOKUP_MAX: usize = 16;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Transition {
    Add(Key),
    Delete(Key),
}

/// Shape ids are unique in the process and never reused, so a cache that remembers an id
/// can never mistake a newer shape at a reused address for the one it saw.
static NEXT_SHAPE_ID: unmodeled::AtomicU64 = unmodeled::AtomicU64::new(1);

/// One hidden class.
#[derive(Debug)]
pub(crate) struct Shape {
    /// Unique, never reused, never 0 (0 means "no shape" in a [`crate::PropertyCache`]).
    id: u64,
    entries: Box<[(Key, u32)]>,
    slot_count: u32,
    index: Option<HashMap<Key, u32>>,
    transitions: Mutex<Vec<(Transition, *const Shape)>>,
}

impl Shape {
    fn new(entries: Box<[(Key, u32)]>, slot_count: u32) -> Shape {
        let index = (entries.len() > LINEAR_LOOKUP_MAX)
            .then(|| entries.iter().map(|&(k, s)| (k, s)).collect());
        Shape {
            id: NEXT_SHAPE_ID.fetch_add(1, unmodeled::Ordering::Relaxed),
            entries,
            slot_count,
            index,
            transitions: Mutex::new(Vec::new()),
        }
    }

    /// The slot of `key`, if this shape has it.
    #[inline]
    pub(crate) fn lookup(&self, key: Key) -> Option<u32> {
        match &self.index {
            Some(map) => map.get(&key).copied(),
            None => self.entries.iter().find(|e| e.0 == key).map(|e| e.1),
        }
    }

    /// The process-unique id of this shape.
    #[inline]
    pub(crate) fn id(&self) -> u64 {
        self.id
    }

    /// Named properties in insertion order with their slots.
    pub(crate) fn entries(&self) -> &[(Key, u32)] {
        &self.entries
    }

    /// Number of slots an object of this shape uses (including slots of deleted keys).
    #[inline]
    pub(crate) fn slot_count(&self) -> u32 {
        self.slot_count
    }

    #[cfg(all(test, not(loom)))]
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }
}

/// Every shape of one heap; freed with the heap.
#[derive(Debug)]
pub(crate) struct ShapeTable {
    all: Mutex<Vec<*mut Shape>>,
    root: *const Shape,
}

// SAFETY: shapes are immutable after construction except their transition lists, which are
// behind mutexes; the raw pointers are owned boxes freed only in `Drop` (exclusive).
unsafe impl Send for ShapeTable {}
// SAFETY: as for `Send`.
unsafe impl Sync for ShapeTable {}

impl ShapeTable {
    pub(crate) fn new() -> ShapeTable {
        let root = Box::into_raw(Box::new(Shape::new(Box::new([]), 0)));
        ShapeTable {
            all: Mutex::new(vec![root]),
            root,
        }
    }

    /// The empty shape.
    pub(crate) fn root(&self) -> &Shape {
        // SAFETY: `root` is an owned box freed only when `self` drops.
        unsafe { &*self.root }
    }

    fn intern(&self, shape: Shape) -> &Shape {
        let p = Box::into_raw(Box::new(shape));
        lock(&self.all).push(p);
        // SAFETY: just boxed; freed only when `self` drops, and `&self` outlives the result.
        unsafe { &*p }
    }

    fn follow<'s>(
        &'s self,
        from: &'s Shape,
        t: Transition,
        make: impl FnOnce() -> Shape,
    ) -> &'s Shape {
        let mut trans = lock(&from.transitions);
        if let Some(&(_, to)) = trans.iter().find(|e| e.0 == t) {
            // SAFETY: transition targets are shapes of this table, alive as long as it.
            return unsafe { &*to };
        }
        let to = self.intern(make());
        trans.push((t, to as *const Shape));
        to
    }

    /// The shape after adding `key` (shared by every object that adds the same keys in the
    /// same order).
    pub(crate) fn with_added<'s>(&'s self, from: &'s Shape, key: Key) -> &'s Shape {
        debug_assert!(from.lookup(key).is_none());
        self.follow(from, Transition::Add(key), || {
            let mut entries = Vec::with_capacity(from.entries.len() + 1);
            entries.extend_from_slice(&from.entries);
            entries.push((key, from.slot_count));
            Shape::new(entries.into_boxed_slice(), from.slot_count + 1)
        })
    }

    /// The shape after deleting `key`; the slot count stays (slots are not reused).
    pub(crate) fn with_deleted<'s>(&'s self, from: &'s Shape, key: Key) -> &'s Shape {
        self.follow(from, Transition::Delete(key), || {
            let entries: Vec<_> = from
                .entries
                .iter()
                .copied()
                .filter(|e| e.0 != key)
                .collect();
            Shape::new(entries.into_boxed_slice(), from.slot_count)
        })
    }

    /// The shape reached by adding `keys` in order to the empty shape.
    pub(crate) fn for_keys(&self, keys: &[Key]) -> &Shape {
        let mut s = self.root();
        for &k in keys {
            s = self.with_added(s, k);
        }
        s
    }
}

impl Drop for ShapeTable {
    fn drop(&mut self) {
        for &p in lock(&self.all).iter() {
            // SAFETY: every pointer in `all` came from `Box::into_raw` and is freed once,
            // here; no reference outlives the table (they borrow it).
            drop(unsafe { Box::from_raw(p) });
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn transitions_are_shared_and_deletes_keep_slots() {
        let t = ShapeTable::new();
        let (a, b, c) = (Key::new("a"), Key::new("b"), Key::new("c"));
        let s1 = t.for_keys(&[a, b]);
        let s2 = t.for_keys(&[a, b]);
        assert!(core::ptr::eq(s1, s2));
        assert_eq!(s1.lookup(b), Some(1));
        let d = t.with_deleted(s1, a);
        assert_eq!(d.lookup(a), None);
        assert_eq!(d.lookup(b), Some(1));
        assert_eq!(d.slot_count(), 2);
        let e = t.with_added(d, c);
        assert_eq!(e.lookup(c), Some(2));
        let many: Vec<Key> = (0..20).map(|i| Key::new(&format!("k{i}"))).collect();
        let big = t.for_keys(&many);
        assert_eq!(big.lookup(many[17]), Some(17));
        assert_eq!(big.len(), 20);
    }
}
