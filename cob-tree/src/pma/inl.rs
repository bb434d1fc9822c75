//! The inline storage choice: which key and value types live in the array's atomic words,
//! and the one type, [`Inl<T>`], through which the word core sees them.
//!
//! A [`CobTree<K, V>`](crate::CobTree) accepts every `K: Ord + Clone` and `V: Clone`. Types
//! whose bytes *are* the whole value (no pointers, no `Drop`, no padding) and fit
//! [`MAX_POD_BYTES`](crate::MAX_POD_BYTES) are stored inline, as today; the choice is made
//! per type by comparing its `TypeId` with the list in [`is_inline`], which the compiler
//! folds to a constant (so the choice costs nothing at run time). Everything else takes the
//! boxed path (`crate::boxed`).
//!
//! ```text
//!  Inl<T>: [u64; 2] words, T's bytes at offset 0, the rest zero
//!  +---------------------------+---------------------------+
//!  | word 0: bytes 0..8 of T   | word 1: bytes 8..16 of T  |   WORDS = ceil(size_of T / 8)
//!  +---------------------------+---------------------------+
//! ```
//!
//! Why the list is closed: readers copy words out of leaves while writers move them, so
//! every word pattern the core may combine must be *some* valid `T` (a torn or stale read
//! is only thrown away after it was compared). That holds for the integers, byte arrays,
//! `()` and the padding-free pairs of integers listed below (pairs with `char` or `bool`
//! are not: a tuple's field offsets are unspecified, so one half could not be normalised); `bool` and `char` are normalised
//! when read. `u128`/`i128` are not listed: their alignment (16) is above the words'
//! (8), so a reference into the words could not be a `&u128`; they take the boxed path.

use core::any::TypeId;
use core::cmp::Ordering;
use core::marker::PhantomData;

/// Whether `T` is stored inline. Folded to a constant in optimised builds.
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
pub(crate) fn is_inline<T: 'static>() -> bool {
    let t = TypeId::of::<T>();
    macro_rules! any_of {
        ($($ty:ty),* $(,)?) => { false $(|| t == TypeId::of::<$ty>())* };
    }
    any_of!(
        (),
        u8,
        u16,
        u32,
        u64,
        usize,
        i8,
        i16,
        i32,
        i64,
        isize,
        bool,
        char,
        [u8; 1],
        [u8; 2],
        [u8; 3],
        [u8; 4],
        [u8; 5],
        [u8; 6],
        [u8; 7],
        [u8; 8],
        [u8; 9],
        [u8; 10],
        [u8; 11],
        [u8; 12],
        [u8; 13],
        [u8; 14],
        [u8; 15],
        [u8; 16],
        (u8, u8),
        (u16, u16),
        (u32, u32),
        (u64, u64),
        (i32, i32),
        (i64, i64),
        (u32, i32),
        (i32, u32),
        (u64, i64),
        (i64, u64),
        (usize, usize),
        (u64, ()),
        ((), u64),
        (u32, ()),
        ((), u32),
    )
}

/// The words of one inline key or value, `W` (1 or 2) of them: one-word types travel as
/// one word through the core (a 16-byte value for a `u64` costs `get` about 20
/// instructions of copies). Constructed only for an [`is_inline`] type of at most `8 * W`
/// bytes (a folded `assert!` in [`Inl::new`] and [`Inl::from_words`]), so its words always
/// hold the bytes of a valid `T`.
#[repr(C)]
pub(crate) struct Inl<T, const W: usize = 2> {
    w: [u64; W],
    _t: PhantomData<fn() -> T>,
}

const _: () = assert!(core::mem::size_of::<Inl<u64, 1>>() == 8);
const _: () = assert!(core::mem::size_of::<Inl<u64, 2>>() == 16);
const _: () = assert!(core::mem::align_of::<Inl<u64, 2>>() == 8);

