//! [`Drain`]: the chars removed by `LeanString::drain`.

use core::iter::FusedIterator;

use crate::LeanString;

/// The chars that [`LeanString::drain`](crate::LeanStringWith::drain) removed, in order. The
/// removed text is held in a `LeanString` of its own (inline for up to 16 bytes), so the
/// string it came from is already shortened while this iterator lives.
#[derive(Debug, Clone)]
pub struct Drain {
    taken: LeanString,
    front: usize,
    back: usize,
}

impl Drain {
    pub(crate) fn new(taken: LeanString) -> Self {
        let back = taken.len();
        Self {
            taken,
            front: 0,
            back,
        }
    }

    /// The chars not yet yielded.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.taken[self.front..self.back]
    }
}

impl Iterator for Drain {
    type Item = char;

    #[inline]
    fn next(&mut self) -> Option<char> {
        let c = self.as_str().chars().next()?;
        self.front += c.len_utf8();
        Some(c)
    }

    #[inline]
    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.back - self.front;
        (n.div_ceil(4), Some(n))
    }
}

impl DoubleEndedIterator for Drain {
    #[inline]
    fn next_back(&mut self) -> Option<char> {
        let c = self.as_str().chars().next_back()?;
        self.back -= c.len_utf8();
        Some(c)
    }
}

impl FusedIterator for Drain {}
