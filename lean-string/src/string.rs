//! `LeanString`: the public, safe API over `repr::Repr`.

use alloc::borrow::Cow;
use alloc::boxed::Box;
use alloc::string::String;
use core::fmt;
use core::ops::{Add, AddAssign, Deref};
use core::str::FromStr;

use crate::LeanStr;
use crate::edit::{self, assert_index, ok};
use crate::error::{FromUtf16Error, ReserveError};
use crate::repr::heap::{Compact, HeaderPolicy, Wide};
use crate::repr::{Kind, Mutable, Repr, Shared, StrRepr};

/// A 16-byte (8 on 32-bit), clone-on-write, small-string-optimized string with the 8-byte
/// heap header. See the [crate documentation](crate) for the layout.
///
/// `L` picks the heap header: [`LeanString`] is `LeanStringWith<Compact>`, the normal
/// type; [`WideLeanString`] forces the wide 16-byte header on every heap buffer.
#[repr(transparent)]
pub struct LeanStringWith<L: HeaderPolicy> {
    repr: Repr<L>,
}

/// The string: inline up to [`INLINE_CAPACITY`](crate::INLINE_CAPACITY) bytes, a
/// `&'static str`, or a shared heap buffer behind the compact 8-byte header.
pub type LeanString = LeanStringWith<Compact>;

/// `LeanString` with the wide header forced on every heap buffer: the "before" layout, for
/// tests and the compact-vs-wide benchmark in one binary. The normal type pays nothing for it.
pub type WideLeanString = LeanStringWith<Wide>;

static_assertions::assert_eq_size!(LeanString, [usize; 2]);
static_assertions::assert_eq_size!(Option<LeanString>, [usize; 2]);
static_assertions::assert_eq_size!(WideLeanString, [usize; 2]);
static_assertions::assert_impl_all!(LeanString: Send, Sync, Unpin);

impl<L: HeaderPolicy> LeanStringWith<L> {
    /// An empty string; no allocation.
    #[inline]
    pub const fn new() -> Self {
        Self { repr: Repr::new() }
    }

    /// Wraps a `&'static str` in O(1) without allocating or copying.
    #[inline]
    pub const fn from_static_str(text: &'static str) -> Self {
        Self {
            repr: Repr::from_static(text),
        }
    }

    /// An empty string with room for at least `capacity` bytes.
    ///
    /// # Panics
    /// If the capacity exceeds [`MAX_LEN`](crate::MAX_LEN) or the allocation fails.
    #[inline]
    pub fn with_capacity(capacity: usize) -> Self {
        ok(Self::try_with_capacity(capacity))
    }

    /// Fallible [`with_capacity`](Self::with_capacity).
    #[inline]
    pub fn try_with_capacity(capacity: usize) -> Result<Self, ReserveError> {
        Repr::with_capacity(capacity).map(|repr| Self { repr })
    }

    /// Copies `buf` if it is valid UTF-8.
    pub fn from_utf8(buf: &[u8]) -> Result<Self, core::str::Utf8Error> {
        Ok(Self::from(core::str::from_utf8(buf)?))
    }

