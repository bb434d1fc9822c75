//! What the word core stores: the traits it is generic over, implemented only for
//! [`Inl<T>`](crate::pma::inl::Inl) (an inline key or value's words).
//!
//! Which types are inline, and why the list is closed, is in `pma/inl.rs`; the boxed path
//! for everything else is `crate::boxed`.

use crate::pma::inl::Inl;

/// The largest inline key or value, in bytes (two `AtomicU64` words).
pub const MAX_POD_BYTES: usize = 16;

/// Plain data the core stores as atomic words.
pub(crate) trait Pod: Copy + 'static {
    /// How many `u64` words the value occupies (0, 1 or 2).
    const WORDS: usize;
    /// The value as words (unused words are zero).
    fn to_words(self) -> [u64; 2];
    /// The value back from words; total: every word pattern gives some value.
    fn from_words(w: [u64; 2]) -> Self;
}

/// A [`Pod`] type usable as a key: totally ordered, with a greatest value.
pub(crate) trait Key: Pod + Ord + Borrow<Self> {
    /// The greatest value of the type (pads the index beyond the last used leaf).
    fn greatest() -> Self;
}

/// How the core compares a stored key with a lookup's `&Q`: with itself, or with a
/// user's lookup `Look<Q>` (`K: Borrow<Q>` of the user's types, seen through [`Inl`]).
pub(crate) trait Borrow<Q: ?Sized> {
    fn borrow(&self) -> &Q;
}

impl<T: 'static, const W: usize> Pod for Inl<T, W> {
    const WORDS: usize = Inl::<T, W>::WORDS;
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn to_words(self) -> [u64; 2] {
        Inl::to_words(self)
    }
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn from_words(w: [u64; 2]) -> Self {
        Inl::from_words(w)
    }
}

impl<T: Ord + 'static, const W: usize> Key for Inl<T, W> {
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn greatest() -> Self {
        Inl::max()
    }
}

const _: () = assert!(Inl::<[u8; MAX_POD_BYTES]>::WORDS * 8 == MAX_POD_BYTES);
