//! Integers as decimal text, written straight into a new string: the digit count comes
//! first (`ilog10`), then the digits are stored two at a time from a table, back to front,
//! into the string's own bytes (inline strings: a 16-byte scratch that becomes the words).
//! No formatting machinery, no intermediate buffer, no UTF-8 check (only ASCII is written).

use super::Shared;
use crate::error::ReserveError;

/// `"00" "01" ... "99"`: the two digits of every value below 100.
const PAIRS: [u8; 200] = {
    let mut t = [0u8; 200];
    let mut i = 0;
    while i < 100 {
        t[2 * i] = b'0' + (i / 10) as u8;
        t[2 * i + 1] = b'0' + (i % 10) as u8;
        i += 1;
    }
    t
};

/// 10^19, the largest power of ten below `u64::MAX`.
const CHUNK: u128 = 10_000_000_000_000_000_000;

#[inline(always)]
fn digit_count(n: u64) -> usize {
    n.checked_ilog10().map_or(1, |l| l as usize + 1)
}

/// Writes the `count` decimal digits of `n` (zero-padded on the left) so that they end
/// just before `end`; returns the start.
///
/// # Safety
/// `end - count..end` must be writable; `n < 10^count`.
#[inline(always)]
unsafe fn write_u64(mut n: u64, end: *mut u8, count: usize) -> *mut u8 {
    let start = end.wrapping_sub(count);
    let mut p = end;
    let pairs = PAIRS.as_ptr();
    while n >= 100 {
        let two = (n % 100) as usize;
        n /= 100;
        p = p.wrapping_sub(2);
        // SAFETY: `p..p + 2` is inside `start..end`: every pair written so far stands for
        // two of the `count` digits of `n` (caller), and `n >= 100` has two more. The
        // table index `2 * two + 1 < 200`.
        unsafe { core::ptr::copy_nonoverlapping(pairs.wrapping_add(2 * two), p, 2) };
    }
    if n >= 10 {
        p = p.wrapping_sub(2);
        // SAFETY: as above, for the last two digits (`n < 100`).
        unsafe { core::ptr::copy_nonoverlapping(pairs.wrapping_add(2 * n as usize), p, 2) };
    } else if p > start {
        p = p.wrapping_sub(1);
        // SAFETY: the last digit, inside `start..end`.
        unsafe { p.write(b'0' + n as u8) };
    }
    while p > start {
        p = p.wrapping_sub(1);
        // SAFETY: the zero padding, inside `start..end`.
        unsafe { p.write(b'0') };
    }
    start
}

/// The decimal text of `n`, with a `-` in front when `negative`, as a new string.
#[inline]
pub(crate) fn decimal<R: Shared>(negative: bool, n: u64) -> Result<R, ReserveError> {
    let digits = digit_count(n);
    let len = digits + usize::from(negative);
    let fill = |dst: *mut u8| {
        // SAFETY: `dst` has room for `len` bytes: the digits fill the end, `n < 10^digits`.
        let start = unsafe { write_u64(n, dst.wrapping_add(len), digits) };
        if negative {
            // SAFETY: the byte before the digits is the first of the `len`.
            unsafe { start.wrapping_sub(1).write(b'-') };
        }
    };
    // SAFETY: `fill` writes all `len` bytes, ASCII only (valid UTF-8, no NUL).
    unsafe { R::new_with(len, fill) }
}

/// [`decimal`] for 128-bit magnitudes, in 19-digit chunks of 64-bit arithmetic.
pub(crate) fn decimal128<R: Shared>(negative: bool, n: u128) -> Result<R, ReserveError> {
    if let Ok(small) = u64::try_from(n) {
        return decimal(negative, small);
    }
    // n >= 2^64 > 10^19: at least two chunks, at most three (u128::MAX has 39 digits).
    let low = (n % CHUNK) as u64;
    let rest = n / CHUNK;
    let (high, mid) = ((rest / CHUNK) as u64, (rest % CHUNK) as u64);
    let top_digits = if high > 0 {
        digit_count(high) + 19
    } else {
        digit_count(mid)
    };
    let len = top_digits + 19 + usize::from(negative);
    let fill = |dst: *mut u8| {
        let end = dst.wrapping_add(len);
        // SAFETY: the low 19 digits, zero-padded, end the text.
        let at = unsafe { write_u64(low, end, 19) };
        let at = if high > 0 {
            // SAFETY: the middle 19 digits, zero-padded, before them.
            let at = unsafe { write_u64(mid, at, 19) };
            // SAFETY: the leading digits of `high` before those.
            unsafe { write_u64(high, at, digit_count(high)) }
        } else {
            // SAFETY: the leading digits of `mid`, before the low chunk.
            unsafe { write_u64(mid, at, digit_count(mid)) }
        };
        if negative {
            // SAFETY: the first of the `len` bytes.
            unsafe { at.wrapping_sub(1).write(b'-') };
        }
    };
    // SAFETY: `fill` writes all `len` bytes, ASCII only.
    unsafe { R::new_with(len, fill) }
}