    /// Copies `buf`, replacing invalid UTF-8 sequences with U+FFFD.
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
        let mut s = Self::with_capacity(buf.len());
        for c in char::decode_utf16(buf.iter().copied()) {
            s.push(c.map_err(|_| FromUtf16Error(()))?);
        }
        Ok(s)
    }

    /// Decodes UTF-16, replacing unpaired surrogates with U+FFFD.
    pub fn from_utf16_lossy(buf: &[u16]) -> Self {
        let mut s = Self::with_capacity(buf.len());
        for c in char::decode_utf16(buf.iter().copied()) {
            s.push(c.unwrap_or(char::REPLACEMENT_CHARACTER));
        }
        s
    }

    /// Length in bytes.
    #[inline]
    pub const fn len(&self) -> usize {
        self.repr.len()
    }

    /// `true` if the length is zero.
    #[inline]
    pub const fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes the string can hold without reallocating: the inline capacity, the heap
    /// buffer's capacity, or the length of a static string.
    #[inline]
    pub fn capacity(&self) -> usize {
        self.repr.capacity()
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

    /// The `&'static str` this string wraps, if it was made by `from_static_str`.
    #[inline]
    pub const fn as_static_str(&self) -> Option<&'static str> {
        self.repr.as_static_str()
    }

    /// `true` if the contents live in a heap buffer (possibly shared).
    #[inline]
    pub fn is_heap_allocated(&self) -> bool {
        self.repr.kind() == Kind::Heap
    }

    /// `true` if the heap buffer uses the wide 16-byte header (capacity `>= u32::MAX`, or
    /// the [`WideLeanString`] policy).
    #[inline]
    pub fn uses_wide_header(&self) -> bool {
        self.repr.is_wide()
    }

    /// Ensures room for `additional` more bytes; unshares a shared or static string.
    /// `reserve(0)` does nothing.
    ///
    /// # Panics
    /// On capacity overflow or allocation failure.
    #[inline]
    pub fn reserve(&mut self, additional: usize) {
        ok(self.try_reserve(additional))
    }

    /// Fallible [`reserve`](Self::reserve); the string is unchanged on error.
    #[inline]
    pub fn try_reserve(&mut self, additional: usize) -> Result<(), ReserveError> {
        if additional == 0 {
            return Ok(());
        }
        self.repr.make_mut(additional)
    }

    /// Frees unused heap capacity (moving a short string inline).
    pub fn shrink_to_fit(&mut self) {
        ok(self.try_shrink_to_fit())
    }

    /// Fallible [`shrink_to_fit`](Self::shrink_to_fit).
    pub fn try_shrink_to_fit(&mut self) -> Result<(), ReserveError> {
        self.repr.shrink_to(0)
    }

    /// Shrinks the heap capacity to at least `max(len, min_capacity)`.
    pub fn shrink_to(&mut self, min_capacity: usize) {
        ok(self.try_shrink_to(min_capacity))
    }

    /// Fallible [`shrink_to`](Self::shrink_to).
    pub fn try_shrink_to(&mut self, min_capacity: usize) -> Result<(), ReserveError> {
        self.repr.shrink_to(min_capacity)
    }

    /// Appends a char.
    #[inline]
    pub fn push(&mut self, ch: char) {
        ok(self.try_push(ch))
    }

    /// Fallible [`push`](Self::push).
    #[inline]
    pub fn try_push(&mut self, ch: char) -> Result<(), ReserveError> {
        self.try_push_str(ch.encode_utf8(&mut [0; 4]))
    }

    /// Removes and returns the last char.
    pub fn pop(&mut self) -> Option<char> {
        ok(self.try_pop())
    }

    /// Fallible [`pop`](Self::pop) (popping a shared string copies it).
    pub fn try_pop(&mut self) -> Result<Option<char>, ReserveError> {
        edit::try_pop(&mut self.repr)
    }

    /// Appends a string slice.
    #[inline]
    pub fn push_str(&mut self, string: &str) {
        ok(self.try_push_str(string))
    }

    /// Fallible [`push_str`](Self::push_str); the string is unchanged on error.
    #[inline]
    pub fn try_push_str(&mut self, string: &str) -> Result<(), ReserveError> {
        if string.is_empty() {
            return Ok(());
        }
        self.repr.push_str(string)
    }

    /// Removes and returns the char at byte index `idx`.
    ///
    /// # Panics
    /// If `idx` is not a char boundary below the length.
    #[track_caller]
    pub fn remove(&mut self, idx: usize) -> char {
        ok(self.try_remove(idx))
    }

    /// Fallible [`remove`](Self::remove) (still panics on a bad index, as `String` does).
    #[track_caller]
    pub fn try_remove(&mut self, idx: usize) -> Result<char, ReserveError> {
        edit::try_remove(&mut self.repr, idx)
    }

    /// Keeps only the chars for which `predicate` returns `true`.
    pub fn retain(&mut self, predicate: impl FnMut(char) -> bool) {
        ok(self.try_retain(predicate))
    }

    /// Fallible [`retain`](Self::retain): unsharing is the only fallible step and happens
    /// before the predicate runs.
    pub fn try_retain(&mut self, predicate: impl FnMut(char) -> bool) -> Result<(), ReserveError> {
        self.repr.retain(predicate)
    }

    /// Inserts a char at byte index `idx`.
    ///
    /// # Panics
    /// If `idx` is past the end or not a char boundary.
    #[track_caller]
    pub fn insert(&mut self, idx: usize, ch: char) {
        ok(self.try_insert(idx, ch))
    }

    /// Fallible [`insert`](Self::insert).
    #[track_caller]
    pub fn try_insert(&mut self, idx: usize, ch: char) -> Result<(), ReserveError> {
        self.try_insert_str(idx, ch.encode_utf8(&mut [0; 4]))
    }

    /// Inserts a string slice at byte index `idx`.
    ///
    /// # Panics
    /// If `idx` is past the end or not a char boundary.
    #[track_caller]
    pub fn insert_str(&mut self, idx: usize, string: &str) {
        ok(self.try_insert_str(idx, string))
    }

    /// Fallible [`insert_str`](Self::insert_str); inserting `""` only checks the index.
    #[track_caller]
    pub fn try_insert_str(&mut self, idx: usize, string: &str) -> Result<(), ReserveError> {
        assert_index(self.as_str(), idx, "insert");
        if string.is_empty() {
            return Ok(());
        }
        self.repr.insert_str(idx, string)
    }

    /// The string repeated `n` times.
    ///
    /// # Panics
    /// On capacity overflow or allocation failure.
    pub fn repeat(&self, n: usize) -> Self {
        ok(self.try_repeat(n))
    }

    /// Fallible [`repeat`](Self::repeat).
    pub fn try_repeat(&self, n: usize) -> Result<Self, ReserveError> {
        edit::try_repeat(&self.repr, n).map(Self::from_repr)
    }

    /// Shortens the string to `new_len` bytes; does nothing if `new_len >= len`.
    ///
    /// # Panics
    /// If `new_len` is not a char boundary.
    #[track_caller]
    pub fn truncate(&mut self, new_len: usize) {
        ok(self.try_truncate(new_len))
    }

    /// Fallible [`truncate`](Self::truncate) (truncating a shared string copies it).
    #[track_caller]
    pub fn try_truncate(&mut self, new_len: usize) -> Result<(), ReserveError> {
        edit::try_truncate(&mut self.repr, new_len)
    }

    /// Splits at byte index `at`: `self` keeps `..at`, the result holds `at..`.
    ///
    /// # Panics
    /// If `at` is past the end or not a char boundary.
    #[track_caller]
    pub fn split_off(&mut self, at: usize) -> Self {
        ok(self.try_split_off(at))
    }

    /// Fallible [`split_off`](Self::split_off); on error `self` is unchanged.
    #[track_caller]
    pub fn try_split_off(&mut self, at: usize) -> Result<Self, ReserveError> {
        edit::try_split_off(&mut self.repr, at).map(Self::from_repr)
    }

    /// Empties the string (a shared or static string becomes an empty inline one; never
    /// allocates).
    pub fn clear(&mut self) {
        edit::clear(&mut self.repr);
    }

    /// Converts into a [`LeanStr`]: inline and static strings move without copying, a heap
    /// string is copied into an exact-size buffer.
    pub fn into_lean_str(self) -> LeanStr {
        ok(self.try_into_lean_str())
    }

    /// Fallible [`into_lean_str`](Self::into_lean_str).
    pub fn try_into_lean_str(self) -> Result<LeanStr, ReserveError> {
        StrRepr::from_repr(self.repr).map(LeanStr::from_repr)
    }

    pub(crate) fn from_repr(repr: Repr<L>) -> Self {
        Self { repr }
    }

    #[cfg(test)]
    pub(crate) fn repr(&self) -> &Repr<L> {
        &self.repr
    }
}

