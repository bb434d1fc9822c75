//! Trait implementations shared by the string types, and the `ToLeanString`/`ToLeanStr`
//! conversion traits.

use alloc::string::String;
use core::fmt;
use core::num::NonZero;

use crate::error::{ReserveError, ToLeanStrError, ToLeanStringError};
use crate::float;
use crate::num::Integer;
use crate::repr::heap::Compact;
use crate::repr::heap::HeaderPolicy;
use crate::repr::{Repr, StrRepr, downcast_ref};
use crate::{LeanStr, LeanString, LeanStringWith};

/// The read-only std traits, all defined by the `str` contents (so `Eq`, `Ord` and `Hash`
/// agree with `str`'s and `Borrow<str>` is sound for maps). `#[inline]` so that the
/// non-generic types' contents decode inline in other crates too.
macro_rules! str_traits {
    ([$($g:tt)*] $t:ty) => {
        impl<$($g)*> core::fmt::Debug for $t {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                core::fmt::Debug::fmt(self.as_str(), f)
            }
        }
        impl<$($g)*> core::fmt::Display for $t {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                core::fmt::Display::fmt(self.as_str(), f)
            }
        }
        impl<$($g)*> AsRef<str> for $t {
            #[inline]
            fn as_ref(&self) -> &str {
                self.as_str()
            }
        }
        impl<$($g)*> AsRef<[u8]> for $t {
            #[inline]
            fn as_ref(&self) -> &[u8] {
                self.as_bytes()
            }
        }
        #[cfg(feature = "std")]
        impl<$($g)*> AsRef<std::ffi::OsStr> for $t {
            #[inline]
            fn as_ref(&self) -> &std::ffi::OsStr {
                self.as_str().as_ref()
            }
        }
        #[cfg(feature = "std")]
        impl<$($g)*> AsRef<std::path::Path> for $t {
            #[inline]
            fn as_ref(&self) -> &std::path::Path {
                self.as_str().as_ref()
            }
        }
        impl<$($g)*> core::borrow::Borrow<str> for $t {
            #[inline]
            fn borrow(&self) -> &str {
                self.as_str()
            }
        }
        impl<$($g)*> Eq for $t {}
        impl<$($g)*> PartialEq for $t {
            #[inline]
            fn eq(&self, other: &Self) -> bool {
                $crate::traits::Contents::contents_eq(self, other)
            }
        }
        impl<$($g)*> PartialEq<str> for $t {
            #[inline]
            fn eq(&self, other: &str) -> bool {
                self.as_str() == other
            }
        }
        impl<$($g)*> PartialEq<&str> for $t {
            #[inline]
            fn eq(&self, other: &&str) -> bool {
                self.as_str() == *other
            }
        }
        impl<$($g)*> PartialEq<alloc::string::String> for $t {
            #[inline]
            fn eq(&self, other: &alloc::string::String) -> bool {
                self.as_str() == other.as_str()
            }
        }
        impl<$($g)*> PartialEq<alloc::borrow::Cow<'_, str>> for $t {
            #[inline]
            fn eq(&self, other: &alloc::borrow::Cow<'_, str>) -> bool {
                self.as_str() == &**other
            }
        }
        impl<$($g)*> PartialEq<$t> for str {
            #[inline]
            fn eq(&self, other: &$t) -> bool {
                self == other.as_str()
            }
        }
        impl<$($g)*> PartialEq<$t> for &str {
            #[inline]
            fn eq(&self, other: &$t) -> bool {
                *self == other.as_str()
            }
        }
        impl<$($g)*> PartialEq<$t> for alloc::string::String {
            #[inline]
            fn eq(&self, other: &$t) -> bool {
                self.as_str() == other.as_str()
            }
        }
        impl<$($g)*> PartialEq<$t> for alloc::borrow::Cow<'_, str> {
            #[inline]
            fn eq(&self, other: &$t) -> bool {
                &**self == other.as_str()
            }
        }
        impl<$($g)*> Ord for $t {
            #[inline]
            fn cmp(&self, other: &Self) -> core::cmp::Ordering {
                $crate::traits::Contents::contents_cmp(self, other)
            }
        }
        impl<$($g)*> PartialOrd for $t {
            #[inline]
            fn partial_cmp(&self, other: &Self) -> Option<core::cmp::Ordering> {
                Some(self.cmp(other))
            }
        }
        impl<$($g)*> core::hash::Hash for $t {
            #[inline]
            fn hash<H: core::hash::Hasher>(&self, state: &mut H) {
                self.as_str().hash(state)
            }
        }
    };
}
pub(crate) use str_traits;

