//! Floats as `lean_string` 0.8 writes them: the shortest digits that read back as the same
//! value, laid out as `1.0`, `0.001234`, `12340000000.0` or `1.234e+33`.
//!
//! The digits come from [`shortest`](crate::shortest) (of the shortest, the nearest; ties
//! to even, as `lean_string` via the `zmij` crate writes them, where `core` takes the
//! larger). Plain decimal notation is used for decimal exponents `-5..=15` (`f64`) and
//! `-6..=12` (`f32`), scientific outside. No formatting machinery: the text is written
//! into a stack buffer in a few fixed-size block copies.

use core::fmt;
#[cfg(test)]
use core::fmt::Write;

use crate::repr::{PAIRS, ascii_str};
use crate::shortest::shortest;

/// A stack buffer that `write!` fills; too long an output is an error, never a panic.
#[cfg(test)]
struct Buf<const N: usize> {
    bytes: [u8; N],
    len: usize,
}

#[cfg(test)]
impl<const N: usize> Buf<N> {
    fn new() -> Self {
        Self {
            bytes: [0; N],
            len: 0,
        }
    }
    fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
    fn push(&mut self, b: u8) {
        self.bytes[self.len] = b;
        self.len += 1;
    }
    fn push_all(&mut self, s: &[u8]) {
        self.bytes[self.len..self.len + s.len()].copy_from_slice(s);
        self.len += s.len();
    }
}

#[cfg(test)]
impl<const N: usize> Write for Buf<N> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        if s.len() > N - self.len {
            return Err(fmt::Error);
        }
        self.push_all(s.as_bytes());
        Ok(())
    }
}

/// A float type: its binary parts and where plain notation ends.
pub(crate) trait Float: Copy + fmt::LowerExp + fmt::Display {
    /// Decimal exponents written in plain notation.
    const PLAIN: core::ops::RangeInclusive<i32>;
    /// Significant digits of the longest exact decimal expansion (an upper bound).
    #[cfg(test)]
    const EXACT_DIGITS: usize;
    fn is_finite(self) -> bool;
    fn is_nan(self) -> bool;
    fn is_sign_negative(self) -> bool;
    /// `|self| = c * 2^q` with `c` the significand field (hidden bit included), and
    /// whether the next float down is half as far as the next one up (finite values).
    fn parts(self) -> (u64, i32, bool);
    /// `|self| = m * 2^e` exactly, `m` odd (finite and non-zero values only).
    #[cfg(test)]
    fn decompose(self) -> (u64, i32) {
        let (m, e, _) = self.parts();
        let z = m.trailing_zeros();
        (m >> z, e + z as i32)
    }
}

impl Float for f64 {
    const PLAIN: core::ops::RangeInclusive<i32> = -5..=15;
    #[cfg(test)]
    const EXACT_DIGITS: usize = 767;
    fn is_finite(self) -> bool {
        f64::is_finite(self)
    }
    fn is_nan(self) -> bool {
        f64::is_nan(self)
    }
    fn is_sign_negative(self) -> bool {
        f64::is_sign_negative(self)
    }
    fn parts(self) -> (u64, i32, bool) {
        let bits = self.to_bits();
        let field = ((bits >> 52) & 0x7FF) as i32;
        let frac = bits & ((1 << 52) - 1);
        if field == 0 {
            (frac, -1074, false)
        } else {
            (frac | (1 << 52), field - 1075, frac == 0 && field > 1)
        }
    }
}

impl Float for f32 {
    const PLAIN: core::ops::RangeInclusive<i32> = -6..=12;
    #[cfg(test)]
    const EXACT_DIGITS: usize = 112;
    fn is_finite(self) -> bool {
        f32::is_finite(self)
    }
    fn is_nan(self) -> bool {
        f32::is_nan(self)
    }
    fn is_sign_negative(self) -> bool {
        f32::is_sign_negative(self)
    }
    fn parts(self) -> (u64, i32, bool) {
        let bits = self.to_bits();
        let field = ((bits >> 23) & 0xFF) as i32;
        let frac = u64::from(bits & ((1 << 23) - 1));
        if field == 0 {
            (frac, -149, false)
        } else {
            (frac | (1 << 23), field - 150, frac == 0 && field > 1)
        }
    }
}

/// The text: at most 24 bytes (`-1.7976931348623157e+308`), in a buffer with room for
/// the fixed-size block copies that write it (each writes up to 20 bytes past the end).
pub(crate) struct FloatText {
    bytes: [u8; TEXT_ROOM],
    len: usize,
}

