//! `LeanCString`'s representation: 15 inline bytes whose last byte is the remaining inline
//! capacity (0, the terminator, when full); heap buffers keep a NUL after the data and use
//! the same compact header code as `LeanString`. Clone, drop and the edits are
//! [`Shared`] and [`Mutable`]'s (with a one-byte tail for the NUL).

use core::ffi::CStr;
use core::ptr;
use core::slice;

use super::heap;
use super::inline_cstring;
use super::mutable::{Mutable, mutable_from_str, mutable_from_str_or_raise};
use super::shared::Shared;
use super::{C_INLINE_CAPACITY, HEAP_TAG, Kind, LEN_BITS, MAX_WORD_LEN, STATIC_TAG, Words};
use crate::error::ReserveError;

pub(crate) struct CRepr {
    w: Words,
}

const _: () = {
    use core::mem::size_of;
    assert!(size_of::<CRepr>() == 2 * size_of::<usize>());
    assert!(size_of::<Option<CRepr>>() == 2 * size_of::<usize>());
};

impl CRepr {
    pub(crate) const fn new() -> Self {
        // SAFETY: all-zero bytes with last byte 15: the empty inline string.
        let w = unsafe { Words::from_parts(ptr::null(), C_INLINE_CAPACITY << LEN_BITS) };
        Self { w }
    }

    /// `bytes` must be valid UTF-8 ending in its only NUL (a `&'static CStr`). The pointer of
    /// the whole slice is kept, so reading the terminator stays within its provenance.
    pub(crate) const fn from_static_with_nul(bytes_with_nul: &'static [u8]) -> Self {
        let len = bytes_with_nul.len() - 1;
        assert!(
            len <= MAX_WORD_LEN,
            "string too long for LeanCString on this target"
        );
        Self {
            w: Words::pointer(bytes_with_nul.as_ptr(), len, STATIC_TAG),
        }
    }

    /// `s` must contain no NUL byte (checked by the caller).
    #[inline]
    pub(crate) fn from_str_no_nul(s: &str) -> Result<Self, ReserveError> {
        debug_assert!(!s.as_bytes().contains(&0));
        mutable_from_str(s)
    }

    /// As `from_str_no_nul`, panicking on allocation failure; the heap path is out of
    /// line and returns its words in registers.
    #[inline(always)]
    pub(crate) fn from_str_no_nul_or_raise(s: &str) -> Self {
        mutable_from_str_or_raise(s)
    }

    #[inline(always)]
    pub(crate) fn kind(&self) -> Kind {
        self.w.kind()
    }

    /// The bytes and the NUL after them.
    #[inline(always)]
    pub(crate) fn as_bytes_with_nul(&self) -> &[u8] {
        let last = self.w.last();
        let is_ptr = last >= HEAP_TAG;
        let inline_len = C_INLINE_CAPACITY.wrapping_sub(last as usize);
        let ptr = if is_ptr { self.w.w0 } else { self.w.base() };
        let len = if is_ptr { self.w.ptr_len() } else { inline_len };
        // SAFETY: inline: bytes `len..16` are zero (invariant), so `len + 1 <= 16` bytes of
        // `self`; heap: the buffer keeps a NUL at `len`; static: the `CStr`'s NUL.
        unsafe { slice::from_raw_parts(ptr, len + 1) }
    }

    #[inline(always)]
    pub(crate) fn as_bytes(&self) -> &[u8] {
        let b = self.as_bytes_with_nul();
        &b[..b.len() - 1]
    }

    #[inline(always)]
    pub(crate) fn as_str(&self) -> &str {
        // SAFETY: constructors and mutators keep the bytes valid UTF-8.
        unsafe { core::str::from_utf8_unchecked(self.as_bytes()) }
    }

    /// The contents and terminator as a `CStr`.
    #[inline]
    pub(crate) fn as_c_str(&self) -> &CStr {
        // SAFETY: the bytes end in the NUL every representation keeps, and no NUL is inside
        // (every constructor and mutator rejects them).
        unsafe { CStr::from_bytes_with_nul_unchecked(self.as_bytes_with_nul()) }
    }
}

// SAFETY: `w` is always one of `CRepr`'s words: constructors make inline, static or
// `heap::allocate` heap strings owning one reference (`heap::Growable` buffers).
unsafe impl Shared for CRepr {
    type Buf = heap::Growable;

