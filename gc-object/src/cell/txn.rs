//! Writes: the held lock (`Locked`) and side-state transactions (`Txn`): every block a
//! change needs is allocated first and published together, so a failed allocation changes
//! nothing.

use core::alloc::Layout;
use core::ptr::{self, NonNull};

use super::dict::{DICT_MIN_CAP, alloc_dict};
use super::side::{
    BLOCK_COLD, BLOCK_ELEMS, BLOCK_ENTRIES, BLOCK_SLOTS, BlockHeader, ColdDraft, ColdState,
    Elements, RawEntry, StorageState, alloc_block, block_items, free_block,
};
use super::{
    AtomicWord, INLINE_SLOTS, Obj, SIDE_DICT, SIDE_ENTRIES, SIDE_RESTRICTED, Shape, Value, Word,
};
use crate::error::Error;
use crate::slab;
use crate::sync::{AtomicU32, Ordering, UnsafeCell};

/// Holds an object's one-byte lock.
pub(crate) struct Locked<'h> {
    pub(super) obj: Obj<'h>,
}

impl Drop for Locked<'_> {
    fn drop(&mut self) {
        self.obj.c().lock.store(0, Ordering::Release);
    }
}

impl<'h> Locked<'h> {
    pub(crate) fn obj(&self) -> Obj<'h> {
        self.obj
    }

    pub(crate) fn set_shape(&self, s: &'h Shape) {
        self.obj
            .c()
            .shape
            .store(s as *const Shape as *mut Shape, Ordering::Release);
    }
    pub(crate) fn set_proto(&self, p: Option<Obj<'h>>) {
        let raw = p.map_or(ptr::null_mut(), |o| o.cell_ptr().as_ptr());
        self.obj.c().proto.store(raw, Ordering::Release);
    }
    pub(crate) fn set_not_extensible(&self) {
        self.obj.c().extensible.store(0, Ordering::Release);
    }
    pub(crate) fn set_integrity(&self, level: u8) {
        self.obj.c().integrity.store(level, Ordering::Release);
    }
    /// Adds `flags` to the `side` byte. Restriction and attribute entries also move a
    /// shape-mode object from a plain shape to its not-plain twin (same keys and slots, new
    /// id), after the flag: a [`PropertyCache`](crate::PropertyCache) checks nothing but the
    /// shape id, and only ever remembers plain shapes, so it never reads a slot of an
    /// object with these flags (a reader that loaded the plain shape before this store
    /// reads as if it came before the change).
    pub(crate) fn add_side_flags(&self, flags: u8) {
        let side = self.obj.side();
        self.obj.c().side.store(side | flags, Ordering::Release);
        if flags & (SIDE_RESTRICTED | SIDE_ENTRIES) != 0 {
            let shape = self.obj.shape();
            if shape.is_plain() {
                self.set_shape(self.obj.heap().shapes.not_plain(shape));
            }
        }
    }

    /// Writes slot `i`; the slot must exist (`ensure_slots`).
    pub(crate) fn store_slot(&self, i: u32, v: Value<'h>) {
        let i = i as usize;
        if i < INLINE_SLOTS {
            self.obj.c().slots[i].store(v.word, Ordering::Release);
            return;
        }
        let s = self
            .obj
            .storage()
            .expect("gc-object: external slot without storage");
        let b = NonNull::new(s.slots.load(Ordering::Acquire))
            .expect("gc-object: external slot without block");
        let j = i - INLINE_SLOTS;
        // SAFETY: the block is live; its header is immutable.
        let cap = unsafe { b.as_ref() }.cap as usize;
        assert!(j < cap, "gc-object: slot {i} beyond capacity");
        // SAFETY: `j < cap`; slots are initialized.
        unsafe { &*block_items::<AtomicWord>(b).wrapping_add(j) }.store(v.word, Ordering::Release);
    }

    fn retire(&self, s: &StorageState, b: NonNull<BlockHeader>) {
        s.retired.with_mut(|head| {
            // SAFETY: the retired list is only touched under the object lock (held) or with
            // exclusive access. Readers never read `retired_next`.
            let prev = unsafe { core::mem::replace(&mut *head, b.as_ptr()) };
            // SAFETY: `b` is live; its link is only touched under the lock or exclusively.
            unsafe { b.as_ref() }.retired_next.with_mut(|n| {
                // SAFETY: as above.
                unsafe { *n = prev }
            });
        });
    }

    /// Starts a side-state change: blocks are allocated into the transaction first and
    /// published together by [`Txn::commit`], so a failed allocation changes nothing.
    pub(crate) fn txn<'g>(&'g self, raw: &'h dyn slab::RawAlloc) -> Txn<'g, 'h> {
        Txn {
            g: self,
            raw,
            slots: None,
            elems: None,
            cold: None,
            names: None,
            sparse: None,
            storage: false,
        }
    }

    /// Sets the array length floor (see `StorageState::length`); storage must exist unless
    /// `len` is 0.
    pub(crate) fn set_length(&self, len: u32) {
        match self.obj.storage() {
            Some(s) => s.length.store(len, Ordering::Release),
            None => assert_eq!(len, 0, "gc-object: array length without storage"),
        }
    }

    /// Finishes the move to dictionary mode after a transaction that prepared the
    /// dictionary ([`Txn::prepare_dictionary`]) committed: the flag, then the dictionary shape.
    /// The old slots stay readable (racing readers of the old shape) until the next
    /// collection frees the external ones.
    pub(crate) fn enter_dictionary(&self, dict_shape: &'h Shape) {
        debug_assert!(self.obj.names().is_some());
        self.add_side_flags(SIDE_DICT);
        self.set_shape(dict_shape);
    }

    /// Makes sure slots `0..count` exist (a transaction of one step).
    pub(crate) fn ensure_slots(
        &self,
        raw: &'h dyn slab::RawAlloc,
        count: u32,
    ) -> Result<(), Error> {
        let mut t = self.txn(raw);
        t.slots(count)?;
        t.commit()
    }

    /// Replaces the cold state by `draft` (a transaction of one step).
    pub(crate) fn replace_cold(
        &self,
        raw: &'h dyn slab::RawAlloc,
        draft: &ColdDraft<'h>,
    ) -> Result<(), Error> {
        let mut t = self.txn(raw);
        t.cold(draft)?;
        t.commit()
    }

    /// Writes element `i` (< capacity) and raises the dense length to cover it.
    pub(crate) fn store_element(&self, e: Elements<'h>, i: u32, v: Value<'h>) {
        let was_hole = i >= e.len() || e.item(i).load(Ordering::Relaxed).is_hole();
        e.item(i).store(v.word, Ordering::Release);
        let h = e.head();
        if was_hole {
            h.count
                .store(h.count.load(Ordering::Relaxed) + 1, Ordering::Release);
        }
        if i >= e.len() {
            h.len.store(i + 1, Ordering::Release);
        }
    }

    /// Makes element `i` a hole (it stays within the dense length).
    pub(crate) fn clear_element(&self, e: Elements<'h>, i: u32) {
        if i < e.len() && !e.item(i).load(Ordering::Relaxed).is_hole() {
            e.item(i).store(Word::HOLE, Ordering::Release);
            let h = e.head();
            h.count
                .store(h.count.load(Ordering::Relaxed) - 1, Ordering::Release);
        }
    }

    /// Truncates the dense elements to `len` (holes beyond it).
    pub(crate) fn truncate_elements(&self, e: Elements<'h>, len: u32) {
        let old = e.len();
        let mut gone = 0;
        for j in len..old {
            if !e.item(j).load(Ordering::Relaxed).is_hole() {
                gone += 1;
            }
            e.item(j).store(Word::HOLE, Ordering::Release);
        }
        if len < old {
            let h = e.head();
            h.count
                .store(h.count.load(Ordering::Relaxed) - gone, Ordering::Release);
            h.len.store(len, Ordering::Release);
        }
    }
}