/// The text's 24 bytes, plus 20 for the last block copy, rounded up.
const TEXT_ROOM: usize = 48;

impl FloatText {
    pub(crate) fn as_str(&self) -> &str {
        ascii_str(&self.bytes[..self.len]).expect("ASCII")
    }
}

/// Splits `[-]d[.ddd]e[-]x` into sign, digits and decimal exponent.
#[cfg(test)]
fn parse_sci<const N: usize>(s: &[u8]) -> (bool, Buf<N>, i32) {
    let (neg, s) = match s.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, s),
    };
    let e = s
        .iter()
        .position(|&b| b == b'e')
        .expect("`{:e}` writes an exponent");
    let mut digits = Buf::new();
    for &b in &s[..e] {
        if b != b'.' {
            digits.push(b);
        }
    }
    let exp = core::str::from_utf8(&s[e + 1..])
        .ok()
        .and_then(|t| t.parse().ok())
        .expect("`{:e}` writes a decimal exponent");
    (neg, digits, exp)
}

/// `true` if `v` lies exactly halfway between `digits` and `digits` with its last digit one
/// lower, i.e. its exact expansion is those digits with the last lowered, then a 5, then
/// nothing: its significant digits as an integer are `10 * digits - 5`. Integer arithmetic
/// only: `|v| = m * 2^e` (`m` odd) has the significant digits `m * 5^-e` when `e < 0` (no
/// trailing zero: the product is odd), and `m / 5^t * 2^(e - t)` when `e >= 0`, `t` being
/// the trailing decimal zeros (`min(e, fives in m)`). Anything of 20 or more digits cannot
/// be a tie of at most 17 digits. The tests' judge of where `core` and [`text`] may differ.
#[cfg(test)]
fn is_tie_below<F: Float>(v: F, digits: &[u8]) -> bool {
    let Some(d) = digits.iter().try_fold(0u64, |a, &b| {
        a.checked_mul(10)?.checked_add(u64::from(b - b'0'))
    }) else {
        return false;
    };
    let Some(want) = d.checked_mul(10).and_then(|x| x.checked_sub(5)) else {
        return false;
    };
    let (m, e) = v.decompose();
    let exact = if e < 0 {
        5u128
            .checked_pow(e.unsigned_abs())
            .and_then(|p| p.checked_mul(u128::from(m)))
    } else {
        let mut t = 0;
        let mut q = m;
        while t < e && q % 5 == 0 {
            q /= 5;
            t += 1;
        }
        u128::from(q)
            .checked_shl((e - t) as u32)
            .filter(|x| x >> (e - t) == u128::from(q))
    };
    exact == Some(u128::from(want))
}

/// The first form of [`is_tie_below`], through `core`'s exact formatting (slow: two
/// formatted expansions, one of up to 767 digits); the tests check the two agree.
#[cfg(test)]
fn is_tie_below_by_formatting<F: Float>(v: F, digits: &[u8]) -> bool {
    let n = digits.len();
    // Cheap filter first: the expansion rounded to n + 1 digits must read "...(d-1)5".
    let mut short = Buf::<40>::new();
    if write!(short, "{:.*e}", n, v).is_err() {
        return false;
    }
    let (_, near, _) = parse_sci::<40>(short.as_bytes());
    let near = near.as_bytes();
    let last = digits[n - 1];
    if near.len() != n + 1
        || near[n] != b'5'
        || near[n - 1] != last - 1
        || near[..n - 1] != digits[..n - 1]
    {
        return false;
    }
    // Then the exact expansion: all digits after the 5 must be zero.
    let mut exact = Buf::<800>::new();
    if write!(exact, "{:.*e}", F::EXACT_DIGITS, v).is_err() {
        return false;
    }
    let (_, all, _) = parse_sci::<800>(exact.as_bytes());
    all.as_bytes()[n + 1..].iter().all(|&b| b == b'0')
}

/// The decimal digits of `d < 10^20`, left-aligned in 20 bytes, and their count.
fn digits(mut d: u64) -> ([u8; 20], usize) {
    let mut buf = [b'0'; 20];
    let n = d.checked_ilog10().map_or(1, |l| l as usize + 1);
    let mut at = n;
    while d >= 100 {
        let two = 2 * (d % 100) as usize;
        d /= 100;
        at -= 2;
        buf[at..at + 2].copy_from_slice(&PAIRS[two..two + 2]);
    }
    if d >= 10 {
        let two = 2 * d as usize;
        buf[at - 2..at].copy_from_slice(&PAIRS[two..two + 2]);
    } else {
        buf[at - 1] = b'0' + d as u8;
    }
    (buf, n)
}

