//! `LeanString`'s representation: inline, static, or a refcounted heap buffer with the
//! compact (or wide) header. Clone, drop and the edits are [`Shared`] and [`Mutable`]'s.

use core::marker::PhantomData;
use core::ptr;

use super::heap::{self, HeaderPolicy};
use super::mutable::{Mutable, mutable_from_str, mutable_from_str_or_raise};
use super::shared::Shared;
use super::{
    HEAP_TAG, INLINE_CAPACITY, INLINE_TAG_BASE, Kind, LEN_BITS, MAX_LEN, MAX_WORD_LEN, Words,
    inline_append, inline_string,
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

impl<L: HeaderPolicy> Repr<L> {
    #[inline(always)]
    const fn wrap(w: Words) -> Self {
        Self {
            w,
            _policy: PhantomData,
        }
    }

    #[inline(always)]
    pub(crate) const fn new() -> Self {
        Self::wrap(
            // SAFETY: top byte 0xC0: the empty inline string.
            unsafe { Words::from_parts(ptr::null(), (INLINE_TAG_BASE as usize) << LEN_BITS) },
        )
    }

    /// O(1), no allocation: inline when it fits (as `lean_string`), else the static form.
    /// Panics (at compile time in a const) above [`MAX_WORD_LEN`], which only a 32-bit
    /// target can reach.
    #[inline(always)]
    pub(crate) const fn from_static(s: &'static str) -> Self {
        if s.len() <= INLINE_CAPACITY {
            return Self::wrap(inline_string(s.as_bytes()));
        }
        assert!(s.len() <= MAX_WORD_LEN, "text is too long");
        Self::wrap(Words::static_str(s.as_bytes()))
    }

    #[inline(always)]
    pub(crate) fn kind(&self) -> Kind {
        self.w.kind()
    }

    #[inline(always)]
    pub(crate) const fn as_bytes(&self) -> &[u8] {
        self.w.str_bytes(true)
    }

    #[inline(always)]
    pub(crate) const fn as_str(&self) -> &str {
        // SAFETY: every constructor and mutator keeps the bytes valid UTF-8.
        unsafe { core::str::from_utf8_unchecked(self.as_bytes()) }
    }

    /// `str` ordering, inline strings compared in registers.
    #[inline(always)]
    pub(crate) fn cmp_contents(&self, other: &Self) -> core::cmp::Ordering {
        self.w.str_cmp(&other.w, true)
    }

    /// `str` equality, inline strings compared in registers.
    #[inline(always)]
    pub(crate) fn eq_contents(&self, other: &Self) -> bool {
        self.w.str_eq(&other.w, true)
    }

    #[inline(always)]
    pub(crate) const fn len(&self) -> usize {
        self.as_bytes().len()
    }

    pub(crate) const fn as_static_str(&self) -> Option<&'static str> {
        self.w.as_static_str()
    }

    /// `From<&str>`: inline strings are built in registers.
    #[inline(always)]
    pub(crate) fn from_str_or_raise(s: &str) -> Self {
        mutable_from_str_or_raise(s)
    }

    /// `push_str`: an inline string that stays inline is rebuilt in registers with `s`
    /// appended ([`inline_append`]); one that outgrows the inline bytes moves straight into
    /// a heap buffer of the amortised capacity ([`spill`](Self::spill)); heap and static
    /// strings take [`Mutable::push_str`]. On error nothing changes.
    #[inline(always)]
    pub(crate) fn append(&mut self, s: &str) -> Result<(), ReserveError> {
        let last = self.w.last();
        if last < HEAP_TAG {
            let len = (last.wrapping_sub(INLINE_TAG_BASE) as usize).min(INLINE_CAPACITY);
            if s.len() <= INLINE_CAPACITY - len {
                self.w = inline_append(&self.w, len, s.as_bytes());
                return Ok(());
            }
            return self.spill(len, s);
        }
        Mutable::push_str(self, s)
    }

    /// An inline string of `len` bytes plus `s` (more than fits inline) into a fresh heap
    /// buffer of `max(needed, len + len / 2)` bytes, `make_mut`'s amortised growth: the
    /// inline bytes and `s` are copied once, with no intermediate copy of the string.
    #[inline(never)]
    fn spill(&mut self, len: usize, s: &str) -> Result<(), ReserveError> {
        let needed = len.checked_add(s.len()).ok_or(ReserveError)?;
        if needed > MAX_LEN {
            return Err(ReserveError);
        }
        let capacity = needed.max(len + len / 2);
        let data = heap::allocate(capacity, L::FORCE_WIDE)?;
        let dst = data.as_ptr();
        // SAFETY: the fresh buffer holds `capacity >= len + s.len()` bytes and is distinct
        // from both sources: the inline bytes at the start of `self.w`, then `s`.
        unsafe { ptr::copy_nonoverlapping(self.w.base(), dst, len) };
        // SAFETY: as above, after the `len` bytes just written.
        unsafe { ptr::copy_nonoverlapping(s.as_ptr(), dst.wrapping_add(len), s.len()) };
        // SAFETY: a fresh unique buffer of capacity >= needed, all `needed` bytes valid
        // UTF-8 (the old contents, then `s`). The inline words own nothing, so overwriting
        // them leaks nothing.
        self.w = unsafe { Words::heap(dst, needed) };
        Ok(())
    }

    /// `true` if the buffer has the wide header (tests and benchmarks).
    pub(crate) fn is_wide(&self) -> bool {
        // SAFETY: a live heap buffer.
        self.kind() == Kind::Heap && unsafe { heap::is_wide(self.w.heap_ptr()) }
    }
}

