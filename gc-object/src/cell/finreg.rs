//! Finalization registries (JS `FinalizationRegistry`): a registry holds a host callback
//! and registrations of (target, held value, unregister token). Targets and tokens are
//! held weakly, held values strongly. The collection that frees a target turns its
//! registration *pending*: the held value stays alive, and the registry is linked into the
//! heap's list of registries with pending work, which roots it. The callbacks run later,
//! outside the collection, when the host asks for them ([`take_pending`], one at a time):
//! a registration is taken out of its table before its callback runs, so it runs once.
//!
//! ```text
//!  RegCell (40 bytes, 64-byte class)                table block (side block)
//!  +------+------+--------+--------+---------+      +--------+-------------------------+
//!  | kind | rsvd | lock   | queued | pending |      | header | (target, held, token)   |
//!  +------+------+--------+--------+---------+      | cap,   | ... in insertion order; |
//!  | table ----------------------------------+----> | used,  | target: object, PENDING |
//!  | callback -> HostBox (host closure)      |      | live   | or TOMB (free)          |
//!  | next: the heap's pending list           |      +--------+-------------------------+
//!  | cursor: first entry that may be pending |
//!  +-----------------------------------------+
//! ```
//!
//! A dead registry (unreachable, nothing pending) is freed with its table and its
//! callback; its registrations never call back (as in JS).

use core::ptr::{self, NonNull};

use super::gc::{Gc, Kind};
use super::header::{CELL_KIND_FIN_REGISTRY, CellHeader};
use super::host::{Family, HostBox, HostRef};
use super::shared::HeapShared;
use super::side::{BlockHeader, alloc_block, block_items, free_block};
use super::value::TAG_SPECIAL;
use super::{AtomicWord, Obj, Value, Word};
use crate::error::Error;
use crate::slab::{self, LocalCache, RawAlloc, class_of};
use crate::sync::{AtomicPtr, AtomicU8, AtomicU32, Ordering, lock, spin_wait};

#[repr(C)]
pub(crate) struct RegCell {
    header: CellHeader,
    lock: AtomicU8,
    /// In the heap's pending list (collector, or the list's mutex).
    queued: AtomicU8,
    /// Registrations whose target was collected and whose callback has not run.
    pending: AtomicU32,
    /// Registrations (null until the first); replaced under the lock.
    table: AtomicPtr<BlockHeader>,
    /// The callback (a [`HostBox`]); immutable, freed with the cell.
    callback: *mut u8,
    /// Next registry of the heap's pending list.
    next: AtomicPtr<RegCell>,
    /// No entry before this index is pending (under the lock).
    cursor: AtomicU32,
}

#[repr(C)]
struct Entry {
    target: AtomicWord,
    held: AtomicWord,
    token: AtomicWord,
}

/// Index into [`SIZE_CLASSES`](crate::SIZE_CLASSES) of the class finalization registries are allocated from.
pub const FINALIZATION_REGISTRY_CLASS: usize = match class_of(core::mem::size_of::<RegCell>()) {
    Some(c) => c,
    None => panic!("registry cell larger than the largest slab class"),
};

#[cfg(not(loom))]
const _: () = assert!(crate::slab::SIZE_CLASSES[FINALIZATION_REGISTRY_CLASS] == 64);

/// Block kind of a registry's table.
const BLOCK_REGISTRY: u8 = 7;
/// Entries of a registry's first table.
const MIN_CAP: u32 = if cfg!(loom) { 2 } else { 8 };
/// Target word of a registration whose target was collected.
const PENDING: Word = Word::from_bits(TAG_SPECIAL | 5);
/// Target word of a free entry.
const TOMB: Word = Word::HOLE;

/// The heap's list of registries with pending registrations (it roots them).
#[derive(Debug, Default)]
pub(crate) struct PendingList {
    head: Option<NonNull<RegCell>>,
}

// SAFETY: the list only links cells of its heap; it is behind the heap's mutex.
unsafe impl Send for PendingList {}

/// A finalization registry (JS `FinalizationRegistry`) of a heap borrowed for `'h`: after
/// a collection frees a registered target, the registry's callback is queued with the
/// held value, and runs when the host calls
/// [`Heap::run_finalizers`](crate::Heap::run_finalizers). `Copy`, 8 bytes, `Send + Sync`
/// (operations take the registry's one-byte lock); itself a heap cell, collected when
/// unreachable and nothing of it is pending (its callbacks then never run).
pub type FinalizationRegistry<'h> = Gc<'h, FinalizationRegistryKind>;

