//! The object cell: its fields, the compile-time proofs of its size and offsets, `Obj`
//! (the object kind of the generic handle; every field read goes through it) and the
//! one-byte lock.

use core::marker::PhantomData;
use core::ptr::{self, NonNull};

use super::dict::Dict;
use super::gc::{Gc, Kind};
use super::header::{CELL_KIND_OBJECT, CellHeader, HEADER_BYTES};
use super::shared::HeapShared;
use super::side::{ColdState, Elements, StorageState, block_items};
use super::txn::Locked;
use super::{AtomicWord, Shape, Value, Word};
use crate::key::Key;
use crate::slab::{self, SIZE_CLASSES, class_of};
use crate::sync::{AtomicPtr, AtomicU8, Ordering, spin_wait};

/// Inline property slots of an object (the first `INLINE_SLOTS` named properties need no
/// allocation besides the cell). 12 on 64-bit, 13 on 32-bit (smaller pointers).
#[cfg(all(target_pointer_width = "64", not(loom)))]
pub const INLINE_SLOTS: usize = 12;
/// Inline property slots of an object (13 on 32-bit targets).
#[cfg(all(not(target_pointer_width = "64"), not(loom)))]
pub const INLINE_SLOTS: usize = 13;
/// Inline property slots (shrunk under loom so the spill path is reached in few steps).
#[cfg(loom)]
pub const INLINE_SLOTS: usize = 2;

/// Bytes of one object cell (header + payload): 128 (the 128-byte class), or with the
/// `wide-object` feature the "before" layout with its side state inline.
pub const CELL_BYTES: usize = core::mem::size_of::<ObjectCell>();
/// Bytes of the object after its header.
pub const OBJECT_PAYLOAD_BYTES: usize = CELL_BYTES - HEADER_BYTES;
/// Index into [`SIZE_CLASSES`] of the class object cells are allocated from.
pub const OBJECT_CLASS: usize = match class_of(CELL_BYTES) {
    Some(c) => c,
    None => panic!("object cell larger than the largest slab class"),
};
/// Bytes of the slab class object cells are allocated from.
pub const OBJECT_CLASS_BYTES: usize = SIZE_CLASSES[OBJECT_CLASS];
/// Bytes of the lazily installed storage wrapper (inline in the cell with `wide-object`).
pub const STORAGE_STATE_BYTES: usize = core::mem::size_of::<StorageState>();
/// Bytes of the cold state (attributes, accessors, owner thread, native function or
/// closure and its environment); fits the 256-byte class.
pub const COLD_STATE_BYTES: usize = core::mem::size_of::<ColdState>();

/// Creation-time behaviour tag: the object is an array.
pub(crate) const TAG_ARRAY: u16 = 1 << 0;
/// Creation-time behaviour tag: the object is a (native) function.
pub(crate) const TAG_FUNCTION: u16 = 1 << 1;

/// `side` flag: the cold state restricts the object to one thread.
pub(crate) const SIDE_RESTRICTED: u8 = 1 << 0;
/// `side` flag: the cold state has attribute or accessor entries.
pub(crate) const SIDE_ENTRIES: u8 = 1 << 1;
/// `side` flag: the named properties are in a dictionary (dictionary mode), not the shape.
pub(crate) const SIDE_DICT: u8 = 1 << 2;
/// `side` flag: the object is an array (a copy of `TAG_ARRAY`, set at creation, so that
/// the fast paths test one byte: `side == 0` is a plain object without side flags).
pub(crate) const SIDE_ARRAY: u8 = 1 << 3;

