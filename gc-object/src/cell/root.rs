//! Roots: objects kept alive across collections without borrowing the heap.

use core::ptr::NonNull;
use std::sync::Arc;

use super::{ObjectCell, Value, Word};
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
    /// The rooted value (a cell word; the table holds its cell).
    word: Word,
}

// SAFETY: a root is an index into a mutex-protected table plus an address that is only
// dereferenced after checking the heap (`get`).
unsafe impl Send for Root {}
// SAFETY: as for `Send`.
unsafe impl Sync for Root {}

impl Root {
    /// Roots the cell `v` names (the caller checked that it names one of this heap).
    pub(crate) fn new(table: &Arc<RootTable>, v: Value<'_>) -> Result<Root, Error> {
        debug_assert!(v.word.is_cell());
        let cell = NonNull::new(v.word.cell()).ok_or(Error::WrongKind)?;
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
            word: v.word,
        })
    }

    /// The rooted value, borrowed from the heap whose shared part is `heap` (an error if
    /// the root belongs to another).
    pub(crate) fn value_in<'h>(&self, heap: &'h super::HeapShared) -> Result<Value<'h>, Error> {
        if !Arc::ptr_eq(&self.table, &heap.roots) {
            return Err(Error::ForeignHeap);
        }
        // SAFETY: the root keeps the cell alive (it is marked by every collection of this
        // heap), and the heap is borrowed for 'h.
        Ok(unsafe { Value::from_word(self.word) })
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
