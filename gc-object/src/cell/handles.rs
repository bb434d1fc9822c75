//! The handle stack: a mutator's LIFO stack of rooted value words, in blocks of the heap's
//! allocator that never move, so a handle is the address of its slot (as V8's handles are).
//!
//! ```text
//!  first                                     current (= the block `limit` ends)
//!  +------+----------------------------+      +------+-------------+.............+
//!  | prev | slots[HANDLE_BLOCK_SLOTS]   | ---> | prev | live slots  | free slots  | ---> spare
//!  | next | all live                   | <--- | next |             ^top          ^limit
//!  +------+----------------------------+      +------+-------------+.............+
//! ```
//!
//! Pushing writes at `top` and bumps it; a full block moves on to the next one (a spare kept
//! from before, or a new block). A scope saves `(top, limit)` when it opens and puts them
//! back when it closes: no lock, no atomic, no allocation unless a block is full. The
//! collector marks every slot below `top`; spare blocks past the current one are freed by a
//! collection (one is kept) and when the stack is dropped.

use core::alloc::Layout;
use core::cell::Cell;
use core::ptr::NonNull;

use super::Word;
use crate::error::Error;
use crate::slab::{ADDRESS_LIMIT, RawAlloc};

/// Slots per block of a handle stack (a block is 2 KiB on 64-bit targets: two links and
/// the slots). The first handle of a mutator allocates one block; after that a new block
/// is needed only when this many handles are live past the last one.
pub const HANDLE_BLOCK_SLOTS: usize = 254;

#[repr(C)]
struct Block {
    prev: *mut Block,
    next: *mut Block,
    slots: [Word; HANDLE_BLOCK_SLOTS],
}

// The slots end the block, so a block is found from its end (`limit`).
const _: () = assert!(
    core::mem::size_of::<Block>()
        == 2 * core::mem::size_of::<usize>() + HANDLE_BLOCK_SLOTS * core::mem::size_of::<Word>()
);
#[cfg(target_pointer_width = "64")]
const _: () = assert!(core::mem::size_of::<Block>() == 2048);

/// Where the stack stood: what a scope saves when it opens and puts back when it closes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Mark {
    top: *mut Word,
    limit: *mut Word,
}

/// A LIFO stack of rooted words (see the module docs). Used by one thread at a time (its
/// mutator's); `Send` with the mutator, not `Sync`.
#[derive(Debug)]
pub(crate) struct HandleStack {
    /// The next free slot (null before the first push).
    top: Cell<*mut Word>,
    /// The end of the current block's slots (`top == limit`: the block is full).
    limit: Cell<*mut Word>,
    /// The first block (null before the first push).
    first: Cell<*mut Block>,
}

// SAFETY: the blocks are owned by the stack; moving it to another thread moves them.
unsafe impl Send for HandleStack {}

impl Default for HandleStack {
    fn default() -> Self {
        HandleStack {
            top: Cell::new(core::ptr::null_mut()),
            limit: Cell::new(core::ptr::null_mut()),
            first: Cell::new(core::ptr::null_mut()),
        }
    }
}

fn block_layout() -> Layout {
    Layout::new::<Block>()
}

/// The block whose slots end at `limit` (null for the null limit).
fn block_of(limit: *mut Word) -> *mut Block {
    if limit.is_null() {
        return core::ptr::null_mut();
    }
    limit
        .cast::<u8>()
        .wrapping_sub(core::mem::size_of::<Block>())
        .cast()
}

impl HandleStack {
    /// Where the stack stands now.
    #[inline]
    pub(crate) fn mark(&self) -> Mark {
        Mark {
            top: self.top.get(),
            limit: self.limit.get(),
        }
    }

    /// Drops every slot pushed since `mark` (which must be a mark of this stack taken at or
    /// below the current top: scopes close in LIFO order).
    #[inline]
    pub(crate) fn truncate(&self, mark: Mark) {
        self.top.set(mark.top);
        self.limit.set(mark.limit);
    }

