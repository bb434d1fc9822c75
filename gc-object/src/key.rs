//! Interned property names and property keys.
//!
//! Names are interned once per process and never freed (like a JS engine's atoms), so a
//! [`Key`] is a plain 32-bit id that is valid in every heap and on every thread; their
//! total is bounded instead ([`MAX_INTERNED_NAMES`], [`MAX_INTERNED_BYTES`]). A
//! symbol's key is a `Key` too: an id with the [`SYMBOL_BIT`] set, unique in the process
//! and never reused (the symbol itself is a heap cell, see `Symbol`).

use std::collections::HashMap;
use std::fmt;
use std::sync::{Mutex, OnceLock};

/// An interned property name (or string value).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Key(u32);

struct Interner {
    ids: HashMap<&'static str, u32>,
    names: Vec<&'static str>,
    /// Total length of `names`.
    bytes: usize,
}

/// The most names one process interns ([`Key::new`] panics, [`Key::try_new`] fails past
/// it): ids are below [`SYMBOL_BIT`].
pub const MAX_INTERNED_NAMES: usize = SYMBOL_BIT as usize;

/// The most bytes of name text one process interns. Names are never freed (a `Key` is a
/// plain id, valid in every heap), so their total is bounded instead; text that keeps
/// changing belongs in string values ([`Mutator::string`](crate::Mutator::string)), which
/// the collector frees.
pub const MAX_INTERNED_BYTES: usize = 1 << 28;

fn interner() -> &'static Mutex<Interner> {
    static INTERNER: OnceLock<Mutex<Interner>> = OnceLock::new();
    INTERNER.get_or_init(|| {
        Mutex::new(Interner {
            ids: HashMap::new(),
            names: Vec::new(),
            bytes: 0,
        })
    })
}

fn with_interner<R>(f: impl FnOnce(&mut Interner) -> R) -> R {
    let mut g = match interner().lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    };
    f(&mut g)
}

impl Key {
    /// Interns `name` (idempotent: the same text always gives the same key).
    ///
    /// # Panics
    /// If the name is new and interning it would pass the bound on names
    /// ([`MAX_INTERNED_NAMES`] names, [`MAX_INTERNED_BYTES`] bytes of text); use
    /// [`Key::try_new`] to get `None` instead.
    pub fn new(name: &str) -> Key {
        Key::try_new(name).unwrap_or_else(|| {
            panic!(
                "gc-object: interning {} more bytes passes the bound on property names \
                 ({MAX_INTERNED_NAMES} names, {MAX_INTERNED_BYTES} bytes; names are never \
                 freed: keep changing text in string values, `Mutator::string`)",
                name.len()
            )
        })
    }

    /// Interns `name`, or `None` if it is new and the names interned so far would pass
    /// [`MAX_INTERNED_NAMES`] names or [`MAX_INTERNED_BYTES`] bytes of text with it.
    pub fn try_new(name: &str) -> Option<Key> {
        with_interner(|i| {
            if let Some(&id) = i.ids.get(name) {
                return Some(Key(id));
            }
            // Below `SYMBOL_BIT`, so that no tagged id is `u32::MAX` (which dictionaries use
            // to mark a deleted entry) and names and symbols never share an id.
            let n = u32::try_from(i.names.len())
                .ok()
                .filter(|&n| (n as usize) < MAX_INTERNED_NAMES)?;
            let bytes = i.bytes.checked_add(name.len())?;
            if bytes > MAX_INTERNED_BYTES {
                return None;
            }
            let id = if index_like(name) { n | INDEX_LIKE } else { n };
            // Interned names are immortal by design: the leak is the intern table, bounded
            // by `MAX_INTERNED_BYTES`.
            let leaked: &'static str = Box::leak(name.to_owned().into_boxed_str());
            i.names.push(leaked);
            i.ids.insert(leaked, id);
            i.bytes = bytes;
            Some(Key(id))
        })
    }

    /// Bytes of text interned in this process so far (at most [`MAX_INTERNED_BYTES`]).
    pub fn interned_bytes() -> usize {
        with_interner(|i| i.bytes)
    }

    /// The interned text (`"Symbol()"` for a symbol's key: its description is on the
    /// symbol).
    pub fn as_str(self) -> &'static str {
        if self.is_symbol() {
            return "Symbol()";
        }
        with_interner(|i| i.names[(self.0 & !INDEX_LIKE) as usize])
    }

    /// Is this a symbol's key (not a name)?
    #[inline]
    pub fn is_symbol(self) -> bool {
        self.0 & SYMBOL_BIT != 0
    }

    /// The key of symbol number `n` (`n < SYMBOL_BIT`).
    pub(crate) fn symbol(n: u32) -> Key {
        debug_assert!(n < SYMBOL_BIT);
        Key(n | SYMBOL_BIT)
    }

    /// Is the text a canonical array index (`"0"`, `"17"`)? Known without the intern
    /// table's lock: the bit is part of the id.
    #[inline]
    pub(crate) fn is_index_like(self) -> bool {
        self.0 & INDEX_LIKE != 0
    }

    pub(crate) fn id(self) -> u32 {
        self.0
    }

    /// The key with this id (the caller read it from a shape or dictionary, which hold
    /// ids of interned names only).
    pub(crate) fn from_raw(id: u32) -> Key {
        Key(id)
    }
}

