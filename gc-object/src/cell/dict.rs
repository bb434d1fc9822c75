//! Dictionaries: insertion-ordered hash tables from a 32-bit key (a name's id, or an array
//! index) to a value, readable without the lock. They hold the named properties of an
//! object in dictionary mode and the sparse elements of any object.
//!
//! ```text
//!  one block (Layout(bytes, 8)):
//!  +------------------------------+-----------------------------+-----------------------+
//!  | DictHeader                   | entries[cap], in insertion  | index[2 * cap]        |
//!  | block header (cap), version, | order: key u32 | value word | 0 empty, else entry+1 |
//!  | used, live                   | (deleted: key = TOMB)       | (linear probing)      |
//!  +------------------------------+-----------------------------+-----------------------+
//! ```
//!
//! Writers hold the object's lock. An add appends an entry (value, then key, then its index
//! slot, each a release store), a delete overwrites the key with `TOMB`; a reader that
//! reaches an entry through the index sees it complete. When the entries are used up, the
//! table is compacted in place if at most half of them are live (so set/delete churn runs
//! in constant memory), else copied into a table twice the size, published with a release
//! store, the old one retired until the next collection.
//!
//! In-place compaction moves entries, so readers validate with a sequence lock: `version`
//! is odd while a compaction runs, and a reader that saw a different version after its
//! probe (or an odd one before it) retries. Every store of a compaction is a release store
//! that comes after the odd version store, so a reader that read any of them with an
//! acquire load then reads the changed version.

use core::alloc::Layout;
use core::marker::PhantomData;
use core::ptr::{self, NonNull};

use super::side::{BLOCK_ALIGN, BlockHeader};
use super::{AtomicWord, Value, Word};
use crate::error::Error;
use crate::slab;
use crate::sync::{AtomicU32, AtomicU64, Ordering, UnsafeCell, spin_wait};

/// The key of a deleted entry (no name id and no array index is `u32::MAX`).
pub(crate) const TOMB: u32 = u32::MAX;
/// Entries of a new dictionary (2 under loom, so compaction happens in few steps).
pub(crate) const DICT_MIN_CAP: u32 = if cfg!(loom) { 2 } else { 8 };
/// Index words per entry (a power of two, at least 2: at most half the index is in use).
const INDEX_PER_ENTRY: u32 = 2;

pub(super) const BLOCK_DICT: u8 = 5;

#[repr(C)]
pub(super) struct DictHeader {
    pub(super) head: BlockHeader,
    version: AtomicU64,
    used: AtomicU32,
    live: AtomicU32,
}

#[repr(C)]
struct DictEntry {
    key: AtomicU32,
    value: AtomicWord,
}

const DICT_HEAD: usize = core::mem::size_of::<DictHeader>().next_multiple_of(BLOCK_ALIGN);
const ENTRY: usize = core::mem::size_of::<DictEntry>();

#[cfg(not(loom))]
const _: () = assert!(ENTRY == 16 && core::mem::align_of::<DictEntry>() <= BLOCK_ALIGN);

fn dict_bytes(cap: u32) -> Option<usize> {
    let cap = cap as usize;
    let entries = cap.checked_mul(ENTRY)?;
    let index = cap.checked_mul(INDEX_PER_ENTRY as usize * core::mem::size_of::<AtomicU32>())?;
    DICT_HEAD.checked_add(entries)?.checked_add(index)
}

#[inline]
fn hash(key: u32) -> u32 {
    (u64::from(key).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) as u32
}

