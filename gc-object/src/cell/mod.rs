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
//!   after the blocks it needs. Blocks only grow, slots are never reused, so a reader that
//!   saw a shape always finds its slot.
//! - Replaced blocks are not freed while mutators may still read them: they go on the
//!   object's retired list and are freed by the collector (which has exclusive access) or
//!   by the object's finalizer.
//! - Slots past the shape: an inline slot at or above the shape's `slot_count` is never
//!   read (not by readers, not by tracing) and may hold a stale word of the cell's previous
//!   occupant (or zero: fresh chunks are zeroed, so every word is initialized). A slot
//!   enters the shape only by an add, which stores the slot before it publishes the new
//!   shape, and `slot_count` never decreases (deletes keep it), so every slot a reader or
//!   the tracer can reach was written for this object.

pub(crate) mod gc;
pub(crate) mod shape;
pub(crate) mod value;

use core::alloc::Layout;
use core::marker::PhantomData;
use core::ptr::{self, NonNull};

use crate::key::PropertyKey;
use crate::slab::{self, SIZE_CLASSES, class_of};
use crate::sync::{AtomicPtr, AtomicU8, AtomicU32, Ordering, UnsafeCell, spin_wait};
use crate::{Error, NativeFn};

pub(crate) use shape::{Shape, ShapeTable};
pub use value::Value;
pub(crate) use value::{ADDRESS_LIMIT, AtomicWord, Word};

/// Bytes of the GC cell header (the cell kind and one reserved byte). Mark bits live in
/// the chunk's bitmap, not here, which is why the header is 2 bytes instead of the seed's
/// 32; the bytes saved became inline slots.
pub const HEADER_BYTES: usize = 2;

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
/// Bytes of the cold state (attributes, accessors, sparse length, owner thread, native
/// function); fits the 256-byte class.
pub const COLD_STATE_BYTES: usize = core::mem::size_of::<ColdState>();

/// Creation-time behaviour tag: the object is an array.
pub(crate) const TAG_ARRAY: u16 = 1 << 0;
/// Creation-time behaviour tag: the object is a (native) function.
pub(crate) const TAG_FUNCTION: u16 = 1 << 1;

/// `side` flag: the cold state restricts the object to one thread.
pub(crate) const SIDE_RESTRICTED: u8 = 1 << 0;
/// `side` flag: the cold state has attribute or accessor entries.
pub(crate) const SIDE_ENTRIES: u8 = 1 << 1;

const CELL_KIND_OBJECT: u8 = 1;

#[repr(C)]
struct CellHeader {
    kind: u8,
    reserved: u8,
}

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
    header: CellHeader,
    tags: u16,
    lock: AtomicU8,
    extensible: AtomicU8,
    integrity: AtomicU8,
    side: AtomicU8,
    shape: AtomicPtr<Shape>,
    #[cfg(not(feature = "wide-object"))]
    storage: AtomicPtr<StorageState>,
    #[cfg(feature = "wide-object")]
    storage: StorageState,
    proto: AtomicPtr<ObjectCell>,
    slots: [AtomicWord; INLINE_SLOTS],
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
    const_assert!(STORAGE_STATE_BYTES == 32);
    const_assert!(class_of(STORAGE_STATE_BYTES).is_some());
}

/// The lazily installed wrapper behind the storage pointer.
#[repr(C)]
pub(crate) struct StorageState {
    cold: AtomicPtr<ColdState>,
    slots: AtomicPtr<BlockHeader>,
    elems: AtomicPtr<BlockHeader>,
    /// Replaced blocks (under the object lock, or exclusive).
    retired: UnsafeCell<*mut BlockHeader>,
}

impl StorageState {
    fn empty() -> StorageState {
        StorageState {
            cold: AtomicPtr::new(ptr::null_mut()),
            slots: AtomicPtr::new(ptr::null_mut()),
            elems: AtomicPtr::new(ptr::null_mut()),
            retired: UnsafeCell::new(ptr::null_mut()),
        }
    }
}

const BLOCK_SLOTS: u8 = 1;
const BLOCK_ELEMS: u8 = 2;
const BLOCK_COLD: u8 = 3;
const BLOCK_ENTRIES: u8 = 4;

