#![doc = include_str!("../README.md")]

pub mod _tutorial;

/// The examples of `REFERENCE.md` (the detail the README leaves out), run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../REFERENCE.md")]
pub struct ReferenceDoctests;

mod cell;
mod error;
mod heap;
mod key;
mod object;
mod slab;
mod sync;

pub use cell::literal::Literal;
pub use cell::root::Root;
pub use cell::{
    CELL_BYTES, COLD_STATE_BYTES, CellKind, CollectStats, Context, EscapeScope,
    FINALIZATION_REGISTRY_CLASS, FinalizationRegistry, FinalizationRegistryKind, Gc,
    HANDLE_BLOCK_SLOTS, HEADER_BYTES, HOT_LOOKUPS, HeapString, INLINE_SLOTS, LINEAR_LOOKUP_MAX,
    Local, MAX_SHAPE_KEYS, MAX_STRING_BYTES, NativeFn, OBJECT_CLASS, OBJECT_CLASS_BYTES,
    OBJECT_PAYLOAD_BYTES, Obj, ObjectKind, Pacing, STORAGE_STATE_BYTES, STRING_HEAD_BYTES,
    SYMBOL_CLASS, Scope, StringKind, Symbol, SymbolKind, Value, WEAK_MAP_CLASS, WEAK_REF_CLASS,
    WeakMap, WeakMapKind, WeakRef, WeakRefKind,
};
pub use error::Error;
pub use heap::{Heap, HeapStats, Mutator};
pub use key::{
    Key, MAX_ARRAY_INDEX, MAX_INTERNED_BYTES, MAX_INTERNED_NAMES, PropertyKey, SYMBOL_BIT,
};
pub use object::{
    CACHE_SHAPES, DENSE_ALWAYS, DENSE_SPREAD, MEGAMORPHIC_ENTRIES, Property, PropertyCache,
};
pub use slab::{
    CHUNK_BYTES, CHUNK_POOL_CHUNKS, LARGEST_CLASS, RawAlloc, SIZE_CLASSES, SystemAlloc, class_of,
};

/// Is this build the "before" layout (`wide-object` feature: side state inline, 256-byte
/// class)?
pub const WIDE_OBJECT: bool = cfg!(feature = "wide-object");
