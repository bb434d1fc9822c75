//! The one unsafe core of the crate: every bit trick lives in this folder.
//!
//! All three string types are two words, [`Words`]. The last byte in memory is the tag
//! ([`LastByte`]); its unused values are the niche that keeps `Option<_>` at two words.
//! Word 1 is read as a little-endian integer (`usize::from_le`), so "the last byte in
//! memory" is its most significant byte on every target, little- or big-endian.

mod cast;
mod cstring;
mod digits;
pub(crate) mod heap;
mod lean_str;
mod mutable;
mod shared;
mod string;

pub(crate) use cast::downcast_ref;
pub(crate) use cstring::CRepr;
pub(crate) use digits::{PAIRS, decimal, decimal128};
pub(crate) use lean_str::StrRepr;
pub(crate) use mutable::Mutable;
pub(crate) use shared::{Shared, ascii_case, repeat};
pub(crate) use string::Repr;

use core::cmp::Ordering;
use core::mem::size_of;
use core::ptr::{self, NonNull};
use core::slice;

/// What a string's words hold, read from the tag.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Kind {
    Inline,
    Heap,
    Static,
}

/// Bytes in a machine word.
const WORD: usize = size_of::<usize>();
/// Two words as one integer: an inline string's ordering key ([`Words::inline_key`]).
#[cfg(target_pointer_width = "64")]
type InlineKey = u128;
#[cfg(target_pointer_width = "32")]
type InlineKey = u64;
const _: () = assert!(size_of::<InlineKey>() == 2 * WORD);

/// `KEEP[len]`: the top `len` bytes of an [`InlineKey`] set, the rest clear (a table: one
/// load where the shifts for all 17 lengths would need a branch or several moves).
static KEEP: [InlineKey; INLINE_CAPACITY + 1] = {
    let mut t = [0; INLINE_CAPACITY + 1];
    let mut len = 1;
    while len <= INLINE_CAPACITY {
        t[len] = InlineKey::MAX << (8 * (INLINE_CAPACITY - len));
        len += 1;
    }
    t
};
/// Bytes stored inline by `LeanString` and `LeanStr`: 16 on 64-bit, 8 on 32-bit.
pub const INLINE_CAPACITY: usize = 2 * WORD;
/// Bytes stored inline by `LeanCString` (one fewer: the last byte doubles as the NUL).
pub const C_INLINE_CAPACITY: usize = INLINE_CAPACITY - 1;
/// Bits of word 1 that hold a heap or static string's length.
const LEN_BITS: u32 = (WORD * 8 - 8) as u32;
/// The largest length word 1 can hold: 2^56 - 1 on 64-bit, 2^24 - 1 on 32-bit. It caps
/// static strings and `LeanStr` (whose headers have no room for a length).
pub const MAX_WORD_LEN: usize = (1usize << LEN_BITS) - 1;
const LEN_MASK: usize = MAX_WORD_LEN;
/// On 32-bit the 24-bit length field is too short, so a heap string of at least
/// [`LONG_LEN`] bytes keeps its length in its (wide) header and word 1 holds `LEN_MASK`.
const HEADER_LEN: bool = WORD == 4;
/// The shortest length kept in the header (32-bit). Tests lower it so that Miri can reach it.
#[cfg(not(test))]
pub(crate) const LONG_LEN: usize = LEN_MASK;
#[cfg(test)]
pub(crate) const LONG_LEN: usize = if HEADER_LEN { 100 } else { LEN_MASK };
/// The longest `LeanString` (and the largest capacity): 2^56 - 1 on 64-bit; on 32-bit
/// `isize::MAX` less the 16-byte wide header (2^31 - 17), the allocator's own limit.
pub const MAX_LEN: usize = if HEADER_LEN {
    isize::MAX as usize - heap::WIDE_HEADER_SIZE
} else {
    MAX_WORD_LEN
};

const _: () = {
    assert!(LONG_LEN <= LEN_MASK);
    assert!(HEADER_LEN || MAX_LEN == MAX_WORD_LEN);
};

