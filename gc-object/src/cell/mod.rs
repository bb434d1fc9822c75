//! The object cell and its side state: every layout trick and every `unsafe` of the object
//! model lives here (the slab lives in `crate::slab`).
//!
//! Protocol (see the README for the picture):
//! - Readers never lock. They load the shape (acquire), then the slot; external slots,
//!   elements and cold state are reached through the storage pointer (acquire) and each
//!   block pointer (acquire).
//! - Writers (every mutation: property writes, adds, deletes, attribute changes, first
//!   installation of side state) hold the object's one-byte lock. A writer fills a new
//!   block completely, then publishes it with a release store; a new shape is published
//!   after the blocks it needs. In shape mode slot blocks only grow and slots are never
//!   reused, so a reader that saw a shape always finds its slot. A delete (or more than
//!   `MAX_SHAPE_KEYS` keys) moves the object to dictionary mode: the dictionary is
//!   published first, then the flag, then the dictionary shape; the old slots keep their
//!   values for readers of the old shape until the next collection. Dictionaries reuse
//!   their entries, so their readers validate with a sequence lock (`dict`).
//! - Replaced blocks are not freed while mutators may still read them: they go on the
//!   object's retired list and are freed by the collector (which has exclusive access) or
//!   by the object's finalizer.
//! - Slots past the shape: an inline slot at or above the shape's `slot_count` is never
//!   read (not by readers, not by tracing) and may hold a stale word of the cell's previous
//!   occupant (or zero: fresh chunks are zeroed, so every word is initialized). A slot
//!   enters the shape only by an add, which stores the slot before it publishes the new
//!   shape, and an object's `slot_count` never decreases while it is in shape mode (deletes
//!   leave shape mode), so every slot a reader or the tracer can reach was written for this
//!   object.
//!
//! Files: `header` (the header every cell starts with and the cell kinds: a leaf), `gc`
//! (the one handle type, `Gc<'h, K>`, over a cell-kind trait), `layout` (the object cell,
//! its proofs, `Obj`'s operations and its lock), `side` (the lazily installed storage
//! state and its blocks), `txn` (locked writes and side-state
//! transactions), `trace` (tracing and finalization), `shape` (hidden classes), `value`
//! (the value word), `shared` (what a heap's chunks point at), `collect` (allocation,
//! mark-sweep and the collector's state), `pacing` (when a collection is due), `context`
//! (the heap, mutators, the exclusive context and its handle scopes: where collecting is
//! safe), `handles` (a mutator's handle stack), `literal` and `root`.

pub(crate) mod collect;
pub(crate) mod context;
mod dict;
pub(crate) mod ephemeron;
pub(crate) mod finreg;
mod gc;
mod handles;
mod header;
pub(crate) mod host;
mod layout;
pub(crate) mod literal;
mod pacing;
pub(crate) mod root;
pub(crate) mod shape;
pub(crate) mod shared;
mod side;
pub(crate) mod string;
pub(crate) mod symbol;
mod trace;
mod txn;
pub(crate) mod value;
pub(crate) mod weak;

pub(crate) use context::ScopeFamily;
pub use context::{Context, EscapeScope, Heap, Local, Mutator, Scope};
pub use ephemeron::{WEAK_MAP_CLASS, WeakMap, WeakMapKind};
pub use finreg::{FINALIZATION_REGISTRY_CLASS, FinalizationRegistry, FinalizationRegistryKind};
pub use gc::{CellKind, Gc};
pub use handles::HANDLE_BLOCK_SLOTS;
pub use header::HEADER_BYTES;
pub use layout::{
    CELL_BYTES, COLD_STATE_BYTES, INLINE_SLOTS, OBJECT_CLASS, OBJECT_CLASS_BYTES,
    OBJECT_PAYLOAD_BYTES, Obj, ObjectKind, STORAGE_STATE_BYTES,
};
pub(crate) use layout::{
    InlineSlot, ObjectCell, SIDE_DICT, SIDE_ENTRIES, SIDE_RESTRICTED, TAG_ARRAY, TAG_FUNCTION,
    init_object,
};
pub use pacing::Pacing;
pub(crate) use shape::Shape;
pub use shape::{HOT_LOOKUPS, LINEAR_LOOKUP_MAX, MAX_SHAPE_KEYS};
pub(crate) use shared::HeapShared;
pub use shared::{CollectStats, NativeFn};
pub(crate) use side::{ATTR_ACCESSOR, ColdDraft, PropEntry};
pub use string::{HeapString, MAX_STRING_BYTES, STRING_HEAD_BYTES, StringKind};
pub use symbol::{SYMBOL_CLASS, Symbol, SymbolKind};
pub(crate) use trace::{finalize, trace};
pub(crate) use txn::Locked;
pub use value::Value;
pub(crate) use value::{AtomicWord, Word};
pub use weak::{WEAK_REF_CLASS, WeakRef, WeakRefKind};

/// Helpers for the unit tests of the core: a heap core on a counting allocator, objects
/// made through the collector's allocation path, and a teardown that frees everything.
#[cfg(all(test, not(loom)))]
pub(crate) mod testing {
    use std::alloc::{GlobalAlloc, Layout, System};
    use std::ptr::NonNull;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicIsize, Ordering};

    use super::HeapShared;
    use super::collect::{alloc_object, finalize_all};
    use super::{Obj, Value};
    use crate::slab::{LocalCache, RawAlloc};

    /// Counts the blocks its heap holds (chunks and side blocks).
    #[derive(Clone, Default)]
    pub(crate) struct Counter(pub(crate) Arc<AtomicIsize>);

    // SAFETY: forwards to `System`.
    unsafe impl RawAlloc for Counter {
        fn alloc(&self, layout: Layout) -> Option<NonNull<u8>> {
            self.0.fetch_add(1, Ordering::Relaxed);
            // SAFETY: the heap never asks for zero bytes.
            NonNull::new(unsafe { System.alloc(layout) })
        }
        unsafe fn dealloc(&self, ptr: NonNull<u8>, layout: Layout) {
            self.0.fetch_sub(1, Ordering::Relaxed);
            // SAFETY: forwarded contract.
            unsafe { System.dealloc(ptr.as_ptr(), layout) }
        }
    }

    impl Counter {
        pub(crate) fn live(&self) -> isize {
            self.0.load(Ordering::Relaxed)
        }
    }

    /// A heap core on a fresh counter.
    pub(crate) fn heap() -> (Arc<HeapShared>, Counter) {
        let c = Counter::default();
        (HeapShared::new(u64::MAX, Box::new(c.clone())), c)
    }

    /// A fresh empty object (or array, with `tags`) of `heap`.
    pub(crate) fn object<'h>(heap: &'h HeapShared, cache: &LocalCache, tags: u16) -> Obj<'h> {
        alloc_object(heap, cache, heap.shapes.root(), None, tags, &[]).expect("cell")
    }

    /// Frees every object's side state and the chunks.
    pub(crate) fn teardown(mut heap: Arc<HeapShared>, cache: LocalCache) {
        heap.slab.release_cache(&cache);
        finalize_all(Arc::get_mut(&mut heap).expect("unique"));
    }

    /// `n` as a value.
    pub(crate) fn n(x: u32) -> Value<'static> {
        Value::from(x)
    }
}