/// The object cell.
///
/// ```text
/// 64-bit                                   32-bit
/// off size field                           off size
///   0   1  kind          (GC header)        0   1
///   1   1  reserved      (GC header)        1   1
///   2   2  tags: u16     creation-time      2   2
///   4   1  lock          one-byte lock      4   1
///   5   1  extensible    mutable flag       5   1
///   6   1  integrity     0 / sealed / frozen 6  1
///   7   1  side          restricted/entries 7   1
///   8   8  shape         *const Shape       8   4
///  16   8  storage       *StorageState     12   4   (wide-object: StorageState inline)
///  24   8  proto         *ObjectCell       16   4
///  32  96  slots[12]     8-byte values     24 104  slots[13]
/// 128      total                           128
/// ```
#[repr(C)]
pub(crate) struct ObjectCell {
    pub(super) header: CellHeader,
    pub(super) tags: u16,
    pub(super) lock: AtomicU8,
    pub(super) extensible: AtomicU8,
    pub(super) integrity: AtomicU8,
    pub(super) side: AtomicU8,
    pub(super) shape: AtomicPtr<Shape>,
    #[cfg(not(feature = "wide-object"))]
    pub(super) storage: AtomicPtr<StorageState>,
    #[cfg(feature = "wide-object")]
    pub(super) storage: StorageState,
    pub(super) proto: AtomicPtr<ObjectCell>,
    pub(super) slots: [AtomicWord; INLINE_SLOTS],
}

#[cfg(all(not(loom), not(feature = "wide-object")))]
mod layout_proofs {
    use super::*;
    use static_assertions::const_assert_eq;
    const_assert_eq!(core::mem::size_of::<ObjectCell>(), 128);
    const_assert_eq!(CELL_BYTES, 128);
    const_assert_eq!(OBJECT_CLASS_BYTES, 128);
    const_assert_eq!(core::mem::offset_of!(ObjectCell, tags), HEADER_BYTES);
    const_assert_eq!(core::mem::offset_of!(ObjectCell, shape), 8);
    const_assert_eq!(
        core::mem::offset_of!(ObjectCell, slots) + INLINE_SLOTS * 8,
        CELL_BYTES
    );
    #[cfg(target_pointer_width = "64")]
    const_assert_eq!(core::mem::offset_of!(ObjectCell, slots), 32);
    #[cfg(target_pointer_width = "32")]
    const_assert_eq!(core::mem::offset_of!(ObjectCell, slots), 24);
}

#[cfg(all(not(loom), feature = "wide-object"))]
mod layout_proofs {
    use super::*;
    use static_assertions::const_assert;
    // The "before" layout: side state inline, the cell no longer fits 128 bytes.
    const_assert!(CELL_BYTES > 128 && CELL_BYTES <= 256);
    #[cfg(target_pointer_width = "64")]
    const_assert!(CELL_BYTES == 176);
    const_assert!(OBJECT_CLASS_BYTES == 256);
}

#[cfg(not(loom))]
mod side_proofs {
    use super::*;
    use static_assertions::const_assert;
    const_assert!(INLINE_SLOTS >= 4);
    const_assert!(COLD_STATE_BYTES <= 256);
    const_assert!(matches!(class_of(COLD_STATE_BYTES), Some(c) if SIZE_CLASSES[c] <= 256));
    #[cfg(target_pointer_width = "64")]
    const_assert!(STORAGE_STATE_BYTES == 56);
    #[cfg(target_pointer_width = "64")]
    const_assert!(COLD_STATE_BYTES == 72);
    const_assert!(class_of(STORAGE_STATE_BYTES).is_some());
}

/// The index of an inline slot: always below [`INLINE_SLOTS`], so [`Obj::inline_slot`]
/// reads it without a bounds check (what a property cache keeps for its fast path).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct InlineSlot(u8);

const _: () = assert!(INLINE_SLOTS <= u8::MAX as usize);

impl InlineSlot {
    /// Slot `i`, if it is an inline slot.
    #[inline]
    pub(crate) fn new(i: u32) -> Option<InlineSlot> {
        ((i as usize) < INLINE_SLOTS).then_some(InlineSlot(i as u8))
    }
}

