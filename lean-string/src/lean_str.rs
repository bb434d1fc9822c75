//! `LeanStr`: the immutable sibling of `LeanString`.

use alloc::borrow::Cow;
use alloc::boxed::Box;
use alloc::string::String;
use core::ops::Deref;
use core::str::FromStr;

use crate::edit::ok;
use crate::error::{FromUtf16Error, ReserveError};
use crate::repr::{Kind, Shared, StrRepr};
use crate::{LeanString, LeanStringWith};

/// An immutable 16-byte (8 on 32-bit) string: inline, static, or a shared heap buffer sized
/// exactly to the length behind a 4-byte refcount (`request = len + 4`).
#[repr(transparent)]
pub struct LeanStr {
    repr: StrRepr,
}

static_assertions::assert_eq_size!(LeanStr, [usize; 2]);
static_assertions::assert_eq_size!(Option<LeanStr>, [usize; 2]);
static_assertions::assert_impl_all!(LeanStr: Send, Sync, Unpin);

impl LeanStr {
    /// An empty string.
    pub const fn new() -> Self {
        Self {
            repr: StrRepr::new(),
        }
    }

    /// Wraps a `&'static str` in O(1) without allocating.
    pub const fn from_static_str(text: &'static str) -> Self {
        Self {
            repr: StrRepr::from_static(text),
        }
    }

    /// Copies `buf` if it is valid UTF-8.
    pub fn from_utf8(buf: &[u8]) -> Result<Self, core::str::Utf8Error> {
        Ok(Self::from(core::str::from_utf8(buf)?))
    }

    /// Copies `buf`, replacing invalid sequences with U+FFFD.
    pub fn from_utf8_lossy(buf: &[u8]) -> Self {
        Self::from(String::from_utf8_lossy(buf))
    }

    /// Copies `buf` without checking it.
    ///
    /// # Safety
    /// `buf` must be valid UTF-8.
    pub unsafe fn from_utf8_unchecked(buf: &[u8]) -> Self {
        // SAFETY: caller's contract.
        Self::from(unsafe { core::str::from_utf8_unchecked(buf) })
    }

    /// Decodes UTF-16; an unpaired surrogate is an error.
    pub fn from_utf16(buf: &[u16]) -> Result<Self, FromUtf16Error> {
        LeanString::from_utf16(buf).map(LeanString::into_lean_str)
    }

    /// Decodes UTF-16, replacing unpaired surrogates with U+FFFD.
    pub fn from_utf16_lossy(buf: &[u16]) -> Self {
        LeanString::from_utf16_lossy(buf).into_lean_str()
    }

    /// The contents.
    #[inline]
    pub const fn as_str(&self) -> &str {
        self.repr.as_str()
    }

    /// The contents as bytes.
    #[inline]
    pub const fn as_bytes(&self) -> &[u8] {
        self.repr.as_bytes()
    }

    /// Length in bytes.
    #[inline]
    pub const fn len(&self) -> usize {
        self.as_bytes().len()
    }

    /// `true` if empty.
    #[inline]
    pub const fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// `true` if the contents live in a heap buffer.
    pub fn is_heap_allocated(&self) -> bool {
        self.repr.kind() == Kind::Heap
    }

    /// The `&'static str` this string wraps, if made by `from_static_str`.
    pub const fn as_static_str(&self) -> Option<&'static str> {
        self.repr.as_static_str()
    }

    /// Converts into a [`LeanString`]: inline and static strings move without copying; a
    /// heap string is copied (the headers differ).
    pub fn into_lean_string(self) -> LeanString {
        ok(self.try_into_lean_string())
    }

    /// Fallible [`into_lean_string`](Self::into_lean_string).
    pub fn try_into_lean_string(self) -> Result<LeanString, ReserveError> {
        self.repr.into_repr().map(LeanStringWith::from_repr)
    }

    pub(crate) fn from_repr(repr: StrRepr) -> Self {
        Self { repr }
    }

    #[cfg(test)]
    pub(crate) fn repr(&self) -> &StrRepr {
        &self.repr
    }
}

impl Clone for LeanStr {
    /// O(1); a saturated refcount makes it a deep copy.
    #[inline]
    fn clone(&self) -> Self {
        Self {
            repr: self.repr.clone_or_raise(),
        }
    }
}

impl Default for LeanStr {
    fn default() -> Self {
        Self::new()
    }
}

impl Deref for LeanStr {
    type Target = str;
    #[inline]
    fn deref(&self) -> &str {
        self.as_str()
    }
}

crate::traits::str_traits!([] LeanStr);

impl From<&str> for LeanStr {
    #[inline]
    fn from(s: &str) -> Self {
        Self {
            repr: StrRepr::from_str_or_raise(s),
        }
    }
}
crate::traits::from_str_impls!([] LeanStr);
impl From<LeanString> for LeanStr {
    fn from(s: LeanString) -> Self {
        s.into_lean_str()
    }
}
impl From<&LeanString> for LeanStr {
    fn from(s: &LeanString) -> Self {
        Self::from(s.as_str())
    }
}
impl FromStr for LeanStr {
    type Err = ReserveError;
    fn from_str(s: &str) -> Result<Self, ReserveError> {
        StrRepr::from_str(s).map(|repr| Self { repr })
    }
}

macro_rules! from_iter {
    ($($t:ty),*) => {$(
        impl<'a> FromIterator<$t> for LeanStr {
            fn from_iter<I: IntoIterator<Item = $t>>(iter: I) -> Self {
                LeanString::from_iter(iter).into_lean_str()
            }
        }
    )*};
}
from_iter!(
    char,
    &'a char,
    &'a str,
    String,
    Box<str>,
    Cow<'a, str>,
    LeanStr
);