/// How many words an inline `T` travels in (1 or 2; folds to a constant).
pub(crate) const fn width<T>() -> usize {
    if core::mem::size_of::<T>() <= 8 { 1 } else { 2 }
}

impl<T, const W: usize> Clone for Inl<T, W> {
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn clone(&self) -> Self {
        *self
    }
}
impl<T, const W: usize> Copy for Inl<T, W> {}

impl<T: 'static, const W: usize> Inl<T, W> {
    /// How many words `T` occupies in a leaf (0, 1 or 2).
    pub(crate) const WORDS: usize = {
        let n = core::mem::size_of::<T>().div_ceil(8);
        if n > W { W } else { n }
    };

    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn fits() -> bool {
        is_inline::<T>() && core::mem::size_of::<T>() <= 8 * W
    }

    /// The words of `t`.
    ///
    /// # Panics
    /// If `T` is not inline (never in this crate: the caller chose the inline path by the
    /// same test, which folds, so the check costs nothing).
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub(crate) fn new(t: T) -> Self {
        assert!(Self::fits(), "CobTree: type is not stored inline");
        let mut w = [0u64; W];
        // SAFETY: 1. `T` is inline and at most `8 * W` bytes (checked above), align at
        // most 8 (all listed types), so it fits at the start of `w`, which is 8-aligned.
        // 2. The listed types have no padding, so every byte of `w` stays initialised.
        // 3. They are `Copy` without `Drop`: moving `t` into the words loses nothing.
        unsafe { core::ptr::write(w.as_mut_ptr().cast::<T>(), t) };
        Inl { w, _t: PhantomData }
    }

    /// The value, by copy.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub(crate) fn get(self) -> T {
        // SAFETY: `self.w` holds a valid `T` (see `as_ref`); the listed types are `Copy`,
        // so reading one out of the words duplicates nothing that needs dropping.
        unsafe { core::ptr::read(self.as_ref()) }
    }

    /// The value in place.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub(crate) fn as_ref(&self) -> &T {
        // SAFETY: every `Inl<T>` was made by `new` or `from_words`, both of which assert
        // that `T` is inline, and hold in `w` the bytes of a valid `T` (`new`: written from
        // one; `from_words`: every pattern is a valid listed type once `bool`/`char` are
        // normalised). Size and alignment fit as in `new`. The reference borrows `self`.
        unsafe { &*self.w.as_ptr().cast::<T>() }
    }

    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub(crate) fn to_words(self) -> [u64; 2] {
        let mut out = [0u64; 2];
        out[..W].copy_from_slice(&self.w);
        out
    }

    /// Words back as a value; total: a word that no `bool`/`char` has (never stored, but
    /// the core never assumes so) reads as `true`/`'\0'`.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub(crate) fn from_words(words: [u64; 2]) -> Self {
        assert!(Self::fits(), "CobTree: type is not stored inline");
        let mut w = [0u64; W];
        w.copy_from_slice(&words[..W]);
        let t = TypeId::of::<T>();
        // Byte 0 (bool) and bytes 0..4 (char) in native order, as `new` wrote them.
        let b = w[0].to_ne_bytes();
        if t == TypeId::of::<bool>() {
            w[0] = u64::from_ne_bytes([u8::from(b[0] != 0), 0, 0, 0, 0, 0, 0, 0]);
        } else if t == TypeId::of::<char>() {
            let c = char::from_u32(u32::from_ne_bytes([b[0], b[1], b[2], b[3]])).unwrap_or('\0');
            let c = u32::from(c).to_ne_bytes();
            w[0] = u64::from_ne_bytes([c[0], c[1], c[2], c[3], 0, 0, 0, 0]);
        }
        Inl { w, _t: PhantomData }
    }

    /// The greatest value (pads the index past the last used leaf).
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub(crate) fn max() -> Self
    where
        T: Ord,
    {
        let t = TypeId::of::<T>();
        macro_rules! max_of {
            ($($ty:ty => $m:expr),* $(,)?) => {
                $(if t == TypeId::of::<$ty>() {
                    return Inl::from_words(Inl::<$ty, 2>::new($m).to_words());
                })*
            };
        }
        max_of!(
            u8 => u8::MAX, u16 => u16::MAX, u32 => u32::MAX, u64 => u64::MAX,
            usize => usize::MAX, i8 => i8::MAX, i16 => i16::MAX, i32 => i32::MAX,
            i64 => i64::MAX, isize => isize::MAX, bool => true, char => char::MAX, () => (),
            (u8, u8) => (u8::MAX, u8::MAX), (u16, u16) => (u16::MAX, u16::MAX),
            (u32, u32) => (u32::MAX, u32::MAX), (u64, u64) => (u64::MAX, u64::MAX),
            (i32, i32) => (i32::MAX, i32::MAX), (i64, i64) => (i64::MAX, i64::MAX),
            (u32, i32) => (u32::MAX, i32::MAX), (i32, u32) => (i32::MAX, u32::MAX),
            (u64, i64) => (u64::MAX, i64::MAX), (i64, u64) => (i64::MAX, u64::MAX),
            (usize, usize) => (usize::MAX, usize::MAX),
            (u64, ()) => (u64::MAX, ()), ((), u64) => ((), u64::MAX),
            (u32, ()) => (u32::MAX, ()), ((), u32) => ((), u32::MAX),
        );
        // Byte arrays: all 0xff bytes is the greatest, whatever the length.
        Inl::from_words([u64::MAX; 2])
    }
}

