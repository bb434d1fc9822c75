//! Collection over random object graphs with cycles: everything unreachable is freed,
//! everything reachable survives with its edges, counted.

use std::collections::HashSet;

use gc_object::{Heap, INLINE_SLOTS, Property, PropertyKey, Root, Value};
use proptest::prelude::*;

#[derive(Debug, Clone)]
struct Graph {
    nodes: usize,
    /// (from, to, how): how 0 = inline slot, 1 = external slot, 2 = element, 3 = prototype,
    /// 4 = accessor getter.
    edges: Vec<(usize, usize, u8)>,
    roots: Vec<usize>,
    /// Roots dropped before the second collection.
    drop_roots: usize,
}

fn graphs() -> impl Strategy<Value = Graph> {
    let max_nodes: usize = if cfg!(miri) { 12 } else { 60 };
    (2..max_nodes).prop_flat_map(|nodes| {
        (
            Just(nodes),
            prop::collection::vec((0..nodes, 0..nodes, 0u8..5), 0..nodes * 2),
            prop::collection::vec(0..nodes, 0..4),
            0usize..4,
        )
            .prop_map(|(nodes, edges, roots, drop_roots)| Graph {
                nodes,
                edges,
                roots,
                drop_roots,
            })
    })
}

fn getter<'h>(_: Value<'h>, _: Value<'h>) -> Result<Value<'h>, gc_object::Error> {
    Ok(Value::undefined())
}

fn run(g: Graph) {
    let mut heap = Heap::new();
    // Build: node i has own keys; record the actual edges that were applied.
    let mut protos: Vec<Option<usize>> = vec![None; g.nodes];
    let mut getters = 0usize;
    let roots: Vec<Root>;
    {
        let m = heap.mutator();
        let objs: Vec<_> = (0..g.nodes)
            .map(|i| {
                let o = if i % 3 == 0 {
                    m.array().unwrap()
                } else {
                    m.object().unwrap()
                };
                o.set("id", Value::number(i as f64)).unwrap();
                o
            })
            .collect();
        for (e, &(from, to, how)) in g.edges.iter().enumerate() {
            let (a, b) = (objs[from], objs[to]);
            match how {
                0 => a.set(format!("e{}", e % 3).as_str(), b.value()).unwrap(),
                1 => {
                    // Past the inline slots: fill up first.
                    for j in 0..INLINE_SLOTS {
                        a.set(format!("pad{j}").as_str(), Value::null()).unwrap();
                    }
                    a.set(format!("x{e}").as_str(), b.value()).unwrap();
                }
                2 => a
                    .set(PropertyKey::Index((e % 7) as u32), b.value())
                    .unwrap(),
                3 => {
                    if a.set_prototype(Some(b)).is_ok() {
                        protos[from] = Some(to);
                    }
                    continue;
                }
                _ => {
                    let f = m.function(getter).unwrap();
                    f.set("target", b.value()).unwrap();
                    a.define(
                        format!("acc{e}").as_str(),
                        Property::Accessor {
                            get: Some(f),
                            set: None,
                            enumerable: true,
                            configurable: true,
                        },
                    )
                    .unwrap();
                    getters += 1;
                    continue;
                }
            }
        }
        roots = g
            .roots
            .iter()
            .map(|&r| heap.root(objs[r]).unwrap())
            .collect();
    }
    // Overwritten slots drop edges: recompute the real edges from the objects themselves.
    let total = g.nodes + getters;
    let expect = |live_roots: &[usize], edges: &[(usize, usize)]| {
        let mut seen = HashSet::new();
        let mut stack = live_roots.to_vec();
        while let Some(n) = stack.pop() {
            if seen.insert(n) {
                stack.extend(edges.iter().filter(|e| e.0 == n).map(|e| e.1));
                if n < g.nodes
                    && let Some(p) = protos[n]
                {
                    stack.push(p);
                }
            }
        }
        seen.len() as u64
    };
    // Edges as the objects hold them now (a later set of the same key replaces an edge).
    let (real_edges, slot_owner) = {
        let mut v = Vec::new();
        let mut slot_owner: std::collections::HashMap<(usize, String), usize> = Default::default();
        let mut getter_idx = 0;
        for (e, &(from, to, how)) in g.edges.iter().enumerate() {
            match how {
                0 => {
                    slot_owner.insert((from, format!("e{}", e % 3)), to);
                }
                1 => {
                    slot_owner.insert((from, format!("x{e}")), to);
                }
                2 => {
                    slot_owner.insert((from, format!("#{}", e % 7)), to);
                }
                3 => {}
                _ => {
                    v.push((from, g.nodes + getter_idx));
                    v.push((g.nodes + getter_idx, to));
                    getter_idx += 1;
                }
            }
        }
        v.extend(slot_owner.iter().map(|(&(from, _), &to)| (from, to)));
        (v, slot_owner)
    };
    let root_ids: Vec<usize> = g.roots.clone();
    let s = heap.collect();
    assert_eq!(s.marked, expect(&root_ids, &real_edges));
    assert_eq!(s.marked + s.freed, total as u64);
    // Survivors keep their identity and edges.
    for (r, &id) in roots.iter().zip(&g.roots) {
        let o = r.get(&heap).unwrap();
        assert_eq!(o.get("id").unwrap(), Value::number(id as f64));
        for ((from, key), &to) in &slot_owner {
            if *from != id {
                continue;
            }
            let v = match key.strip_prefix('#') {
                Some(i) => o.get(PropertyKey::Index(i.parse().unwrap())).unwrap(),
                None => o.get(key.as_str()).unwrap(),
            };
            let target = v.as_object().expect("edge survives");
            assert_eq!(target.get("id").unwrap(), Value::number(to as f64));
        }
    }
    // Drop some roots; collect again.
    let keep = roots.len().saturating_sub(g.drop_roots);
    let mut roots = roots;
    roots.truncate(keep);
    let s2 = heap.collect();
    assert_eq!(s2.marked, expect(&root_ids[..keep], &real_edges));
    assert_eq!(s2.freed, s.marked - s2.marked);
    drop(roots);
    let s3 = heap.collect();
    assert_eq!(s3.marked, 0);
    assert_eq!(s3.freed, s2.marked);
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: if cfg!(miri) { 4 } else { 96 },
        // Miri isolates the file system: no failure persistence there.
        failure_persistence: if cfg!(miri) { None } else { ProptestConfig::default().failure_persistence },
        ..ProptestConfig::default()
    })]
    #[test]
    fn random_graphs(g in graphs()) {
        run(g);
    }
}

