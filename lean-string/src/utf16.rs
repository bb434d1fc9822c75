//! UTF-16 decoding for `from_utf16*`, as `String`'s: a buffer sized to the number of code
//! units, then one `push` per decoded char.

use crate::error::{FromUtf16Error, Utf16ErrorKind};
use crate::{HeaderPolicy, LeanStringWith};

/// The byte order of a `&[u8]` input.
#[derive(Clone, Copy)]
pub(crate) enum Order {
    Le,
    Be,
}

fn unit(pair: &[u8; 2], order: Order) -> u16 {
    match order {
        Order::Le => u16::from_le_bytes(*pair),
        Order::Be => u16::from_be_bytes(*pair),
    }
}

/// Decodes `units`; `lossy` replaces each unpaired surrogate with U+FFFD, otherwise the
/// first one is an error.
pub(crate) fn decode<L: HeaderPolicy>(
    units: impl Iterator<Item = u16>,
    count: usize,
    lossy: bool,
) -> Result<LeanStringWith<L>, FromUtf16Error> {
    let mut s = LeanStringWith::with_capacity(count);
    for c in char::decode_utf16(units) {
        match c {
            Ok(c) => s.push(c),
            Err(_) if lossy => s.push(char::REPLACEMENT_CHARACTER),
            Err(_) => {
                return Err(FromUtf16Error {
                    kind: Utf16ErrorKind::LoneSurrogate,
                });
            }
        }
    }
    Ok(s)
}

/// Decodes UTF-16 bytes in `order`. An odd length is an error, or (lossy) one more U+FFFD
/// at the end, as `String::from_utf16le_lossy` does.
pub(crate) fn decode_bytes<L: HeaderPolicy>(
    bytes: &[u8],
    order: Order,
    lossy: bool,
) -> Result<LeanStringWith<L>, FromUtf16Error> {
    let (pairs, rest) = bytes.as_chunks::<2>();
    if !rest.is_empty() && !lossy {
        return Err(FromUtf16Error {
            kind: Utf16ErrorKind::OddBytes,
        });
    }
    let units = pairs.iter().map(|p| unit(p, order));
    let mut s = decode(units, pairs.len(), lossy)?;
    if !rest.is_empty() {
        s.push(char::REPLACEMENT_CHARACTER);
    }
    Ok(s)
}