impl<T: core::fmt::Debug + 'static, const W: usize> core::fmt::Debug for Inl<T, W> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        self.as_ref().fmt(f)
    }
}

impl<T: Ord + 'static, const W: usize> PartialEq for Inl<T, W> {
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn eq(&self, o: &Self) -> bool {
        self.as_ref() == o.as_ref()
    }
}
impl<T: Ord + 'static, const W: usize> Eq for Inl<T, W> {}
impl<T: Ord + 'static, const W: usize> PartialOrd for Inl<T, W> {
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl<T: Ord + 'static, const W: usize> Ord for Inl<T, W> {
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn cmp(&self, o: &Self) -> Ordering {
        self.as_ref().cmp(o.as_ref())
    }
}

/// A user's lookup key `&Q` as the core sees it: `Inl<K>` borrows as `Look<Q>` when
/// `K: Borrow<Q>`. (A wrapper, because `Borrow<Q> for Inl<K>` for every `Q` would overlap
/// `Borrow<Inl<K>> for Inl<K>`, which the core's own key-with-key comparisons use.)
#[repr(transparent)]
pub(crate) struct Look<Q: ?Sized>(Q);

impl<Q: ?Sized> Look<Q> {
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub(crate) fn new(q: &Q) -> &Look<Q> {
        // SAFETY: `Look<Q>` is `repr(transparent)` over `Q`, so `&Q` and `&Look<Q>` have
        // the same layout and metadata; the cast keeps the lifetime and provenance.
        unsafe { &*(q as *const Q as *const Look<Q>) }
    }
}