/// Header of every side block (allocated with `Layout(bytes, 8)`).
#[repr(C)]
struct BlockHeader {
    retired_next: UnsafeCell<*mut BlockHeader>,
    bytes: usize,
    kind: u8,
    /// Capacity in items (slots, elements, entries).
    cap: u32,
    /// Dense length (elements only).
    len: AtomicU32,
}

const BLOCK_ALIGN: usize = 8;
const BLOCK_HEAD: usize = core::mem::size_of::<BlockHeader>().next_multiple_of(BLOCK_ALIGN);

/// Cold state: an immutable snapshot, replaced as a whole (copy on write) under the lock.
#[repr(C)]
pub(crate) struct ColdState {
    head: BlockHeader,
    owner: u64,
    sparse_length: u32,
    native: Option<NativeFn>,
    entries: *mut BlockHeader,
}

/// A property's non-default attributes or accessor pair, kept in cold state.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PropEntry<'h> {
    pub(crate) key: PropertyKey,
    pub(crate) attrs: u8,
    pub(crate) getter: Value<'h>,
    pub(crate) setter: Value<'h>,
}

#[repr(C)]
struct RawEntry {
    key: PropertyKey,
    attrs: u8,
    getter: Word,
    setter: Word,
}

/// What a new cold state should hold.
#[derive(Debug)]
pub(crate) struct ColdDraft<'h> {
    pub(crate) owner: u64,
    pub(crate) sparse_length: u32,
    pub(crate) native: Option<NativeFn>,
    pub(crate) entries: Vec<PropEntry<'h>>,
}

impl ColdState {
    pub(crate) fn owner(&self) -> u64 {
        self.owner
    }
    pub(crate) fn sparse_length(&self) -> u32 {
        self.sparse_length
    }
    pub(crate) fn native(&self) -> Option<NativeFn> {
        self.native
    }
    fn raw_entries(&self) -> &[RawEntry] {
        if self.entries.is_null() {
            return &[];
        }
        // SAFETY: an entries block holds `cap` initialized entries after its header; it is
        // immutable and lives as long as this cold state.
        let b = NonNull::new(self.entries).expect("checked above");
        // SAFETY: a live block header (immutable).
        let cap = unsafe { b.as_ref() }.cap as usize;
        // SAFETY: as above: `cap` initialized entries follow the header.
        unsafe { core::slice::from_raw_parts(block_items::<RawEntry>(b), cap) }
    }
    pub(crate) fn entry<'h>(&'h self, key: PropertyKey) -> Option<PropEntry<'h>> {
        self.raw_entries()
            .iter()
            .find(|e| e.key == key)
            .map(|e| PropEntry {
                key: e.key,
                attrs: e.attrs,
                // SAFETY: entry words were written from `Value<'h>`s of this heap and are traced.
                getter: unsafe { Value::from_word(e.getter) },
                // SAFETY: as above.
                setter: unsafe { Value::from_word(e.setter) },
            })
    }
    pub(crate) fn draft<'h>(&'h self) -> ColdDraft<'h> {
        ColdDraft {
            owner: self.owner,
            sparse_length: self.sparse_length,
            native: self.native,
            entries: self
                .raw_entries()
                .iter()
                .map(|e| PropEntry {
                    key: e.key,
                    attrs: e.attrs,
                    // SAFETY: as in `entry`.
                    getter: unsafe { Value::from_word(e.getter) },
                    // SAFETY: as in `entry`.
                    setter: unsafe { Value::from_word(e.setter) },
                })
                .collect(),
        }
    }
}

impl ColdDraft<'_> {
    pub(crate) fn empty() -> Self {
        ColdDraft {
            owner: 0,
            sparse_length: 0,
            native: None,
            entries: Vec::new(),
        }
    }
}

