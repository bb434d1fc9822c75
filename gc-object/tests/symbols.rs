//! Symbols as property keys: unique, described, ordered after strings in own keys (in
//! creation order), in shape and dictionary mode; collected when neither reachable as a
//! value nor a key of a live object (a model test over random graphs).

use std::collections::HashSet;

use gc_object::{Error, Heap, Obj, Property, PropertyKey, Root, Value};
use proptest::prelude::*;

#[test]
fn symbols_are_unique_keys_with_descriptions() {
    let heap = Heap::new();
    let m = heap.mutator();
    let a = m.symbol(Some("x")).unwrap();
    let b = m.symbol(Some("x")).unwrap();
    let c = m.symbol(None).unwrap();
    assert_ne!(a, b);
    assert_ne!(a.key(), b.key());
    assert_ne!(a.key(), PropertyKey::from("x"));
    assert_eq!(a.description().unwrap().as_str(), "x");
    assert_eq!(c.description(), None);
    assert_eq!(a.value().as_symbol(), Some(a));
    assert_eq!(a.value().as_object(), None);
    assert_eq!(Value::from(1u32).as_symbol(), None);
    let o = m.object().unwrap();
    o.set(a.key(), 1u32.into()).unwrap();
    o.set("x", 2u32.into()).unwrap();
    o.set(b.key(), 3u32.into()).unwrap();
    assert_eq!(o.get(a.key()).unwrap(), 1u32.into());
    assert_eq!(o.get("x").unwrap(), 2u32.into());
    assert_eq!(o.get(b.key()).unwrap(), 3u32.into());
    assert_eq!(o.get(c.key()).unwrap(), Value::UNDEFINED);
    // A symbol value is stored and read back like any value.
    o.set("sym", c.value()).unwrap();
    assert_eq!(o.get("sym").unwrap().as_symbol(), Some(c));
    // Symbols work as accessor and attribute keys too.
    o.define(
        c.key(),
        Property::Data {
            value: 4u32.into(),
            writable: false,
            enumerable: false,
            configurable: true,
        },
    )
    .unwrap();
    assert_eq!(
        o.set(c.key(), 5u32.into()),
        Err(Error::NotWritable(c.key()))
    );
    assert_eq!(o.get(c.key()).unwrap(), 4u32.into());
}

#[test]
fn own_keys_are_indices_then_strings_then_symbols_in_creation_order() {
    let heap = Heap::new();
    let m = heap.mutator();
    let s: Vec<_> = (0..3).map(|_| m.symbol(None).unwrap()).collect();
    let o = m.object().unwrap();
    o.set(s[1].key(), 0u32.into()).unwrap();
    o.set("b", 0u32.into()).unwrap();
    o.set(s[0].key(), 0u32.into()).unwrap();
    o.set(3u32, 0u32.into()).unwrap();
    o.set("a", 0u32.into()).unwrap();
    o.set(s[2].key(), 0u32.into()).unwrap();
    o.set(1u32, 0u32.into()).unwrap();
    let want = vec![
        PropertyKey::Index(1),
        PropertyKey::Index(3),
        "b".into(),
        "a".into(),
        s[1].key(),
        s[0].key(),
        s[2].key(),
    ];
    assert_eq!(o.own_keys().unwrap(), want);
    // Dictionary mode (a delete) keeps the order.
    assert!(o.delete("b").unwrap());
    assert!(o.delete(s[0].key()).unwrap());
    let want: Vec<_> = want
        .into_iter()
        .filter(|k| *k != PropertyKey::from("b") && *k != s[0].key())
        .collect();
    assert_eq!(o.own_keys().unwrap(), want);
    o.set(s[0].key(), 1u32.into()).unwrap();
    o.set("c", 1u32.into()).unwrap();
    let mut want = want;
    want.insert(3, "c".into());
    want.push(s[0].key());
    assert_eq!(o.own_keys().unwrap(), want);
}

