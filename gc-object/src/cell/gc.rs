//! One handle type for every kind of heap cell: [`Gc<'h, K>`](Gc), a cell of kind `K` of a
//! heap borrowed for `'h` (as gc-arena's `Gc<'gc, T>`). `Obj`, `WeakRef`, `WeakMap`,
//! `FinalizationRegistry`, `Symbol` and `HeapString` are its instances; each kind's file
//! adds that kind's operations. Imports only the cell header.

use core::marker::PhantomData;
use core::ptr::NonNull;

use super::header::{CellHeader, cell_kind};

/// A kind of heap cell: the `K` of [`Gc<'h, K>`](Gc). Sealed: the kinds are the crate's
/// ([`ObjectKind`](crate::ObjectKind), [`WeakRefKind`](crate::WeakRefKind),
/// [`WeakMapKind`](crate::WeakMapKind),
/// [`FinalizationRegistryKind`](crate::FinalizationRegistryKind),
/// [`SymbolKind`](crate::SymbolKind), [`StringKind`](crate::StringKind)).
pub trait CellKind: Kind {}

impl<K: Kind> CellKind for K {}

pub(crate) use sealed::Kind;

mod sealed {
    use super::Gc;

    /// What a cell kind tells the generic handle.
    ///
    /// # Safety
    /// Every cell of the kind starts with a `CellHeader` whose kind byte is `KIND`, which
    /// no other kind uses; and a cell of the kind can be used from several threads at once:
    /// each of its fields is atomic, immutable once the cell is published, or written under
    /// a lock of the cell or by the collector with exclusive access (so the handle is
    /// `Send + Sync`).
    pub unsafe trait Kind: Sized + 'static {
        /// The cell kind byte.
        const KIND: u8;
        /// The handle's name, for `Debug`.
        const NAME: &'static str;

        /// `Debug` of a handle: its name and address unless the kind says otherwise.
        fn fmt(h: Gc<'_, Self>, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
            write!(f, "{}@{:p}", Self::NAME, h.cell)
        }

        /// Handle equality: the same cell unless the kind says otherwise.
        fn eq(a: Gc<'_, Self>, b: Gc<'_, Self>) -> bool {
            a.cell == b.cell
        }
    }
}

/// A cell of kind `K` of a heap borrowed for `'h`. `Copy`, 8 bytes (4 on 32-bit targets),
/// `Send + Sync`; `Option<Gc>` is as small.
///
/// Holding one borrows the heap (or a scope of a [`Context`](crate::Context)), so no
/// collection can free its cell while it is in use; keep one across a collection with a
/// [`Root`](crate::Root), a [`Local`](crate::Local) handle, or in a reachable object.
/// Equality is the same cell (for [`HeapString`](crate::HeapString): the same text).
pub struct Gc<'h, K> {
    pub(super) cell: NonNull<CellHeader>,
    _kind: PhantomData<K>,
    _heap: PhantomData<&'h ()>,
}

const _: () = assert!(core::mem::size_of::<Gc<'static, ()>>() == core::mem::size_of::<usize>());
const _: () =
    assert!(core::mem::size_of::<Option<Gc<'static, ()>>>() == core::mem::size_of::<usize>());

impl<'h, K: Kind> Gc<'h, K> {
    /// # Safety
    /// `cell` is a live, initialized cell of kind `K` of a heap borrowed for `'h`.
    #[inline]
    pub(crate) unsafe fn from_cell<T>(cell: NonNull<T>) -> Gc<'h, K> {
        Gc {
            cell: cell.cast(),
            _kind: PhantomData,
            _heap: PhantomData,
        }
    }

    /// The handle of `cell` if it is a cell of kind `K`. O(1).
    ///
    /// # Safety
    /// `cell` is a live, initialized cell (of any kind) of a heap borrowed for `'h`.
    #[inline]
    pub(crate) unsafe fn downcast(cell: NonNull<u8>) -> Option<Gc<'h, K>> {
        // SAFETY: contract: a live cell, whose kind byte never changes.
        (unsafe { cell_kind(cell) } == K::KIND).then(|| {
            // SAFETY: a live cell of kind `K` of the heap borrowed for `'h` (contract).
            unsafe { Gc::from_cell(cell) }
        })
    }
}

impl<K> Clone for Gc<'_, K> {
    #[inline]
    fn clone(&self) -> Self {
        *self
    }
}

impl<K> Copy for Gc<'_, K> {}

// SAFETY: `Kind`'s contract: every field of a cell of the kind is atomic, immutable or
// written under a lock (or with exclusive access).
unsafe impl<K: Kind> Send for Gc<'_, K> {}
// SAFETY: as for `Send`.
unsafe impl<K: Kind> Sync for Gc<'_, K> {}

impl<K: Kind> PartialEq for Gc<'_, K> {
    #[inline]
    fn eq(&self, o: &Self) -> bool {
        K::eq(*self, *o)
    }
}

impl<K: Kind> Eq for Gc<'_, K> {}

impl<K: Kind> core::fmt::Debug for Gc<'_, K> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        K::fmt(*self, f)
    }
}
