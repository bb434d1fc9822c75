//! The code the three representations share, written once.
//!
//! [`Shared`] is what every string type is: one [`Words`] value that owns a reference to its
//! heap buffer, if it has one. Its provided methods are the refcounted clone (with the
//! saturation fallback), drop, and building a fresh string whose bytes a closure writes
//! ([`Shared::new_with`]), from which the copying operations here are made (`repeat`, the
//! ASCII case copies, `replace_range` on a buffer that cannot be written).
//! [`Mutable`](super::Mutable) adds what `LeanString` and `LeanCString` share:
//! clone-on-write and the in-place edits. Each type supplies only what really differs:
//! which refcount its buffers carry and how they are freed, its inline encoding, and
//! whether a NUL follows the data.
//!
//! The methods are generic, so each type still gets its own monomorphic copy; the hot ones
//! are `#[inline(always)]` as the per-type code was.

use core::mem::ManuallyDrop;
use core::ptr;

use super::heap::{self, Buffer};
use super::{INLINE_CAPACITY, Kind, Raw, Words};
use crate::error::ReserveError;

/// A string type made of one [`Words`] value.
///
/// # Safety
/// Implementors promise, for every value:
/// - [`words`](Self::words) returns its words: an inline or static string of this type, or
///   a heap string (tag `HEAP_TAG`) whose word 0 is the data pointer of a live buffer on
///   which the value holds one reference;
/// - that buffer is of kind [`Buf`](Self::Buf);
/// - any words that satisfy the first point may be passed to
///   [`from_words`](Self::from_words).
pub(crate) unsafe trait Shared: Sized {
    /// The kind of heap buffer: its refcount and how it is freed.
    type Buf: Buffer;

    fn words(&self) -> &Words;

    /// # Safety
    /// `w` must be words of this type as described on the trait; a heap reference moves in.
    unsafe fn from_words(w: Words) -> Self;

    /// The contents.
    fn contents(&self) -> &str;

    /// Bytes an inline string can hold.
    const INLINE_CAP: usize;

    /// `true` if inline strings use the `LeanString`/`LeanStr` encoding
    /// ([`inline_string`](super::inline_string)'s words), so that such words may be passed
    /// to [`from_words`](Self::from_words).
    const LEAN_INLINE: bool;

    /// An inline string holding `bytes` (at most `INLINE_CAP` of them, valid contents).
    fn inline(bytes: &[u8]) -> Self;

    /// A fresh unique heap string of `len > INLINE_CAP` bytes, which `fill` writes.
    ///
    /// # Safety
    /// `fill` must initialise all `len` bytes at the pointer it is given with valid
    /// contents (UTF-8; for `LeanCString` without NUL), and read none of them first.
    unsafe fn heap_with(len: usize, fill: impl FnOnce(*mut u8)) -> Result<Self, ReserveError>;

    /// A new string holding a copy of `s` (for `LeanCString`, `s` must hold no NUL).
    fn from_str(s: &str) -> Result<Self, ReserveError>;

    /// A string of `len` bytes that `fill` writes: inline if they fit, else a fresh heap
    /// buffer of exactly `len` bytes. Inline bytes are written into a scratch array first,
    /// so the words never hold a half-written tag.
    ///
    /// # Safety
    /// As [`heap_with`](Self::heap_with), for every `len`.
    #[inline]
    unsafe fn new_with(len: usize, fill: impl FnOnce(*mut u8)) -> Result<Self, ReserveError> {
        if len <= Self::INLINE_CAP {
            let mut buf = [0u8; INLINE_CAPACITY];
            fill(buf.as_mut_ptr());
            // `fill` wrote `len <= INLINE_CAP <= INLINE_CAPACITY` valid bytes (caller).
            Ok(Self::inline(&buf[..len]))
        } else {
            // SAFETY: caller's contract, and `len > INLINE_CAP`.
            unsafe { Self::heap_with(len, fill) }
        }
    }

    /// Moves the words out without running `Drop` (a heap reference moves with them).
    #[inline(always)]
    fn into_words(self) -> Words {
        let this = ManuallyDrop::new(self);
        // SAFETY: `this` is never used or dropped again; its words move to the caller.
        unsafe { ptr::read(this.words()) }
    }

    /// O(1): a refcount increment for heap strings, a copy of the words otherwise. Kept
    /// free of `Result` so the words stay in registers.
    #[inline(always)]
    fn clone_or_raise(&self) -> Self {
        let w = self.words();
        if w.kind() == Kind::Heap {
            // SAFETY: the buffer is live while we hold our reference (trait contract).
            let rc = unsafe { Self::Buf::refcount(w.heap_ptr()) };
            if !heap::acquire(rc) {
                // SAFETY: the raw words come from `Words::into_raw` of a `Self`.
                let w = unsafe { Words::from_raw(saturated_copy(self)) };
                // SAFETY: the words of a fresh `Self`, whose reference moves in.
                return unsafe { Self::from_words(w) };
            }
        }
        // SAFETY: inline and static words own nothing; for a heap string we just took a
        // reference for the copy.
        let w = unsafe { ptr::read(w) };
        // SAFETY: as above: words of `Self` with their own reference, if any.
        unsafe { Self::from_words(w) }
    }

    /// [`clone_or_raise`](Self::clone_or_raise) that reports the allocation failure of the
    /// saturated (deep-copy) path instead of panicking.
    #[inline]
    fn try_clone(&self) -> Result<Self, ReserveError> {
        let w = self.words();
        if w.kind() == Kind::Heap {
            // SAFETY: the buffer is live while we hold our reference (trait contract).
            let rc = unsafe { Self::Buf::refcount(w.heap_ptr()) };
            if !heap::acquire(rc) {
                return Self::from_str(self.contents());
            }
        }
        // SAFETY: inline and static words own nothing; for a heap string we just took a
        // reference for the copy.
        let w = unsafe { ptr::read(w) };
        // SAFETY: words of `Self` with their own reference, if any.
        Ok(unsafe { Self::from_words(w) })
    }

