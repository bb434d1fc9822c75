//! `LeanStr`'s representation: inline and static as `LeanString`, heap buffers sized
//! exactly to the length behind a 4-byte refcount.

use core::ptr::{self, NonNull};
use core::slice;

use super::heap::{self, HeaderPolicy};
use super::string::Kind;
use super::{
    HEAP_TAG, INLINE_CAPACITY, INLINE_TAG_BASE, LEN_MASK, MAX_WORD_LEN, Raw, STATIC_TAG, Words,
};
use super::{Repr, inline_string};
use crate::error::ReserveError;

pub(crate) struct StrRepr {
    w: Words,
}

const _: () = {
    use core::mem::size_of;
    assert!(size_of::<StrRepr>() == 2 * size_of::<usize>());
    assert!(size_of::<Option<StrRepr>>() == 2 * size_of::<usize>());
};

impl StrRepr {
    pub(crate) const fn new() -> Self {
        let tag = (INLINE_TAG_BASE as usize) << super::LEN_BITS;
        // SAFETY: the empty inline string.
        let w = unsafe { Words::from_parts(ptr::null(), tag) };
        Self { w }
    }

    pub(crate) const fn from_static(s: &'static str) -> Self {
        assert!(
            s.len() <= MAX_WORD_LEN,
            "string too long for LeanStr on this target"
        );
        Self {
            w: Words::static_str(s.as_bytes()),
        }
    }

    #[inline]
    pub(crate) fn from_str(s: &str) -> Result<Self, ReserveError> {
        if s.len() <= INLINE_CAPACITY {
            Ok(Self {
                w: inline_string(s.as_bytes()),
            })
        } else {
            let data = heap::allocate_exact(s.as_bytes())?;
            Ok(Self {
                w: Words::pointer(data.as_ptr(), s.len(), HEAP_TAG),
            })
        }
    }

    /// `From<&str>`: inline in registers, the heap path out of line (words in registers).
    #[inline(always)]
    pub(crate) fn from_str_or_raise(s: &str) -> Self {
        if s.len() <= INLINE_CAPACITY {
            Self {
                w: inline_string(s.as_bytes()),
            }
        } else {
            // SAFETY: the raw words come from `Words::into_raw`.
            let w = unsafe { Words::from_raw(Self::heap_or_raise(s)) };
            Self { w }
        }
    }

    #[inline(never)]
    fn heap_or_raise(s: &str) -> Raw {
        match heap::allocate_exact(s.as_bytes()) {
            Ok(data) => Words::pointer(data.as_ptr(), s.len(), HEAP_TAG).into_raw(),
            Err(e) => e.raise(),
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
        // SAFETY: a heap string's word 0 is the non-null data pointer.
        unsafe { NonNull::new_unchecked(self.w.w0().cast_mut()) }
    }

    /// Same branch-light decoding as `Repr::as_bytes`.
    #[inline(always)]
    pub(crate) const fn as_bytes(&self) -> &[u8] {
        let last = self.w.last();
        let is_ptr = last >= HEAP_TAG;
        let mut inline_len = last.wrapping_sub(INLINE_TAG_BASE) as usize;
        if inline_len > INLINE_CAPACITY {
            inline_len = INLINE_CAPACITY;
        }
        let ptr = if is_ptr { self.w.w0 } else { self.w.base() };
        let len = if is_ptr {
            self.w.w1() & LEN_MASK
        } else {
            inline_len
        };
        // SAFETY: as in `Repr::as_bytes`.
        unsafe { slice::from_raw_parts(ptr, len) }
    }

    #[inline(always)]
    pub(crate) const fn as_str(&self) -> &str {
        // SAFETY: constructors only store valid UTF-8.
        unsafe { core::str::from_utf8_unchecked(self.as_bytes()) }
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

    /// O(1): a refcount increment for heap strings, a copy of the words otherwise. Kept
    /// free of `Result` so the words stay in registers.
    #[inline(always)]
    pub(crate) fn clone_or_raise(&self) -> Self {
        if self.kind() == Kind::Heap {
            // SAFETY: the buffer is live while we hold our reference.
            let rc = unsafe { heap::exact_refcount(self.heap_ptr()) };
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
        match Self::from_str(self.as_str()) {
            Ok(s) => {
                let s = core::mem::ManuallyDrop::new(s);
                // SAFETY: `s` is never used or dropped again; its words move out.
                unsafe { ptr::read(&s.w) }.into_raw()
            }
            Err(e) => e.raise(),
        }
    }

    /// Into a `LeanString`: inline and static strings move as they are (same encoding);
    /// a heap string is copied into a compact buffer (the headers differ).
    pub(crate) fn into_repr<L: HeaderPolicy>(self) -> Result<Repr<L>, ReserveError> {
        if self.kind() == Kind::Heap {
            return Repr::from_str(self.as_str());
        }
        let this = core::mem::ManuallyDrop::new(self);
        // SAFETY: we own `this` and never use or drop it again.
        let w = unsafe { ptr::read(&this.w) };
        // SAFETY: inline/static words mean the same in both types and own nothing.
        Ok(unsafe { Repr::from_words(w) })
    }

    /// From a `LeanString`: inline and static strings move, heap strings are copied exactly.
    pub(crate) fn from_repr<L: HeaderPolicy>(r: Repr<L>) -> Result<Self, ReserveError> {
        if r.kind() == Kind::Heap {
            return Self::from_str(r.as_str());
        }
        Ok(Self { w: r.into_words() })
    }

    #[cfg(test)]
    pub(crate) fn refcount_for_test(&self) -> &crate::sync::AtomicU32 {
        assert_eq!(self.kind(), Kind::Heap);
        // SAFETY: a live heap buffer.
        unsafe { heap::exact_refcount(self.heap_ptr()) }
    }
}

impl Drop for StrRepr {
    #[inline]
    fn drop(&mut self) {
        if self.kind() == Kind::Heap {
            let data = self.heap_ptr();
            // SAFETY: we hold a reference to the live buffer.
            if heap::release(unsafe { heap::exact_refcount(data) }) {
                // SAFETY: last reference; the buffer is exactly `len` bytes.
                unsafe { heap::free_exact(data, self.w.w1() & LEN_MASK) };
            }
        }
    }
}

// SAFETY: immutable shared bytes with an atomic refcount, as `Arc<str>`.
unsafe impl Send for StrRepr {}
// SAFETY: as above.
unsafe impl Sync for StrRepr {}