#[test]
fn a_symbol_lives_while_it_is_a_key_of_a_live_object_in_either_mode() {
    let mut heap = Heap::new();
    let (shape_obj, dict_obj) = {
        let m = heap.mutator();
        let (a, b) = (m.symbol(Some("a")).unwrap(), m.symbol(Some("b")).unwrap());
        m.symbol(Some("garbage")).unwrap();
        let o = m.object().unwrap();
        o.set(a.key(), 1u32.into()).unwrap();
        let d = m.object().unwrap();
        d.set("x", 1u32.into()).unwrap();
        d.set(b.key(), 2u32.into()).unwrap();
        d.delete("x").unwrap(); // dictionary mode
        (heap.root(o).unwrap(), heap.root(d).unwrap())
    };
    assert_eq!(heap.stats().symbols, 3);
    let s = heap.collect();
    assert_eq!(s.symbols_freed, 1);
    assert_eq!(heap.stats().symbols, 2);
    // The keys still name the same properties (and a new symbol is a new key).
    let o = shape_obj.get(&heap).unwrap();
    let d = dict_obj.get(&heap).unwrap();
    let (ka, kb) = (o.own_keys().unwrap()[0], d.own_keys().unwrap()[0]);
    assert_eq!(o.get(ka).unwrap(), 1u32.into());
    assert_eq!(d.get(kb).unwrap(), 2u32.into());
    let fresh = heap.mutator().symbol(Some("a")).unwrap();
    assert!(fresh.key() != ka && fresh.key() != kb);
    assert_eq!(heap.collect().symbols_freed, 1); // `fresh`
    drop((shape_obj, dict_obj));
    let s = heap.collect();
    assert_eq!((s.symbols_freed, heap.stats().symbols), (2, 0));
}

#[test]
fn ten_thousand_dropped_symbols_leave_nothing() {
    let n: u32 = if cfg!(miri) { 100 } else { 10_000 };
    let mut heap = Heap::new();
    {
        let m = heap.mutator();
        let o = m.object().unwrap();
        for i in 0..n {
            let s = m.symbol(Some("churn")).unwrap();
            o.set(s.key(), i.into()).unwrap();
            o.delete(s.key()).unwrap();
        }
    }
    assert_eq!(heap.stats().symbols, n as usize);
    assert_eq!(heap.collect().symbols_freed, u64::from(n));
    assert_eq!(heap.stats().symbols, 0);
}

#[derive(Debug, Clone)]
struct Case {
    nodes: usize,
    symbols: usize,
    strong: Vec<(usize, usize)>,
    /// (object, symbol): the symbol is a key of the object.
    keyed: Vec<(usize, usize)>,
    /// (object, symbol): the symbol is a value in a property of the object.
    valued: Vec<(usize, usize)>,
    roots: Vec<usize>,
}

fn cases() -> impl Strategy<Value = Case> {
    let max: usize = if cfg!(miri) { 6 } else { 24 };
    (1..max, 1..max).prop_flat_map(|(nodes, symbols)| {
        (
            prop::collection::vec((0..nodes, 0..nodes), 0..nodes * 2),
            prop::collection::vec((0..nodes, 0..symbols), 0..symbols * 2),
            prop::collection::vec((0..nodes, 0..symbols), 0..symbols),
            prop::collection::vec(0..nodes, 0..3),
        )
            .prop_map(move |(strong, keyed, valued, roots)| Case {
                nodes,
                symbols,
                strong,
                keyed,
                valued,
                roots,
            })
    })
}

fn run_case(c: &Case) {
    let mut heap = Heap::new();
    let roots: Vec<Root> = {
        let m = heap.mutator();
        let objs: Vec<Obj<'_>> = (0..c.nodes).map(|_| m.object().unwrap()).collect();
        let syms: Vec<_> = (0..c.symbols).map(|_| m.symbol(None).unwrap()).collect();
        for (e, &(a, b)) in c.strong.iter().enumerate() {
            objs[a]
                .set(format!("s{e}").as_str(), objs[b].value())
                .unwrap();
        }
        for &(o, s) in &c.keyed {
            objs[o].set(syms[s].key(), 1u32.into()).unwrap();
        }
        for (e, &(o, s)) in c.valued.iter().enumerate() {
            objs[o]
                .set(format!("v{e}").as_str(), syms[s].value())
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
        .keyed
        .iter()
        .chain(&c.valued)
        .filter(|(o, _)| live.contains(o))
        .map(|&(_, s)| s)
        .collect();
    let s = heap.collect();
    assert_eq!(s.symbols_freed as usize, c.symbols - kept.len(), "{c:?}");
    assert_eq!(heap.stats().symbols, kept.len());
    // Nothing is freed twice, nothing live goes in a second collection.
    assert_eq!(heap.collect().symbols_freed, 0);
    drop(roots);
    heap.collect();
    assert_eq!(heap.stats().symbols, 0);
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: if cfg!(miri) { 3 } else { 96 },
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn symbols_are_collected_exactly_when_unreachable(c in cases()) {
        run_case(&c);
    }
}
