//! `LeanStr`'s representation: inline and static as `LeanString`, heap buffers sized
//! exactly to the length behind a 4-byte refcount. Clone and drop are [`Shared`]'s.

use core::ptr;

use super::heap::{self, HeaderPolicy};
use super::shared::{Shared, raw_or_raise};
use super::{HEAP_TAG, INLINE_CAPACITY, INLINE_TAG_BASE, Kind, MAX_WORD_LEN, Raw, Words};
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

    /// Inline when it fits, else the static form (as `LeanString`).
    pub(crate) const fn from_static(s: &'static str) -> Self {
        if s.len() <= INLINE_CAPACITY {
            return Self {
                w: inline_string(s.as_bytes()),
            };
        }
        assert!(s.len() <= MAX_WORD_LEN, "text is too long");
        Self {
            w: Words::static_str(s.as_bytes()),
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
        raw_or_raise(Self::heap(s))
    }

    /// An exact heap buffer holding a copy of `s`.
    #[inline(always)]
    fn heap(s: &str) -> Result<Self, ReserveError> {
        let data = heap::allocate_exact(s.as_bytes())?;
        Ok(Self {
            w: Words::pointer(data.as_ptr(), s.len(), HEAP_TAG),
        })
    }

    #[inline(always)]
    pub(crate) fn kind(&self) -> Kind {
        self.w.kind()
    }

    /// Same decoding as `Repr::as_bytes`; the length is always in word 1.
    #[inline(always)]
    pub(crate) const fn as_bytes(&self) -> &[u8] {
        self.w.str_bytes(false)
    }

    /// `str` ordering, inline strings compared in registers.
    #[inline(always)]
    pub(crate) fn cmp_contents(&self, other: &Self) -> core::cmp::Ordering {
        self.w.str_cmp(&other.w, false)
    }

    /// `str` equality, inline strings compared in registers.
    #[inline(always)]
    pub(crate) fn eq_contents(&self, other: &Self) -> bool {
        self.w.str_eq(&other.w, false)
    }

    #[inline(always)]
    pub(crate) const fn as_str(&self) -> &str {
        // SAFETY: constructors only store valid UTF-8.
        unsafe { core::str::from_utf8_unchecked(self.as_bytes()) }
    }

    pub(crate) const fn as_static_str(&self) -> Option<&'static str> {
        self.w.as_static_str()
    }

    /// Into a `LeanString`: inline and static strings move as they are (same encoding);
    /// a heap string is copied into a compact buffer (the headers differ).
    pub(crate) fn into_repr<L: HeaderPolicy>(self) -> Result<Repr<L>, ReserveError> {
        if self.kind() == Kind::Heap {
            return Repr::from_str(self.as_str());
        }
        let w = self.into_words();
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
}

// SAFETY: `w` is always one of `StrRepr`'s words: constructors make inline, static or
// `heap::allocate_exact` heap strings (length in word 1) owning one reference
// (`heap::Exact` buffers).
unsafe impl Shared for StrRepr {
    type Buf = heap::Exact;

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

    const INLINE_CAP: usize = INLINE_CAPACITY;

    const LEAN_INLINE: bool = true;

    #[inline(always)]
    fn inline(bytes: &[u8]) -> Self {
        Self {
            w: inline_string(bytes),
        }
    }

    unsafe fn heap_with(len: usize, fill: impl FnOnce(*mut u8)) -> Result<Self, ReserveError> {
        let data = heap::allocate_exact_uninit(len)?;
        fill(data.as_ptr());
        Ok(Self {
            w: Words::pointer(data.as_ptr(), len, HEAP_TAG),
        })
    }

    #[inline]
    fn from_str(s: &str) -> Result<Self, ReserveError> {
        if s.len() <= INLINE_CAPACITY {
            Ok(Self {
                w: inline_string(s.as_bytes()),
            })
        } else {
            Self::heap(s)
        }
    }
}

impl Drop for StrRepr {
    #[inline]
    fn drop(&mut self) {
        self.release();
    }
}

// SAFETY: immutable shared bytes with an atomic refcount, as `Arc<str>`.
unsafe impl Send for StrRepr {}
// SAFETY: as above.
unsafe impl Sync for StrRepr {}
