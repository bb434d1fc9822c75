//! Weak maps (ephemeron tables): a value stays alive only while its key object and the map
//! are alive. The map is a cell of the smallest class; its entries live in one side block
//! (allocated from the heap's allocator), written and read under the map's one-byte lock.
//!
//! ```text
//!  MapCell (16 bytes, 64-byte class)         table block (side block, Layout(bytes, 8))
//!  +------+------+------+-----+--------+     +-------------+--------------------------+
//!  | kind | rsvd | lock | pad | table -+---> | header:     | entries[cap]:            |
//!  +------+------+------+-----+--------+     | cap, len =  | (key word, value word),  |
//!                                            | live, count | open addressing; key 0 = |
//!                                            | = used      | empty, hole = deleted    |
//!                                            +-------------+--------------------------+
//! ```
//!
//! The collector never traces a map's entries with the map. After the ordinary marking it
//! runs the ephemeron fixpoint: the value of every entry of every live map whose key is
//! marked is marked (and traced), until nothing new is marked; then every entry whose key
//! is still unmarked is removed, in the collection that frees the key. A value that refers
//! to its own key therefore does not keep the key alive (a key -> value -> key cycle is
//! collected).

use core::ptr::{self, NonNull};

use super::gc::{Gc, Kind};
use super::header::{CELL_KIND_WEAK_MAP, CellHeader};
use super::shared::HeapShared;
use super::side::{BlockHeader, alloc_block, block_items, free_block};
use super::{AtomicWord, Obj, Value, Word};
use crate::error::Error;
use crate::slab::{self, LocalCache, RawAlloc, class_of};
use crate::sync::{AtomicPtr, AtomicU8, Ordering, spin_wait};

#[repr(C)]
pub(crate) struct MapCell {
    header: CellHeader,
    lock: AtomicU8,
    _pad: [u8; 5],
    /// The entries (null until the first `set`); replaced (and the old block freed) under
    /// the lock.
    table: AtomicPtr<BlockHeader>,
}

#[repr(C)]
struct Entry {
    key: AtomicWord,
    value: AtomicWord,
}

/// Index into [`SIZE_CLASSES`](crate::SIZE_CLASSES) of the class weak maps are allocated from.
pub const WEAK_MAP_CLASS: usize = match class_of(core::mem::size_of::<MapCell>()) {
    Some(c) => c,
    None => panic!("map cell larger than the largest slab class"),
};

#[cfg(not(loom))]
const _: () = assert!(crate::slab::SIZE_CLASSES[WEAK_MAP_CLASS] == 64);

/// Block kind of a weak map's entries.
const BLOCK_MAP: u8 = 6;
/// Entries of a map's first table.
const MIN_CAP: u32 = if cfg!(loom) { 2 } else { 8 };
const EMPTY: Word = Word::from_bits(0);
const TOMB: Word = Word::HOLE;

fn hash(key: Word, cap: u32) -> u32 {
    // Cells are aligned to at least 64 bytes.
    let h = (key.bits() >> 6).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32;
    (h as u32) & (cap - 1)
}

/// A weak map (JS `WeakMap`) of a heap borrowed for `'h`: object keys, any values; an
/// entry lasts while its key is alive (and the map is). `Copy`, 8 bytes, `Send + Sync`
/// (operations take the map's one-byte lock); itself a heap cell, collected when
/// unreachable.
///
/// ```
/// use gc_object::{Heap, Value};
/// let mut heap = Heap::new();
/// let map = {
///     let m = heap.mutator();
///     let map = m.weak_map().unwrap();
///     let key = m.object().unwrap();
///     let value = m.object().unwrap();
///     value.set("key", key.value()).unwrap(); // value -> key: still collected with the key
///     map.set(key, value.value()).unwrap();
///     assert_eq!(map.get(key).unwrap(), Some(value.value()));
///     heap.root_value(map.value()).unwrap()
/// };
/// assert_eq!(heap.collect().ephemerons_removed, 1);
/// assert_eq!(map.value(&heap).unwrap().as_weak_map().unwrap().len(), 0);
/// ```
pub type WeakMap<'h> = Gc<'h, WeakMapKind>;

/// The kind of a weak-map cell: [`WeakMap<'h>`](WeakMap) is `Gc<'h, WeakMapKind>`.
#[derive(Debug)]
pub enum WeakMapKind {}