/// Id bit of a name whose text is a canonical array index (such a name is the index in
/// every object operation: [`PropertyKey::canonical`]).
const INDEX_LIKE: u32 = 1 << 31;

/// Id bit of a symbol's key. Names have ids below it, so at most `2^30` names can be
/// interned and `2^30` symbols made per process.
pub const SYMBOL_BIT: u32 = 1 << 30;

/// Would `text` parse as an array index?
fn index_like(text: &str) -> bool {
    !text.is_empty()
        && text.bytes().all(|b| b.is_ascii_digit())
        && (text == "0" || !text.starts_with('0'))
        && text.parse::<u32>().is_ok_and(|i| i <= MAX_ARRAY_INDEX)
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.as_str())
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The largest array index (JS: 2^32 - 2; 2^32 - 1 is the largest length).
pub const MAX_ARRAY_INDEX: u32 = u32::MAX - 1;

/// A property key: an array index or an interned name.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub enum PropertyKey {
    /// An array index (`0 ..= MAX_ARRAY_INDEX`).
    Index(u32),
    /// Any other name.
    Name(Key),
}

impl PropertyKey {
    /// The canonical key for `text`: canonical array indices ("0", "17", not "017") become
    /// [`PropertyKey::Index`], everything else an interned name.
    pub fn parse(text: &str) -> PropertyKey {
        if index_like(text) {
            return PropertyKey::Index(text.parse().expect("checked by index_like"));
        }
        PropertyKey::Name(Key::new(text))
    }

    /// [`PropertyKey::parse`] without the panic: `None` if `text` is a new name that would
    /// pass the bound on interned names (see [`Key::try_new`]). Indices never intern. For
    /// keys computed from program data (an interpreter's `o[s]`).
    pub fn try_parse(text: &str) -> Option<PropertyKey> {
        if index_like(text) {
            return Some(PropertyKey::Index(
                text.parse().expect("checked by index_like"),
            ));
        }
        Key::try_new(text).map(PropertyKey::Name)
    }

    /// The same key in canonical form: a [`PropertyKey::Name`] whose text is a canonical
    /// array index (`Name(Key::new("0"))`) becomes [`PropertyKey::Index`], so both spellings
    /// of a key name the same property. Every object operation canonicalises its key
    /// (fast paths need not: a shape never holds an index-like name).
    #[inline]
    pub fn canonical(self) -> PropertyKey {
        match self {
            PropertyKey::Name(k) if k.is_index_like() => PropertyKey::parse(k.as_str()),
            other => other,
        }
    }

    /// The `"length"` key.
    pub fn length() -> PropertyKey {
        PropertyKey::Name(length_key())
    }
}

pub(crate) fn length_key() -> Key {
    static LENGTH: OnceLock<Key> = OnceLock::new();
    *LENGTH.get_or_init(|| Key::new("length"))
}

impl From<&str> for PropertyKey {
    fn from(s: &str) -> Self {
        PropertyKey::parse(s)
    }
}

impl From<u32> for PropertyKey {
    /// # Panics
    /// On `u32::MAX`, which is not an array index.
    fn from(i: u32) -> Self {
        assert!(
            i <= MAX_ARRAY_INDEX,
            "gc-object: {i} is not an array index (max 2^32 - 2)"
        );
        PropertyKey::Index(i)
    }
}

impl From<Key> for PropertyKey {
    /// Canonical: a key whose text is an array index becomes [`PropertyKey::Index`].
    fn from(k: Key) -> Self {
        PropertyKey::Name(k).canonical()
    }
}

impl fmt::Display for PropertyKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PropertyKey::Index(i) => write!(f, "{i}"),
            PropertyKey::Name(k) if k.is_symbol() => write!(f, "Symbol(#{})", k.0 & !SYMBOL_BIT),
            PropertyKey::Name(k) => write!(f, "{k}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interning_is_idempotent_and_indices_are_canonical() {
        assert_eq!(Key::new("abc"), Key::new("abc"));
        assert_ne!(Key::new("abc"), Key::new("abd"));
        assert_eq!(Key::new("abc").as_str(), "abc");
        assert_eq!(PropertyKey::parse("12"), PropertyKey::Index(12));
        assert_eq!(PropertyKey::parse("0"), PropertyKey::Index(0));
        assert!(matches!(PropertyKey::parse("012"), PropertyKey::Name(_)));
        assert!(matches!(
            PropertyKey::parse("4294967295"),
            PropertyKey::Name(_)
        ));
        assert_eq!(
            PropertyKey::parse("4294967294"),
            PropertyKey::Index(MAX_ARRAY_INDEX)
        );
        assert!(matches!(PropertyKey::parse("-1"), PropertyKey::Name(_)));
        // Index-like names are known by their id, and canonicalise to the index.
        assert!(Key::new("42").is_index_like());
        assert!(!Key::new("042").is_index_like() && !Key::new("4294967295").is_index_like());
        assert_eq!(
            PropertyKey::Name(Key::new("42")).canonical(),
            PropertyKey::Index(42)
        );
        assert_eq!(Key::new("42").as_str(), "42");
    }
}
