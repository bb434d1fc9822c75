//! Reference-counted heap buffers and their headers.
//!
//! A string points at its first data byte; the header sits right before it:
//!
//! ```text
//! compact (capacity < u32::MAX):       [AtomicU32 refcount][u32 capacity][data ...]
//! wide    (capacity >= u32::MAX, or forced):
//!                        [usize capacity][AtomicU32 refcount][u32::MAX  ][data ...]
//! wide on 32-bit (also every capacity >= LONG_LEN = 2^24 - 1):
//!            [usize len][usize capacity][AtomicU32 refcount][u32::MAX  ][data ...]
//! exact   (LeanStr, capacity == len):               [AtomicU32 refcount][data ...]
//! ```
//!
//! The refcount is always the 4 bytes at `data - 8` (`data - 4` for `exact`), so clone and
//! drop never look at the capacity. `LeanString` and `LeanCString` share this code.

use alloc::alloc::{Layout, alloc, dealloc, realloc};
use core::mem::{align_of, size_of};
use core::ptr::{self, NonNull};

use super::{HEADER_LEN, LEN_MASK, LONG_LEN, MAX_LEN, MAX_WORD_LEN, Words};
use crate::error::ReserveError;
use crate::sync::{AtomicU32, Ordering, fence};

/// The common header: refcount, then the compact capacity (or the wide sentinel).
#[repr(C)]
struct Header {
    refcount: AtomicU32,
    capacity: u32,
}

#[cfg(not(loom))]
const _: () = assert!(size_of::<Header>() == 8 && align_of::<Header>() == 4);

/// Bytes of the compact header: `[AtomicU32 refcount][u32 capacity]`.
pub const COMPACT_HEADER_SIZE: usize = size_of::<Header>();
/// Bytes of the wide header: `[usize capacity]` in front of the compact header, and on
/// 32-bit a `usize` length in front of that (16 bytes on both).
pub const WIDE_HEADER_SIZE: usize = if HEADER_LEN {
    2 * size_of::<usize>() + COMPACT_HEADER_SIZE
} else {
    size_of::<usize>() + COMPACT_HEADER_SIZE
};
/// The wide capacity word sits this far before the data.
const WIDE_CAPACITY_OFFSET: usize = size_of::<usize>() + COMPACT_HEADER_SIZE;
/// Bytes of the `LeanStr` header: only the refcount.
pub const EXACT_HEADER_SIZE: usize = size_of::<AtomicU32>();
/// The compact capacity field holds this when the real capacity is in the wide word.
pub const WIDE_SENTINEL: u32 = u32::MAX;
/// Above this count a clone undoes its increment and deep-copies instead, so the 32-bit
/// counter can never wrap even with many threads cloning at once.
pub const MAX_REFCOUNT: u32 = i32::MAX as u32;

#[cfg(not(loom))]
const _: () = {
    assert!(COMPACT_HEADER_SIZE == 8);
    assert!(WIDE_HEADER_SIZE == 16);
    assert!(WIDE_HEADER_SIZE.is_multiple_of(size_of::<usize>()));
    assert!(EXACT_HEADER_SIZE == 4);
    assert!(MAX_REFCOUNT < u32::MAX / 2 + 1);
};

/// Both layouts use one alignment so realloc never changes it and the wide `usize` is aligned.
const ALIGN: usize = if align_of::<usize>() > align_of::<Header>() {
    align_of::<usize>()
} else {
    align_of::<Header>()
};
const EXACT_ALIGN: usize = align_of::<AtomicU32>();

/// Which header a string type puts on its heap buffers.
///
/// [`Compact`] is the normal policy; [`Wide`] forces the 16-byte header on every heap
/// buffer (for tests and the compact-vs-wide benchmark). The choice is a constant, so the
/// compact type pays nothing for the option.
pub trait HeaderPolicy: sealed::Sealed + 'static {
    /// `true` to use the wide header for every capacity.
    const FORCE_WIDE: bool;
}

/// The 8-byte header for every capacity below `u32::MAX` (the default).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Compact;
/// The wide header for every heap buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Wide;

impl HeaderPolicy for Compact {
    const FORCE_WIDE: bool = false;
}
impl HeaderPolicy for Wide {
    const FORCE_WIDE: bool = true;
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::Compact {}
    impl Sealed for super::Wide {}
}

