//! Unicode case conversion (`to_lowercase` / `to_uppercase`), safe code over `LeanString`.
//!
//! The unchanged prefix is found first, so a string that does not change is returned as a
//! clone (sharing its buffer, no allocation). The rest is mapped char by char into a buffer
//! sized to the input. `Σ` lowercases by context (`ς` at the end of a word), which needs
//! Unicode properties that `core` does not expose, so a string that reaches one is handed to
//! `str::to_lowercase` whole.

use crate::error::ReserveError;
use crate::{HeaderPolicy, LeanStringWith};

#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Case {
    Lower,
    Upper,
}

fn char_changes(c: char, case: Case) -> bool {
    let mut mapped = match case {
        Case::Lower => CaseIter::Lower(c.to_lowercase()),
        Case::Upper => CaseIter::Upper(c.to_uppercase()),
    };
    !(mapped.next() == Some(c) && mapped.next().is_none())
}

enum CaseIter {
    Lower(core::char::ToLowercase),
    Upper(core::char::ToUppercase),
}

impl Iterator for CaseIter {
    type Item = char;
    fn next(&mut self) -> Option<char> {
        match self {
            CaseIter::Lower(i) => i.next(),
            CaseIter::Upper(i) => i.next(),
        }
    }
}

/// Byte index of the first char of `s` that `case` changes.
pub(crate) fn first_change(s: &str, case: Case) -> Option<usize> {
    let ascii_same = |b: &u8| {
        b.is_ascii()
            && match case {
                Case::Lower => !b.is_ascii_uppercase(),
                Case::Upper => !b.is_ascii_lowercase(),
            }
    };
    let skip = s.bytes().position(|b| !ascii_same(&b)).unwrap_or(s.len());
    // `skip` is at an ASCII byte or a char start, so a boundary.
    s[skip..]
        .char_indices()
        .find(|&(_, c)| char_changes(c, case))
        .map(|(i, _)| skip + i)
}

/// `s` converted to `case`, or `None` if nothing changes. The `Σ` fallback allocates a
/// `String` whose failure `std` cannot report, hence no `try_` form of the public methods.
pub(crate) fn convert<L: HeaderPolicy>(
    s: &str,
    case: Case,
) -> Result<Option<LeanStringWith<L>>, ReserveError> {
    let Some(first) = first_change(s, case) else {
        return Ok(None);
    };
    let mut out = LeanStringWith::<L>::try_with_capacity(s.len())?;
    out.try_push_str(&s[..first])?;
    for c in s[first..].chars() {
        if c.is_ascii() {
            out.try_push(match case {
                Case::Lower => c.to_ascii_lowercase(),
                Case::Upper => c.to_ascii_uppercase(),
            })?;
        } else if case == Case::Lower && c == 'Σ' {
            return s.to_lowercase().parse().map(Some);
        } else {
            let mapped = match case {
                Case::Lower => CaseIter::Lower(c.to_lowercase()),
                Case::Upper => CaseIter::Upper(c.to_uppercase()),
            };
            for m in mapped {
                out.try_push(m)?;
            }
        }
    }
    Ok(Some(out))
}
