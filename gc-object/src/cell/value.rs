//! The 8-byte value word (NaN-boxing).
//!
//! ```text
//!  bits 63..48   47..0
//!  < 0xFFF9      an f64 (every NaN is canonicalized to 0x7FF8_0000_0000_0000)
//!  0xFFF9        special: 0 undefined, 1 null, 2 false, 3 true, 4 hole (never visible)
//!  0xFFFA        object: the cell address (user-space addresses fit 48 bits; checked
//!                when a chunk is allocated)
//!  0xFFFB        interned string: the key id in bits 31..0
//!  0xFFFC        another heap cell (weak reference, weak map, registry, symbol, string
//!                value): its address; the cell's header says which kind
//!  0xFFFD        never a value: a handle (`Local`) to a slot of a handle stack, the
//!                slot's address (a `Local` of a value that names no cell is the value)
//! ```
//!
//! On 64-bit targets the word is stored as a pointer (`AtomicPtr<u8>`), so an object word
//! keeps the provenance of its cell (`map_addr`), which strict-provenance Miri checks. On
//! 32-bit targets a pointer cannot hold an f64; the word is a `u64` and object words use
//! exposed provenance.

use core::fmt;
use core::marker::PhantomData;
use core::ptr::NonNull;

use crate::key::Key;
use crate::sync::Ordering;

use super::ObjectCell;

pub(crate) const TAG_SHIFT: u32 = 48;
pub(crate) const TAG_SPECIAL: u64 = 0xFFF9 << TAG_SHIFT;
pub(crate) const TAG_OBJECT: u64 = 0xFFFA << TAG_SHIFT;
pub(crate) const TAG_STRING: u64 = 0xFFFB << TAG_SHIFT;
pub(crate) const TAG_CELL: u64 = 0xFFFC << TAG_SHIFT;
pub(crate) const TAG_HANDLE: u64 = 0xFFFD << TAG_SHIFT;
pub(crate) const PAYLOAD_MASK: u64 = (1 << TAG_SHIFT) - 1;
const CANONICAL_NAN: u64 = 0x7FF8_0000_0000_0000;
pub(crate) const UNDEFINED_BITS: u64 = TAG_SPECIAL;
const NULL_BITS: u64 = TAG_SPECIAL | 1;
const FALSE_BITS: u64 = TAG_SPECIAL | 2;
const TRUE_BITS: u64 = TAG_SPECIAL | 3;
pub(crate) const HOLE_BITS: u64 = TAG_SPECIAL | 4;

#[cfg(target_pointer_width = "64")]
mod repr {
    use super::*;
    use crate::sync::AtomicPtr;

    /// One value word as stored (keeps pointer provenance).
    #[derive(Clone, Copy, PartialEq, Eq)]
    pub(crate) struct Word(pub(crate) *mut u8);

    impl Word {
        #[inline]
        pub(crate) const fn from_bits(bits: u64) -> Word {
            Word(core::ptr::without_provenance_mut(bits as usize))
        }
        #[inline]
        pub(crate) fn bits(self) -> u64 {
            self.0.addr() as u64
        }
        #[inline]
        pub(crate) fn from_cell(p: NonNull<ObjectCell>) -> Word {
            Word(
                p.as_ptr()
                    .cast::<u8>()
                    .map_addr(|a| a | TAG_OBJECT as usize),
            )
        }
        /// A word naming a cell that is not an object (tag [`TAG_CELL`]).
        #[inline]
        pub(crate) fn from_other_cell(p: NonNull<u8>) -> Word {
            Word(p.as_ptr().map_addr(|a| a | TAG_CELL as usize))
        }
        /// The cell of an object or other-cell word (caller checked the tag).
        #[inline]
        pub(crate) fn cell(self) -> *mut ObjectCell {
            self.0.map_addr(|a| a & PAYLOAD_MASK as usize).cast()
        }
        /// A handle word: the address of a handle-stack slot (tag [`TAG_HANDLE`]).
        #[inline]
        pub(crate) fn from_handle(slot: NonNull<Word>) -> Word {
            Word(
                slot.as_ptr()
                    .cast::<u8>()
                    .map_addr(|a| a | TAG_HANDLE as usize),
            )
        }
        /// The slot of a handle word (caller checked the tag).
        #[inline]
        pub(crate) fn handle_slot(self) -> *mut Word {
            self.0.map_addr(|a| a & PAYLOAD_MASK as usize).cast()
        }
    }

