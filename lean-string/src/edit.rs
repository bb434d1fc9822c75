//! Safe logic that the public types share: the `try_*` to infallible unwrapping, index
//! checks with `String`'s panic messages, and the edits of `LeanString` and `LeanCString`
//! built from their representation's primitives ([`Mutable`]).

use crate::error::ReserveError;
use crate::repr::Mutable;

/// Unwraps the result of a `try_*` method for its infallible twin: an error becomes the
/// panic (or allocation-error handler) that `String` gives.
#[inline(always)]
pub(crate) fn ok<T>(r: Result<T, ReserveError>) -> T {
    match r {
        Ok(v) => v,
        Err(e) => e.raise(),
    }
}

#[track_caller]
pub(crate) fn assert_boundary(s: &str, idx: usize, what: &str) {
    assert!(
        s.is_char_boundary(idx),
        "{what}: byte index {idx} is not a char boundary of a string of length {}",
        s.len()
    );
}

/// `idx` must be at most the length and a char boundary (`insert`, `split_off`).
#[track_caller]
pub(crate) fn assert_index(s: &str, idx: usize, what: &str) {
    let len = s.len();
    assert!(
        idx <= len,
        "{what}: index {idx} out of bounds for length {len}"
    );
    assert_boundary(s, idx, what);
}

/// Removes and returns the last char (popping a shared string copies it).
pub(crate) fn try_pop<R: Mutable>(r: &mut R) -> Result<Option<char>, ReserveError> {
    let s = r.contents();
    let Some(ch) = s.chars().next_back() else {
        return Ok(None);
    };
    r.truncate(s.len() - ch.len_utf8())?;
    Ok(Some(ch))
}

/// Removes and returns the char at byte index `idx`; a bad index panics as in `String`.
#[track_caller]
pub(crate) fn try_remove<R: Mutable>(r: &mut R, idx: usize) -> Result<char, ReserveError> {
    let s = r.contents();
    assert!(
        idx < s.len(),
        "remove: index {idx} out of bounds for length {}",
        s.len()
    );
    assert_boundary(s, idx, "remove");
    let ch = s[idx..].chars().next().expect("index is below the length");
    r.remove_range(idx, idx + ch.len_utf8())?;
    Ok(ch)
}

/// Shortens to `new_len` bytes (nothing if `new_len >= len`; truncating a shared string
/// copies it).
#[track_caller]
pub(crate) fn try_truncate<R: Mutable>(r: &mut R, new_len: usize) -> Result<(), ReserveError> {
    if new_len >= r.contents().len() {
        return Ok(());
    }
    assert_boundary(r.contents(), new_len, "truncate");
    r.truncate(new_len)
}

/// Splits at byte index `at`: `r` keeps `..at`, the result holds `at..`; on error `r` is
/// unchanged.
#[track_caller]
pub(crate) fn try_split_off<R: Mutable>(r: &mut R, at: usize) -> Result<R, ReserveError> {
    assert_index(r.contents(), at, "split_off");
    let tail = R::from_str(&r.contents()[at..])?;
    r.truncate(at)?;
    Ok(tail)
}

/// Empties the string; never allocates (a shared or static string becomes an empty inline
/// one).
pub(crate) fn clear<R: Mutable>(r: &mut R) {
    if r.truncate(0).is_err() {
        *r = R::inline(&[]);
    }
}

/// `r`'s contents `n` times, in a buffer allocated once.
pub(crate) fn try_repeat<R: Mutable>(r: &R, n: usize) -> Result<R, ReserveError> {
    let s = r.contents();
    let total = s
        .len()
        .checked_mul(n)
        .ok_or_else(ReserveError::capacity_overflow)?;
    let mut out = R::with_capacity(total)?;
    for _ in 0..n {
        // Our own contents are valid for `R` (no NUL in a `LeanCString`).
        out.push_str(s)?;
    }
    Ok(out)
}
