//! Safe logic that the public types share: the `try_*` to infallible unwrapping, index and
//! range checks with `lean_string`'s panic messages, and the edits of `LeanString` and
//! `LeanCString` built from their representation's primitives ([`Mutable`]).

use core::ops::{Bound, Range, RangeBounds};

use crate::error::ReserveError;
use crate::repr::Mutable;

/// Unwraps the result of a `try_*` method for its infallible twin: an error becomes a panic
/// (which unwinds, as `lean_string`'s does, rather than aborting).
#[inline(always)]
#[track_caller]
pub(crate) fn ok<T>(r: Result<T, ReserveError>) -> T {
    match r {
        Ok(v) => v,
        Err(e) => e.raise(),
    }
}

/// `idx` must be a char boundary of `s` (and so at most its length).
#[inline]
#[track_caller]
pub(crate) fn assert_boundary(s: &str, idx: usize) {
    if !s.is_char_boundary(idx) {
        boundary_panic(s, idx)
    }
}

#[cold]
#[inline(never)]
#[track_caller]
fn boundary_panic(s: &str, idx: usize) -> ! {
    panic!(
        "index is not a char boundary or out of bounds (index: {idx}); the string is {} bytes long",
        s.len()
    )
}

/// The byte range `range` of `s`, checked: both ends char boundaries (an end that overflows
/// `usize` is out of bounds), start not after end.
#[track_caller]
pub(crate) fn slice_range(s: &str, range: impl RangeBounds<usize>) -> Range<usize> {
    // `usize::MAX` is never a boundary, so saturating keeps an overflowing bound out of range.
    let start = match range.start_bound() {
        Bound::Included(&i) => i,
        Bound::Excluded(&i) => i.saturating_add(1),
        Bound::Unbounded => 0,
    };
    let end = match range.end_bound() {
        Bound::Included(&i) => i.saturating_add(1),
        Bound::Excluded(&i) => i,
        Bound::Unbounded => s.len(),
    };
    assert_boundary(s, start);
    assert_boundary(s, end);
    assert!(
        start <= end,
        "range start is greater than end (start: {start}, end: {end})"
    );
    start..end
}

/// Removes and returns the last char (a shared or static `LeanString` only shortens its
/// length; a `LeanCString` is copied).
pub(crate) fn try_pop<R: Mutable>(r: &mut R) -> Result<Option<char>, ReserveError> {
    let s = r.contents();
    let Some(ch) = s.chars().next_back() else {
        return Ok(None);
    };
    r.truncate(s.len() - ch.len_utf8())?;
    Ok(Some(ch))
}

/// Removes and returns the char at byte index `idx`; a bad index panics.
#[track_caller]
pub(crate) fn try_remove<R: Mutable>(r: &mut R, idx: usize) -> Result<char, ReserveError> {
    let s = r.contents();
    assert_boundary(s, idx);
    let len = s.len();
    assert!(idx < len, "index out of bounds (index: {idx}, len: {len})");
    let ch = s[idx..].chars().next().expect("index is below the length");
    r.remove_range(idx, idx + ch.len_utf8())?;
    Ok(ch)
}

/// Shortens to `new_len` bytes (nothing if `new_len >= len`).
#[track_caller]
pub(crate) fn try_truncate<R: Mutable>(r: &mut R, new_len: usize) -> Result<(), ReserveError> {
    if new_len >= r.contents().len() {
        return Ok(());
    }
    assert_boundary(r.contents(), new_len);
    r.truncate(new_len)
}

/// Splits at byte index `at`: `r` keeps `..at`, the result holds `at..`; on error `r` is
/// unchanged.
#[track_caller]
pub(crate) fn try_split_off<R: Mutable>(r: &mut R, at: usize) -> Result<R, ReserveError> {
    assert_boundary(r.contents(), at);
    let tail = R::from_str(&r.contents()[at..])?;
    r.truncate(at)?;
    Ok(tail)
}

/// Appends a copy of `range` of the string's own contents.
#[track_caller]
pub(crate) fn try_extend_from_within<R: Mutable>(
    r: &mut R,
    range: impl RangeBounds<usize>,
) -> Result<(), ReserveError> {
    let Range { start, end } = slice_range(r.contents(), range);
    r.extend_from_within(start, end)
}
