//! Tracing (the collector's view of an object) and finalization (freeing side state).

use core::ptr::{self, NonNull};

use super::side::ATTR_ACCESSOR;
use super::side::{StorageState, block_items, free_block};
use super::{
    AtomicWord, INLINE_SLOTS, Obj, ObjectCell, SIDE_DICT, SIDE_ENTRIES, Shape, Value, Word,
};
use crate::key::{Key, PropertyKey};
use crate::slab;
use crate::sync::Ordering;

fn walk_retired(raw: &dyn slab::RawAlloc, s: &StorageState) {
    s.retired.with_mut(|head| {
        // SAFETY: exclusive access (collector or finalizer): no reader can hold a retired
        // block any more.
        let mut p = unsafe { core::mem::replace(&mut *head, ptr::null_mut()) };
        while let Some(b) = NonNull::new(p) {
            // SAFETY: `b` is a live retired block.
            p = unsafe { b.as_ref() }.retired_next.with(|n| unsafe { *n });
            // SAFETY: retired and unreachable by readers (exclusive access).
            unsafe { free_block(raw, b) };
        }
    });
}

/// An accessor's slot (or dictionary value) may still hold the value the property had
/// while it was a data property: `define` leaves it there for readers that raced the
/// change. With exclusive access no such reader is left, so it is cleared, not traced.
fn clear_accessor_slots(obj: Obj<'_>, shape: &Shape) {
    let Some(cold) = obj.cold() else { return };
    let g = obj.lock();
    for e in cold.raw_entries() {
        let PropertyKey::Name(k) = e.key else {
            continue;
        };
        if e.attrs & ATTR_ACCESSOR == 0 {
            continue;
        }
        if shape.is_dict() {
            if let Some(d) = obj.names()
                && let Some(pos) = d.find_locked(k.id())
            {
                d.set_locked(pos, Value::UNDEFINED);
            }
        } else if let Some(slot) = shape.lookup(k) {
            g.store_slot(slot, Value::UNDEFINED);
        }
    }
}

/// Calls `visit` on every value word an object references, marks its shape, calls
/// `symbol` on the symbol keys of its properties (those of newly marked shapes, and of its
/// dictionary), and frees its retired blocks (and, in dictionary mode, the external slots
/// of its shape-mode past).
///
/// # Safety
/// `cell` is a live object cell; the caller has exclusive access to its heap.
#[inline]
pub(crate) unsafe fn trace(
    cell: NonNull<ObjectCell>,
    raw: &dyn slab::RawAlloc,
    visit: &mut impl FnMut(NonNull<ObjectCell>),
    symbol: &mut impl FnMut(Key),
) {
    // SAFETY: live (contract).
    let c = unsafe { cell.as_ref() };
    if let Some(p) = NonNull::new(c.proto.load(Ordering::Relaxed)) {
        visit(p);
    }
    let mut word = |w: Word| {
        if w.is_cell() {
            // SAFETY: cell words hold non-null cell addresses.
            visit(unsafe { NonNull::new_unchecked(w.cell()) });
        }
    };
    // Only the slots the shape covers hold values of this object (see "Slots past the
    // shape" in the module docs); the shape is not changing (exclusive access). A
    // dictionary-mode object has the dictionary shape (no slots): its values are in its
    // dictionary, its old slots are dead.
    let shape = c.shape.load(Ordering::Relaxed);
    // SAFETY: the shape of a live object belongs to its heap, which outlives this call.
    let shape = unsafe { &*shape };
    shape.mark_with(&mut *symbol);
    // SAFETY: live (contract).
    let obj = unsafe { Obj::from_cell(cell) };
    if c.side.load(Ordering::Relaxed) & SIDE_ENTRIES != 0 {
        clear_accessor_slots(obj, shape);
    }
    let used = (shape.slot_count() as usize).min(INLINE_SLOTS);
    for s in &c.slots[..used] {
        word(s.load(Ordering::Relaxed));
    }
    let Some(s) = obj.storage() else { return };
    walk_retired(raw, s);
    if c.side.load(Ordering::Relaxed) & SIDE_DICT != 0 {
        let old = s.slots.swap(ptr::null_mut(), Ordering::Relaxed);
        if let Some(b) = NonNull::new(old) {
            // SAFETY: exclusive access: no reader of the old shape is left.
            unsafe { free_block(raw, b) };
        }
    }
    if let Some(d) = obj.names() {
        d.for_each_locked(|_, k, w| {
            let k = Key::from_raw(k);
            if k.is_symbol() {
                symbol(k);
            }
            word(w)
        });
    }
    if let Some(d) = obj.sparse() {
        d.for_each_locked(|_, _, w| word(w));
    }
    if let Some(b) = NonNull::new(s.slots.load(Ordering::Relaxed)) {
        // SAFETY: live block with `cap` initialized slots.
        let cap = unsafe { b.as_ref().cap };
        for j in 0..cap as usize {
            // SAFETY: `j < cap`.
            word(unsafe { &*block_items::<AtomicWord>(b).wrapping_add(j) }.load(Ordering::Relaxed));
        }
    }
    if let Some(e) = obj.elements() {
        for j in 0..e.len() {
            word(e.item(j).load(Ordering::Relaxed));
        }
    }
    if let Some(cold) = obj.cold() {
        for e in cold.raw_entries() {
            word(e.getter);
            word(e.setter);
        }
        word(cold.env_word());
    }
}

