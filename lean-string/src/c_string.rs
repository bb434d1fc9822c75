//! `LeanCString`: a NUL-terminated small string whose full inline form is its own
//! terminator.

use alloc::string::String;
use core::ffi::{CStr, c_char};
use core::ops::Deref;
use core::str::{FromStr, Utf8Error};

use crate::edit::{self, assert_boundary, ok};
use crate::error::{CStringError, InteriorNulError, ReserveError};
use crate::repr::{self, CRepr, Kind, Mutable, Shared};

/// A 16-byte (8 on 32-bit) UTF-8 string that always ends in a NUL, so
/// [`as_c_str`](Self::as_c_str) and [`as_ptr`](Self::as_ptr) never copy.
///
/// Up to [`C_INLINE_CAPACITY`](crate::C_INLINE_CAPACITY) bytes live inline; the last byte
/// holds the remaining inline capacity, so a full inline string's last byte is 0 and is
/// the terminator. Longer strings use a shared heap buffer with the compact 8-byte header
/// and a NUL after the data. NUL bytes inside the string are rejected with
/// [`InteriorNulError`], which says where the first one was.
#[repr(transparent)]
pub struct LeanCString {
    repr: CRepr,
}

static_assertions::assert_eq_size!(LeanCString, [usize; 2]);
static_assertions::assert_eq_size!(Option<LeanCString>, [usize; 2]);
static_assertions::assert_impl_all!(LeanCString: Send, Sync, Unpin);

/// The position of the first NUL in `s`, as an error.
#[inline]
fn check_nul(s: &str) -> Result<(), InteriorNulError> {
    // The position is only needed on error.
    if !crate::repr::has_nul(s.as_bytes()) {
        return Ok(());
    }
    let position = s.bytes().position(|b| b == 0).unwrap_or_default();
    Err(InteriorNulError { position })
}

/// Flattens a nested result: NUL errors stay errors, reserve errors panic (infallible API).
fn ok_nul<T>(r: Result<T, CStringError>) -> Result<T, InteriorNulError> {
    match r {
        Ok(v) => Ok(v),
        Err(CStringError::InteriorNul(e)) => Err(e),
        Err(CStringError::Reserve(e)) => e.raise(),
    }
}

impl LeanCString {
    /// An empty string (a single NUL).
    pub const fn new() -> Self {
        Self { repr: CRepr::new() }
    }

    /// An empty string with room for `capacity` bytes (plus the NUL); inline up to
    /// [`C_INLINE_CAPACITY`](crate::C_INLINE_CAPACITY).
    ///
    /// # Panics
    /// On capacity overflow or allocation failure.
    pub fn with_capacity(capacity: usize) -> Self {
        ok(Self::try_with_capacity(capacity))
    }

    /// Fallible [`with_capacity`](Self::with_capacity).
    pub fn try_with_capacity(capacity: usize) -> Result<Self, ReserveError> {
        CRepr::with_capacity(capacity).map(|repr| Self { repr })
    }

    /// Wraps a `&'static CStr` in O(1) without copying; it must be UTF-8.
    pub const fn from_static_c_str(s: &'static CStr) -> Result<Self, Utf8Error> {
        match core::str::from_utf8(s.to_bytes()) {
            Ok(_) => Ok(Self {
                repr: CRepr::from_static_with_nul(s.to_bytes_with_nul()),
            }),
            Err(e) => Err(e),
        }
    }

    /// Copies `s`; a NUL byte in it is an error.
    ///
    /// # Panics
    /// If allocation fails (use [`try_from_str`](Self::try_from_str) to get an error).
    #[inline]
    pub fn from_str_checked(s: &str) -> Result<Self, InteriorNulError> {
        check_nul(s)?;
        Ok(Self {
            repr: CRepr::from_str_no_nul_or_raise(s),
        })
    }

    /// Copies `s`; a NUL byte or an allocation failure is an error.
    pub fn try_from_str(s: &str) -> Result<Self, CStringError> {
        check_nul(s)?;
        Ok(Self {
            repr: CRepr::from_str_no_nul(s)?,
        })
    }