#[inline]
fn needs_wide(capacity: usize, force_wide: bool) -> bool {
    force_wide || capacity >= WIDE_SENTINEL as usize || (HEADER_LEN && capacity >= LONG_LEN)
}

#[inline]
fn layout(capacity: usize, wide: bool) -> Result<Layout, ReserveError> {
    let header = if wide {
        WIDE_HEADER_SIZE
    } else {
        COMPACT_HEADER_SIZE
    };
    if capacity > MAX_LEN {
        return Err(ReserveError);
    }
    let size = capacity.checked_add(header).ok_or(ReserveError)?;
    Layout::from_size_align(size, ALIGN).map_err(|_| ReserveError)
}

/// # Safety
/// `data` must point at the data of a live buffer made by [`allocate`].
#[inline(always)]
unsafe fn header<'a>(data: NonNull<u8>) -> &'a Header {
    // SAFETY: by the caller's contract the header lives at `data - 8` inside the same
    // allocation (`allocate` put it there) and is initialised.
    unsafe {
        &*data
            .as_ptr()
            .wrapping_sub(COMPACT_HEADER_SIZE)
            .cast::<Header>()
    }
}

/// Allocates a buffer of `capacity` data bytes with refcount 1; returns the data pointer.
pub(crate) fn allocate(capacity: usize, force_wide: bool) -> Result<NonNull<u8>, ReserveError> {
    let wide = needs_wide(capacity, force_wide);
    let layout = layout(capacity, wide)?;
    // SAFETY: the layout's size is at least the header size, so it is non-zero.
    let base = unsafe { alloc(layout) };
    if base.is_null() {
        return Err(ReserveError);
    }
    // SAFETY: `base` is a fresh allocation of `layout`, large enough for the header chosen
    // by the same `wide` flag.
    Ok(unsafe { init(base, capacity, wide) })
}

/// Writes the header of a fresh (or just reallocated) buffer and returns its data pointer.
///
/// # Safety
/// `base` must point at an allocation of `layout(capacity, wide)`, aligned to `ALIGN`.
unsafe fn init(base: *mut u8, capacity: usize, wide: bool) -> NonNull<u8> {
    let hdr = if wide {
        if HEADER_LEN {
            // SAFETY: the 32-bit wide layout starts with the aligned length word; 0 until
            // `set_long_len` (read only once a string stores the sentinel).
            unsafe { base.cast::<usize>().write(0) };
        }
        let cap = base.wrapping_add(WIDE_HEADER_SIZE - WIDE_CAPACITY_OFFSET);
        // SAFETY: the capacity word is inside the wide header, usize-aligned (the header
        // size is a multiple of the word and ALIGN >= align_of usize).
        unsafe { cap.cast::<usize>().write(capacity) };
        // The common header follows the wide capacity word.
        cap.wrapping_add(size_of::<usize>())
    } else {
        base
    };
    let field = if wide { WIDE_SENTINEL } else { capacity as u32 };
    // SAFETY: `hdr` is in bounds and 4-aligned (ALIGN and size_of usize are multiples of 4).
    unsafe {
        hdr.cast::<Header>().write(Header {
            refcount: AtomicU32::new(1),
            capacity: field,
        })
    };
    // SAFETY: the data follows the header inside the allocation; `base` is non-null.
    unsafe { NonNull::new_unchecked(hdr.wrapping_add(COMPACT_HEADER_SIZE)) }
}

/// Capacity of the buffer: one read of the compact field and a predicted sentinel branch.
///
/// # Safety
/// `data` must be the data pointer of a live buffer made by [`allocate`].
#[inline(always)]
pub(crate) unsafe fn capacity(data: NonNull<u8>) -> usize {
    // SAFETY: caller's contract.
    let field = unsafe { header(data) }.capacity;
    if field != WIDE_SENTINEL {
        field as usize
    } else {
        // SAFETY: caller's contract; the sentinel says the buffer is wide.
        unsafe { wide_capacity(data) }
    }
}

/// # Safety
/// `data` must be the data pointer of a live wide buffer.
#[cold]
#[inline(never)]
unsafe fn wide_capacity(data: NonNull<u8>) -> usize {
    // SAFETY: a wide buffer holds its `usize` capacity `WIDE_CAPACITY_OFFSET` before the
    // data, usize-aligned.
    unsafe {
        data.as_ptr()
            .wrapping_sub(WIDE_CAPACITY_OFFSET)
            .cast::<usize>()
            .read()
    }
}

