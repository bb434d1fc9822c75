//! Clone-on-write editing, written once for `LeanString` and `LeanCString`.
//!
//! A string may be written in place when it is inline or a heap string nobody else shares
//! ([`Mutable::is_mutable`]). Otherwise an edit first copies it ([`Mutable::make_mut`]),
//! into inline storage when the result fits. Growth is `lean_string`'s: at least half the
//! length again (`max(needed, len + len / 2)`), exact for `reserve_exact` and for a copy
//! made only to unshare.

use core::ptr;

use super::heap;
use super::shared::{Shared, raw_or_raise, replaced};
use super::{Kind, MAX_LEN, Raw, Words};
use crate::error::ReserveError;

/// A string type that can be edited in place: `LeanString` and `LeanCString`. Both keep
/// their heap strings in [`heap::allocate`] buffers; `LeanCString` keeps a NUL after the
/// data ([`TAIL`](Self::TAIL) = 1) and reports capacities without it.
///
/// # Safety
/// On top of [`Shared`]:
/// - heap buffers are [`heap::allocate`] buffers made with `FORCE_WIDE`, whose capacity
///   holds the data and `TAIL` more bytes, and whose length is stored by `Words::heap`;
/// - an inline string's bytes start at the first byte of its words, and a writable inline
///   string has room for `INLINE_CAP` bytes there (and `TAIL` more, inside the words);
/// - [`inline`](Shared::inline) and [`heap_copy`](Self::heap_copy) return such strings;
/// - with [`SHORTEN_IN_PLACE`](Self::SHORTEN_IN_PLACE), a heap or static string stays valid
///   when word 1 alone is rewritten to a shorter length (no NUL has to follow the data).
pub(crate) unsafe trait Mutable: Shared {
    /// Bytes a heap buffer keeps after the data (`LeanCString`'s NUL).
    const TAIL: usize;
    /// The heap header policy.
    const FORCE_WIDE: bool;
    /// `true` if a shared or static string is shortened by rewriting its length alone, so
    /// the buffer stays shared (`LeanString`, as `lean_string` does); `false` where the data
    /// must be followed by a NUL and shortening copies (`LeanCString`).
    const SHORTEN_IN_PLACE: bool;

    fn words_mut(&mut self) -> &mut Words;

    /// A unique heap string holding `bytes` (valid contents) in a buffer of `capacity`
    /// bytes, `TAIL` included (`bytes.len() + TAIL <= capacity`).
    fn heap_copy(bytes: &[u8], capacity: usize) -> Result<Self, ReserveError>;

    /// Sets the length.
    ///
    /// # Safety
    /// Writable in place, `new_len <= capacity()`, the first `new_len` bytes initialised
    /// valid contents.
    unsafe fn set_len(&mut self, new_len: usize);

    /// An empty string with room for at least `capacity` bytes (inline if they fit).
    fn with_capacity(capacity: usize) -> Result<Self, ReserveError> {
        if capacity <= Self::INLINE_CAP {
            Ok(Self::inline(&[]))
        } else {
            let total = capacity.checked_add(Self::TAIL).ok_or(ReserveError)?;
            Self::heap_copy(&[], total)
        }
    }

    /// Usable capacity (`TAIL` excluded): inline capacity, heap capacity, or a static
    /// string's length.
    #[inline]
    fn capacity(&self) -> usize {
        let w = self.words();
        match w.kind() {
            Kind::Inline => Self::INLINE_CAP,
            // SAFETY: a heap string's buffer is live while we hold our reference.
            Kind::Heap => (unsafe { heap::capacity(w.heap_ptr()) }) - Self::TAIL,
            Kind::Static => self.contents().len(),
        }
    }

    /// `true` if the bytes may be written in place (inline, or unique heap).
    #[inline(always)]
    fn is_mutable(&self) -> bool {
        match self.words().kind() {
            Kind::Inline => true,
            Kind::Heap => self.is_unique_heap(),
            Kind::Static => false,
        }
    }

    /// Makes the bytes writable in place with room for `additional` more bytes, growing
    /// amortised: a shared heap or static string is copied first (into inline storage if
    /// it fits). On error nothing changes.
    #[inline]
    fn make_mut(&mut self, additional: usize) -> Result<(), ReserveError> {
        if self.has_room(additional) {
            return Ok(());
        }
        make_mut_slow(self, additional, false)
    }