    /// Copies a C string; it must be UTF-8.
    pub fn from_c_str(s: &CStr) -> Result<Self, Utf8Error> {
        let s = core::str::from_utf8(s.to_bytes())?;
        Ok(Self {
            repr: ok(CRepr::from_str_no_nul(s)),
        })
    }

    /// Length in bytes, without the NUL.
    #[inline]
    pub fn len(&self) -> usize {
        self.as_bytes().len()
    }

    /// `true` if the string is empty.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes the string can hold (NUL not counted) without reallocating.
    pub fn capacity(&self) -> usize {
        self.repr.capacity()
    }

    /// The contents.
    #[inline]
    pub fn as_str(&self) -> &str {
        self.repr.as_str()
    }

    /// The contents as bytes, without the NUL.
    #[inline]
    pub fn as_bytes(&self) -> &[u8] {
        self.repr.as_bytes()
    }

    /// The contents and the NUL after them.
    #[inline]
    pub fn as_bytes_with_nul(&self) -> &[u8] {
        self.repr.as_bytes_with_nul()
    }

    /// The contents as a `&CStr`, without copying.
    #[inline]
    pub fn as_c_str(&self) -> &CStr {
        self.repr.as_c_str()
    }

    /// Pointer to the NUL-terminated contents, valid while `self` is neither mutated nor
    /// moved (inline strings live inside `self`).
    #[inline]
    pub fn as_ptr(&self) -> *const c_char {
        self.as_bytes_with_nul().as_ptr().cast()
    }

    /// `true` if the contents live in a heap buffer.
    pub fn is_heap_allocated(&self) -> bool {
        self.repr.kind() == Kind::Heap
    }

    /// Ensures room for `additional` more bytes; `reserve(0)` does nothing.
    pub fn reserve(&mut self, additional: usize) {
        ok(self.try_reserve(additional))
    }

    /// Fallible [`reserve`](Self::reserve).
    pub fn try_reserve(&mut self, additional: usize) -> Result<(), ReserveError> {
        if additional == 0 {
            return Ok(());
        }
        self.repr.make_mut(additional)
    }

    /// Ensures room for exactly `additional` more bytes if there is not enough;
    /// `reserve_exact(0)` does nothing.
    pub fn reserve_exact(&mut self, additional: usize) {
        ok(self.try_reserve_exact(additional))
    }

    /// Fallible [`reserve_exact`](Self::reserve_exact).
    pub fn try_reserve_exact(&mut self, additional: usize) -> Result<(), ReserveError> {
        if additional == 0 {
            return Ok(());
        }
        self.repr.make_mut_exact(additional)
    }

    /// Appends a copy of the bytes in `src`, a range of the string itself (no NUL can
    /// appear).
    ///
    /// # Panics
    /// If an end of `src` is out of bounds or not a char boundary, if the start is after the
    /// end, or if allocation fails.
    #[track_caller]
    pub fn extend_from_within(&mut self, src: impl core::ops::RangeBounds<usize>) {
        ok(edit::try_extend_from_within(&mut self.repr, src))
    }

    /// A copy with ASCII letters lowercased; a clone when nothing changes.
    #[must_use]
    pub fn to_ascii_lowercase(&self) -> Self {
        Self {
            repr: ok(repr::ascii_case(&self.repr, false)),
        }
    }

    /// A copy with ASCII letters uppercased; a clone when nothing changes.
    #[must_use]
    pub fn to_ascii_uppercase(&self) -> Self {
        Self {
            repr: ok(repr::ascii_case(&self.repr, true)),
        }
    }

    /// Replaces the bytes in `range` with `replace_with`; a NUL in it is rejected and the
    /// string is unchanged.
    ///
    /// # Panics
    /// If an end of `range` is out of bounds or not a char boundary, or the start is after
    /// the end (checked before the NUL), or if allocation fails.
    #[track_caller]
    pub fn replace_range(
        &mut self,
        range: impl core::ops::RangeBounds<usize>,
        replace_with: &str,
    ) -> Result<(), InteriorNulError> {
        ok_nul(self.try_replace_range(range, replace_with))
    }

