//! Integers, `bool` and `char` as text without the formatting machinery: digits are written
//! two at a time from a table into a stack buffer, which then becomes an (inline, for up to
//! 16 bytes) string. The output is exactly `Display`'s.

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

/// Room for `-` and the 39 digits of `u128::MAX` (`i128::MIN` has 39 too).
pub(crate) struct Digits {
    buf: [u8; 40],
    start: usize,
}

impl Digits {
    fn new() -> Self {
        Self {
            buf: [0; 40],
            start: 40,
        }
    }

    #[inline(always)]
    fn pair(&mut self, v: usize) {
        self.start -= 2;
        self.buf[self.start] = PAIRS[2 * v];
        self.buf[self.start + 1] = PAIRS[2 * v + 1];
    }

    /// Writes `n` in front of what is there already.
    #[inline]
    fn u64(&mut self, mut n: u64) {
        while n >= 10_000 {
            let rem = (n % 10_000) as usize;
            n /= 10_000;
            self.pair(rem % 100);
            self.pair(rem / 100);
        }
        let mut n = n as usize;
        if n >= 100 {
            self.pair(n % 100);
            n /= 100;
        }
        if n >= 10 {
            self.pair(n);
        } else {
            self.start -= 1;
            self.buf[self.start] = b'0' + n as u8;
        }
    }

    /// `u128` in chunks of 19 digits, so the hot loop stays in 64-bit arithmetic.
    fn u128(&mut self, mut n: u128) {
        const CHUNK: u128 = 10_000_000_000_000_000_000; // 10^19
        while n >= CHUNK {
            let low = (n % CHUNK) as u64;
            n /= CHUNK;
            let end = self.start;
            self.u64(low);
            // Zero-pad the chunk to its 19 digits.
            while self.start > end - 19 {
                self.start -= 1;
                self.buf[self.start] = b'0';
            }
        }
        self.u64(n as u64);
    }

    fn minus(&mut self) {
        self.start -= 1;
        self.buf[self.start] = b'-';
    }

    pub(crate) fn as_str(&self) -> &str {
        // The buffer from `start` holds only ASCII digits and `-`.
        core::str::from_utf8(&self.buf[self.start..]).expect("ASCII digits")
    }
}

/// An integer type whose decimal text [`Digits`] can write.
pub(crate) trait Integer: Copy {
    fn digits(self) -> Digits;
}

macro_rules! unsigned {
    ($($t:ty => $via:ident),*) => {$(
        impl Integer for $t {
            #[inline]
            fn digits(self) -> Digits {
                let mut d = Digits::new();
                d.$via(self as _);
                d
            }
        }
    )*};
}
macro_rules! signed {
    ($($t:ty => $via:ident),*) => {$(
        impl Integer for $t {
            #[inline]
            fn digits(self) -> Digits {
                let mut d = Digits::new();
                d.$via(self.unsigned_abs() as _);
                if self < 0 {
                    d.minus();
                }
                d
            }
        }
    )*};
}
unsigned!(u8 => u64, u16 => u64, u32 => u64, u64 => u64, usize => u64, u128 => u128);
signed!(i8 => u64, i16 => u64, i32 => u64, i64 => u64, isize => u64, i128 => u128);

#[cfg(test)]
mod tests {
    use super::Integer;
    use alloc::string::ToString;

    fn check<T: Integer + core::fmt::Display>(v: T) {
        assert_eq!(v.digits().as_str(), v.to_string());
    }

    #[test]
    fn digits_match_display_at_the_edges() {
        for v in [
            0u64,
            1,
            9,
            10,
            99,
            100,
            999,
            1000,
            9999,
            10_000,
            99_999,
            100_000,
            u64::MAX,
        ] {
            check(v);
            check(v.wrapping_sub(1));
        }
        for v in [i64::MIN, i64::MIN + 1, -1, 0, 1, i64::MAX] {
            check(v);
        }
        for v in [
            0u128,
            10u128.pow(19) - 1,
            10u128.pow(19),
            10u128.pow(19) + 7,
            u128::MAX,
        ] {
            check(v);
        }
        for v in [i128::MIN, i128::MIN + 1, -(10i128.pow(19)), i128::MAX] {
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