    /// Pushes `w`; the address of its slot, which stays valid until the slot is truncated
    /// away and then a collection or `free_all` runs. Fails only when a new block is needed
    /// and `raw` has no memory.
    #[inline]
    pub(crate) fn push(&self, raw: &dyn RawAlloc, w: Word) -> Result<NonNull<Word>, Error> {
        let top = self.top.get();
        if top != self.limit.get() {
            // SAFETY: `top < limit`: a free slot of the current block, which is alive (blocks
            // are freed only past the current one, or with the stack).
            unsafe { top.write(w) };
            self.top.set(top.wrapping_add(1));
            // SAFETY: non-null: `top != limit` means a block is current.
            return Ok(unsafe { NonNull::new_unchecked(top) });
        }
        self.push_slow(raw, w)
    }

    #[cold]
    #[inline(never)]
    fn push_slow(&self, raw: &dyn RawAlloc, w: Word) -> Result<NonNull<Word>, Error> {
        let current = block_of(self.limit.get());
        let next = if current.is_null() {
            self.first.get()
        } else {
            // SAFETY: the current block is alive.
            unsafe { (*current).next }
        };
        let block = if next.is_null() {
            let p = raw.alloc(block_layout()).ok_or(Error::OutOfMemory)?;
            if p.as_ptr()
                .addr()
                .checked_add(block_layout().size())
                .is_none_or(|end| end > ADDRESS_LIMIT)
            {
                // A handle is the slot's address in a value word's payload: it must fit.
                // SAFETY: allocated just above with this layout, not used.
                unsafe { raw.dealloc(p, block_layout()) };
                return Err(Error::OutOfMemory);
            }
            let p = p.cast::<Block>().as_ptr();
            // Only the links need writing (`#[repr(C)]`: `prev`, then `next`): a slot is
            // written before `top` passes it, and only slots below `top` are read.
            let links = p.cast::<*mut Block>();
            // SAFETY: a fresh allocation of a `Block`: its first field, writable.
            unsafe { links.write(current) };
            // SAFETY: as above, its second field.
            unsafe { links.wrapping_add(1).write(core::ptr::null_mut()) };
            if current.is_null() {
                self.first.set(p);
            } else {
                // SAFETY: the current block is alive; its `next` was null (checked above).
                unsafe { (*current).next = p };
            }
            p
        } else {
            next
        };
        // SAFETY: `block` is alive; its slot array lies inside it.
        let slots = unsafe { (&raw mut (*block).slots).cast::<Word>() };
        self.top.set(slots);
        self.limit.set(slots.wrapping_add(HANDLE_BLOCK_SLOTS));
        self.push(raw, w)
    }

    /// Calls `f` with every live slot's word (the ones below `top`), oldest first.
    pub(crate) fn for_each(&self, f: &mut dyn FnMut(Word)) {
        let current = block_of(self.limit.get());
        if current.is_null() {
            return;
        }
        let mut b = self.first.get();
        loop {
            // SAFETY: blocks from `first` to `current` are alive and linked.
            let slots = unsafe { (&raw mut (*b).slots).cast::<Word>() };
            let end = if b == current {
                self.top.get()
            } else {
                slots.wrapping_add(HANDLE_BLOCK_SLOTS)
            };
            let mut p = slots;
            while p != end {
                // SAFETY: a slot below `top` (or of a full earlier block): written by a push.
                f(unsafe { p.read() });
                p = p.wrapping_add(1);
            }
            if b == current {
                return;
            }
            // SAFETY: as above.
            b = unsafe { (*b).next };
        }
    }

    /// Frees the blocks past the current block's successor (one spare is kept, so a scope
    /// that keeps crossing a block boundary does not allocate each time).
    ///
    /// # Safety
    /// No handle to a slot of those blocks is used again (they are past `top`: every scope
    /// that pushed there has closed, and the caller holds the stack's innermost scope
    /// exclusively, so none of their handles is alive).
    pub(crate) unsafe fn free_spares(&self, raw: &dyn RawAlloc) {
        let current = block_of(self.limit.get());
        let keep = if current.is_null() {
            self.first.get()
        } else {
            // SAFETY: the current block is alive.
            unsafe { (*current).next }
        };
        if keep.is_null() {
            return;
        }
        // SAFETY: `keep` is alive; the blocks after it are freed below, so its link goes.
        let mut b = unsafe { core::mem::replace(&mut (*keep).next, core::ptr::null_mut()) };
        while !b.is_null() {
            // SAFETY: alive, unlinked above or by the previous round, unused (contract).
            let next = unsafe { (*b).next };
            let block = NonNull::new(b).expect("a linked block").cast();
            // SAFETY: allocated by `push_slow` from `raw` with this layout.
            unsafe { raw.dealloc(block, block_layout()) };
            b = next;
        }
    }