/// How a string type compares its contents for `Eq` and `Ord`: as `str` does, by default.
/// `LeanString` and `LeanStr` compare two inline strings in registers instead.
pub(crate) trait Contents {
    fn contents_eq(&self, other: &Self) -> bool;
    fn contents_cmp(&self, other: &Self) -> core::cmp::Ordering;
}

impl Contents for crate::LeanCString {
    #[inline]
    fn contents_eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
    #[inline]
    fn contents_cmp(&self, other: &Self) -> core::cmp::Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl<L: HeaderPolicy> PartialEq<LeanStr> for LeanStringWith<L> {
    #[inline]
    fn eq(&self, other: &LeanStr) -> bool {
        self.as_str() == other.as_str()
    }
}
impl<L: HeaderPolicy> PartialEq<LeanStringWith<L>> for LeanStr {
    #[inline]
    fn eq(&self, other: &LeanStringWith<L>) -> bool {
        self.as_str() == other.as_str()
    }
}

/// Writes `Display` output into a string. An allocation failure is reported as such even
/// when the `Display` implementation swallows the write error and returns `Ok`.
fn format<E: From<ReserveError> + From<fmt::Error>>(
    args: fmt::Arguments<'_>,
) -> Result<LeanString, E> {
    if let Some(s) = args.as_str() {
        return Ok(LeanString::from_static_str(s));
    }
    struct W(LeanString, Option<ReserveError>);
    impl fmt::Write for W {
        fn write_str(&mut self, s: &str) -> fmt::Result {
            if self.1.is_some() {
                return Err(fmt::Error);
            }
            self.0.try_push_str(s).map_err(|e| {
                self.1 = Some(e);
                fmt::Error
            })
        }
    }
    let mut w = W(LeanString::new(), None);
    let r = fmt::write(&mut w, args);
    match (w.1, r) {
        (Some(e), _) => Err(e.into()),
        (None, Err(e)) => Err(e.into()),
        (None, Ok(())) => Ok(w.0),
    }
}

/// `format_lean!`'s body: a literal becomes a static string; otherwise the text is written
/// into a new string.
///
/// # Panics
/// If allocation fails or a `Display` implementation returns an error.
#[doc(hidden)]
#[track_caller]
pub fn __format_lean(args: fmt::Arguments<'_>) -> LeanString {
    match format::<ToLeanStringError>(args) {
        Ok(s) => s,
        Err(ToLeanStringError::Reserve(e)) => e.raise(),
        Err(ToLeanStringError::Fmt(_)) => {
            panic!("a Display implementation returned an error unexpectedly")
        }
    }
}

/// What the fast paths build: `LeanString` or `LeanStr`, each straight from the digits or
/// text (no conversion between the two afterwards).
trait Fast: Sized {
    fn int<N: Integer>(n: N) -> Result<Self, ReserveError>;
    fn text(s: &str) -> Result<Self, ReserveError>;
    fn literal(s: &'static str) -> Self;
    fn lean_string(s: &LeanString) -> Result<Self, ReserveError>;
    fn lean_str(s: &LeanStr) -> Result<Self, ReserveError>;
}

impl Fast for LeanString {
    #[inline(always)]
    fn int<N: Integer>(n: N) -> Result<Self, ReserveError> {
        n.to_decimal::<Repr<Compact>>().map(LeanString::from_repr)
    }
    #[inline(always)]
    fn text(s: &str) -> Result<Self, ReserveError> {
        s.parse()
    }
    #[inline(always)]
    fn literal(s: &'static str) -> Self {
        LeanString::from_static_str(s)
    }
    #[inline(always)]
    fn lean_string(s: &LeanString) -> Result<Self, ReserveError> {
        s.try_clone()
    }
    #[inline(always)]
    fn lean_str(s: &LeanStr) -> Result<Self, ReserveError> {
        s.clone().try_into_lean_string()
    }
}

impl Fast for LeanStr {
    #[inline(always)]
    fn int<N: Integer>(n: N) -> Result<Self, ReserveError> {
        n.to_decimal::<StrRepr>().map(LeanStr::from_repr)
    }
    #[inline(always)]
    fn text(s: &str) -> Result<Self, ReserveError> {
        s.parse()
    }
    #[inline(always)]
    fn literal(s: &'static str) -> Self {
        LeanStr::from_static_str(s)
    }
    #[inline(always)]
    fn lean_string(s: &LeanString) -> Result<Self, ReserveError> {
        s.clone().try_into_lean_str()
    }
    #[inline(always)]
    fn lean_str(s: &LeanStr) -> Result<Self, ReserveError> {
        s.try_clone()
    }
}

/// The value as a string without the formatting machinery, for the types that have such a
/// path: integers (and `NonZero` ones), floats, `bool`, `char`, `String`, and our strings
/// (a clone). `None` for every other type. The type tests fold to constants, so each
/// instantiation keeps only its own branch.
#[inline(always)]
fn fast<T: ?Sized, O: Fast>(v: &T) -> Option<Result<O, ReserveError>> {
    macro_rules! try_types {
        ($($t:ty => |$x:ident| $make:expr;)*) => {$(
            if let Some($x) = downcast_ref::<T, $t>(v) {
                return Some($make);
            }
        )*};
    }
    macro_rules! ints {
        ($($t:ty),*) => {$(
            try_types! {
                $t => |n| O::int(*n);
                NonZero<$t> => |n| O::int(n.get());
            }
        )*};
    }
    ints!(
        u8, u16, u32, u64, u128, usize, i8, i16, i32, i64, i128, isize
    );
    try_types! {
        f32 => |f| O::text(float::text(*f).as_str());
        f64 => |f| O::text(float::text(*f).as_str());
        bool => |b| Ok(O::literal(if *b { "true" } else { "false" }));
        char => |c| O::text(c.encode_utf8(&mut [0; 4]));
        String => |s| O::text(s);
        LeanString => |s| O::lean_string(s);
        LeanStr => |s| O::lean_str(s);
    }
    None
}

/// Converts a value to a [`LeanString`], like `ToString`. Integers, floats, `bool`, `char`
/// and `String` are converted without the formatting machinery; a `LeanString` is cloned
/// (sharing its buffer); floats are written as `lean_string` writes them (`1.0`, `1e+16`).
pub trait ToLeanString {
    /// Converts to a `LeanString`.
    ///
    /// # Panics
    /// If allocation fails or the value's `Display` implementation returns an error.
    #[track_caller]
    fn to_lean_string(&self) -> LeanString {
        match self.try_to_lean_string() {
            Ok(s) => s,
            Err(ToLeanStringError::Reserve(e)) => e.raise(),
            Err(ToLeanStringError::Fmt(_)) => {
                panic!("a Display implementation returned an error unexpectedly")
            }
        }
    }