fn alloc_block(
    raw: &dyn slab::RawAlloc,
    kind: u8,
    item: usize,
    cap: u32,
) -> Result<NonNull<BlockHeader>, Error> {
    let bytes = (cap as usize)
        .checked_mul(item)
        .and_then(|b| b.checked_add(BLOCK_HEAD))
        .ok_or(Error::OutOfMemory)?;
    let layout = Layout::from_size_align(bytes, BLOCK_ALIGN).map_err(|_| Error::OutOfMemory)?;
    let p = raw
        .alloc(layout)
        .ok_or(Error::OutOfMemory)?
        .cast::<BlockHeader>();
    // SAFETY: fresh allocation of at least `BLOCK_HEAD` bytes, aligned 8.
    unsafe {
        p.as_ptr().write(BlockHeader {
            retired_next: UnsafeCell::new(ptr::null_mut()),
            bytes,
            kind,
            cap,
            len: AtomicU32::new(0),
        })
    };
    Ok(p)
}

/// Frees a side block (and, for cold state, its entries).
///
/// # Safety
/// `b` is a block of `raw` that no one can read any more.
unsafe fn free_block(raw: &dyn slab::RawAlloc, b: NonNull<BlockHeader>) {
    // SAFETY: `b` is a live block (contract).
    let head = unsafe { b.as_ref() };
    let (bytes, kind) = (head.bytes, head.kind);
    if kind == BLOCK_COLD {
        // SAFETY: cold blocks are `ColdState`s.
        let entries = unsafe { b.cast::<ColdState>().as_ref().entries };
        if let Some(e) = NonNull::new(entries) {
            // SAFETY: the entries block belongs to this cold state only.
            unsafe { free_block(raw, e) };
        }
    }
    let layout = Layout::from_size_align(bytes, BLOCK_ALIGN).expect("block layout");
    // SAFETY: allocated by `alloc_block`/`replace_cold` with this layout (contract).
    unsafe { raw.dealloc(b.cast(), layout) };
}

fn block_items<T>(b: NonNull<BlockHeader>) -> *mut T {
    // Items follow the header inside the same allocation.
    b.as_ptr().cast::<u8>().wrapping_add(BLOCK_HEAD).cast::<T>()
}

/// Dense elements, as seen by a reader.
#[derive(Clone, Copy)]
pub(crate) struct Elements<'h> {
    block: NonNull<BlockHeader>,
    _h: PhantomData<&'h ()>,
}

impl<'h> Elements<'h> {
    fn head(&self) -> &'h BlockHeader {
        // SAFETY: element blocks stay alive while their heap is borrowed (retired blocks are
        // freed only with exclusive access).
        unsafe { &*self.block.as_ptr() }
    }
    pub(crate) fn len(&self) -> u32 {
        self.head().len.load(Ordering::Acquire)
    }
    pub(crate) fn cap(&self) -> u32 {
        self.head().cap
    }
    fn item(&self, i: u32) -> &'h AtomicWord {
        debug_assert!(i < self.cap());
        // SAFETY: `i < cap`, and `cap` items were initialized when the block was made.
        unsafe { &*block_items::<AtomicWord>(self.block).wrapping_add(i as usize) }
    }
    /// Element `i`, `None` for a hole or out of range.
    pub(crate) fn get(&self, i: u32) -> Option<Value<'h>> {
        if i >= self.len() {
            return None;
        }
        let w = self.item(i).load(Ordering::Acquire);
        // SAFETY: element words are values of this heap, traced by the collector.
        (!w.is_hole()).then(|| unsafe { Value::from_word(w) })
    }
}

/// A reference to an object of a heap borrowed for `'h`. `Copy`, 8 bytes, `Send + Sync`.
///
/// Holding an `Obj<'h>` borrows the heap, so the heap cannot collect (`collect` takes
/// `&mut Heap`) while it is in use; keep an object across a collection with a
/// [`Root`](crate::Root).
#[derive(Clone, Copy)]
pub struct Obj<'h> {
    cell: NonNull<ObjectCell>,
    _heap: PhantomData<&'h crate::Heap>,
}

