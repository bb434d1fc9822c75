//! The side state behind the cell's storage pointer: the storage wrapper, side blocks
//! (external slots, elements, cold state, attribute entries) and their allocation.

use core::alloc::Layout;
use core::marker::PhantomData;
use core::ptr::{self, NonNull};

use super::host::HostRef;
use super::{AtomicWord, NativeFn, Value, Word};
use crate::error::Error;
use crate::key::PropertyKey;
use crate::slab;
use crate::sync::{AtomicPtr, AtomicU32, Ordering, UnsafeCell};

/// The lazily installed wrapper behind the storage pointer.
#[repr(C)]
pub(crate) struct StorageState {
    pub(super) cold: AtomicPtr<ColdState>,
    /// External slots (shape mode; frozen once the object is in dictionary mode, and freed
    /// by the next collection).
    pub(super) slots: AtomicPtr<BlockHeader>,
    /// Dense elements.
    pub(super) elems: AtomicPtr<BlockHeader>,
    /// Named properties in dictionary mode (a [`Dict`](super::dict::Dict) block).
    pub(super) names: AtomicPtr<BlockHeader>,
    /// Sparse elements (a [`Dict`](super::dict::Dict) block keyed by index).
    pub(super) sparse: AtomicPtr<BlockHeader>,
    /// Replaced blocks (under the object lock, or exclusive).
    pub(super) retired: UnsafeCell<*mut BlockHeader>,
    /// An array's `length` when it is more than the dense length (sparse elements, or a
    /// length set beyond the elements); written under the lock.
    pub(super) length: AtomicU32,
}

impl StorageState {
    pub(super) fn empty() -> StorageState {
        StorageState {
            cold: AtomicPtr::new(ptr::null_mut()),
            slots: AtomicPtr::new(ptr::null_mut()),
            elems: AtomicPtr::new(ptr::null_mut()),
            names: AtomicPtr::new(ptr::null_mut()),
            sparse: AtomicPtr::new(ptr::null_mut()),
            retired: UnsafeCell::new(ptr::null_mut()),
            length: AtomicU32::new(0),
        }
    }
}

pub(super) const BLOCK_SLOTS: u8 = 1;
pub(super) const BLOCK_ELEMS: u8 = 2;
pub(super) const BLOCK_COLD: u8 = 3;
pub(super) const BLOCK_ENTRIES: u8 = 4;

/// Header of every side block (allocated with `Layout(bytes, 8)`).
#[repr(C)]
pub(super) struct BlockHeader {
    pub(super) retired_next: UnsafeCell<*mut BlockHeader>,
    pub(super) bytes: usize,
    pub(super) kind: u8,
    /// Capacity in items (slots, elements, entries).
    pub(super) cap: u32,
    /// Dense length (elements only).
    pub(super) len: AtomicU32,
    /// Elements present, holes not counted (elements only; written under the lock).
    pub(super) count: AtomicU32,
}

pub(super) const BLOCK_ALIGN: usize = 8;
pub(super) const BLOCK_HEAD: usize =
    core::mem::size_of::<BlockHeader>().next_multiple_of(BLOCK_ALIGN);

/// Cold state: an immutable snapshot, replaced as a whole (copy on write) under the lock.
#[repr(C)]
pub(crate) struct ColdState {
    pub(super) head: BlockHeader,
    pub(super) owner: u64,
    pub(super) native: Option<NativeFn>,
    pub(super) entries: *mut BlockHeader,
    /// A native closure (`host::HostBox`, owned by the object: the same pointer is in every
    /// snapshot of its cold state, and only the object's finalization frees it), or null.
    pub(super) closure: *mut u8,
    /// The closure's environment: a value it keeps alive (traced with the object).
    pub(super) env: Word,
}

/// `PropEntry::attrs` bit of an accessor property (the other bits are the object layer's).
pub(crate) const ATTR_ACCESSOR: u8 = 8;

/// A property's non-default attributes or accessor pair, kept in cold state.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PropEntry<'h> {
    pub(crate) key: PropertyKey,
    pub(crate) attrs: u8,
    pub(crate) getter: Value<'h>,
    pub(crate) setter: Value<'h>,
}

