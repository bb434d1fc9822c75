//! `LeanString`'s representation: inline, static, or a refcounted heap buffer with the
//! compact (or wide) header.

use core::marker::PhantomData;
use core::ptr::{self, NonNull};
use core::slice;

use super::heap::{self, HeaderPolicy};
use super::{
    HEAP_TAG, INLINE_CAPACITY, INLINE_TAG_BASE, LEN_BITS, LEN_MASK, MAX_LEN, MAX_WORD_LEN, Raw,
    STATIC_TAG, Words, inline_string,
};
use crate::error::ReserveError;

pub(crate) struct Repr<L: HeaderPolicy> {
    w: Words,
    _policy: PhantomData<fn() -> L>,
}

const _: () = {
    use core::mem::size_of;
    assert!(size_of::<Repr<heap::Compact>>() == 2 * size_of::<usize>());
    assert!(size_of::<Option<Repr<heap::Compact>>>() == 2 * size_of::<usize>());
};

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Kind {
    Inline,
    Heap,
    Static,
}

impl<L: HeaderPolicy> Repr<L> {
    #[inline(always)]
    const fn wrap(w: Words) -> Self {
        Self {
            w,
            _policy: PhantomData,
        }
    }

    /// Moves the words out without running `Drop`.
    #[inline(always)]
    pub(crate) fn into_words(self) -> Words {
        let this = core::mem::ManuallyDrop::new(self);
        // SAFETY: `this` is never used or dropped again; the words move to the caller.
        unsafe { ptr::read(&this.w) }
    }

    /// # Safety
    /// `w` must be an inline or static string, or a heap string made by `heap::allocate`
    /// whose reference moves in.
    #[inline(always)]
    pub(crate) unsafe fn from_words(w: Words) -> Self {
        Self::wrap(w)
    }

    #[inline(always)]
    pub(crate) const fn new() -> Self {
        Self::wrap(
            // SAFETY: top byte 0xC0: the empty inline string.
            unsafe { Words::from_parts(ptr::null(), (INLINE_TAG_BASE as usize) << LEN_BITS) },
        )
    }

    /// O(1), no allocation. Panics (at compile time in a const) above [`MAX_WORD_LEN`], which
    /// only a 32-bit target can reach.
    #[inline(always)]
    pub(crate) const fn from_static(s: &'static str) -> Self {
        assert!(
            s.len() <= MAX_WORD_LEN,
            "string too long for LeanString on this target"
        );
        Self::wrap(Words::static_str(s.as_bytes()))
    }

    #[inline(always)]
    pub(crate) fn inline(s: &str) -> Self {
        Self::wrap(inline_string(s.as_bytes()))
    }

    #[inline]
    pub(crate) fn from_str(s: &str) -> Result<Self, ReserveError> {
        if s.len() <= INLINE_CAPACITY {
            Ok(Self::inline(s))
        } else {
            Self::heap_copy(s.as_bytes(), s.len())
        }
    }

    /// A unique heap buffer of `capacity` holding a copy of `bytes` (valid UTF-8).
    #[inline(never)]
    fn heap_copy(bytes: &[u8], capacity: usize) -> Result<Self, ReserveError> {
        debug_assert!(bytes.len() <= capacity);
        let data = heap::allocate(capacity, L::FORCE_WIDE)?;
        // SAFETY: the fresh buffer holds `capacity >= bytes.len()` bytes.
        unsafe { ptr::copy_nonoverlapping(bytes.as_ptr(), data.as_ptr(), bytes.len()) };
        // SAFETY: a fresh unique buffer of capacity >= len.
        let w = unsafe { Words::heap(data.as_ptr(), bytes.len()) };
        Ok(Self::wrap(w))
    }

    pub(crate) fn with_capacity(capacity: usize) -> Result<Self, ReserveError> {
        if capacity <= INLINE_CAPACITY {
            Ok(Self::new())
        } else {
            Self::heap_copy(&[], capacity)
        }
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
        debug_assert!(self.kind() == Kind::Heap);
        // SAFETY: a heap string's word 0 is the non-null data pointer.
        unsafe { NonNull::new_unchecked(self.w.w0().cast_mut()) }
    }

    /// Branch-light: heap and static strings share "pointer + length" decoding, so the
    /// only choice (pointer string or inline) compiles to conditional moves.
    #[inline(always)]
    pub(crate) const fn as_bytes(&self) -> &[u8] {
        let last = self.w.last();
        let is_ptr = last >= HEAP_TAG;
        // Below 0xC0 the subtraction wraps to >= 0x40; the min maps it to a full string.
        let mut inline_len = last.wrapping_sub(INLINE_TAG_BASE) as usize;
        if inline_len > INLINE_CAPACITY {
            inline_len = INLINE_CAPACITY;
        }
        let ptr = if is_ptr { self.w.w0 } else { self.w.base() };
        let len = if is_ptr { self.w.ptr_len() } else { inline_len };
        // SAFETY: inline bytes live in `self`; heap and static bytes at word 0 for `len`
        // bytes, alive as long as `self` (heap: we hold a reference; static: forever).
        unsafe { slice::from_raw_parts(ptr, len) }
    }