// SAFETY: every weak-map cell starts with a header of kind `CELL_KIND_WEAK_MAP` (written
// when it is made); its table is read and written only under the map's lock (or
// exclusively by the collector); the lock and the table pointer are atomics.
unsafe impl Kind for WeakMapKind {
    const KIND: u8 = CELL_KIND_WEAK_MAP;
    const NAME: &'static str = "WeakMap";
}

/// Holds a map's lock.
struct MapGuard<'a>(&'a MapCell);

impl Drop for MapGuard<'_> {
    fn drop(&mut self) {
        self.0.lock.store(0, Ordering::Release);
    }
}

/// The entries of a table block.
#[derive(Clone, Copy)]
struct Table(NonNull<BlockHeader>);

impl Table {
    fn head(&self) -> &BlockHeader {
        // SAFETY: a live table block (under the lock or exclusive access).
        unsafe { self.0.as_ref() }
    }
    fn cap(&self) -> u32 {
        self.head().cap
    }
    fn entry(&self, i: u32) -> &Entry {
        debug_assert!(i < self.cap());
        // SAFETY: `i < cap`; every entry was initialized when the block was made.
        unsafe { &*block_items::<Entry>(self.0).wrapping_add(i as usize) }
    }
    fn live(&self) -> u32 {
        self.head().len.load(Ordering::Relaxed)
    }
    fn used(&self) -> u32 {
        self.head().count.load(Ordering::Relaxed)
    }
    fn set_counts(&self, live: u32, used: u32) {
        self.head().len.store(live, Ordering::Relaxed);
        self.head().count.store(used, Ordering::Relaxed);
    }
    /// The position of `key`, or where it would go (the first free or deleted entry of its
    /// probe sequence).
    fn find(&self, key: Word) -> Result<u32, u32> {
        let cap = self.cap();
        let mut i = hash(key, cap);
        let mut free = None;
        for _ in 0..cap {
            let k = self.entry(i).key.load(Ordering::Relaxed);
            if k == key {
                return Ok(i);
            }
            if k == EMPTY {
                return Err(free.unwrap_or(i));
            }
            if k == TOMB && free.is_none() {
                free = Some(i);
            }
            i = (i + 1) & (cap - 1);
        }
        Err(free.expect("a table below its load limit has a free entry"))
    }
}

fn alloc_table(raw: &dyn RawAlloc, cap: u32) -> Result<Table, Error> {
    let b = alloc_block(raw, BLOCK_MAP, core::mem::size_of::<Entry>(), cap)?;
    let items = block_items::<Entry>(b);
    for i in 0..cap as usize {
        let e = Entry {
            key: AtomicWord::new(EMPTY),
            value: AtomicWord::new(Word::UNDEFINED),
        };
        // SAFETY: `i < cap`: inside the fresh block.
        unsafe { items.wrapping_add(i).write(e) };
    }
    Ok(Table(b))
}

