//! Symbols: unique property keys that are heap cells. A symbol's key is a [`Key`] whose id
//! has [`SYMBOL_BIT`](crate::key::SYMBOL_BIT) set and a process-unique number (never
//! reused), so shapes, dictionaries and caches treat it as any other key. The heap maps
//! each live symbol's number to its cell: the tracer reports the symbol keys of live
//! objects (their shapes and dictionaries), and the collector marks those symbols; a
//! symbol that is neither a reachable value nor a key of a live object is freed, and its
//! number leaves the map.
//!
//! ```text
//!  SymbolCell (16 bytes, 64-byte class)
//!  +------+------+-----+--------+------------------------------------+
//!  | kind | rsvd | pad | number | description: interned string Key    |
//!  +------+------+-----+--------+------------------------------------+
//! ```

use core::ptr::NonNull;
use std::collections::HashMap;

use super::gc::{Gc, Kind};
use super::header::{CELL_KIND_SYMBOL, CellHeader};
use super::shared::HeapShared;
use super::{Value, Word};
use crate::error::Error;
use crate::key::{Key, PropertyKey, SYMBOL_BIT};
use crate::slab::{self, LocalCache, class_of};
use crate::sync::{lock, unmodeled};

#[repr(C)]
pub(crate) struct SymbolCell {
    header: CellHeader,
    _pad: [u8; 2],
    number: u32,
    /// `NO_DESCRIPTION`, or the id of an interned name.
    description: u32,
    _pad2: u32,
}

const NO_DESCRIPTION: u32 = u32::MAX;

/// Index into [`SIZE_CLASSES`](crate::SIZE_CLASSES) of the class symbols are allocated
/// from.
pub const SYMBOL_CLASS: usize = match class_of(core::mem::size_of::<SymbolCell>()) {
    Some(c) => c,
    None => panic!("symbol cell larger than the largest slab class"),
};

const _: () = assert!(crate::slab::SIZE_CLASSES[SYMBOL_CLASS] == 64);

/// The live symbols of a heap, by number (the collector marks the symbols of live keys
/// through it).
#[derive(Debug, Default)]
pub(crate) struct SymbolTable {
    cells: HashMap<u32, SymPtr>,
}

#[derive(Debug, Clone, Copy)]
struct SymPtr(NonNull<SymbolCell>);

// SAFETY: the table only stores addresses of its heap's cells; it is behind a mutex.
unsafe impl Send for SymbolTable {}

/// A symbol of a heap borrowed for `'h` (JS `Symbol()`): a property key unlike every other,
/// with an optional description. `Copy`, 8 bytes, `Send + Sync` (immutable); a heap cell,
/// collected when it is neither reachable as a value nor a key of a live object.
///
/// ```
/// use gc_object::Heap;
/// let heap = Heap::new();
/// let m = heap.mutator();
/// let (a, b) = (m.symbol(Some("tag")).unwrap(), m.symbol(Some("tag")).unwrap());
/// assert_ne!(a.key(), b.key()); // unique, whatever the description
/// let o = m.object().unwrap();
/// o.set(a.key(), 1u32.into()).unwrap();
/// o.set("name", 2u32.into()).unwrap();
/// assert_eq!(o.own_keys().unwrap(), ["name".into(), a.key()]); // strings, then symbols
/// assert_eq!(a.description().unwrap().as_str(), "tag");
/// ```
pub type Symbol<'h> = Gc<'h, SymbolKind>;

/// The kind of a symbol cell: [`Symbol<'h>`](Symbol) is `Gc<'h, SymbolKind>`.
#[derive(Debug)]
pub enum SymbolKind {}

// SAFETY: every symbol cell starts with a header of kind `CELL_KIND_SYMBOL`
// (`alloc_symbol`) and is immutable after it is made.
unsafe impl Kind for SymbolKind {
    const KIND: u8 = CELL_KIND_SYMBOL;
    const NAME: &'static str = "Symbol";

    fn fmt(h: Symbol<'_>, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match h.description() {
            Some(d) => write!(f, "Symbol({d})"),
            None => f.write_str("Symbol()"),
        }
    }
}

