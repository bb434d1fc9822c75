//! The code the three representations share, written once.
//!
//! [`Shared`] is what every string type is: one [`Words`] value that owns a reference to its
//! heap buffer, if it has one. Its provided methods are the refcounted clone (with the
//! saturation fallback) and drop. [`Mutable`] adds what `LeanString` and `LeanCString`
//! share: clone-on-write and the in-place edits. Each type supplies only what really
//! differs: which refcount its buffers carry and how they are freed, its inline encoding,
//! and whether a NUL follows the data.
//!
//! The methods are generic, so each type still gets its own monomorphic copy; the hot ones
//! are `#[inline(always)]` as the per-type code was.

use core::mem::ManuallyDrop;
use core::ptr;

use super::heap::{self, Buffer};
use super::{Kind, MAX_LEN, Raw, Words};
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

    /// A new string holding a copy of `s` (for `LeanCString`, `s` must hold no NUL).
    fn from_str(s: &str) -> Result<Self, ReserveError>;

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

/// A string type that can be edited in place: `LeanString` and `LeanCString`. Both keep
/// their heap strings in [`heap::allocate`] buffers; `LeanCString` keeps a NUL after the
/// data ([`TAIL`](Self::TAIL) = 1) and reports capacities without it.
///
/// # Safety
/// On top of [`Shared`]:
/// - heap buffers are [`heap::allocate`] buffers made with `FORCE_WIDE`, whose capacity
///   holds the data and `TAIL` more bytes, and whose length is stored by `Words::heap`;
/// - an inline string's bytes start at the first byte of its words, and a writable inline
///   string has room for `INLINE_CAP` bytes there (and `TAIL` more, inside the words);
/// - [`inline`](Self::inline) and [`heap_copy`](Self::heap_copy) return such strings.
pub(crate) unsafe trait Mutable: Shared {
    /// Bytes an inline string can hold.
    const INLINE_CAP: usize;
    /// Bytes a heap buffer keeps after the data (`LeanCString`'s NUL).
    const TAIL: usize;
    /// The smallest heap capacity an inline string that grows moves to.
    const MIN_SPILL: usize;
    /// The heap header policy.
    const FORCE_WIDE: bool;

    fn words_mut(&mut self) -> &mut Words;

    /// An inline string holding `bytes` (at most `INLINE_CAP` of them, valid contents).
    fn inline(bytes: &[u8]) -> Self;

    /// A unique heap string holding `bytes` (valid contents) in a buffer of `capacity`
    /// bytes, `TAIL` included (`bytes.len() + TAIL <= capacity`).
    fn heap_copy(bytes: &[u8], capacity: usize) -> Result<Self, ReserveError>;

    /// Sets the length.
    ///
    /// # Safety
    /// Writable in place, `new_len <= capacity()`, the first `new_len` bytes initialised
    /// valid contents.
    unsafe fn set_len(&mut self, new_len: usize);

    /// An empty string with room for at least `capacity` bytes (inline if they fit).
    fn with_capacity(capacity: usize) -> Result<Self, ReserveError> {
        if capacity <= Self::INLINE_CAP {
            Ok(Self::inline(&[]))
        } else {
            let total = capacity
                .checked_add(Self::TAIL)
                .ok_or_else(ReserveError::capacity_overflow)?;
            Self::heap_copy(&[], total)
        }
    }

    /// Usable capacity (`TAIL` excluded): inline capacity, heap capacity, or a static
    /// string's length.
    #[inline]
    fn capacity(&self) -> usize {
        let w = self.words();
        match w.kind() {
            Kind::Inline => Self::INLINE_CAP,
            // SAFETY: a heap string's buffer is live while we hold our reference.
            Kind::Heap => (unsafe { heap::capacity(w.heap_ptr()) }) - Self::TAIL,
            Kind::Static => self.contents().len(),
        }
    }

    /// `true` if the bytes may be written in place (inline, or unique heap).
    #[inline(always)]
    fn is_mutable(&self) -> bool {
        match self.words().kind() {
            Kind::Inline => true,
            Kind::Heap => self.is_unique_heap(),
            Kind::Static => false,
        }
    }

    /// Makes the bytes writable in place with room for `additional` more bytes: a shared
    /// heap or static string is copied first (into inline storage if it fits). On error
    /// nothing changes.
    #[inline]
    fn make_mut(&mut self, additional: usize) -> Result<(), ReserveError> {
        let len = self.contents().len();
        match self.words().kind() {
            Kind::Inline if additional <= Self::INLINE_CAP - len => return Ok(()),
            Kind::Heap if self.is_unique_heap() => {
                // SAFETY: our buffer is live.
                let cap = unsafe { heap::capacity(self.words().heap_ptr()) } - Self::TAIL;
                if additional <= cap - len {
                    return Ok(());
                }
            }
            _ => {}
        }
        make_mut_slow(self, len, additional)
    }

