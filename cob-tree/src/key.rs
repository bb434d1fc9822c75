//! Which types a [`CobTree`](crate::CobTree) stores, and how they become atomic words.
//!
//! Readers copy keys and values out of the array while writers may be moving them, so every
//! key and value lives in `AtomicU64` words and is read and written word by word. That is
//! only sound for types where *every* bit pattern of those words is a valid value (a mix of
//! words from two writes must still be a value, even if a version check then discards it),
//! and where copying the bits is the whole story (no `Drop`, no pointers). Hence the bound:
//! [`Pod`] is sealed and implemented for exactly
//!
//! - every primitive integer type (`u8`..`u128`, `i8`..`i128`, `usize`, `isize`),
//! - byte arrays `[u8; N]` for `N` in `1..=16`,
//! - `bool` and `char`,
//! - pairs `(A, B)` of these that fit two words together (`(u32, u32)`, `(u64, u64)`,
//!   `(char, bool)`, ...),
//! - `()` (so `CobTree<K, ()>` is an ordered set),
//!
//! which are all at most [`MAX_POD_BYTES`] = 16 bytes (two words). Keys additionally need
//! [`Key`]: `Ord` plus a greatest value, which pads the unused tail of the index.

/// The largest key or value size, in bytes (two `AtomicU64` words).
pub const MAX_POD_BYTES: usize = 16;

mod sealed {
    pub trait Sealed {}
}

/// Plain data of at most [`MAX_POD_BYTES`] bytes that the map stores as atomic words.
///
/// Sealed: implemented for every primitive integer, `[u8; N]` for `N` in `1..=16`, and
/// `()`; the crate docs ("Key and value bound") say why the list is closed.
pub trait Pod: Copy + sealed::Sealed + 'static {
    /// How many `u64` words the value occupies (0, 1 or 2).
    #[doc(hidden)]
    const WORDS: usize;
    /// The value as words (unused words are zero).
    #[doc(hidden)]
    fn to_words(self) -> [u64; 2];
    /// The value back from words; total: every word pattern gives some value.
    #[doc(hidden)]
    fn from_words(w: [u64; 2]) -> Self;
}

/// A [`Pod`] type usable as a key: totally ordered, with a greatest value.
pub trait Key: Pod + Ord {
    /// The greatest value of the type (pads the index beyond the last used leaf).
    #[doc(hidden)]
    const MAX: Self;
}

macro_rules! word_int {
    ($($t:ty => $u:ty),*) => {$(
        impl sealed::Sealed for $t {}
        impl Pod for $t {
            const WORDS: usize = 1;
            #[inline(always)]
            fn to_words(self) -> [u64; 2] {
                [self as $u as u64, 0]
            }
            #[inline(always)]
            fn from_words(w: [u64; 2]) -> Self {
                w[0] as $u as $t
            }
        }
        impl Key for $t {
            const MAX: Self = <$t>::MAX;
        }
        const _: () = assert!(core::mem::size_of::<$t>() <= 8);
    )*};
}
word_int!(u8 => u8, u16 => u16, u32 => u32, u64 => u64, usize => usize,
    i8 => u8, i16 => u16, i32 => u32, i64 => u64, isize => usize);

macro_rules! wide_int {
    ($($t:ty => $u:ty),*) => {$(
        impl sealed::Sealed for $t {}
        impl Pod for $t {
            const WORDS: usize = 2;
            #[inline(always)]
            fn to_words(self) -> [u64; 2] {
                let u = self as $u;
                [u as u64, (u >> 64) as u64]
            }
            #[inline(always)]
            fn from_words(w: [u64; 2]) -> Self {
                ((w[0] as $u) | ((w[1] as $u) << 64)) as $t
            }
        }
        impl Key for $t {
            const MAX: Self = <$t>::MAX;
        }
        const _: () = assert!(core::mem::size_of::<$t>() == MAX_POD_BYTES);
    )*};
}
wide_int!(u128 => u128, i128 => u128);

macro_rules! byte_array {
    ($($n:literal)*) => {$(
        impl sealed::Sealed for [u8; $n] {}
        impl Pod for [u8; $n] {
            const WORDS: usize = ($n as usize).div_ceil(8);
            #[inline(always)]
            fn to_words(self) -> [u64; 2] {
                let mut b = [0u8; 16];
                b[..$n].copy_from_slice(&self);
                [
                    u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]),
                    u64::from_le_bytes([b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]]),
                ]
            }
            #[inline(always)]
            fn from_words(w: [u64; 2]) -> Self {
                let lo = w[0].to_le_bytes();
                let hi = w[1].to_le_bytes();
                let mut out = [0u8; $n];
                for (i, o) in out.iter_mut().enumerate() {
                    *o = if i < 8 { lo[i] } else { hi[i - 8] };
                }
                out
            }
        }
        impl Key for [u8; $n] {
            const MAX: Self = [u8::MAX; $n];
        }
        const _: () = assert!($n <= MAX_POD_BYTES);
    )*};
}
byte_array!(1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16);

