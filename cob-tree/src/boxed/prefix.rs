//! Order-preserving 8-byte key prefixes: `a < b` implies `prefix(a) <= prefix(b)`, so the
//! word core can order the boxed path's buckets by prefix alone.
//!
//! Byte-string keys (`String`, `Vec<u8>`, `Box<str>`, `Arc<str>`, ...) use their first 8
//! bytes, big-endian, zero-padded; integers, `char` and `bool` (as keys of a map whose
//! *values* are boxed, or `u128`/`i128`) use an order-preserving integer encoding. Other
//! key types (tuples, user structs) have no known prefix: all of them share prefix 0, so
//! such a map is one bucket unless it was made with a user prefix function
//! (`CobTree::with_prefix`; see the crate docs, "Two layouts").

use crate::pma::inl::cast_ref;
use std::sync::Arc;

/// What a key type's prefix is made of.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Kind {
    Bytes,
    Int,
    None,
}

/// The prefix kind of key type `K` (folds to a constant).
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
pub(crate) fn kind<K: 'static>() -> Kind {
    let probe = core::any::TypeId::of::<K>();
    macro_rules! is {
        ($($t:ty),*) => { false $(|| probe == core::any::TypeId::of::<$t>())* };
    }
    if is!(
        String,
        Vec<u8>,
        Box<str>,
        Box<[u8]>,
        Arc<str>,
        Arc<[u8]>,
        &'static str,
        &'static [u8]
    ) {
        Kind::Bytes
    } else if is!(
        u8, u16, u32, u64, usize, u128, i8, i16, i32, i64, isize, i128, char, bool
    ) {
        Kind::Int
    } else {
        Kind::None
    }
}

/// The first 8 bytes, big-endian, zero-padded.
#[inline]
fn bytes(b: &[u8]) -> u64 {
    let mut w = [0u8; 8];
    let n = b.len().min(8);
    w[..n].copy_from_slice(&b[..n]);
    u64::from_be_bytes(w)
}

/// Bytes 8..16, big-endian, zero-padded: order-preserving among byte strings whose first
/// 8 bytes (zero-padded) are equal.
#[inline]
fn next_bytes(b: &[u8]) -> u64 {
    bytes(b.get(8..).unwrap_or(&[]))
}

/// The byte string a byte-string lookup `q` stands for, if its type is one we know.
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
fn as_bytes<Q: ?Sized + 'static>(q: &Q) -> Option<&[u8]> {
    macro_rules! try_as {
        ($($t:ty => |$x:ident| $e:expr),* $(,)?) => {
            $(if let Some($x) = cast_ref::<Q, $t>(q) { return Some($e); })*
        };
    }
    try_as!(
        str => |s| s.as_bytes(),
        [u8] => |s| s,
        String => |s| s.as_bytes(),
        Vec<u8> => |s| s,
        Box<str> => |s| s.as_bytes(),
        Box<[u8]> => |s| s,
        Arc<str> => |s| s.as_bytes(),
        Arc<[u8]> => |s| s,
        &'static str => |s| s.as_bytes(),
        &'static [u8] => |s| s,
    );
    None
}

/// An integer-like lookup's order-preserving encoding, if its type is one we know.
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
fn as_int<Q: ?Sized + 'static>(q: &Q) -> Option<u64> {
    const FLIP: u64 = 1 << 63;
    macro_rules! try_as {
        ($($t:ty => |$x:ident| $e:expr),* $(,)?) => {
            $(if let Some($x) = cast_ref::<Q, $t>(q) { return Some($e); })*
        };
    }
    try_as!(
        u8 => |x| u64::from(*x), u16 => |x| u64::from(*x), u32 => |x| u64::from(*x),
        u64 => |x| *x, usize => |x| *x as u64, u128 => |x| (*x >> 64) as u64,
        i8 => |x| i64::from(*x) as u64 ^ FLIP, i16 => |x| i64::from(*x) as u64 ^ FLIP,
        i32 => |x| i64::from(*x) as u64 ^ FLIP, i64 => |x| *x as u64 ^ FLIP,
        isize => |x| *x as i64 as u64 ^ FLIP, i128 => |x| (*x >> 64) as i64 as u64 ^ FLIP,
        char => |x| u64::from(u32::from(*x)), bool => |x| u64::from(*x),
    );
    None
}