impl<'h> WeakMap<'h> {
    fn c(&self) -> &'h MapCell {
        // SAFETY: type invariant: the cell is alive for `'h`.
        unsafe { self.cell.cast::<MapCell>().as_ref() }
    }

    fn heap(&self) -> &'h HeapShared {
        // SAFETY: the cell is live (type invariant).
        let owner = unsafe { slab::owner_of(self.cell.cast()) };
        // SAFETY: its chunk's owner is the `HeapShared` of the heap borrowed for 'h (it does
        // not move).
        unsafe { &*owner.cast::<HeapShared>() }
    }

    fn lock(&self) -> MapGuard<'h> {
        let c = self.c();
        let mut round = 0;
        while c
            .lock
            .compare_exchange_weak(0, 1, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            spin_wait(&mut round);
        }
        MapGuard(c)
    }

    fn table(&self, _g: &MapGuard<'_>) -> Option<Table> {
        NonNull::new(self.c().table.load(Ordering::Acquire)).map(Table)
    }

    fn check_key(&self, key: Obj<'h>) -> Result<Word, Error> {
        if key.heap_tag() != (self.heap() as *const HeapShared).cast() {
            return Err(Error::ForeignHeap);
        }
        Ok(key.value().word)
    }

    /// The value for `key`, if it has an entry. [`Error::ForeignHeap`] for a key of
    /// another heap.
    pub fn get(self, key: Obj<'h>) -> Result<Option<Value<'h>>, Error> {
        let k = self.check_key(key)?;
        let g = self.lock();
        let Some(t) = self.table(&g) else {
            return Ok(None);
        };
        Ok(t.find(k).ok().map(|i| {
            // SAFETY: entry values are values of this heap, kept alive while the key is
            // (the collector removes the entry in the collection that frees the key).
            unsafe { Value::from_word(t.entry(i).value.load(Ordering::Relaxed)) }
        }))
    }

    /// Does `key` have an entry?
    pub fn has(self, key: Obj<'h>) -> Result<bool, Error> {
        Ok(self.get(key)?.is_some())
    }

    /// Sets the value for `key`. Errors: a key or value of another heap, allocation failure
    /// (the map is unchanged).
    pub fn set(self, key: Obj<'h>, value: Value<'h>) -> Result<(), Error> {
        let k = self.check_key(key)?;
        let heap = self.heap();
        if let Some(h) = value.heap_tag()
            && h != (heap as *const HeapShared).cast()
        {
            return Err(Error::ForeignHeap);
        }
        let g = self.lock();
        let mut t = match self.table(&g) {
            Some(t) => t,
            None => {
                let t = alloc_table(heap.raw(), MIN_CAP)?;
                // The sweep frees the table of a dead map (its finalizer).
                // SAFETY: the map cell is live.
                unsafe { slab::note_side_state(self.cell.cast()) };
                self.c().table.store(t.0.as_ptr(), Ordering::Release);
                t
            }
        };
        let pos = match t.find(k) {
            Ok(i) => {
                t.entry(i).value.store(value.word, Ordering::Relaxed);
                return Ok(());
            }
            Err(i) => i,
        };
        let reuses = t.entry(pos).key.load(Ordering::Relaxed) == TOMB;
        let pos = if !reuses && (t.used() + 1) * 4 > t.cap() * 3 {
            // Full: rehash into a table twice the size (or the same size, if at most half
            // the entries are live), then add.
            let cap = if (t.live() + 1) * 2 > t.cap() {
                t.cap().checked_mul(2).ok_or(Error::OutOfMemory)?
            } else {
                t.cap()
            };
            let nt = alloc_table(heap.raw(), cap)?;
            let mut live = 0;
            for i in 0..t.cap() {
                let e = t.entry(i);
                let ek = e.key.load(Ordering::Relaxed);
                if ek != EMPTY && ek != TOMB {
                    let j = nt.find(ek).expect_err("keys are distinct");
                    nt.entry(j).key.store(ek, Ordering::Relaxed);
                    nt.entry(j)
                        .value
                        .store(e.value.load(Ordering::Relaxed), Ordering::Relaxed);
                    live += 1;
                }
            }
            nt.set_counts(live, live);
            self.c().table.store(nt.0.as_ptr(), Ordering::Release);
            // SAFETY: replaced under the lock, which every reader takes: no one can read
            // the old block any more.
            unsafe { free_block(heap.raw(), t.0) };
            t = nt;
            t.find(k).expect_err("absent")
        } else {
            pos
        };
        let e = t.entry(pos);
        let reused = e.key.load(Ordering::Relaxed) == TOMB;
        e.value.store(value.word, Ordering::Relaxed);
        e.key.store(k, Ordering::Relaxed);
        t.set_counts(t.live() + 1, t.used() + u32::from(!reused));
        Ok(())
    }

    /// Removes the entry of `key`; whether it had one.
    pub fn delete(self, key: Obj<'h>) -> Result<bool, Error> {
        let k = self.check_key(key)?;
        let g = self.lock();
        let Some(t) = self.table(&g) else {
            return Ok(false);
        };
        match t.find(k) {
            Ok(i) => {
                t.entry(i).key.store(TOMB, Ordering::Relaxed);
                t.entry(i).value.store(Word::UNDEFINED, Ordering::Relaxed);
                t.set_counts(t.live() - 1, t.used());
                Ok(true)
            }
            Err(_) => Ok(false),
        }
    }

    /// Entries (of keys not collected yet).
    pub fn len(self) -> usize {
        let g = self.lock();
        self.table(&g).map_or(0, |t| t.live() as usize)
    }

    /// No entries?
    pub fn is_empty(self) -> bool {
        self.len() == 0
    }

    /// This map as a value (to store it in an object).
    pub fn value(self) -> Value<'h> {
        // SAFETY: the word names this live cell.
        unsafe { Value::from_word(Word::from_other_cell(self.cell.cast())) }
    }
}

