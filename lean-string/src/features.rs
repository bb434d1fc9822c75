//! Optional integrations, each behind the feature of the same name.

#[cfg(feature = "arbitrary")]
mod arbitrary;
#[cfg(feature = "bytes")]
mod bytes;
#[cfg(feature = "proptest")]
mod proptest;
#[cfg(feature = "serde")]
mod serde;
#[cfg(feature = "zeroize")]
mod zeroize;