    /// Fallible [`replace_range`](Self::replace_range) (a bad range still panics).
    #[track_caller]
    pub fn try_replace_range(
        &mut self,
        range: impl core::ops::RangeBounds<usize>,
        replace_with: &str,
    ) -> Result<(), CStringError> {
        let r = edit::slice_range(self.as_str(), range);
        check_nul(replace_with)?;
        Ok(self.repr.replace_range(r.start, r.end, replace_with)?)
    }

    /// Lowercases ASCII letters in place (a shared or static string is copied and mapped in
    /// one pass, and keeps its buffer when nothing changes).
    pub fn make_ascii_lowercase(&mut self) {
        ok(self.try_make_ascii_lowercase())
    }

    /// Fallible [`make_ascii_lowercase`](Self::make_ascii_lowercase).
    pub fn try_make_ascii_lowercase(&mut self) -> Result<(), ReserveError> {
        self.make_ascii_case(false)
    }

    /// Uppercases ASCII letters in place (see [`make_ascii_lowercase`](Self::make_ascii_lowercase)).
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
        // ASCII case mapping never makes a NUL.
        let s = self.repr.as_mut_str()?;
        if upper {
            s.make_ascii_uppercase();
        } else {
            s.make_ascii_lowercase();
        }
        Ok(())
    }

    /// Frees unused heap capacity.
    pub fn shrink_to_fit(&mut self) {
        ok(self.try_shrink_to_fit())
    }

    /// Fallible [`shrink_to_fit`](Self::shrink_to_fit).
    pub fn try_shrink_to_fit(&mut self) -> Result<(), ReserveError> {
        self.repr.shrink_to(0)
    }

    /// Shrinks the heap capacity to at least `max(len, min_capacity)` (moving a short
    /// string inline).
    pub fn shrink_to(&mut self, min_capacity: usize) {
        ok(self.try_shrink_to(min_capacity))
    }

    /// Fallible [`shrink_to`](Self::shrink_to).
    pub fn try_shrink_to(&mut self, min_capacity: usize) -> Result<(), ReserveError> {
        self.repr.shrink_to(min_capacity)
    }

    /// Appends a char; `'\0'` is rejected.
    pub fn push(&mut self, ch: char) -> Result<(), InteriorNulError> {
        ok_nul(self.try_push(ch))
    }

    /// Fallible [`push`](Self::push).
    pub fn try_push(&mut self, ch: char) -> Result<(), CStringError> {
        self.try_push_str(ch.encode_utf8(&mut [0; 4]))
    }

    /// Appends `s`; a NUL in it is rejected and the string is unchanged.
    pub fn push_str(&mut self, s: &str) -> Result<(), InteriorNulError> {
        ok_nul(self.try_push_str(s))
    }

    /// Fallible [`push_str`](Self::push_str).
    pub fn try_push_str(&mut self, s: &str) -> Result<(), CStringError> {
        check_nul(s)?;
        Ok(self.repr.push_str(s)?)
    }

    /// Removes and returns the last char.
    pub fn pop(&mut self) -> Option<char> {
        ok(self.try_pop())
    }

    /// Fallible [`pop`](Self::pop) (a shared string is copied).
    pub fn try_pop(&mut self) -> Result<Option<char>, ReserveError> {
        edit::try_pop(&mut self.repr)
    }

    /// Shortens to `new_len` bytes; nothing if `new_len >= len`.
    ///
    /// # Panics
    /// If `new_len` is not a char boundary.
    #[track_caller]
    pub fn truncate(&mut self, new_len: usize) {
        ok(self.try_truncate(new_len))
    }

    /// Fallible [`truncate`](Self::truncate).
    #[track_caller]
    pub fn try_truncate(&mut self, new_len: usize) -> Result<(), ReserveError> {
        edit::try_truncate(&mut self.repr, new_len)
    }

    /// Removes and returns the char at byte index `idx`.
    ///
    /// # Panics
    /// If `idx` is not a char boundary below the length (as `String::remove`).
    #[track_caller]
    pub fn remove(&mut self, idx: usize) -> char {
        ok(self.try_remove(idx))
    }

    /// Fallible [`remove`](Self::remove) (a shared or static string is copied first; a bad
    /// index still panics).
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

    /// Inserts a char at byte index `idx`; `'\0'` is rejected and the string is unchanged.
    ///
    /// # Panics
    /// If `idx` is past the end or not a char boundary (checked before the NUL).
    #[track_caller]
    pub fn insert(&mut self, idx: usize, ch: char) -> Result<(), InteriorNulError> {
        ok_nul(self.try_insert(idx, ch))
    }

    /// Fallible [`insert`](Self::insert).
    #[track_caller]
    pub fn try_insert(&mut self, idx: usize, ch: char) -> Result<(), CStringError> {
        self.try_insert_str(idx, ch.encode_utf8(&mut [0; 4]))
    }

    /// Inserts `string` at byte index `idx`; a NUL in it is rejected (the error gives its
    /// position in `string`) and the string is unchanged.
    ///
    /// # Panics
    /// If `idx` is past the end or not a char boundary (checked before the NUL).
    #[track_caller]
    pub fn insert_str(&mut self, idx: usize, string: &str) -> Result<(), InteriorNulError> {
        ok_nul(self.try_insert_str(idx, string))
    }

    /// Fallible [`insert_str`](Self::insert_str).
    #[track_caller]
    pub fn try_insert_str(&mut self, idx: usize, string: &str) -> Result<(), CStringError> {
        assert_boundary(self.as_str(), idx);
        check_nul(string)?;
        if string.is_empty() {
            return Ok(());
        }
        Ok(self.repr.insert_str(idx, string)?)
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
        repr::repeat(&self.repr, n).map(|repr| Self { repr })
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
        edit::try_split_off(&mut self.repr, at).map(|repr| Self { repr })
    }

    #[cfg(all(test, not(loom)))]
    pub(crate) fn repr(&self) -> &CRepr {
        &self.repr
    }

    /// Empties the string; never allocates (a shared or static string becomes the empty
    /// inline one).
    pub fn clear(&mut self) {
        self.repr.clear();
    }

    #[cfg(feature = "zeroize")]
    pub(crate) fn storage_for_zeroing(&mut self) -> Option<&mut [core::mem::MaybeUninit<u8>]> {
        self.repr.storage_for_zeroing()
    }
}

