//! Integers as text without the formatting machinery (the digits are written by
//! `repr::digits` straight into the new string). The output is exactly `Display`'s.

use crate::error::ReserveError;
use crate::repr::{self, Shared};

/// An integer type: its sign and magnitude.
pub(crate) trait Integer: Copy {
    /// `(negative, |self|)`; types up to 64 bits use the `u64` path.
    fn to_decimal<R: Shared>(self) -> Result<R, ReserveError>;
}

macro_rules! unsigned {
    ($($t:ty),*) => {$(
        impl Integer for $t {
            #[inline(always)]
            fn to_decimal<R: Shared>(self) -> Result<R, ReserveError> {
                repr::decimal(false, self as u64)
            }
        }
    )*};
}
macro_rules! signed {
    ($($t:ty),*) => {$(
        impl Integer for $t {
            #[inline(always)]
            fn to_decimal<R: Shared>(self) -> Result<R, ReserveError> {
                repr::decimal(self < 0, self.unsigned_abs() as u64)
            }
        }
    )*};
}
unsigned!(u8, u16, u32, u64, usize);
signed!(i8, i16, i32, i64, isize);

impl Integer for u128 {
    #[inline]
    fn to_decimal<R: Shared>(self) -> Result<R, ReserveError> {
        repr::decimal128(false, self)
    }
}

impl Integer for i128 {
    #[inline]
    fn to_decimal<R: Shared>(self) -> Result<R, ReserveError> {
        repr::decimal128(self < 0, self.unsigned_abs())
    }
}

#[cfg(test)]
mod tests {
    use super::Integer;
    use crate::repr::{Repr, Shared, StrRepr};
    use crate::{Compact, LeanString};
    use alloc::string::ToString;

    fn check<T: Integer + core::fmt::Display>(v: T) {
        let s = v.to_decimal::<Repr<Compact>>().unwrap();
        assert_eq!(LeanString::from_repr(s), v.to_string().as_str());
        let f = v.to_decimal::<StrRepr>().unwrap();
        assert_eq!(f.contents(), v.to_string());
    }

    #[test]
    fn digits_match_display_at_the_edges() {
        let mut p = 1u64;
        for _ in 0..20 {
            for v in [p - 1, p, p + 1] {
                check(v);
            }
            p = p.saturating_mul(10);
        }
        check(u64::MAX);
        for v in [i64::MIN, i64::MIN + 1, -1, 0, 1, i64::MAX] {
            check(v);
        }
        let e19 = 10u128.pow(19);
        for v in [
            0u128,
            e19 - 1,
            e19,
            e19 + 7,
            e19 * e19,
            e19 * e19 - 1,
            e19 * e19 + 5,
        ] {
            check(v);
        }
        check(u64::MAX as u128 + 1);
        check(u128::MAX);
        for v in [
            i128::MIN,
            i128::MIN + 1,
            -(10i128.pow(19)),
            -(10i128.pow(38)),
            i128::MAX,
        ] {
            check(v);
        }
        for v in i8::MIN..=i8::MAX {
            check(v);
        }
        for v in (0..=u16::MAX).step_by(if cfg!(miri) { 997 } else { 1 }) {
            check(v);
            check(v as i16);
        }
    }
}