    #[inline(always)]
    pub(crate) const fn as_str(&self) -> &str {
        // SAFETY: every constructor and mutator keeps the bytes valid UTF-8.
        unsafe { core::str::from_utf8_unchecked(self.as_bytes()) }
    }

    #[inline(always)]
    pub(crate) const fn len(&self) -> usize {
        self.as_bytes().len()
    }

    #[inline]
    pub(crate) fn capacity(&self) -> usize {
        match self.kind() {
            Kind::Inline => INLINE_CAPACITY,
            // SAFETY: a heap string's buffer is live while we hold our reference.
            Kind::Heap => unsafe { heap::capacity(self.heap_ptr()) },
            Kind::Static => self.len(),
        }
    }

    pub(crate) const fn as_static_str(&self) -> Option<&'static str> {
        if self.w.last() == STATIC_TAG {
            let len = self.w.w1() & LEN_MASK;
            // SAFETY: a static string's word 0 and length came from a `&'static str`.
            let bytes = unsafe { slice::from_raw_parts(self.w.w0, len) };
            // SAFETY: as above: the bytes are that `str`'s.
            Some(unsafe { core::str::from_utf8_unchecked(bytes) })
        } else {
            None
        }
    }

    /// `true` for a heap string whose buffer nobody else shares.
    #[inline(always)]
    fn is_unique_heap(&self) -> bool {
        // SAFETY: the buffer is live while we hold our reference.
        self.kind() == Kind::Heap && heap::is_unique(unsafe { heap::refcount(self.heap_ptr()) })
    }

    /// `true` if the bytes may be written in place (inline, or unique heap).
    #[inline(always)]
    pub(crate) fn is_mutable(&self) -> bool {
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
                return Self::wrap(unsafe { Words::from_raw(self.saturated_copy()) });
            }
        }
        // SAFETY: inline and static words own nothing; for a heap string we just took a
        // reference for the copy.
        let w = unsafe { ptr::read(&self.w) };
        Self::wrap(w)
    }

    /// The refcount is saturated: deep-copy instead.
    #[cold]
    #[inline(never)]
    fn saturated_copy(&self) -> Raw {
        match Self::from_str(self.as_str()) {
            Ok(s) => s.into_words().into_raw(),
            Err(e) => e.raise(),
        }
    }

    /// `From<&str>`: inline strings are built in registers; the heap path is out of line
    /// and hands its words back in registers too.
    #[inline(always)]
    pub(crate) fn from_str_or_raise(s: &str) -> Self {
        if s.len() <= INLINE_CAPACITY {
            Self::inline(s)
        } else {
            // SAFETY: the raw words come from `Words::into_raw`.
            Self::wrap(unsafe { Words::from_raw(Self::heap_or_raise(s)) })
        }
    }

    #[inline(never)]
    fn heap_or_raise(s: &str) -> Raw {
        match Self::heap_copy(s.as_bytes(), s.len()) {
            Ok(r) => r.into_words().into_raw(),
            Err(e) => e.raise(),
        }
    }

    /// Makes the bytes writable in place with room for `additional` more bytes: a shared
    /// heap or static string is copied first (into inline storage if it fits). On error
    /// nothing changes.
    #[inline]
    pub(crate) fn make_mut(&mut self, additional: usize) -> Result<(), ReserveError> {
        let len = self.len();
        match self.kind() {
            Kind::Inline if additional <= INLINE_CAPACITY - len => return Ok(()),
            Kind::Heap if self.is_unique_heap() => {
                // SAFETY: our buffer is live.
                let cap = unsafe { heap::capacity(self.heap_ptr()) };
                if additional <= cap - len {
                    return Ok(());
                }
            }
            _ => {}
        }
        self.make_mut_slow(len, additional)
    }

    #[cold]
    #[inline(never)]
    fn make_mut_slow(&mut self, len: usize, additional: usize) -> Result<(), ReserveError> {
        let needed = len
            .checked_add(additional)
            .ok_or_else(ReserveError::capacity_overflow)?;
        if needed > MAX_LEN {
            return Err(ReserveError::capacity_overflow());
        }
        // Amortised growth when more room is asked for; exact when only unsharing.
        let grown = if additional == 0 {
            needed
        } else {
            needed.max(len.saturating_mul(2))
        };
        let grown = grown.min(MAX_LEN);
        if self.is_unique_heap() {
            let cap = self.capacity();
            let new_cap = needed.max(cap.saturating_mul(2)).min(MAX_LEN);
            // SAFETY: we own the only reference, `len <= needed <= new_cap`.
            let data = unsafe { heap::resize(self.heap_ptr(), len, new_cap, L::FORCE_WIDE) }?;
            // SAFETY: the resized buffer is ours alone, capacity >= len.
            self.w = unsafe { Words::heap(data.as_ptr(), len) };
            return Ok(());
        }
        let new = if needed <= INLINE_CAPACITY {
            Self::inline(self.as_str())
        } else {
            let cap = if self.kind() == Kind::Inline {
                grown.max(2 * INLINE_CAPACITY)
            } else {
                grown
            };
            Self::heap_copy(self.as_bytes(), cap.min(MAX_LEN))?
        };
        *self = new;
        Ok(())
    }

    /// Replaces the string with its prefix of `new_len` bytes (a char boundary), copying only
    /// when it is shared or static (into inline storage if it fits).
    pub(crate) fn truncate(&mut self, new_len: usize) -> Result<(), ReserveError> {
        debug_assert!(self.as_str().is_char_boundary(new_len));
        if self.is_mutable() {
            // SAFETY: writable in place; a prefix at a char boundary is valid UTF-8.
            unsafe { self.set_len(new_len) };
            return Ok(());
        }
        let new = Self::from_str(&self.as_str()[..new_len])?;
        *self = new;
        Ok(())
    }

    /// Pointer to the first byte, for writing.
    ///
    /// # Safety
    /// The string must be writable in place (`make_mut` succeeded and nothing since shared
    /// it); writes must stay below `capacity()`.
    #[inline(always)]
    unsafe fn as_mut_ptr(&mut self) -> *mut u8 {
        if self.kind() == Kind::Heap {
            self.w.w0().cast_mut()
        } else {
            self.w.base_mut()
        }
    }

    /// # Safety
    /// Writable in place, `new_len <= capacity()`, and the first `new_len` bytes are
    /// initialised valid UTF-8.
    #[inline(always)]
    unsafe fn set_len(&mut self, new_len: usize) {
        if self.kind() == Kind::Heap {
            // SAFETY: writable (unique) heap buffer, `new_len <= capacity` (caller).
            self.w = unsafe { Words::heap(self.w.w0().cast_mut(), new_len) };
        } else if new_len < INLINE_CAPACITY {
            // A full inline string's last byte is already its own data.
            let last = self.w.base_mut().wrapping_add(INLINE_CAPACITY - 1);
            // SAFETY: the last byte of `self`; 0xC0 + len is a valid tag.
            unsafe { last.write(INLINE_TAG_BASE | new_len as u8) };
        }
    }

    /// Appends `s`; on error nothing changes.
    #[inline]
    pub(crate) fn push_str(&mut self, s: &str) -> Result<(), ReserveError> {
        self.make_mut(s.len())?;
        let len = self.len();
        // SAFETY: `make_mut` made the string writable with room for `s.len()` more bytes.
        let dst = unsafe { self.as_mut_ptr() }.wrapping_add(len);
        // SAFETY: `dst..dst + s.len()` is spare capacity, disjoint from `s`.
        unsafe { ptr::copy_nonoverlapping(s.as_ptr(), dst, s.len()) };
        // SAFETY: the appended bytes are a `&str`, so the whole is valid UTF-8.
        unsafe { self.set_len(len + s.len()) };
        Ok(())
    }

    /// Removes bytes `start..end`; both must be char boundaries (checked).
    pub(crate) fn remove_range(&mut self, start: usize, end: usize) -> Result<(), ReserveError> {
        let s = self.as_str();
        let len = s.len();
        assert!(start <= end && end <= len && s.is_char_boundary(start) && s.is_char_boundary(end));
        self.make_mut(0)?;
        let p = self.w_ptr_mut();
        // SAFETY: writable; `end..len` and `start..` are inside the string (checked above).
        unsafe { ptr::copy(p.wrapping_add(end), p.wrapping_add(start), len - end) };
        // SAFETY: removing whole chars keeps valid UTF-8.
        unsafe { self.set_len(len - (end - start)) };
        Ok(())
    }

    /// Inserts `s` at byte `idx`, a char boundary (checked).
    pub(crate) fn insert_str(&mut self, idx: usize, s: &str) -> Result<(), ReserveError> {
        let len = self.len();
        assert!(idx <= len && self.as_str().is_char_boundary(idx));
        let n = s.len();
        self.make_mut(n)?;
        let p = self.w_ptr_mut();
        // SAFETY: writable with room for `n` more bytes: the tail moves right inside it.
        unsafe { ptr::copy(p.wrapping_add(idx), p.wrapping_add(idx + n), len - idx) };
        // SAFETY: the gap `idx..idx + n` is inside the buffer and disjoint from `s`.
        unsafe { ptr::copy_nonoverlapping(s.as_ptr(), p.wrapping_add(idx), n) };
        // SAFETY: a `&str` inserted at a char boundary keeps valid UTF-8.
        unsafe { self.set_len(len + n) };
        Ok(())
    }

    /// The writable data pointer (`make_mut` must have succeeded just before).
    #[inline(always)]
    fn w_ptr_mut(&mut self) -> *mut u8 {
        debug_assert!(self.is_mutable());
        // SAFETY: callers only use it after `make_mut`; taking the pointer reads nothing.
        unsafe { self.as_mut_ptr() }
    }

    /// Keeps the chars `f` accepts. Unsharing (the only fallible step) comes first.
    pub(crate) fn retain(&mut self, mut f: impl FnMut(char) -> bool) -> Result<(), ReserveError> {
        // If `f` panics the guard closes the gap, so the string stays valid UTF-8.
        struct Guard<'a, L: HeaderPolicy> {
            s: &'a mut Repr<L>,
            idx: usize,
            deleted: usize,
            len: usize,
        }
        impl<L: HeaderPolicy> Drop for Guard<'_, L> {
            fn drop(&mut self) {
                let p = self.s.w_ptr_mut();
                let tail = self.len - self.idx;
                // SAFETY: moves the unvisited chars `idx..len` down to the kept prefix.
                unsafe {
                    ptr::copy(
                        p.wrapping_add(self.idx),
                        p.wrapping_add(self.idx - self.deleted),
                        tail,
                    )
                };
                // SAFETY: kept chars followed by unvisited chars: valid UTF-8.
                unsafe { self.s.set_len(self.len - self.deleted) };
            }
        }
        self.make_mut(0)?;
        let len = self.len();
        let mut g = Guard {
            s: self,
            idx: 0,
            deleted: 0,
            len,
        };
        while g.idx < len {
            let p = g.s.w_ptr_mut();
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
    pub(crate) fn shrink_to(&mut self, min_capacity: usize) -> Result<(), ReserveError> {
        if self.kind() != Kind::Heap {
            return Ok(());
        }
        let len = self.len();
        let target = len.max(min_capacity);
        if target <= INLINE_CAPACITY {
            *self = Self::inline(self.as_str());
            return Ok(());
        }
        if !self.is_unique_heap() || target >= self.capacity() {
            return Ok(());
        }
        // SAFETY: unique, `len <= target`.
        let data = unsafe { heap::resize(self.heap_ptr(), len, target, L::FORCE_WIDE) }?;
        // SAFETY: the resized buffer is ours alone, capacity >= len.
        self.w = unsafe { Words::heap(data.as_ptr(), len) };
        Ok(())
    }

    /// `true` if the buffer has the wide header (tests and benchmarks).
    pub(crate) fn is_wide(&self) -> bool {
        // SAFETY: a live heap buffer.
        self.kind() == Kind::Heap && unsafe { heap::is_wide(self.heap_ptr()) }
    }

    #[cfg(test)]
    pub(crate) fn refcount_for_test(&self) -> &crate::sync::AtomicU32 {
        assert_eq!(self.kind(), Kind::Heap);
        // SAFETY: a live heap buffer.
        unsafe { heap::refcount(self.heap_ptr()) }
    }

    /// `true` if word 1 holds the sentinel and the length lives in the header (32-bit).
    #[cfg(all(test, not(loom)))]
    pub(crate) fn len_in_header(&self) -> bool {
        self.kind() == Kind::Heap && self.w.w1() & LEN_MASK == LEN_MASK
    }
}

impl<L: HeaderPolicy> Drop for Repr<L> {
    #[inline]
    fn drop(&mut self) {
        if self.kind() == Kind::Heap {
            let data = self.heap_ptr();
            // SAFETY: we hold a reference to the live buffer.
            if heap::release(unsafe { heap::refcount(data) }) {
                // SAFETY: that was the last reference.
                unsafe { heap::free(data) };
            }
        }
    }
}

// SAFETY: the heap buffer is immutable while shared (mutation requires refcount 1) and its
// refcount is atomic, as in `Arc<str>`.
unsafe impl<L: HeaderPolicy> Send for Repr<L> {}
// SAFETY: as above; `&Repr` only reads.
unsafe impl<L: HeaderPolicy> Sync for Repr<L> {}
