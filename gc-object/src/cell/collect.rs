//! The unsafe half of the heap: allocation of cells, marking and sweeping.

use core::ptr::NonNull;

use super::handles::HandleStack;
use super::header::{
    CELL_KIND_FIN_REGISTRY, CELL_KIND_OBJECT, CELL_KIND_STRING, CELL_KIND_SYMBOL,
    CELL_KIND_WEAK_MAP, CELL_KIND_WEAK_REF, cell_kind,
};
use super::pacing::Pacing;
use super::shared::{CollectStats, HeapShared};
use super::{
    OBJECT_CLASS, Obj, ObjectCell, Shape, Value, Word, ephemeron, finalize, finreg, init_object,
    symbol, trace, weak,
};
use crate::error::Error;
use crate::key::Key;
use crate::slab::{LocalCache, RawAlloc, Slab};
use crate::sync::{lock, unmodeled};

/// Allocates an object cell through `cache` and initializes it.
#[inline]
pub(crate) fn alloc_object<'h>(
    heap: &'h HeapShared,
    cache: &LocalCache,
    shape: &'h Shape,
    proto: Option<Obj<'h>>,
    tags: u16,
    values: &[Value<'h>],
) -> Result<Obj<'h>, Error> {
    alloc_object_with(heap, cache, shape, shape.slot_count(), proto, tags, values)
}

/// [`alloc_object`] with the shape's slot count at hand (a literal's: a count the
/// compiler sees, where a shape's count is an atomic since a private shape may grow).
#[inline(always)]
pub(crate) fn alloc_object_with<'h>(
    heap: &'h HeapShared,
    cache: &LocalCache,
    shape: &'h Shape,
    used: u32,
    proto: Option<Obj<'h>>,
    tags: u16,
    values: &[Value<'h>],
) -> Result<Obj<'h>, Error> {
    let used = used as usize;
    // Callers pass a shape that fits the inline slots and at most that many values.
    debug_assert_eq!(used, shape.slot_count() as usize);
    debug_assert!(values.len() <= used);
    if used > super::INLINE_SLOTS || values.len() > super::INLINE_SLOTS {
        return Err(Error::TooManyValues);
    }
    let p = heap
        .slab
        .alloc_cell(cache, OBJECT_CLASS)
        .ok_or(Error::OutOfMemory)?;
    // SAFETY: `p` is a fresh cell of the object class of this heap, owned by no one else;
    // `shape` is from this heap's table (borrowed for 'h) and has `used` slots; the counts
    // were checked above.
    Ok(unsafe { init_object(p, shape, used, proto, tags, values) })
}

/// The collector's reusable mark stack (kept in the heap so steady collections do not
/// allocate): cells to trace (of any kind: the header says which; the type is the object
/// cell's for the common case), and the live weak references and weak maps met while
/// marking.
#[derive(Debug, Default)]
pub(crate) struct MarkStack {
    cells: Vec<NonNull<ObjectCell>>,
    weak: Vec<NonNull<u8>>,
    maps: Vec<NonNull<u8>>,
    regs: Vec<NonNull<u8>>,
    /// Symbol keys of live objects (their symbols are marked after tracing).
    symbols: Vec<Key>,
}

impl MarkStack {
    /// Forgets the entries of an interrupted collection.
    pub(crate) fn clear(&mut self) {
        self.cells.clear();
        self.weak.clear();
        self.maps.clear();
        self.regs.clear();
        self.symbols.clear();
    }

    /// Marks `cell`, and queues it for tracing if it was not marked; whether it was new.
    ///
    /// # Safety
    /// `cell` is a live cell of the heap being collected (exclusive access).
    unsafe fn mark(&mut self, cell: NonNull<ObjectCell>) -> bool {
        // SAFETY: contract.
        let fresh = unsafe { Slab::mark(cell.cast()) };
        if fresh {
            self.cells.push(cell);
        }
        fresh
    }