impl<'h> Value<'h> {
    /// The weak map, if this is one.
    pub fn as_weak_map(self) -> Option<WeakMap<'h>> {
        let cell = self.other_cell()?;
        // SAFETY: a cell word of a `Value<'h>` names a live cell; its kind is immutable.
        unsafe { WeakMap::downcast(cell) }
    }
}

impl<'h> From<WeakMap<'h>> for Value<'h> {
    fn from(m: WeakMap<'h>) -> Self {
        m.value()
    }
}

/// Allocates an empty weak map through `cache`.
pub(crate) fn alloc_weak_map<'h>(
    heap: &'h HeapShared,
    cache: &LocalCache,
) -> Result<WeakMap<'h>, Error> {
    let p = heap
        .slab
        .alloc_cell(cache, WEAK_MAP_CLASS)
        .ok_or(Error::OutOfMemory)?;
    let cell = MapCell {
        header: CellHeader {
            kind: CELL_KIND_WEAK_MAP,
            reserved: 0,
        },
        lock: AtomicU8::new(0),
        _pad: [0; 5],
        table: AtomicPtr::new(ptr::null_mut()),
    };
    // SAFETY: `p` is a fresh cell of at least 64 bytes, aligned to its size, owned by no one
    // else.
    unsafe { p.cast::<MapCell>().as_ptr().write(cell) };
    // SAFETY: just initialized; alive for 'h.
    Ok(unsafe { WeakMap::from_cell(p) })
}

fn table_of(cell: NonNull<u8>) -> Option<Table> {
    // SAFETY: callers pass a live map cell with exclusive access.
    let c = unsafe { cell.cast::<MapCell>().as_ref() };
    NonNull::new(c.table.load(Ordering::Relaxed)).map(Table)
}

/// One round of the ephemeron fixpoint for a live map: calls `visit` on the value of every
/// entry whose key is marked (`visit` marks and reports whether the cell was new).
///
/// # Safety
/// `cell` is a live (marked) weak-map cell and the caller has exclusive access, marking.
pub(crate) unsafe fn visit_live_values(cell: NonNull<u8>, visit: &mut dyn FnMut(Word)) {
    let Some(t) = table_of(cell) else { return };
    for i in 0..t.cap() {
        let e = t.entry(i);
        let k = e.key.load(Ordering::Relaxed);
        if k == EMPTY || k == TOMB {
            continue;
        }
        let key = NonNull::new(k.cell().cast::<u8>()).expect("object words are non-null");
        // SAFETY: a key with an entry is a live cell of this heap until this collection
        // removes the entry (exclusive access).
        if unsafe { slab::is_marked(key) } {
            visit(e.value.load(Ordering::Relaxed));
        }
    }
}

/// Removes the entries of a live map whose keys are not marked (after the fixpoint);
/// returns how many.
///
/// # Safety
/// As for [`visit_live_values`], after marking.
pub(crate) unsafe fn remove_dead_keys(cell: NonNull<u8>) -> u64 {
    let Some(t) = table_of(cell) else { return 0 };
    let mut removed = 0;
    for i in 0..t.cap() {
        let e = t.entry(i);
        let k = e.key.load(Ordering::Relaxed);
        if k == EMPTY || k == TOMB {
            continue;
        }
        let key = NonNull::new(k.cell().cast::<u8>()).expect("object words are non-null");
        // SAFETY: as in `visit_live_values`.
        if !unsafe { slab::is_marked(key) } {
            e.key.store(TOMB, Ordering::Relaxed);
            e.value.store(Word::UNDEFINED, Ordering::Relaxed);
            removed += 1;
        }
    }
    t.set_counts(t.live() - removed as u32, t.used());
    removed
}

/// Frees a dead map's table.
///
/// # Safety
/// `cell` is a dead weak-map cell and the caller has exclusive access.
pub(crate) unsafe fn finalize_map(cell: NonNull<u8>, raw: &dyn RawAlloc) {
    if let Some(t) = table_of(cell) {
        // SAFETY: the map is dead: no one can read its table.
        unsafe { free_block(raw, t.0) };
    }
}