/// The length stored in a 32-bit wide header (see `Words::heap`).
///
/// # Safety
/// `data` must be the data pointer of a live wide buffer on a target with `HEADER_LEN`.
#[inline(always)]
pub(crate) const unsafe fn long_len(data: *const u8) -> usize {
    // SAFETY: caller's contract: the length word starts the wide header, usize-aligned.
    unsafe { data.wrapping_sub(WIDE_HEADER_SIZE).cast::<usize>().read() }
}

/// Stores a string's length in its 32-bit wide header.
///
/// # Safety
/// `data` must be the data pointer of a live wide buffer, on a target with `HEADER_LEN`,
/// that the caller owns uniquely.
#[inline]
pub(crate) unsafe fn set_long_len(data: *mut u8, len: usize) {
    // SAFETY: caller's contract, as in `long_len`; no one else reads it now.
    unsafe {
        data.wrapping_sub(WIDE_HEADER_SIZE)
            .cast::<usize>()
            .write(len)
    }
}

/// `true` if the buffer uses the wide header.
///
/// # Safety
/// `data` must be the data pointer of a live buffer made by [`allocate`].
#[inline]
pub(crate) unsafe fn is_wide(data: NonNull<u8>) -> bool {
    // SAFETY: caller's contract.
    unsafe { header(data) }.capacity == WIDE_SENTINEL
}

/// The refcount of a [`allocate`] buffer.
///
/// # Safety
/// `data` must be the data pointer of a live buffer made by [`allocate`].
#[inline(always)]
pub(crate) unsafe fn refcount<'a>(data: NonNull<u8>) -> &'a AtomicU32 {
    // SAFETY: caller's contract.
    &unsafe { header(data) }.refcount
}

/// Takes one more reference. Returns `false` (and changes nothing) when the count is at
/// the saturation threshold; the caller then deep-copies.
#[inline(always)]
pub(crate) fn acquire(rc: &AtomicU32) -> bool {
    // Relaxed as in `Arc`: a new reference is made from an existing one, which already
    // orders the data.
    let old = rc.fetch_add(1, Ordering::Relaxed);
    if old > MAX_REFCOUNT {
        undo_acquire(rc);
        return false;
    }
    true
}

#[cold]
#[inline(never)]
fn undo_acquire(rc: &AtomicU32) {
    rc.fetch_sub(1, Ordering::Relaxed);
}

/// Drops one reference; `true` if it was the last one and the caller must free.
#[inline(always)]
pub(crate) fn release(rc: &AtomicU32) -> bool {
    if rc.fetch_sub(1, Ordering::Release) != 1 {
        return false;
    }
    // Pairs with the Release decrements of the other owners: their reads of the data
    // happen before the free.
    fence(Ordering::Acquire);
    true
}

/// `true` if the caller holds the only reference (so it may mutate).
#[inline(always)]
pub(crate) fn is_unique(rc: &AtomicU32) -> bool {
    // Acquire pairs with the Release decrement of the last other owner.
    rc.load(Ordering::Acquire) == 1
}

/// Frees a buffer whose last reference was just released.
///
/// # Safety
/// `data` must be the data pointer of a live buffer made by [`allocate`] that no one else
/// references; it is dangling afterwards.
pub(crate) unsafe fn free(data: NonNull<u8>) {
    // SAFETY: caller's contract.
    let (base, layout) = unsafe { base_and_layout(data) };
    // SAFETY: the header is initialised; dropping it is a no-op except under loom, which
    // tracks its atomics.
    unsafe {
        ptr::drop_in_place(
            data.as_ptr()
                .wrapping_sub(COMPACT_HEADER_SIZE)
                .cast::<Header>(),
        )
    };
    // SAFETY: `base`/`layout` describe the allocation exactly as `allocate` made it.
    unsafe { dealloc(base, layout) };
}

/// # Safety
/// `data` must be the data pointer of a live buffer made by [`allocate`].
unsafe fn base_and_layout(data: NonNull<u8>) -> (*mut u8, Layout) {
    // SAFETY: caller's contract.
    let wide = unsafe { is_wide(data) };
    // SAFETY: caller's contract.
    let cap = unsafe { capacity(data) };
    let header = if wide {
        WIDE_HEADER_SIZE
    } else {
        COMPACT_HEADER_SIZE
    };
    // SAFETY: `allocate` checked this layout when it made the buffer.
    let layout = unsafe { Layout::from_size_align_unchecked(cap + header, ALIGN) };
    // The allocation starts `header` bytes before the data.
    (data.as_ptr().wrapping_sub(header), layout)
}