impl<Q: ?Sized + Ord> PartialEq for Look<Q> {
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn eq(&self, o: &Self) -> bool {
        self.0 == o.0
    }
}
impl<Q: ?Sized + Ord> Eq for Look<Q> {}
impl<Q: ?Sized + Ord> PartialOrd for Look<Q> {
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl<Q: ?Sized + Ord> Ord for Look<Q> {
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn cmp(&self, o: &Self) -> Ordering {
        self.0.cmp(&o.0)
    }
}

impl<T: core::borrow::Borrow<Q> + 'static, Q: ?Sized, const W: usize> super::key::Borrow<Look<Q>>
    for Inl<T, W>
{
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn borrow(&self) -> &Look<Q> {
        Look::new(self.as_ref().borrow())
    }
}

impl<T, const W: usize> super::key::Borrow<Inl<T, W>> for Inl<T, W> {
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn borrow(&self) -> &Inl<T, W> {
        self
    }
}

/// A user's range over `Q` as a range over [`Look<Q>`].
pub(crate) struct LookRange<R>(pub(crate) R);

impl<Q: ?Sized, R: core::ops::RangeBounds<Q>> core::ops::RangeBounds<Look<Q>> for LookRange<R> {
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn start_bound(&self) -> core::ops::Bound<&Look<Q>> {
        self.0.start_bound().map(Look::new)
    }
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn end_bound(&self) -> core::ops::Bound<&Look<Q>> {
        self.0.end_bound().map(Look::new)
    }
}

/// `&Q` as `&U` when they are the same type (a `TypeId` test that folds), else `None`.
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
pub(crate) fn cast_ref<Q: ?Sized + 'static, U: ?Sized + 'static>(q: &Q) -> Option<&U> {
    if TypeId::of::<Q>() == TypeId::of::<U>() {
        // SAFETY: `Q` and `U` are the same type (equal `TypeId`s), so `&Q` and `&U` are the
        // same type too, with the same size and metadata; copying the reference keeps its
        // lifetime and provenance.
        Some(unsafe { core::mem::transmute_copy::<&Q, &U>(&q) })
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_order() {
        assert_eq!(Inl::<_, 2>::new(7u64).get(), 7);
        assert_eq!(Inl::<_, 2>::new(-3i32).get(), -3);
        assert_eq!(
            Inl::<_, 2>::new(*b"abcdefghijklmnop").get(),
            *b"abcdefghijklmnop"
        );
        assert_eq!(Inl::<_, 2>::new((1u32, -2i32)).get(), (1, -2));
        assert!(Inl::<_, 2>::new(-5i64) < Inl::<_, 2>::new(3i64));
        assert!(Inl::<(u32, u32)>::new((1, 9)) < Inl::<_, 2>::new((2, 0)));
        assert!(Inl::<bool>::from_words([u64::from_ne_bytes([2, 0, 0, 0, 0, 0, 0, 0]), 0]).get());
        let surrogate = 0xD800u32.to_ne_bytes();
        let w = u64::from_ne_bytes([
            surrogate[0],
            surrogate[1],
            surrogate[2],
            surrogate[3],
            0,
            0,
            0,
            0,
        ]);
        assert_eq!(Inl::<char>::from_words([w, 0]).get(), '\0');
        assert_eq!(Inl::<i8>::max().get(), i8::MAX);
        assert_eq!(Inl::<[u8; 3]>::max().get(), [255; 3]);
        assert_eq!(Inl::<(i64, u64)>::max().get(), (i64::MAX, u64::MAX));
        assert!(!is_inline::<String>() && !is_inline::<u128>() && is_inline::<[u8; 16]>());
        assert_eq!(Inl::<(), 1>::WORDS, 0);
        assert_eq!(Inl::<u8, 1>::WORDS, 1);
        assert_eq!(Inl::<(u64, u64)>::WORDS, 2);
        assert_eq!(Inl::<u64, 1>::new(9).to_words(), [9, 0]);
        assert_eq!(Inl::<u32, 1>::max().get(), u32::MAX);
        assert_eq!(
            (width::<u64>(), width::<()>(), width::<[u8; 9]>()),
            (1, 1, 2)
        );
        assert_eq!(cast_ref::<str, str>("ab"), Some("ab"));
        assert_eq!(cast_ref::<u64, str>(&1), None);
    }

    #[test]
    #[should_panic(expected = "not stored inline")]
    fn boxed_types_are_refused() {
        let _ = Inl::<String>::new(String::new());
    }

    #[test]
    #[should_panic(expected = "not stored inline")]
    fn two_word_types_need_two_words() {
        let _ = Inl::<[u8; 9], 1>::from_words([0, 0]);
    }
}