/// `v` as `lean_string` 0.8 writes it. Constant time: [`shortest`], then at most 24 bytes
/// written in a few fixed-size blocks (no formatting machinery).
pub(crate) fn text<F: Float>(v: F) -> FloatText {
    let mut out = FloatText {
        bytes: [0; TEXT_ROOM],
        len: 0,
    };
    if !v.is_finite() {
        // "NaN", "inf", "-inf", as `Display` writes them.
        let s: &[u8] = if v.is_nan() {
            b"NaN"
        } else if v.is_sign_negative() {
            b"-inf"
        } else {
            b"inf"
        };
        out.bytes[..s.len()].copy_from_slice(s);
        out.len = s.len();
        return out;
    }
    let (c, q, lower_closer) = v.parts();
    let (mut d, mut k) = if c == 0 {
        (0, 0)
    } else {
        shortest(c, q, lower_closer)
    };
    if d != 0 {
        while d % 10 == 0 {
            d /= 10;
            k += 1;
        }
    }
    let (digits, n) = digits(d);
    let n = n as i32;
    // The decimal exponent of the first digit.
    let exp = k + n - 1;
    let o = &mut out.bytes;
    let mut at = usize::from(v.is_sign_negative());
    o[0] = b'-';
    // Every block below is a fixed-size copy (a few vector moves); only `at` advances by
    // the real length, and later writes overwrite what ran past it.
    if F::PLAIN.contains(&exp) {
        if n - 1 <= exp {
            // 1234e7 -> 12340000000.0: the digits, zeros up to the point, ".0".
            o[at..at + 20].copy_from_slice(&digits);
            at += n as usize;
            o[at..at + 16].copy_from_slice(&[b'0'; 16]);
            at += (exp - (n - 1)) as usize;
            o[at..at + 2].copy_from_slice(b".0");
            at += 2;
        } else if exp >= 0 {
            // 1234e1 -> 12.34: every digit one place right, then the integer part back.
            let point = (exp + 1) as usize;
            o[at + 1..at + 21].copy_from_slice(&digits);
            o[at..at + point].copy_from_slice(&digits[..point]);
            o[at + point] = b'.';
            at += n as usize + 1;
        } else {
            // 1234e-3 -> 0.001234: "0.", zeros, the digits.
            o[at..at + 16].copy_from_slice(b"0.00000000000000");
            at += 1 + (-exp) as usize;
            o[at..at + 20].copy_from_slice(&digits);
            at += n as usize;
        }
    } else {
        // 1234e30 -> 1.234e+33: every digit one place right, then the first and the point.
        o[at + 1..at + 21].copy_from_slice(&digits);
        o[at] = digits[0];
        if n > 1 {
            o[at + 1] = b'.';
            at += n as usize + 1;
        } else {
            at += 1;
        }
        o[at] = b'e';
        o[at + 1] = if exp < 0 { b'-' } else { b'+' };
        at += 2;
        let (e, en) = digits_of_exponent(exp.unsigned_abs());
        o[at..at + 3].copy_from_slice(&e);
        at += en;
    }
    out.len = at;
    out
}

/// The digits of a decimal exponent (below 1000), left-aligned, and their count.
fn digits_of_exponent(e: u32) -> ([u8; 3], usize) {
    let b = |x: u32| b'0' + (x % 10) as u8;
    if e >= 100 {
        ([b(e / 100), b(e / 10), b(e)], 3)
    } else if e >= 10 {
        ([b(e / 10), b(e), 0], 2)
    } else {
        ([b(e), 0, 0], 1)
    }
}

#[cfg(test)]
mod tests {
    use super::text;

