//! String values as heap cells: text by content, freed exactly when unreachable (short
//! ones in slab cells, long ones in large cells; a model test over random graphs),
//! refused by another heap's objects, and a million
//! distinct strings built and dropped return live bytes to the baseline after a collection
//! (counting global allocator). Interned names are bounded, not freed.
#![cfg(not(loom))]

use std::alloc::Layout;
use std::collections::HashSet;
use std::ptr::NonNull;

use gc_object::{
    Error, Heap, Key, LARGEST_CLASS, MAX_INTERNED_BYTES, Obj, PropertyKey, RawAlloc, Root, Value,
};
use proptest::prelude::*;

#[path = "common/live_bytes.rs"]
mod live_bytes;
use live_bytes::live;

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
        let m = heap.mutator();
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
        let m = heap.mutator();
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
        let m = heap.mutator();
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
    let (m1, m2) = (h1.mutator(), h2.mutator());
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
    assert_eq!(PropertyKey::try_parse(&huge), None);
    // Indices never intern, names parse as `parse` does.
    assert_eq!(PropertyKey::try_parse("42"), Some(PropertyKey::Index(42)));
    assert_eq!(
        PropertyKey::try_parse("042"),
        Some(PropertyKey::parse("042"))
    );
    assert_eq!(
        PropertyKey::try_parse("4294967295"),
        Some(PropertyKey::parse("4294967295"))
    );
    // (Other tests intern a few names meanwhile, never megabytes.)
    assert!(Key::interned_bytes() < grown + (1 << 20));
}

#[derive(Debug, Clone)]
struct Case {
    nodes: usize,
    /// Text lengths of the strings (some past the largest class: large cells).
    strings: Vec<usize>,
    strong: Vec<(usize, usize)>,
    /// (object, string): the string is a value in a property of the object.
    held: Vec<(usize, usize)>,
    roots: Vec<usize>,
}

fn cases() -> impl Strategy<Value = Case> {
    let max: usize = if cfg!(miri) { 5 } else { 24 };
    let len = prop_oneof![4 => 0usize..80, 1 => LARGEST_CLASS - 16..LARGEST_CLASS + 64];
    (1..max, prop::collection::vec(len, 1..max)).prop_flat_map(|(nodes, strings)| {
        let n = strings.len();
        (
            prop::collection::vec((0..nodes, 0..nodes), 0..nodes * 2),
            prop::collection::vec((0..nodes, 0..n), 0..n * 2),
            prop::collection::vec(0..nodes, 0..3),
        )
            .prop_map(move |(strong, held, roots)| Case {
                nodes,
                strings: strings.clone(),
                strong,
                held,
                roots,
            })
    })
}

fn text(i: usize, len: usize) -> String {
    let mut t = format!("{i}:");
    while t.len() < len {
        t.push(char::from(b'a' + (t.len() % 26) as u8));
    }
    t
}

fn run_case(c: &Case) {
    let mut heap = Heap::new();
    let roots: Vec<Root> = {
        let m = heap.mutator();
        let objs: Vec<Obj<'_>> = (0..c.nodes).map(|_| m.object().unwrap()).collect();
        let strs: Vec<_> = c
            .strings
            .iter()
            .enumerate()
            .map(|(i, &l)| m.string(&text(i, l)).unwrap())
            .collect();
        for (e, &(a, b)) in c.strong.iter().enumerate() {
            objs[a]
                .set(format!("s{e}").as_str(), objs[b].value())
                .unwrap();
        }
        for (e, &(o, s)) in c.held.iter().enumerate() {
            objs[o]
                .set(format!("h{e}").as_str(), strs[s].value())
                .unwrap();
        }
        c.roots
            .iter()
            .map(|&r| heap.root(objs[r]).unwrap())
            .collect()
    };
    let mut live: HashSet<usize> = HashSet::new();
    let mut stack: Vec<usize> = c.roots.clone();
    while let Some(n) = stack.pop() {
        if live.insert(n) {
            stack.extend(c.strong.iter().filter(|e| e.0 == n).map(|e| e.1));
        }
    }
    let kept: HashSet<usize> = c
        .held
        .iter()
        .filter(|(o, _)| live.contains(o))
        .map(|&(_, s)| s)
        .collect();
    let s = heap.collect();
    assert_eq!(s.marked as usize, live.len() + kept.len(), "{c:?}");
    assert_eq!(
        s.freed as usize,
        c.nodes - live.len() + c.strings.len() - kept.len(),
        "{c:?}"
    );
    // The live strings read back their texts through the live objects.
    for r in &roots {
        let mut seen = HashSet::new();
        let mut stack = vec![r.get(&heap).unwrap()];
        while let Some(o) = stack.pop() {
            for k in o.own_keys().unwrap() {
                let v = o.get(k).unwrap();
                let name = k.to_string();
                if let Some(e) = name.strip_prefix('h') {
                    let (_, si) = c.held[e.parse::<usize>().unwrap()];
                    assert_eq!(v.as_str(), Some(text(si, c.strings[si]).as_str()));
                } else if let Some(child) = v.as_object()
                    && seen.insert(format!("{:?}", child.value()))
                {
                    stack.push(child);
                }
            }
        }
    }
    assert_eq!(heap.collect().freed, 0);
    drop(roots);
    assert_eq!(heap.collect().freed as usize, live.len() + kept.len());
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: if cfg!(miri) { 3 } else { 96 },
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn strings_are_collected_exactly_when_unreachable(c in cases()) {
        run_case(&c);
    }
}