#[test]
fn finalizer_fast_path_is_counted() {
    let mut heap = Heap::new();
    {
        let m = heap.mutator();
        for i in 0..50 {
            let o = m.object().unwrap();
            o.set("a", Value::number(1.0)).unwrap();
            if i % 5 == 0 {
                for j in 0..=INLINE_SLOTS {
                    o.set(format!("p{j}").as_str(), Value::number(1.0)).unwrap();
                }
            }
        }
    }
    let s = heap.collect();
    assert_eq!(s.freed, 50);
    assert_eq!(s.finalized, 10);
    assert_eq!(s.freed_without_finalizer, 40);
    assert_eq!(heap.stats().collections, 1);
    assert!(heap.release_empty_chunks() >= 1);
    assert_eq!(heap.stats().chunks, 0);
}

/// A small literal leaves the slots past its shape unwritten, so a reused cell keeps the
/// stale object words of its previous occupant there. Those words must never be traced or
/// read: the dead targets are freed, later adds see only their own values, and a second
/// collection (tracing the reused cells) follows no stale word.
#[test]
fn reused_cells_never_expose_stale_slots() {
    let mut heap = Heap::new();
    let names: Vec<String> = (0..INLINE_SLOTS).map(|i| format!("p{i}")).collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let wide = heap.literal(&refs);
    let small = heap.literal(&["a"]);
    let n = if cfg!(miri) { 8 } else { 200 };
    {
        // Every slot of every wide object points at another (soon dead) object.
        let m = &mut heap.mutator();
        for _ in 0..n {
            let target = m.object().unwrap();
            let vals = vec![target.value(); INLINE_SLOTS];
            m.literal(&wide, &vals).unwrap();
        }
    }
    assert_eq!(heap.collect().freed, 2 * n);
    let roots: Vec<Root> = {
        let m = &mut heap.mutator();
        (0..2 * n)
            .map(|i| {
                // Reuses the freed cells: slot 0 written, the others stale.
                let o = m.literal(&small, &[Value::number(i as f64)]).unwrap();
                assert_eq!(o.get("p1").unwrap(), Value::undefined());
                o.set("b", Value::bool(true)).unwrap();
                assert_eq!(o.get("b").unwrap(), Value::bool(true));
                assert_eq!(o.own_keys().unwrap().len(), 2);
                o
            })
            .collect::<Vec<_>>()
            .into_iter()
            // Two thirds stay unreachable: a stale word traced in a rooted cell would keep
            // some of them alive.
            .step_by(3)
            .map(|o| heap.root(o).unwrap())
            .collect()
    };
    let s = heap.collect();
    let kept = (2 * n).div_ceil(3);
    assert_eq!((s.marked, s.freed), (kept, 2 * n - kept));
    for (i, r) in roots.iter().enumerate() {
        let o = r.get(&heap).unwrap();
        assert_eq!(o.get("a").unwrap(), Value::number((3 * i) as f64));
        assert_eq!(o.get("b").unwrap(), Value::bool(true));
    }
}

/// An allocator that, when armed, panics once after freeing the last block a finalizer
/// frees (the storage wrapper; in the wide layout the slot block), so nothing leaks.
struct PanicOnFree(std::sync::Arc<std::sync::atomic::AtomicBool>);

// SAFETY: forwards to the global allocator (a panicking `dealloc` has freed the block).
unsafe impl gc_object::RawAlloc for PanicOnFree {
    fn alloc(&self, layout: std::alloc::Layout) -> Option<std::ptr::NonNull<u8>> {
        gc_object::SystemAlloc.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: std::ptr::NonNull<u8>, layout: std::alloc::Layout) {
        // SAFETY: forwarded contract.
        unsafe { gc_object::SystemAlloc.dealloc(ptr, layout) }
        let last = gc_object::WIDE_OBJECT || layout.size() == gc_object::STORAGE_STATE_BYTES;
        if last && self.0.swap(false, std::sync::atomic::Ordering::SeqCst) {
            panic!("dealloc refused");
        }
    }
}

