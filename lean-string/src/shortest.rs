//! The shortest decimal digits that read back as a given binary float: the method of
//! R. Giulietti's "Schubfach" (pigeonhole) paper, in integer arithmetic with one 128-bit
//! power of ten per call.
//!
//! A finite non-zero float is `c * 2^q`. Every real number strictly inside (or, when `c` is
//! even, also on the ends of) the rounding interval `[c - 1/2, c + 1/2] * 2^q` reads back as
//! it (`[c - 1/4, ...]` when the next float down is half as far: a power of two). With
//! `k = floor(log10(interval width))`, the interval holds at most one multiple of
//! `10^(k + 1)` and at least one of `10^k`; so the shortest digits are that one multiple of
//! `10^(k + 1)` if there is one, else whichever of the two multiples of `10^k` around the
//! value is inside, the nearer if both are (ties go to the even one).
//!
//! The value and both ends are scaled by `10^-k`, times 4 (two fraction bits), by one
//! 128-bit multiplication each with the table entry for `10^-k` ([`pow10`], written by
//! `tools/pow10.py` with exact arithmetic); rounding the products to odd keeps every
//! comparison with a multiple of 4 exact. The tests compare the digits with `core`'s own
//! shortest formatting on every `f32` sampled across all bit patterns and on millions of
//! `f64`s.

mod pow10;

use pow10::{MAX_E, MIN_E, POW10};

/// `floor(log10(2^q))`, for `|q| <= 1100` (the generator checks every `q`).
#[inline(always)]
const fn floor_log10_pow2(q: i32) -> i32 {
    (q * 1_262_611) >> 22
}

/// `floor(log10(3/4 * 2^q))`, for `|q| <= 1100`.
#[inline(always)]
const fn floor_log10_three_quarters_pow2(q: i32) -> i32 {
    (q * 1_262_611 - 524_031) >> 22
}

/// `floor(log2(10^e))`, for `e` in the table's range.
#[inline(always)]
const fn floor_log2_pow10(e: i32) -> i32 {
    (e * 1_741_647) >> 19
}

/// `cp * g / 2^128` rounded to odd: the integer part, its lowest bit set when a fraction
/// is left. A fraction below two units of 2^-64 counts as none: it is the table's rounding
/// up (`g` exceeds the true power by less than one unit, `cp < 2^64`), never a true
/// fraction, which the method's analysis bounds from below.
#[inline(always)]
fn round_to_odd(g: (u64, u64), cp: u64) -> u64 {
    let low = u128::from(g.1) * u128::from(cp);
    let y = u128::from(g.0) * u128::from(cp) + (low >> 64);
    let (high, mid) = ((y >> 64) as u64, y as u64);
    high | u64::from(mid > 1)
}

