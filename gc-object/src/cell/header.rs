//! The header every cell starts with and the kinds it names: a leaf the cell files and the
//! collector read a cell's kind through, importing nothing of the object model.

use core::ptr::NonNull;

/// Bytes of the GC cell header (the cell kind and one reserved byte). Mark bits live in
/// the chunk's bitmap, not here, which is why the header is 2 bytes instead of the seed's
/// 32; the bytes saved became inline slots.
pub const HEADER_BYTES: usize = 2;

/// The first bytes of every cell, whatever its kind: written before the cell is published
/// and never changed.
#[repr(C)]
pub(crate) struct CellHeader {
    pub(crate) kind: u8,
    pub(crate) reserved: u8,
}

const _: () = assert!(core::mem::size_of::<CellHeader>() == HEADER_BYTES);

/// An object (`layout.rs`).
pub(crate) const CELL_KIND_OBJECT: u8 = 1;
/// A weak reference (`weak.rs`).
pub(crate) const CELL_KIND_WEAK_REF: u8 = 2;
/// A weak map (`ephemeron.rs`).
pub(crate) const CELL_KIND_WEAK_MAP: u8 = 3;
/// A finalization registry (`finreg.rs`).
pub(crate) const CELL_KIND_FIN_REGISTRY: u8 = 4;
/// A symbol (`symbol.rs`).
pub(crate) const CELL_KIND_SYMBOL: u8 = 5;
/// A string value (`string.rs`).
pub(crate) const CELL_KIND_STRING: u8 = 6;

/// The kind byte of a cell.
///
/// # Safety
/// `cell` is a live, initialized cell of a slab (every kind starts with a [`CellHeader`],
/// written before the cell is published and never changed).
#[inline]
pub(crate) unsafe fn cell_kind(cell: NonNull<u8>) -> u8 {
    // SAFETY: contract; the header is plain bytes at offset 0 of every cell.
    unsafe { (*cell.cast::<CellHeader>().as_ptr()).kind }
}