/// Changes the capacity of a uniquely owned buffer, keeping its first `len` bytes.
/// Within compact or within wide this is the allocator's `realloc`; crossing the boundary
/// allocates, copies and frees (the data offset changes). On error the buffer is unchanged.
///
/// # Safety
/// `data` must be the data pointer of a live [`allocate`] buffer with refcount 1 owned by
/// the caller, and `len <= min(old capacity, new_capacity)`.
pub(crate) unsafe fn resize(
    data: NonNull<u8>,
    len: usize,
    new_capacity: usize,
    force_wide: bool,
) -> Result<NonNull<u8>, ReserveError> {
    let new_wide = needs_wide(new_capacity, force_wide);
    let new_layout = layout(new_capacity, new_wide)?;
    // SAFETY: caller's contract.
    let old_wide = unsafe { is_wide(data) };
    if old_wide != new_wide {
        return crossing_resize(data, len, new_capacity, force_wide);
    }
    // SAFETY: caller's contract.
    let (base, old_layout) = unsafe { base_and_layout(data) };
    // SAFETY: `base`/`old_layout` describe the live allocation; the new size is non-zero and
    // was checked by `layout`.
    let new_base = unsafe { realloc(base, old_layout, new_layout.size()) };
    if new_base.is_null() {
        return Err(ReserveError);
    }
    // The header moved with the data; only the capacity fields change (refcount stays 1).
    if new_wide {
        // SAFETY: the wide capacity word, inside the header, usize-aligned (as in `init`).
        unsafe {
            new_base
                .wrapping_add(WIDE_HEADER_SIZE - WIDE_CAPACITY_OFFSET)
                .cast::<usize>()
                .write(new_capacity)
        };
        // SAFETY: the data is `WIDE_HEADER_SIZE` in.
        Ok(unsafe { NonNull::new_unchecked(new_base.wrapping_add(WIDE_HEADER_SIZE)) })
    } else {
        // SAFETY: `new_base` starts with the compact header; the capacity field is 4 in.
        unsafe { (*new_base.cast::<Header>()).capacity = new_capacity as u32 };
        // SAFETY: the data is `COMPACT_HEADER_SIZE` in.
        Ok(unsafe { NonNull::new_unchecked(new_base.wrapping_add(COMPACT_HEADER_SIZE)) })
    }
}

#[cold]
#[inline(never)]
fn crossing_resize(
    data: NonNull<u8>,
    len: usize,
    new_capacity: usize,
    force_wide: bool,
) -> Result<NonNull<u8>, ReserveError> {
    let new = allocate(new_capacity, force_wide)?;
    // SAFETY: both buffers hold at least `len` bytes (resize's contract) and are distinct.
    unsafe { ptr::copy_nonoverlapping(data.as_ptr(), new.as_ptr(), len) };
    // SAFETY: the caller owned the only reference to the old buffer.
    unsafe { free(data) };
    Ok(new)
}

// ----- exact buffers (LeanStr): [AtomicU32 refcount][data; len] -----

#[inline]
fn exact_layout(len: usize) -> Result<Layout, ReserveError> {
    if len > MAX_WORD_LEN {
        return Err(ReserveError);
    }
    let size = len.checked_add(EXACT_HEADER_SIZE).ok_or(ReserveError)?;
    Layout::from_size_align(size, EXACT_ALIGN).map_err(|_| ReserveError)
}

/// Allocates an exact buffer holding a copy of `bytes`, refcount 1; returns the data pointer.
pub(crate) fn allocate_exact(bytes: &[u8]) -> Result<NonNull<u8>, ReserveError> {
    let data = allocate_exact_uninit(bytes.len())?;
    // SAFETY: distinct buffers; `data` has room for `bytes.len()` bytes.
    unsafe { ptr::copy_nonoverlapping(bytes.as_ptr(), data.as_ptr(), bytes.len()) };
    Ok(data)
}