    /// Traces until no queued cell is left. Weak references and weak maps are set aside:
    /// their targets, keys and values are not traced here.
    ///
    /// A cell taken off the stack waits in a small ring for `PREFETCH_DEPTH` more pops
    /// before it is traced, its memory prefetched meanwhile: on a heap bigger than the
    /// caches, marking waits on memory, and this overlaps the waits.
    fn drain(&mut self, raw: &dyn RawAlloc, stats: &mut CollectStats) {
        const PREFETCH_DEPTH: usize = 8;
        let MarkStack {
            cells,
            weak,
            maps,
            regs,
            symbols,
        } = self;
        let mut ring = [None::<NonNull<ObjectCell>>; PREFETCH_DEPTH];
        let (mut at, mut waiting) = (0, 0usize);
        loop {
            let fresh = cells.pop();
            if let Some(c) = fresh {
                prefetch(c.cast());
                waiting += 1;
            }
            let due = core::mem::replace(&mut ring[at], fresh);
            at = (at + 1) % PREFETCH_DEPTH;
            let Some(cell) = due else {
                if waiting == 0 {
                    break;
                }
                continue;
            };
            waiting -= 1;
            stats.marked += 1;
            // SAFETY: `cell` is a live cell of this heap (reached from a root).
            match unsafe { cell_kind(cell.cast()) } {
                CELL_KIND_WEAK_REF => {
                    weak.push(cell.cast());
                    continue;
                }
                CELL_KIND_WEAK_MAP => {
                    maps.push(cell.cast());
                    continue;
                }
                CELL_KIND_FIN_REGISTRY => {
                    regs.push(cell.cast());
                    // Held values are strong; targets and tokens weak.
                    let mut held = |w: Word| {
                        if w.is_cell() {
                            // SAFETY: cell words hold non-null addresses of live cells of
                            // this heap; exclusive access.
                            let child = unsafe { NonNull::new_unchecked(w.cell()) };
                            // SAFETY: as above.
                            if unsafe { Slab::mark(child.cast()) } {
                                cells.push(child);
                            }
                        }
                    };
                    // SAFETY: a live registry cell; exclusive access, marking.
                    unsafe { finreg::visit_held(cell.cast(), &mut held) };
                    continue;
                }
                // Symbols and strings reference nothing.
                CELL_KIND_SYMBOL | CELL_KIND_STRING => continue,
                kind => debug_assert_eq!(kind, CELL_KIND_OBJECT),
            }
            let mut visit = |child: NonNull<ObjectCell>| {
                // SAFETY: references are to live cells of the same heap (stores check the
                // heap); exclusive access.
                if unsafe { Slab::mark(child.cast()) } {
                    cells.push(child);
                }
            };
            // SAFETY: `cell` is a live object cell of this heap (reached from a root);
            // exclusive.
            unsafe { trace(cell, raw, &mut visit, &mut |k| symbols.push(k)) };
        }
    }
}

/// Asks the CPU to bring `p`'s first cache line in (no effect on other targets, or
/// under Miri and loom).
#[inline(always)]
fn prefetch(p: NonNull<u8>) {
    #[cfg(all(target_arch = "x86_64", not(miri), not(loom)))]
    // SAFETY: a prefetch is a hint: it never faults and changes no memory (SSE is part of
    // x86-64).
    #[allow(unused_unsafe)]
    unsafe {
        core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(
            p.as_ptr().cast_const().cast(),
        );
    }
    #[cfg(not(all(target_arch = "x86_64", not(miri), not(loom))))]
    let _ = p;
}

// SAFETY: only used by `collect`, which has exclusive access to the heap.
unsafe impl Send for MarkStack {}
// SAFETY: as for `Send`.
unsafe impl Sync for MarkStack {}

/// Frees the side state of a dead cell of any kind; whether it had any.
///
/// # Safety
/// `cell` is a dead cell of the heap being swept, with the side-state bit; exclusive.
unsafe fn finalize_any(cell: NonNull<u8>, raw: &dyn RawAlloc) -> bool {
    // SAFETY: the cell is still initialized (contract).
    match unsafe { cell_kind(cell) } {
        CELL_KIND_WEAK_MAP => {
            // SAFETY: contract.
            unsafe { ephemeron::finalize_map(cell, raw) };
            true
        }
        CELL_KIND_FIN_REGISTRY => {
            // SAFETY: contract (a dead registry is not in the pending list, which roots its
            // registries, or the heap is being dropped).
            unsafe { finreg::finalize_registry(cell, raw) };
            true
        }
        // SAFETY: contract (only objects and maps get the side-state bit).
        _ => unsafe { finalize(cell.cast(), raw) },
    }
}

