//! Property-access site caches.

use core::cell::{Cell, OnceCell};

use crate::cell::{InlineSlot, Obj, Shape, Value};
use crate::error::Error;
use crate::key::PropertyKey;

/// Shapes a [`PropertyCache`] remembers one by one (polymorphic, as V8's inline caches);
/// past them it goes megamorphic: a small hash table by shape id.
pub const CACHE_SHAPES: usize = 4;
/// Entries of a megamorphic cache's table, one place per shape id (a shape that lands on a
/// taken entry replaces the shape there, as an engine's stub cache does).
pub const MEGAMORPHIC_ENTRIES: usize = 64;

const MEGA_SHIFT: u32 = 64 - MEGAMORPHIC_ENTRIES.trailing_zeros();
const _: () = assert!(MEGAMORPHIC_ENTRIES.is_power_of_two() && CACHE_SHAPES >= 1);

/// A property-access site cache (what an engine's inline cache keeps at a `obj.key` site):
/// the key, and the slot the key has in each of the last few plain shapes seen. Use it with
/// [`Obj::get_cached`] where the same key is read from many objects built alike.
///
/// It remembers up to [`CACHE_SHAPES`] shapes (the first one is checked inline, the others
/// right after); a site that sees more goes *megamorphic*: further shapes go into a
/// direct-mapped table of [`MEGAMORPHIC_ENTRIES`] entries by shape id (a shape replaces
/// the one in its entry), so a hit costs [`CACHE_SHAPES`] - 1 compares and one probe
/// whatever the number of shapes, and a miss a shape lookup.
///
/// A shape is remembered by its process-unique id, so a cache never trusts a stale entry: it
/// works with objects of any heap and outlives them (and the shapes, which the collector
/// frees when no object uses them). It is `Send` but not `Sync` (one per thread, like a
/// per-thread interpreter's caches).
///
/// ```
/// use gc_object::{Heap, PropertyCache, Value};
/// let heap = Heap::new();
/// let lit = heap.literal(&["x", "y"]);
/// let mut m = heap.mutator();
/// let y = PropertyCache::new("y");
/// for i in 0..3 {
///     let o = m.literal(&lit, &[Value::number(0.0), Value::number(i as f64)]).unwrap();
///     assert_eq!(o.get_cached(&y).unwrap(), Value::number(i as f64));
/// }
/// ```
#[derive(Debug, Clone)]
pub struct PropertyCache {
    key: PropertyKey,
    /// The first plain shape remembered if the key's slot there is inline, else 0 (no
    /// shape has id 0).
    inline_id: Cell<u64>,
    inline_slot: Cell<InlineSlot>,
    /// The first plain shape remembered if the key's slot there is external, else 0.
    external_id: Cell<u64>,
    external_slot: Cell<u32>,
    /// The next shapes (0: free).
    more: [Entry; CACHE_SHAPES - 1],
    /// Megamorphic: the table every later shape goes into.
    mega: OnceCell<Box<[Entry; MEGAMORPHIC_ENTRIES]>>,
    /// Entries used in `mega`.
    mega_used: Cell<u32>,
}

#[derive(Debug, Clone, Default)]
struct Entry {
    id: Cell<u64>,
    slot: Cell<u32>,
}

impl PropertyCache {
    /// An empty cache for `key` (an index-like name such as `"0"` is the array index, as in
    /// every object operation; index keys are never cached and always take `get`).
    pub fn new(key: impl Into<PropertyKey>) -> PropertyCache {
        let key = key.into().canonical();
        PropertyCache {
            key,
            inline_id: Cell::new(0),
            inline_slot: Cell::new(InlineSlot::default()),
            external_id: Cell::new(0),
            external_slot: Cell::new(0),
            more: Default::default(),
            mega: OnceCell::new(),
            mega_used: Cell::new(0),
        }
    }

    /// The key this cache reads.
    pub fn key(&self) -> PropertyKey {
        self.key
    }

    /// Shapes remembered: `(one by one, in the megamorphic table)`.
    pub fn shapes(&self) -> (usize, usize) {
        let first = usize::from(self.inline_id.get() != 0 || self.external_id.get() != 0);
        let more = self.more.iter().filter(|e| e.id.get() != 0).count();
        (first + more, self.mega_used.get() as usize)
    }

    /// The slot remembered for shape `id` past the first entry (O(1): at most
    /// [`CACHE_SHAPES`] - 1 compares and one probe of the megamorphic table).
    #[inline(always)]
    fn find(&self, id: u64) -> Option<u32> {
        for e in &self.more {
            if e.id.get() == id {
                return Some(e.slot.get());
            }
        }
        let e = &self.mega.get()?[mega_home(id)];
        (e.id.get() == id).then(|| e.slot.get())
    }