/// Frees an object's side state. Returns whether it had any (a dead object without side
/// state needs no finalizer work).
///
/// # Safety
/// `cell` is an object cell that is dead (unreachable) and the caller has exclusive access.
pub(crate) unsafe fn finalize(cell: NonNull<ObjectCell>, raw: &dyn slab::RawAlloc) -> bool {
    // SAFETY: the cell is still initialized (contract).
    let obj = unsafe { Obj::from_cell(cell) };
    if !obj.has_side_state_raw() {
        return false;
    }
    let s = obj.storage().expect("side state");
    walk_retired(raw, s);
    if let Some(p) = obj.cold().and_then(|c| c.closure_addr()) {
        // SAFETY: the object owns its closure (every snapshot of its cold state names the
        // same one; retired snapshots never free it) and is dead: nothing calls it again.
        unsafe { super::host::HostBox::from_raw(p) }.free(raw);
    }
    for p in [
        s.slots.load(Ordering::Relaxed),
        s.elems.load(Ordering::Relaxed),
        s.cold.load(Ordering::Relaxed).cast(),
        s.names.load(Ordering::Relaxed),
        s.sparse.load(Ordering::Relaxed),
    ] {
        if let Some(b) = NonNull::new(p) {
            // SAFETY: owned by this dead object only.
            unsafe { free_block(raw, b) };
        }
    }
    #[cfg(not(feature = "wide-object"))]
    {
        let p = obj.c().storage.load(Ordering::Relaxed);
        // SAFETY: allocated in `storage_or_install` with this layout; the object is dead.
        let p = NonNull::new(p).expect("side state implies storage");
        // SAFETY: allocated in `storage_or_install` with this layout; the object is dead.
        unsafe { raw.dealloc(p.cast(), core::alloc::Layout::new::<StorageState>()) };
    }
    true
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::super::testing::{heap, object, teardown};
    use super::super::{ColdDraft, PropEntry, Value};
    use super::*;
    use crate::key::{Key, PropertyKey};
    use crate::slab::LocalCache;

    fn traced(o: Obj<'_>, raw: &dyn slab::RawAlloc) -> Vec<NonNull<ObjectCell>> {
        let mut seen = Vec::new();
        // SAFETY: a live cell; the test has the heap to itself.
        unsafe { trace(o.cell_ptr(), raw, &mut |c| seen.push(c), &mut |_| {}) };
        seen.sort();
        seen
    }

    #[test]
    fn trace_visits_every_reference_in_both_modes_and_finalize_frees_every_block() {
        let (h, c) = heap();
        let cache = LocalCache::default();
        let targets: Vec<Obj<'_>> = (0..6).map(|_| object(&h, &cache, 0)).collect();
        let mut want: Vec<_> = targets.iter().map(|t| t.cell_ptr()).collect();
        want.sort();
        let o = object(&h, &cache, 0);
        let plain = object(&h, &cache, 0);
        let keys: Vec<Key> = (0..=INLINE_SLOTS)
            .map(|i| Key::new(&format!("tr{i}")))
            .collect();
        {
            let g = o.lock();
            g.set_proto(Some(targets[0]));
            let shape = h.shapes.for_keys(&keys);
            g.ensure_slots(h.raw(), shape.slot_count()).unwrap();
            for s in 0..shape.slot_count() {
                g.store_slot(s, Value::UNDEFINED);
            }
            g.store_slot(0, targets[1].value());
            g.store_slot(INLINE_SLOTS as u32, targets[2].value());
            g.set_shape(shape);
            let mut t = g.txn(h.raw());
            t.elements(2).unwrap();
            t.dict_room(true).unwrap();
            t.commit().unwrap();
            g.store_element(o.elements().unwrap(), 1, targets[3].value());
            o.sparse()
                .unwrap()
                .append_locked(1_000_000, targets[4].value());
            let mut d = ColdDraft::empty();
            d.entries.push(PropEntry {
                key: PropertyKey::Name(keys[1]),
                attrs: 8,
                getter: targets[5].value(),
                setter: Value::UNDEFINED,
            });
            g.replace_cold(h.raw(), &d).unwrap();
        }
        assert_eq!(traced(o, h.raw()), want);
        assert!(traced(plain, h.raw()).is_empty());
        // Dictionary mode: the slot values move into the dictionary; the next trace frees
        // the dead external slots.
        let before = c.live();
        {
            let g = o.lock();
            let mut t = g.txn(h.raw());
            t.prepare_dictionary().unwrap();
            t.commit().unwrap();
            g.enter_dictionary(h.shapes.dict());
        }
        assert_eq!(c.live(), before + 1);
        assert_eq!(traced(o, h.raw()), want);
        assert_eq!(c.live(), before, "the external slots went with the trace");
        // SAFETY: the test has the heap to itself; `plain` has no side state to free.
        assert!(!unsafe { finalize(plain.cell_ptr(), h.raw()) });
        teardown(h, cache);
        assert_eq!(c.live(), 0);
    }
}