/// Unpublished side blocks of one locked operation; freed on drop unless committed.
pub(crate) struct Txn<'g, 'h> {
    g: &'g Locked<'h>,
    raw: &'h dyn slab::RawAlloc,
    slots: Option<NonNull<BlockHeader>>,
    elems: Option<NonNull<BlockHeader>>,
    cold: Option<NonNull<BlockHeader>>,
    names: Option<NonNull<BlockHeader>>,
    sparse: Option<NonNull<BlockHeader>>,
    /// Install the storage wrapper even if no block is prepared.
    storage: bool,
}

impl<'h> Txn<'_, 'h> {
    /// Prepares slot capacity for slots `0..count` (one block allocation if it grows).
    pub(crate) fn slots(&mut self, count: u32) -> Result<(), Error> {
        let count = count as usize;
        if count <= INLINE_SLOTS {
            return Ok(());
        }
        let need = count - INLINE_SLOTS;
        let old = self
            .g
            .obj
            .storage()
            .and_then(|s| NonNull::new(s.slots.load(Ordering::Acquire)));
        // SAFETY: a live block; header immutable.
        let old_cap = old.map_or(0, |b| unsafe { b.as_ref() }.cap as usize);
        if old_cap >= need {
            return Ok(());
        }
        let cap = need.max(old_cap * 2).max(4);
        let cap = u32::try_from(cap).map_err(|_| Error::OutOfMemory)?;
        let nb = alloc_block(
            self.raw,
            BLOCK_SLOTS,
            core::mem::size_of::<AtomicWord>(),
            cap,
        )?;
        let items = block_items::<AtomicWord>(nb);
        for j in 0..cap as usize {
            let w = match old {
                // SAFETY: `j < old_cap`: an initialized slot of the old block.
                Some(o) if j < old_cap => unsafe { &*block_items::<AtomicWord>(o).wrapping_add(j) }
                    .load(Ordering::Relaxed),
                _ => Word::UNDEFINED,
            };
            // SAFETY: `j < cap`: inside the new block.
            unsafe { items.wrapping_add(j).write(AtomicWord::new(w)) };
        }
        if let Some(prev) = self.slots.replace(nb) {
            // SAFETY: unpublished block of this transaction.
            unsafe { free_block(self.raw, prev) };
        }
        Ok(())
    }

    /// Prepares element capacity of at least `min_cap` (one block allocation if it grows).
    pub(crate) fn elements(&mut self, min_cap: u32) -> Result<(), Error> {
        let old = self.g.obj.elements();
        let old_cap = old.map_or(0, |e| e.cap());
        if old.is_some() && old_cap >= min_cap {
            return Ok(());
        }
        let cap = min_cap.max(old_cap.saturating_mul(2)).max(4);
        let nb = alloc_block(
            self.raw,
            BLOCK_ELEMS,
            core::mem::size_of::<AtomicWord>(),
            cap,
        )?;
        let items = block_items::<AtomicWord>(nb);
        let len = old.map_or(0, |e| e.len());
        for j in 0..cap {
            let w = match old {
                Some(e) if j < len => e.item(j).load(Ordering::Relaxed),
                _ => Word::HOLE,
            };
            // SAFETY: `j < cap`: inside the new block.
            unsafe { items.wrapping_add(j as usize).write(AtomicWord::new(w)) };
        }
        // SAFETY: the new block is live and unpublished.
        let head = unsafe { nb.as_ref() };
        head.len.store(len, Ordering::Relaxed);
        head.count
            .store(old.map_or(0, |e| e.count()), Ordering::Relaxed);
        if let Some(prev) = self.elems.replace(nb) {
            // SAFETY: unpublished block of this transaction.
            unsafe { free_block(self.raw, prev) };
        }
        Ok(())
    }

    /// Prepares a new cold state (entries block if any, then the cold state).
    pub(crate) fn cold(&mut self, draft: &ColdDraft<'h>) -> Result<(), Error> {
        let n = u32::try_from(draft.entries.len()).map_err(|_| Error::OutOfMemory)?;
        let entries = if n == 0 {
            None
        } else {
            let b = alloc_block(self.raw, BLOCK_ENTRIES, core::mem::size_of::<RawEntry>(), n)?;
            let items = block_items::<RawEntry>(b);
            for (j, e) in draft.entries.iter().enumerate() {
                let raw = RawEntry {
                    key: e.key,
                    attrs: e.attrs,
                    getter: e.getter.word,
                    setter: e.setter.word,
                };
                // SAFETY: `j < n == cap`.
                unsafe { items.wrapping_add(j).write(raw) };
            }
            Some(b)
        };
        let layout = Layout::new::<ColdState>();
        let Some(cp) = self.raw.alloc(layout) else {
            if let Some(b) = entries {
                // SAFETY: never published.
                unsafe { free_block(self.raw, b) };
            }
            return Err(Error::OutOfMemory);
        };
        let cp = cp.cast::<ColdState>();
        let cold = ColdState {
            head: BlockHeader {
                retired_next: UnsafeCell::new(ptr::null_mut()),
                bytes: layout.size(),
                kind: BLOCK_COLD,
                cap: 0,
                len: AtomicU32::new(0),
                count: AtomicU32::new(0),
            },
            owner: draft.owner,
            native: draft.native,
            entries: entries.map_or(ptr::null_mut(), |b| b.as_ptr()),
            closure: draft.closure,
            env: draft.env.word,
        };
        // SAFETY: fresh allocation with the layout of `ColdState`.
        unsafe { cp.as_ptr().write(cold) };
        if let Some(prev) = self.cold.replace(cp.cast()) {
            // SAFETY: unpublished block of this transaction.
            unsafe { free_block(self.raw, prev) };
        }
        Ok(())
    }

    /// Prepares the move of a shape-mode object to dictionary mode: its keys and values, in
    /// order, go into a new dictionary with room for one more. After commit, call
    /// [`Locked::enter_dictionary`].
    pub(crate) fn prepare_dictionary(&mut self) -> Result<(), Error> {
        let o = self.g.obj;
        debug_assert!(!o.is_dictionary() && self.names.is_none());
        let shape = o.shape();
        let n = shape.slot_count();
        let cap = (n + 1).next_power_of_two().max(DICT_MIN_CAP);
        let d = alloc_dict(self.raw, cap)?;
        for (i, k) in shape.keys_in_order().enumerate() {
            d.push_fresh(k.id(), o.slot(i as u32).word);
        }
        self.names = Some(d.block());
        Ok(())
    }

    /// Makes sure the storage wrapper exists after commit (for the array length).
    pub(crate) fn storage(&mut self) {
        self.storage = true;
    }

    /// Prepares room for one more entry in the named (`sparse == false`) or sparse-element
    /// dictionary: a new one, a compaction in place (changes nothing a reader can see) or
    /// a copy twice the size.
    pub(crate) fn dict_room(&mut self, sparse: bool) -> Result<(), Error> {
        let (cur, slot) = if sparse {
            (self.g.obj.sparse(), &mut self.sparse)
        } else {
            (self.g.obj.names(), &mut self.names)
        };
        if slot.is_some() {
            return Ok(());
        }
        let nb = match cur {
            None => alloc_dict(self.raw, DICT_MIN_CAP)?,
            Some(d) if d.make_room_locked() => return Ok(()),
            Some(d) => {
                let cap = d.cap().checked_mul(2).ok_or(Error::OutOfMemory)?;
                let nb = alloc_dict(self.raw, cap)?;
                d.copy_into(nb);
                nb
            }
        };
        *slot = Some(nb.block());
        Ok(())
    }

    /// Installs the storage wrapper if needed (the last allocation), then publishes every
    /// prepared block with release stores and retires the blocks they replace.
    pub(crate) fn commit(mut self) -> Result<(), Error> {
        if self.slots.is_none()
            && self.elems.is_none()
            && self.cold.is_none()
            && self.names.is_none()
            && self.sparse.is_none()
            && !(self.storage && self.g.obj.storage().is_none())
        {
            return Ok(());
        }
        let s = match self.g.obj.storage() {
            Some(s) => s,
            None => self.install_storage()?,
        };
        // SAFETY: the cell is live (type invariant of `Obj`).
        unsafe { slab::note_side_state(self.g.obj.cell.cast()) };
        if let Some(b) = self.slots.take() {
            let old = s.slots.swap(b.as_ptr(), Ordering::AcqRel);
            if let Some(o) = NonNull::new(old) {
                self.g.retire(s, o);
            }
        }
        if let Some(b) = self.elems.take() {
            let old = s.elems.swap(b.as_ptr(), Ordering::AcqRel);
            if let Some(o) = NonNull::new(old) {
                self.g.retire(s, o);
            }
        }
        if let Some(b) = self.cold.take() {
            let old = s.cold.swap(b.cast().as_ptr(), Ordering::AcqRel);
            if let Some(o) = NonNull::new(old) {
                self.g.retire(s, o.cast());
            }
        }
        for (b, at) in [
            (self.names.take(), &s.names),
            (self.sparse.take(), &s.sparse),
        ] {
            if let Some(b) = b {
                let old = at.swap(b.as_ptr(), Ordering::AcqRel);
                if let Some(o) = NonNull::new(old) {
                    self.g.retire(s, o);
                }
            }
        }
        Ok(())
    }

    #[cfg(feature = "wide-object")]
    fn install_storage(&self) -> Result<&'h StorageState, Error> {
        unreachable!("wide objects always have storage")
    }

    /// Allocates and publishes the storage wrapper (first installation; the one-byte lock
    /// is held, so exactly one wrapper is ever installed).
    #[cfg(not(feature = "wide-object"))]
    fn install_storage(&self) -> Result<&'h StorageState, Error> {
        let layout = Layout::new::<StorageState>();
        let p = self
            .raw
            .alloc(layout)
            .ok_or(Error::OutOfMemory)?
            .cast::<StorageState>();
        // SAFETY: fresh allocation with the layout of `StorageState`.
        unsafe { p.as_ptr().write(StorageState::empty()) };
        // Release: a reader that sees the pointer sees the initialized wrapper.
        self.g.obj.c().storage.store(p.as_ptr(), Ordering::Release);
        // SAFETY: just published; lives until finalization.
        Ok(unsafe { &*p.as_ptr() })
    }
}