/// The last byte of the two words, named for what it says (as compact_str's
/// `LastUtf8Char`): only `0x00..=0xD1` are valid, leaving `0xD2..=0xFF` as the niche of
/// `Option<_>`. The tag constants below are derived from the variants.
#[allow(dead_code)]
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(u8)]
#[rustfmt::skip]
enum LastByte {
    // A full inline `LeanString`/`LeanStr`: the string's own final byte, which in UTF-8 is
    // never a lead byte (`< 0xC0`). `LeanCString`'s inline tag (its remaining capacity,
    // 0 for a full string: the terminator) is one of `V0..=V15`.
    V0 = 0x00, V1 = 0x01, V2 = 0x02, V3 = 0x03, V4 = 0x04, V5 = 0x05, V6 = 0x06, V7 = 0x07,
    V8 = 0x08, V9 = 0x09, V10 = 0x0A, V11 = 0x0B, V12 = 0x0C, V13 = 0x0D, V14 = 0x0E, V15 = 0x0F,
    V16 = 0x10, V17 = 0x11, V18 = 0x12, V19 = 0x13, V20 = 0x14, V21 = 0x15, V22 = 0x16, V23 = 0x17,
    V24 = 0x18, V25 = 0x19, V26 = 0x1A, V27 = 0x1B, V28 = 0x1C, V29 = 0x1D, V30 = 0x1E, V31 = 0x1F,
    V32 = 0x20, V33 = 0x21, V34 = 0x22, V35 = 0x23, V36 = 0x24, V37 = 0x25, V38 = 0x26, V39 = 0x27,
    V40 = 0x28, V41 = 0x29, V42 = 0x2A, V43 = 0x2B, V44 = 0x2C, V45 = 0x2D, V46 = 0x2E, V47 = 0x2F,
    V48 = 0x30, V49 = 0x31, V50 = 0x32, V51 = 0x33, V52 = 0x34, V53 = 0x35, V54 = 0x36, V55 = 0x37,
    V56 = 0x38, V57 = 0x39, V58 = 0x3A, V59 = 0x3B, V60 = 0x3C, V61 = 0x3D, V62 = 0x3E, V63 = 0x3F,
    V64 = 0x40, V65 = 0x41, V66 = 0x42, V67 = 0x43, V68 = 0x44, V69 = 0x45, V70 = 0x46, V71 = 0x47,
    V72 = 0x48, V73 = 0x49, V74 = 0x4A, V75 = 0x4B, V76 = 0x4C, V77 = 0x4D, V78 = 0x4E, V79 = 0x4F,
    V80 = 0x50, V81 = 0x51, V82 = 0x52, V83 = 0x53, V84 = 0x54, V85 = 0x55, V86 = 0x56, V87 = 0x57,
    V88 = 0x58, V89 = 0x59, V90 = 0x5A, V91 = 0x5B, V92 = 0x5C, V93 = 0x5D, V94 = 0x5E, V95 = 0x5F,
    V96 = 0x60, V97 = 0x61, V98 = 0x62, V99 = 0x63, V100 = 0x64, V101 = 0x65, V102 = 0x66, V103 = 0x67,
    V104 = 0x68, V105 = 0x69, V106 = 0x6A, V107 = 0x6B, V108 = 0x6C, V109 = 0x6D, V110 = 0x6E, V111 = 0x6F,
    V112 = 0x70, V113 = 0x71, V114 = 0x72, V115 = 0x73, V116 = 0x74, V117 = 0x75, V118 = 0x76, V119 = 0x77,
    V120 = 0x78, V121 = 0x79, V122 = 0x7A, V123 = 0x7B, V124 = 0x7C, V125 = 0x7D, V126 = 0x7E, V127 = 0x7F,
    V128 = 0x80, V129 = 0x81, V130 = 0x82, V131 = 0x83, V132 = 0x84, V133 = 0x85, V134 = 0x86, V135 = 0x87,
    V136 = 0x88, V137 = 0x89, V138 = 0x8A, V139 = 0x8B, V140 = 0x8C, V141 = 0x8D, V142 = 0x8E, V143 = 0x8F,
    V144 = 0x90, V145 = 0x91, V146 = 0x92, V147 = 0x93, V148 = 0x94, V149 = 0x95, V150 = 0x96, V151 = 0x97,
    V152 = 0x98, V153 = 0x99, V154 = 0x9A, V155 = 0x9B, V156 = 0x9C, V157 = 0x9D, V158 = 0x9E, V159 = 0x9F,
    V160 = 0xA0, V161 = 0xA1, V162 = 0xA2, V163 = 0xA3, V164 = 0xA4, V165 = 0xA5, V166 = 0xA6, V167 = 0xA7,
    V168 = 0xA8, V169 = 0xA9, V170 = 0xAA, V171 = 0xAB, V172 = 0xAC, V173 = 0xAD, V174 = 0xAE, V175 = 0xAF,
    V176 = 0xB0, V177 = 0xB1, V178 = 0xB2, V179 = 0xB3, V180 = 0xB4, V181 = 0xB5, V182 = 0xB6, V183 = 0xB7,
    V184 = 0xB8, V185 = 0xB9, V186 = 0xBA, V187 = 0xBB, V188 = 0xBC, V189 = 0xBD, V190 = 0xBE, V191 = 0xBF,
    // An inline `LeanString`/`LeanStr` of `n` bytes, shorter than `INLINE_CAPACITY`
    // (on 32-bit only `L0..=L7` occur).
    L0 = 0xC0, L1 = 0xC1, L2 = 0xC2, L3 = 0xC3, L4 = 0xC4, L5 = 0xC5, L6 = 0xC6, L7 = 0xC7,
    L8 = 0xC8, L9 = 0xC9, L10 = 0xCA, L11 = 0xCB, L12 = 0xCC, L13 = 0xCD, L14 = 0xCE,
    L15 = 0xCF,
    /// A heap string: word 0 points at the data, word 1 holds the length.
    Heap = 0xD0,
    /// A static string: word 0 is a `&'static` pointer, word 1 the length.
    Static = 0xD1,
}