const _: () = assert!(core::mem::size_of::<Obj<'static>>() == core::mem::size_of::<usize>());
const _: () =
    assert!(core::mem::size_of::<Option<Obj<'static>>>() == core::mem::size_of::<usize>());

// SAFETY: every field of a cell is an atomic, immutable, or written under the cell's lock.
unsafe impl Send for Obj<'_> {}
// SAFETY: as for `Send`.
unsafe impl Sync for Obj<'_> {}

impl PartialEq for Obj<'_> {
    fn eq(&self, o: &Self) -> bool {
        self.cell == o.cell
    }
}
impl Eq for Obj<'_> {}

impl core::fmt::Debug for Obj<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "Obj@{:p}", self.cell)
    }
}

/// Holds an object's one-byte lock.
pub(crate) struct Locked<'h> {
    obj: Obj<'h>,
}

impl Drop for Locked<'_> {
    fn drop(&mut self) {
        self.obj.c().lock.store(0, Ordering::Release);
    }
}

impl<'h> Obj<'h> {
    /// # Safety
    /// `cell` is a live, initialized object cell of a heap borrowed for `'h`.
    #[inline]
    pub(crate) unsafe fn from_cell(cell: NonNull<ObjectCell>) -> Obj<'h> {
        Obj {
            cell,
            _heap: PhantomData,
        }
    }

    #[inline]
    fn c(&self) -> &'h ObjectCell {
        // SAFETY: type invariant: the cell is alive and initialized for `'h`.
        unsafe { &*self.cell.as_ptr() }
    }

    pub(crate) fn cell_ptr(self) -> NonNull<ObjectCell> {
        self.cell
    }

    /// This object as a value.
    #[inline]
    pub fn value(self) -> Value<'h> {
        // SAFETY: the word names this live cell.
        unsafe { Value::from_word(Word::from_cell(self.cell)) }
    }

    /// The heap (shared part) this object belongs to.
    #[inline]
    pub(crate) fn heap(self) -> &'h crate::heap::HeapShared {
        // SAFETY: the cell is live (type invariant); its chunk's owner is the `HeapShared`
        // of the heap borrowed for `'h`, which does not move (it sits in the heap's `Arc`).
        unsafe { &*self.heap_tag().cast::<crate::heap::HeapShared>() }
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
    fn storage(self) -> Option<&'h StorageState> {
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
    pub fn has_side_state(self) -> bool {
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

    /// The cold state snapshot.
    #[inline]
    pub(crate) fn cold(self) -> Option<&'h ColdState> {
        let s = self.storage()?;
        let p = s.cold.load(Ordering::Acquire);
        // SAFETY: cold snapshots stay alive while the heap is borrowed (retired ones are
        // freed only with exclusive access).
        (!p.is_null()).then(|| unsafe { &*p })
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
            spin_wait(round);
            round = round.saturating_add(1);
        }
        Locked { obj: self }
    }
}