/// The kind of an object cell: [`Obj<'h>`](Obj) is `Gc<'h, ObjectKind>`.
#[derive(Debug)]
pub enum ObjectKind {}

// SAFETY: every object cell starts with a header of kind `CELL_KIND_OBJECT`
// (`init_object`); every field of it is an atomic, immutable, or written under the cell's
// lock.
unsafe impl Kind for ObjectKind {
    const KIND: u8 = CELL_KIND_OBJECT;
    const NAME: &'static str = "Obj";
}

/// A reference to an object of a heap borrowed for `'h`. `Copy`, 8 bytes, `Send + Sync`;
/// equal when it is the same object.
///
/// Holding an `Obj<'h>` borrows the heap, so the heap cannot collect (`collect` takes
/// `&mut Heap`) while it is in use; keep an object across a collection with a
/// [`Root`](crate::Root).
pub type Obj<'h> = Gc<'h, ObjectKind>;

impl<'h> Obj<'h> {
    #[inline]
    pub(super) fn c(&self) -> &'h ObjectCell {
        // SAFETY: type invariant: the cell is a live, initialized object cell for `'h`.
        unsafe { &*self.cell_ptr().as_ptr() }
    }

    #[inline]
    pub(crate) fn cell_ptr(self) -> NonNull<ObjectCell> {
        self.cell.cast()
    }

    /// This object as a value.
    #[inline]
    pub fn value(self) -> Value<'h> {
        // SAFETY: the word names this live cell.
        unsafe { Value::from_word(Word::from_cell(self.cell_ptr())) }
    }

    /// The heap (shared part) this object belongs to.
    #[inline]
    pub(crate) fn heap(self) -> &'h HeapShared {
        // SAFETY: the cell is live (type invariant); its chunk's owner is the `HeapShared`
        // of the heap borrowed for `'h`, which does not move (it sits in the heap's `Arc`).
        unsafe { &*self.heap_tag().cast::<HeapShared>() }
    }

    pub(crate) fn heap_tag(self) -> *const () {
        // SAFETY: the cell is live (type invariant).
        unsafe { slab::owner_of(self.cell.cast()) }
    }

    pub(crate) fn tags(self) -> u16 {
        self.c().tags
    }
    pub(crate) fn is_extensible_flag(self) -> bool {
        self.c().extensible.load(Ordering::Acquire) != 0
    }
    pub(crate) fn integrity(self) -> u8 {
        self.c().integrity.load(Ordering::Acquire)
    }
    #[inline]
    pub(crate) fn side(self) -> u8 {
        self.c().side.load(Ordering::Acquire)
    }

    /// The current shape.
    #[inline]
    pub(crate) fn shape(self) -> &'h Shape {
        // SAFETY: shapes live as long as their heap, which is borrowed for `'h`.
        unsafe { &*self.c().shape.load(Ordering::Acquire) }
    }

    /// The prototype.
    pub(crate) fn proto(self) -> Option<Obj<'h>> {
        let p = self.c().proto.load(Ordering::Acquire);
        // SAFETY: a prototype is a live object of the same heap (traced).
        NonNull::new(p).map(|c| unsafe { Obj::from_cell(c) })
    }

    #[inline]
    pub(super) fn storage(self) -> Option<&'h StorageState> {
        #[cfg(not(feature = "wide-object"))]
        {
            let p = self.c().storage.load(Ordering::Acquire);
            // SAFETY: an installed storage state lives until the object is finalized.
            (!p.is_null()).then(|| unsafe { &*p })
        }
        #[cfg(feature = "wide-object")]
        {
            Some(&self.c().storage)
        }
    }

    /// Does the object have any side state (storage wrapper or, inline, any block)?
    pub(crate) fn has_side_state_raw(self) -> bool {
        #[cfg(not(feature = "wide-object"))]
        {
            self.storage().is_some()
        }
        #[cfg(feature = "wide-object")]
        {
            let s = &self.c().storage;
            !s.cold.load(Ordering::Acquire).is_null()
                || !s.slots.load(Ordering::Acquire).is_null()
                || !s.elems.load(Ordering::Acquire).is_null()
                || !s.names.load(Ordering::Acquire).is_null()
                || !s.sparse.load(Ordering::Acquire).is_null()
        }
    }

    /// Slot `i` (which the current shape covers).
    #[inline]
    pub(crate) fn slot(self, i: u32) -> Value<'h> {
        let i = i as usize;
        let w = if i < INLINE_SLOTS {
            self.c().slots[i].load(Ordering::Acquire)
        } else {
            let Some(s) = self.storage() else {
                return Value::undefined();
            };
            let Some(b) = NonNull::new(s.slots.load(Ordering::Acquire)) else {
                return Value::undefined();
            };
            let j = i - INLINE_SLOTS;
            // SAFETY: the block is live ('h) and its header is immutable.
            if j >= unsafe { b.as_ref().cap } as usize {
                return Value::undefined();
            }
            // SAFETY: `j < cap`; all `cap` slots were initialized.
            unsafe { &*block_items::<AtomicWord>(b).wrapping_add(j) }.load(Ordering::Acquire)
        };
        // SAFETY: slot words are values of this heap, traced.
        unsafe { Value::from_word(w) }
    }

    /// Inline slot `s` (which the current shape covers): one load, no bounds check.
    #[inline(always)]
    pub(crate) fn inline_slot(self, s: InlineSlot) -> Value<'h> {
        // SAFETY: `s.0 < INLINE_SLOTS` (the invariant of `InlineSlot`).
        let w = unsafe { self.c().slots.get_unchecked(usize::from(s.0)) }.load(Ordering::Acquire);
        // SAFETY: slot words are values of this heap, traced.
        unsafe { Value::from_word(w) }
    }

    /// The value of the own named property `k` of an object in shape mode without side
    /// flags (the caller read `side == 0`): a scan of its shape's keys, then one load (an
    /// inline slot without a bounds test when every slot of the shape is inline).
    #[inline(always)]
    pub(crate) fn shape_get(self, k: Key) -> Option<Value<'h>> {
        let shape = self.shape();
        let keys = shape.keys();
        if keys.len() <= INLINE_SLOTS {
            let i = super::shape::find_key_16(keys, k.id())?;
            // `i < keys.len() <= INLINE_SLOTS`: an inline slot (the test is for the compiler).
            return Some(self.inline_slot(InlineSlot::new(i)?));
        }
        let slot = shape.lookup_past_inline(keys, k)?;
        Some(self.slot(slot))
    }

    /// The cold state snapshot.
    #[inline]
    pub(crate) fn cold(self) -> Option<&'h ColdState> {
        let s = self.storage()?;
        let p = s.cold.load(Ordering::Acquire);
        // SAFETY: cold snapshots stay alive while the heap is borrowed (retired ones are
        // freed only with exclusive access).
        (!p.is_null()).then(|| unsafe { &*p })
    }

    /// Is the object in dictionary mode?
    #[inline]
    pub(crate) fn is_dictionary(self) -> bool {
        self.side() & SIDE_DICT != 0
    }

    /// The named-property dictionary (dictionary mode).
    #[inline]
    pub(crate) fn names(self) -> Option<Dict<'h>> {
        let s = self.storage()?;
        let b = NonNull::new(s.names.load(Ordering::Acquire))?;
        // SAFETY: a published dictionary stays alive while the heap is borrowed.
        Some(unsafe { Dict::from_block(b) })
    }

    /// The named-property dictionary of an object whose `side` byte the caller read
    /// (acquire, through [`Obj::side`]) with [`SIDE_DICT`] set: the dictionary is published
    /// before that flag and stays until the object is finalized, so it needs no checks.
    #[inline]
    pub(crate) fn names_seen_dict(self) -> Dict<'h> {
        debug_assert!(self.names().is_some());
        #[cfg(not(feature = "wide-object"))]
        let s = {
            let p = self.c().storage.load(Ordering::Acquire);
            // SAFETY: `SIDE_DICT` is set (`Locked::enter_dictionary`) only after a commit
            // that installed the storage state and published the dictionary; the caller's
            // acquire load of `side` saw the flag, so it sees both; neither goes before the
            // object is finalized.
            unsafe { &*p }
        };
        #[cfg(feature = "wide-object")]
        let s = &self.c().storage;
        let b = s.names.load(Ordering::Acquire);
        // SAFETY: as above: published, so non-null.
        let b = unsafe { NonNull::new_unchecked(b) };
        // SAFETY: as above: a published dictionary, alive while the heap is borrowed.
        unsafe { Dict::from_block(b) }
    }

    /// The sparse elements.
    #[inline]
    pub(crate) fn sparse(self) -> Option<Dict<'h>> {
        let s = self.storage()?;
        let b = NonNull::new(s.sparse.load(Ordering::Acquire))?;
        // SAFETY: a published dictionary stays alive while the heap is borrowed.
        Some(unsafe { Dict::from_block(b) })
    }

    /// The array length floor kept in side state (0 without it).
    #[inline]
    pub(crate) fn length_floor(self) -> u32 {
        self.storage()
            .map_or(0, |s| s.length.load(Ordering::Acquire))
    }

    /// The dense elements.
    #[inline]
    pub(crate) fn elements(self) -> Option<Elements<'h>> {
        let s = self.storage()?;
        NonNull::new(s.elems.load(Ordering::Acquire)).map(|block| Elements {
            block,
            _h: PhantomData,
        })
    }

    /// Takes the object's lock.
    pub(crate) fn lock(self) -> Locked<'h> {
        let l = &self.c().lock;
        let mut round = 0;
        while l
            .compare_exchange_weak(0, 1, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            spin_wait(&mut round);
        }
        Locked { obj: self }
    }
}