/// Allocates an empty dictionary of `cap` entries (a power of two).
pub(super) fn alloc_dict(raw: &dyn slab::RawAlloc, cap: u32) -> Result<Dict<'static>, Error> {
    // (A power of two: probes mask positions into range with `cap - 1`.)
    assert!(cap.is_power_of_two() && cap >= DICT_MIN_CAP);
    let ilen = cap.checked_mul(INDEX_PER_ENTRY).ok_or(Error::OutOfMemory)?;
    let bytes = dict_bytes(cap).ok_or(Error::OutOfMemory)?;
    let layout = Layout::from_size_align(bytes, BLOCK_ALIGN).map_err(|_| Error::OutOfMemory)?;
    let p = raw
        .alloc(layout)
        .ok_or(Error::OutOfMemory)?
        .cast::<DictHeader>();
    // SAFETY: a fresh allocation of `bytes` bytes, aligned 8: the header, `cap` entries and
    // `2 * cap` index words fit (that is how `bytes` was computed), each aligned.
    unsafe {
        p.as_ptr().write(DictHeader {
            head: BlockHeader {
                retired_next: UnsafeCell::new(ptr::null_mut()),
                bytes,
                kind: BLOCK_DICT,
                cap,
                len: AtomicU32::new(0),
                count: AtomicU32::new(0),
            },
            version: AtomicU64::new(0),
            used: AtomicU32::new(0),
            live: AtomicU32::new(0),
        });
    }
    let d = Dict {
        block: p,
        _h: PhantomData,
    };
    for i in 0..cap {
        // SAFETY: `i < cap`: inside the entries of this fresh block.
        unsafe {
            d.entry_ptr(i).write(DictEntry {
                key: AtomicU32::new(TOMB),
                value: AtomicWord::new(Word::UNDEFINED),
            })
        };
    }
    for i in 0..ilen {
        // SAFETY: `i < 2 * cap`: inside the index of this fresh block.
        unsafe { d.index_ptr(i).write(AtomicU32::new(0)) };
    }
    Ok(d)
}

/// A dictionary as seen through an object borrowed for `'h` (or a fresh, unpublished one).
#[derive(Clone, Copy)]
pub(crate) struct Dict<'h> {
    block: NonNull<DictHeader>,
    _h: PhantomData<&'h ()>,
}

