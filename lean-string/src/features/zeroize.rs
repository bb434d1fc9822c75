//! `zeroize::Zeroize` (feature `zeroize`).

use zeroize::Zeroize;

use crate::{HeaderPolicy, LeanCString, LeanStringWith};

impl<L: HeaderPolicy> Zeroize for LeanStringWith<L> {
    /// Zeroes the storage this string may write (the inline words, or a unique heap buffer
    /// with its spare capacity), then leaves the string empty. A shared or static buffer is
    /// not zeroed, since other strings (or the program image) still hold those bytes: the
    /// string just lets go of it.
    fn zeroize(&mut self) {
        if let Some(storage) = self.storage_for_zeroing() {
            storage.zeroize();
        }
        self.clear();
    }
}

impl Zeroize for LeanCString {
    /// As for `LeanString`: zeroes the inline words or a unique heap buffer (its spare
    /// capacity and terminator included), then leaves the string empty; a shared or static
    /// buffer is let go, not zeroed.
    fn zeroize(&mut self) {
        if let Some(storage) = self.storage_for_zeroing() {
            storage.zeroize();
        }
        self.clear();
    }
}
