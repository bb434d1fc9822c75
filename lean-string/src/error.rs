//! Error types.

use core::fmt;

/// A reservation failed: the capacity would exceed [`MAX_LEN`](crate::MAX_LEN) bytes, or the
/// allocator refused the request. A unit struct, as in `lean_string`, so `Err(ReserveError)`
/// can be written and compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ReserveError;

/// The panic message of an infallible method whose reservation failed (`lean_string`'s).
pub(crate) const RESERVE_PANIC: &str = "Cannot allocate memory to hold LeanString";

impl ReserveError {
    /// Turns the error into the panic that the infallible method of the same name promises.
    /// It unwinds (it is not the allocation-error handler), so it can be caught.
    #[cold]
    #[inline(never)]
    #[track_caller]
    pub(crate) fn raise(self) -> ! {
        // A literal, so the payload is a `&'static str` and nothing is formatted.
        panic!("Cannot allocate memory to hold LeanString")
    }
}

impl fmt::Display for ReserveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(RESERVE_PANIC)
    }
}

impl core::error::Error for ReserveError {}

/// A UTF-16 input held an unpaired surrogate, or (for the byte forms) an odd number of bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FromUtf16Error {
    pub(crate) kind: Utf16ErrorKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Utf16ErrorKind {
    LoneSurrogate,
    OddBytes,
}

impl fmt::Display for FromUtf16Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self.kind {
            Utf16ErrorKind::LoneSurrogate => "invalid utf-16: lone surrogate found",
            Utf16ErrorKind::OddBytes => "invalid utf-16: odd number of bytes",
        })
    }
}

impl core::error::Error for FromUtf16Error {}

/// Converting a value with `to_lean_string` failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ToLeanStringError {
    /// Memory could not be reserved.
    Reserve(ReserveError),
    /// The value's `Display` implementation returned an error.
    Fmt(fmt::Error),
}

/// Converting a value with `to_lean_str` failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ToLeanStrError {
    /// Memory could not be reserved.
    Reserve(ReserveError),
    /// The value's `Display` implementation returned an error.
    Fmt(fmt::Error),
}

macro_rules! to_error_impls {
    ($t:ident) => {
        impl fmt::Display for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                match self {
                    $t::Reserve(e) => fmt::Display::fmt(e, f),
                    $t::Fmt(e) => fmt::Display::fmt(e, f),
                }
            }
        }
        impl core::error::Error for $t {}
        impl From<ReserveError> for $t {
            fn from(e: ReserveError) -> Self {
                $t::Reserve(e)
            }
        }
        impl From<fmt::Error> for $t {
            fn from(e: fmt::Error) -> Self {
                $t::Fmt(e)
            }
        }
    };
}
to_error_impls!(ToLeanStringError);
to_error_impls!(ToLeanStrError);

/// The input held a NUL byte, which a C string cannot contain.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct InteriorNulError {
    pub(crate) position: usize,
}

impl InteriorNulError {
    /// Byte index of the first NUL in the rejected input.
    pub fn nul_position(&self) -> usize {
        self.position
    }
}

impl fmt::Display for InteriorNulError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "nul byte found in provided data at position: {}",
            self.position
        )
    }
}

impl core::error::Error for InteriorNulError {}

/// A fallible `LeanCString` operation failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CStringError {
    /// The input held a NUL byte (the string is unchanged).
    InteriorNul(InteriorNulError),
    /// Memory could not be reserved (the string is unchanged).
    Reserve(ReserveError),
}

impl fmt::Display for CStringError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CStringError::InteriorNul(e) => fmt::Display::fmt(e, f),
            CStringError::Reserve(e) => fmt::Display::fmt(e, f),
        }
    }
}

impl core::error::Error for CStringError {}

impl From<InteriorNulError> for CStringError {
    fn from(e: InteriorNulError) -> Self {
        CStringError::InteriorNul(e)
    }
}

impl From<ReserveError> for CStringError {
    fn from(e: ReserveError) -> Self {
        CStringError::Reserve(e)
    }
}
