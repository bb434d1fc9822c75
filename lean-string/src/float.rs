//! Floats as `lean_string` 0.8 writes them: the shortest digits that read back as the same
//! value, laid out as `1.0`, `0.001234`, `12340000000.0` or `1.234e+33`.
//!
//! The digits come from `core`'s shortest-representation formatter (`{:e}`). Between two
//! shortest candidates at exactly the same distance `core` takes the larger, while
//! `lean_string` (via the `zmij` crate) takes the even one; such exact ties are detected and
//! the last digit moved down, so the text is the same in every case. Plain decimal notation
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
    const EXACT_DIGITS: usize;
    fn is_finite(self) -> bool;
}

impl Float for f64 {
    const PLAIN: core::ops::RangeInclusive<i32> = -5..=15;
    const EXACT_DIGITS: usize = 767;
    fn is_finite(self) -> bool {
        f64::is_finite(self)
    }
}

impl Float for f32 {
    const PLAIN: core::ops::RangeInclusive<i32> = -6..=12;
    const EXACT_DIGITS: usize = 112;
    fn is_finite(self) -> bool {
        f32::is_finite(self)
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
/// nothing.
fn is_tie_below<F: Float>(v: F, digits: &[u8]) -> bool {
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