    /// Remembers that the key is in `slot` in the plain shape `id`.
    fn remember(&self, id: u64, slot: u32) {
        if self.inline_id.get() == 0 && self.external_id.get() == 0 {
            match InlineSlot::new(slot) {
                Some(s) => {
                    self.inline_id.set(id);
                    self.inline_slot.set(s);
                }
                None => {
                    self.external_id.set(id);
                    self.external_slot.set(slot);
                }
            }
            return;
        }
        if let Some(e) = self.more.iter().find(|e| e.id.get() == 0) {
            e.id.set(id);
            e.slot.set(slot);
            return;
        }
        let t = self
            .mega
            .get_or_init(|| Box::new(core::array::from_fn(|_| Entry::default())));
        let e = &t[mega_home(id)];
        if e.id.get() == 0 {
            self.mega_used.set(self.mega_used.get() + 1);
        }
        e.id.set(id);
        e.slot.set(slot);
    }
}

fn mega_home(id: u64) -> usize {
    (id.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> MEGA_SHIFT) as usize
}

impl<'h> Obj<'h> {
    /// [`Obj::get`] through a [`PropertyCache`]: when this object has a shape the cache
    /// remembers, the value is one load from the slot the cache remembers for it, without
    /// searching the shape or looking at anything else. Otherwise it is `get`, and the
    /// cache remembers this object's shape if the shape is plain (see below) and has the
    /// key. Same result as `get(cache.key())` in every case. O(1) either way up to the
    /// shape lookup of a miss.
    ///
    /// Why a shape-id match alone is enough: a cache remembers only plain shapes, and an
    /// object has a plain shape only while it is in shape mode, not restricted to a thread
    /// and without attribute or accessor entries (the first of these changes moves it to a
    /// shape with a new id; ids are never reused). In a plain shape the key is an own data
    /// property in the slot the shape gives it, and a shape that gains keys keeps its
    /// slots.
    #[inline(always)]
    pub fn get_cached(self, cache: &PropertyCache) -> Result<Value<'h>, Error> {
        let shape = self.shape();
        if shape.id() == cache.inline_id.get() {
            return Ok(self.inline_slot(cache.inline_slot.get()));
        }
        if shape.id() == cache.external_id.get() {
            return Ok(self.slot(cache.external_slot.get()));
        }
        self.get_cached_more(cache, shape)
    }

    #[inline(never)]
    fn get_cached_more(self, cache: &PropertyCache, shape: &Shape) -> Result<Value<'h>, Error> {
        // A remembered id is a plain shape's (only those are remembered, ids are never
        // reused, and a shape never stops being plain): a match needs no other test.
        if let Some(slot) = cache.find(shape.id()) {
            return Ok(self.slot(slot));
        }
        self.get_cached_miss(cache, shape)
    }

    #[inline(never)]
    fn get_cached_miss(self, cache: &PropertyCache, shape: &Shape) -> Result<Value<'h>, Error> {
        // Only plain shapes are remembered; any other (dictionary mode, side flags) is `get`.
        if !shape.is_plain() {
            return self.get(cache.key);
        }
        // (A canonical key is a name only if it can live in a shape.)
        if let PropertyKey::Name(k) = cache.key
            && let Some(slot) = shape.lookup(k)
        {
            cache.remember(shape.id(), slot);
            return Ok(self.slot(slot));
        }
        self.get_slow(cache.key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cache_goes_megamorphic_past_its_shapes_and_replaces_on_a_taken_entry() {
        let c = PropertyCache::new("x");
        assert_eq!(c.shapes(), (0, 0));
        for id in 1..=CACHE_SHAPES as u64 {
            c.remember(id, id as u32);
        }
        assert_eq!(c.shapes(), (CACHE_SHAPES, 0));
        for id in 2..=CACHE_SHAPES as u64 {
            assert_eq!(c.find(id), Some(id as u32));
        }
        // Past them: one entry per home; a later shape with a taken home replaces it.
        let mut held: Vec<Option<u64>> = vec![None; MEGAMORPHIC_ENTRIES];
        for id in 1000..1000 + 4 * MEGAMORPHIC_ENTRIES as u64 {
            c.remember(id, id as u32 + 20);
            held[mega_home(id)] = Some(id);
            assert_eq!(c.find(id), Some(id as u32 + 20));
        }
        let used = held.iter().flatten().count();
        assert_eq!(c.shapes(), (CACHE_SHAPES, used));
        for id in 1000..1000 + 4 * MEGAMORPHIC_ENTRIES as u64 {
            let want = (held[mega_home(id)] == Some(id)).then_some(id as u32 + 20);
            assert_eq!(c.find(id), want, "shape {id}");
        }
        for id in 2..=CACHE_SHAPES as u64 {
            assert_eq!(c.find(id), Some(id as u32), "the polymorphic entries stay");
        }
        assert_eq!(c.find(999), None);
    }
}