impl<'h> Locked<'h> {
    pub(crate) fn obj(&self) -> Obj<'h> {
        self.obj
    }

    pub(crate) fn set_shape(&self, s: &'h Shape) {
        self.obj
            .c()
            .shape
            .store(s as *const Shape as *mut Shape, Ordering::Release);
    }
    pub(crate) fn set_proto(&self, p: Option<Obj<'h>>) {
        let raw = p.map_or(ptr::null_mut(), |o| o.cell.as_ptr());
        self.obj.c().proto.store(raw, Ordering::Release);
    }
    pub(crate) fn set_not_extensible(&self) {
        self.obj.c().extensible.store(0, Ordering::Release);
    }
    pub(crate) fn set_integrity(&self, level: u8) {
        self.obj.c().integrity.store(level, Ordering::Release);
    }
    pub(crate) fn set_side(&self, side: u8) {
        self.obj.c().side.store(side, Ordering::Release);
    }

    /// Writes slot `i`; the slot must exist (`ensure_slots`).
    pub(crate) fn store_slot(&self, i: u32, v: Value<'h>) {
        let i = i as usize;
        if i < INLINE_SLOTS {
            self.obj.c().slots[i].store(v.word, Ordering::Release);
            return;
        }
        let s = self
            .obj
            .storage()
            .expect("gc-object: external slot without storage");
        let b = NonNull::new(s.slots.load(Ordering::Acquire))
            .expect("gc-object: external slot without block");
        let j = i - INLINE_SLOTS;
        // SAFETY: the block is live; its header is immutable.
        let cap = unsafe { b.as_ref() }.cap as usize;
        assert!(j < cap, "gc-object: slot {i} beyond capacity");
        // SAFETY: `j < cap`; slots are initialized.
        unsafe { &*block_items::<AtomicWord>(b).wrapping_add(j) }.store(v.word, Ordering::Release);
    }

    fn retire(&self, s: &StorageState, b: NonNull<BlockHeader>) {
        s.retired.with_mut(|head| {
            // SAFETY: the retired list is only touched under the object lock (held) or with
            // exclusive access. Readers never read `retired_next`.
            let prev = unsafe { core::mem::replace(&mut *head, b.as_ptr()) };
            // SAFETY: `b` is live; its link is only touched under the lock or exclusively.
            unsafe { b.as_ref() }.retired_next.with_mut(|n| {
                // SAFETY: as above.
                unsafe { *n = prev }
            });
        });
    }

    /// Starts a side-state change: blocks are allocated into the transaction first and
    /// published together by [`Txn::commit`], so a failed allocation changes nothing.
    pub(crate) fn txn<'g>(&'g self, raw: &'h dyn slab::RawAlloc) -> Txn<'g, 'h> {
        Txn {
            g: self,
            raw,
            slots: None,
            elems: None,
            cold: None,
        }
    }

    /// Makes sure slots `0..count` exist (a transaction of one step).
    pub(crate) fn ensure_slots(
        &self,
        raw: &'h dyn slab::RawAlloc,
        count: u32,
    ) -> Result<(), Error> {
        let mut t = self.txn(raw);
        t.slots(count)?;
        t.commit()
    }

    /// Replaces the cold state by `draft` (a transaction of one step).
    pub(crate) fn replace_cold(
        &self,
        raw: &'h dyn slab::RawAlloc,
        draft: &ColdDraft<'h>,
    ) -> Result<(), Error> {
        let mut t = self.txn(raw);
        t.cold(draft)?;
        t.commit()
    }

    /// Makes sure element capacity is at least `min_cap` (a transaction of one step).
    pub(crate) fn ensure_elements(
        &self,
        raw: &'h dyn slab::RawAlloc,
        min_cap: u32,
    ) -> Result<Elements<'h>, Error> {
        let mut t = self.txn(raw);
        t.elements(min_cap)?;
        t.commit()?;
        Ok(self.obj.elements().expect("elements just ensured"))
    }

    /// Writes element `i` (< capacity) and raises the dense length to cover it.
    pub(crate) fn store_element(&self, e: Elements<'h>, i: u32, v: Value<'h>) {
        e.item(i).store(v.word, Ordering::Release);
        if i >= e.len() {
            e.head().len.store(i + 1, Ordering::Release);
        }
    }

    /// Makes element `i` a hole (it stays within the dense length).
    pub(crate) fn clear_element(&self, e: Elements<'h>, i: u32) {
        if i < e.cap() {
            e.item(i).store(Word::HOLE, Ordering::Release);
        }
    }

    /// Truncates the dense elements to `len` (holes beyond it).
    pub(crate) fn truncate_elements(&self, e: Elements<'h>, len: u32) {
        let old = e.len();
        for j in len..old {
            e.item(j).store(Word::HOLE, Ordering::Release);
        }
        if len < old {
            e.head().len.store(len, Ordering::Release);
        }
    }
}

/// Unpublished side blocks of one locked operation; freed on drop unless committed.
pub(crate) struct Txn<'g, 'h> {
    g: &'g Locked<'h>,
    raw: &'h dyn slab::RawAlloc,
    slots: Option<NonNull<BlockHeader>>,
    elems: Option<NonNull<BlockHeader>>,
    cold: Option<NonNull<BlockHeader>>,
}

