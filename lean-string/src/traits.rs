//! Trait implementations shared by the string types, and the `ToLeanString`/`ToLeanStr`
//! conversion traits.

use core::fmt;

use crate::error::{ToLeanStrError, ToLeanStringError};
use crate::{LeanStr, LeanString};

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
        impl<$($g)*> AsRef<std::ffi::OsStr> for $t {
            #[inline]
            fn as_ref(&self) -> &std::ffi::OsStr {
                self.as_str().as_ref()
            }
        }
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
                self.as_str() == other.as_str()
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
                self.as_str().cmp(other.as_str())
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

/// The `From` conversions that copy through `From<&str>`, a clone from a reference, and
/// the conversions back into `String` (`LeanString` and `LeanStr`).
macro_rules! from_str_impls {
    ([$($g:tt)*] $t:ty) => {
        impl<$($g)*> From<&mut str> for $t {
            fn from(s: &mut str) -> Self {
                Self::from(&*s)
            }
        }
        impl<$($g)*> From<char> for $t {
            fn from(c: char) -> Self {
                Self::from(&*c.encode_utf8(&mut [0; 4]))
            }
        }
        impl<$($g)*> From<alloc::string::String> for $t {
            fn from(s: alloc::string::String) -> Self {
                Self::from(s.as_str())
            }
        }
        impl<$($g)*> From<&alloc::string::String> for $t {
            fn from(s: &alloc::string::String) -> Self {
                Self::from(s.as_str())
            }
        }
        impl<$($g)*> From<alloc::boxed::Box<str>> for $t {
            fn from(s: alloc::boxed::Box<str>) -> Self {
                Self::from(&*s)
            }
        }
        impl<$($g)*> From<alloc::borrow::Cow<'_, str>> for $t {
            fn from(s: alloc::borrow::Cow<'_, str>) -> Self {
                Self::from(&*s)
            }
        }
        impl<$($g)*> From<&$t> for $t {
            fn from(s: &$t) -> Self {
                s.clone()
            }
        }
        impl<$($g)*> From<$t> for alloc::string::String {
            fn from(s: $t) -> Self {
                alloc::string::String::from(s.as_str())
            }
        }
        impl<$($g)*> From<&$t> for alloc::string::String {
            fn from(s: &$t) -> Self {
                alloc::string::String::from(s.as_str())
            }
        }
    };
}
pub(crate) use from_str_impls;

impl PartialEq<LeanStr> for LeanString {
    fn eq(&self, other: &LeanStr) -> bool {
        self.as_str() == other.as_str()
    }
}
impl PartialEq<LeanString> for LeanStr {
    fn eq(&self, other: &LeanString) -> bool {
        self.as_str() == other.as_str()
    }
}

/// Writes `Display` output into a string, keeping allocation failure an error.
fn format<E: From<crate::ReserveError> + From<fmt::Error>>(
    value: &(impl fmt::Display + ?Sized),
) -> Result<LeanString, E> {
    struct W(LeanString, Option<crate::ReserveError>);
    impl fmt::Write for W {
        fn write_str(&mut self, s: &str) -> fmt::Result {
            self.0.try_push_str(s).map_err(|e| {
                self.1 = Some(e);
                fmt::Error
            })
        }
    }
    let mut w = W(LeanString::new(), None);
    match fmt::write(&mut w, format_args!("{value}")) {
        Ok(()) => Ok(w.0),
        Err(e) => Err(match w.1 {
            Some(r) => r.into(),
            None => e.into(),
        }),
    }
}

/// Converts a value to a [`LeanString`], like `ToString`.
pub trait ToLeanString {
    /// Converts to a `LeanString`.
    ///
    /// # Panics
    /// If allocation fails or the value's `Display` implementation returns an error.
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
    fn try_to_lean_string(&self) -> Result<LeanString, ToLeanStringError> {
        Ok(self.parse::<LeanString>()?)
    }
}

impl<T: fmt::Display> ToLeanString for T {
    fn try_to_lean_string(&self) -> Result<LeanString, ToLeanStringError> {
        format(self)
    }
}

/// Converts a value to a [`LeanStr`], like `ToString`.
pub trait ToLeanStr {
    /// Converts to a `LeanStr`.
    ///
    /// # Panics
    /// If allocation fails or the value's `Display` implementation returns an error.
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
    fn try_to_lean_str(&self) -> Result<LeanStr, ToLeanStrError> {
        Ok(self.parse::<LeanStr>()?)
    }
}

impl<T: fmt::Display> ToLeanStr for T {
    fn try_to_lean_str(&self) -> Result<LeanStr, ToLeanStrError> {
        let s: LeanString = format::<ToLeanStrError>(self)?;
        Ok(s.try_into_lean_str()?)
    }
}
