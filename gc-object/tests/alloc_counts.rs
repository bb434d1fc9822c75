//! Allocation counts, proved with a counting global allocator (this test binary only) and
//! a counting heap allocator under the heap.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::ptr::NonNull;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use gc_object::{Heap, INLINE_SLOTS, OBJECT_CLASS, OBJECT_CLASS_BYTES, RawAlloc, Value};

struct Counting;

thread_local! {
    static CALLS: Cell<usize> = const { Cell::new(0) };
}

fn bump() {
    let _ = CALLS.try_with(|c| c.set(c.get() + 1));
}

// SAFETY: forwards to `System`, counting calls of the current thread.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        bump();
        // SAFETY: forwarded contract.
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        bump();
        // SAFETY: forwarded contract.
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        bump();
        // SAFETY: forwarded contract.
        unsafe { System.realloc(p, l, n) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn global_calls() -> usize {
    CALLS.with(|c| c.get())
}

/// Counts the heap's own allocations (chunks and side state).
#[derive(Clone, Default)]
struct HeapCounter(Arc<AtomicUsize>);

// SAFETY: forwards to `System`.
unsafe impl RawAlloc for HeapCounter {
    fn alloc(&self, layout: Layout) -> Option<NonNull<u8>> {
        self.0.fetch_add(1, Ordering::Relaxed);
        // SAFETY: layouts from the heap are never zero-sized.
        NonNull::new(unsafe { System.alloc(layout) })
    }
    unsafe fn dealloc(&self, ptr: NonNull<u8>, layout: Layout) {
        // SAFETY: forwarded contract.
        unsafe { System.dealloc(ptr.as_ptr(), layout) }
    }
}

#[test]
fn three_property_literal_is_one_cell_and_nothing_else() {
    let counter = HeapCounter::default();
    let heap = Heap::with_allocator(counter.clone());
    let lit = heap.literal(&["value", "stamp", "previous"]);
    let m = heap.mutator();
    m.object().unwrap(); // the first chunk
    let (g0, h0, c0) = (
        global_calls(),
        counter.0.load(Ordering::Relaxed),
        m.cells_allocated_per_class(),
    );
    let o = m
        .literal(
            &lit,
            &[Value::number(1.0), Value::number(2.0), Value::number(3.0)],
        )
        .unwrap();
    let (g1, h1, c1) = (
        global_calls(),
        counter.0.load(Ordering::Relaxed),
        m.cells_allocated_per_class(),
    );
    assert_eq!(g1 - g0, 0, "global allocator calls");
    assert_eq!(h1 - h0, 0, "heap allocator calls (chunks, side state)");
    let mut diff = c1;
    for (d, c) in diff.iter_mut().zip(c0) {
        *d -= c;
    }
    let mut expect = [0; gc_object::SIZE_CLASSES.len()];
    expect[OBJECT_CLASS] = 1;
    assert_eq!(
        diff, expect,
        "exactly one cell, in the {OBJECT_CLASS_BYTES}-byte class"
    );
    assert!(!o.has_side_state().unwrap());
    assert_eq!(o.get("previous").unwrap(), Value::number(3.0));
    // Building the same object by assignment (shape transitions already cached) is also
    // cell-only.
    let b = m.object().unwrap();
    let g2 = global_calls();
    let h2 = counter.0.load(Ordering::Relaxed);
    b.set("value", Value::number(1.0)).unwrap();
    b.set("stamp", Value::number(1.0)).unwrap();
    b.set("previous", Value::number(1.0)).unwrap();
    assert_eq!(
        (global_calls() - g2, counter.0.load(Ordering::Relaxed) - h2),
        (0, 0)
    );
}

#[test]
fn first_property_past_inline_slots_costs_two_allocations() {
    let counter = HeapCounter::default();
    let heap = Heap::with_allocator(counter.clone());
    let names: Vec<String> = (0..=INLINE_SLOTS).map(|i| format!("p{i}")).collect();
    let m = heap.mutator();
    // Warm the shape transitions so only the object's own allocations are counted.
    let warm = m.object().unwrap();
    for n in &names {
        warm.set(n.as_str(), Value::number(0.0)).unwrap();
    }
    let o = m.object().unwrap();
    for n in &names[..INLINE_SLOTS] {
        o.set(n.as_str(), Value::number(1.0)).unwrap();
    }
    let (g0, h0) = (global_calls(), counter.0.load(Ordering::Relaxed));
    assert!(!o.has_side_state().unwrap() || gc_object::WIDE_OBJECT);
    o.set(names[INLINE_SLOTS].as_str(), Value::number(2.0))
        .unwrap();
    let heap_allocs = counter.0.load(Ordering::Relaxed) - h0;
    let global = global_calls() - g0;
    assert_eq!(global, 0);
    // Narrow layout: storage wrapper + slot block. Wide layout: the slot block only.
    let expect = if gc_object::WIDE_OBJECT { 1 } else { 2 };
    assert_eq!(
        heap_allocs, expect,
        "allocations for the first spilled property"
    );
    assert!(heap_allocs <= 2);
    assert!(o.has_side_state().unwrap());
}

#[test]
fn steady_churn_allocates_only_cells() {
    let counter = HeapCounter::default();
    let mut heap = Heap::with_allocator(counter.clone());
    let lit = heap.literal(&["value", "stamp", "previous"]);
    let rounds = if cfg!(miri) { 3 } else { 6 };
    let per_round = if cfg!(miri) { 300 } else { 20_000 };
    let mut marks = Vec::new();
    for _ in 0..rounds {
        let g0 = global_calls();
        let h0 = counter.0.load(Ordering::Relaxed);
        let cells;
        {
            let m = heap.mutator();
            let mut prev = Value::number(0.0);
            for i in 0..per_round {
                let o = m
                    .literal(&lit, &[Value::number(i as f64), Value::number(1.0), prev])
                    .unwrap();
                prev = o.get("value").unwrap();
            }
            cells = m.cells_allocated();
        }
        let s = heap.collect();
        assert_eq!(s.freed, per_round);
        assert_eq!(
            s.freed_without_finalizer, per_round,
            "no finalizer work for plain objects"
        );
        marks.push((
            global_calls() - g0,
            counter.0.load(Ordering::Relaxed) - h0,
            cells,
        ));
    }
    // After the first round the chunks are reused: no allocator calls at all.
    for &(g, h, cells) in &marks[1..] {
        assert_eq!((g, h), (0, 0), "steady state allocator calls: {marks:?}");
        assert_eq!(cells, per_round);
    }
}