    /// [`make_mut`](Self::make_mut) with exact growth: a new buffer holds exactly
    /// `len + additional` bytes.
    #[inline]
    fn make_mut_exact(&mut self, additional: usize) -> Result<(), ReserveError> {
        if self.has_room(additional) {
            return Ok(());
        }
        make_mut_slow(self, additional, true)
    }

    /// `true` if the string is writable in place with `additional` spare bytes.
    #[inline(always)]
    fn has_room(&self, additional: usize) -> bool {
        let len = self.contents().len();
        match self.words().kind() {
            Kind::Inline => additional <= Self::INLINE_CAP - len,
            Kind::Heap if self.is_unique_heap() => {
                // SAFETY: our buffer is live.
                let cap = unsafe { heap::capacity(self.words().heap_ptr()) } - Self::TAIL;
                additional <= cap - len
            }
            _ => false,
        }
    }

    /// Gives the string a writable buffer of exactly `capacity >= len` usable bytes: inline
    /// if it fits, the unique heap buffer resized, or a copy. On error nothing changes.
    fn reallocate(&mut self, capacity: usize) -> Result<(), ReserveError> {
        let len = self.contents().len();
        debug_assert!(len <= capacity && capacity <= MAX_LEN - Self::TAIL);
        if capacity <= Self::INLINE_CAP {
            *self = Self::inline(self.contents().as_bytes());
        } else if self.is_unique_heap() {
            // SAFETY: a unique heap string of length `len <= capacity`.
            unsafe { resize_unique(self, len, capacity) }?;
        } else {
            *self = Self::heap_copy(self.contents().as_bytes(), capacity + Self::TAIL)?;
        }
        Ok(())
    }

    /// Replaces the string with its prefix of `new_len` bytes (a char boundary). A writable
    /// string sets its length; a shared or static one rewrites its length alone where
    /// [`SHORTEN_IN_PLACE`](Self::SHORTEN_IN_PLACE) allows, and is copied otherwise.
    fn truncate(&mut self, new_len: usize) -> Result<(), ReserveError> {
        debug_assert!(self.contents().is_char_boundary(new_len));
        if self.is_mutable() {
            // SAFETY: writable in place; a prefix at a char boundary is valid contents.
            unsafe { self.set_len(new_len) };
            return Ok(());
        }
        if Self::SHORTEN_IN_PLACE
            && let Some(w) = self.words().with_ptr_len(new_len)
        {
            // The same buffer and reference, a shorter length (trait contract).
            *self.words_mut() = w;
            return Ok(());
        }
        let new = Self::from_str(&self.contents()[..new_len])?;
        *self = new;
        Ok(())
    }

    /// Empties the string without allocating: a static string keeps its (now empty)
    /// static form where [`SHORTEN_IN_PLACE`](Self::SHORTEN_IN_PLACE), a writable one sets
    /// its length, and a shared one becomes the empty inline string.
    fn clear(&mut self) {
        let kind = self.words().kind();
        if Self::SHORTEN_IN_PLACE
            && kind == Kind::Static
            && let Some(w) = self.words().with_ptr_len(0)
        {
            *self.words_mut() = w;
        } else if self.is_mutable() {
            // SAFETY: writable; the empty string is valid contents.
            unsafe { self.set_len(0) };
        } else {
            *self = Self::inline(&[]);
        }
    }

    /// The writable data pointer (`make_mut` must have succeeded just before; taking the
    /// pointer reads nothing).
    #[inline(always)]
    fn data_mut(&mut self) -> *mut u8 {
        debug_assert!(self.is_mutable());
        if self.words().kind() == Kind::Heap {
            self.words().w0().cast_mut()
        } else {
            self.words_mut().base_mut()
        }
    }

    /// The contents, writable: a shared or static string is copied first.
    fn as_mut_str(&mut self) -> Result<&mut str, ReserveError> {
        self.make_mut(0)?;
        let len = self.contents().len();
        let p = self.data_mut();
        // SAFETY: writable in place (just made so); `len` initialised bytes at `p`, borrowed
        // mutably through `self`. Safe code can only keep `&mut str` valid UTF-8, and no safe
        // `str` method writes a NUL or a byte >= 0xC0 last (the inline tag stays valid).
        let bytes = unsafe { core::slice::from_raw_parts_mut(p, len) };
        // SAFETY: the contents are valid UTF-8.
        Ok(unsafe { core::str::from_utf8_unchecked_mut(bytes) })
    }