/// Marks from the roots (the root table, `handles`, the pending registries), then sweeps,
/// finalizing dead objects.
///
/// Order: the roots and everything they reach strongly; then the ephemeron fixpoint (the
/// value of an entry of a live weak map is marked once its key is, until nothing new is
/// marked); then, with every live cell marked, entries of dead keys are removed,
/// finalization registrations of dead targets become pending and weak references to dead
/// targets are cleared; then the sweep frees the rest. The registries with pending
/// registrations are roots (with the held values) until their callbacks have run.
///
/// # Safety
/// As for [`collect_exclusive`].
unsafe fn mark_and_sweep(
    heap: &HeapShared,
    stack: &mut MarkStack,
    handles: Option<&HandleStack>,
) -> CollectStats {
    let mut stats = CollectStats::default();
    let raw = heap.slab.raw();
    {
        let t = lock(&heap.roots.slots);
        for &cell in t.cells.iter().flatten() {
            // SAFETY: rooted cells are live cells of this heap; exclusive access.
            unsafe { stack.mark(cell) };
        }
    }
    if let Some(h) = handles {
        h.for_each(&mut |w| {
            if w.is_cell()
                && let Some(c) = NonNull::new(w.cell())
            {
                // SAFETY: a handle holds a cell of this heap (checked when it was pushed),
                // alive while the handle is; exclusive access.
                unsafe { stack.mark(c) };
            }
        });
    }
    // Registries with pending registrations are roots until their callbacks ran.
    let mut root = |c: NonNull<u8>| {
        // SAFETY: queued registries are live cells of this heap; exclusive access.
        unsafe { stack.mark(c.cast()) };
    };
    // SAFETY: exclusive access.
    unsafe { finreg::visit_queued(heap, &mut root) };
    stack.drain(raw, &mut stats);
    loop {
        let mut fresh = false;
        // (The list grows while draining: new maps are visited in the next round.)
        let mut i = 0;
        while i < stack.maps.len() {
            let map = stack.maps[i];
            let mut visit = |w: Word| {
                if w.is_cell()
                    && let Some(c) = NonNull::new(w.cell())
                {
                    // SAFETY: entry values are live cells of this heap while their key is.
                    fresh |= unsafe { stack.mark(c) };
                }
            };
            // SAFETY: a live (marked) weak-map cell; exclusive access.
            unsafe { ephemeron::visit_live_values(map, &mut visit) };
            i += 1;
        }
        if !fresh {
            break;
        }
        stack.drain(raw, &mut stats);
    }
    // Symbols that are keys of live objects (a symbol traces nothing, so marking them last
    // marks nothing else).
    for k in stack.symbols.drain(..) {
        // SAFETY: exclusive access.
        if let Some(c) = unsafe { symbol::cell_of_key(heap, k) } {
            // SAFETY: a live symbol cell of this heap; exclusive access.
            if unsafe { Slab::mark(c) } {
                stats.marked += 1;
            }
        }
    }
    // Every live cell is marked now.
    for map in stack.maps.drain(..) {
        // SAFETY: a live (marked) weak-map cell; exclusive access after marking.
        stats.ephemerons_removed += unsafe { ephemeron::remove_dead_keys(map) };
    }
    for r in stack.regs.drain(..) {
        // SAFETY: a live (marked) registry cell of this heap; exclusive, after marking.
        stats.finalizers_queued += unsafe { finreg::queue_dead_targets(heap, r) };
    }
    for w in stack.weak.drain(..) {
        // SAFETY: a live (marked) weak-reference cell; exclusive access after marking.
        if unsafe { weak::clear_if_dead(w) } {
            stats.weak_cleared += 1;
        }
    }
    // SAFETY: exclusive access, after marking.
    stats.symbols_freed = unsafe { symbol::sweep(heap) };
    // SAFETY: exclusive access; every live object was traced, which marked its shape.
    stats.shapes_freed = unsafe { heap.shapes.sweep() } as u64;
    let mut with_side = 0u64;
    let mut fin = |cell, raw: &dyn RawAlloc| {
        // SAFETY: the sweep hands out dead cells of this heap that have side state;
        // exclusive access.
        if unsafe { finalize_any(cell, raw) } {
            with_side += 1;
        }
    };
    // SAFETY: exclusive access (contract): no cache holds a chunk.
    let counts = unsafe { heap.slab.sweep(&mut fin) };
    debug_assert_eq!(with_side, counts.finalized);
    stats.freed = counts.freed;
    stats.finalized = with_side;
    stats.freed_without_finalizer = counts.freed - counts.finalized;
    stats.live_bytes = counts.live_bytes + heap.slab.outstanding_bytes() as u64;
    stats
}