    #[test]
    // The tie cases are written with every digit of their exact binary value on purpose.
    #[allow(clippy::excessive_precision)]
    fn layouts_match_lean_string() {
        let cases: &[(f64, &str)] = &[
            (1.0, "1.0"),
            (0.0, "0.0"),
            (-0.0, "-0.0"),
            (1e15, "1000000000000000.0"),
            (1e16, "1e+16"),
            (1e-5, "0.00001"),
            (1e-7, "1e-7"),
            (123.456, "123.456"),
            (f64::MAX, "1.7976931348623157e+308"),
            (5e-324, "5e-324"),
            (f64::NAN, "NaN"),
            (f64::NEG_INFINITY, "-inf"),
            // exact ties: `core` alone would end these in 3
            (994236187939.28125, "994236187939.2812"),
            (98081990729980.625, "98081990729980.62"),
        ];
        for &(v, want) in cases {
            assert_eq!(text(v).as_str(), want, "{v:e}");
        }
        let cases32: &[(f32, &str)] = &[
            (1.0, "1.0"),
            (4.225929e-6, "0.000004225929"),
            (1.2806478e14, "1.2806478e+14"),
            (5.97265625, "5.9726562"),
            (53.0390625, "53.039062"),
            (0.1, "0.1"),
        ];
        for &(v, want) in cases32 {
            assert_eq!(text(v).as_str(), want, "{v:e}");
        }
    }

    #[test]
    // The ties are written with every digit of their exact binary value on purpose.
    #[allow(clippy::excessive_precision)]
    fn the_integer_tie_test_agrees_with_exact_formatting() {
        use super::{Buf, is_tie_below, is_tie_below_by_formatting, parse_sci};
        use core::fmt::Write;
        fn check<F: super::Float>(v: F) -> bool {
            let mut sci = Buf::<40>::new();
            write!(sci, "{v:e}").unwrap();
            let (_, digits, _) = parse_sci::<20>(sci.as_bytes());
            let tie = is_tie_below(v, digits.as_bytes());
            assert_eq!(
                tie,
                is_tie_below_by_formatting(v, digits.as_bytes()),
                "{v:e}"
            );
            tie
        }
        // The known ties, and values near them and around powers of two and ten.
        let mut ties = 0;
        for v in [
            994236187939.28125f64,
            98081990729980.625,
            0.5,
            2.5,
            1e22,
            1e23,
        ] {
            ties += usize::from(check(v));
        }
        for v in [5.97265625f32, 53.0390625, 0.1, 16777216.0] {
            ties += usize::from(check(v));
        }
        assert!(ties >= 2, "the known ties were not found");
        let mut x: u64 = 0x2545_F491_4F6C_DD1D;
        for i in 0..if cfg!(miri) { 10 } else { 20_000 } {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // Few significant bits (where ties live) as well as random bit patterns.
            let f = if i % 2 == 0 {
                f64::from_bits(x)
            } else {
                ((x >> 40) as f64) * 2f64.powi((x % 40) as i32 - 20)
            };
            if f.is_finite() && f != 0.0 {
                check(f);
            }
            let g = if i % 2 == 0 {
                f32::from_bits((x >> 20) as u32)
            } else {
                ((x >> 50) as f32) * 2f32.powi((x % 30) as i32 - 15)
            };
            if g.is_finite() && g != 0.0 {
                check(g);
            }
        }
    }

    /// `v`'s digits from [`text`] against `core`'s shortest ones (`{:e}`): the same, or an
    /// exact tie (per [`is_tie_below`]) that `text` sends to the even digit and `core` to
    /// the odd one above. Returns whether it was such a tie.
    fn same_digits_as_core<F: super::Float>(v: F) -> bool {
        use super::{Buf, is_tie_below, parse_sci};
        use core::fmt::Write;
        if !v.is_finite() {
            assert_eq!(text(v).as_str(), alloc::format!("{v}"));
            return false;
        }
        let mut sci = Buf::<40>::new();
        write!(sci, "{v:e}").unwrap();
        let (neg, want, want_exp) = parse_sci::<20>(sci.as_bytes());
        let t = text(v);
        let t = t.as_str();
        assert_eq!(t.starts_with('-'), neg, "{v:e}: {t}");
        // Our text back to digits and exponent: strip sign, point, and leading zeros.
        let body = t.trim_start_matches('-');
        let (mantissa, exp) = match body.split_once('e') {
            Some((m, e)) => (m, e.parse::<i32>().unwrap()),
            None => (body, 0),
        };
        let point = mantissa.find('.').unwrap_or(mantissa.len()) as i32;
        let all: alloc::vec::Vec<u8> = mantissa.bytes().filter(|&b| b != b'.').collect();
        let lead = all.iter().take_while(|&&b| b == b'0').count();
        let mut got = &all[lead.min(all.len() - 1)..];
        while got.len() > 1 && got[got.len() - 1] == b'0' {
            got = &got[..got.len() - 1];
        }
        let got_exp = if all.iter().all(|&b| b == b'0') {
            0
        } else {
            exp + point - 1 - lead as i32
        };
        let want = want.as_bytes();
        if got == want && got_exp == want_exp {
            return false;
        }
        let n = want.len();
        let tie = got_exp == want_exp
            && got.len() == n
            && got[..n - 1] == want[..n - 1]
            && got[n - 1] + 1 == want[n - 1]
            && (got[n - 1] - b'0') & 1 == 0
            && is_tie_below(v, want);
        assert!(
            tie,
            "{v:e}: text {t}, core {sci}",
            sci = core::str::from_utf8(sci.as_bytes()).unwrap()
        );
        true
    }

