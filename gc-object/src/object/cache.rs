//! Property-access site caches.

use crate::cell::{Obj, Value};
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
    /// 0: nothing cached (no shape has id 0).
    shape_id: core::cell::Cell<u64>,
    slot: core::cell::Cell<u32>,
}

impl PropertyCache {
    /// An empty cache for `key` (an index-like name such as `"0"` is the array index, as in
    /// every object operation; index keys are never cached and always take `get`).
    pub fn new(key: impl Into<PropertyKey>) -> PropertyCache {
        let key = key.into().canonical();
        PropertyCache {
            key,
            shape_id: core::cell::Cell::new(0),
            slot: core::cell::Cell::new(0),
        }
    }

    /// The key this cache reads.
    pub fn key(&self) -> PropertyKey {
        self.key
    }
}

impl<'h> Obj<'h> {
    /// [`Obj::get`] through a [`PropertyCache`]: when this object has the shape the cache
    /// last saw (and no accessors, attributes or array elements), the value is one load from
    /// the slot the cache remembers, without searching the shape. Otherwise it is `get`, and
    /// the cache remembers this object's shape if the key is an own data property here.
    /// Same result as `get(cache.key())` in every case.
    #[inline(always)]
    pub fn get_cached(self, cache: &PropertyCache) -> Result<Value<'h>, Error> {
        // (`side == 0`: not an array, not restricted, no attribute entries, shape mode.)
        if self.side() == 0 {
            let shape = self.shape();
            if shape.id() == cache.shape_id.get() {
                return Ok(self.slot(cache.slot.get()));
            }
            // (A canonical key is a name only if it can live in a shape.)
            if let PropertyKey::Name(k) = cache.key
                && let Some(slot) = shape.lookup(k)
            {
                cache.shape_id.set(shape.id());
                cache.slot.set(slot);
                return Ok(self.slot(slot));
            }
        }
        self.get_slow(cache.key)
    }
}