/// `LeanString`/`LeanStr`: last byte `L0 + len` marks an inline string shorter than
/// [`INLINE_CAPACITY`]; any byte below it is the final byte of a full inline string.
pub(crate) const INLINE_TAG_BASE: u8 = LastByte::L0 as u8;
/// Last byte of a heap string.
pub(crate) const HEAP_TAG: u8 = LastByte::Heap as u8;
/// Last byte of a static string.
pub(crate) const STATIC_TAG: u8 = LastByte::Static as u8;

const _: () = {
    // Every inline length below the capacity has its variant, right below `Heap`.
    assert!(LastByte::L15 as u8 + 1 == HEAP_TAG);
    assert!(INLINE_TAG_BASE as usize + INLINE_CAPACITY <= HEAP_TAG as usize + 1);
    assert!(LastByte::V191 as u8 + 1 == INLINE_TAG_BASE);
    assert!(STATIC_TAG == HEAP_TAG + 1);
    assert!(C_INLINE_CAPACITY <= LastByte::V15 as usize);
};

/// Two words whose last byte is a [`LastByte`].
///
/// Word 0 is a pointer (heap and static strings, with provenance) or inline bytes (no
/// provenance; never dereferenced as a pointer).
#[repr(C)]
pub(crate) struct Words {
    w0: *const u8,
    mid: [u8; WORD - 1],
    last: LastByte,
}

/// The same two words as plain fields, for building and reading them whole (in registers).
#[repr(C)]
#[derive(Clone, Copy)]
struct Raw {
    w0: *const u8,
    w1: usize,
}

const _: () = {
    assert!(size_of::<Words>() == 2 * WORD);
    assert!(size_of::<Option<Words>>() == 2 * WORD);
    assert!(size_of::<Raw>() == size_of::<Words>());
    assert!(core::mem::align_of::<Raw>() == core::mem::align_of::<Words>());
};

impl Words {
    /// # Safety
    /// The most significant byte of `w1_le` (the last byte in memory) must be `<= 0xD1`.
    #[inline(always)]
    const unsafe fn from_parts(w0: *const u8, w1_le: usize) -> Self {
        let raw = Raw {
            w0,
            w1: w1_le.to_le(),
        };
        // SAFETY: same size and alignment (asserted above); every byte but the last is a
        // plain byte, and the caller guarantees the last one is a valid `LastByte`.
        unsafe { core::mem::transmute::<Raw, Words>(raw) }
    }

    /// The words as a scalar pair, which the ABI returns in two registers (a `Words`
    /// value would come back through memory).
    #[inline(always)]
    const fn into_raw(self) -> Raw {
        self.raw()
    }

    /// # Safety
    /// `raw` must have come from [`Words::into_raw`].
    #[inline(always)]
    const unsafe fn from_raw(raw: Raw) -> Self {
        // SAFETY: same layout; the caller passes bytes that were a valid `Words`.
        unsafe { core::mem::transmute::<Raw, Words>(raw) }
    }