    #[derive(Debug)]
    pub(crate) struct AtomicWord(AtomicPtr<u8>);

    impl AtomicWord {
        pub(crate) fn new(w: Word) -> Self {
            AtomicWord(AtomicPtr::new(w.0))
        }
        #[inline]
        pub(crate) fn load(&self, o: Ordering) -> Word {
            Word(self.0.load(o))
        }
        #[inline]
        pub(crate) fn store(&self, w: Word, o: Ordering) {
            self.0.store(w.0, o)
        }
    }
}

#[cfg(not(target_pointer_width = "64"))]
mod repr {
    use super::*;
    use crate::sync::AtomicU64;

    #[derive(Clone, Copy, PartialEq, Eq)]
    pub(crate) struct Word(u64);

    impl Word {
        #[inline]
        pub(crate) const fn from_bits(bits: u64) -> Word {
            Word(bits)
        }
        #[inline]
        pub(crate) fn bits(self) -> u64 {
            self.0
        }
        #[inline]
        pub(crate) fn from_cell(p: NonNull<ObjectCell>) -> Word {
            Word(p.as_ptr().expose_provenance() as u64 | TAG_OBJECT)
        }
        #[inline]
        pub(crate) fn from_other_cell(p: NonNull<u8>) -> Word {
            Word(p.as_ptr().expose_provenance() as u64 | TAG_CELL)
        }
        #[inline]
        pub(crate) fn cell(self) -> *mut ObjectCell {
            core::ptr::with_exposed_provenance_mut((self.0 & PAYLOAD_MASK) as usize)
        }
        #[inline]
        pub(crate) fn from_handle(slot: NonNull<Word>) -> Word {
            Word(slot.as_ptr().expose_provenance() as u64 | TAG_HANDLE)
        }
        #[inline]
        pub(crate) fn handle_slot(self) -> *mut Word {
            core::ptr::with_exposed_provenance_mut((self.0 & PAYLOAD_MASK) as usize)
        }
    }

    #[derive(Debug)]
    pub(crate) struct AtomicWord(AtomicU64);

    impl AtomicWord {
        pub(crate) fn new(w: Word) -> Self {
            AtomicWord(AtomicU64::new(w.0))
        }
        #[inline]
        pub(crate) fn load(&self, o: Ordering) -> Word {
            Word(self.0.load(o))
        }
        #[inline]
        pub(crate) fn store(&self, w: Word, o: Ordering) {
            self.0.store(w.0, o)
        }
    }
}

pub(crate) use repr::{AtomicWord, Word};

#[cfg(not(loom))]
const _: () = assert!(core::mem::size_of::<AtomicWord>() == 8);
const _: () = assert!(core::mem::size_of::<Word>() == 8);

impl fmt::Debug for Word {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Word({:#x})", self.bits())
    }
}

impl Word {
    pub(crate) const UNDEFINED: Word = Word::from_bits(UNDEFINED_BITS);
    pub(crate) const HOLE: Word = Word::from_bits(HOLE_BITS);

    #[inline]
    pub(crate) fn tag(self) -> u64 {
        self.bits() & !PAYLOAD_MASK
    }
    #[inline]
    pub(crate) fn is_object(self) -> bool {
        self.tag() == TAG_OBJECT
    }
    /// Does the word name a heap cell (an object or another cell), which the collector
    /// traces and stores check for their heap?
    #[inline]
    pub(crate) fn is_cell(self) -> bool {
        let t = self.tag();
        t == TAG_OBJECT || t == TAG_CELL
    }
    #[inline]
    pub(crate) fn is_other_cell(self) -> bool {
        self.tag() == TAG_CELL
    }
    #[inline]
    pub(crate) fn is_hole(self) -> bool {
        self.bits() == HOLE_BITS
    }
    #[inline]
    pub(crate) fn is_handle(self) -> bool {
        self.tag() == TAG_HANDLE
    }
}

/// A value: undefined, null, a boolean, a number (f64), an interned string, or a cell of
/// the heap borrowed for `'h` (an object, a string value, a symbol, a weak reference, a
/// weak map, a finalization registry). Eight bytes, `Copy`.
///
/// An object value can only be made from an [`Obj`](crate::Obj) or read out of an object, so
/// the object it names is alive for `'h`: collection needs `&mut Heap`.
#[derive(Clone, Copy)]
pub struct Value<'h> {
    pub(crate) word: Word,
    _heap: PhantomData<&'h ()>,
}