/// The kind of a finalization-registry cell:
/// [`FinalizationRegistry<'h>`](FinalizationRegistry) is
/// `Gc<'h, FinalizationRegistryKind>`.
#[derive(Debug)]
pub enum FinalizationRegistryKind {}

// SAFETY: every registry cell starts with a header of kind `CELL_KIND_FIN_REGISTRY`
// (written when it is made); its table is read and written only under the registry's lock
// (or exclusively by the collector); the callback is `Send + Sync` and immutable.
unsafe impl Kind for FinalizationRegistryKind {
    const KIND: u8 = CELL_KIND_FIN_REGISTRY;
    const NAME: &'static str = "FinalizationRegistry";
}

/// Holds a registry's lock.
struct Guard<'a>(&'a RegCell);

impl Drop for Guard<'_> {
    fn drop(&mut self) {
        self.0.lock.store(0, Ordering::Release);
    }
}

/// The entries of a table block.
#[derive(Clone, Copy)]
struct Table(NonNull<BlockHeader>);

impl Table {
    fn head(&self) -> &BlockHeader {
        // SAFETY: a live table block (under the lock or exclusive access).
        unsafe { self.0.as_ref() }
    }
    fn cap(&self) -> u32 {
        self.head().cap
    }
    fn entry(&self, i: u32) -> &Entry {
        debug_assert!(i < self.cap());
        // SAFETY: `i < cap`; every entry was initialized when the block was made.
        unsafe { &*block_items::<Entry>(self.0).wrapping_add(i as usize) }
    }
    /// Entries in use or freed since the last compaction (a prefix).
    fn used(&self) -> u32 {
        self.head().len.load(Ordering::Relaxed)
    }
    /// Registrations (armed or pending).
    fn live(&self) -> u32 {
        self.head().count.load(Ordering::Relaxed)
    }
    fn set_counts(&self, used: u32, live: u32) {
        self.head().len.store(used, Ordering::Relaxed);
        self.head().count.store(live, Ordering::Relaxed);
    }
    fn clear(&self, i: u32) {
        let e = self.entry(i);
        e.target.store(TOMB, Ordering::Relaxed);
        e.held.store(Word::UNDEFINED, Ordering::Relaxed);
        e.token.store(Word::UNDEFINED, Ordering::Relaxed);
    }
}

fn alloc_table(raw: &dyn RawAlloc, cap: u32) -> Result<Table, Error> {
    let b = alloc_block(raw, BLOCK_REGISTRY, core::mem::size_of::<Entry>(), cap)?;
    let items = block_items::<Entry>(b);
    for i in 0..cap as usize {
        let e = Entry {
            target: AtomicWord::new(TOMB),
            held: AtomicWord::new(Word::UNDEFINED),
            token: AtomicWord::new(Word::UNDEFINED),
        };
        // SAFETY: `i < cap`: inside the fresh block.
        unsafe { items.wrapping_add(i).write(e) };
    }
    Ok(Table(b))
}

/// Copies the registrations of `from` to the start of `to` (which has room); returns how
/// many.
fn copy_live(from: Table, to: Table) -> u32 {
    let mut n = 0;
    for i in 0..from.used() {
        let e = from.entry(i);
        let t = e.target.load(Ordering::Relaxed);
        if t == TOMB {
            continue;
        }
        let d = to.entry(n);
        d.target.store(t, Ordering::Relaxed);
        d.held
            .store(e.held.load(Ordering::Relaxed), Ordering::Relaxed);
        d.token
            .store(e.token.load(Ordering::Relaxed), Ordering::Relaxed);
        n += 1;
    }
    n
}