    #[test]
    fn digits_are_cores_shortest_but_ties_go_even() {
        let (mut checked, mut ties) = (0u64, 0u64);
        let mut check64 = |f: f64| {
            if f.is_finite() {
                ties += u64::from(same_digits_as_core(f));
                checked += 1;
            }
        };
        // Every exponent: its powers of two (the closer lower bound), their neighbours and
        // the largest significand; the first subnormals.
        // (Under Miri, which interprets `core`'s formatter slowly, a sample of each loop.)
        for field in (0..2047u64).step_by(if cfg!(miri) { 257 } else { 1 }) {
            for frac in [0, 1, 2, (1 << 52) - 1] {
                check64(f64::from_bits(field << 52 | frac));
            }
        }
        for b in 1..if cfg!(miri) { 10 } else { 20_000 } {
            check64(f64::from_bits(b));
        }
        // Random bits, and values with few significant bits (where ties live).
        let mut x: u64 = 0x2545_F491_4F6C_DD1D;
        for i in 0..if cfg!(miri) { 30 } else { 400_000 } {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            check64(match i % 3 {
                0 => f64::from_bits(x),
                1 => ((x >> 11) as f64) * 2f64.powi((x % 128) as i32 - 64),
                _ => ((x >> 40) as f64) * 2f64.powi((x % 80) as i32 - 40),
            });
        }
        let mut check32 = |f: f32| {
            if f.is_finite() {
                ties += u64::from(same_digits_as_core(f));
                checked += 1;
            }
        };
        // f32: a sample across all bit patterns (every 4,099th), every exponent's powers of
        // two and neighbours, and every value with at most 8 significant bits.
        for b in (0..u32::MAX).step_by(if cfg!(miri) { 400_000_009 } else { 4_099 }) {
            check32(f32::from_bits(b));
        }
        for field in (0..255u32).step_by(if cfg!(miri) { 64 } else { 1 }) {
            for frac in 0..if cfg!(miri) { 2 } else { 256 } {
                check32(f32::from_bits(field << 23 | frac << 15));
                check32(f32::from_bits(field << 23 | frac));
            }
        }
        assert!(checked > if cfg!(miri) { 50 } else { 1_000_000 });
        if !cfg!(miri) {
            assert!(ties > 100, "no ties met: {ties} of {checked}");
        }
    }

    // Proptest reads the working directory for its regression files, which Miri's
    // isolation forbids; the deterministic sweeps above run under Miri instead.
    #[cfg(not(miri))]
    mod props {
        use super::same_digits_as_core;

        proptest::proptest! {
            #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2048))]

            #[test]
            fn any_f64_has_cores_digits_but_even_ties(bits: u64) {
                same_digits_as_core(f64::from_bits(bits));
            }

            #[test]
            fn any_f32_has_cores_digits_but_even_ties(bits: u32) {
                same_digits_as_core(f32::from_bits(bits));
            }

            #[test]
            fn short_f64s_have_cores_digits_but_even_ties(m in 1u64..1 << 20, e in -1074i32..1000) {
                same_digits_as_core(m as f64 * 2f64.powi(e));
            }
        }
    }

    #[test]
    fn text_reads_back_as_the_same_value() {
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        for _ in 0..if cfg!(miri) { 20 } else { 20_000 } {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let f = f64::from_bits(x);
            if f.is_finite() {
                assert_eq!(text(f).as_str().parse::<f64>(), Ok(f));
            }
            let g = f32::from_bits((x >> 20) as u32);
            if g.is_finite() {
                assert_eq!(text(g).as_str().parse::<f32>(), Ok(g));
            }
        }
    }
}