/// The prefix of lookup `q` for keys of type `K` (`K: Borrow<Q>`).
///
/// # Panics
/// If `K` is a byte-string or integer type and `Q` is a borrowed form this crate does not
/// know (a user `impl Borrow<MyType> for String`): use `&str`/`&[u8]` or the key type.
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
pub(crate) fn of<K: 'static, Q: ?Sized + 'static>(q: &Q) -> u64 {
    match kind::<K>() {
        Kind::None => 0,
        Kind::Bytes => match as_bytes(q) {
            Some(b) => bytes(b),
            None => unknown::<K, Q>(),
        },
        Kind::Int => match as_int(q) {
            Some(x) => x,
            None => unknown::<K, Q>(),
        },
    }
}

/// The word of lookup `q` for keys of type `K`: order-preserving among keys of one prefix
/// (`a < b` with `of(a) == of(b)` implies `word(a) <= word(b)`): for byte strings bytes
/// 8..16, for `u128`/`i128` the low 64 bits, else 0. A prefix's tree compares words before
/// it compares keys.
///
/// # Panics
/// As [`of`].
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
pub(crate) fn word<K: 'static, Q: ?Sized + 'static>(q: &Q) -> u64 {
    match kind::<K>() {
        Kind::None => 0,
        Kind::Bytes => match as_bytes(q) {
            Some(b) => next_bytes(b),
            None => unknown::<K, Q>(),
        },
        Kind::Int => {
            if let Some(x) = cast_ref::<Q, u128>(q) {
                *x as u64
            } else if let Some(x) = cast_ref::<Q, i128>(q) {
                *x as u64
            } else {
                0
            }
        }
    }
}

/// A lookup by another type than the key's in a map with a user prefix function.
#[cold]
pub(crate) fn unknown_with_fn<K, Q: ?Sized>() -> ! {
    panic!(
        "CobTree<{}, _> made with a prefix function: lookups by &{} are not supported (look up by &{})",
        core::any::type_name::<K>(),
        core::any::type_name::<Q>(),
        core::any::type_name::<K>()
    )
}

#[cold]
fn unknown<K, Q: ?Sized>() -> ! {
    panic!(
        "CobTree<{}, _>: lookups by &{} are not supported (use the key type or its std borrowed form)",
        core::any::type_name::<K>(),
        core::any::type_name::<Q>()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_preserving() {
        let mut ks: Vec<String> = ["", "a", "a\0", "ab", "abcdefgh", "abcdefghi", "b", "\u{ff}"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        ks.sort();
        for w in ks.windows(2) {
            assert!(of::<String, String>(&w[0]) <= of::<String, String>(&w[1]));
        }
        assert_eq!(
            of::<String, str>("abc"),
            of::<String, String>(&"abc".to_string())
        );
        let is = [i64::MIN, -1, 0, 1, i64::MAX];
        for w in is.windows(2) {
            assert!(of::<i64, i64>(&w[0]) < of::<i64, i64>(&w[1]));
        }
        assert!(of::<i128, i128>(&-1) < of::<i128, i128>(&(1 << 80)));
        assert_eq!(of::<(u8, String), (u8, String)>(&(1, "x".into())), 0);
    }

    #[test]
    fn words_order_keys_of_one_prefix() {
        let mut ks: Vec<String> = [
            "abcdefgh",
            "abcdefgh\0",
            "abcdefgha",
            "abcdefghab",
            "abcdefghz",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        ks.sort();
        for w in ks.windows(2) {
            assert_eq!(of::<String, String>(&w[0]), of::<String, String>(&w[1]));
            assert!(word::<String, String>(&w[0]) <= word::<String, String>(&w[1]));
        }
        let is: [i128; 4] = [-(1 << 70) - 1, -(1 << 70), -1, 0];
        assert_eq!(of::<i128, i128>(&-1), of::<i128, i128>(&-2));
        assert!(word::<i128, i128>(&-2) < word::<i128, i128>(&-1));
        for w in is.windows(2) {
            let (a, b) = (w[0], w[1]);
            if of::<i128, i128>(&a) == of::<i128, i128>(&b) {
                assert!(word::<i128, i128>(&a) <= word::<i128, i128>(&b));
            }
        }
        assert_eq!(word::<u64, u64>(&7), 0);
    }
}
