//! Weak references: cells of the smallest slab class that name an object without keeping it
//! alive. The collector does not trace a weak reference's target; after marking it clears
//! every live weak reference whose target was not marked, in the collection that frees the
//! target (`collect`), so a weak reference never names a freed cell.
//!
//! ```text
//!  WeakCell (16 bytes, in the 64-byte class)
//!  +------+------+---------+----------------------+
//!  | kind | rsvd | padding | target: *ObjectCell  |  null once the target was collected
//!  +------+------+---------+----------------------+
//! ```

use core::ptr::{self, NonNull};

use super::gc::{Gc, Kind};
use super::header::{CELL_KIND_WEAK_REF, CellHeader};
use super::shared::HeapShared;
use super::{Obj, ObjectCell, Value, Word};
use crate::error::Error;
use crate::slab::{self, LocalCache, class_of};
use crate::sync::{AtomicPtr, Ordering};

#[repr(C)]
pub(crate) struct WeakCell {
    header: CellHeader,
    _pad: [u8; 6],
    /// The target; written when the cell is made, cleared only by the collector (exclusive
    /// access).
    target: AtomicPtr<ObjectCell>,
}

/// Index into [`SIZE_CLASSES`](crate::SIZE_CLASSES) of the class weak references are allocated from.
pub const WEAK_REF_CLASS: usize = match class_of(core::mem::size_of::<WeakCell>()) {
    Some(c) => c,
    None => panic!("weak cell larger than the largest slab class"),
};

#[cfg(not(loom))]
const _: () = assert!(crate::slab::SIZE_CLASSES[WEAK_REF_CLASS] == 64);

/// A weak reference to an object of a heap borrowed for `'h`: [`WeakRef::upgrade`] gives
/// the object while it has not been collected, and `None` from the collection that frees
/// it on. `Copy`, 8 bytes, `Send + Sync`; itself a heap cell, collected when unreachable
/// (keep one across collections in an object's property, as a [`Value`], or with
/// [`Heap::root_value`](crate::Heap::root_value)).
///
/// ```
/// use gc_object::Heap;
/// let mut heap = Heap::new();
/// let (keep, weak) = {
///     let m = heap.mutator();
///     let target = m.object().unwrap();
///     let holder = m.object().unwrap();
///     let w = m.weak_ref(target).unwrap();
///     assert_eq!(w.upgrade(), Some(target));
///     holder.set("w", w.value()).unwrap(); // the holder keeps the weak reference, not the target
///     (heap.root(holder).unwrap(), heap.root_value(w.value()).unwrap())
/// };
/// assert_eq!(heap.collect().weak_cleared, 1);
/// let w = weak.value(&heap).unwrap().as_weak_ref().unwrap();
/// assert_eq!(w.upgrade(), None);
/// # drop(keep);
/// ```
pub type WeakRef<'h> = Gc<'h, WeakRefKind>;

/// The kind of a weak-reference cell: [`WeakRef<'h>`](WeakRef) is `Gc<'h, WeakRefKind>`.
#[derive(Debug)]
pub enum WeakRefKind {}

// SAFETY: every weak-reference cell starts with a header of kind `CELL_KIND_WEAK_REF`
// (`alloc_weak_ref`); its only mutable field is an atomic, cleared with exclusive access.
unsafe impl Kind for WeakRefKind {
    const KIND: u8 = CELL_KIND_WEAK_REF;
    const NAME: &'static str = "WeakRef";
}

impl<'h> WeakRef<'h> {
    fn c(&self) -> &'h WeakCell {
        // SAFETY: type invariant: the cell is alive for `'h`.
        unsafe { self.cell.cast::<WeakCell>().as_ref() }
    }

    /// The target, if it has not been collected. (While the heap is borrowed no collection
    /// runs, so the object stays valid for `'h`; storing it somewhere reachable keeps it.)
    #[inline]
    pub fn upgrade(self) -> Option<Obj<'h>> {
        let p = self.c().target.load(Ordering::Acquire);
        // SAFETY: a non-null target is a live object of this heap: the collector clears the
        // pointer in the collection that frees the target, and no collection runs while
        // the heap is borrowed for 'h.
        NonNull::new(p).map(|c| unsafe { Obj::from_cell(c) })
    }

    /// The target, or [`Error::Collected`] once it has been collected.
    pub fn target(self) -> Result<Obj<'h>, Error> {
        self.upgrade().ok_or(Error::Collected)
    }

    /// This weak reference as a value (to store it in an object).
    pub fn value(self) -> Value<'h> {
        // SAFETY: the word names this live cell.
        unsafe { Value::from_word(Word::from_other_cell(self.cell.cast())) }
    }
}

impl<'h> Value<'h> {
    /// The weak reference, if this is one.
    pub fn as_weak_ref(self) -> Option<WeakRef<'h>> {
        let cell = self.other_cell()?;
        // SAFETY: a cell word of a `Value<'h>` names a live cell; its kind is immutable.
        unsafe { WeakRef::downcast(cell) }
    }
}

impl<'h> From<WeakRef<'h>> for Value<'h> {
    fn from(w: WeakRef<'h>) -> Self {
        w.value()
    }
}

/// Allocates a weak reference to `target` through `cache`.
pub(crate) fn alloc_weak_ref<'h>(
    heap: &'h HeapShared,
    cache: &LocalCache,
    target: Obj<'h>,
) -> Result<WeakRef<'h>, Error> {
    if target.heap_tag() != (heap as *const HeapShared).cast() {
        return Err(Error::ForeignHeap);
    }
    let p = heap
        .slab
        .alloc_cell(cache, WEAK_REF_CLASS)
        .ok_or(Error::OutOfMemory)?;
    let cell = WeakCell {
        header: CellHeader {
            kind: CELL_KIND_WEAK_REF,
            reserved: 0,
        },
        _pad: [0; 6],
        target: AtomicPtr::new(target.cell_ptr().as_ptr()),
    };
    // SAFETY: `p` is a fresh cell of at least 64 bytes, aligned to its size, owned by no one
    // else.
    unsafe { p.cast::<WeakCell>().as_ptr().write(cell) };
    // SAFETY: just initialized; alive for 'h.
    Ok(unsafe { WeakRef::from_cell(p) })
}

/// Clears the target of a live weak reference if the target is not marked; returns whether
/// it did.
///
/// # Safety
/// `cell` is a live weak-reference cell and the caller has exclusive access to its heap,
/// after marking.
pub(crate) unsafe fn clear_if_dead(cell: NonNull<u8>) -> bool {
    // SAFETY: contract.
    let w = unsafe { cell.cast::<WeakCell>().as_ref() };
    let t = w.target.load(Ordering::Relaxed);
    match NonNull::new(t) {
        // SAFETY: a non-null target is a live cell of this heap (contract).
        Some(t) if !unsafe { slab::is_marked(t.cast()) } => {
            w.target.store(ptr::null_mut(), Ordering::Relaxed);
            true
        }
        _ => false,
    }
}