/// Allocates an exact buffer for `len` bytes, refcount 1, data uninitialised; returns the
/// data pointer. The caller writes all `len` bytes before the buffer is read.
pub(crate) fn allocate_exact_uninit(len: usize) -> Result<NonNull<u8>, ReserveError> {
    let layout = exact_layout(len)?;
    // SAFETY: the size is at least the 4-byte header.
    let base = unsafe { alloc(layout) };
    if base.is_null() {
        return Err(ReserveError);
    }
    // SAFETY: fresh allocation, aligned for the refcount.
    unsafe { base.cast::<AtomicU32>().write(AtomicU32::new(1)) };
    // SAFETY: `base` is non-null, so is the data pointer `EXACT_HEADER_SIZE` in.
    Ok(unsafe { NonNull::new_unchecked(base.wrapping_add(EXACT_HEADER_SIZE)) })
}

/// # Safety
/// `data` must be the data pointer of a live exact buffer.
#[inline(always)]
pub(crate) unsafe fn exact_refcount<'a>(data: NonNull<u8>) -> &'a AtomicU32 {
    // SAFETY: the refcount is the 4 bytes before the data, initialised by `allocate_exact`.
    unsafe {
        &*data
            .as_ptr()
            .wrapping_sub(EXACT_HEADER_SIZE)
            .cast::<AtomicU32>()
    }
}

/// # Safety
/// `data` must be the data pointer of a live exact buffer of length `len` that no one else
/// references.
pub(crate) unsafe fn free_exact(data: NonNull<u8>, len: usize) {
    let base = data.as_ptr().wrapping_sub(EXACT_HEADER_SIZE);
    // SAFETY: drop the (loom-tracked) atomic before freeing.
    unsafe { ptr::drop_in_place(base.cast::<AtomicU32>()) };
    // SAFETY: `allocate_exact` checked this layout when it made the buffer.
    let layout = unsafe { Layout::from_size_align_unchecked(len + EXACT_HEADER_SIZE, EXACT_ALIGN) };
    // SAFETY: `allocate_exact` made this allocation with exactly this layout.
    unsafe { dealloc(base, layout) };
}

/// A kind of refcounted buffer: where its refcount lives and how it is freed. A string
/// type names its kind once ([`Shared::Buf`](super::Shared::Buf)) and the shared clone and
/// drop code reads the refcount through it.
pub(crate) trait Buffer {
    /// # Safety
    /// `data` must be the data pointer of a live buffer of this kind.
    unsafe fn refcount<'a>(data: NonNull<u8>) -> &'a AtomicU32;

    /// Frees the buffer of the heap string `w`.
    ///
    /// # Safety
    /// `w` must be the words of a heap string whose buffer is of this kind and whose last
    /// reference was just released; the buffer is dangling afterwards.
    unsafe fn free(w: &Words);
}

/// [`allocate`] buffers (compact or wide header, with a capacity): `LeanString`,
/// `LeanCString`.
pub(crate) struct Growable;
/// [`allocate_exact`] buffers (refcount only, sized to the length in word 1): `LeanStr`.
pub(crate) struct Exact;

impl Buffer for Growable {
    #[inline(always)]
    unsafe fn refcount<'a>(data: NonNull<u8>) -> &'a AtomicU32 {
        // SAFETY: caller's contract: a live `allocate` buffer.
        unsafe { refcount(data) }
    }

    #[inline(always)]
    unsafe fn free(w: &Words) {
        // SAFETY: caller's contract: the last reference to an `allocate` buffer.
        unsafe { free(w.heap_ptr()) }
    }
}

impl Buffer for Exact {
    #[inline(always)]
    unsafe fn refcount<'a>(data: NonNull<u8>) -> &'a AtomicU32 {
        // SAFETY: caller's contract: a live exact buffer.
        unsafe { exact_refcount(data) }
    }

    #[inline(always)]
    unsafe fn free(w: &Words) {
        // SAFETY: caller's contract: the last reference to an exact buffer, whose length
        // is always the whole of word 1's length field.
        unsafe { free_exact(w.heap_ptr(), w.w1() & LEN_MASK) }
    }
}

/// Test-only hook: overwrite a refcount (to reach the saturation threshold without two
/// billion clones). The caller restores the true count before the last drop.
#[cfg(test)]
pub(crate) fn set_refcount_for_test(rc: &AtomicU32, value: u32) {
    rc.store(value, Ordering::Relaxed);
}
