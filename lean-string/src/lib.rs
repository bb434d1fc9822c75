#![doc = include_str!("../README.md")]
#![cfg_attr(not(test), no_std)]
#![cfg_attr(docsrs, feature(doc_cfg))]

extern crate alloc;
#[cfg(feature = "std")]
extern crate std;

pub mod _tutorial;

mod c_string;
mod case;
mod convert;
mod drain;
mod edit;
mod error;
mod features;
mod float;
mod lean_str;
mod num;
mod repr;
mod shortest;
mod string;
mod sync;
mod traits;
mod utf16;

pub use c_string::LeanCString;
pub use drain::Drain;
pub use error::{
    CStringError, FromUtf16Error, InteriorNulError, ReserveError, ToLeanStrError, ToLeanStringError,
};
pub use lean_str::LeanStr;
pub use repr::heap::{
    COMPACT_HEADER_SIZE, Compact, EXACT_HEADER_SIZE, HeaderPolicy, MAX_REFCOUNT, WIDE_HEADER_SIZE,
    WIDE_SENTINEL, Wide,
};
pub use repr::{C_INLINE_CAPACITY, INLINE_CAPACITY, MAX_LEN, MAX_WORD_LEN};
pub use string::{LeanString, LeanStringWith, WideLeanString};
#[doc(hidden)]
pub use traits::__format_lean;
pub use traits::{ToLeanStr, ToLeanString};

/// Creates a [`LeanString`] with `format!` syntax. A plain literal (no arguments) becomes a
/// static string in O(1); otherwise the text is written straight into the new string.
///
/// ```
/// use lean_string::format_lean;
/// let s = format_lean!("{}-{}", 7, "seven");
/// assert_eq!(s, "7-seven");
/// assert!(format_lean!("a literal longer than sixteen bytes").as_static_str().is_some());
/// ```
///
/// # Panics
/// If allocation fails or a `Display` implementation returns an error.
#[macro_export]
macro_rules! format_lean {
    ($($arg:tt)*) => {
        $crate::__format_lean(::core::format_args!($($arg)*))
    };
}

#[cfg(test)]
mod tests;