    #[inline(always)]
    const fn raw(&self) -> Raw {
        // SAFETY: `Words` and `Raw` have the same layout; reading the bytes as a `usize` is
        // valid for any initialised bytes, and word 0 is a pointer in both.
        unsafe { ptr::read(ptr::from_ref(self).cast::<Raw>()) }
    }

    /// Word 1 as a little-endian integer: the tag is its top byte on every target.
    #[inline(always)]
    const fn w1(&self) -> usize {
        usize::from_le(self.raw().w1)
    }

    /// The tag: one byte load (a compare against `HEAP_TAG` needs no shift). Construction
    /// paths never read it, so the optimiser still moves a fresh string as two words.
    #[inline(always)]
    const fn last(&self) -> u8 {
        self.last as u8
    }

    #[inline(always)]
    fn w0(&self) -> *const u8 {
        self.w0
    }

    #[inline(always)]
    const fn base(&self) -> *const u8 {
        ptr::from_ref(self).cast::<u8>()
    }

    #[inline(always)]
    fn base_mut(&mut self) -> *mut u8 {
        ptr::from_mut(self).cast::<u8>()
    }

    /// A heap string's words. On 32-bit a length of at least [`LONG_LEN`] goes into the
    /// buffer's header and word 1 holds the sentinel `LEN_MASK`.
    ///
    /// # Safety
    /// `data` is the data pointer of a live [`heap::allocate`] buffer of capacity `>= len`
    /// that the caller owns uniquely (the header may be written).
    #[inline(always)]
    unsafe fn heap(data: *mut u8, len: usize) -> Self {
        if HEADER_LEN && len >= LONG_LEN {
            // SAFETY: capacity >= len >= LONG_LEN, so the buffer is wide (`heap::needs_wide`)
            // and has the length word; it is ours alone.
            unsafe { heap::set_long_len(data, len) };
            Self::pointer(data, LEN_MASK, HEAP_TAG)
        } else {
            Self::pointer(data, len, HEAP_TAG)
        }
    }

    /// The length of a heap or static string (the tag is `HEAP_TAG` or `STATIC_TAG`).
    #[inline(always)]
    const fn ptr_len(&self) -> usize {
        let len = self.w1() & LEN_MASK;
        if HEADER_LEN && len == LEN_MASK && self.last() == HEAP_TAG {
            // SAFETY: only `Words::heap` stores the sentinel in a heap string, after writing
            // the length word of its wide buffer, which lives as long as this reference.
            unsafe { heap::long_len(self.w0) }
        } else {
            len
        }
    }

    /// The same heap or static string shortened to `len` bytes by rewriting word 1 alone:
    /// the buffer (possibly shared) is not touched, so this is right for a shared buffer too.
    /// `None` where the new length would have to go into the header (32-bit, `len >=
    /// LONG_LEN`), which only a unique owner may write.
    #[inline]
    fn with_ptr_len(&self, len: usize) -> Option<Self> {
        let tag = self.last();
        debug_assert!(tag == HEAP_TAG || tag == STATIC_TAG);
        debug_assert!(len <= self.ptr_len());
        if HEADER_LEN && tag == HEAP_TAG && len >= LONG_LEN {
            return None;
        }
        Some(Self::pointer(self.w0, len, tag))
    }

    /// A heap or static string: word 0 a pointer, word 1 `len | tag << LEN_BITS`.
    #[inline(always)]
    const fn pointer(ptr: *const u8, len: usize, tag: u8) -> Self {
        debug_assert!(len <= LEN_MASK);
        // SAFETY: the tag is HEAP_TAG or STATIC_TAG (callers), both valid last bytes.
        unsafe { Self::from_parts(ptr, (len & LEN_MASK) | ((tag as usize) << LEN_BITS)) }
    }

    /// The bytes a `&'static str` or `&'static CStr` points at.
    #[inline(always)]
    const fn static_str(s: &'static [u8]) -> Self {
        Self::pointer(s.as_ptr(), s.len(), STATIC_TAG)
    }

    /// The same for all three types: the heap and static tags are shared, and every other
    /// last byte belongs to an inline string.
    #[inline(always)]
    fn kind(&self) -> Kind {
        match self.last() {
            HEAP_TAG => Kind::Heap,
            STATIC_TAG => Kind::Static,
            _ => Kind::Inline,
        }
    }