/// The collector's state between collections, in the heap's shared part (locked once per
/// collection): the reusable mark stack, the counts and the pacing.
#[derive(Debug)]
pub(crate) struct Collector {
    marks: MarkStack,
    pub(crate) collections: u64,
    pub(crate) last: CollectStats,
    pacing: Pacing,
    /// The heap's allocation total ([`allocation_total`]) right after the last collection,
    /// and the total at which the next one is due.
    base: u64,
    due_at: u64,
}

impl Default for Collector {
    fn default() -> Self {
        Collector {
            marks: MarkStack::default(),
            collections: 0,
            last: CollectStats::default(),
            pacing: Pacing::DEFAULT,
            base: 0,
            due_at: Pacing::DEFAULT.debt_allowed(0),
        }
    }
}

impl Collector {
    pub(crate) fn pacing(&self) -> Pacing {
        self.pacing
    }

    /// New pacing, applied from the last collection on.
    pub(crate) fn set_pacing(&mut self, p: Pacing) {
        self.pacing = p;
        self.due_at = self
            .base
            .saturating_add(p.debt_allowed(self.last.live_bytes));
    }

    /// The allocation total at which the next collection is due.
    pub(crate) fn due_at(&self) -> u64 {
        self.due_at
    }
}

/// The heap's allocation total: the bytes of every cell mutators handed out (`local`: those
/// of live mutators, which report theirs when they end) plus the bytes its metered
/// allocator holds now. Its growth since the last collection is the allocation debt.
pub(crate) fn allocation_total(heap: &HeapShared, local: u64) -> u64 {
    heap.cell_bytes.load(unmodeled::Ordering::Relaxed)
        + local
        + heap.slab.outstanding_bytes() as u64
}

/// Collects, then schedules the next collection by the pacing; the statistics and the
/// allocation total at which the next one is due. If the allocator panics mid-collection,
/// the mark bits are cleared before the panic goes on (what the interrupted sweep had not
/// freed yet is freed, or leaked, later; nothing live is lost).
///
/// # Safety
/// Exclusive access to `heap` for the whole call: no cache holds a chunk, no other thread
/// uses the heap, and no reference to a cell made before this call is used after it
/// unless the root table or `handles` roots it. `local`: the cell bytes of the live
/// mutator (see [`allocation_total`]).
pub(crate) unsafe fn collect_exclusive(
    heap: &HeapShared,
    handles: Option<&HandleStack>,
    local: u64,
) -> (CollectStats, u64) {
    let mut c = lock(&heap.collector);
    let marks = &mut c.marks;
    // SAFETY: exclusive access (contract).
    let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| unsafe {
        mark_and_sweep(heap, &mut *marks, handles)
    }));
    let s = match run {
        Ok(s) => s,
        Err(panic) => {
            c.marks.clear();
            // SAFETY: exclusive access (contract).
            unsafe { heap.slab.clear_marks() };
            drop(c);
            std::panic::resume_unwind(panic)
        }
    };
    c.collections += 1;
    c.last = s;
    c.base = allocation_total(heap, local);
    c.due_at = c.base.saturating_add(c.pacing.debt_allowed(s.live_bytes));
    (s, c.due_at)
}

/// Collects with the proof of exclusive access: `&mut HeapShared` (no mutator and no
/// reference into the heap exists, as they borrow it).
pub(crate) fn collect(heap: &mut HeapShared) -> CollectStats {
    // SAFETY: `&mut`: the heap's only user; no cache holds a chunk (mutators return theirs
    // when they end, and none is alive).
    unsafe { collect_exclusive(heap, None, 0) }.0
}

/// Finalizes every object (the heap is being dropped).
pub(crate) fn finalize_all(heap: &mut HeapShared) {
    let mut fin = |cell, raw: &dyn RawAlloc| {
        // SAFETY: nothing is marked, so every cell is handed out; the heap is being dropped
        // (exclusive), so every object is dead.
        unsafe { finalize_any(cell, raw) };
    };
    // SAFETY: `&mut`: exclusive access; no cache holds a chunk.
    unsafe { heap.slab.sweep(&mut fin) };
}