#[repr(C)]
pub(super) struct RawEntry {
    pub(super) key: PropertyKey,
    pub(super) attrs: u8,
    pub(super) getter: Word,
    pub(super) setter: Word,
}

/// What a new cold state should hold.
#[derive(Debug)]
pub(crate) struct ColdDraft<'h> {
    pub(crate) owner: u64,
    pub(crate) native: Option<NativeFn>,
    pub(crate) entries: Vec<PropEntry<'h>>,
    /// See [`ColdState::closure`].
    pub(crate) closure: *mut u8,
    pub(crate) env: Value<'h>,
}

impl ColdState {
    pub(crate) fn owner(&self) -> u64 {
        self.owner
    }
    pub(crate) fn native(&self) -> Option<NativeFn> {
        self.native
    }
    /// The native closure and its environment, if the object has one.
    pub(crate) fn closure<'h>(&'h self) -> Option<(HostRef<'h>, Value<'h>)> {
        NonNull::new(self.closure).map(|p| {
            // SAFETY: the box is owned by the function object (a copy-on-write snapshot
            // shares it) and freed only by its finalizer, after it died: alive for 'h.
            let host = unsafe { HostRef::from_raw(p) };
            // SAFETY: the environment word was a checked value of this heap when stored;
            // the tracer keeps it alive with the object.
            (host, unsafe { Value::from_word(self.env) })
        })
    }
    /// The address of the native closure's box, if the object has one (its finalizer frees
    /// it).
    pub(super) fn closure_addr(&self) -> Option<NonNull<u8>> {
        NonNull::new(self.closure)
    }
    pub(super) fn env_word(&self) -> Word {
        self.env
    }
    pub(super) fn raw_entries(&self) -> &[RawEntry] {
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
            native: self.native,
            closure: self.closure,
            // SAFETY: as in `closure`.
            env: unsafe { Value::from_word(self.env) },
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
            native: None,
            entries: Vec::new(),
            closure: core::ptr::null_mut(),
            env: Value::UNDEFINED,
        }
    }
}

pub(super) fn alloc_block(
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
            count: AtomicU32::new(0),
        })
    };
    Ok(p)
}

/// Frees a side block (and, for cold state, its entries).
///
/// # Safety
/// `b` is a block of `raw` that no one can read any more.
pub(super) unsafe fn free_block(raw: &dyn slab::RawAlloc, b: NonNull<BlockHeader>) {
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

pub(super) fn block_items<T>(b: NonNull<BlockHeader>) -> *mut T {
    // Items follow the header inside the same allocation.
    b.as_ptr().cast::<u8>().wrapping_add(BLOCK_HEAD).cast::<T>()
}

/// Dense elements, as seen by a reader.
#[derive(Clone, Copy)]
pub(crate) struct Elements<'h> {
    pub(super) block: NonNull<BlockHeader>,
    pub(super) _h: PhantomData<&'h ()>,
}

impl<'h> Elements<'h> {
    pub(super) fn head(&self) -> &'h BlockHeader {
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
    /// Elements present (holes not counted).
    pub(crate) fn count(&self) -> u32 {
        self.head().count.load(Ordering::Acquire)
    }
    pub(super) fn item(&self, i: u32) -> &'h AtomicWord {
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

#[cfg(all(test, not(loom)))]
mod tests {
    use super::super::testing::Counter;
    use super::*;

    #[test]
    fn blocks_round_trip_through_the_allocator() {
        let c = Counter::default();
        let b = alloc_block(&c, BLOCK_SLOTS, 8, 5).unwrap();
        // SAFETY: a live block.
        let head = unsafe { b.as_ref() };
        assert_eq!(
            (head.kind, head.cap, head.bytes),
            (BLOCK_SLOTS, 5, BLOCK_HEAD + 40)
        );
        assert_eq!(block_items::<u64>(b) as usize % BLOCK_ALIGN, 0);
        assert_eq!(c.live(), 1);
        // SAFETY: never published.
        unsafe { free_block(&c, b) };
        assert_eq!(c.live(), 0);
        // Size overflow is an allocation failure, with nothing allocated.
        assert!(matches!(
            alloc_block(&c, BLOCK_SLOTS, usize::MAX, 2),
            Err(Error::OutOfMemory)
        ));
        assert_eq!(c.live(), 0);
    }
}
