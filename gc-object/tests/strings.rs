//! String values as heap cells: text by content, freed when unreachable (short ones in
//! slab cells, long ones in large cells), refused by another heap's objects, and a million
//! distinct strings built and dropped return live bytes to the baseline after a collection
//! (counting global allocator). Interned names are bounded, not freed.
#![cfg(not(loom))]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::ptr::NonNull;

use gc_object::{Error, Heap, Key, LARGEST_CLASS, MAX_INTERNED_BYTES, RawAlloc, Value};

struct Counting;

thread_local! {
    static LIVE: Cell<isize> = const { Cell::new(0) };
}

fn add(n: isize) {
    let _ = LIVE.try_with(|c| c.set(c.get() + n));
}

// SAFETY: forwards to `System`, counting the live bytes of the current thread.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        add(l.size() as isize);
        // SAFETY: forwarded contract.
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        add(-(l.size() as isize));
        // SAFETY: forwarded contract.
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        add(n as isize - l.size() as isize);
        // SAFETY: forwarded contract.
        unsafe { System.realloc(p, l, n) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn live() -> isize {
    LIVE.with(|c| c.get())
}

/// The global allocator without the process-wide chunk pool (`is_global` is false), so a
/// released chunk goes back to the allocator and shows in the count.
struct Unpooled;

// SAFETY: forwards to the global allocator.
unsafe impl RawAlloc for Unpooled {
    fn alloc(&self, layout: Layout) -> Option<NonNull<u8>> {
        // SAFETY: the heap never asks for zero-sized layouts.
        NonNull::new(unsafe { std::alloc::alloc(layout) })
    }
    unsafe fn dealloc(&self, ptr: NonNull<u8>, layout: Layout) {
        // SAFETY: forwarded contract.
        unsafe { std::alloc::dealloc(ptr.as_ptr(), layout) }
    }
}

#[test]
#[cfg_attr(miri, ignore = "a million cells: too slow under Miri")]
fn a_million_distinct_strings_return_to_the_baseline() {
    const RING: u32 = 256;
    const ROUNDS: u32 = 10;
    const PER_ROUND: u32 = 100_000;
    let mut heap = Heap::with_allocator(Unpooled);
    let ring = {
        let mut m = heap.mutator();
        let a = m.array().unwrap();
        for i in 0..RING {
            a.push(m.string(&format!("first {i}")).unwrap().value())
                .unwrap();
        }
        heap.root(a).unwrap()
    };
    // The baseline: the heap holding 256 strings, after a collection (which sized the mark
    // stack for them).
    let mut text = String::with_capacity(64);
    heap.collect();
    heap.release_empty_chunks();
    let base = live();
    let mut peak = 0;
    for round in 0..ROUNDS {
        {
            let m = &mut heap.mutator();
            let a = ring.get(m.heap()).unwrap();
            for i in 0..PER_ROUND {
                let n = round * PER_ROUND + i;
                text.clear();
                use std::fmt::Write;
                write!(text, "string number {n}").unwrap();
                let s = m.string(&text).unwrap();
                a.set(n % RING, s.value()).unwrap();
            }
            // The ring holds the last 256, with their text.
            let last = round * PER_ROUND + PER_ROUND - 1;
            let v = a.get(last % RING).unwrap();
            assert_eq!(v.as_str(), Some(format!("string number {last}").as_str()));
        }
        peak = peak.max(live() - base);
        let s = heap.collect();
        // Every string of the round but the 256 in the ring (in the first round, the 256
        // first ones instead) is freed.
        assert_eq!(s.freed, u64::from(PER_ROUND));
        assert_eq!(s.marked, 1 + u64::from(RING));
    }
    // Back to 256 strings held, as at the baseline.
    {
        let mut m = heap.mutator();
        let a = ring.get(m.heap()).unwrap();
        for i in 0..RING {
            a.set(i, m.string(&format!("last {i}")).unwrap().value())
                .unwrap();
        }
    }
    assert_eq!(heap.collect().freed, u64::from(RING));
    heap.release_empty_chunks();
    let after = live() - base;
    println!(
        "1,000,000 distinct strings: peak {peak} B above the baseline between collections, \
         {after} B after the last collection"
    );
    assert!(
        peak > 100_000 * 24,
        "the strings were not allocated? peak {peak}"
    );
    assert_eq!(
        after, 0,
        "live bytes above the baseline after the collection"
    );
}

#[test]
fn strings_compare_by_text_and_survive_while_reachable() {
    let mut heap = Heap::new();
    let long = "y".repeat(LARGEST_CLASS + 1);
    let (keep, _) = {
        let mut m = heap.mutator();
        let a = m.string("abc").unwrap();
        let b = m.string("abc").unwrap();
        assert_eq!(a, b);
        assert_eq!(a.value(), b.value());
        assert_eq!(a.value(), Value::from(Key::new("abc")));
        assert_ne!(a.value(), m.string("abd").unwrap().value());
        assert_ne!(a.value(), Value::from(1u32));
        assert_eq!(m.string("").unwrap().as_str(), "");
        assert!(m.string("").unwrap().is_empty());
        assert_eq!(a.value().as_heap_string(), Some(a));
        assert_eq!(Value::from(Key::new("abc")).as_heap_string(), None);
        assert_eq!(a.value().as_object(), None);
        assert_eq!(format!("{:?}", a.value()), "\"abc\"");
        let o = m.object().unwrap();
        o.set("short", a.value()).unwrap();
        o.set("long", m.string(&long).unwrap().value()).unwrap();
        m.string(&long).unwrap(); // garbage, a large cell
        m.string("garbage").unwrap();
        (heap.root(o).unwrap(), ())
    };
    let s = heap.collect();
    // b, "abd", two "", the second long one, "garbage".
    assert_eq!((s.marked, s.freed), (3, 6));
    let o = keep.get(&heap).unwrap();
    assert_eq!(o.get("short").unwrap().as_str(), Some("abc"));
    assert_eq!(o.get("long").unwrap().as_str(), Some(long.as_str()));
}

#[test]
fn another_heaps_string_is_refused() {
    let (h1, h2) = (Heap::new(), Heap::new());
    let (mut m1, mut m2) = (h1.mutator(), h2.mutator());
    let s = m1.string("mine").unwrap();
    let o = m2.array().unwrap();
    assert_eq!(o.set("s", s.value()), Err(Error::ForeignHeap));
    assert_eq!(o.push(s.value()), Err(Error::ForeignHeap));
    assert_eq!(o.array_length().unwrap(), Some(0));
    assert!(h2.root_value(s.value()).is_err());
    assert_eq!(o.get("s").unwrap(), Value::UNDEFINED);
}

#[test]
#[cfg_attr(miri, ignore = "builds a 256 MiB name: too slow under Miri")]
fn interned_names_are_bounded() {
    let before = Key::interned_bytes();
    assert!(before <= MAX_INTERNED_BYTES);
    let k = Key::try_new("a name interned by the strings test").unwrap();
    assert_eq!(Key::new("a name interned by the strings test"), k);
    let grown = Key::interned_bytes();
    assert!(grown > before && grown <= MAX_INTERNED_BYTES);
    // A name that would pass the bound is refused, and nothing is interned.
    let huge = "z".repeat(MAX_INTERNED_BYTES + 1);
    assert_eq!(Key::try_new(&huge), None);
    assert!(Key::interned_bytes() <= grown + 64); // other tests may intern meanwhile
}
