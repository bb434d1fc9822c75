//! Weak maps (ephemeron tables) against a reachability model: an entry's value is alive
//! only while the map and the key are; entries disappear with their keys, key -> value ->
//! key cycles included.

use std::collections::{HashMap, HashSet};

use gc_object::{Error, Heap, Obj, Root, Value};
use proptest::prelude::*;

#[derive(Debug, Clone)]
struct Graph {
    nodes: usize,
    /// Strong edges (from, to).
    strong: Vec<(usize, usize)>,
    /// Maps, each held (strongly) by a node.
    maps: Vec<usize>,
    /// Entries (map, key, value), applied in order (a later one replaces an earlier one
    /// of the same key).
    entries: Vec<(usize, usize, usize)>,
    roots: Vec<usize>,
    drop_roots: usize,
}

fn graphs() -> impl Strategy<Value = Graph> {
    let max: usize = if cfg!(miri) { 10 } else { 40 };
    (2..max).prop_flat_map(|nodes| {
        (
            Just(nodes),
            prop::collection::vec((0..nodes, 0..nodes), 0..nodes * 2),
            prop::collection::vec(0..nodes, 1..4),
            0usize..4,
            prop::collection::vec(0..nodes, 1..4),
            0usize..4,
        )
            .prop_flat_map(|(nodes, strong, maps, _, roots, drop_roots)| {
                let m = maps.len();
                prop::collection::vec((0..m, 0..nodes, 0..nodes), 0..nodes * 2).prop_map(
                    move |entries| Graph {
                        nodes,
                        strong: strong.clone(),
                        maps: maps.clone(),
                        entries,
                        roots: roots.clone(),
                        drop_roots,
                    },
                )
            })
    })
}

/// The final entries per map: key -> value.
fn final_entries(g: &Graph) -> Vec<HashMap<usize, usize>> {
    let mut m = vec![HashMap::new(); g.maps.len()];
    for &(map, k, v) in &g.entries {
        m[map].insert(k, v);
    }
    m
}

/// Ephemeron reachability: strong edges, maps through their holders, values through live
/// (map, key) pairs, to a fixpoint.
fn reachable(g: &Graph, roots: &[usize]) -> HashSet<usize> {
    let entries = final_entries(g);
    let mut seen: HashSet<usize> = roots.iter().copied().collect();
    loop {
        let mut stack: Vec<usize> = seen.iter().copied().collect();
        while let Some(n) = stack.pop() {
            for &(a, b) in &g.strong {
                if a == n && seen.insert(b) {
                    stack.push(b);
                }
            }
        }
        let before = seen.len();
        for (i, &holder) in g.maps.iter().enumerate() {
            if !seen.contains(&holder) {
                continue;
            }
            for (&k, &v) in &entries[i] {
                if seen.contains(&k) {
                    seen.insert(v);
                }
            }
        }
        if seen.len() == before {
            return seen;
        }
    }
}

fn check(heap: &Heap, g: &Graph, objs: &HashMap<usize, Root>, live: &HashSet<usize>) {
    let entries = final_entries(g);
    for (i, &holder) in g.maps.iter().enumerate() {
        if !live.contains(&holder) {
            continue;
        }
        let h = objs[&holder].get(heap).unwrap();
        let map = h
            .get(format!("m{i}").as_str())
            .unwrap()
            .as_weak_map()
            .expect("a weak map");
        let want: Vec<(usize, usize)> = entries[i]
            .iter()
            .filter(|(k, _)| live.contains(k))
            .map(|(&k, &v)| (k, v))
            .collect();
        assert_eq!(map.len(), want.len(), "map {i}");
        for (k, v) in want {
            let key = objs[&k].get(heap).unwrap();
            let got = map.get(key).unwrap().expect("entry of a live key");
            let got = got.as_object().expect("an object value");
            assert_eq!(got.get("id").unwrap(), Value::from(v as u32));
        }
    }
}

