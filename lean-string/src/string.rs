//! `LeanString`: the public, safe API over `repr::Repr`.

use alloc::string::String;
use core::ops::{Deref, DerefMut, RangeBounds};
use core::str::FromStr;

use crate::LeanStr;
use crate::case::{self, Case};
use crate::edit::{self, assert_boundary, ok, slice_range};
use crate::error::{FromUtf16Error, ReserveError};
use crate::repr::heap::{Compact, HeaderPolicy, Wide};
use crate::repr::{self, Kind, Mutable, Repr, Shared, StrRepr};
use crate::utf16::{self, Order};

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
    #[must_use]
    pub const fn new() -> Self {
        Self { repr: Repr::new() }
    }

    /// Wraps a `&'static str` in O(1) without allocating: inline if it fits, otherwise the
    /// static form, which points at `text`.
    ///
    /// # Panics
    /// If `text` is longer than [`MAX_WORD_LEN`](crate::MAX_WORD_LEN) (only possible on
    /// 32-bit targets), with the message "text is too long".
    #[inline]
    #[must_use]
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
    #[must_use]
    #[track_caller]
    pub fn with_capacity(capacity: usize) -> Self {
        ok(Self::try_with_capacity(capacity))
    }

    /// Fallible [`with_capacity`](Self::with_capacity).
    #[inline]
    pub fn try_with_capacity(capacity: usize) -> Result<Self, ReserveError> {
        Repr::with_capacity(capacity).map(Self::from_repr)
    }

    /// Copies `buf` if it is valid UTF-8.
    #[inline]
    pub fn from_utf8(buf: &[u8]) -> Result<Self, core::str::Utf8Error> {
        Ok(Self::from(core::str::from_utf8(buf)?))
    }

    /// Copies `buf`, replacing each invalid UTF-8 sequence with U+FFFD, into a string with
    /// room for `buf.len()` bytes.
    #[must_use]
    pub fn from_utf8_lossy(buf: &[u8]) -> Self {
        let mut s = Self::with_capacity(buf.len());
        for chunk in buf.utf8_chunks() {
            s.push_str(chunk.valid());
            if !chunk.invalid().is_empty() {
                s.push(char::REPLACEMENT_CHARACTER);
            }
        }
        s
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
        utf16::decode(buf.iter().copied(), buf.len(), false)
    }

    /// Decodes UTF-16, replacing unpaired surrogates with U+FFFD.
    #[must_use]
    pub fn from_utf16_lossy(buf: &[u16]) -> Self {
        match utf16::decode(buf.iter().copied(), buf.len(), true) {
            Ok(s) => s,
            Err(_) => unreachable!("lossy decoding has no errors"),
        }
    }

    /// Decodes little-endian UTF-16 bytes; an unpaired surrogate or an odd length is an
    /// error.
    pub fn from_utf16le(buf: &[u8]) -> Result<Self, FromUtf16Error> {
        utf16::decode_bytes(buf, Order::Le, false)
    }

    /// Decodes little-endian UTF-16 bytes, replacing unpaired surrogates (and a trailing odd
    /// byte) with U+FFFD.
    #[must_use]
    pub fn from_utf16le_lossy(buf: &[u8]) -> Self {
        match utf16::decode_bytes(buf, Order::Le, true) {
            Ok(s) => s,
            Err(_) => unreachable!("lossy decoding has no errors"),
        }
    }

    /// Decodes big-endian UTF-16 bytes; an unpaired surrogate or an odd length is an error.
    pub fn from_utf16be(buf: &[u8]) -> Result<Self, FromUtf16Error> {
        utf16::decode_bytes(buf, Order::Be, false)
    }

    /// Decodes big-endian UTF-16 bytes, replacing unpaired surrogates (and a trailing odd
    /// byte) with U+FFFD.
    #[must_use]
    pub fn from_utf16be_lossy(buf: &[u8]) -> Self {
        match utf16::decode_bytes(buf, Order::Be, true) {
            Ok(s) => s,
            Err(_) => unreachable!("lossy decoding has no errors"),
        }
    }

    /// Length in bytes.
    #[inline]
    #[must_use]
    pub const fn len(&self) -> usize {
        self.repr.len()
    }

    /// `true` if the length is zero.
    #[inline]
    #[must_use]
    pub const fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes the string can hold without reallocating: the inline capacity, the heap
    /// buffer's capacity, or the length of a static string.
    #[inline]
    #[must_use]
    pub fn capacity(&self) -> usize {
        self.repr.capacity()
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

    /// The contents, writable. A shared or static string is copied first (into inline
    /// storage if it fits), so no other string sees the change.
    ///
    /// # Panics
    /// If that copy cannot be allocated.
    #[inline]
    #[track_caller]
    pub fn as_mut_str(&mut self) -> &mut str {
        ok(self.repr.as_mut_str())
    }

    /// Fallible [`as_mut_str`](Self::as_mut_str).
    #[inline]
    pub fn try_as_mut_str(&mut self) -> Result<&mut str, ReserveError> {
        self.repr.as_mut_str()
    }

    /// The `&'static str` this string wraps, if it was made by `from_static_str` and is too
    /// long to be inline.
    #[inline]
    #[must_use]
    pub const fn as_static_str(&self) -> Option<&'static str> {
        self.repr.as_static_str()
    }

    /// `true` if the contents live in a heap buffer (possibly shared).
    #[inline]
    #[must_use]
    pub fn is_heap_allocated(&self) -> bool {
        self.repr.kind() == Kind::Heap
    }

    /// `true` if the heap buffer uses the wide 16-byte header (capacity `>= u32::MAX`, or
    /// the [`WideLeanString`] policy).
    #[inline]
    #[must_use]
    pub fn uses_wide_header(&self) -> bool {
        self.repr.is_wide()
    }

    /// Ensures room for `additional` more bytes, growing by at least half the length; a
    /// shared or static string is copied. `reserve(0)` does nothing.
    ///
    /// # Panics
    /// On capacity overflow or allocation failure.
    #[inline]
    #[track_caller]
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

    /// Ensures room for exactly `additional` more bytes if there is not enough; a shared or
    /// static string is copied. `reserve_exact(0)` does nothing.
    ///
    /// # Panics
    /// On capacity overflow or allocation failure.
    #[inline]
    #[track_caller]
    pub fn reserve_exact(&mut self, additional: usize) {
        ok(self.try_reserve_exact(additional))
    }

    /// Fallible [`reserve_exact`](Self::reserve_exact); the string is unchanged on error.
    #[inline]
    pub fn try_reserve_exact(&mut self, additional: usize) -> Result<(), ReserveError> {
        if additional == 0 {
            return Ok(());
        }
        self.repr.make_mut_exact(additional)
    }

    /// Shrinks the heap capacity to the length (moving a short string inline).
    #[track_caller]
    pub fn shrink_to_fit(&mut self) {
        ok(self.try_shrink_to_fit())
    }

    /// Fallible [`shrink_to_fit`](Self::shrink_to_fit).
    pub fn try_shrink_to_fit(&mut self) -> Result<(), ReserveError> {
        self.repr.shrink_to(0)
    }

    /// Shrinks the heap capacity to `max(len, min_capacity)` if that is smaller; a shared
    /// buffer is copied into one of exactly that capacity (inline if it fits).
    #[track_caller]
    pub fn shrink_to(&mut self, min_capacity: usize) {
        ok(self.try_shrink_to(min_capacity))
    }

    /// Fallible [`shrink_to`](Self::shrink_to).
    pub fn try_shrink_to(&mut self, min_capacity: usize) -> Result<(), ReserveError> {
        self.repr.shrink_to(min_capacity)
    }

    /// Appends a char.
    #[inline]
    #[track_caller]
    pub fn push(&mut self, ch: char) {
        ok(self.try_push(ch))
    }

    /// Fallible [`push`](Self::push).
    #[inline]
    pub fn try_push(&mut self, ch: char) -> Result<(), ReserveError> {
        self.repr.append(ch.encode_utf8(&mut [0; 4]))
    }

    /// Removes and returns the last char. A shared or static string only shortens its own
    /// length: the buffer stays shared.
    #[inline]
    #[track_caller]
    pub fn pop(&mut self) -> Option<char> {
        ok(self.try_pop())
    }

    /// Fallible [`pop`](Self::pop) (only a 32-bit string of 2^24 - 1 bytes or more whose
    /// buffer is shared has to copy).
    #[inline]
    pub fn try_pop(&mut self) -> Result<Option<char>, ReserveError> {
        edit::try_pop(&mut self.repr)
    }

    /// Appends a string slice.
    #[inline]
    #[track_caller]
    pub fn push_str(&mut self, string: &str) {
        ok(self.try_push_str(string))
    }

    /// Fallible [`push_str`](Self::push_str); the string is unchanged on error, and pushing
    /// `""` never copies or allocates.
    #[inline]
    pub fn try_push_str(&mut self, string: &str) -> Result<(), ReserveError> {
        if string.is_empty() {
            return Ok(());
        }
        self.repr.append(string)
    }

    /// Appends a copy of the bytes in `src`, a range of the string itself.
    ///
    /// # Panics
    /// If an end of `src` is out of bounds or not a char boundary, if the start is after the
    /// end, or if allocation fails.
    #[track_caller]
    pub fn extend_from_within(&mut self, src: impl RangeBounds<usize>) {
        ok(self.try_extend_from_within(src))
    }

    /// Fallible [`extend_from_within`](Self::extend_from_within) (a bad range still
    /// panics); an empty range changes nothing.
    #[track_caller]
    pub fn try_extend_from_within(
        &mut self,
        src: impl RangeBounds<usize>,
    ) -> Result<(), ReserveError> {
        edit::try_extend_from_within(&mut self.repr, src)
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

    /// Keeps only the chars for which `predicate` returns `true`. A shared or static
    /// string is only copied once a char is rejected.
    #[track_caller]
    pub fn retain(&mut self, predicate: impl FnMut(char) -> bool) {
        ok(self.try_retain(predicate))
    }

    /// Fallible [`retain`](Self::retain): unsharing is the only fallible step; on error the
    /// string is unchanged.
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
        assert_boundary(self.as_str(), idx);
        if string.is_empty() {
            return Ok(());
        }
        self.repr.insert_str(idx, string)
    }

    /// Replaces the bytes in `range` with `replace_with`.
    ///
    /// # Panics
    /// If an end of `range` is out of bounds or not a char boundary, if the start is after
    /// the end, or if allocation fails.
    #[track_caller]
    pub fn replace_range(&mut self, range: impl RangeBounds<usize>, replace_with: &str) {
        ok(self.try_replace_range(range, replace_with))
    }

    /// Fallible [`replace_range`](Self::replace_range) (a bad range still panics); on error
    /// the string is unchanged, and replacing nothing with nothing keeps the buffer.
    #[track_caller]
    pub fn try_replace_range(
        &mut self,
        range: impl RangeBounds<usize>,
        replace_with: &str,
    ) -> Result<(), ReserveError> {
        let r = slice_range(self.as_str(), range);
        self.repr.replace_range(r.start, r.end, replace_with)
    }

    /// The string repeated `n` times: `repeat(1)` is a clone (sharing the buffer), an empty
    /// result costs O(1), and the buffer is filled by doubling copies.
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

    /// The lowercase form, as `str::to_lowercase`; a string that does not change is
    /// returned as a clone (sharing the buffer, no allocation).
    ///
    /// # Panics
    /// If allocation fails. (There is no `try_` form: a string with `Σ` is converted by
    /// `str::to_lowercase`, whose allocation failure cannot be reported.)
    #[must_use = "this returns the lowercase string as a new LeanString, without modifying the original"]
    #[track_caller]
    pub fn to_lowercase(&self) -> Self {
        ok(case::convert(self.as_str(), Case::Lower)).unwrap_or_else(|| self.clone())
    }

    /// The uppercase form, as `str::to_uppercase`; a string that does not change is
    /// returned as a clone.
    ///
    /// # Panics
    /// If allocation fails.
    #[must_use = "this returns the uppercase string as a new LeanString, without modifying the original"]
    #[track_caller]
    pub fn to_uppercase(&self) -> Self {
        ok(case::convert(self.as_str(), Case::Upper)).unwrap_or_else(|| self.clone())
    }

    /// A copy with ASCII letters lowercased; a clone when nothing changes.
    #[must_use = "to lowercase the value in-place, use `make_ascii_lowercase()`"]
    #[track_caller]
    pub fn to_ascii_lowercase(&self) -> Self {
        ok(self.try_to_ascii_lowercase())
    }

    /// Fallible [`to_ascii_lowercase`](Self::to_ascii_lowercase).
    pub fn try_to_ascii_lowercase(&self) -> Result<Self, ReserveError> {
        repr::ascii_case(&self.repr, false).map(Self::from_repr)
    }

    /// A copy with ASCII letters uppercased; a clone when nothing changes.
    #[must_use = "to uppercase the value in-place, use `make_ascii_uppercase()`"]
    #[track_caller]
    pub fn to_ascii_uppercase(&self) -> Self {
        ok(self.try_to_ascii_uppercase())
    }

    /// Fallible [`to_ascii_uppercase`](Self::to_ascii_uppercase).
    pub fn try_to_ascii_uppercase(&self) -> Result<Self, ReserveError> {
        repr::ascii_case(&self.repr, true).map(Self::from_repr)
    }

    /// Lowercases ASCII letters in place. A shared or static string is copied and mapped in
    /// one pass, and is left sharing its buffer when nothing changes.
    #[track_caller]
    pub fn make_ascii_lowercase(&mut self) {
        ok(self.try_make_ascii_lowercase())
    }

    /// Fallible [`make_ascii_lowercase`](Self::make_ascii_lowercase).
    pub fn try_make_ascii_lowercase(&mut self) -> Result<(), ReserveError> {
        self.make_ascii_case(false)
    }

    /// Uppercases ASCII letters in place (see [`make_ascii_lowercase`](Self::make_ascii_lowercase)).
    #[track_caller]
    pub fn make_ascii_uppercase(&mut self) {
        ok(self.try_make_ascii_uppercase())
    }

    /// Fallible [`make_ascii_uppercase`](Self::make_ascii_uppercase).
    pub fn try_make_ascii_uppercase(&mut self) -> Result<(), ReserveError> {
        self.make_ascii_case(true)
    }

    fn make_ascii_case(&mut self, upper: bool) -> Result<(), ReserveError> {
        if !self.repr.is_mutable() {
            self.repr = repr::ascii_case(&self.repr, upper)?;
            return Ok(());
        }
        let s = self.repr.as_mut_str()?;
        if upper {
            s.make_ascii_uppercase();
        } else {
            s.make_ascii_lowercase();
        }
        Ok(())
    }

    /// Shortens the string to `new_len` bytes; does nothing if `new_len >= len`. A shared
    /// or static string only shortens its own length.
    ///
    /// # Panics
    /// If `new_len` is not a char boundary.
    #[track_caller]
    pub fn truncate(&mut self, new_len: usize) {
        ok(self.try_truncate(new_len))
    }

    /// Fallible [`truncate`](Self::truncate) (see [`try_pop`](Self::try_pop)).
    #[track_caller]
    pub fn try_truncate(&mut self, new_len: usize) -> Result<(), ReserveError> {
        edit::try_truncate(&mut self.repr, new_len)
    }

    /// Splits at byte index `at`: `self` keeps `..at`, the result holds `at..`.
    ///
    /// # Panics
    /// If `at` is past the end or not a char boundary.
    #[must_use = "use `.truncate()` if you don't need the other half"]
    #[track_caller]
    pub fn split_off(&mut self, at: usize) -> Self {
        ok(self.try_split_off(at))
    }

    /// Fallible [`split_off`](Self::split_off); on error `self` is unchanged.
    #[must_use = "use `.try_truncate()` if you don't need the other half"]
    #[track_caller]
    pub fn try_split_off(&mut self, at: usize) -> Result<Self, ReserveError> {
        edit::try_split_off(&mut self.repr, at).map(Self::from_repr)
    }

    /// Empties the string without allocating: a static string stays static (and empty), a
    /// shared one becomes the empty inline string.
    #[inline]
    pub fn clear(&mut self) {
        self.repr.clear();
    }

    /// Removes the bytes in `range` and returns them as an iterator of chars. The range is
    /// removed at once (unlike `String::drain`, which waits for the iterator's drop).
    ///
    /// # Panics
    /// If an end of `range` is out of bounds or not a char boundary, if the start is after
    /// the end, or if a shared string's copy cannot be allocated.
    #[track_caller]
    pub fn drain(&mut self, range: impl RangeBounds<usize>) -> crate::Drain {
        let r = slice_range(self.as_str(), range);
        let taken = LeanString::from(&self.as_str()[r.clone()]);
        ok(self.repr.replace_range(r.start, r.end, ""));
        crate::Drain::new(taken)
    }

    /// The contents as a `Vec<u8>` (a copy: the heap header sits in front of the data).
    #[must_use]
    pub fn into_bytes(self) -> alloc::vec::Vec<u8> {
        self.as_bytes().to_vec()
    }

    /// The contents as a `String` (a copy, see [`into_bytes`](Self::into_bytes)).
    #[must_use]
    pub fn into_string(self) -> String {
        String::from(self.as_str())
    }

    /// Converts into a [`LeanStr`]: inline and static strings move without copying, a heap
    /// string is copied into an exact-size buffer (inline if it fits).
    #[must_use]
    #[track_caller]
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

    /// A clone that reports the allocation failure of the saturated (copying) path.
    pub(crate) fn try_clone(&self) -> Result<Self, ReserveError> {
        self.repr.try_clone().map(Self::from_repr)
    }

    #[cfg(feature = "zeroize")]
    pub(crate) fn storage_for_zeroing(&mut self) -> Option<&mut [core::mem::MaybeUninit<u8>]> {
        self.repr.storage_for_zeroing()
    }

    #[cfg(all(test, not(loom)))]
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

    #[inline]
    fn clone_from(&mut self, source: &Self) {
        *self = source.clone();
    }
}

