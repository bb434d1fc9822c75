//! Integers as decimal text, written straight into a new string: the digit count comes
//! first (`ilog10`), then the digits are stored two at a time from a table, back to front,
//! into the string's own bytes (inline strings: a 16-byte scratch that becomes the words).
//! No formatting machinery, no intermediate buffer, no UTF-8 check (only ASCII is written).

use core::ptr;

use super::{INLINE_CAPACITY, InlineKey, Shared, WORD, Words, inline_tag};
use crate::error::ReserveError;

/// `"00" "01" ... "99"`: the two digits of every value below 100.
pub(crate) const PAIRS: [u8; 200] = {
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
    let mut left = count;
    // Eight digits at a time from the end ([`swar8`]), one unaligned store each.
    while left >= 8 {
        let chunk = n % 100_000_000;
        n /= 100_000_000;
        p = p.wrapping_sub(8);
        left -= 8;
        let text = swar8(chunk) | u64::from_ne_bytes([b'0'; 8]);
        // SAFETY: `p..p + 8` is inside `start..end`: eight of the `count` digits. The
        // digit values sit in little-endian order (byte 0 first).
        unsafe { p.cast::<u64>().write_unaligned(text.to_le()) };
    }
    // Fewer than eight digits left, and `n < 10^left`: two at a time from the table.
    let pairs = PAIRS.as_ptr();
    while n >= 100 {
        let two = (n % 100) as usize;
        n /= 100;
        p = p.wrapping_sub(2);
        // SAFETY: `p..p + 2` is inside `start..end`: every digit written so far stands for
        // one of the `count` digits of `n` (caller), and `n >= 100` has two more. The
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

/// The eight decimal digits of `x < 10^8`, zero-padded, as digit values (0..=9) in the
/// bytes of a little-endian `u64`, the most significant digit in byte 0. SWAR: the halves
/// `x / 10^4` and `x % 10^4` go into 32-bit lanes, each lane is split by 100 into 16-bit
/// lanes and each of those by 10 into bytes, all lanes at once. The multiply-shift
/// quotients are exact in range (`y * 10486 >> 20 == y / 100` for `y < 10^4`,
/// `z * 103 >> 10 == z / 10` for `z < 100`), and no lane's product reaches the next lane.
#[inline(always)]
const fn swar8(x: u64) -> u64 {
    debug_assert!(x < 100_000_000);
    // 32-bit division: a shorter multiply than the 64-bit one.
    let (hi, lo) = ((x as u32) / 10_000, (x as u32) % 10_000);
    let v = (hi as u64) | ((lo as u64) << 32);
    let q = ((v * 10_486) >> 20) & 0x0000_007F_0000_007F;
    let v = q | ((v - q * 100) << 16);
    let q = ((v * 103) >> 10) & 0x000F_000F_000F_000F;
    q | ((v - q * 10) << 8)
}

/// The decimal text of `n` (with a `-` in front when `negative`) as an inline `LeanString`
/// or `LeanStr`, built in registers: the digits come from [`swar8`] (two calls for up to
/// 16 digits), the leading zeros are counted from the digit values (`trailing_zeros` of
/// the little-endian integer) and shifted out, and the two words are stored whole. `None`
/// if the text is longer than [`INLINE_CAPACITY`].
#[inline(always)]
fn decimal_words(negative: bool, n: u64) -> Option<Words> {
    const ASCII_ZEROS: InlineKey = InlineKey::from_ne_bytes([b'0'; INLINE_CAPACITY]);
    #[cfg(target_pointer_width = "64")]
    let digits: InlineKey = {
        if n < 10_000_000 {
            // Seven digits or fewer (most integers in real text): one conversion, and the
            // text (with room for a sign) fits word 0, so 64-bit shifts do.
            let d = swar8(n);
            let zeros = ((d.trailing_zeros() / 8) as usize).min(7);
            let mut text = (d | u64::from_ne_bytes([b'0'; 8])) >> (8 * zeros);
            let mut len = 8 - zeros;
            if negative {
                text = (text << 8) | u64::from(b'-');
                len += 1;
            }
            // SAFETY: `len <= 8` ASCII bytes in word 0 and zeros above them, so the last
            // byte is `inline_tag`'s `0xC0 + len`. Word 0 holds bytes: stored in
            // little-endian order.
            return Some(unsafe {
                Words::from_parts(
                    ptr::without_provenance((text as usize).to_le()),
                    inline_tag(len),
                )
            });
        }
        if n >= 10_000_000_000_000_000 {
            return None;
        }
        let (hi, lo) = (n / 100_000_000, n % 100_000_000);
        (swar8(hi) as InlineKey) | ((swar8(lo) as InlineKey) << 64)
    };
    #[cfg(target_pointer_width = "32")]
    let digits: InlineKey = {
        if n >= 100_000_000 {
            return None;
        }
        swar8(n)
    };
    // Leading zero digits are zero bytes at the low end; `0` keeps one digit.
    let zeros = ((digits.trailing_zeros() / 8) as usize).min(INLINE_CAPACITY - 1);
    let len = INLINE_CAPACITY - zeros + usize::from(negative);
    if len > INLINE_CAPACITY {
        return None;
    }
    let mut text = (digits | ASCII_ZEROS) >> (8 * zeros);
    if negative {
        text = (text << 8) | InlineKey::from(b'-');
    }
    const BITS: u32 = (WORD * 8) as u32;
    let (w0, w1) = (text as usize, (text >> BITS) as usize);
    // SAFETY: `len` ASCII bytes and zeros above them, so the last byte is `inline_tag`'s
    // `0xC0 + len` below capacity, and an ASCII digit at capacity. Word 0 holds bytes:
    // stored in little-endian order.
    Some(unsafe { Words::from_parts(ptr::without_provenance(w0.to_le()), w1 | inline_tag(len)) })
}

/// The decimal text of `n`, with a `-` in front when `negative`, as a new string.
#[inline]
pub(crate) fn decimal<R: Shared>(negative: bool, n: u64) -> Result<R, ReserveError> {
    if R::LEAN_INLINE
        && let Some(w) = decimal_words(negative, n)
    {
        // SAFETY: inline words in the `LeanString` encoding, which `R` uses (`LEAN_INLINE`).
        return Ok(unsafe { R::from_words(w) });
    }
    decimal_with(negative, n)
}

/// [`decimal`] through [`Shared::new_with`]: strings too long for the inline words (or
/// `LeanCString`'s inline encoding).
#[inline(never)]
fn decimal_with<R: Shared>(negative: bool, n: u64) -> Result<R, ReserveError> {
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
