//! Property-access site caches.

use core::cell::Cell;

use crate::cell::{InlineSlot, Obj, Value};
use crate::error::Error;
use crate::key::PropertyKey;

/// A property-access site cache (what an engine's inline cache keeps at a `obj.key` site):
/// the key, and the last shape seen with the slot the key has in it. Use it with
/// [`Obj::get_cached`] where the same key is read from many objects built alike.
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
    /// The id of the last plain shape seen if the key's slot there is inline, else 0 (no
    /// shape has id 0).
    inline_id: Cell<u64>,
    inline_slot: Cell<InlineSlot>,
    /// The id of the last plain shape seen if the key's slot there is external, else 0.
    external_id: Cell<u64>,
    external_slot: Cell<u32>,
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
        }
    }

    /// The key this cache reads.
    pub fn key(&self) -> PropertyKey {
        self.key
    }
}

impl<'h> Obj<'h> {
    /// [`Obj::get`] through a [`PropertyCache`]: when this object has the shape the cache
    /// last saw, the value is one load from the slot the cache remembers, without searching
    /// the shape or looking at anything else. Otherwise it is `get`, and the cache
    /// remembers this object's shape if the shape is plain (see below) and has the key.
    /// Same result as `get(cache.key())` in every case.
    ///
    /// Why a shape-id match alone is enough: a cache remembers only plain shapes, and an
    /// object has a plain shape only while it is in shape mode, not restricted to a thread
    /// and without attribute or accessor entries (the first of these changes moves it to a
    /// shape with a new id; ids are never reused). In a plain shape the key is an own data
    /// property in the slot the shape gives it.
    #[inline(always)]
    pub fn get_cached(self, cache: &PropertyCache) -> Result<Value<'h>, Error> {
        let shape = self.shape();
        if shape.id() == cache.inline_id.get() {
            return Ok(self.inline_slot(cache.inline_slot.get()));
        }
        if shape.id() == cache.external_id.get() {
            return Ok(self.slot(cache.external_slot.get()));
        }
        // (A canonical key is a name only if it can live in a shape.)
        if shape.is_plain()
            && let PropertyKey::Name(k) = cache.key
            && let Some(slot) = shape.lookup(k)
        {
            match InlineSlot::new(slot) {
                Some(s) => {
                    cache.inline_id.set(shape.id());
                    cache.inline_slot.set(s);
                    cache.external_id.set(0);
                }
                None => {
                    cache.external_id.set(shape.id());
                    cache.external_slot.set(slot);
                    cache.inline_id.set(0);
                }
            }
            return Ok(self.slot(slot));
        }
        self.get_slow(cache.key)
    }
}