impl<'h> Txn<'_, 'h> {
    /// Prepares slot capacity for slots `0..count` (one block allocation if it grows).
    pub(crate) fn slots(&mut self, count: u32) -> Result<(), Error> {
        let count = count as usize;
        if count <= INLINE_SLOTS {
            return Ok(());
        }
        let need = count - INLINE_SLOTS;
        let old = self
            .g
            .obj
            .storage()
            .and_then(|s| NonNull::new(s.slots.load(Ordering::Acquire)));
        // SAFETY: a live block; header immutable.
        let old_cap = old.map_or(0, |b| unsafe { b.as_ref() }.cap as usize);
        if old_cap >= need {
            return Ok(());
        }
        let cap = need.max(old_cap * 2).max(4);
        let cap = u32::try_from(cap).map_err(|_| Error::OutOfMemory)?;
        let nb = alloc_block(
            self.raw,
            BLOCK_SLOTS,
            core::mem::size_of::<AtomicWord>(),
            cap,
        )?;
        let items = block_items::<AtomicWord>(nb);
        for j in 0..cap as usize {
            let w = match old {
                // SAFETY: `j < old_cap`: an initialized slot of the old block.
                Some(o) if j < old_cap => unsafe { &*block_items::<AtomicWord>(o).wrapping_add(j) }
                    .load(Ordering::Relaxed),
                _ => Word::UNDEFINED,
            };
            // SAFETY: `j < cap`: inside the new block.
            unsafe { items.wrapping_add(j).write(AtomicWord::new(w)) };
        }
        if let Some(prev) = self.slots.replace(nb) {
            // SAFETY: unpublished block of this transaction.
            unsafe { free_block(self.raw, prev) };
        }
        Ok(())
    }

    /// Prepares element capacity of at least `min_cap` (one block allocation if it grows).
    pub(crate) fn elements(&mut self, min_cap: u32) -> Result<(), Error> {
        let old = self.g.obj.elements();
        let old_cap = old.map_or(0, |e| e.cap());
        if old.is_some() && old_cap >= min_cap {
            return Ok(());
        }
        let cap = min_cap.max(old_cap.saturating_mul(2)).max(4);
        let nb = alloc_block(
            self.raw,
            BLOCK_ELEMS,
            core::mem::size_of::<AtomicWord>(),
            cap,
        )?;
        let items = block_items::<AtomicWord>(nb);
        let len = old.map_or(0, |e| e.len());
        for j in 0..cap {
            let w = match old {
                Some(e) if j < len => e.item(j).load(Ordering::Relaxed),
                _ => Word::HOLE,
            };
            // SAFETY: `j < cap`: inside the new block.
            unsafe { items.wrapping_add(j as usize).write(AtomicWord::new(w)) };
        }
        // SAFETY: the new block is live and unpublished.
        unsafe { nb.as_ref() }.len.store(len, Ordering::Relaxed);
        if let Some(prev) = self.elems.replace(nb) {
            // SAFETY: unpublished block of this transaction.
            unsafe { free_block(self.raw, prev) };
        }
        Ok(())
    }

    /// Prepares a new cold state (entries block if any, then the cold state).
    pub(crate) fn cold(&mut self, draft: &ColdDraft<'h>) -> Result<(), Error> {
        let n = u32::try_from(draft.entries.len()).map_err(|_| Error::OutOfMemory)?;
        let entries = if n == 0 {
            None
        } else {
            let b = alloc_block(self.raw, BLOCK_ENTRIES, core::mem::size_of::<RawEntry>(), n)?;
            let items = block_items::<RawEntry>(b);
            for (j, e) in draft.entries.iter().enumerate() {
                let raw = RawEntry {
                    key: e.key,
                    attrs: e.attrs,
                    getter: e.getter.word,
                    setter: e.setter.word,
                };
                // SAFETY: `j < n == cap`.
                unsafe { items.wrapping_add(j).write(raw) };
            }
            Some(b)
        };
        let layout = Layout::new::<ColdState>();
        let Some(cp) = self.raw.alloc(layout) else {
            if let Some(b) = entries {
                // SAFETY: never published.
                unsafe { free_block(self.raw, b) };
            }
            return Err(Error::OutOfMemory);
        };
        let cp = cp.cast::<ColdState>();
        let cold = ColdState {
            head: BlockHeader {
                retired_next: UnsafeCell::new(ptr::null_mut()),
                bytes: layout.size(),
                kind: BLOCK_COLD,
                cap: 0,
                len: AtomicU32::new(0),
            },
            owner: draft.owner,
            sparse_length: draft.sparse_length,
            native: draft.native,
            entries: entries.map_or(ptr::null_mut(), |b| b.as_ptr()),
        };
        // SAFETY: fresh allocation with the layout of `ColdState`.
        unsafe { cp.as_ptr().write(cold) };
        if let Some(prev) = self.cold.replace(cp.cast()) {
            // SAFETY: unpublished block of this transaction.
            unsafe { free_block(self.raw, prev) };
        }
        Ok(())
    }

    /// Installs the storage wrapper if needed (the last allocation), then publishes every
    /// prepared block with release stores and retires the blocks they replace.
    pub(crate) fn commit(mut self) -> Result<(), Error> {
        if self.slots.is_none() && self.elems.is_none() && self.cold.is_none() {
            return Ok(());
        }
        let s = match self.g.obj.storage() {
            Some(s) => s,
            None => self.install_storage()?,
        };
        // SAFETY: the cell is live (type invariant of `Obj`).
        unsafe { slab::note_side_state(self.g.obj.cell.cast()) };
        if let Some(b) = self.slots.take() {
            let old = s.slots.swap(b.as_ptr(), Ordering::AcqRel);
            if let Some(o) = NonNull::new(old) {
                self.g.retire(s, o);
            }
        }
        if let Some(b) = self.elems.take() {
            let old = s.elems.swap(b.as_ptr(), Ordering::AcqRel);
            if let Some(o) = NonNull::new(old) {
                self.g.retire(s, o);
            }
        }
        if let Some(b) = self.cold.take() {
            let old = s.cold.swap(b.cast().as_ptr(), Ordering::AcqRel);
            if let Some(o) = NonNull::new(old) {
                self.g.retire(s, o.cast());
            }
        }
        Ok(())
    }

    #[cfg(feature = "wide-object")]
    fn install_storage(&self) -> Result<&'h StorageState, Error> {
        unreachable!("wide objects always have storage")
    }

    /// Allocates and publishes the storage wrapper (first installation; the one-byte lock
    /// is held, so exactly one wrapper is ever installed).
    #[cfg(not(feature = "wide-object"))]
    fn install_storage(&self) -> Result<&'h StorageState, Error> {
        let layout = Layout::new::<StorageState>();
        let p = self
            .raw
            .alloc(layout)
            .ok_or(Error::OutOfMemory)?
            .cast::<StorageState>();
        // SAFETY: fresh allocation with the layout of `StorageState`.
        unsafe { p.as_ptr().write(StorageState::empty()) };
        // Release: a reader that sees the pointer sees the initialized wrapper.
        self.g.obj.c().storage.store(p.as_ptr(), Ordering::Release);
        // SAFETY: just published; lives until finalization.
        Ok(unsafe { &*p.as_ptr() })
    }
}