impl<L: HeaderPolicy> Clone for LeanStringWith<L> {
    /// O(1) for inline, static and heap strings (a refcount increment); a heap string
    /// whose count is saturated is deep-copied instead.
    #[inline]
    fn clone(&self) -> Self {
        Self {
            repr: self.repr.clone_or_raise(),
        }
    }
}

impl<L: HeaderPolicy> Default for LeanStringWith<L> {
    fn default() -> Self {
        Self::new()
    }
}

impl<L: HeaderPolicy> Deref for LeanStringWith<L> {
    type Target = str;
    #[inline]
    fn deref(&self) -> &str {
        self.as_str()
    }
}

crate::traits::str_traits!([L: HeaderPolicy] LeanStringWith<L>);

impl<L: HeaderPolicy> From<&str> for LeanStringWith<L> {
    #[inline]
    fn from(s: &str) -> Self {
        Self {
            repr: Repr::from_str_or_raise(s),
        }
    }
}
crate::traits::from_str_impls!([L: HeaderPolicy] LeanStringWith<L>);
impl From<LeanStr> for LeanString {
    fn from(s: LeanStr) -> Self {
        s.into_lean_string()
    }
}
impl From<&LeanStr> for LeanString {
    fn from(s: &LeanStr) -> Self {
        Self::from(s.as_str())
    }
}
impl<L: HeaderPolicy> FromStr for LeanStringWith<L> {
    type Err = ReserveError;
    fn from_str(s: &str) -> Result<Self, ReserveError> {
        Repr::from_str(s).map(|repr| Self { repr })
    }
}

macro_rules! extend_impls {
    ($($t:ty => |$s:ident, $x:ident| $push:expr;)*) => {$(
        impl<'a, L: HeaderPolicy> Extend<$t> for LeanStringWith<L> {
            fn extend<I: IntoIterator<Item = $t>>(&mut self, iter: I) {
                let iter = iter.into_iter();
                self.reserve(iter.size_hint().0);
                for $x in iter {
                    let $s = &mut *self;
                    $push;
                }
            }
        }
        impl<'a, L: HeaderPolicy> FromIterator<$t> for LeanStringWith<L> {
            fn from_iter<I: IntoIterator<Item = $t>>(iter: I) -> Self {
                let mut s = Self::new();
                s.extend(iter);
                s
            }
        }
    )*};
}
extend_impls! {
    char => |s, c| s.push(c);
    &'a char => |s, c| s.push(*c);
    &'a str => |s, x| s.push_str(x);
    String => |s, x| s.push_str(&x);
    Box<str> => |s, x| s.push_str(&x);
    Cow<'a, str> => |s, x| s.push_str(&x);
    LeanStringWith<L> => |s, x| s.push_str(&x);
    LeanStr => |s, x| s.push_str(&x);
}

impl<L: HeaderPolicy> fmt::Write for LeanStringWith<L> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.try_push_str(s).map_err(|_| fmt::Error)
    }
}

impl<L: HeaderPolicy> Add<&str> for LeanStringWith<L> {
    type Output = Self;
    fn add(mut self, rhs: &str) -> Self {
        self.push_str(rhs);
        self
    }
}

impl<L: HeaderPolicy> AddAssign<&str> for LeanStringWith<L> {
    fn add_assign(&mut self, rhs: &str) {
        self.push_str(rhs);
    }
}
