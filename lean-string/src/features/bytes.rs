//! `bytes` support (feature `bytes`): build from a [`Buf`], and hand a string to [`Bytes`]
//! without copying it.

use alloc::vec::Vec;
use bytes::{Buf, Bytes};
use core::str::Utf8Error;

use crate::{HeaderPolicy, LeanStr, LeanStringWith};

/// The remaining bytes of `buf`, taken; a single contiguous chunk is borrowed, not copied.
fn take_utf8<R>(buf: &mut impl Buf, make: impl FnOnce(&str) -> R) -> Result<R, Utf8Error> {
    let n = buf.remaining();
    if buf.chunk().len() == n {
        let r = make(core::str::from_utf8(buf.chunk())?);
        buf.advance(n);
        return Ok(r);
    }
    // A char may straddle two chunks: gather them first.
    let mut all = Vec::with_capacity(n);
    while buf.has_remaining() {
        let chunk = buf.chunk();
        all.extend_from_slice(chunk);
        let k = chunk.len();
        buf.advance(k);
    }
    let r = make(core::str::from_utf8(&all)?);
    Ok(r)
}

impl<L: HeaderPolicy> LeanStringWith<L> {
    /// Copies the remaining bytes of `buf` if they are valid UTF-8, consuming them. On a
    /// UTF-8 error `buf` is consumed too when it was split into several chunks.
    pub fn from_utf8_buf<B: Buf>(buf: &mut B) -> Result<Self, Utf8Error> {
        take_utf8(buf, |s| Self::from(s))
    }
}

impl LeanStr {
    /// Copies the remaining bytes of `buf` if they are valid UTF-8 (see
    /// [`LeanString::from_utf8_buf`](crate::LeanStringWith::from_utf8_buf)).
    pub fn from_utf8_buf<B: Buf>(buf: &mut B) -> Result<Self, Utf8Error> {
        take_utf8(buf, |s| Self::from(s))
    }
}

impl<L: HeaderPolicy> From<LeanStringWith<L>> for Bytes {
    /// No copy: the `Bytes` keeps the string (and its shared buffer) alive.
    fn from(s: LeanStringWith<L>) -> Self {
        Bytes::from_owner(s)
    }
}

impl From<LeanStr> for Bytes {
    /// No copy: the `Bytes` keeps the string (and its shared buffer) alive.
    fn from(s: LeanStr) -> Self {
        Bytes::from_owner(s)
    }
}
