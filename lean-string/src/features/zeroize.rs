//! `zeroize::Zeroize` (feature `zeroize`).

use zeroize::Zeroize;

use crate::{HeaderPolicy, LeanStringWith};

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