    /// A heap string's data pointer.
    #[inline(always)]
    fn heap_ptr(&self) -> NonNull<u8> {
        debug_assert!(self.last() == HEAP_TAG);
        // SAFETY: a heap string's word 0 is the non-null data pointer.
        unsafe { NonNull::new_unchecked(self.w0().cast_mut()) }
    }

    /// The bytes of a `LeanString` or `LeanStr` (their inline encoding). Branch-light: heap
    /// and static strings share "pointer + length" decoding, so the only choice (pointer
    /// string or inline) compiles to conditional moves. `long_len` says whether heap
    /// strings may keep their length in the header (`LeanString` on 32-bit; `LeanStr`'s
    /// exact buffers have no room for it); callers pass a constant.
    #[inline(always)]
    const fn str_bytes(&self, long_len: bool) -> &[u8] {
        let last = self.last();
        let is_ptr = last >= HEAP_TAG;
        // Below 0xC0 the subtraction wraps to >= 0x40; the min maps it to a full string.
        let mut inline_len = last.wrapping_sub(INLINE_TAG_BASE) as usize;
        if inline_len > INLINE_CAPACITY {
            inline_len = INLINE_CAPACITY;
        }
        let ptr = if is_ptr { self.w0 } else { self.base() };
        let len = if is_ptr {
            if long_len {
                self.ptr_len()
            } else {
                self.w1() & LEN_MASK
            }
        } else {
            inline_len
        };
        // SAFETY: inline bytes live in `self`; heap and static bytes at word 0 for `len`
        // bytes, alive as long as `self` (heap: its owner holds a reference; static:
        // forever).
        unsafe { slice::from_raw_parts(ptr, len) }
    }

    /// An inline `LeanString`/`LeanStr` as an ordering key: its bytes as one big-endian
    /// integer with the bytes past its length cleared (a shorter string may hold stale
    /// bytes there, and the tag), then the length. Keys order exactly as the strings' bytes
    /// do: the first differing byte decides, and where one string is a prefix of the other
    /// the integers are equal and the shorter length comes first. Inline strings only.
    #[inline(always)]
    fn inline_key(&self) -> (InlineKey, usize) {
        debug_assert!(self.last() < HEAP_TAG);
        let mut len = self.last().wrapping_sub(INLINE_TAG_BASE) as usize;
        if len > INLINE_CAPACITY {
            len = INLINE_CAPACITY;
        }
        let raw = self.raw();
        // Word 0 of an inline string holds bytes (no provenance): its address is the
        // integer whose memory bytes they are, as `w1` is.
        let hi = usize::from_be(raw.w0.addr()) as InlineKey;
        let lo = usize::from_be(raw.w1) as InlineKey;
        let key = (hi << (WORD * 8)) | lo;
        (key & KEEP[len], len)
    }

    /// `str` ordering of two `LeanString`s or `LeanStr`s. Two inline strings compare their
    /// [`inline_key`](Self::inline_key)s: integers built from the words already in
    /// registers, with no `memcmp` call and nothing that a sort has to reload for its pivot.
    /// Anything else compares the bytes. `long_len` as in [`str_bytes`](Self::str_bytes).
    #[inline(always)]
    fn str_cmp(&self, other: &Self, long_len: bool) -> Ordering {
        if (self.last() < HEAP_TAG) & (other.last() < HEAP_TAG) {
            return self.inline_key().cmp(&other.inline_key());
        }
        self.str_bytes(long_len).cmp(other.str_bytes(long_len))
    }

    /// `str` equality, with the same inline fast path as [`str_cmp`](Self::str_cmp).
    #[inline(always)]
    fn str_eq(&self, other: &Self, long_len: bool) -> bool {
        if (self.last() < HEAP_TAG) & (other.last() < HEAP_TAG) {
            return self.inline_key() == other.inline_key();
        }
        self.str_bytes(long_len) == other.str_bytes(long_len)
    }

    /// The `&'static str` a static `LeanString` or `LeanStr` wraps.
    const fn as_static_str(&self) -> Option<&'static str> {
        if self.last() == STATIC_TAG {
            let len = self.w1() & LEN_MASK;
            // SAFETY: a static string's word 0 and length came from a `&'static str`.
            let bytes = unsafe { slice::from_raw_parts(self.w0, len) };
            // SAFETY: as above: the bytes are that `str`'s.
            Some(unsafe { core::str::from_utf8_unchecked(bytes) })
        } else {
            None
        }
    }
}