impl<'h> Dict<'h> {
    /// # Safety
    /// `b` is a live dictionary block that stays alive for `'h`.
    pub(super) unsafe fn from_block(b: NonNull<BlockHeader>) -> Dict<'h> {
        Dict {
            block: b.cast(),
            _h: PhantomData,
        }
    }

    pub(super) fn block(self) -> NonNull<BlockHeader> {
        self.block.cast()
    }

    fn h(&self) -> &'h DictHeader {
        // SAFETY: dictionaries stay alive while their object's heap is borrowed (retired
        // ones are freed only with exclusive access).
        unsafe { self.block.as_ref() }
    }

    fn entry_ptr(&self, pos: u32) -> *mut DictEntry {
        self.block
            .as_ptr()
            .cast::<u8>()
            .wrapping_add(DICT_HEAD + pos as usize * ENTRY)
            .cast()
    }

    fn index_ptr(&self, i: u32) -> *mut AtomicU32 {
        let cap = self.h().head.cap as usize;
        self.block
            .as_ptr()
            .cast::<u8>()
            .wrapping_add(DICT_HEAD + cap * ENTRY + i as usize * core::mem::size_of::<AtomicU32>())
            .cast()
    }

    fn entry(&self, pos: u32) -> &'h DictEntry {
        assert!(pos < self.cap(), "gc-object: dictionary entry out of range");
        // SAFETY: `pos < cap`; every entry was initialized when the block was made.
        unsafe { &*self.entry_ptr(pos) }
    }

    fn index(&self, i: u32) -> &'h AtomicU32 {
        debug_assert!(i < INDEX_PER_ENTRY * self.cap());
        // SAFETY: callers mask `i` below `2 * cap`; every index word was initialized.
        unsafe { &*self.index_ptr(i) }
    }

    /// Entry capacity.
    pub(crate) fn cap(&self) -> u32 {
        self.h().head.cap
    }

    /// Entries appended since the last compaction (live and deleted).
    pub(crate) fn used(&self) -> u32 {
        self.h().used.load(Ordering::Acquire)
    }

    /// Live entries.
    pub(crate) fn live(&self) -> u32 {
        self.h().live.load(Ordering::Acquire)
    }

    /// Bytes of the block.
    #[cfg(all(test, not(loom)))]
    pub(crate) fn bytes(&self) -> usize {
        self.h().head.bytes
    }

    /// Runs `read` until it ran while no compaction did (sequence lock).
    #[inline]
    fn consistent<R>(&self, mut read: impl FnMut() -> R) -> R {
        let version = &self.h().version;
        let mut round = 0;
        loop {
            let v1 = version.load(Ordering::Acquire);
            if v1 & 1 == 0 {
                let r = read();
                if version.load(Ordering::Acquire) == v1 {
                    return r;
                }
            }
            spin_wait(&mut round);
        }
    }

    /// Probes for `key`: its position and value word. Bounded and in range whatever a
    /// concurrent compaction does (the caller validates the answer). The home slot is
    /// checked before the loop (most keys sit there).
    #[inline]
    fn probe(&self, key: u32) -> Option<(u32, Word)> {
        let cap = self.cap();
        let mask = INDEX_PER_ENTRY * cap - 1;
        let index = self
            .block
            .as_ptr()
            .cast::<u8>()
            .wrapping_add(DICT_HEAD + cap as usize * ENTRY)
            .cast::<AtomicU32>();
        // One index word: `None` if empty, else whether it names `key`'s entry. (A word
        // read across a compaction may name any entry: masked into range, the key check
        // and the caller's version check decide.)
        let at = |i: u32| -> Option<Option<(u32, Word)>> {
            // SAFETY: callers pass `i <= mask < INDEX_PER_ENTRY * cap`: an initialized index
            // word of this block.
            let e = unsafe { &*index.wrapping_add(i as usize) }.load(Ordering::Acquire);
            if e == 0 {
                return None;
            }
            let pos = (e - 1) & (cap - 1);
            // SAFETY: `pos < cap` (`cap` is a power of two): an initialized entry.
            let ent = unsafe { &*self.entry_ptr(pos) };
            Some(
                (ent.key.load(Ordering::Acquire) == key)
                    .then(|| (pos, ent.value.load(Ordering::Acquire))),
            )
        };
        let mut i = hash(key) & mask;
        if let Some(found) = at(i)? {
            return Some(found);
        }
        for _ in 0..mask {
            i = (i + 1) & mask;
            if let Some(found) = at(i)? {
                return Some(found);
            }
        }
        None
    }

    /// The value of `key` and its position (lock-free): one probe between two reads of
    /// the version, and the retry loop out of line.
    #[inline]
    pub(crate) fn get(&self, key: u32) -> Option<(u32, Value<'h>)> {
        let version = &self.h().version;
        let v1 = version.load(Ordering::Acquire);
        let first = if v1 & 1 == 0 {
            let r = self.probe(key);
            (version.load(Ordering::Acquire) == v1).then_some(r)
        } else {
            None
        };
        let r = match first {
            Some(r) => r,
            None => self.get_retry(key),
        };
        // SAFETY: dictionary values are values of this object's heap, traced while their
        // entry is live; the snapshot was consistent.
        r.map(|(pos, w)| (pos, unsafe { Value::from_word(w) }))
    }

    #[cold]
    #[inline(never)]
    fn get_retry(&self, key: u32) -> Option<(u32, Word)> {
        self.consistent(|| self.probe(key))
    }

    /// The value of `key` if one probe between two reads of the version finds it: `None`
    /// when it is absent *or* a compaction overlapped (then the caller's slow path asks
    /// [`Dict::get`]). No retry loop, so a leaf with nothing to save.
    #[inline]
    pub(crate) fn get_fast(&self, key: u32) -> Option<Value<'h>> {
        let version = &self.h().version;
        let v1 = version.load(Ordering::Acquire);
        if v1 & 1 != 0 {
            return None;
        }
        let (_, w) = self.probe(key)?;
        if version.load(Ordering::Acquire) != v1 {
            return None;
        }
        // SAFETY: as in `get`.
        Some(unsafe { Value::from_word(w) })
    }

    /// Live keys in insertion order (lock-free, one consistent snapshot).
    pub(crate) fn keys(&self) -> Vec<u32> {
        self.consistent(|| {
            let used = self.used().min(self.cap());
            (0..used)
                .map(|p| self.entry(p).key.load(Ordering::Acquire))
                .filter(|&k| k != TOMB)
                .collect()
        })
    }

    /// Live entries in insertion order (exclusive access, or the object's lock held).
    pub(super) fn for_each_locked(&self, mut f: impl FnMut(u32, u32, Word)) {
        for p in 0..self.used() {
            let e = self.entry(p);
            let k = e.key.load(Ordering::Relaxed);
            if k != TOMB {
                f(p, k, e.value.load(Ordering::Relaxed));
            }
        }
    }

    /// The position of `key` (the object's lock held: no compaction can run).
    pub(crate) fn find_locked(&self, key: u32) -> Option<u32> {
        self.probe(key).map(|(p, _)| p)
    }

    /// Overwrites the value at `pos` (lock held).
    pub(crate) fn set_locked(&self, pos: u32, v: Value<'h>) {
        self.entry(pos).value.store(v.word, Ordering::Release);
    }

    /// Deletes the entry at `pos` (lock held). Its index slot stays (probes go past it)
    /// until the next compaction or copy.
    pub(crate) fn remove_locked(&self, pos: u32) {
        let e = self.entry(pos);
        debug_assert_ne!(e.key.load(Ordering::Relaxed), TOMB);
        e.key.store(TOMB, Ordering::Release);
        e.value.store(Word::UNDEFINED, Ordering::Release);
        let h = self.h();
        h.live
            .store(h.live.load(Ordering::Relaxed) - 1, Ordering::Release);
    }

    /// Appends `key` (not present) with `v`; there must be room (`used < cap`; lock held,
    /// or the block is unpublished). Returns its position.
    pub(crate) fn append_locked(&self, key: u32, v: Value<'h>) -> u32 {
        self.append_word(key, v.word)
    }

    fn append_word(&self, key: u32, w: Word) -> u32 {
        debug_assert_ne!(key, TOMB);
        let h = self.h();
        let pos = h.used.load(Ordering::Relaxed);
        assert!(
            pos < self.cap(),
            "gc-object: dictionary append without room"
        );
        let e = self.entry(pos);
        e.value.store(w, Ordering::Release);
        e.key.store(key, Ordering::Release);
        self.link(key, pos);
        h.used.store(pos + 1, Ordering::Release);
        h.live
            .store(h.live.load(Ordering::Relaxed) + 1, Ordering::Release);
        pos
    }

    fn link(&self, key: u32, pos: u32) {
        let mask = INDEX_PER_ENTRY * self.cap() - 1;
        let mut i = hash(key) & mask;
        // At most `cap` of the `2 * cap` index words are ever in use: this ends.
        while self.index(i).load(Ordering::Relaxed) != 0 {
            i = (i + 1) & mask;
        }
        self.index(i).store(pos + 1, Ordering::Release);
    }

    /// Is there room for one more entry without a new block (lock held)? Compacts in
    /// place when the table is full but at most half live.
    pub(crate) fn make_room_locked(&self) -> bool {
        let used = self.used();
        if used < self.cap() {
            return true;
        }
        if self.live() > self.cap() / 2 {
            return false;
        }
        self.compact_locked();
        true
    }

    /// Moves the live entries to the front in order and rebuilds the index (lock held).
    fn compact_locked(&self) {
        let h = self.h();
        let v = h.version.load(Ordering::Relaxed);
        debug_assert_eq!(v & 1, 0);
        h.version.store(v + 1, Ordering::Relaxed);
        let used = h.used.load(Ordering::Relaxed);
        let mut to = 0;
        for from in 0..used {
            let e = self.entry(from);
            let k = e.key.load(Ordering::Relaxed);
            if k == TOMB {
                continue;
            }
            if from != to {
                let d = self.entry(to);
                d.value
                    .store(e.value.load(Ordering::Relaxed), Ordering::Release);
                d.key.store(k, Ordering::Release);
                e.key.store(TOMB, Ordering::Release);
                e.value.store(Word::UNDEFINED, Ordering::Release);
            }
            to += 1;
        }
        for i in 0..INDEX_PER_ENTRY * self.cap() {
            self.index(i).store(0, Ordering::Release);
        }
        for p in 0..to {
            self.link(self.entry(p).key.load(Ordering::Relaxed), p);
        }
        h.used.store(to, Ordering::Release);
        debug_assert_eq!(to, h.live.load(Ordering::Relaxed));
        h.version.store(v + 2, Ordering::Release);
    }

    /// Copies the live entries, in order, into the fresh unpublished `dst` (lock held on
    /// `self`'s object).
    pub(super) fn copy_into(&self, dst: Dict<'_>) {
        self.for_each_locked(|_, k, w| {
            dst.append_word(k, w);
        });
    }

    /// Appends into a fresh unpublished dictionary (building one from a shape).
    pub(super) fn push_fresh(&self, key: u32, w: Word) {
        self.append_word(key, w);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::slab::{RawAlloc, SystemAlloc};

    fn n(x: u32) -> Value<'static> {
        Value::from(x)
    }

    fn free(d: Dict<'_>) {
        let bytes = d.bytes();
        // SAFETY: allocated by `alloc_dict` on `SystemAlloc` with this layout, unpublished.
        unsafe {
            SystemAlloc.dealloc(
                d.block().cast(),
                Layout::from_size_align(bytes, BLOCK_ALIGN).unwrap(),
            )
        };
    }

    #[test]
    fn append_find_delete_keep_insertion_order() {
        let d = alloc_dict(&SystemAlloc, DICT_MIN_CAP).unwrap();
        for k in [5, 1, 9, 3] {
            assert!(d.make_room_locked());
            d.append_locked(k, n(k * 10));
        }
        assert_eq!(d.keys(), vec![5, 1, 9, 3]);
        assert_eq!(d.get(9).map(|(_, v)| v), Some(n(90)));
        assert_eq!(d.get(7), None);
        let p = d.find_locked(1).unwrap();
        d.remove_locked(p);
        assert_eq!(d.get(1), None);
        assert_eq!(d.keys(), vec![5, 9, 3]);
        d.append_locked(1, n(11));
        assert_eq!(d.keys(), vec![5, 9, 3, 1]);
        assert_eq!(d.get(1).map(|(_, v)| v), Some(n(11)));
        free(d);
    }

    #[test]
    fn churn_compacts_in_place_and_growth_copies() {
        let d = alloc_dict(&SystemAlloc, DICT_MIN_CAP).unwrap();
        d.append_locked(100, n(1));
        for i in 0..1000 {
            assert!(d.make_room_locked(), "one live key never needs a new block");
            let p = d.append_locked(7, n(i));
            assert_eq!(d.get(7).map(|(_, v)| v), Some(n(i)));
            d.remove_locked(p);
        }
        assert_eq!(d.keys(), vec![100]);
        for k in 0..DICT_MIN_CAP - 1 {
            if d.used() == d.cap() {
                assert!(d.make_room_locked());
            }
            d.append_locked(200 + k, n(k));
        }
        assert!(
            !d.make_room_locked(),
            "full and all live: needs a bigger block"
        );
        let big = alloc_dict(&SystemAlloc, 2 * DICT_MIN_CAP).unwrap();
        d.copy_into(big);
        assert_eq!(big.keys(), d.keys());
        assert_eq!(big.live(), DICT_MIN_CAP);
        for k in 0..DICT_MIN_CAP - 1 {
            assert_eq!(big.get(200 + k).map(|(_, v)| v), Some(n(k)));
        }
        free(d);
        free(big);
    }
}