// SAFETY: `w` is always one of `Repr`'s words: constructors make inline, static or
// `heap::allocate` heap strings owning one reference (`heap::Growable` buffers).
unsafe impl<L: HeaderPolicy> Shared for Repr<L> {
    type Buf = heap::Growable;

    #[inline(always)]
    fn words(&self) -> &Words {
        &self.w
    }

    #[inline(always)]
    unsafe fn from_words(w: Words) -> Self {
        Self::wrap(w)
    }

    #[inline(always)]
    fn contents(&self) -> &str {
        self.as_str()
    }

    const INLINE_CAP: usize = INLINE_CAPACITY;

    const LEAN_INLINE: bool = true;

    #[inline(always)]
    fn inline(bytes: &[u8]) -> Self {
        Self::wrap(inline_string(bytes))
    }

    unsafe fn heap_with(len: usize, fill: impl FnOnce(*mut u8)) -> Result<Self, ReserveError> {
        let data = heap::allocate(len, L::FORCE_WIDE)?;
        fill(data.as_ptr());
        // SAFETY: a fresh unique buffer of capacity `len`, all of it written (caller).
        Ok(Self::wrap(unsafe { Words::heap(data.as_ptr(), len) }))
    }

    #[inline]
    fn from_str(s: &str) -> Result<Self, ReserveError> {
        mutable_from_str(s)
    }
}

// SAFETY: heap strings are `heap::allocate(_, L::FORCE_WIDE)` buffers with no tail whose
// length `Words::heap` stores; inline strings are `inline_string`'s 16 (8) bytes at the
// start of the words; `set_len` keeps both encodings. Nothing follows the data, so a
// shorter length in word 1 is a valid string of the same buffer (`SHORTEN_IN_PLACE`).
unsafe impl<L: HeaderPolicy> Mutable for Repr<L> {
    const TAIL: usize = 0;
    const FORCE_WIDE: bool = L::FORCE_WIDE;
    const SHORTEN_IN_PLACE: bool = true;

    #[inline(always)]
    fn words_mut(&mut self) -> &mut Words {
        &mut self.w
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
}

impl<L: HeaderPolicy> Drop for Repr<L> {
    #[inline]
    fn drop(&mut self) {
        self.release();
    }
}

// SAFETY: the heap buffer is immutable while shared (mutation requires refcount 1) and its
// refcount is atomic, as in `Arc<str>`.
unsafe impl<L: HeaderPolicy> Send for Repr<L> {}
// SAFETY: as above; `&Repr` only reads.
unsafe impl<L: HeaderPolicy> Sync for Repr<L> {}