const _: () = assert!(core::mem::size_of::<Value<'static>>() == 8);

// SAFETY: a value is a word; the object it may name is `Sync` (all its fields are atomics
// or locked), so sharing or sending the word between threads is sound.
unsafe impl Send for Value<'_> {}
// SAFETY: as for `Send`.
unsafe impl Sync for Value<'_> {}

impl<'h> Value<'h> {
    /// # Safety
    /// An object word must name a cell alive for `'h`.
    #[inline]
    pub(crate) unsafe fn from_word(word: Word) -> Value<'h> {
        Value {
            word,
            _heap: PhantomData,
        }
    }

    /// `undefined`.
    pub const UNDEFINED: Value<'static> = Value {
        word: Word::UNDEFINED,
        _heap: PhantomData,
    };
    /// `null`.
    pub const NULL: Value<'static> = Value {
        word: Word::from_bits(NULL_BITS),
        _heap: PhantomData,
    };

    /// `undefined`.
    pub fn undefined() -> Value<'h> {
        Value::UNDEFINED
    }
    /// `null`.
    pub fn null() -> Value<'h> {
        Value::NULL
    }
    /// A boolean.
    pub fn bool(b: bool) -> Value<'h> {
        Value {
            word: Word::from_bits(if b { TRUE_BITS } else { FALSE_BITS }),
            _heap: PhantomData,
        }
    }
    /// A number; every NaN becomes the one canonical NaN.
    #[inline]
    pub fn number(n: f64) -> Value<'h> {
        if n.is_nan() {
            Value::not_nan(f64::from_bits(CANONICAL_NAN))
        } else {
            Value::not_nan(n)
        }
    }
    /// A number that is not a NaN, or is the canonical one (stored as is).
    #[inline]
    fn not_nan(n: f64) -> Value<'h> {
        Value {
            word: Word::from_bits(n.to_bits()),
            _heap: PhantomData,
        }
    }
    /// An interned string.
    pub fn string(k: Key) -> Value<'h> {
        Value {
            word: Word::from_bits(TAG_STRING | u64::from(k.id())),
            _heap: PhantomData,
        }
    }

    /// This value without its borrow of the heap, if it names no cell (undefined, null, a
    /// boolean, a number, an interned string): such a value needs no root and may be kept
    /// across collections, e.g. in an interpreter's own data structures. `None` for cells
    /// (objects, string values, symbols, weak references, ...): root those with
    /// [`Heap::root_value`](crate::Heap::root_value), which refuses exactly the values this
    /// accepts.
    #[inline]
    pub fn as_static(self) -> Option<Value<'static>> {
        (!self.word.is_cell()).then_some(Value {
            word: self.word,
            _heap: PhantomData,
        })
    }

    /// Is this `undefined`?
    pub fn is_undefined(self) -> bool {
        self.word.bits() == UNDEFINED_BITS
    }
    /// Is this `null`?
    pub fn is_null(self) -> bool {
        self.word.bits() == NULL_BITS
    }
    /// The boolean, if this is one.
    pub fn as_bool(self) -> Option<bool> {
        match self.word.bits() {
            TRUE_BITS => Some(true),
            FALSE_BITS => Some(false),
            _ => None,
        }
    }
    /// The number, if this is one.
    #[inline]
    pub fn as_number(self) -> Option<f64> {
        let b = self.word.bits();
        (b < TAG_SPECIAL).then(|| f64::from_bits(b))
    }
    /// The number as a `u32`, if this is a number with an exact `u32` value (an integer in
    /// `0 ..= 2^32 - 1`; `-0` counts as 0). Cheaper than going through [`Value::as_number`]
    /// and a checked float-to-integer conversion by hand.
    #[inline]
    pub fn as_u32(self) -> Option<u32> {
        let n = self.as_number()?;
        // Saturating cast, then exactness: out-of-range, fractional and NaN values fail the
        // round trip.
        let i = n as u32;
        (f64::from(i) == n).then_some(i)
    }
    /// The number as an `i32`, if this is a number with an exact `i32` value (`-0` counts
    /// as 0).
    #[inline]
    pub fn as_i32(self) -> Option<i32> {
        let n = self.as_number()?;
        let i = n as i32;
        (f64::from(i) == n).then_some(i)
    }
    /// The interned string, if this is one. O(1), no lock.
    #[inline]
    pub fn as_string(self) -> Option<Key> {
        let b = self.word.bits();
        if b & !PAYLOAD_MASK == TAG_STRING {
            // String words are made only from keys (`Value::string`): the id is a name's.
            Some(Key::from_raw(b as u32))
        } else {
            None
        }
    }
    /// The cell of a word that names a cell other than an object.
    #[inline]
    pub(crate) fn other_cell(self) -> Option<NonNull<u8>> {
        if self.word.is_other_cell() {
            NonNull::new(self.word.cell().cast())
        } else {
            None
        }
    }

    /// The heap (its shared part, as a tag) of the cell this value names, if it names one.
    #[inline]
    pub(crate) fn heap_tag(self) -> Option<*const ()> {
        if !self.word.is_cell() {
            return None;
        }
        let cell = NonNull::new(self.word.cell().cast::<u8>())?;
        // SAFETY: a cell word of a `Value<'h>` names a live slab cell (type invariant).
        Some(unsafe { crate::slab::owner_of(cell) })
    }

    /// The object, if this is one.
    #[inline]
    pub fn as_object(self) -> Option<super::Obj<'h>> {
        if self.word.is_object() {
            let cell = NonNull::new(self.word.cell()).expect("object words are non-null");
            // SAFETY: object words come only from `Obj`s or slots of live objects (type
            // invariant of `Value<'h>`), so the cell is alive for `'h`.
            Some(unsafe { super::Obj::from_cell(cell) })
        } else {
            None
        }
    }

    /// SameValue (JS): numbers by value with NaN equal to NaN and +0 != -0; strings by
    /// their text (interned or heap strings alike); everything else by identity.
    #[inline]
    pub fn same_value(self, other: Value<'_>) -> bool {
        let stringish = |v: Value<'_>| v.word.tag() == TAG_STRING || v.word.is_other_cell();
        self.word.bits() == other.word.bits()
            || (stringish(self) && stringish(other) && self.same_text(other))
    }

    /// Two different words that may be strings: the same text?
    #[cold]
    fn same_text(self, other: Value<'_>) -> bool {
        if self.word.tag() == TAG_STRING && other.word.tag() == TAG_STRING {
            return false; // two different interned names: different texts
        }
        match (self.as_str(), other.as_str()) {
            (Some(a), Some(b)) => a == b,
            _ => false,
        }
    }
}

