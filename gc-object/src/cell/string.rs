//! String values that the collector frees: each one is a cell holding its length and its
//! UTF-8 bytes, immutable once made. A string that fits the largest slab class
//! ([`LARGEST_CLASS`](crate::LARGEST_CLASS) bytes with its 8-byte head) is a slab cell of
//! the smallest class that holds it; a longer one is a large cell (its own chunk-aligned
//! allocation). Neither traces anything; the sweep frees them like any dead cell.
//!
//! ```text
//!  StringCell (8 bytes + the text, class by size)
//!  +------+------+-----+-----------+--------------------+
//!  | kind | rsvd | pad | len: u32  | bytes[len] (UTF-8) |
//!  +------+------+-----+-----------+--------------------+
//! ```

use core::ptr::NonNull;

use super::gc::{Gc, Kind};
use super::header::{CELL_KIND_STRING, CellHeader};
use super::shared::HeapShared;
use super::{Value, Word};
use crate::error::Error;
use crate::slab::{LocalCache, class_of};

#[repr(C)]
struct StringHead {
    header: CellHeader,
    _pad: [u8; 2],
    len: u32,
}

/// Bytes of a string cell before its text.
pub const STRING_HEAD_BYTES: usize = core::mem::size_of::<StringHead>();
const _: () = assert!(STRING_HEAD_BYTES == 8);

/// The longest string value, in bytes (its length is a `u32`).
pub const MAX_STRING_BYTES: usize = u32::MAX as usize;

/// A string value of a heap borrowed for `'h`: immutable UTF-8 text in a heap cell, freed
/// by the collection after it became unreachable. `Copy`, 8 bytes, `Send + Sync`.
/// Equal text compares equal as values ([`Value::same_value`]) whichever cells hold it.
///
/// ```
/// use gc_object::{Heap, Value};
/// let heap = Heap::new();
/// let m = heap.mutator();
/// let s = m.string("hello").unwrap();
/// assert_eq!(s.as_str(), "hello");
/// assert_eq!(s.value().as_str(), Some("hello"));
/// assert_eq!(s.value(), m.string("hello").unwrap().value()); // by content
/// assert_eq!(Value::from(gc_object::Key::new("hello")).as_str(), Some("hello"));
/// ```
pub type HeapString<'h> = Gc<'h, StringKind>;

/// The kind of a string value's cell: [`HeapString<'h>`](HeapString) is
/// `Gc<'h, StringKind>`.
#[derive(Debug)]
pub enum StringKind {}

// SAFETY: every string cell starts with a header of kind `CELL_KIND_STRING`
// (`alloc_string`) and is immutable after it is made.
unsafe impl Kind for StringKind {
    const KIND: u8 = CELL_KIND_STRING;
    const NAME: &'static str = "HeapString";

    fn fmt(h: HeapString<'_>, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        core::fmt::Debug::fmt(h.as_str(), f)
    }

    /// By content.
    fn eq(a: HeapString<'_>, b: HeapString<'_>) -> bool {
        a.as_str() == b.as_str()
    }
}

impl<'h> HeapString<'h> {
    #[inline]
    fn head(self) -> NonNull<StringHead> {
        self.cell.cast()
    }

    /// The text.
    #[inline]
    pub fn as_str(self) -> &'h str {
        // SAFETY: type invariant: the cell is alive for `'h` and immutable.
        let len = unsafe { (*self.head().as_ptr()).len } as usize;
        // SAFETY: the text follows the head inside the same cell.
        let bytes = unsafe { self.head().as_ptr().cast::<u8>().add(STRING_HEAD_BYTES) };
        // SAFETY: `len` initialized bytes, alive and unchanged for `'h`.
        let bytes = unsafe { core::slice::from_raw_parts(bytes, len) };
        // SAFETY: copied from a `&str` when the cell was made.
        unsafe { core::str::from_utf8_unchecked(bytes) }
    }

    /// Its length in bytes.
    pub fn len(self) -> usize {
        self.as_str().len()
    }

    /// Is it the empty string?
    pub fn is_empty(self) -> bool {
        self.len() == 0
    }

    /// This string as a value.
    pub fn value(self) -> Value<'h> {
        // SAFETY: the word names this live cell.
        unsafe { Value::from_word(Word::from_other_cell(self.cell.cast())) }
    }
}

impl<'h> Value<'h> {
    /// The string value held in a heap cell, if this is one.
    pub fn as_heap_string(self) -> Option<HeapString<'h>> {
        let cell = self.other_cell()?;
        // SAFETY: a cell word of a `Value<'h>` names a live cell; its kind is immutable.
        unsafe { HeapString::downcast(cell) }
    }

    /// The text of a string value: a heap string or an interned one.
    pub fn as_str(self) -> Option<&'h str> {
        match self.as_string() {
            Some(k) => Some(k.as_str()),
            None => self.as_heap_string().map(HeapString::as_str),
        }
    }
}

impl<'h> From<HeapString<'h>> for Value<'h> {
    fn from(s: HeapString<'h>) -> Self {
        s.value()
    }
}

/// Makes a string cell holding `text` through `cache`. Errors: allocation failure, a text
/// longer than [`MAX_STRING_BYTES`].
pub(crate) fn alloc_string<'h>(
    heap: &'h HeapShared,
    cache: &LocalCache,
    text: &str,
) -> Result<HeapString<'h>, Error> {
    let len = u32::try_from(text.len())
        .map_err(|_| Error::Unsupported("a string value longer than 2^32 - 1 bytes"))?;
    let bytes = STRING_HEAD_BYTES + text.len();
    let p = match class_of(bytes) {
        Some(class) => heap.slab.alloc_cell(cache, class),
        None => heap.slab.alloc_large(bytes),
    }
    .ok_or(Error::OutOfMemory)?;
    let head = StringHead {
        header: CellHeader {
            kind: CELL_KIND_STRING,
            reserved: 0,
        },
        _pad: [0; 2],
        len,
    };
    // SAFETY: `p` is a fresh cell of at least `bytes` bytes, aligned to at least 8, owned by
    // no one else.
    unsafe { p.cast::<StringHead>().as_ptr().write(head) };
    // SAFETY: the text fits behind the head, inside the cell.
    let dst = unsafe { p.as_ptr().add(STRING_HEAD_BYTES) };
    // SAFETY: `dst` has room for the text; the fresh cell does not overlap it.
    unsafe { core::ptr::copy_nonoverlapping(text.as_ptr(), dst, text.len()) };
    // SAFETY: a string cell of `heap`, initialized above; alive until a collection, which
    // cannot run while `heap` is borrowed for 'h.
    Ok(unsafe { HeapString::from_cell(p) })
}
