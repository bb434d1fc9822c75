//! The unsafe half of the heap: allocation of cells, roots, literals, marking.

use core::ptr::NonNull;
use std::sync::Arc;

use super::{OBJECT_CLASS, Obj, ObjectCell, Shape, Value, finalize, init_object, trace};
use crate::Error;
use crate::heap::{CollectStats, HeapShared};
use crate::key::Key;
use crate::slab::{LocalCache, Slab};
use crate::sync::{Mutex, lock};

/// Allocates an object cell through `cache` and initializes it.
#[inline]
pub(crate) fn alloc_object<'h>(
    heap: &'h HeapShared,
    cache: &mut LocalCache,
    shape: &'h Shape,
    proto: Option<Obj<'h>>,
    tags: u16,
    values: &[Value<'h>],
) -> Result<Obj<'h>, Error> {
    // Callers pass a shape that fits the inline slots and at most that many values.
    debug_assert!(values.len() <= shape.slot_count() as usize);
    if shape.slot_count() as usize > super::INLINE_SLOTS || values.len() > super::INLINE_SLOTS {
        return Err(Error::TooManyValues);
    }
    let p = heap
        .slab
        .alloc_cell(cache, OBJECT_CLASS)
        .ok_or(Error::OutOfMemory)?;
    // SAFETY: `p` is a fresh cell of the object class of this heap, owned by no one else;
    // `shape` is from this heap's table (borrowed for 'h); the counts were checked above.
    Ok(unsafe { init_object(p, shape, proto, tags, values) })
}

/// A prepared literal: a shape reached once, then installed with one store per object.
#[derive(Debug, Clone, Copy)]
pub struct Literal {
    shape: NonNull<Shape>,
    heap_id: u64,
    len: usize,
}

// SAFETY: a shape is immutable (its transition list is behind a mutex).
unsafe impl Send for Literal {}
// SAFETY: as for `Send`.
unsafe impl Sync for Literal {}

impl Literal {
    pub(crate) fn new(heap: &HeapShared, keys: &[Key]) -> Literal {
        let s = heap.shapes.for_keys(keys);
        Literal {
            shape: NonNull::from(s),
            heap_id: heap.id,
            len: keys.len(),
        }
    }

    /// Number of properties.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Has no properties?
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The shape, if `heap` (whose id is `heap_id`, passed by the caller that has it at
    /// hand) is the heap the literal was prepared for.
    #[inline]
    pub(crate) fn shape<'h>(&self, heap: &'h HeapShared, heap_id: u64) -> Result<&'h Shape, Error> {
        debug_assert_eq!(heap_id, heap.id);
        if heap_id != self.heap_id {
            return Err(Error::ForeignHeap);
        }
        // SAFETY: the shape belongs to the heap with this id, which is alive ('h) and owns
        // its shapes until it drops; ids are never reused.
        Ok(unsafe { self.shape.as_ref() })
    }
}

/// Root slots of one heap (null = free).
#[derive(Debug, Default)]
pub(crate) struct RootTable {
    slots: Mutex<RootSlots>,
}

#[derive(Debug, Default)]
struct RootSlots {
    cells: Vec<Option<NonNull<ObjectCell>>>,
    free: Vec<usize>,
}

// SAFETY: the table only stores addresses; it is behind a mutex.
unsafe impl Send for RootTable {}
// SAFETY: as for `Send`.
unsafe impl Sync for RootTable {}

/// Keeps an object alive across collections. Not tied to a borrow of the heap: get the
/// object back with [`Root::get`] after a collection.
#[derive(Debug)]
pub struct Root {
    table: Arc<RootTable>,
    index: usize,
    cell: NonNull<ObjectCell>,
}

// SAFETY: a root is an index into a mutex-protected table plus an address that is only
// dereferenced after checking the heap (`get`).
unsafe impl Send for Root {}
// SAFETY: as for `Send`.
unsafe impl Sync for Root {}