    /// Frees every block. The stack is empty afterwards.
    ///
    /// # Safety
    /// No handle of this stack is used again, and `raw` is the allocator its blocks came
    /// from.
    pub(crate) unsafe fn free_all(&self, raw: &dyn RawAlloc) {
        let mut b = self.first.get();
        while !b.is_null() {
            // SAFETY: alive until freed just below.
            let next = unsafe { (*b).next };
            let block = NonNull::new(b).expect("a linked block").cast();
            // SAFETY: allocated by `push_slow` from `raw` with this layout; unused (contract).
            unsafe { raw.dealloc(block, block_layout()) };
            b = next;
        }
        self.first.set(core::ptr::null_mut());
        self.top.set(core::ptr::null_mut());
        self.limit.set(core::ptr::null_mut());
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::super::testing::Counter;
    use super::*;

    fn w(i: u64) -> Word {
        Word::from_bits(i)
    }

    fn words(s: &HandleStack) -> Vec<u64> {
        let mut out = Vec::new();
        s.for_each(&mut |x| out.push(x.bits()));
        out
    }

    #[test]
    fn pushes_truncations_and_block_boundaries() {
        let c = Counter::default();
        let s = HandleStack::default();
        assert!(words(&s).is_empty());
        let outer = s.mark();
        let n = 2 * HANDLE_BLOCK_SLOTS + 3;
        let mut slots = Vec::new();
        for i in 0..n as u64 {
            slots.push(s.push(&c, w(i)).unwrap());
        }
        assert_eq!(c.live(), 3, "three blocks");
        assert_eq!(words(&s), (0..n as u64).collect::<Vec<_>>());
        for (i, p) in slots.iter().enumerate() {
            // SAFETY: live slots.
            assert_eq!(unsafe { p.as_ptr().read() }.bits(), i as u64);
        }
        // A scope opened exactly at a block boundary, then closed.
        let mut kept = Vec::new();
        for i in 0..(HANDLE_BLOCK_SLOTS - 3) as u64 {
            kept.push(s.push(&c, w(1000 + i)).unwrap());
        }
        let at_end = s.mark();
        assert_eq!(at_end.top, at_end.limit);
        s.push(&c, w(7)).unwrap();
        assert_eq!(c.live(), 4);
        s.truncate(at_end);
        assert_eq!(words(&s).len(), 3 * HANDLE_BLOCK_SLOTS);
        // The fourth block is the spare: pushing again does not allocate.
        s.push(&c, w(8)).unwrap();
        assert_eq!(c.live(), 4);
        s.truncate(outer);
        assert!(words(&s).is_empty());
        // SAFETY: no handle is used again.
        unsafe { s.free_spares(&c) };
        assert_eq!(c.live(), 1, "the first block is kept as the spare");
        s.push(&c, w(9)).unwrap();
        assert_eq!(words(&s), [9]);
        assert_eq!(c.live(), 1);
        // SAFETY: no handle is used again.
        unsafe { s.free_all(&c) };
        assert_eq!(c.live(), 0);
        assert!(words(&s).is_empty());
    }

    #[test]
    fn a_failed_block_allocation_changes_nothing() {
        struct Never;
        // SAFETY: never hands out memory.
        unsafe impl RawAlloc for Never {
            fn alloc(&self, _: Layout) -> Option<NonNull<u8>> {
                None
            }
            unsafe fn dealloc(&self, _: NonNull<u8>, _: Layout) {
                unreachable!("nothing was allocated")
            }
        }
        let s = HandleStack::default();
        assert_eq!(s.push(&Never, w(1)), Err(Error::OutOfMemory));
        assert_eq!(s.mark(), HandleStack::default().mark());
        let c = Counter::default();
        for i in 0..HANDLE_BLOCK_SLOTS as u64 {
            s.push(&c, w(i)).unwrap();
        }
        let full = s.mark();
        assert_eq!(s.push(&Never, w(1)), Err(Error::OutOfMemory));
        assert_eq!(s.mark(), full);
        assert_eq!(words(&s).len(), HANDLE_BLOCK_SLOTS);
        // SAFETY: no handle is used again.
        unsafe { s.free_all(&c) };
        assert_eq!(c.live(), 0);
    }
}