impl<L: HeaderPolicy> Default for LeanStringWith<L> {
    #[inline]
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

impl<L: HeaderPolicy> DerefMut for LeanStringWith<L> {
    /// [`as_mut_str`](LeanStringWith::as_mut_str): makes the buffer unique first.
    #[inline]
    fn deref_mut(&mut self) -> &mut str {
        self.as_mut_str()
    }
}

crate::traits::str_traits!([L: HeaderPolicy] LeanStringWith<L>);

impl<L: HeaderPolicy> crate::traits::Contents for LeanStringWith<L> {
    #[inline]
    fn contents_eq(&self, other: &Self) -> bool {
        self.repr.eq_contents(&other.repr)
    }
    #[inline]
    fn contents_cmp(&self, other: &Self) -> core::cmp::Ordering {
        self.repr.cmp_contents(&other.repr)
    }
}

impl<L: HeaderPolicy> From<&str> for LeanStringWith<L> {
    #[inline]
    #[track_caller]
    fn from(s: &str) -> Self {
        Self {
            repr: Repr::from_str_or_raise(s),
        }
    }
}

impl<L: HeaderPolicy> FromStr for LeanStringWith<L> {
    type Err = ReserveError;
    #[inline]
    fn from_str(s: &str) -> Result<Self, ReserveError> {
        Repr::from_str(s).map(Self::from_repr)
    }
}
