//! Model test of the shape table: many objects over a small vocabulary (so key sequences
//! meet, part and meet again: shared shapes, private shapes growing in place, twins),
//! random adds, deletes, attribute entries, literals, dropped objects and collections,
//! against one plain map (and its insertion order) per object. After every step the touched
//! object answers like its map through `get`, `own_keys` and the property caches; after
//! every collection every object does, and the live shapes are at most one per object
//! (plus the literals' and the two fixed ones): no shape outlives its objects.

use std::collections::HashMap;

use gc_object::{Heap, Key, Literal, Property, PropertyCache, PropertyKey, Root, Value};
use proptest::prelude::*;

const KEYS: usize = 6;
const OBJECTS: usize = 8;

/// An object's model: values by key, and the keys in insertion order.
#[derive(Default, Clone, Debug)]
struct Model {
    values: HashMap<usize, u32>,
    order: Vec<usize>,
}

impl Model {
    fn set(&mut self, k: usize, v: u32) {
        if self.values.insert(k, v).is_none() {
            self.order.push(k);
        }
    }
    fn delete(&mut self, k: usize) -> bool {
        let had = self.values.remove(&k).is_some();
        self.order.retain(|&x| x != k);
        had
    }
}

#[derive(Clone, Debug)]
enum Op {
    Set(usize, usize, u32),
    Delete(usize, usize),
    /// A read-only property (an attribute entry: the object's shape stops being plain).
    Define(usize, usize, u32),
    /// The object is dropped (garbage) and replaced by a new empty one.
    Replace(usize),
    /// The object is dropped and replaced by a literal of the first `n` keys.
    Literal(usize, usize),
    Collect,
}

fn ops() -> impl Strategy<Value = Vec<Op>> {
    let o = 0..OBJECTS;
    let k = 0..KEYS;
    let op = prop_oneof![
        12 => (o.clone(), k.clone(), any::<u32>()).prop_map(|(o, k, v)| Op::Set(o, k, v)),
        2 => (o.clone(), k.clone()).prop_map(|(o, k)| Op::Delete(o, k)),
        1 => (o.clone(), k, any::<u32>()).prop_map(|(o, k, v)| Op::Define(o, k, v)),
        2 => o.clone().prop_map(Op::Replace),
        1 => (o, 1..=KEYS).prop_map(|(o, n)| Op::Literal(o, n)),
        2 => Just(Op::Collect),
    ];
    let len = if cfg!(miri) { 20 } else { 150 };
    prop::collection::vec(op, 0..len)
}

fn key(k: usize) -> PropertyKey {
    PropertyKey::Name(Key::new(&format!("shape-model-{k}")))
}

fn check(heap: &Heap, root: &Root, m: &Model, caches: &[PropertyCache]) {
    let o = root.get(heap).unwrap();
    let want: Vec<PropertyKey> = m.order.iter().map(|&k| key(k)).collect();
    assert_eq!(o.own_keys().unwrap(), want);
    for (k, c) in caches.iter().enumerate() {
        let v = m
            .values
            .get(&k)
            .map_or(Value::undefined(), |&v| Value::from(v));
        assert_eq!(o.get(key(k)).unwrap(), v, "get of key {k}");
        // Twice: a miss that fills the cache, then (for a plain shape) a hit.
        assert_eq!(o.get_cached(c).unwrap(), v, "cached get of key {k}");
        assert_eq!(o.get_cached(c).unwrap(), v, "cached get of key {k}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: if cfg!(miri) { 4 } else { 256 },
        failure_persistence: if cfg!(miri) { None } else { ProptestConfig::default().failure_persistence },
        ..ProptestConfig::default()
    })]
    #[test]
    fn shapes_match_a_map_per_object_under_adds_deletes_and_collections(ops in ops()) {
        let mut heap = Heap::new();
        let names: Vec<String> = (0..KEYS).map(|k| format!("shape-model-{k}")).collect();
        let literals: Vec<Literal> = (1..=KEYS)
            .map(|n| heap.literal(&names[..n].iter().map(String::as_str).collect::<Vec<_>>()))
            .collect();
        let caches: Vec<PropertyCache> = (0..KEYS).map(|k| PropertyCache::new(key(k))).collect();
        let mut models = vec![Model::default(); OBJECTS];
        let mut roots: Vec<Root> = {
            let m = heap.mutator();
            (0..OBJECTS).map(|_| heap.root(m.object().unwrap()).unwrap()).collect()
        };
        for op in ops {
            match op {
                Op::Set(i, k, v) => {
                    let o = roots[i].get(&heap).unwrap();
                    let writable = o
                        .get_own_property(key(k))
                        .unwrap()
                        .is_none_or(|p| matches!(p, Property::Data { writable: true, .. }));
                    let r = o.set(key(k), Value::from(v));
                    if writable {
                        prop_assert_eq!(r, Ok(()));
                        models[i].set(k, v);
                    } else {
                        prop_assert!(r.is_err());
                    }
                }
                Op::Delete(i, k) => {
                    let o = roots[i].get(&heap).unwrap();
                    prop_assert_eq!(o.delete(key(k)), Ok(models[i].delete(k)));
                }
                Op::Define(i, k, v) => {
                    let o = roots[i].get(&heap).unwrap();
                    let p = Property::Data {
                        value: Value::from(v),
                        writable: false,
                        enumerable: true,
                        configurable: true,
                    };
                    prop_assert_eq!(o.define(key(k), p), Ok(()));
                    models[i].set(k, v);
                }
                Op::Replace(i) => {
                    let m = heap.mutator();
                    roots[i] = heap.root(m.object().unwrap()).unwrap();
                    models[i] = Model::default();
                }
                Op::Literal(i, n) => {
                    let vals: Vec<Value<'_>> = (0..n).map(|k| Value::from(k as u32 * 10)).collect();
                    let m = heap.mutator();
                    roots[i] = heap.root(m.literal(&literals[n - 1], &vals).unwrap()).unwrap();
                    models[i] = Model::default();
                    for k in 0..n {
                        models[i].set(k, k as u32 * 10);
                    }
                }
                Op::Collect => {
                    heap.collect();
                    let shapes = heap.stats().shapes;
                    prop_assert!(
                        shapes <= OBJECTS + literals.len() + 2,
                        "{} shapes for {} objects and {} literals",
                        shapes, OBJECTS, literals.len()
                    );
                    for (r, m) in roots.iter().zip(&models) {
                        check(&heap, r, m, &caches);
                    }
                    continue;
                }
            }
            let i = match op {
                Op::Set(i, ..) | Op::Delete(i, _) | Op::Define(i, ..) | Op::Replace(i) | Op::Literal(i, _) => i,
                Op::Collect => unreachable!("Collect ended its round with `continue` above"),
            };
            check(&heap, &roots[i], &models[i], &caches);
        }
        heap.collect();
        for (r, m) in roots.iter().zip(&models) {
            check(&heap, r, m, &caches);
        }
    }
}
