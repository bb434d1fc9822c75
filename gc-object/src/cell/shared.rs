//! What every chunk of a heap points at (its owner), the collector's statistics and the
//! native-function type: the pieces of the heap the core needs, so that the core never
//! imports the layers above it.

use std::sync::Arc;

use super::collect::Collector;
use super::finreg::PendingList;
use super::root::RootTable;
use super::shape::ShapeTable;
use super::symbol::SymbolTable;
use crate::error::Error;
use crate::slab::{RawAlloc, Slab};
use crate::sync::{AtomicU64, Mutex, unmodeled};

use super::Value;

/// A native function: `f(this, argument)`. Getters get `undefined` as argument, setters the
/// assigned value.
pub type NativeFn = for<'h> fn(Value<'h>, Value<'h>) -> Result<Value<'h>, Error>;

/// The part of a heap that chunks point at (in an `Arc` that is never shared: its address
/// is stable, and unlike a `Box` moving the handle does not reassert unique access to it).
pub(crate) struct HeapShared {
    pub(crate) id: u64,
    pub(crate) slab: Slab,
    pub(crate) shapes: ShapeTable,
    pub(crate) roots: Arc<RootTable>,
    /// Held while a prototype is checked for cycles and set, so two threads linking
    /// objects crosswise cannot both pass the check.
    pub(crate) proto_lock: Mutex<()>,
    /// Object cells handed out by mutators that have ended.
    pub(crate) cells_allocated: AtomicU64,
    /// Their bytes (the pacing's allocation total; statistics, no protocol).
    pub(crate) cell_bytes: unmodeled::AtomicU64,
    /// The mark stack, the counts and the pacing (`collect`).
    pub(crate) collector: Mutex<Collector>,
    /// Finalization registries with registrations waiting for their callback (`finreg`).
    pub(crate) pending: Mutex<PendingList>,
    /// The live symbols, by number (`symbol`).
    pub(crate) symbols: Mutex<SymbolTable>,
}

impl HeapShared {
    /// A new heap core on `raw`, its chunks owned by it (the `Arc` is never cloned: its
    /// address is the owner every chunk names).
    pub(crate) fn new(id: u64, raw: Box<dyn RawAlloc>) -> Arc<HeapShared> {
        let mut shared = Arc::new(HeapShared {
            id,
            slab: Slab::new(raw),
            shapes: ShapeTable::new(),
            roots: Arc::new(RootTable::default()),
            proto_lock: Mutex::new(()),
            cells_allocated: AtomicU64::new(0),
            cell_bytes: unmodeled::AtomicU64::new(0),
            collector: Mutex::new(Collector::default()),
            pending: Mutex::new(PendingList::default()),
            symbols: Mutex::new(SymbolTable::default()),
        });
        let owner: *const HeapShared = Arc::as_ptr(&shared);
        Arc::get_mut(&mut shared)
            .expect("fresh Arc is unique")
            .slab
            .set_owner(owner.cast());
        shared
    }

    pub(crate) fn raw(&self) -> &dyn RawAlloc {
        self.slab.raw()
    }
}

/// What one collection did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct CollectStats {
    /// Objects reached from the roots.
    pub marked: u64,
    /// Dead objects freed.
    pub freed: u64,
    /// Dead objects whose side state the finalizer freed.
    pub finalized: u64,
    /// Dead objects without side state: freed by clearing a bit, no finalizer work.
    pub freed_without_finalizer: u64,
    /// Shapes freed: no live object had them (or a descendant), and no literal.
    pub shapes_freed: u64,
    /// Live weak references whose target this collection freed (now cleared).
    pub weak_cleared: u64,
    /// Weak-map entries removed because this collection freed their keys.
    pub ephemerons_removed: u64,
    /// Finalization-registry registrations whose target this collection freed: their
    /// callbacks are queued for [`Heap::run_finalizers`](crate::Heap::run_finalizers).
    pub finalizers_queued: u64,
    /// Symbols freed: neither reachable as values nor keys of live objects.
    pub symbols_freed: u64,
    /// Bytes the heap holds for what survived: the live cells and the side state, host
    /// closures, handle blocks and large cells still allocated. The pacing measures the
    /// allocation debt against it (see [`Pacing`](crate::Pacing)).
    pub live_bytes: u64,
}
