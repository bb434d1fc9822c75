//! `LeanCString`'s representation: 15 inline bytes whose last byte is the remaining inline
//! capacity (0, the terminator, when full); heap buffers keep a NUL after the data and use
//! the same compact header code as `LeanString`.

use core::ffi::CStr;
use core::ptr::{self, NonNull};
use core::slice;

use super::heap;
use super::string::Kind;
use super::{C_INLINE_CAPACITY, HEAP_TAG, LEN_BITS, MAX_LEN, MAX_WORD_LEN, STATIC_TAG, Words};
use super::{Raw, inline_cstring};
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
        if s.len() <= C_INLINE_CAPACITY {
            Ok(Self {
                w: inline_cstring(s.as_bytes()),
            })
        } else {
            Self::heap_copy(s.as_bytes(), s.len() + 1)
        }
    }

    /// As `from_str_no_nul`, panicking on allocation failure; the heap path is out of
    /// line and returns its words in registers.
    #[inline(always)]
    pub(crate) fn from_str_no_nul_or_raise(s: &str) -> Self {
        if s.len() <= C_INLINE_CAPACITY {
            Self {
                w: inline_cstring(s.as_bytes()),
            }
        } else {
            // SAFETY: the raw words come from `Words::into_raw`.
            let w = unsafe { Words::from_raw(Self::heap_or_raise(s)) };
            Self { w }
        }
    }

    #[inline(never)]
    fn heap_or_raise(s: &str) -> Raw {
        match Self::heap_copy(s.as_bytes(), s.len() + 1) {
            Ok(r) => {
                let r = core::mem::ManuallyDrop::new(r);
                // SAFETY: `r` is never used or dropped again; its words move out.
                unsafe { ptr::read(&r.w) }.into_raw()
            }
            Err(e) => e.raise(),
        }
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

    #[inline(always)]
    pub(crate) fn kind(&self) -> Kind {
        match self.w.last() {
            HEAP_TAG => Kind::Heap,
            STATIC_TAG => Kind::Static,
            _ => Kind::Inline,
        }
    }

    #[inline(always)]
    fn heap_ptr(&self) -> NonNull<u8> {
        // SAFETY: a heap string's word 0 is the non-null data pointer.
        unsafe { NonNull::new_unchecked(self.w.w0().cast_mut()) }
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

    /// Usable capacity (the NUL's byte excluded).
    pub(crate) fn capacity(&self) -> usize {
        match self.kind() {
            Kind::Inline => C_INLINE_CAPACITY,
            // SAFETY: a live heap buffer; its capacity counts the NUL.
            Kind::Heap => (unsafe { heap::capacity(self.heap_ptr()) }) - 1,
            Kind::Static => self.as_bytes().len(),
        }
    }

    fn is_unique_heap(&self) -> bool {
        // SAFETY: the buffer is live while we hold our reference.
        self.kind() == Kind::Heap && heap::is_unique(unsafe { heap::refcount(self.heap_ptr()) })
    }

    fn is_mutable(&self) -> bool {
        match self.kind() {
            Kind::Inline => true,
            Kind::Heap => self.is_unique_heap(),
            Kind::Static => false,
        }
    }

    /// O(1): a refcount increment for heap strings, a copy of the words otherwise. Kept
    /// free of `Result` so the words stay in registers.
    #[inline(always)]
    pub(crate) fn clone_or_raise(&self) -> Self {
        if self.kind() == Kind::Heap {
            // SAFETY: the buffer is live while we hold our reference.
            let rc = unsafe { heap::refcount(self.heap_ptr()) };
            if !heap::acquire(rc) {
                // SAFETY: the raw words come from `Words::into_raw`.
                let w = unsafe { Words::from_raw(self.saturated_copy()) };
                return Self { w };
            }
        }
        // SAFETY: inline and static words own nothing; for a heap string we just took a
        // reference for the copy.
        let w = unsafe { ptr::read(&self.w) };
        Self { w }
    }

    /// The refcount is saturated: deep-copy instead.
    #[cold]
    #[inline(never)]
    fn saturated_copy(&self) -> Raw {
        match Self::from_str_no_nul(self.as_str()) {
            Ok(s) => {
                let s = core::mem::ManuallyDrop::new(s);
                // SAFETY: `s` is never used or dropped again; its words move out.
                unsafe { ptr::read(&s.w) }.into_raw()
            }
            Err(e) => e.raise(),
        }
    }

    /// Writable in place with room for `additional` more bytes (plus the NUL).
    pub(crate) fn make_mut(&mut self, additional: usize) -> Result<(), ReserveError> {
        let len = self.as_bytes().len();
        if self.is_mutable() && additional <= self.capacity() - len {
            return Ok(());
        }
        let needed = len
            .checked_add(additional)
            .ok_or_else(ReserveError::capacity_overflow)?;
        if needed >= MAX_LEN {
            return Err(ReserveError::capacity_overflow());
        }
        if self.is_unique_heap() {
            let total = (needed + 1)
                .max(self.capacity().saturating_mul(2) + 1)
                .min(MAX_LEN);
            // SAFETY: unique; the NUL at `len` stays below `total`.
            let data = unsafe { heap::resize(self.heap_ptr(), len + 1, total, false) }?;
            // SAFETY: the resized buffer is ours alone, capacity >= len.
            self.w = unsafe { Words::heap(data.as_ptr(), len) };
            return Ok(());
        }
        let new = if needed <= C_INLINE_CAPACITY {
            Self {
                w: inline_cstring(self.as_bytes()),
            }
        } else {
            let grown = if additional == 0 {
                needed
            } else {
                needed.max(len.saturating_mul(2))
            };
            Self::heap_copy(self.as_bytes(), grown.min(MAX_LEN - 1) + 1)?
        };
        *self = new;
        Ok(())
    }

    /// Prefix of `new_len` bytes (a char boundary, `<= len`); copies only if not writable.
    pub(crate) fn truncate(&mut self, new_len: usize) -> Result<(), ReserveError> {
        if self.is_mutable() {
            // SAFETY: writable; a prefix at a char boundary is valid UTF-8 without NUL.
            unsafe { self.set_len(new_len) };
            return Ok(());
        }
        let new = Self::from_str_no_nul(&self.as_str()[..new_len])?;
        *self = new;
        Ok(())
    }

    /// Appends `s` (no NUL in it, checked by the caller); on error nothing changes.
    pub(crate) fn push_str_no_nul(&mut self, s: &str) -> Result<(), ReserveError> {
        debug_assert!(!s.as_bytes().contains(&0));
        self.make_mut(s.len())?;
        let len = self.as_bytes().len();
        let base = if self.kind() == Kind::Heap {
            self.w.w0().cast_mut()
        } else {
            self.w.base_mut()
        };
        // SAFETY: writable with room for `s.len()` bytes plus the NUL (make_mut).
        unsafe { ptr::copy_nonoverlapping(s.as_ptr(), base.wrapping_add(len), s.len()) };
        // SAFETY: UTF-8 without NUL was appended; `set_len` rewrites the terminator.
        unsafe { self.set_len(len + s.len()) };
        Ok(())
    }

    /// Writable data pointer (`make_mut` must have succeeded just before).
    #[inline(always)]
    fn data_mut(&mut self) -> *mut u8 {
        debug_assert!(self.is_mutable());
        if self.kind() == Kind::Heap {
            self.w.w0().cast_mut()
        } else {
            self.w.base_mut()
        }
    }

    /// Removes bytes `start..end`; both must be char boundaries (checked).
    pub(crate) fn remove_range(&mut self, start: usize, end: usize) -> Result<(), ReserveError> {
        let s = self.as_str();
        let len = s.len();
        assert!(start <= end && end <= len && s.is_char_boundary(start) && s.is_char_boundary(end));
        self.make_mut(0)?;
        let p = self.data_mut();
        // SAFETY: writable; `end..len` and `start..` are inside the string (checked above).
        unsafe { ptr::copy(p.wrapping_add(end), p.wrapping_add(start), len - end) };
        // SAFETY: removing whole chars keeps valid UTF-8 without NUL; `set_len` zeroes the
        // freed inline bytes and rewrites the terminator.
        unsafe { self.set_len(len - (end - start)) };
        Ok(())
    }

    /// Inserts `s` (no NUL in it, checked by the caller) at byte `idx`, a char boundary
    /// (checked); on error nothing changes.
    pub(crate) fn insert_str_no_nul(&mut self, idx: usize, s: &str) -> Result<(), ReserveError> {
        debug_assert!(!s.as_bytes().contains(&0));
        let len = self.as_bytes().len();
        assert!(idx <= len && self.as_str().is_char_boundary(idx));
        let n = s.len();
        self.make_mut(n)?;
        let p = self.data_mut();
        // SAFETY: writable with room for `n` more bytes plus the NUL: the tail moves right
        // inside the buffer (inline: below byte 15, the tag).
        unsafe { ptr::copy(p.wrapping_add(idx), p.wrapping_add(idx + n), len - idx) };
        // SAFETY: the gap `idx..idx + n` is inside the buffer and disjoint from `s`.
        unsafe { ptr::copy_nonoverlapping(s.as_ptr(), p.wrapping_add(idx), n) };
        // SAFETY: a `&str` without NUL inserted at a char boundary keeps the invariant.
        unsafe { self.set_len(len + n) };
        Ok(())
    }

    /// Keeps the chars `f` accepts. Unsharing (the only fallible step) comes first.
    pub(crate) fn retain(&mut self, mut f: impl FnMut(char) -> bool) -> Result<(), ReserveError> {
        // If `f` panics the guard closes the gap, so the string stays valid UTF-8 without
        // NUL, terminated, and its unused inline bytes zero.
        struct Guard<'a> {
            s: &'a mut CRepr,
            idx: usize,
            deleted: usize,
            len: usize,
        }
        impl Drop for Guard<'_> {
            fn drop(&mut self) {
                let p = self.s.data_mut();
                let tail = self.len - self.idx;
                // SAFETY: moves the unvisited chars `idx..len` down to the kept prefix.
                unsafe {
                    ptr::copy(
                        p.wrapping_add(self.idx),
                        p.wrapping_add(self.idx - self.deleted),
                        tail,
                    )
                };
                // SAFETY: kept chars followed by unvisited chars: valid UTF-8 without NUL.
                // The length (inline: the tag byte) was not touched yet, so `set_len` sees
                // the old length and zeroes the freed inline bytes.
                unsafe { self.s.set_len(self.len - self.deleted) };
            }
        }
        self.make_mut(0)?;
        let len = self.as_bytes().len();
        let mut g = Guard {
            s: self,
            idx: 0,
            deleted: 0,
            len,
        };
        while g.idx < len {
            let p = g.s.data_mut();
            // SAFETY: bytes `idx..len` are unvisited and untouched, starting at a char
            // boundary, so they are valid UTF-8.
            let rest = unsafe { slice::from_raw_parts(p.wrapping_add(g.idx), len - g.idx) };
            // SAFETY: as above.
            let rest = unsafe { core::str::from_utf8_unchecked(rest) };
            let ch = rest.chars().next().expect("idx < len, so a char follows");
            let n = ch.len_utf8();
            if !f(ch) {
                g.deleted += n;
            } else if g.deleted > 0 {
                // SAFETY: moves the kept char left into the gap, inside the buffer.
                unsafe { ptr::copy(p.wrapping_add(g.idx), p.wrapping_add(g.idx - g.deleted), n) };
            }
            g.idx += n;
        }
        Ok(())
    }

    /// The contents and terminator as a `CStr`.
    #[inline]
    pub(crate) fn as_c_str(&self) -> &CStr {
        // SAFETY: the bytes end in the NUL every representation keeps, and no NUL is inside
        // (every constructor and mutator rejects them).
        unsafe { CStr::from_bytes_with_nul_unchecked(self.as_bytes_with_nul()) }
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

    pub(crate) fn shrink_to(&mut self, min_capacity: usize) -> Result<(), ReserveError> {
        if self.kind() != Kind::Heap {
            return Ok(());
        }
        let len = self.as_bytes().len();
        let target = len.max(min_capacity);
        if target <= C_INLINE_CAPACITY {
            *self = Self {
                w: inline_cstring(self.as_bytes()),
            };
            return Ok(());
        }
        if !self.is_unique_heap() || target >= self.capacity() {
            return Ok(());
        }
        // SAFETY: unique; `len + 1 <= target + 1`.
        let data = unsafe { heap::resize(self.heap_ptr(), len + 1, target + 1, false) }?;
        // SAFETY: the resized buffer is ours alone, capacity >= len.
        self.w = unsafe { Words::heap(data.as_ptr(), len) };
        Ok(())
    }
}

#[cfg(test)]
impl CRepr {
    pub(crate) fn refcount_for_test(&self) -> &crate::sync::AtomicU32 {
        assert_eq!(self.kind(), Kind::Heap);
        // SAFETY: a live heap buffer.
        unsafe { heap::refcount(self.heap_ptr()) }
    }

    /// `true` if word 1 holds the sentinel and the length lives in the header (32-bit).
    #[cfg(not(loom))]
    pub(crate) fn len_in_header(&self) -> bool {
        self.kind() == Kind::Heap && self.w.w1() & super::LEN_MASK == super::LEN_MASK
    }
}

impl Drop for CRepr {
    fn drop(&mut self) {
        if self.kind() == Kind::Heap {
            let data = self.heap_ptr();
            // SAFETY: we hold a reference to the live buffer.
            if heap::release(unsafe { heap::refcount(data) }) {
                // SAFETY: the last reference.
                unsafe { heap::free(data) };
            }
        }
    }
}

// SAFETY: as `Repr`: shared bytes are immutable, the refcount atomic.
unsafe impl Send for CRepr {}
// SAFETY: as above.
unsafe impl Sync for CRepr {}