/// A panic out of the allocator in the middle of a collection (while a dead object's side
/// state is freed) must not leave mark bits behind: the next collection would take a root
/// whose bit is still set for already marked, not trace it, and free what it references
/// (a use-after-free through the root).
#[test]
fn a_panic_during_collection_leaves_no_marks() {
    let armed = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut heap = Heap::with_allocator(PanicOnFree(armed.clone()));
    let root = {
        let m = &mut heap.mutator();
        // Garbage with side state (external slots), in the same chunk word as the root.
        let g = m.object().unwrap();
        for i in 0..=INLINE_SLOTS {
            g.set(PropertyKey::parse(&format!("p{i}")), Value::number(0.0))
                .unwrap();
        }
        let r = m.object().unwrap();
        let child = m.object().unwrap();
        child.set("x", Value::number(7.0)).unwrap();
        r.set("child", child.value()).unwrap();
        heap.root(r).unwrap()
    };
    armed.store(true, std::sync::atomic::Ordering::SeqCst);
    let hit = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| heap.collect()));
    assert!(hit.is_err(), "the allocator's panic propagates");
    let s = heap.collect();
    assert_eq!(s.marked, 2, "root and child traced again: {s:?}");
    let r = root.get(&heap).unwrap();
    let child = r.get("child").unwrap().as_object().unwrap();
    assert_eq!(child.get("x").unwrap(), Value::number(7.0));
}

/// A data property that becomes an accessor keeps its old value in its slot for readers
/// racing the change; the next collection clears it instead of keeping the value alive.
fn getter_42<'h>(_: Value<'h>, _: Value<'h>) -> Result<Value<'h>, gc_object::Error> {
    Ok(Value::number(42.0))
}

#[test]
fn a_value_replaced_by_an_accessor_is_collected() {
    let mut heap = Heap::new();
    let (root, g_root) = {
        let m = heap.mutator();
        let g = m.function(getter_42).unwrap();
        let o = m.object().unwrap();
        let dict = m.object().unwrap();
        for (obj, n) in [(o, 1), (dict, 3)] {
            for i in 0..n {
                obj.set(format!("p{i}").as_str(), Value::number(f64::from(i)))
                    .unwrap();
            }
            let t = m.object().unwrap();
            obj.set("k", t.value()).unwrap();
        }
        // One object in shape mode, one in dictionary mode.
        assert!(dict.delete("p0").unwrap());
        o.set("d", dict.value()).unwrap();
        for obj in [o, dict] {
            obj.define(
                "k",
                Property::Accessor {
                    get: Some(g),
                    set: None,
                    enumerable: true,
                    configurable: true,
                },
            )
            .unwrap();
        }
        (heap.root(o).unwrap(), heap.root(g).unwrap())
    };
    let s = heap.collect();
    assert_eq!(s.marked, 3, "o, its dictionary-mode child and the getter");
    assert_eq!(s.freed, 2, "both old values");
    let o = root.get(&heap).unwrap();
    assert_eq!(o.get("k").unwrap(), Value::number(42.0));
    let d = o.get("d").unwrap().as_object().unwrap();
    assert_eq!(d.get("k").unwrap(), Value::number(42.0));
    assert_eq!(d.get("p1").unwrap(), Value::number(1.0));
    drop(g_root);
}

/// `Value::as_static` accepts exactly the values `Heap::root_value` refuses, and what it
/// returns survives collections unchanged.
#[test]
fn as_static_is_the_complement_of_root_value() {
    use gc_object::Key;
    let mut heap = Heap::new();
    let (kept, roots) = {
        let m = heap.mutator();
        let prims = [
            Value::undefined(),
            Value::null(),
            Value::bool(true),
            Value::number(-0.5),
            Value::number(f64::NAN),
            Value::from(Key::new("name")),
        ];
        let cells = [
            m.object().unwrap().value(),
            m.string("text").unwrap().value(),
            m.symbol(Some("s")).unwrap().value(),
        ];
        let mut kept = Vec::new();
        for v in prims {
            assert_eq!(heap.root_value(v).err(), Some(gc_object::Error::WrongKind));
            let s = v.as_static().expect("a value without a cell");
            assert!(s.same_value(v));
            kept.push(s);
        }
        let mut roots = Vec::new();
        for v in cells {
            assert!(v.as_static().is_none());
            roots.push(heap.root_value(v).unwrap());
        }
        (kept, roots)
    };
    assert_eq!(heap.collect().marked, 3);
    assert_eq!(kept[3].as_number(), Some(-0.5));
    assert!(kept[4].as_number().unwrap().is_nan());
    assert_eq!(kept[5].as_str(), Some("name"));
    assert_eq!(roots[1].value(&heap).unwrap().as_str(), Some("text"));
}