impl<'h> From<f64> for Value<'h> {
    fn from(n: f64) -> Self {
        Value::number(n)
    }
}
impl<'h> From<u32> for Value<'h> {
    /// The number `n` (exact: every `u32` is an f64 integer; no NaN check needed).
    #[inline]
    fn from(n: u32) -> Self {
        Value::not_nan(f64::from(n))
    }
}
impl<'h> From<i32> for Value<'h> {
    /// The number `n` (exact).
    #[inline]
    fn from(n: i32) -> Self {
        Value::not_nan(f64::from(n))
    }
}
impl<'h> From<bool> for Value<'h> {
    fn from(b: bool) -> Self {
        Value::bool(b)
    }
}
impl<'h> From<Key> for Value<'h> {
    fn from(k: Key) -> Self {
        Value::string(k)
    }
}
impl<'h> From<super::Obj<'h>> for Value<'h> {
    fn from(o: super::Obj<'h>) -> Self {
        o.value()
    }
}

impl PartialEq for Value<'_> {
    /// SameValue.
    fn eq(&self, other: &Self) -> bool {
        self.same_value(*other)
    }
}

impl fmt::Debug for Value<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(n) = self.as_number() {
            write!(f, "{n}")
        } else if let Some(b) = self.as_bool() {
            write!(f, "{b}")
        } else if self.is_undefined() {
            f.write_str("undefined")
        } else if self.is_null() {
            f.write_str("null")
        } else if let Some(s) = self.as_str() {
            write!(f, "{s:?}")
        } else if self.word.is_object() {
            write!(f, "[object @{:#x}]", self.word.bits() & PAYLOAD_MASK)
        } else if self.word.is_other_cell() {
            write!(f, "[cell @{:#x}]", self.word.bits() & PAYLOAD_MASK)
        } else {
            write!(f, "<word {:#x}>", self.word.bits())
        }
    }
}
