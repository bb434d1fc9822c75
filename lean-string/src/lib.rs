#![doc = include_str!("../README.md")]

extern crate alloc;

mod c_string;
mod edit;
mod error;
mod lean_str;
mod repr;
mod string;
mod sync;
mod traits;

#[cfg(feature = "serde")]
mod serde;

pub use c_string::LeanCString;
pub use error::{
    CStringError, FromUtf16Error, InteriorNulError, ReserveError, ToLeanStrError, ToLeanStringError,
};
pub use lean_str::LeanStr;
pub use repr::heap::{
    COMPACT_HEADER_SIZE, Compact, EXACT_HEADER_SIZE, HeaderPolicy, MAX_REFCOUNT, WIDE_HEADER_SIZE,
    WIDE_SENTINEL, Wide,
};
pub use repr::{
    C_INLINE_CAPACITY, HEAP_TAG, INLINE_CAPACITY, INLINE_TAG_BASE, MAX_LEN, MAX_WORD_LEN,
    STATIC_TAG,
};
pub use string::{LeanString, LeanStringWith, WideLeanString};
pub use traits::{ToLeanStr, ToLeanString};

#[cfg(test)]
mod tests;