// ----- building inline strings in registers -----
//
// Copying the bytes into the struct and then loading it as two words stalls store
// forwarding on x86 (narrow stores, wide load). Instead both words are assembled from
// (possibly overlapping) unaligned loads of the source and stored whole.

/// Loads `n <= WORD` bytes at `p` as a little-endian integer, zero above byte `n`.
///
/// # Safety
/// `p..p + n` must be readable.
#[inline(always)]
const unsafe fn load_le(p: *const u8, n: usize) -> usize {
    const HALF: usize = WORD / 2;
    if n >= HALF {
        // Two overlapping half-word loads cover HALF..=WORD bytes.
        // SAFETY: `n >= HALF`, so both loads are inside `p..p + n`.
        let lo = unsafe { load_half(p) };
        // SAFETY: as above.
        let hi = unsafe { load_half(p.wrapping_add(n - HALF)) };
        lo | (hi << ((n - HALF) * 8))
    } else if n > 0 {
        // 1..HALF bytes: first, middle and last (overlapping for short n).
        // SAFETY: the indices 0, n / 2 and n - 1 are all below `n`.
        let a = unsafe { *p };
        // SAFETY: as above.
        let b = unsafe { *p.wrapping_add(n / 2) };
        // SAFETY: as above.
        let c = unsafe { *p.wrapping_add(n - 1) };
        (a as usize) | ((b as usize) << (n / 2 * 8)) | ((c as usize) << ((n - 1) * 8))
    } else {
        0
    }
}

/// # Safety
/// `p..p + WORD / 2` must be readable.
#[inline(always)]
const unsafe fn load_half(p: *const u8) -> usize {
    #[cfg(target_pointer_width = "64")]
    // SAFETY: caller's contract; unaligned read of 4 bytes.
    let v = u32::from_le(unsafe { p.cast::<u32>().read_unaligned() }) as usize;
    #[cfg(target_pointer_width = "32")]
    // SAFETY: caller's contract; unaligned read of 2 bytes.
    let v = u16::from_le(unsafe { p.cast::<u16>().read_unaligned() }) as usize;
    v
}

/// # Safety
/// `p..p + WORD` must be readable.
#[inline(always)]
const unsafe fn load_word(p: *const u8) -> usize {
    // SAFETY: caller's contract; unaligned read of one word.
    usize::from_le(unsafe { p.cast::<usize>().read_unaligned() })
}

/// The two little-endian words holding `bytes` (at most [`INLINE_CAPACITY`]), zero-padded.
#[inline(always)]
const fn inline_words(bytes: &[u8]) -> (usize, usize) {
    let len = bytes.len();
    let p = bytes.as_ptr();
    debug_assert!(len <= INLINE_CAPACITY);
    if len > WORD {
        // SAFETY: `WORD < len`, so `p..p + WORD` and `p + len - WORD..p + len` are readable.
        let lo = unsafe { load_word(p) };
        // SAFETY: as above.
        let hi = unsafe { load_word(p.wrapping_add(len - WORD)) };
        // Shift out the bytes `hi` shares with `lo`: fewer than WORD of them.
        (lo, hi >> ((INLINE_CAPACITY - len) * 8))
    } else if len == WORD {
        // SAFETY: exactly one word is readable.
        (unsafe { load_word(p) }, 0)
    } else {
        // SAFETY: `len < WORD` bytes at `p` are readable.
        (unsafe { load_le(p, len) }, 0)
    }
}

/// An inline `LeanString`/`LeanStr` (`bytes.len() <= INLINE_CAPACITY`, valid UTF-8). A
/// `const fn`, so `from_static_str` builds short strings inline at compile time too.
#[inline(always)]
const fn inline_string(bytes: &[u8]) -> Words {
    let len = bytes.len();
    let (w0, w1) = inline_words(bytes);
    // SAFETY: for a full string the top byte is the final byte of valid UTF-8 (< 0xC0);
    // otherwise it is 0xC0 + len <= 0xCF (the high bytes of `w1` are zero).
    // Word 0 holds bytes, not an address: store it in little-endian byte order too.
    unsafe { Words::from_parts(ptr::without_provenance(w0.to_le()), w1 | inline_tag(len)) }
}

