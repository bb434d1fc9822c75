//! Floats as `lean_string` 0.8 writes them: the shortest digits that read back as the same
//! value, laid out as `1.0`, `0.001234`, `12340000000.0` or `1.234e+33`.
//!
//! The digits come from `core`'s shortest-representation formatter (`{:e}`). Between two
//! shortest candidates at exactly the same distance `core` takes the larger, while
//! `lean_string` (via the `zmij` crate) takes the even one; such exact ties are detected
//! with integer arithmetic on the float's bits and the last digit moved down, so the text
//! is the same in every case. Plain decimal notation
//! is used for decimal exponents `-5..=15` (`f64`) and `-6..=12` (`f32`), scientific outside.

use core::fmt::{self, Write};

/// A stack buffer that `write!` fills; too long an output is an error, never a panic.
struct Buf<const N: usize> {
    bytes: [u8; N],
    len: usize,
}

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

impl<const N: usize> Write for Buf<N> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        if s.len() > N - self.len {
            return Err(fmt::Error);
        }
        self.push_all(s.as_bytes());
        Ok(())
    }
}

/// A float type: its shortest digits and where plain notation ends.
pub(crate) trait Float: Copy + fmt::LowerExp + fmt::Display {
    /// Decimal exponents written in plain notation.
    const PLAIN: core::ops::RangeInclusive<i32>;
    /// Significant digits of the longest exact decimal expansion (an upper bound).
    #[cfg(test)]
    const EXACT_DIGITS: usize;
    fn is_finite(self) -> bool;
    /// `|self| = m * 2^e` exactly, `m` odd (finite and non-zero values only).
    fn decompose(self) -> (u64, i32);
}

/// `m * 2^e` with the trailing zero bits of `m` moved into `e` (`m > 0`).
fn odd(m: u64, e: i32) -> (u64, i32) {
    let z = m.trailing_zeros();
    (m >> z, e + z as i32)
}

impl Float for f64 {
    const PLAIN: core::ops::RangeInclusive<i32> = -5..=15;
    #[cfg(test)]
    const EXACT_DIGITS: usize = 767;
    fn is_finite(self) -> bool {
        f64::is_finite(self)
    }
    fn decompose(self) -> (u64, i32) {
        let bits = self.to_bits();
        let field = ((bits >> 52) & 0x7FF) as i32;
        let frac = bits & ((1 << 52) - 1);
        if field == 0 {
            odd(frac, -1074)
        } else {
            odd(frac | (1 << 52), field - 1075)
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
    fn decompose(self) -> (u64, i32) {
        let bits = self.to_bits();
        let field = ((bits >> 23) & 0xFF) as i32;
        let frac = u64::from(bits & ((1 << 23) - 1));
        if field == 0 {
            odd(frac, -149)
        } else {
            odd(frac | (1 << 23), field - 150)
        }
    }
}

/// The text, at most 32 bytes (`-1.7976931348623157e+308` is 24).
pub(crate) struct FloatText(Buf<32>);

impl FloatText {
    pub(crate) fn as_str(&self) -> &str {
        core::str::from_utf8(self.0.as_bytes()).expect("ASCII")
    }
}

/// Splits `[-]d[.ddd]e[-]x` into sign, digits and decimal exponent.
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
/// be a tie of at most 17 digits.
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

/// `v` as `lean_string` 0.8 writes it.
pub(crate) fn text<F: Float>(v: F) -> FloatText {
    let mut out = Buf::new();
    if !v.is_finite() {
        // "NaN", "inf", "-inf", as `Display` writes them.
        let _ = write!(out, "{v}");
        return FloatText(out);
    }
    let mut sci = Buf::<40>::new();
    let _ = write!(sci, "{v:e}");
    let (neg, mut digits, exp) = parse_sci::<20>(sci.as_bytes());
    let n = digits.len;
    let last = digits.bytes[n - 1];
    if (last - b'0') % 2 == 1 && n > 1 && is_tie_below(v, digits.as_bytes()) {
        digits.bytes[n - 1] = last - 1;
    }
    let d = digits.as_bytes();
    let n = n as i32;
    if neg {
        out.push(b'-');
    }
    if F::PLAIN.contains(&exp) {
        if n - 1 <= exp {
            // 1234e7 -> 12340000000.0
            out.push_all(d);
            for _ in 0..exp - (n - 1) {
                out.push(b'0');
            }
            out.push_all(b".0");
        } else if exp >= 0 {
            // 1234e1 -> 12.34
            let point = (exp + 1) as usize;
            out.push_all(&d[..point]);
            out.push(b'.');
            out.push_all(&d[point..]);
        } else {
            // 1234e-3 -> 0.001234
            out.push_all(b"0.");
            for _ in 0..-exp - 1 {
                out.push(b'0');
            }
            out.push_all(d);
        }
    } else {
        // 1234e30 -> 1.234e+33
        out.push(d[0]);
        if n > 1 {
            out.push(b'.');
            out.push_all(&d[1..]);
        }
        out.push(b'e');
        out.push(if exp < 0 { b'-' } else { b'+' });
        let _ = write!(out, "{}", exp.unsigned_abs());
    }
    FloatText(out)
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