impl<'h> FinalizationRegistry<'h> {
    fn c(&self) -> &'h RegCell {
        // SAFETY: type invariant: the cell is alive for `'h`.
        unsafe { self.cell.cast::<RegCell>().as_ref() }
    }

    fn heap(&self) -> &'h HeapShared {
        // SAFETY: the cell is live (type invariant).
        let owner = unsafe { slab::owner_of(self.cell.cast()) };
        // SAFETY: its chunk's owner is the `HeapShared` of the heap borrowed for 'h.
        unsafe { &*owner.cast::<HeapShared>() }
    }

    fn lock(&self) -> Guard<'h> {
        let c = self.c();
        let mut round = 0;
        while c
            .lock
            .compare_exchange_weak(0, 1, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            spin_wait(&mut round);
        }
        Guard(c)
    }

    fn table(&self, _g: &Guard<'_>) -> Option<Table> {
        NonNull::new(self.c().table.load(Ordering::Acquire)).map(Table)
    }

    fn mine(&self, v: Value<'_>) -> bool {
        v.heap_tag()
            .is_none_or(|h| h == (self.heap() as *const HeapShared).cast())
    }

    /// Registers `target`: after the collection that frees it, the callback is queued with
    /// `held`. `token`, if given, can [`unregister`](Self::unregister) it (held weakly, as
    /// the target). Errors: [`Error::ForeignHeap`] for a target, value or token of another
    /// heap, [`Error::HeldIsTarget`] if `held` is the target itself (it would keep the
    /// target alive), allocation failure (nothing registered).
    pub fn register(
        self,
        target: Obj<'h>,
        held: Value<'h>,
        token: Option<Obj<'h>>,
    ) -> Result<(), Error> {
        let token = token.map_or(Value::UNDEFINED, |t| t.value());
        if !self.mine(target.value()) || !self.mine(held) || !self.mine(token) {
            return Err(Error::ForeignHeap);
        }
        if held.same_value(target.value()) {
            return Err(Error::HeldIsTarget);
        }
        let raw = self.heap().raw();
        let g = self.lock();
        let mut t = match self.table(&g) {
            Some(t) => t,
            None => {
                let t = alloc_table(raw, MIN_CAP)?;
                self.c().table.store(t.0.as_ptr(), Ordering::Release);
                t
            }
        };
        if t.used() == t.cap() {
            // Full: compact in place if at most half is live, else copy into a table twice
            // the size.
            let cap = if t.live() * 2 > t.cap() {
                t.cap().checked_mul(2).ok_or(Error::OutOfMemory)?
            } else {
                t.cap()
            };
            if cap == t.cap() {
                let live = copy_live(t, t);
                for i in live..t.used() {
                    t.clear(i);
                }
                t.set_counts(live, live);
            } else {
                let nt = alloc_table(raw, cap)?;
                let live = copy_live(t, nt);
                nt.set_counts(live, live);
                self.c().table.store(nt.0.as_ptr(), Ordering::Release);
                // SAFETY: replaced under the lock, which every reader takes.
                unsafe { free_block(raw, t.0) };
                t = nt;
            }
            self.c().cursor.store(0, Ordering::Relaxed);
        }
        let i = t.used();
        let e = t.entry(i);
        e.held.store(held.word, Ordering::Relaxed);
        e.token.store(token.word, Ordering::Relaxed);
        e.target.store(target.value().word, Ordering::Relaxed);
        t.set_counts(i + 1, t.live() + 1);
        drop(g);
        Ok(())
    }

    /// Removes every registration made with `token` (pending ones included: their
    /// callbacks will not run); how many. [`Error::ForeignHeap`] for a token of another
    /// heap.
    pub fn unregister(self, token: Obj<'h>) -> Result<usize, Error> {
        if !self.mine(token.value()) {
            return Err(Error::ForeignHeap);
        }
        let w = token.value().word;
        let g = self.lock();
        let Some(t) = self.table(&g) else {
            return Ok(0);
        };
        let mut removed = 0;
        for i in 0..t.used() {
            let e = t.entry(i);
            let target = e.target.load(Ordering::Relaxed);
            if target != TOMB && e.token.load(Ordering::Relaxed) == w {
                if target == PENDING {
                    let p = &self.c().pending;
                    p.store(p.load(Ordering::Relaxed) - 1, Ordering::Relaxed);
                }
                t.clear(i);
                removed += 1;
            }
        }
        t.set_counts(t.used(), t.live() - removed);
        Ok(removed as usize)
    }

    /// Registrations whose callback has not run (their targets alive, or pending).
    pub fn len(self) -> usize {
        let g = self.lock();
        self.table(&g).map_or(0, |t| t.live() as usize)
    }

    /// No registrations?
    pub fn is_empty(self) -> bool {
        self.len() == 0
    }

    /// Registrations whose target was collected and whose callback waits for
    /// [`Heap::run_finalizers`](crate::Heap::run_finalizers).
    pub fn pending(self) -> usize {
        let _g = self.lock();
        self.c().pending.load(Ordering::Relaxed) as usize
    }

    /// This registry as a value (to store it in an object).
    pub fn value(self) -> Value<'h> {
        // SAFETY: the word names this live cell.
        unsafe { Value::from_word(Word::from_other_cell(self.cell.cast())) }
    }

    /// Runs the callback with `held` (the heap layer passes its mutator).
    pub(crate) fn run_callback<'a, Fam: Family<Val<'h> = Value<'h>>>(
        self,
        m: Fam::Mut<'a, 'h>,
        held: Value<'h>,
    ) -> Result<(), Error>
    where
        'h: 'a,
    {
        let p = NonNull::new(self.c().callback).expect("registries have a callback");
        // SAFETY: the cell owns the box and keeps it until it is freed, which needs
        // exclusive access (no collection runs while a reference of 'h is in use).
        let b = unsafe { HostRef::from_raw(p) };
        b.call::<Fam>(m, [held, Value::UNDEFINED, Value::UNDEFINED])
            .map(|_| ())
    }
}