impl sealed::Sealed for bool {}
impl Pod for bool {
    const WORDS: usize = 1;
    #[inline(always)]
    fn to_words(self) -> [u64; 2] {
        [u64::from(self), 0]
    }
    #[inline(always)]
    fn from_words(w: [u64; 2]) -> Self {
        w[0] != 0
    }
}
impl Key for bool {
    const MAX: Self = true;
}

impl sealed::Sealed for char {}
impl Pod for char {
    const WORDS: usize = 1;
    #[inline(always)]
    fn to_words(self) -> [u64; 2] {
        [u64::from(u32::from(self)), 0]
    }
    /// Total: a word that is no `char` (only a torn read, which validation discards)
    /// reads as `'\0'`.
    #[inline(always)]
    fn from_words(w: [u64; 2]) -> Self {
        u32::try_from(w[0])
            .ok()
            .and_then(char::from_u32)
            .unwrap_or('\0')
    }
}
impl Key for char {
    const MAX: Self = char::MAX;
}

/// Pairs of plain types that fit two words together, e.g. `(u32, u32)`, `(u64, u64)`,
/// `(u8, [u8; 7])`, `(char, bool)`: the first in the first words, the second after it. As
/// a key, ordered as tuples are (lexicographically), its greatest value the pair of
/// greatest values. A pair of more than two words (`(u128, u8)`) fails to compile where
/// it is used (the assertion in `WORDS`).
impl<A: Pod, B: Pod> sealed::Sealed for (A, B) {}
impl<A: Pod, B: Pod> Pod for (A, B) {
    const WORDS: usize = {
        assert!(
            A::WORDS + B::WORDS <= 2,
            "a CobTree pair key or value must fit two 64-bit words"
        );
        A::WORDS + B::WORDS
    };
    #[inline(always)]
    fn to_words(self) -> [u64; 2] {
        let (a, b) = (self.0.to_words(), self.1.to_words());
        match A::WORDS {
            0 => b,
            1 => [a[0], b[0]],
            _ => a,
        }
    }
    #[inline(always)]
    fn from_words(w: [u64; 2]) -> Self {
        match A::WORDS {
            0 => (A::from_words([0, 0]), B::from_words(w)),
            1 => (A::from_words([w[0], 0]), B::from_words([w[1], 0])),
            _ => (A::from_words(w), B::from_words([0, 0])),
        }
    }
}
impl<A: Key, B: Key> Key for (A, B) {
    const MAX: Self = (A::MAX, B::MAX);
}

impl sealed::Sealed for () {}
impl Pod for () {
    const WORDS: usize = 0;
    #[inline(always)]
    fn to_words(self) -> [u64; 2] {
        [0, 0]
    }
    #[inline(always)]
    fn from_words(_: [u64; 2]) -> Self {}
}
impl Key for () {
    const MAX: Self = ();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round<T: Pod + PartialEq + core::fmt::Debug>(x: T) {
        assert_eq!(T::from_words(x.to_words()), x);
    }

    #[test]
    fn words_round_trip() {
        round(-5i8);
        round(u64::MAX);
        round(i64::MIN);
        round(i128::MIN + 7);
        round(u128::MAX - 3);
        round([1u8, 2, 3]);
        round([9u8; 16]);
        round(*b"abcdefghi");
        round(());
        round(true);
        round(false);
        round('\u{10FFFF}');
        round('a');
        round((7u32, -9i32));
        round((u64::MAX, 3u64));
        round(((), 5u128));
        round((u128::MAX - 1, ()));
        round(('z', true));
        round((3u8, [1u8, 2, 3]));
        // Every word pattern is some value (a torn read must not be UB).
        assert_eq!(char::from_words([0xD800, 0]), '\0');
        assert_eq!(char::from_words([u64::MAX, 0]), '\0');
        assert!(bool::from_words([2, 0]));
        // The pair's order is the tuple's.
        assert!((1u8, 9u8) < (2, 0) && (2u8, 0u8) < <(u8, u8) as Key>::MAX);
    }
}