    /// Replaces the string with its prefix of `new_len` bytes (a char boundary), copying only
    /// when it is shared or static (into inline storage if it fits).
    fn truncate(&mut self, new_len: usize) -> Result<(), ReserveError> {
        debug_assert!(self.contents().is_char_boundary(new_len));
        if self.is_mutable() {
            // SAFETY: writable in place; a prefix at a char boundary is valid contents.
            unsafe { self.set_len(new_len) };
            return Ok(());
        }
        let new = Self::from_str(&self.contents()[..new_len])?;
        *self = new;
        Ok(())
    }

    /// The writable data pointer (`make_mut` must have succeeded just before; taking the
    /// pointer reads nothing).
    #[inline(always)]
    fn data_mut(&mut self) -> *mut u8 {
        debug_assert!(self.is_mutable());
        if self.words().kind() == Kind::Heap {
            self.words().w0().cast_mut()
        } else {
            self.words_mut().base_mut()
        }
    }

    /// Appends `s` (for `LeanCString` without NUL, checked by the caller); on error nothing
    /// changes.
    #[inline]
    fn push_str(&mut self, s: &str) -> Result<(), ReserveError> {
        debug_assert!(Self::TAIL == 0 || !s.as_bytes().contains(&0));
        self.make_mut(s.len())?;
        let len = self.contents().len();
        let dst = self.data_mut().wrapping_add(len);
        // SAFETY: `make_mut` made the string writable with room for `s.len()` more bytes
        // (and the tail): `dst..dst + s.len()` is spare capacity, disjoint from `s`.
        unsafe { ptr::copy_nonoverlapping(s.as_ptr(), dst, s.len()) };
        // SAFETY: the appended bytes are a `&str` (without NUL where that matters).
        unsafe { self.set_len(len + s.len()) };
        Ok(())
    }

    /// Removes bytes `start..end`; both must be char boundaries (checked).
    fn remove_range(&mut self, start: usize, end: usize) -> Result<(), ReserveError> {
        let s = self.contents();
        let len = s.len();
        assert!(start <= end && end <= len && s.is_char_boundary(start) && s.is_char_boundary(end));
        self.make_mut(0)?;
        let p = self.data_mut();
        // SAFETY: writable; `end..len` and `start..` are inside the string (checked above).
        unsafe { ptr::copy(p.wrapping_add(end), p.wrapping_add(start), len - end) };
        // SAFETY: removing whole chars keeps valid contents (`LeanCString::set_len` zeroes
        // the freed inline bytes and rewrites the terminator).
        unsafe { self.set_len(len - (end - start)) };
        Ok(())
    }

    /// Inserts `s` (for `LeanCString` without NUL, checked by the caller) at byte `idx`, a
    /// char boundary (checked); on error nothing changes.
    fn insert_str(&mut self, idx: usize, s: &str) -> Result<(), ReserveError> {
        debug_assert!(Self::TAIL == 0 || !s.as_bytes().contains(&0));
        let len = self.contents().len();
        assert!(idx <= len && self.contents().is_char_boundary(idx));
        let n = s.len();
        self.make_mut(n)?;
        let p = self.data_mut();
        // SAFETY: writable with room for `n` more bytes (and the tail): the tail of the
        // string moves right inside the buffer (inline: below the tag byte).
        unsafe { ptr::copy(p.wrapping_add(idx), p.wrapping_add(idx + n), len - idx) };
        // SAFETY: the gap `idx..idx + n` is inside the buffer and disjoint from `s`.
        unsafe { ptr::copy_nonoverlapping(s.as_ptr(), p.wrapping_add(idx), n) };
        // SAFETY: a `&str` inserted at a char boundary keeps valid contents.
        unsafe { self.set_len(len + n) };
        Ok(())
    }

