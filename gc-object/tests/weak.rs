//! Weak references: a model test (a weak reference is cleared exactly when its target is
//! unreachable, in the collection that frees it) and the error cases.

use std::collections::HashSet;

use gc_object::{Error, Heap, Obj, Root, Value};
use proptest::prelude::*;

#[derive(Debug, Clone)]
struct Graph {
    nodes: usize,
    /// Strong edges (from, to): `to` in a property of `from`.
    strong: Vec<(usize, usize)>,
    /// Weak edges (holder, target): a weak reference to `target` in a property of `holder`.
    weak: Vec<(usize, usize)>,
    roots: Vec<usize>,
    /// Roots dropped before the second collection.
    drop_roots: usize,
}

fn graphs() -> impl Strategy<Value = Graph> {
    let max: usize = if cfg!(miri) { 10 } else { 40 };
    (2..max).prop_flat_map(|nodes| {
        (
            Just(nodes),
            prop::collection::vec((0..nodes, 0..nodes), 0..nodes * 2),
            prop::collection::vec((0..nodes, 0..nodes), 0..nodes * 2),
            prop::collection::vec(0..nodes, 1..4),
            0usize..4,
        )
            .prop_map(|(nodes, strong, weak, roots, drop_roots)| Graph {
                nodes,
                strong,
                weak,
                roots,
                drop_roots,
            })
    })
}

fn reachable(g: &Graph, roots: &[usize]) -> HashSet<usize> {
    let mut seen: HashSet<usize> = roots.iter().copied().collect();
    let mut stack: Vec<usize> = roots.to_vec();
    while let Some(n) = stack.pop() {
        for &(a, b) in &g.strong {
            if a == n && seen.insert(b) {
                stack.push(b);
            }
        }
    }
    seen
}

/// Every weak reference held by a reachable node: upgraded iff its target is reachable,
/// and then to the right object (checked by its `id` property).
fn check(heap: &Heap, g: &Graph, roots: &[(usize, Root)], live: &HashSet<usize>) {
    let mut seen = HashSet::new();
    let mut stack: Vec<(usize, Obj<'_>)> = roots
        .iter()
        .map(|(i, r)| (*i, r.get(heap).unwrap()))
        .collect();
    while let Some((i, o)) = stack.pop() {
        if !seen.insert(i) {
            continue;
        }
        assert_eq!(o.get("id").unwrap(), Value::from(i as u32));
        for (e, &(a, b)) in g.strong.iter().enumerate() {
            if a == i {
                let to = o
                    .get(format!("s{e}").as_str())
                    .unwrap()
                    .as_object()
                    .unwrap();
                stack.push((b, to));
            }
        }
        for (e, &(a, b)) in g.weak.iter().enumerate() {
            if a == i {
                let w = o
                    .get(format!("w{e}").as_str())
                    .unwrap()
                    .as_weak_ref()
                    .expect("a weak reference");
                match w.upgrade() {
                    Some(t) => {
                        assert!(live.contains(&b), "weak {e} to dead node {b} not cleared");
                        assert_eq!(t.get("id").unwrap(), Value::from(b as u32));
                        assert_eq!(w.target().unwrap(), t);
                    }
                    None => {
                        assert!(!live.contains(&b), "weak {e} to live node {b} cleared");
                        assert_eq!(w.target(), Err(Error::Collected));
                    }
                }
            }
        }
    }
    assert_eq!(seen, *live);
}

fn run(g: Graph) {
    let mut heap = Heap::new();
    let mut roots: Vec<(usize, Root)> = {
        let m = heap.mutator();
        let objs: Vec<Obj<'_>> = (0..g.nodes)
            .map(|i| {
                let o = m.object().unwrap();
                o.set("id", Value::from(i as u32)).unwrap();
                o
            })
            .collect();
        for (e, &(a, b)) in g.strong.iter().enumerate() {
            objs[a]
                .set(format!("s{e}").as_str(), objs[b].value())
                .unwrap();
        }
        for (e, &(a, b)) in g.weak.iter().enumerate() {
            let w = m.weak_ref(objs[b]).unwrap();
            assert_eq!(w.upgrade(), Some(objs[b]));
            objs[a].set(format!("w{e}").as_str(), w.value()).unwrap();
        }
        g.roots
            .iter()
            .map(|&r| (r, heap.root(objs[r]).unwrap()))
            .collect()
    };
    let root_ids: Vec<usize> = roots.iter().map(|r| r.0).collect();
    let live = reachable(&g, &root_ids);
    let s = heap.collect();
    assert_eq!(
        s.freed,
        (g.nodes - live.len()) as u64 + dead_weak(&g, &live)
    );
    check(&heap, &g, &roots, &live);
    // Drop some roots: more objects die, their weak references are cleared in this
    // collection (and those already cleared stay cleared).
    let keep = roots.len().saturating_sub(g.drop_roots).max(1);
    roots.truncate(keep);
    let root_ids: Vec<usize> = roots.iter().map(|r| r.0).collect();
    let live2 = reachable(&g, &root_ids);
    let cleared_now = g
        .weak
        .iter()
        .filter(|&&(a, b)| live2.contains(&a) && live.contains(&b) && !live2.contains(&b))
        .count();
    let s = heap.collect();
    assert_eq!(s.weak_cleared, cleared_now as u64);
    check(&heap, &g, &roots, &live2);
}

/// Weak-reference cells held by dead nodes (freed with them in the first collection).
fn dead_weak(g: &Graph, live: &HashSet<usize>) -> u64 {
    g.weak.iter().filter(|(a, _)| !live.contains(a)).count() as u64
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: if cfg!(miri) { 4 } else { 128 },
        failure_persistence: None,
        ..ProptestConfig::default()
    })]
    #[test]
    fn weak_refs_are_cleared_exactly_when_their_targets_die(g in graphs()) {
        run(g);
    }
}

