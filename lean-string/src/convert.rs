//! Conversions between `LeanString`, `LeanStr` and the std string types, the iterator
//! traits, and the operators. Everything copies except where noted: a clone shares, a
//! static string stays static (`Cow::Borrowed`, `LeanStr` <-> `LeanString`), and collecting
//! owned `LeanString`s appends to the first one.
//!
//! Conversions into `String`, `Box<str>`, `Arc<str>` and `Rc<str>` copy the bytes: the heap
//! header sits in front of the data (and the allocation is 8-aligned), so the buffer is
//! never one those types could own.

use alloc::borrow::Cow;
use alloc::boxed::Box;
use alloc::rc::Rc;
use alloc::string::String;
use core::fmt;
use core::ops::{Add, AddAssign};

use crate::edit::ok;
use crate::repr::heap::HeaderPolicy;
use crate::{LeanStr, LeanStringWith};

/// `From` conversions that copy through `From<&str>`, for both types.
macro_rules! copy_from {
    ([$($g:tt)*] $t:ty) => {
        impl<$($g)*> From<&mut str> for $t {
            #[inline]
            #[track_caller]
            fn from(s: &mut str) -> Self {
                Self::from(&*s)
            }
        }
        impl<$($g)*> From<char> for $t {
            /// Always inline: a char is at most 4 bytes.
            #[inline]
            fn from(c: char) -> Self {
                Self::from(&*c.encode_utf8(&mut [0; 4]))
            }
        }
        impl<$($g)*> From<String> for $t {
            #[inline]
            #[track_caller]
            fn from(s: String) -> Self {
                Self::from(s.as_str())
            }
        }
        impl<$($g)*> From<&String> for $t {
            #[inline]
            #[track_caller]
            fn from(s: &String) -> Self {
                Self::from(s.as_str())
            }
        }
        impl<$($g)*> From<Box<str>> for $t {
            #[inline]
            #[track_caller]
            fn from(s: Box<str>) -> Self {
                Self::from(&*s)
            }
        }
        impl<$($g)*> From<Cow<'_, str>> for $t {
            #[inline]
            #[track_caller]
            fn from(s: Cow<'_, str>) -> Self {
                Self::from(&*s)
            }
        }
        impl<$($g)*> From<&$t> for $t {
            /// A clone: O(1), sharing the buffer.
            #[inline]
            fn from(s: &$t) -> Self {
                s.clone()
            }
        }
        impl<$($g)*> From<$t> for String {
            #[inline]
            fn from(s: $t) -> Self {
                String::from(s.as_str())
            }
        }
        impl<$($g)*> From<&$t> for String {
            #[inline]
            fn from(s: &$t) -> Self {
                String::from(s.as_str())
            }
        }
        impl<'a, $($g)*> From<$t> for Cow<'a, str> {
            /// Borrowed for a static string, owned (a copy) otherwise.
            #[inline]
            fn from(s: $t) -> Self {
                match s.as_static_str() {
                    Some(st) => Cow::Borrowed(st),
                    None => Cow::Owned(String::from(s.as_str())),
                }
            }
        }
        impl<'a, $($g)*> From<&'a $t> for Cow<'a, str> {
            #[inline]
            fn from(s: &'a $t) -> Self {
                Cow::Borrowed(s.as_str())
            }
        }
        impl<$($g)*> From<$t> for Box<str> {
            #[inline]
            fn from(s: $t) -> Self {
                Box::from(s.as_str())
            }
        }
        impl<$($g)*> From<&$t> for Box<str> {
            #[inline]
            fn from(s: &$t) -> Self {
                Box::from(s.as_str())
            }
        }
        impl<$($g)*> From<$t> for Rc<str> {
            #[inline]
            fn from(s: $t) -> Self {
                Rc::from(s.as_str())
            }
        }
        impl<$($g)*> From<&$t> for Rc<str> {
            #[inline]
            fn from(s: &$t) -> Self {
                Rc::from(s.as_str())
            }
        }
        #[cfg(target_has_atomic = "ptr")]
        impl<$($g)*> From<$t> for alloc::sync::Arc<str> {
            #[inline]
            fn from(s: $t) -> Self {
                alloc::sync::Arc::from(s.as_str())
            }
        }
        #[cfg(target_has_atomic = "ptr")]
        impl<$($g)*> From<&$t> for alloc::sync::Arc<str> {
            #[inline]
            fn from(s: &$t) -> Self {
                alloc::sync::Arc::from(s.as_str())
            }
        }
        impl<$($g)*> FromIterator<$t> for String {
            fn from_iter<I: IntoIterator<Item = $t>>(iter: I) -> Self {
                let mut out = String::new();
                out.extend(iter);
                out
            }
        }
        impl<$($g)*> Extend<$t> for String {
            fn extend<I: IntoIterator<Item = $t>>(&mut self, iter: I) {
                for s in iter {
                    self.push_str(&s);
                }
            }
        }
    };
}
copy_from!([L: HeaderPolicy] LeanStringWith<L>);
copy_from!([] LeanStr);

