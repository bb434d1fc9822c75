//! `LeanStr`: the immutable sibling of `LeanString`.

use alloc::string::String;
use core::ops::Deref;
use core::str::FromStr;

use crate::case::{self, Case};
use crate::edit::ok;
use crate::error::{FromUtf16Error, ReserveError};
use crate::repr::heap::{Compact, HeaderPolicy};
use crate::repr::{self, Kind, Shared, StrRepr};
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
    #[inline]
    #[must_use]
    pub const fn new() -> Self {
        Self {
            repr: StrRepr::new(),
        }
    }

    /// Wraps a `&'static str` in O(1) without allocating: inline if it fits, otherwise the
    /// static form.
    ///
    /// # Panics
    /// If `text` is longer than [`MAX_WORD_LEN`](crate::MAX_WORD_LEN) (only on 32-bit).
    #[inline]
    #[must_use]
    pub const fn from_static_str(text: &'static str) -> Self {
        Self {
            repr: StrRepr::from_static(text),
        }
    }

    /// Copies `buf` if it is valid UTF-8.
    #[inline]
    pub fn from_utf8(buf: &[u8]) -> Result<Self, core::str::Utf8Error> {
        Ok(Self::from(core::str::from_utf8(buf)?))
    }

    /// Copies `buf`, replacing invalid sequences with U+FFFD.
    #[must_use]
    pub fn from_utf8_lossy(buf: &[u8]) -> Self {
        LeanString::from_utf8_lossy(buf).into_lean_str()
    }

    /// Copies `buf` without checking it.
    ///
    /// # Safety
    /// `buf` must be valid UTF-8.
    #[inline]
    #[must_use]
    pub unsafe fn from_utf8_unchecked(buf: &[u8]) -> Self {
        // SAFETY: caller's contract.
        Self::from(unsafe { core::str::from_utf8_unchecked(buf) })
    }

    /// Decodes UTF-16; an unpaired surrogate is an error.
    pub fn from_utf16(buf: &[u16]) -> Result<Self, FromUtf16Error> {
        LeanString::from_utf16(buf).map(LeanString::into_lean_str)
    }

    /// Decodes UTF-16, replacing unpaired surrogates with U+FFFD.
    #[must_use]
    pub fn from_utf16_lossy(buf: &[u16]) -> Self {
        LeanString::from_utf16_lossy(buf).into_lean_str()
    }

    /// Decodes little-endian UTF-16 bytes; an unpaired surrogate or an odd length is an
    /// error.
    pub fn from_utf16le(buf: &[u8]) -> Result<Self, FromUtf16Error> {
        LeanString::from_utf16le(buf).map(LeanString::into_lean_str)
    }

    /// Decodes little-endian UTF-16 bytes lossily (see [`LeanString::from_utf16le_lossy`]).
    #[must_use]
    pub fn from_utf16le_lossy(buf: &[u8]) -> Self {
        LeanString::from_utf16le_lossy(buf).into_lean_str()
    }

    /// Decodes big-endian UTF-16 bytes; an unpaired surrogate or an odd length is an error.
    pub fn from_utf16be(buf: &[u8]) -> Result<Self, FromUtf16Error> {
        LeanString::from_utf16be(buf).map(LeanString::into_lean_str)
    }

    /// Decodes big-endian UTF-16 bytes lossily (see [`LeanString::from_utf16be_lossy`]).
    #[must_use]
    pub fn from_utf16be_lossy(buf: &[u8]) -> Self {
        LeanString::from_utf16be_lossy(buf).into_lean_str()
    }

    /// The contents.
    #[inline]
    #[must_use]
    pub const fn as_str(&self) -> &str {
        self.repr.as_str()
    }

    /// The contents as bytes.
    #[inline]
    #[must_use]
    pub const fn as_bytes(&self) -> &[u8] {
        self.repr.as_bytes()
    }

    /// Length in bytes.
    #[inline]
    #[must_use]
    pub const fn len(&self) -> usize {
        self.as_bytes().len()
    }

    /// `true` if empty.
    #[inline]
    #[must_use]
    pub const fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// `true` if the contents live in a heap buffer.
    #[inline]
    #[must_use]
    pub fn is_heap_allocated(&self) -> bool {
        self.repr.kind() == Kind::Heap
    }

    /// The `&'static str` this string wraps, if made by `from_static_str` and too long to
    /// be inline.
    #[inline]
    #[must_use]
    pub const fn as_static_str(&self) -> Option<&'static str> {
        self.repr.as_static_str()
    }

    /// The string repeated `n` times, in one exact-size buffer: `repeat(1)` is a clone and
    /// an empty result costs O(1).
    ///
    /// # Panics
    /// On capacity overflow or allocation failure.
    #[must_use]
    #[track_caller]
    pub fn repeat(&self, n: usize) -> Self {
        ok(self.try_repeat(n))
    }

    /// Fallible [`repeat`](Self::repeat).
    pub fn try_repeat(&self, n: usize) -> Result<Self, ReserveError> {
        repr::repeat(&self.repr, n).map(Self::from_repr)
    }

    /// The lowercase form; a clone when nothing changes.
    ///
    /// # Panics
    /// If allocation fails.
    #[must_use]
    #[track_caller]
    pub fn to_lowercase(&self) -> Self {
        match ok(case::convert::<Compact>(self.as_str(), Case::Lower)) {
            Some(s) => s.into_lean_str(),
            None => self.clone(),
        }
    }

    /// The uppercase form; a clone when nothing changes.
    ///
    /// # Panics
    /// If allocation fails.
    #[must_use]
    #[track_caller]
    pub fn to_uppercase(&self) -> Self {
        match ok(case::convert::<Compact>(self.as_str(), Case::Upper)) {
            Some(s) => s.into_lean_str(),
            None => self.clone(),
        }
    }

    /// A copy with ASCII letters lowercased, in one exact-size buffer; a clone when nothing
    /// changes.
    #[must_use]
    #[track_caller]
    pub fn to_ascii_lowercase(&self) -> Self {
        ok(self.try_to_ascii_lowercase())
    }

    /// Fallible [`to_ascii_lowercase`](Self::to_ascii_lowercase).
    pub fn try_to_ascii_lowercase(&self) -> Result<Self, ReserveError> {
        repr::ascii_case(&self.repr, false).map(Self::from_repr)
    }

    /// A copy with ASCII letters uppercased; a clone when nothing changes.
    #[must_use]
    #[track_caller]
    pub fn to_ascii_uppercase(&self) -> Self {
        ok(self.try_to_ascii_uppercase())
    }

    /// Fallible [`to_ascii_uppercase`](Self::to_ascii_uppercase).
    pub fn try_to_ascii_uppercase(&self) -> Result<Self, ReserveError> {
        repr::ascii_case(&self.repr, true).map(Self::from_repr)
    }

    /// The contents as a `String` (a copy).
    #[must_use]
    pub fn into_string(self) -> String {
        String::from(self.as_str())
    }

    /// Converts into a [`LeanString`]: inline and static strings move without copying; a
    /// heap string is copied (the headers differ), with capacity equal to its length.
    #[must_use]
    #[track_caller]
    pub fn into_lean_string(self) -> LeanString {
        ok(self.try_into_lean_string())
    }

    /// Fallible [`into_lean_string`](Self::into_lean_string).
    pub fn try_into_lean_string(self) -> Result<LeanString, ReserveError> {
        self.try_into_lean_string_with()
    }

    pub(crate) fn try_into_lean_string_with<L: HeaderPolicy>(
        self,
    ) -> Result<LeanStringWith<L>, ReserveError> {
        self.repr.into_repr().map(LeanStringWith::from_repr)
    }

    pub(crate) fn from_repr(repr: StrRepr) -> Self {
        Self { repr }
    }

    /// A clone that reports the allocation failure of the saturated (copying) path.
    pub(crate) fn try_clone(&self) -> Result<Self, ReserveError> {
        self.repr.try_clone().map(Self::from_repr)
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

    #[inline]
    fn clone_from(&mut self, source: &Self) {
        *self = source.clone();
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

impl crate::traits::Contents for LeanStr {
    #[inline]
    fn contents_eq(&self, other: &Self) -> bool {
        self.repr.eq_contents(&other.repr)
    }
    #[inline]
    fn contents_cmp(&self, other: &Self) -> core::cmp::Ordering {
        self.repr.cmp_contents(&other.repr)
    }
}

impl From<&str> for LeanStr {
    #[inline]
    #[track_caller]
    fn from(s: &str) -> Self {
        Self {
            repr: StrRepr::from_str_or_raise(s),
        }
    }
}

impl FromStr for LeanStr {
    type Err = ReserveError;
    #[inline]
    fn from_str(s: &str) -> Result<Self, ReserveError> {
        StrRepr::from_str(s).map(|repr| Self { repr })
    }
}