    /// Appends `s` (for `LeanCString` without NUL, checked by the caller); on error nothing
    /// changes.
    #[inline]
    fn push_str(&mut self, s: &str) -> Result<(), ReserveError> {
        debug_assert!(Self::TAIL == 0 || !s.as_bytes().contains(&0));
        self.make_mut(s.len())?;
        let len = self.contents().len();
        let dst = self.data_mut().wrapping_add(len);
        // SAFETY: `make_mut` made the string writable with room for `s.len()` more bytes
        // (and the tail): `dst..dst + s.len()` is spare capacity, disjoint from `s`.
        unsafe { ptr::copy_nonoverlapping(s.as_ptr(), dst, s.len()) };
        // SAFETY: the appended bytes are a `&str` (without NUL where that matters).
        unsafe { self.set_len(len + s.len()) };
        Ok(())
    }

    /// Appends a copy of bytes `start..end` (char boundaries, checked by the caller).
    fn extend_from_within(&mut self, start: usize, end: usize) -> Result<(), ReserveError> {
        let count = end - start;
        if count == 0 {
            return Ok(());
        }
        let len = self.contents().len();
        self.make_mut(count)?;
        let p = self.data_mut();
        // SAFETY: writable with room for `count` more bytes; the copy kept the contents, so
        // `start..end` (inside `0..len`) is the source, `len..len + count` the spare room.
        unsafe { ptr::copy_nonoverlapping(p.wrapping_add(start), p.wrapping_add(len), count) };
        // SAFETY: whole chars of the string appended: valid contents.
        unsafe { self.set_len(len + count) };
        Ok(())
    }

    /// Removes bytes `start..end`; both must be char boundaries (checked).
    fn remove_range(&mut self, start: usize, end: usize) -> Result<(), ReserveError> {
        let s = self.contents();
        let len = s.len();
        assert!(start <= end && end <= len && s.is_char_boundary(start) && s.is_char_boundary(end));
        self.make_mut(0)?;
        let p = self.data_mut();
        // SAFETY: writable; `end..len` and `start..` are inside the string (checked above).
        unsafe { ptr::copy(p.wrapping_add(end), p.wrapping_add(start), len - end) };
        // SAFETY: removing whole chars keeps valid contents (`LeanCString::set_len` zeroes
        // the freed inline bytes and rewrites the terminator).
        unsafe { self.set_len(len - (end - start)) };
        Ok(())
    }

    /// Inserts `s` (for `LeanCString` without NUL, checked by the caller) at byte `idx`, a
    /// char boundary (checked); on error nothing changes.
    fn insert_str(&mut self, idx: usize, s: &str) -> Result<(), ReserveError> {
        debug_assert!(Self::TAIL == 0 || !s.as_bytes().contains(&0));
        let len = self.contents().len();
        assert!(idx <= len && self.contents().is_char_boundary(idx));
        let n = s.len();
        self.make_mut(n)?;
        let p = self.data_mut();
        // SAFETY: writable with room for `n` more bytes (and the tail): the tail of the
        // string moves right inside the buffer (inline: below the tag byte).
        unsafe { ptr::copy(p.wrapping_add(idx), p.wrapping_add(idx + n), len - idx) };
        // SAFETY: the gap `idx..idx + n` is inside the buffer and disjoint from `s`.
        unsafe { ptr::copy_nonoverlapping(s.as_ptr(), p.wrapping_add(idx), n) };
        // SAFETY: a `&str` inserted at a char boundary keeps valid contents.
        unsafe { self.set_len(len + n) };
        Ok(())
    }