    #[inline(always)]
    fn words(&self) -> &Words {
        &self.w
    }

    #[inline(always)]
    unsafe fn from_words(w: Words) -> Self {
        Self { w }
    }

    #[inline(always)]
    fn contents(&self) -> &str {
        self.as_str()
    }

    const INLINE_CAP: usize = C_INLINE_CAPACITY;

    const LEAN_INLINE: bool = false;

    #[inline(always)]
    fn inline(bytes: &[u8]) -> Self {
        Self {
            w: inline_cstring(bytes),
        }
    }

    unsafe fn heap_with(len: usize, fill: impl FnOnce(*mut u8)) -> Result<Self, ReserveError> {
        let total = len.checked_add(1).ok_or(ReserveError)?;
        let data = heap::allocate(total, false)?;
        fill(data.as_ptr());
        // SAFETY: the buffer holds `len + 1` bytes: the terminator goes after the data.
        unsafe { data.as_ptr().wrapping_add(len).write(0) };
        // SAFETY: a fresh unique buffer of capacity > len.
        let w = unsafe { Words::heap(data.as_ptr(), len) };
        Ok(Self { w })
    }

    #[inline]
    fn from_str(s: &str) -> Result<Self, ReserveError> {
        Self::from_str_no_nul(s)
    }
}

// SAFETY: heap strings are compact `heap::allocate` buffers with room for the NUL after the
// data (`TAIL`), their length stored by `Words::heap`; inline strings are
// `inline_cstring`'s 15 bytes at the start of the words, the 16th the tag; `set_len` keeps
// both encodings and the terminator.
unsafe impl Mutable for CRepr {
    const TAIL: usize = 1;
    const FORCE_WIDE: bool = false;
    const SHORTEN_IN_PLACE: bool = false;

    #[inline(always)]
    fn words_mut(&mut self) -> &mut Words {
        &mut self.w
    }

    /// A unique heap buffer of `capacity` bytes (NUL included) holding `bytes` and a NUL.
    #[inline(never)]
    fn heap_copy(bytes: &[u8], capacity: usize) -> Result<Self, ReserveError> {
        debug_assert!(bytes.len() < capacity);
        let data = heap::allocate(capacity, false)?;
        let dst = data.as_ptr();
        // SAFETY: the fresh buffer has room for the bytes and the NUL after them.
        unsafe { ptr::copy_nonoverlapping(bytes.as_ptr(), dst, bytes.len()) };
        // SAFETY: as above; `bytes.len() < capacity`.
        unsafe { dst.wrapping_add(bytes.len()).write(0) };
        // SAFETY: a fresh unique buffer of capacity >= len.
        let w = unsafe { Words::heap(data.as_ptr(), bytes.len()) };
        Ok(Self { w })
    }

    /// Sets the length and rewrites the terminator.
    ///
    /// # Safety
    /// Writable in place, `new_len <= capacity()`, the first `new_len` bytes initialised
    /// valid UTF-8 without NUL.
    unsafe fn set_len(&mut self, new_len: usize) {
        let old_len = self.as_bytes().len();
        if self.kind() == Kind::Heap {
            let nul = self.w.w0().cast_mut().wrapping_add(new_len);
            // SAFETY: `new_len < capacity + 1`, inside the buffer.
            unsafe { nul.write(0) };
            // SAFETY: writable (unique) heap buffer, `new_len <= capacity` (caller).
            self.w = unsafe { Words::heap(self.w.w0().cast_mut(), new_len) };
        } else {
            let base = self.w.base_mut();
            if new_len < old_len {
                // Keep the invariant: every inline byte after the string is zero.
                // SAFETY: `new_len..old_len` is inside the 15 inline bytes.
                unsafe { ptr::write_bytes(base.wrapping_add(new_len), 0, old_len - new_len) };
            }
            // SAFETY: the last byte of `self`; `15 - new_len` is a valid tag.
            unsafe {
                base.wrapping_add(C_INLINE_CAPACITY)
                    .write((C_INLINE_CAPACITY - new_len) as u8)
            };
        }
    }
}

impl Drop for CRepr {
    fn drop(&mut self) {
        self.release();
    }
}

// SAFETY: as `Repr`: shared bytes are immutable, the refcount atomic.
unsafe impl Send for CRepr {}
// SAFETY: as above.
unsafe impl Sync for CRepr {}