impl Root {
    pub(crate) fn new(table: &Arc<RootTable>, obj: Obj<'_>) -> Result<Root, Error> {
        let cell = obj.cell_ptr();
        let mut t = lock(&table.slots);
        let index = match t.free.pop() {
            Some(i) => {
                t.cells[i] = Some(cell);
                i
            }
            None => {
                t.cells.try_reserve(1).map_err(|_| Error::OutOfMemory)?;
                let want = t.cells.len() + 1;
                t.free.try_reserve(want).map_err(|_| Error::OutOfMemory)?;
                t.cells.push(Some(cell));
                t.cells.len() - 1
            }
        };
        drop(t);
        Ok(Root {
            table: Arc::clone(table),
            index,
            cell,
        })
    }

    /// The rooted object, borrowed from `heap` (an error if the root belongs to another).
    pub fn get<'h>(&self, heap: &'h crate::Heap) -> Result<Obj<'h>, Error> {
        if !Arc::ptr_eq(&self.table, &heap.shared.roots) {
            return Err(Error::ForeignHeap);
        }
        // SAFETY: the root keeps the cell alive (it is marked by every collection of this
        // heap), and the heap is borrowed for 'h.
        Ok(unsafe { Obj::from_cell(self.cell) })
    }
}

impl Drop for Root {
    fn drop(&mut self) {
        let mut t = lock(&self.table.slots);
        t.cells[self.index] = None;
        // Capacity was reserved when the slot was made.
        t.free.push(self.index);
    }
}

/// The collector's reusable mark stack (kept in the heap so steady collections do not
/// allocate).
#[derive(Debug, Default)]
pub(crate) struct MarkStack(Vec<NonNull<ObjectCell>>);

impl MarkStack {
    /// Forgets the entries of an interrupted collection.
    pub(crate) fn clear(&mut self) {
        self.0.clear();
    }
}

// SAFETY: only used by `collect`, which has exclusive access to the heap.
unsafe impl Send for MarkStack {}
// SAFETY: as for `Send`.
unsafe impl Sync for MarkStack {}

/// Marks from the roots, then sweeps, finalizing dead objects. `&mut HeapShared`: no
/// mutator and no `Obj` exists.
pub(crate) fn collect(heap: &mut HeapShared, stack: &mut MarkStack) -> CollectStats {
    let mut stats = CollectStats::default();
    let raw = heap.slab.raw();
    {
        let t = lock(&heap.roots.slots);
        for &cell in t.cells.iter().flatten() {
            // SAFETY: rooted cells are live cells of this heap; exclusive access.
            if unsafe { Slab::mark(cell.cast()) } {
                stack.0.push(cell);
            }
        }
    }
    while let Some(cell) = stack.0.pop() {
        stats.marked += 1;
        let mut visit = |child: NonNull<ObjectCell>| {
            // SAFETY: references are to live cells of the same heap (stores check the heap);
            // exclusive access.
            if unsafe { Slab::mark(child.cast()) } {
                stack.0.push(child);
            }
        };
        // SAFETY: `cell` is a live cell of this heap (reached from a root); exclusive.
        unsafe { trace(cell, raw, &mut visit) };
    }
    let mut with_side = 0u64;
    let counts = heap.slab.sweep(&mut |cell, raw| {
        // SAFETY: the sweep hands out dead object cells of this heap that have side state;
        // exclusive access.
        if unsafe { finalize(cell.cast(), raw) } {
            with_side += 1;
        }
    });
    debug_assert_eq!(with_side, counts.finalized);
    stats.freed = counts.freed;
    stats.finalized = with_side;
    stats.freed_without_finalizer = counts.freed - counts.finalized;
    stats
}

/// Finalizes every object (the heap is being dropped).
pub(crate) fn finalize_all(heap: &mut HeapShared) {
    heap.slab.sweep(&mut |cell, raw| {
        // SAFETY: nothing is marked, so every cell is handed out; the heap is being dropped
        // (exclusive), so every object is dead.
        unsafe { finalize(cell.cast(), raw) };
    });
}