/// Writes a fresh object into `cell` (the literal fast path: the prepared shape is one
/// store, the values go straight into inline slots).
///
/// # Safety
/// `cell` is a fresh, exclusively owned cell of `OBJECT_CLASS_BYTES` bytes of a heap
/// borrowed for `'h`; `shape` belongs to that heap and `used` is its `slot_count()`, at
/// most `INLINE_SLOTS`; `values.len() <= used`.
#[inline]
pub(crate) unsafe fn init_object<'h>(
    cell: NonNull<u8>,
    shape: &'h Shape,
    used: usize,
    proto: Option<Obj<'h>>,
    tags: u16,
    values: &[Value<'h>],
) -> Obj<'h> {
    debug_assert!(values.len() <= INLINE_SLOTS);
    let p = cell.cast::<ObjectCell>().as_ptr();
    // Field by field, in place (no temporary cell on the stack to copy).
    macro_rules! field {
        ($f:ident, $t:ty) => {
            p.cast::<u8>()
                .wrapping_add(core::mem::offset_of!(ObjectCell, $f))
                .cast::<$t>()
        };
    }
    let header = CellHeader {
        kind: CELL_KIND_OBJECT,
        reserved: 0,
    };
    // Every write below: `cell` is fresh, exclusively owned, large enough and aligned (slab
    // cells are aligned to their power-of-two size), so each field pointer is valid for a
    // write of its type.
    // SAFETY: as just said.
    unsafe { field!(header, CellHeader).write(header) };
    // SAFETY: as above.
    unsafe { field!(tags, u16).write(tags) };
    // SAFETY: as above.
    unsafe { field!(lock, AtomicU8).write(AtomicU8::new(0)) };
    // SAFETY: as above.
    unsafe { field!(extensible, AtomicU8).write(AtomicU8::new(1)) };
    // SAFETY: as above.
    unsafe { field!(integrity, AtomicU8).write(AtomicU8::new(0)) };
    // SAFETY: as above.
    let side = if tags & TAG_ARRAY != 0 { SIDE_ARRAY } else { 0 };
    // SAFETY: as above.
    unsafe { field!(side, AtomicU8).write(AtomicU8::new(side)) };
    let shape_word = AtomicPtr::new(shape as *const Shape as *mut Shape);
    // SAFETY: as above.
    unsafe { field!(shape, AtomicPtr<Shape>).write(shape_word) };
    #[cfg(not(feature = "wide-object"))]
    // SAFETY: as above.
    unsafe {
        field!(storage, AtomicPtr<StorageState>).write(AtomicPtr::new(ptr::null_mut()))
    };
    #[cfg(feature = "wide-object")]
    // SAFETY: as above.
    unsafe {
        field!(storage, StorageState).write(StorageState::empty())
    };
    let proto = AtomicPtr::new(proto.map_or(ptr::null_mut(), |o| o.cell_ptr().as_ptr()));
    // SAFETY: as above.
    unsafe { field!(proto, AtomicPtr<ObjectCell>).write(proto) };
    let slots = field!(slots, AtomicWord);
    let n = values.len().min(INLINE_SLOTS);
    for (i, v) in values[..n].iter().enumerate() {
        // SAFETY: as above; `i < n <= INLINE_SLOTS`.
        unsafe { slots.wrapping_add(i).write(AtomicWord::new(v.word)) };
    }
    // Only the slots the shape covers are written: the rest keep whatever word the cell
    // held (zero in a fresh chunk, a stale word in a reused cell) and are never read before
    // an add writes them (see "Slots past the shape" above), so a small object touches
    // only the first cache line of its cell.
    // (Under loom every slot is constructed: a loom atomic must be made before its first
    // store.)
    let used = if cfg!(loom) {
        INLINE_SLOTS
    } else {
        used.min(INLINE_SLOTS)
    };
    for i in n..used {
        // SAFETY: as above; `i < INLINE_SLOTS`.
        unsafe {
            slots
                .wrapping_add(i)
                .write(AtomicWord::new(Word::UNDEFINED))
        };
    }
    let p = NonNull::new(p).expect("slab cells are non-null");
    // SAFETY: every field was initialized above; alive for `'h` (contract).
    unsafe { Obj::from_cell(p) }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::super::testing::{heap, object, teardown};
    use super::*;
    use crate::slab::LocalCache;

    #[test]
    fn fresh_cells_start_plain_and_arrays_carry_their_flag() {
        let (h, _c) = heap();
        let cache = LocalCache::default();
        let o = object(&h, &cache, 0);
        assert_eq!(o.side(), 0);
        assert!(o.is_extensible_flag());
        assert_eq!(o.integrity(), 0);
        assert_eq!(o.storage().is_some(), cfg!(feature = "wide-object"));
        assert!(!o.has_side_state_raw());
        assert!(core::ptr::eq(o.shape(), h.shapes.root()));
        assert!(core::ptr::eq(o.heap(), &*h));
        assert!(o.proto().is_none());
        let a = object(&h, &cache, TAG_ARRAY);
        assert_eq!(a.side(), SIDE_ARRAY, "the fast paths see arrays in `side`");
        assert_eq!(a.tags(), TAG_ARRAY);
        assert_ne!(a, o);
        teardown(h, cache);
    }

    #[test]
    fn the_lock_byte_is_held_while_locked() {
        let (h, _c) = heap();
        let cache = LocalCache::default();
        let o = object(&h, &cache, 0);
        {
            let _g = o.lock();
            assert_eq!(o.c().lock.load(Ordering::Relaxed), 1);
        }
        assert_eq!(o.c().lock.load(Ordering::Relaxed), 0);
        teardown(h, cache);
    }
}