/// The inline `LeanString` `w` of `len` bytes with `bytes` appended, built in registers:
/// the old bytes (cut to `len`, dropping any stale ones) and `bytes` shifted to start at
/// `len` become the two words, stored whole. No `memcpy` call and no byte stores.
/// `len + bytes.len() <= INLINE_CAPACITY`, and `bytes` is valid UTF-8.
#[inline(always)]
fn inline_append(w: &Words, len: usize, bytes: &[u8]) -> Words {
    let new_len = len + bytes.len();
    debug_assert!(w.last() < HEAP_TAG && new_len <= INLINE_CAPACITY);
    const BITS: u32 = (WORD * 8) as u32;
    let raw = w.raw();
    // Word 0 of an inline string holds bytes (no provenance): its address is the integer
    // whose memory bytes they are. Little-endian values: byte `i` at bits `8 * i`.
    let old = (usize::from_le(raw.w0.addr()) as InlineKey)
        | ((usize::from_le(raw.w1) as InlineKey) << BITS);
    let (lo, hi) = inline_words(bytes);
    let add = (lo as InlineKey) | ((hi as InlineKey) << BITS);
    // The low `len` bytes: `KEEP`'s top `len` bytes, byte-reversed. At capacity there is
    // nothing to add (`add == 0`), so the wrapped shift is harmless.
    let keep = KEEP[len].swap_bytes();
    let new = (old & keep) | add.wrapping_shl(8 * len as u32);
    let (w0, w1) = (new as usize, (new >> BITS) as usize);
    // SAFETY: the bytes past `new_len` are zero, so the last byte is `inline_tag`'s
    // `0xC0 + new_len` below capacity, and at capacity the string's own final byte, which
    // valid UTF-8 keeps below 0xC0. Word 0 holds bytes: stored in little-endian order.
    unsafe {
        Words::from_parts(
            ptr::without_provenance(w0.to_le()),
            w1 | inline_tag(new_len),
        )
    }
}

/// Word 1's tag bits for an inline string of `len <= INLINE_CAPACITY` bytes, without a
/// branch: `(0xC0 + len) << LEN_BITS` below capacity, 0 for a full string (whose last byte
/// is its own data). Below capacity the low byte of `len - CAP` is `256 - CAP + len`,
/// whose top bits are all ones; masking with `0xC0 | (CAP - 1)` leaves `0xC0 + len`.
/// At capacity the difference is 0.
#[inline(always)]
const fn inline_tag(len: usize) -> usize {
    const MASK: u8 = INLINE_TAG_BASE | (INLINE_CAPACITY - 1) as u8;
    // Byte arithmetic keeps the constants small immediates (`len <= CAP` fits a byte).
    (((len as u8).wrapping_sub(INLINE_CAPACITY as u8) & MASK) as usize) << LEN_BITS
}

const _: () = {
    // The mask trick needs a power-of-two capacity no larger than the low tag bits.
    assert!(INLINE_CAPACITY.is_power_of_two() && INLINE_CAPACITY <= 0x40);
    assert!(inline_tag(0) == (INLINE_TAG_BASE as usize) << LEN_BITS);
    assert!(inline_tag(INLINE_CAPACITY - 1) == (0xBF + INLINE_CAPACITY) << LEN_BITS);
    assert!(inline_tag(INLINE_CAPACITY) == 0);
};

/// An inline `LeanCString` (`bytes.len() <= C_INLINE_CAPACITY`, no NUL): the last byte is
/// the remaining capacity, so it is 0, the terminator, when the string is full.
#[inline(always)]
fn inline_cstring(bytes: &[u8]) -> Words {
    let len = bytes.len();
    let (w0, w1) = inline_words(bytes);
    let tag = (C_INLINE_CAPACITY - len) << LEN_BITS;
    // SAFETY: `len <= 15` bytes leave the top byte zero; the tag is 0..=15.
    // Word 0 holds bytes, not an address: store it in little-endian byte order too.
    unsafe { Words::from_parts(ptr::without_provenance(w0.to_le()), w1 | tag) }
}

// `Words` holds raw pointers, but every owner type is `Send + Sync` by its own impl.

/// `bytes` as a `str` if they are all ASCII: a word-at-a-time test, much cheaper than full
/// UTF-8 validation for the short texts that the number formatters write.
#[inline(always)]
pub(crate) fn ascii_str(bytes: &[u8]) -> Option<&str> {
    if bytes.is_ascii() {
        // SAFETY: ASCII is valid UTF-8.
        Some(unsafe { core::str::from_utf8_unchecked(bytes) })
    } else {
        None
    }
}