    /// Keeps the chars `f` accepts. Unsharing (the only fallible step) comes first.
    fn retain(&mut self, mut f: impl FnMut(char) -> bool) -> Result<(), ReserveError> {
        // If `f` panics the guard closes the gap, so the string stays valid (and, for
        // `LeanCString`, terminated with its unused inline bytes zero).
        struct Guard<'a, R: Mutable> {
            s: &'a mut R,
            idx: usize,
            deleted: usize,
            len: usize,
        }
        impl<R: Mutable> Drop for Guard<'_, R> {
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
                // SAFETY: kept chars followed by unvisited chars: valid contents. The length
                // (inline: the tag byte) was not touched yet, so `set_len` sees the old
                // length (`LeanCString` zeroes the freed inline bytes).
                unsafe { self.s.set_len(self.len - self.deleted) };
            }
        }
        self.make_mut(0)?;
        let len = self.contents().len();
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
            let rest = unsafe { core::slice::from_raw_parts(p.wrapping_add(g.idx), len - g.idx) };
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

    /// Gives a unique heap buffer's spare capacity back, or moves a short string inline.
    fn shrink_to(&mut self, min_capacity: usize) -> Result<(), ReserveError> {
        if self.words().kind() != Kind::Heap {
            return Ok(());
        }
        let len = self.contents().len();
        let target = len.max(min_capacity);
        if target <= Self::INLINE_CAP {
            *self = Self::inline(self.contents().as_bytes());
            return Ok(());
        }
        if !self.is_unique_heap() || target >= self.capacity() {
            return Ok(());
        }
        // SAFETY: a unique heap string of length `len <= target`.
        unsafe { resize_unique(self, len, target) }
    }

    /// `true` if word 1 holds the sentinel and the length lives in the header (32-bit).
    #[cfg(all(test, not(loom)))]
    fn len_in_header(&self) -> bool {
        self.words().kind() == Kind::Heap && self.words().w1() & super::LEN_MASK == super::LEN_MASK
    }
}

/// `from_str` of a [`Mutable`] type: inline if it fits, else a heap buffer sized to `s`.
#[inline]
pub(super) fn mutable_from_str<R: Mutable>(s: &str) -> Result<R, ReserveError> {
    if s.len() <= R::INLINE_CAP {
        Ok(R::inline(s.as_bytes()))
    } else {
        R::heap_copy(s.as_bytes(), s.len() + R::TAIL)
    }
}

/// `From<&str>` of a [`Mutable`] type: inline strings are built in registers; the heap path
/// is out of line and hands its words back in registers too.
#[inline(always)]
pub(super) fn mutable_from_str_or_raise<R: Mutable>(s: &str) -> R {
    if s.len() <= R::INLINE_CAP {
        R::inline(s.as_bytes())
    } else {
        // SAFETY: the raw words come from `Words::into_raw` of an `R`.
        let w = unsafe { Words::from_raw(heap_or_raise::<R>(s)) };
        // SAFETY: the words of a fresh `R`, whose reference moves in.
        unsafe { R::from_words(w) }
    }
}

#[inline(never)]
fn heap_or_raise<R: Mutable>(s: &str) -> Raw {
    raw_or_raise(R::heap_copy(s.as_bytes(), s.len() + R::TAIL))
}

/// Gives the unique heap string `r` a buffer of `capacity` usable bytes (the tail comes on
/// top), keeping its `len` bytes and the tail after them. On error nothing changes.
///
/// # Safety
/// `r` must be a heap string whose buffer nobody else shares, `len` its length, and
/// `len <= capacity`.
#[inline(always)]
unsafe fn resize_unique<R: Mutable>(
    r: &mut R,
    len: usize,
    capacity: usize,
) -> Result<(), ReserveError> {
    // SAFETY: caller's contract: the only reference to a live `heap::allocate` buffer
    // (trait contract) whose old capacity holds `len + TAIL`, as does the new one.
    let data = unsafe {
        heap::resize(
            r.words().heap_ptr(),
            len + R::TAIL,
            capacity + R::TAIL,
            R::FORCE_WIDE,
        )
    }?;
    // SAFETY: the resized buffer is ours alone, capacity >= len.
    *r.words_mut() = unsafe { Words::heap(data.as_ptr(), len) };
    Ok(())
}

#[cold]
#[inline(never)]
fn make_mut_slow<R: Mutable>(r: &mut R, len: usize, additional: usize) -> Result<(), ReserveError> {
    let needed = len
        .checked_add(additional)
        .ok_or_else(ReserveError::capacity_overflow)?;
    // The largest usable capacity: the buffer also holds the tail.
    let max = MAX_LEN - R::TAIL;
    if needed > max {
        return Err(ReserveError::capacity_overflow());
    }
    // Amortised growth when more room is asked for; exact when only unsharing.
    let grown = if additional == 0 {
        needed
    } else {
        needed.max(len.saturating_mul(2))
    };
    let grown = grown.min(max);
    if r.is_unique_heap() {
        let cap = r.capacity();
        let new_cap = needed.max(cap.saturating_mul(2)).min(max);
        // SAFETY: a unique heap string of length `len <= needed <= new_cap`.
        return unsafe { resize_unique(r, len, new_cap) };
    }
    let new = if needed <= R::INLINE_CAP {
        R::inline(r.contents().as_bytes())
    } else {
        let cap = if r.words().kind() == Kind::Inline {
            grown.max(R::MIN_SPILL)
        } else {
            grown
        };
        R::heap_copy(r.contents().as_bytes(), cap.min(max) + R::TAIL)?
    };
    *r = new;
    Ok(())
}