#[test]
fn cleared_in_the_collection_that_frees_the_target() {
    let mut heap = Heap::new();
    let (holder, weak) = {
        let m = heap.mutator();
        let target = m.object().unwrap();
        let holder = m.object().unwrap();
        holder.set("t", target.value()).unwrap();
        let w = m.weak_ref(target).unwrap();
        (
            heap.root(holder).unwrap(),
            heap.root_value(w.value()).unwrap(),
        )
    };
    // Reachable through `holder.t`: kept.
    let s = heap.collect();
    assert_eq!((s.weak_cleared, s.freed), (0, 0));
    let w = weak.value(&heap).unwrap().as_weak_ref().unwrap();
    let t = w.upgrade().unwrap();
    assert_eq!(holder.get(&heap).unwrap().get("t").unwrap(), t.value());
    // Upgrading and storing the target strongly keeps it alive again (no resurrection
    // problem: it is marked through the new edge).
    holder.get(&heap).unwrap().delete("t").unwrap();
    let again = w.upgrade().unwrap();
    holder.get(&heap).unwrap().set("u", again.value()).unwrap();
    let s = heap.collect();
    assert_eq!((s.weak_cleared, s.freed), (0, 0));
    holder.get(&heap).unwrap().delete("u").unwrap();
    let s = heap.collect();
    assert_eq!((s.weak_cleared, s.freed), (1, 1));
    let w = weak.value(&heap).unwrap().as_weak_ref().unwrap();
    assert_eq!(w.upgrade(), None);
    assert_eq!(w.target(), Err(Error::Collected));
    // A cleared weak reference stays cleared, and an unrooted one is freed itself.
    drop(weak);
    let s = heap.collect();
    assert_eq!((s.weak_cleared, s.freed), (0, 1));
}

#[test]
fn errors_are_values() {
    let a = Heap::new();
    let b = Heap::new();
    let ma = a.mutator();
    let mb = b.mutator();
    let oa = ma.object().unwrap();
    let ob = mb.object().unwrap();
    assert_eq!(ma.weak_ref(ob).err(), Some(Error::ForeignHeap));
    let wa = ma.weak_ref(oa).unwrap();
    // A weak reference of heap A stored in an object of heap B, or rooted in B.
    assert_eq!(ob.set("w", wa.value()), Err(Error::ForeignHeap));
    assert_eq!(
        ob.define("w", gc_object::Property::data(wa.value())),
        Err(Error::ForeignHeap)
    );
    assert_eq!(b.root_value(wa.value()).err(), Some(Error::ForeignHeap));
    let lit = b.literal(&["x"]);
    assert_eq!(
        mb.literal(&lit, &[wa.value()]).err(),
        Some(Error::ForeignHeap)
    );
    // Roots: a number is no cell; a weak root is not an object.
    assert_eq!(
        a.root_value(Value::from(1u32)).err(),
        Some(Error::WrongKind)
    );
    let r = a.root_value(wa.value()).unwrap();
    assert_eq!(r.get(&a).err(), Some(Error::WrongKind));
    assert_eq!(r.value(&b).err(), Some(Error::ForeignHeap));
    assert_eq!(r.value(&a).unwrap().as_weak_ref(), Some(wa));
    // Values: a weak reference is neither an object nor a string.
    assert!(wa.value().as_object().is_none() && wa.value().as_string().is_none());
    assert!(oa.value().as_weak_ref().is_none());
    assert_eq!(Value::from(wa), wa.value());
}

#[test]
fn many_weak_refs_to_one_target_and_to_themselves() {
    let mut heap = Heap::new();
    let holder = {
        let m = heap.mutator();
        let holder = m.object().unwrap();
        let t = m.object().unwrap();
        for i in 0..100u32 {
            let w = m.weak_ref(t).unwrap();
            holder.set(format!("w{i}").as_str(), w.value()).unwrap();
        }
        // A target that holds its own weak reference is still collected.
        let selfish = m.object().unwrap();
        let w = m.weak_ref(selfish).unwrap();
        selfish.set("me", w.value()).unwrap();
        holder
            .set("selfish", m.weak_ref(selfish).unwrap().value())
            .unwrap();
        heap.root(holder).unwrap()
    };
    let s = heap.collect();
    assert_eq!(s.weak_cleared, 101);
    // t, selfish and the weak reference selfish held.
    assert_eq!(s.freed, 3);
    let h = holder.get(&heap).unwrap();
    for i in 0..100u32 {
        let w = h
            .get(format!("w{i}").as_str())
            .unwrap()
            .as_weak_ref()
            .unwrap();
        assert!(w.upgrade().is_none());
    }
}