impl<'h> Symbol<'h> {
    fn c(&self) -> &'h SymbolCell {
        // SAFETY: type invariant: the cell is alive for `'h`.
        unsafe { self.cell.cast::<SymbolCell>().as_ref() }
    }

    /// The property key of this symbol.
    pub fn key(self) -> PropertyKey {
        PropertyKey::Name(Key::symbol(self.c().number))
    }

    /// The description it was made with.
    pub fn description(self) -> Option<Key> {
        let d = self.c().description;
        (d != NO_DESCRIPTION).then(|| Key::from_raw(d))
    }

    /// This symbol as a value.
    pub fn value(self) -> Value<'h> {
        // SAFETY: the word names this live cell.
        unsafe { Value::from_word(Word::from_other_cell(self.cell.cast())) }
    }
}

impl<'h> Value<'h> {
    /// The symbol, if this is one.
    pub fn as_symbol(self) -> Option<Symbol<'h>> {
        let cell = self.other_cell()?;
        // SAFETY: a cell word of a `Value<'h>` names a live cell; its kind is immutable.
        unsafe { Symbol::downcast(cell) }
    }
}

impl<'h> From<Symbol<'h>> for Value<'h> {
    fn from(s: Symbol<'h>) -> Self {
        s.value()
    }
}

impl From<Symbol<'_>> for PropertyKey {
    fn from(s: Symbol<'_>) -> Self {
        s.key()
    }
}

/// Symbols made in this process (numbers are never reused).
static NEXT_SYMBOL: unmodeled::AtomicU32 = unmodeled::AtomicU32::new(0);

/// Makes a symbol through `cache`. Errors: allocation failure, or every symbol number of
/// the process used.
pub(crate) fn alloc_symbol<'h>(
    heap: &'h HeapShared,
    cache: &LocalCache,
    description: Option<Key>,
) -> Result<Symbol<'h>, Error> {
    let mut t = lock(&heap.symbols);
    t.cells.try_reserve(1).map_err(|_| Error::OutOfMemory)?;
    let p = heap
        .slab
        .alloc_cell(cache, SYMBOL_CLASS)
        .ok_or(Error::OutOfMemory)?;
    let number = NEXT_SYMBOL
        .fetch_update(
            unmodeled::Ordering::Relaxed,
            unmodeled::Ordering::Relaxed,
            |n| (n < SYMBOL_BIT - 1).then_some(n + 1),
        )
        .map_err(|_| Error::Unsupported("more than 2^30 - 1 symbols in one process"))?;
    let cell = SymbolCell {
        header: CellHeader {
            kind: CELL_KIND_SYMBOL,
            reserved: 0,
        },
        _pad: [0; 2],
        number,
        description: description.map_or(NO_DESCRIPTION, Key::id),
        _pad2: 0,
    };
    // SAFETY: `p` is a fresh cell of at least 64 bytes, aligned to its size, owned by no one
    // else.
    unsafe { p.cast::<SymbolCell>().as_ptr().write(cell) };
    t.cells.insert(number, SymPtr(p.cast()));
    // SAFETY: a symbol cell of `heap`, initialized above; alive until a collection, which
    // cannot run while `heap` is borrowed for 'h.
    Ok(unsafe { Symbol::from_cell(p) })
}

/// Symbols alive (made and not freed by a collection yet).
pub(crate) fn count(heap: &HeapShared) -> usize {
    lock(&heap.symbols).cells.len()
}

/// The cell of the live symbol whose key is `k`, if it is one of this heap's.
///
/// # Safety
/// Exclusive access (collector).
pub(crate) unsafe fn cell_of_key(heap: &HeapShared, k: Key) -> Option<NonNull<u8>> {
    debug_assert!(k.is_symbol());
    let t = lock(&heap.symbols);
    t.cells.get(&(k.id() & !SYMBOL_BIT)).map(|p| p.0.cast())
}

/// Forgets the symbols that are not marked (this collection frees them); how many.
///
/// # Safety
/// Exclusive access, after marking.
pub(crate) unsafe fn sweep(heap: &HeapShared) -> u64 {
    let mut t = lock(&heap.symbols);
    let before = t.cells.len();
    // SAFETY: every symbol in the table is a live cell of this heap until this sweep.
    t.cells
        .retain(|_, p| unsafe { slab::is_marked(p.0.cast()) });
    (before - t.cells.len()) as u64
}
