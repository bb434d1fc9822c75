//! Property-access site caches.

use core::cell::{Cell, OnceCell};

use crate::cell::{InlineSlot, Obj, Shape, Value};
use crate::error::Error;
use crate::key::PropertyKey;

/// Shapes a [`PropertyCache`] remembers one by one (polymorphic, as V8's inline caches);
/// past them it goes megamorphic: a small hash table by shape id.
pub const CACHE_SHAPES: usize = 4;
/// Entries of a megamorphic cache's table; it starts over when it is 3/4 full.
pub const MEGAMORPHIC_ENTRIES: usize = 64;

const MEGA_SHIFT: u32 = 64 - MEGAMORPHIC_ENTRIES.trailing_zeros();
const _: () = assert!(MEGAMORPHIC_ENTRIES.is_power_of_two() && CACHE_SHAPES >= 1);

/// A property-access site cache (what an engine's inline cache keeps at a `obj.key` site):
/// the key, and the slot the key has in each of the last few plain shapes seen. Use it with
/// [`Obj::get_cached`] where the same key is read from many objects built alike.
///
/// It remembers up to [`CACHE_SHAPES`] shapes (the first one is checked inline, the others
/// right after); a site that sees more goes *megamorphic*: further shapes go into a hash
/// table of [`MEGAMORPHIC_ENTRIES`] entries by shape id (emptied when 3/4 full), so a hit
/// costs a hash probe whatever the number of shapes, and a miss a shape lookup.
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
    /// [`CACHE_SHAPES`] - 1 compares, or one probe of the megamorphic table).
    #[inline]
    fn find(&self, id: u64) -> Option<u32> {
        if let Some(t) = self.mega.get() {
            let mut i = mega_home(id);
            loop {
                let e = &t[i];
                match e.id.get() {
                    0 => break,
                    x if x == id => return Some(e.slot.get()),
                    _ => i = (i + 1) % MEGAMORPHIC_ENTRIES,
                }
            }
        }
        self.more
            .iter()
            .find(|e| e.id.get() == id)
            .map(|e| e.slot.get())
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
        if (self.mega_used.get() as usize + 1) * 4 > MEGAMORPHIC_ENTRIES * 3 {
            for e in t.iter() {
                e.id.set(0);
            }
            self.mega_used.set(0);
        }
        let mut i = mega_home(id);
        while t[i].id.get() != 0 {
            i = (i + 1) % MEGAMORPHIC_ENTRIES;
        }
        t[i].id.set(id);
        t[i].slot.set(slot);
        self.mega_used.set(self.mega_used.get() + 1);
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
        // Only plain shapes are remembered; any other (dictionary mode, side flags) is `get`.
        if !shape.is_plain() {
            return self.get(cache.key);
        }
        if let Some(slot) = cache.find(shape.id()) {
            return Ok(self.slot(slot));
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
    fn a_cache_goes_megamorphic_past_its_shapes_and_starts_its_table_over_when_full() {
        let c = PropertyCache::new("x");
        assert_eq!(c.shapes(), (0, 0));
        for id in 1..=CACHE_SHAPES as u64 {
            c.remember(id, id as u32);
        }
        assert_eq!(c.shapes(), (CACHE_SHAPES, 0));
        let full = MEGAMORPHIC_ENTRIES * 3 / 4;
        for id in 0..full as u64 {
            c.remember(1000 + id, id as u32 + 20);
        }
        assert_eq!(c.shapes(), (CACHE_SHAPES, full));
        for id in 2..=CACHE_SHAPES as u64 {
            assert_eq!(c.find(id), Some(id as u32));
        }
        for id in 0..full as u64 {
            assert_eq!(c.find(1000 + id), Some(id as u32 + 20));
        }
        assert_eq!(c.find(999), None);
        c.remember(5000, 7);
        assert_eq!(c.shapes(), (CACHE_SHAPES, 1), "the table started over");
        assert_eq!(c.find(5000), Some(7));
        assert_eq!(c.find(1000), None);
    }
}