    /// Replaces bytes `start..end` (char boundaries, checked by the caller) with `with`
    /// (for `LeanCString` without NUL). A string that cannot be written is rebuilt in one
    /// new buffer; a writable one is edited in place. On error nothing changes.
    fn replace_range(&mut self, start: usize, end: usize, with: &str) -> Result<(), ReserveError> {
        let len = self.contents().len();
        let removed = end - start;
        if removed == 0 && with.is_empty() {
            return Ok(());
        }
        if !self.is_mutable() {
            let new = replaced::<Self>(self.contents(), start, end, with)?;
            *self = new;
            return Ok(());
        }
        self.make_mut(with.len().saturating_sub(removed))?;
        let p = self.data_mut();
        let new_len = len - removed + with.len();
        // SAFETY: writable with room for `new_len` bytes: the suffix `end..len` moves to
        // `start + with.len()..new_len` first, so writing `with` cannot clobber it. `with`
        // cannot point into a buffer we may write (it is unique, or inline in `self`).
        unsafe {
            ptr::copy(
                p.wrapping_add(end),
                p.wrapping_add(start + with.len()),
                len - end,
            )
        };
        // SAFETY: as above: the gap `start..start + with.len()` is inside the buffer.
        unsafe { ptr::copy_nonoverlapping(with.as_ptr(), p.wrapping_add(start), with.len()) };
        // SAFETY: pieces of valid contents joined at char boundaries.
        unsafe { self.set_len(new_len) };
        Ok(())
    }

    /// Keeps the chars `f` accepts. Nothing is copied until `f` first rejects a char, so a
    /// shared or static string that loses nothing stays as it is. If `f` panics, the string
    /// is left as `String::retain` leaves it: the chars kept before the one being tested.
    fn retain(&mut self, mut f: impl FnMut(char) -> bool) -> Result<(), ReserveError> {
        // Scans without writing. On a panic in `f` (armed), shortens to the chars before
        // `idx`.
        struct Scan<'a, R: Mutable> {
            s: &'a mut R,
            idx: usize,
            armed: bool,
        }
        impl<R: Mutable> Drop for Scan<'_, R> {
            fn drop(&mut self) {
                // Shortening only copies where it must (`LeanCString`); if even that fails,
                // the string is left whole, which is still valid.
                if self.armed {
                    let _ = self.s.truncate(self.idx);
                }
            }
        }
        // Compacts in place. On a panic in `f`, keeps the accepted chars before `idx`.
        struct Compact<'a, R: Mutable> {
            s: &'a mut R,
            idx: usize,
            deleted: usize,
        }
        impl<R: Mutable> Drop for Compact<'_, R> {
            fn drop(&mut self) {
                // SAFETY: the first `idx - deleted` bytes are the accepted chars, moved
                // down over the rejected ones: valid contents, shorter than the length.
                unsafe { self.s.set_len(self.idx - self.deleted) };
            }
        }

        let mut scan = Scan {
            s: self,
            idx: 0,
            armed: true,
        };
        let first = loop {
            let Some(ch) = scan.s.contents()[scan.idx..].chars().next() else {
                scan.armed = false;
                return Ok(());
            };
            if !f(ch) {
                break ch;
            }
            scan.idx += ch.len_utf8();
        };
        scan.armed = false;
        let start = scan.idx;
        let s = &mut *scan.s;
        s.make_mut(0)?;
        let len = s.contents().len();
        let mut g = Compact {
            s,
            idx: start + first.len_utf8(),
            deleted: first.len_utf8(),
        };
        while g.idx < len {
            let p = g.s.data_mut();
            // SAFETY: bytes `idx..len` are unvisited and untouched, starting at a char
            // boundary, so they are valid UTF-8.
            let rest = unsafe { core::slice::from_raw_parts(p.wrapping_add(g.idx), len - g.idx) };
            // SAFETY: as above.
            let rest = unsafe { core::str::from_utf8_unchecked(rest) };
            let ch = rest.chars().next().expect("idx < len, so a char follows");
            let n = ch.len_utf8();
            if !f(ch) {
                g.deleted += n;
            } else {
                // SAFETY: moves the kept char left into the gap, inside the buffer.
                unsafe { ptr::copy(p.wrapping_add(g.idx), p.wrapping_add(g.idx - g.deleted), n) };
            }
            g.idx += n;
        }
        Ok(())
    }

    /// Shrinks a heap string's capacity to `max(len, min_capacity)` if that is smaller:
    /// inline if it fits, the unique buffer resized, or a shared one copied into a buffer
    /// of exactly that capacity. Inline and static strings have nothing to shrink.
    fn shrink_to(&mut self, min_capacity: usize) -> Result<(), ReserveError> {
        if self.words().kind() != Kind::Heap {
            return Ok(());
        }
        let target = self.contents().len().max(min_capacity);
        if target >= self.capacity() {
            return Ok(());
        }
        self.reallocate(target)
    }

    /// The whole writable storage (the inline words, or the heap buffer with its spare
    /// capacity and tail) as possibly uninitialised bytes, for zeroing; `None` when the
    /// string cannot be written in place. The caller must leave the string empty
    /// ([`clear`](Self::clear)) before it is read again.
    #[cfg(feature = "zeroize")]
    fn storage_for_zeroing(&mut self) -> Option<&mut [core::mem::MaybeUninit<u8>]> {
        if !self.is_mutable() {
            return None;
        }
        let size = if self.words().kind() == Kind::Heap {
            self.capacity() + Self::TAIL
        } else {
            core::mem::size_of::<Words>()
        };
        let p = self.data_mut().cast::<core::mem::MaybeUninit<u8>>();
        // SAFETY: writable storage of `size` bytes at `p`, borrowed through `&mut self`.
        // Zero bytes keep every tag valid (0 is a full inline string of NULs, and the heap
        // words are not part of a heap buffer), and the caller clears before reading.
        Some(unsafe { core::slice::from_raw_parts_mut(p, size) })
    }

    /// `true` if word 1 holds the sentinel and the length lives in the header (32-bit).
    #[cfg(all(test, not(loom)))]
    fn len_in_header(&self) -> bool {
        self.words().kind() == Kind::Heap && self.words().w1() & super::LEN_MASK == super::LEN_MASK
    }
}