/// The shortest decimal `d * 10^k` that reads back as `c * 2^q` (`0 < c < 2^54`, `q` a
/// binary exponent of `f64` or `f32`): of the shortest, the nearest, ties to even.
/// `lower_closer`: `c * 2^q` is a power of two above the smallest normal, so the next float
/// down is half as far as the next one up. `d` may end in zeros. Constant time: three
/// 64x128-bit multiplications.
#[inline]
pub(crate) fn shortest(c: u64, q: i32, lower_closer: bool) -> (u64, i32) {
    debug_assert!(c > 0 && c < 1 << 54);
    // An integer below 2^53 (gaps of at most 1): its own digits are the shortest.
    if q <= 0 && c.trailing_zeros() >= q.unsigned_abs() {
        return (c >> q.unsigned_abs(), 0);
    }
    let even = c & 1 == 0;
    // The value and the interval ends, in units of 2^(q - 2).
    let cb = c << 2;
    let cbl = cb - 2 + u64::from(lower_closer);
    let cbr = cb + 2;
    let k = if lower_closer {
        floor_log10_three_quarters_pow2(q)
    } else {
        floor_log10_pow2(q)
    };
    let e = -k;
    debug_assert!((MIN_E..=MAX_E).contains(&e));
    // 10^e = g * 2^(floor(log2(10^e)) - 127); the shift `h` (1..=4) makes the product's
    // high 64 bits `4 * x * 10^-k` for each `x` of the value and the ends.
    let h = q + floor_log2_pow10(e) + 1;
    debug_assert!((1..=4).contains(&h));
    let g = POW10[(e - MIN_E) as usize];
    let vbl = round_to_odd(g, cbl << h);
    let vb = round_to_odd(g, cb << h);
    let vbr = round_to_odd(g, cbr << h);
    // The interval in the same units; an odd `c` leaves its ends out.
    let lower = vbl + u64::from(!even);
    let upper = vbr - u64::from(!even);
    let s = vb / 4;
    if s >= 10 {
        // The multiples of 10^(k + 1) below and above the value: at most one is inside.
        let sp = s / 10;
        let below_inside = lower <= 40 * sp;
        let above_inside = 40 * sp + 40 <= upper;
        if below_inside != above_inside {
            return (sp + u64::from(above_inside), k + 1);
        }
    }
    // The multiples of 10^k below and above: at least one is inside.
    let below_inside = lower <= 4 * s;
    let above_inside = 4 * s + 4 <= upper;
    if below_inside != above_inside {
        return (s + u64::from(above_inside), k);
    }
    // Both: the nearer, the even one on a tie.
    let mid = 4 * s + 2;
    let up = vb > mid || (vb == mid && s & 1 != 0);
    (s + u64::from(up), k)
}

#[cfg(test)]
mod tests {
    use super::pow10::{MAX_E, MIN_E, POW10};
    use super::{floor_log2_pow10, floor_log10_pow2, floor_log10_three_quarters_pow2};

    #[test]
    fn the_table_is_normalized_and_exact_where_it_can_be() {
        let g = |e: i32| {
            let (h, l) = POW10[(e - MIN_E) as usize];
            (u128::from(h) << 64) | u128::from(l)
        };
        for e in MIN_E..=MAX_E {
            assert!(g(e) >> 127 == 1, "10^{e} is not normalized");
        }
        // 10^e for e <= 38 fits 128 bits: the entry is it, shifted up.
        let mut p = 1u128;
        for e in 0..=38 {
            assert_eq!(g(e), p << p.leading_zeros(), "10^{e}");
            if e < 38 {
                p *= 10;
            }
        }
        // Each entry is the one before times 10, renormalized (to rounding).
        for e in MIN_E..MAX_E {
            // g * 10/16 (truncated: up to 5 below), or g * 10/8 when that is normalized.
            let sixteenths = (g(e) >> 3) * 5;
            let next = g(e + 1);
            let near = next.abs_diff(sixteenths) <= 8
                || (sixteenths >> 127 == 0 && next.abs_diff(sixteenths << 1) <= 16);
            assert!(near, "10^{}", e + 1);
        }
    }

    #[test]
    fn the_logarithm_forms_agree_with_floating_point_where_it_is_safe() {
        // The generator checks them exactly; here, away from exact powers, f64 logs agree.
        for q in -1100..1000 {
            let l = f64::from(q) * core::f64::consts::LOG10_2;
            if (l - l.round()).abs() > 1e-9 {
                assert_eq!(floor_log10_pow2(q), l.floor() as i32, "q = {q}");
            }
            let l = l + (0.75f64).log10();
            if (l - l.round()).abs() > 1e-9 {
                assert_eq!(
                    floor_log10_three_quarters_pow2(q),
                    l.floor() as i32,
                    "q = {q}"
                );
            }
        }
        for e in MIN_E..=MAX_E {
            let l = f64::from(e) * core::f64::consts::LOG2_10;
            if (l - l.round()).abs() > 1e-9 {
                assert_eq!(floor_log2_pow10(e), l.floor() as i32, "e = {e}");
            }
        }
    }
}