/// `true` if `bytes` holds a NUL. Strings up to two words long are checked with two
/// overlapping word loads and the "has a zero byte" bit trick instead of a memchr call.
#[inline(always)]
pub(crate) fn has_nul(bytes: &[u8]) -> bool {
    const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
    const HIGHS: u64 = u64::from_ne_bytes([0x80; 8]);
    // Non-zero exactly when some byte of `x` is zero (the lowest such byte never borrows).
    let zero64 = |x: u64| x.wrapping_sub(ONES) & !x & HIGHS != 0;
    let zero32 = |x: u32| x.wrapping_sub(ONES as u32) & !x & HIGHS as u32 != 0;
    let n = bytes.len();
    let word = |at: usize| u64::from_ne_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
    let half = |at: usize| u32::from_ne_bytes(bytes[at..at + 4].try_into().expect("4 bytes"));
    match n {
        8..=16 => zero64(word(0)) | zero64(word(n - 8)),
        4..=7 => zero32(half(0)) | zero32(half(n - 4)),
        _ => bytes.contains(&0),
    }
}

#[cfg(test)]
mod has_nul_tests {
    #[test]
    fn finds_a_nul_at_every_position_of_every_short_length() {
        for n in 0..=40 {
            let clean = vec![b'a'; n];
            assert!(!super::has_nul(&clean), "len {n}");
            for i in 0..n {
                let mut v = clean.clone();
                v[i] = 0;
                assert!(super::has_nul(&v), "len {n}, nul at {i}");
                v[i] = 0x80; // high bytes must not look like zeros
                assert!(!super::has_nul(&v), "len {n}, 0x80 at {i}");
            }
        }
    }
}

#[cfg(test)]
mod inline_order_tests {
    use crate::{LeanStr, LeanString};
    use alloc::string::String;
    use alloc::vec::Vec;

    /// Every inline length against every other, with stale bytes past the length (cut
    /// from longer text), NULs, and bytes that differ only in their high bits.
    #[test]
    fn inline_keys_order_and_compare_as_str() {
        let mut texts: Vec<String> = Vec::new();
        for len in 0..=super::INLINE_CAPACITY + 1 {
            for fill in ["a", "\0", "z", "\u{e9}"] {
                let mut t: String = fill.repeat(len);
                t.truncate(t.char_indices().map(|(i, _)| i).nth(len).unwrap_or(t.len()));
                texts.push(t);
            }
            texts.push("ab\0".repeat(6)[..len.min(18)].into());
        }
        let cut = |t: &str| {
            // A full inline string (or a longer heap one) cut to `t`: the inline bytes past
            // the length keep the old text.
            let full = alloc::format!("{t}{}", "\u{7f}".repeat(super::INLINE_CAPACITY));
            let mut l = LeanString::from(&full[..t.len().max(super::INLINE_CAPACITY)]);
            l.truncate(t.len());
            l
        };
        // Under Miri a sample of the left-hand strings meets every right-hand one.
        let step = if cfg!(miri) { 7 } else { 1 };
        for a in texts.iter().step_by(step) {
            for b in &texts {
                let (la, lb) = (cut(a), cut(b));
                assert_eq!(la.as_str(), a);
                assert_eq!(la.cmp(&lb), a.as_str().cmp(b.as_str()), "{a:?} vs {b:?}");
                assert_eq!(la == lb, a == b, "{a:?} vs {b:?}");
                let (fa, fb) = (LeanStr::from(a.as_str()), LeanStr::from(b.as_str()));
                assert_eq!(fa.cmp(&fb), a.as_str().cmp(b.as_str()), "{a:?} vs {b:?}");
                assert_eq!(fa == fb, a == b);
            }
        }
    }
}

#[cfg(test)]
mod inline_tag_tests {
    use super::*;

    #[test]
    fn inline_tag_is_base_plus_len_below_capacity_and_zero_at_capacity() {
        for len in 0..INLINE_CAPACITY {
            let want = (INLINE_TAG_BASE as usize + len) << LEN_BITS;
            assert_eq!(inline_tag(len), want, "len {len}");
        }
        assert_eq!(inline_tag(INLINE_CAPACITY), 0);
    }
}