impl<L: HeaderPolicy> From<LeanStr> for LeanStringWith<L> {
    /// Inline and static strings move; a heap string is copied (the headers differ).
    #[inline]
    #[track_caller]
    fn from(s: LeanStr) -> Self {
        ok(s.try_into_lean_string_with())
    }
}

impl<L: HeaderPolicy> From<&LeanStr> for LeanStringWith<L> {
    /// A clone converted: a static string stays static.
    #[inline]
    #[track_caller]
    fn from(s: &LeanStr) -> Self {
        Self::from(s.clone())
    }
}

impl<L: HeaderPolicy> From<LeanStringWith<L>> for LeanStr {
    /// Inline and static strings move; a heap string is copied into an exact buffer.
    #[inline]
    #[track_caller]
    fn from(s: LeanStringWith<L>) -> Self {
        s.into_lean_str()
    }
}

impl<L: HeaderPolicy> From<&LeanStringWith<L>> for LeanStr {
    /// A clone converted: a static string stays static.
    #[inline]
    #[track_caller]
    fn from(s: &LeanStringWith<L>) -> Self {
        s.clone().into_lean_str()
    }
}

// ----- iterators -----

impl<L: HeaderPolicy> Extend<char> for LeanStringWith<L> {
    /// Reserves the iterator's lower size bound first, if that can be reserved.
    fn extend<I: IntoIterator<Item = char>>(&mut self, iter: I) {
        let iter = iter.into_iter();
        let _ = self.try_reserve(iter.size_hint().0);
        for c in iter {
            self.push(c);
        }
    }
}

impl<'a, L: HeaderPolicy> Extend<&'a char> for LeanStringWith<L> {
    fn extend<I: IntoIterator<Item = &'a char>>(&mut self, iter: I) {
        self.extend(iter.into_iter().copied());
    }
}

/// `Extend` for string-like items: one `push_str` each (empty items change nothing).
macro_rules! extend_strs {
    ($($item:ty),*) => {$(
        impl<'a, L: HeaderPolicy> Extend<$item> for LeanStringWith<L> {
            fn extend<I: IntoIterator<Item = $item>>(&mut self, iter: I) {
                for s in iter {
                    self.push_str(&s);
                }
            }
        }
    )*};
}
extend_strs!(
    &'a str,
    String,
    Box<str>,
    Cow<'a, str>,
    LeanStringWith<L>,
    LeanStr
);

impl<L: HeaderPolicy> FromIterator<char> for LeanStringWith<L> {
    /// Starts with the iterator's lower size bound as capacity, if that can be reserved.
    fn from_iter<I: IntoIterator<Item = char>>(iter: I) -> Self {
        let iter = iter.into_iter();
        let mut s = Self::try_with_capacity(iter.size_hint().0).unwrap_or_default();
        for c in iter {
            s.push(c);
        }
        s
    }
}