impl Drop for Txn<'_, '_> {
    fn drop(&mut self) {
        for b in [self.slots.take(), self.elems.take(), self.cold.take()]
            .into_iter()
            .flatten()
        {
            // SAFETY: never published (commit takes what it publishes).
            unsafe { free_block(self.raw, b) };
        }
    }
}

/// Writes a fresh object into `cell` (the literal fast path: the prepared shape is one
/// store, the values go straight into inline slots).
///
/// # Safety
/// `cell` is a fresh, exclusively owned cell of `OBJECT_CLASS_BYTES` bytes of a heap
/// borrowed for `'h`; `shape` belongs to that heap and has `slot_count() <= INLINE_SLOTS`;
/// `values.len() <= shape.slot_count()`.
#[inline]
pub(crate) unsafe fn init_object<'h>(
    cell: NonNull<u8>,
    shape: &'h Shape,
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
    unsafe { field!(side, AtomicU8).write(AtomicU8::new(0)) };
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
    let proto = AtomicPtr::new(proto.map_or(ptr::null_mut(), |o| o.cell.as_ptr()));
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
        (shape.slot_count() as usize).min(INLINE_SLOTS)
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

fn walk_retired(raw: &dyn slab::RawAlloc, s: &StorageState) {
    s.retired.with_mut(|head| {
        // SAFETY: exclusive access (collector or finalizer): no reader can hold a retired
        // block any more.
        let mut p = unsafe { core::mem::replace(&mut *head, ptr::null_mut()) };
        while let Some(b) = NonNull::new(p) {
            // SAFETY: `b` is a live retired block.
            p = unsafe { b.as_ref() }.retired_next.with(|n| unsafe { *n });
            // SAFETY: retired and unreachable by readers (exclusive access).
            unsafe { free_block(raw, b) };
        }
    });
}