impl Clone for LeanCString {
    fn clone(&self) -> Self {
        Self {
            repr: self.repr.clone_or_raise(),
        }
    }
}

impl Default for LeanCString {
    fn default() -> Self {
        Self::new()
    }
}

impl Deref for LeanCString {
    type Target = str;
    #[inline]
    fn deref(&self) -> &str {
        self.as_str()
    }
}

crate::traits::str_traits!([] LeanCString);

impl AsRef<CStr> for LeanCString {
    fn as_ref(&self) -> &CStr {
        self.as_c_str()
    }
}

impl TryFrom<&str> for LeanCString {
    type Error = InteriorNulError;
    fn try_from(s: &str) -> Result<Self, InteriorNulError> {
        Self::from_str_checked(s)
    }
}

impl TryFrom<String> for LeanCString {
    type Error = InteriorNulError;
    fn try_from(s: String) -> Result<Self, InteriorNulError> {
        Self::from_str_checked(&s)
    }
}

impl TryFrom<&CStr> for LeanCString {
    type Error = Utf8Error;
    fn try_from(s: &CStr) -> Result<Self, Utf8Error> {
        Self::from_c_str(s)
    }
}

impl FromStr for LeanCString {
    type Err = InteriorNulError;
    fn from_str(s: &str) -> Result<Self, InteriorNulError> {
        Self::from_str_checked(s)
    }
}

impl From<LeanCString> for String {
    fn from(s: LeanCString) -> Self {
        String::from(s.as_str())
    }
}

impl From<&LeanCString> for alloc::ffi::CString {
    fn from(s: &LeanCString) -> Self {
        s.as_c_str().into()
    }
}