impl<'h> Value<'h> {
    /// The finalization registry, if this is one.
    pub fn as_finalization_registry(self) -> Option<FinalizationRegistry<'h>> {
        let cell = self.other_cell()?;
        // SAFETY: a cell word of a `Value<'h>` names a live cell; its kind is immutable.
        unsafe { FinalizationRegistry::downcast(cell) }
    }
}

impl<'h> From<FinalizationRegistry<'h>> for Value<'h> {
    fn from(r: FinalizationRegistry<'h>) -> Self {
        r.value()
    }
}

/// Allocates a registry with `callback` through `cache` (on failure the callback is
/// freed).
pub(crate) fn alloc_registry<'h>(
    heap: &'h HeapShared,
    cache: &LocalCache,
    callback: HostBox,
) -> Result<FinalizationRegistry<'h>, Error> {
    let Some(p) = heap.slab.alloc_cell(cache, FINALIZATION_REGISTRY_CLASS) else {
        callback.free(heap.raw());
        return Err(Error::OutOfMemory);
    };
    let cell = RegCell {
        header: CellHeader {
            kind: CELL_KIND_FIN_REGISTRY,
            reserved: 0,
        },
        lock: AtomicU8::new(0),
        queued: AtomicU8::new(0),
        pending: AtomicU32::new(0),
        table: AtomicPtr::new(ptr::null_mut()),
        callback: callback.into_raw(),
        next: AtomicPtr::new(ptr::null_mut()),
        cursor: AtomicU32::new(0),
    };
    // SAFETY: `p` is a fresh cell of at least 64 bytes, aligned to its size, owned by no one
    // else.
    unsafe { p.cast::<RegCell>().as_ptr().write(cell) };
    // The sweep frees the callback and table of a dead registry.
    // SAFETY: the cell is live.
    unsafe { slab::note_side_state(p) };
    // SAFETY: just initialized; alive for 'h.
    Ok(unsafe { FinalizationRegistry::from_cell(p) })
}

/// Takes one pending registration: its registry (alive for 'h: no collection runs while
/// the heap is borrowed) and held value. The registration is gone from its table before
/// this returns, so its callback can run only once.
pub(crate) fn take_pending(heap: &HeapShared) -> Option<(FinalizationRegistry<'_>, Value<'_>)> {
    let mut l = lock(&heap.pending);
    loop {
        let cell = l.head?;
        // SAFETY: registries in the pending list are rooted by it: alive.
        let r = unsafe { FinalizationRegistry::from_cell(cell) };
        let c = r.c();
        let g = r.lock();
        let mut found = None;
        if c.pending.load(Ordering::Relaxed) > 0
            && let Some(t) = r.table(&g)
        {
            for i in c.cursor.load(Ordering::Relaxed)..t.used() {
                let e = t.entry(i);
                if e.target.load(Ordering::Relaxed) == PENDING {
                    let held = e.held.load(Ordering::Relaxed);
                    t.clear(i);
                    t.set_counts(t.used(), t.live() - 1);
                    c.cursor.store(i + 1, Ordering::Relaxed);
                    c.pending
                        .store(c.pending.load(Ordering::Relaxed) - 1, Ordering::Relaxed);
                    found = Some(held);
                    break;
                }
            }
        }
        if found.is_none() || c.pending.load(Ordering::Relaxed) == 0 {
            // Nothing more pending here: unlink (the registry is an ordinary cell again).
            l.head = NonNull::new(c.next.swap(ptr::null_mut(), Ordering::Relaxed));
            c.queued.store(0, Ordering::Relaxed);
        }
        drop(g);
        if let Some(held) = found {
            // SAFETY: a held value was traced (kept alive) by every collection while its
            // registration existed; the heap is borrowed.
            return Some((r, unsafe { Value::from_word(held) }));
        }
    }
}