/// Calls `visit` on every value word an object references, and frees its retired blocks.
///
/// # Safety
/// `cell` is a live object cell; the caller has exclusive access to its heap.
pub(crate) unsafe fn trace(
    cell: NonNull<ObjectCell>,
    raw: &dyn slab::RawAlloc,
    visit: &mut dyn FnMut(NonNull<ObjectCell>),
) {
    // SAFETY: live (contract).
    let c = unsafe { cell.as_ref() };
    if let Some(p) = NonNull::new(c.proto.load(Ordering::Relaxed)) {
        visit(p);
    }
    let mut word = |w: Word| {
        if w.is_object() {
            // SAFETY: object words hold non-null cell addresses.
            visit(unsafe { NonNull::new_unchecked(w.cell()) });
        }
    };
    // Only the slots the shape covers hold values of this object (see "Slots past the
    // shape" in the module docs); the shape is not changing (exclusive access).
    let shape = c.shape.load(Ordering::Relaxed);
    // SAFETY: the shape of a live object belongs to its heap, which outlives this call.
    let used = (unsafe { &*shape }.slot_count() as usize).min(INLINE_SLOTS);
    for s in &c.slots[..used] {
        word(s.load(Ordering::Relaxed));
    }
    // SAFETY: live (contract).
    let obj = unsafe { Obj::from_cell(cell) };
    let Some(s) = obj.storage() else { return };
    walk_retired(raw, s);
    if let Some(b) = NonNull::new(s.slots.load(Ordering::Relaxed)) {
        // SAFETY: live block with `cap` initialized slots.
        let cap = unsafe { b.as_ref().cap };
        for j in 0..cap as usize {
            // SAFETY: `j < cap`.
            word(unsafe { &*block_items::<AtomicWord>(b).wrapping_add(j) }.load(Ordering::Relaxed));
        }
    }
    if let Some(e) = obj.elements() {
        for j in 0..e.len() {
            word(e.item(j).load(Ordering::Relaxed));
        }
    }
    if let Some(cold) = obj.cold() {
        for e in cold.raw_entries() {
            word(e.getter);
            word(e.setter);
        }
    }
}

/// Frees an object's side state. Returns whether it had any (a dead object without side
/// state needs no finalizer work).
///
/// # Safety
/// `cell` is an object cell that is dead (unreachable) and the caller has exclusive access.
pub(crate) unsafe fn finalize(cell: NonNull<ObjectCell>, raw: &dyn slab::RawAlloc) -> bool {
    // SAFETY: the cell is still initialized (contract).
    let obj = unsafe { Obj::from_cell(cell) };
    if !obj.has_side_state() {
        return false;
    }
    let s = obj.storage().expect("side state");
    walk_retired(raw, s);
    for p in [
        s.slots.load(Ordering::Relaxed),
        s.elems.load(Ordering::Relaxed),
        s.cold.load(Ordering::Relaxed).cast(),
    ] {
        if let Some(b) = NonNull::new(p) {
            // SAFETY: owned by this dead object only.
            unsafe { free_block(raw, b) };
        }
    }
    #[cfg(not(feature = "wide-object"))]
    {
        let p = obj.c().storage.load(Ordering::Relaxed);
        // SAFETY: allocated in `storage_or_install` with this layout; the object is dead.
        let p = NonNull::new(p).expect("side state implies storage");
        // SAFETY: allocated in `storage_or_install` with this layout; the object is dead.
        unsafe { raw.dealloc(p.cast(), Layout::new::<StorageState>()) };
    }
    true
}
