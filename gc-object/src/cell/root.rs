//! Roots: objects kept alive across collections without borrowing the heap.

use core::ptr::NonNull;
use std::sync::Arc;

use super::{Obj, ObjectCell};
use crate::error::Error;
use crate::sync::{Mutex, lock};

/// Root slots of one heap (null = free).
#[derive(Debug, Default)]
pub(crate) struct RootTable {
    pub(super) slots: Mutex<RootSlots>,
}

#[derive(Debug, Default)]
pub(super) struct RootSlots {
    pub(super) cells: Vec<Option<NonNull<ObjectCell>>>,
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

    /// The rooted object, borrowed from the heap whose shared part is `heap` (an error if
    /// the root belongs to another).
    pub(crate) fn get_in<'h>(&self, heap: &'h super::HeapShared) -> Result<Obj<'h>, Error> {
        if !Arc::ptr_eq(&self.table, &heap.roots) {
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