/// `from_str` of a [`Mutable`] type: inline if it fits, else a heap buffer sized to `s`.
#[inline]
pub(super) fn mutable_from_str<R: Mutable>(s: &str) -> Result<R, ReserveError> {
    if s.len() <= R::INLINE_CAP {
        Ok(R::inline(s.as_bytes()))
    } else {
        R::heap_copy(s.as_bytes(), s.len() + R::TAIL)
    }
}

/// `From<&str>` of a [`Mutable`] type: inline strings are built in registers; the heap path
/// is out of line and hands its words back in registers too.
#[inline(always)]
pub(super) fn mutable_from_str_or_raise<R: Mutable>(s: &str) -> R {
    if s.len() <= R::INLINE_CAP {
        R::inline(s.as_bytes())
    } else {
        // SAFETY: the raw words come from `Words::into_raw` of an `R`.
        let w = unsafe { Words::from_raw(heap_or_raise::<R>(s)) };
        // SAFETY: the words of a fresh `R`, whose reference moves in.
        unsafe { R::from_words(w) }
    }
}

#[inline(never)]
fn heap_or_raise<R: Mutable>(s: &str) -> Raw {
    raw_or_raise(R::heap_copy(s.as_bytes(), s.len() + R::TAIL))
}

/// Gives the unique heap string `r` a buffer of `capacity` usable bytes (the tail comes on
/// top), keeping its `len` bytes and the tail after them. On error nothing changes.
///
/// # Safety
/// `r` must be a heap string whose buffer nobody else shares, `len` its length, and
/// `len <= capacity`.
#[inline(always)]
unsafe fn resize_unique<R: Mutable>(
    r: &mut R,
    len: usize,
    capacity: usize,
) -> Result<(), ReserveError> {
    // SAFETY: caller's contract: the only reference to a live `heap::allocate` buffer
    // (trait contract) whose old capacity holds `len + TAIL`, as does the new one.
    let data = unsafe {
        heap::resize(
            r.words().heap_ptr(),
            len + R::TAIL,
            capacity + R::TAIL,
            R::FORCE_WIDE,
        )
    }?;
    // SAFETY: the resized buffer is ours alone, capacity >= len.
    *r.words_mut() = unsafe { Words::heap(data.as_ptr(), len) };
    Ok(())
}

/// The slow path of `make_mut`: a new capacity of `len + additional`, or (amortised, when
/// more room is asked for and the result does not fit inline) at least `len + len / 2`.
#[cold]
#[inline(never)]
fn make_mut_slow<R: Mutable>(
    r: &mut R,
    additional: usize,
    exact: bool,
) -> Result<(), ReserveError> {
    let len = r.contents().len();
    let needed = len.checked_add(additional).ok_or(ReserveError)?;
    // The largest usable capacity: the buffer also holds the tail.
    let max = MAX_LEN - R::TAIL;
    if needed > max {
        return Err(ReserveError);
    }
    let target = if exact || additional == 0 || needed <= R::INLINE_CAP {
        needed
    } else {
        needed.max(len + len / 2).min(max)
    };
    r.reallocate(target)
}
