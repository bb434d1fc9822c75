//! Prepared literals: a shape found once, installed with one store per object.

use core::ptr::NonNull;

use super::shape::Shape;
use super::shared::HeapShared;
use crate::error::Error;
use crate::key::Key;

/// A prepared literal: a shape reached once, then installed with one store per object.
#[derive(Debug, Clone, Copy)]
pub struct Literal {
    shape: NonNull<Shape>,
    heap_id: u64,
    len: usize,
}

// SAFETY: a literal's shape is pinned and shared, so it never changes (its table is behind
// a lock).
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