impl Drop for Txn<'_, '_> {
    fn drop(&mut self) {
        for b in [
            self.slots.take(),
            self.elems.take(),
            self.cold.take(),
            self.names.take(),
            self.sparse.take(),
        ]
        .into_iter()
        .flatten()
        {
            // SAFETY: never published (commit takes what it publishes).
            unsafe { free_block(self.raw, b) };
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::super::testing::{heap, n, object, teardown};
    use super::*;
    use crate::slab::LocalCache;

    const WRAPPER: isize = if cfg!(feature = "wide-object") { 0 } else { 1 };

    #[test]
    fn an_uncommitted_transaction_changes_and_keeps_nothing() {
        let (h, c) = heap();
        let cache = LocalCache::default();
        let o = object(&h, &cache, 0);
        let base = c.live();
        {
            let g = o.lock();
            let mut t = g.txn(h.raw());
            t.slots(INLINE_SLOTS as u32 + 3).unwrap();
            t.elements(4).unwrap();
            t.dict_room(true).unwrap();
            t.cold(&ColdDraft::empty()).unwrap();
            assert_eq!(c.live(), base + 4);
        }
        assert_eq!(c.live(), base);
        assert!(!o.has_side_state_raw());
        teardown(h, cache);
        assert_eq!(c.live(), 0);
    }

    #[test]
    fn commit_publishes_and_retires_what_it_replaces() {
        let (h, c) = heap();
        let cache = LocalCache::default();
        let o = object(&h, &cache, 0);
        let base = c.live();
        let g = o.lock();
        g.ensure_slots(h.raw(), INLINE_SLOTS as u32 + 1).unwrap();
        assert_eq!(c.live(), base + WRAPPER + 1);
        g.store_slot(INLINE_SLOTS as u32, n(3));
        // Growing copies the slots into a new block; the old one waits for the collector.
        g.ensure_slots(h.raw(), INLINE_SLOTS as u32 + 10).unwrap();
        assert_eq!(c.live(), base + WRAPPER + 2);
        let s = o.storage().unwrap();
        // SAFETY: the lock is held.
        assert!(!s.retired.with(|p| unsafe { *p }).is_null());
        assert_eq!(o.slot(INLINE_SLOTS as u32), n(3));
        g.store_slot(INLINE_SLOTS as u32 + 9, n(9));
        assert_eq!(o.slot(INLINE_SLOTS as u32 + 9), n(9));
        drop(g);
        teardown(h, cache);
        assert_eq!(
            c.live(),
            0,
            "finalization freed the blocks, retired ones included"
        );
    }
}