fn run(g: Graph) {
    let mut heap = Heap::new();
    // Every node has a root in `all` (dropped before collecting) so the test can find the
    // live ones afterwards; `roots` are the graph's roots.
    let (mut roots, all): (Vec<(usize, Root)>, Vec<Root>) = {
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
        let maps: Vec<_> = g
            .maps
            .iter()
            .enumerate()
            .map(|(i, &holder)| {
                let map = m.weak_map().unwrap();
                objs[holder]
                    .set(format!("m{i}").as_str(), map.value())
                    .unwrap();
                map
            })
            .collect();
        for &(map, k, v) in &g.entries {
            maps[map].set(objs[k], objs[v].value()).unwrap();
        }
        let roots = g
            .roots
            .iter()
            .map(|&r| (r, heap.root(objs[r]).unwrap()))
            .collect();
        let all = objs.iter().map(|&o| heap.root(o).unwrap()).collect();
        (roots, all)
    };
    // Weak references to every node tell which survived.
    let probes: Vec<Root> = {
        let m = heap.mutator();
        all.iter()
            .map(|r| {
                let w = m.weak_ref(r.get(&heap).unwrap()).unwrap();
                heap.root_value(w.value()).unwrap()
            })
            .collect()
    };
    drop(all);
    for round in 0..2 {
        if round == 1 {
            let keep = roots.len().saturating_sub(g.drop_roots).max(1);
            roots.truncate(keep);
        }
        let ids: Vec<usize> = roots.iter().map(|r| r.0).collect();
        let live = reachable(&g, &ids);
        heap.collect();
        let mut found = HashMap::new();
        for (i, p) in probes.iter().enumerate() {
            let w = p.value(&heap).unwrap().as_weak_ref().unwrap();
            assert_eq!(
                w.upgrade().is_some(),
                live.contains(&i),
                "round {round}: node {i}"
            );
            if let Some(o) = w.upgrade() {
                found.insert(i, heap.root(o).unwrap());
            }
        }
        check(&heap, &g, &found, &live);
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: if cfg!(miri) { 4 } else { 128 },
        failure_persistence: None,
        ..ProptestConfig::default()
    })]
    #[test]
    fn entries_live_exactly_while_map_and_key_do(g in graphs()) {
        run(g);
    }
}

#[test]
fn key_value_key_cycles_are_collected() {
    let mut heap = Heap::new();
    let (map, key_root) = {
        let m = heap.mutator();
        let map = m.weak_map().unwrap();
        // Two entries whose values lead back to their own keys, one through another map.
        let k1 = m.object().unwrap();
        let v1 = m.object().unwrap();
        v1.set("back", k1.value()).unwrap();
        map.set(k1, v1.value()).unwrap();
        let k2 = m.object().unwrap();
        let inner = m.weak_map().unwrap();
        inner.set(k2, k2.value()).unwrap();
        map.set(k2, inner.value()).unwrap();
        // A third whose key stays alive.
        let k3 = m.object().unwrap();
        let v3 = m.object().unwrap();
        map.set(k3, v3.value()).unwrap();
        assert_eq!(map.len(), 3);
        (
            heap.root_value(map.value()).unwrap(),
            heap.root(k3).unwrap(),
        )
    };
    let s = heap.collect();
    assert_eq!(s.ephemerons_removed, 2);
    // k1, v1, k2, the inner map (its entry went with it).
    assert_eq!(s.freed, 4);
    let map = map.value(&heap).unwrap().as_weak_map().unwrap();
    assert_eq!(map.len(), 1);
    let k3 = key_root.get(&heap).unwrap();
    assert!(map.get(k3).unwrap().unwrap().as_object().is_some());
    // A dead map frees its table, and its values (their keys alive) go with it.
    drop(heap);
}

#[test]
fn operations_and_errors() {
    let a = Heap::new();
    let b = Heap::new();
    let ma = a.mutator();
    let mb = b.mutator();
    let map = ma.weak_map().unwrap();
    assert!(map.is_empty());
    let keys: Vec<Obj<'_>> = (0..100).map(|_| ma.object().unwrap()).collect();
    for (i, &k) in keys.iter().enumerate() {
        map.set(k, Value::from(i as u32)).unwrap();
    }
    assert_eq!(map.len(), 100);
    for (i, &k) in keys.iter().enumerate() {
        assert_eq!(map.get(k).unwrap(), Some(Value::from(i as u32)));
        assert!(map.has(k).unwrap());
    }
    // Replace, delete, re-add (a deleted entry is reused), churn in constant size.
    map.set(keys[3], Value::bool(true)).unwrap();
    assert_eq!(map.get(keys[3]).unwrap(), Some(Value::bool(true)));
    assert!(map.delete(keys[3]).unwrap());
    assert!(!map.delete(keys[3]).unwrap());
    assert_eq!(map.get(keys[3]).unwrap(), None);
    assert_eq!(map.len(), 99);
    for i in 0..1000u32 {
        map.set(keys[3], Value::from(i)).unwrap();
        assert!(map.delete(keys[3]).unwrap());
    }
    assert_eq!(map.len(), 99);
    let other = ma.object().unwrap();
    assert_eq!(map.get(other).unwrap(), None);
    // Foreign keys and values; a map is a value of its heap.
    let ob = mb.object().unwrap();
    assert_eq!(map.get(ob), Err(Error::ForeignHeap));
    assert_eq!(map.set(ob, Value::undefined()), Err(Error::ForeignHeap));
    assert_eq!(map.set(keys[0], ob.value()), Err(Error::ForeignHeap));
    assert_eq!(map.delete(ob), Err(Error::ForeignHeap));
    assert_eq!(ob.set("m", map.value()), Err(Error::ForeignHeap));
    assert_eq!(map.value().as_weak_map(), Some(map));
    assert!(map.value().as_weak_ref().is_none() && map.value().as_object().is_none());
    assert!(keys[0].value().as_weak_map().is_none());
}