    /// Drops this value's reference and frees the buffer if it was the last one.
    #[inline(always)]
    fn release(&mut self) {
        let w = self.words();
        if w.kind() == Kind::Heap {
            // SAFETY: we hold a reference to the live buffer.
            if heap::release(unsafe { Self::Buf::refcount(w.heap_ptr()) }) {
                // SAFETY: that was the last reference.
                unsafe { Self::Buf::free(w) };
            }
        }
    }

    /// `true` for a heap string whose buffer nobody else shares.
    #[inline(always)]
    fn is_unique_heap(&self) -> bool {
        let w = self.words();
        // SAFETY: the buffer is live while we hold our reference.
        w.kind() == Kind::Heap && heap::is_unique(unsafe { Self::Buf::refcount(w.heap_ptr()) })
    }

    #[cfg(test)]
    fn refcount_for_test(&self) -> &crate::sync::AtomicU32 {
        assert_eq!(self.words().kind(), Kind::Heap);
        // SAFETY: a live heap buffer.
        unsafe { Self::Buf::refcount(self.words().heap_ptr()) }
    }
}

/// The refcount is saturated: deep-copy instead.
#[cold]
#[inline(never)]
fn saturated_copy<R: Shared>(r: &R) -> Raw {
    raw_or_raise(R::from_str(r.contents()))
}

/// The words of `r` in registers, or the panic of a failed allocation.
#[inline(always)]
pub(super) fn raw_or_raise<R: Shared>(r: Result<R, ReserveError>) -> Raw {
    match r {
        Ok(r) => r.into_words().into_raw(),
        Err(e) => e.raise(),
    }
}

/// `r`'s contents `n` times: `n == 1` shares (a clone), an empty result is the empty inline
/// string (O(1) whatever `n`), and otherwise one buffer of exactly the result's length is
/// filled by doubling copies (O(log n) `memcpy` calls).
pub(crate) fn repeat<R: Shared>(r: &R, n: usize) -> Result<R, ReserveError> {
    if n == 1 {
        return r.try_clone();
    }
    let src = r.contents().as_bytes();
    let total = src.len().checked_mul(n).ok_or(ReserveError)?;
    if total == 0 {
        return Ok(R::inline(&[]));
    }
    let fill = |dst: *mut u8| {
        // SAFETY: `dst` has room for `total >= src.len()` bytes, distinct from `src`.
        unsafe { ptr::copy_nonoverlapping(src.as_ptr(), dst, src.len()) };
        let mut filled = src.len();
        while filled < total {
            let count = filled.min(total - filled);
            // SAFETY: copies the written prefix `0..count` to `filled..filled + count`,
            // inside the buffer (`filled + count <= total`) and disjoint from it.
            unsafe { ptr::copy_nonoverlapping(dst, dst.wrapping_add(filled), count) };
            filled += count;
        }
    };
    // SAFETY: `fill` writes `n` copies of valid contents, all `total` bytes.
    unsafe { R::new_with(total, fill) }
}

/// A copy of `r` with its ASCII letters lower- (or upper-) cased; a clone (sharing the
/// buffer) when no byte would change.
pub(crate) fn ascii_case<R: Shared>(r: &R, upper: bool) -> Result<R, ReserveError> {
    let src = r.contents().as_bytes();
    let changes = |b: &u8| {
        if upper {
            b.is_ascii_lowercase()
        } else {
            b.is_ascii_uppercase()
        }
    };
    let Some(first) = src.iter().position(changes) else {
        return r.try_clone();
    };
    let fill = |dst: *mut u8| {
        // SAFETY: `dst` has room for `src.len()` bytes, distinct from `src`.
        unsafe { ptr::copy_nonoverlapping(src.as_ptr(), dst, src.len()) };
        // SAFETY: the bytes just written, from `first` on; nothing else refers to them.
        let rest =
            unsafe { core::slice::from_raw_parts_mut(dst.wrapping_add(first), src.len() - first) };
        if upper {
            rest.make_ascii_uppercase();
        } else {
            rest.make_ascii_lowercase();
        }
    };
    // SAFETY: ASCII case mapping keeps UTF-8 valid and creates no NUL; all bytes written.
    unsafe { R::new_with(src.len(), fill) }
}

/// `s` with bytes `start..end` (char boundaries, checked by the caller) replaced by `with`,
/// as a new string (for `LeanCString`, `s` and `with` hold no NUL).
pub(crate) fn replaced<R: Shared>(
    s: &str,
    start: usize,
    end: usize,
    with: &str,
) -> Result<R, ReserveError> {
    debug_assert!(start <= end && s.is_char_boundary(start) && s.is_char_boundary(end));
    let len = s.len() - (end - start) + with.len();
    let fill = |dst: *mut u8| {
        let src = s.as_ptr();
        // SAFETY: the three copies fill `dst[..len]` exactly, in order; the sources are
        // other memory (`s` and `with` are borrowed, `dst` is fresh).
        unsafe { ptr::copy_nonoverlapping(src, dst, start) };
        // SAFETY: as above.
        unsafe { ptr::copy_nonoverlapping(with.as_ptr(), dst.wrapping_add(start), with.len()) };
        let tail = dst.wrapping_add(start + with.len());
        // SAFETY: as above.
        unsafe { ptr::copy_nonoverlapping(src.wrapping_add(end), tail, s.len() - end) };
    };
    // SAFETY: pieces of valid UTF-8 cut at char boundaries; all `len` bytes written.
    unsafe { R::new_with(len, fill) }
}