impl<'a, L: HeaderPolicy> FromIterator<&'a char> for LeanStringWith<L> {
    fn from_iter<I: IntoIterator<Item = &'a char>>(iter: I) -> Self {
        iter.into_iter().copied().collect()
    }
}

macro_rules! collect_strs {
    ($($item:ty),*) => {$(
        impl<'a, L: HeaderPolicy> FromIterator<$item> for LeanStringWith<L> {
            fn from_iter<I: IntoIterator<Item = $item>>(iter: I) -> Self {
                let mut s = Self::new();
                s.extend(iter);
                s
            }
        }
    )*};
}
collect_strs!(&'a str, String, Box<str>, Cow<'a, str>);

impl<L: HeaderPolicy> FromIterator<LeanStringWith<L>> for LeanStringWith<L> {
    /// Appends to the first string, reusing its buffer when it is writable.
    fn from_iter<I: IntoIterator<Item = LeanStringWith<L>>>(iter: I) -> Self {
        let mut iter = iter.into_iter();
        let Some(mut first) = iter.next() else {
            return Self::new();
        };
        first.extend(iter);
        first
    }
}

impl<L: HeaderPolicy> FromIterator<LeanStr> for LeanStringWith<L> {
    /// Appends to the first string, converted.
    fn from_iter<I: IntoIterator<Item = LeanStr>>(iter: I) -> Self {
        let mut iter = iter.into_iter();
        let Some(first) = iter.next() else {
            return Self::new();
        };
        let mut first = Self::from(first);
        first.extend(iter);
        first
    }
}

macro_rules! collect_lean_str {
    ($($item:ty),*) => {$(
        impl<'a> FromIterator<$item> for LeanStr {
            fn from_iter<I: IntoIterator<Item = $item>>(iter: I) -> Self {
                crate::LeanString::from_iter(iter).into_lean_str()
            }
        }
    )*};
}
collect_lean_str!(
    char,
    &'a char,
    &'a str,
    String,
    Box<str>,
    Cow<'a, str>,
    LeanStr
);

impl<L: HeaderPolicy> FromIterator<LeanStringWith<L>> for LeanStr {
    fn from_iter<I: IntoIterator<Item = LeanStringWith<L>>>(iter: I) -> Self {
        LeanStringWith::<L>::from_iter(iter).into_lean_str()
    }
}

// ----- writing and operators -----

impl<L: HeaderPolicy> fmt::Write for LeanStringWith<L> {
    /// Appends; panics if allocation fails (as `lean_string`; `try_to_lean_string` and
    /// [`format_lean!`](crate::format_lean) report that instead).
    #[inline]
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.push_str(s);
        Ok(())
    }

    #[inline]
    fn write_char(&mut self, c: char) -> fmt::Result {
        self.push(c);
        Ok(())
    }

    /// A literal written into an empty, non-heap string becomes a static string (O(1)).
    #[inline]
    fn write_fmt(&mut self, args: fmt::Arguments<'_>) -> fmt::Result {
        match args.as_str() {
            Some(s) if self.is_empty() && !self.is_heap_allocated() => {
                *self = Self::from_static_str(s);
                Ok(())
            }
            Some(s) => {
                self.push_str(s);
                Ok(())
            }
            None => fmt::write(self, args),
        }
    }
}

impl<L: HeaderPolicy> Add<&str> for LeanStringWith<L> {
    type Output = Self;
    #[inline]
    #[track_caller]
    fn add(mut self, rhs: &str) -> Self {
        self.push_str(rhs);
        self
    }
}

impl<L: HeaderPolicy> AddAssign<&str> for LeanStringWith<L> {
    #[inline]
    #[track_caller]
    fn add_assign(&mut self, rhs: &str) {
        self.push_str(rhs);
    }
}