    /// Fallible [`to_lean_string`](Self::to_lean_string).
    fn try_to_lean_string(&self) -> Result<LeanString, ToLeanStringError>;
}

impl ToLeanString for str {
    #[inline]
    fn try_to_lean_string(&self) -> Result<LeanString, ToLeanStringError> {
        Ok(self.parse::<LeanString>()?)
    }
}

impl<T: fmt::Display> ToLeanString for T {
    /// The fast paths' string comes straight back (no `Result` layers to unpack).
    #[inline]
    #[track_caller]
    fn to_lean_string(&self) -> LeanString {
        match fast::<T, LeanString>(self) {
            Some(Ok(s)) => s,
            Some(Err(e)) => e.raise(),
            None => match format::<ToLeanStringError>(format_args!("{self}")) {
                Ok(s) => s,
                Err(ToLeanStringError::Reserve(e)) => e.raise(),
                Err(ToLeanStringError::Fmt(_)) => {
                    panic!("a Display implementation returned an error unexpectedly")
                }
            },
        }
    }

    #[inline]
    fn try_to_lean_string(&self) -> Result<LeanString, ToLeanStringError> {
        match fast::<T, LeanString>(self) {
            Some(r) => Ok(r?),
            None => format(format_args!("{self}")),
        }
    }
}

/// Converts a value to a [`LeanStr`], like `ToString`, with the same fast paths as
/// [`ToLeanString`] (a `LeanStr` is cloned).
pub trait ToLeanStr {
    /// Converts to a `LeanStr`.
    ///
    /// # Panics
    /// If allocation fails or the value's `Display` implementation returns an error.
    #[track_caller]
    fn to_lean_str(&self) -> LeanStr {
        match self.try_to_lean_str() {
            Ok(s) => s,
            Err(ToLeanStrError::Reserve(e)) => e.raise(),
            Err(ToLeanStrError::Fmt(_)) => {
                panic!("a Display implementation returned an error unexpectedly")
            }
        }
    }

    /// Fallible [`to_lean_str`](Self::to_lean_str).
    fn try_to_lean_str(&self) -> Result<LeanStr, ToLeanStrError>;
}

impl ToLeanStr for str {
    #[inline]
    fn try_to_lean_str(&self) -> Result<LeanStr, ToLeanStrError> {
        Ok(self.parse::<LeanStr>()?)
    }
}

impl<T: fmt::Display> ToLeanStr for T {
    #[inline]
    fn try_to_lean_str(&self) -> Result<LeanStr, ToLeanStrError> {
        if let Some(r) = fast::<T, LeanStr>(self) {
            return Ok(r?);
        }
        let s = format::<ToLeanStrError>(format_args!("{self}"))?;
        Ok(s.try_into_lean_str()?)
    }
}