fn cell_of<'a>(cell: NonNull<u8>) -> &'a RegCell {
    // SAFETY: callers pass a live registry cell with exclusive access.
    unsafe { cell.cast::<RegCell>().as_ref() }
}

fn table_of(c: &RegCell) -> Option<Table> {
    NonNull::new(c.table.load(Ordering::Relaxed)).map(Table)
}

/// Calls `visit` on every registry of the pending list (the collector marks them: roots).
///
/// # Safety
/// Exclusive access to the heap.
pub(crate) unsafe fn visit_queued(heap: &HeapShared, visit: &mut dyn FnMut(NonNull<u8>)) {
    let l = lock(&heap.pending);
    let mut p = l.head;
    while let Some(c) = p {
        visit(c.cast());
        p = NonNull::new(cell_of(c.cast()).next.load(Ordering::Relaxed));
    }
}

/// Calls `visit` on the held value of every registration of a live registry (held
/// strongly); targets and tokens are not visited.
///
/// # Safety
/// `cell` is a live registry cell; exclusive access, marking.
pub(crate) unsafe fn visit_held(cell: NonNull<u8>, visit: &mut dyn FnMut(Word)) {
    let Some(t) = table_of(cell_of(cell)) else {
        return;
    };
    for i in 0..t.used() {
        let e = t.entry(i);
        if e.target.load(Ordering::Relaxed) != TOMB {
            visit(e.held.load(Ordering::Relaxed));
        }
    }
}

/// After marking: every registration of a live registry whose target is unmarked becomes
/// pending (the registry joins the pending list), tokens that are unmarked are forgotten.
/// Returns how many became pending.
///
/// # Safety
/// `cell` is a live (marked) registry cell of `heap`; exclusive access, after marking.
pub(crate) unsafe fn queue_dead_targets(heap: &HeapShared, cell: NonNull<u8>) -> u64 {
    let c = cell_of(cell);
    let Some(t) = table_of(c) else { return 0 };
    let mut queued = 0u32;
    let dead = |w: Word| {
        let p = NonNull::new(w.cell().cast::<u8>()).expect("cell words are non-null");
        // SAFETY: a registered target or token is a live cell of this heap until this
        // collection (exclusive access).
        !unsafe { slab::is_marked(p) }
    };
    for i in 0..t.used() {
        let e = t.entry(i);
        let target = e.target.load(Ordering::Relaxed);
        if target == TOMB {
            continue;
        }
        let token = e.token.load(Ordering::Relaxed);
        if token.is_cell() && dead(token) {
            e.token.store(Word::UNDEFINED, Ordering::Relaxed);
        }
        if target != PENDING && dead(target) {
            e.target.store(PENDING, Ordering::Relaxed);
            queued += 1;
        }
    }
    if queued > 0 {
        c.pending.store(
            c.pending.load(Ordering::Relaxed) + queued,
            Ordering::Relaxed,
        );
        c.cursor.store(0, Ordering::Relaxed);
        if c.queued.load(Ordering::Relaxed) == 0 {
            let mut l = lock(&heap.pending);
            let old = l.head.map_or(ptr::null_mut(), NonNull::as_ptr);
            c.next.store(old, Ordering::Relaxed);
            c.queued.store(1, Ordering::Relaxed);
            l.head = Some(cell.cast());
        }
    }
    u64::from(queued)
}

/// Frees a dead registry's table and callback.
///
/// # Safety
/// `cell` is a dead registry cell (not in the pending list, or the heap is being
/// dropped) and the caller has exclusive access.
pub(crate) unsafe fn finalize_registry(cell: NonNull<u8>, raw: &dyn RawAlloc) {
    let c = cell_of(cell);
    if let Some(t) = table_of(c) {
        // SAFETY: the registry is dead: no one can read its table.
        unsafe { free_block(raw, t.0) };
    }
    if let Some(p) = NonNull::new(c.callback) {
        // SAFETY: the cell owned the box; it is dead, so this is its last use.
        unsafe { HostBox::from_raw(p) }.free(raw);
    }
}
