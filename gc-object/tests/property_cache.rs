//! `Obj::get_cached` answers exactly what `Obj::get` answers, whatever happened to the
//! object, its shape or its heap since the cache last hit; and the integer conversions of
//! `Value`.

use gc_object::{Error, Heap, Key, Obj, Property, PropertyCache, PropertyKey, Value};
use proptest::prelude::*;

fn n(x: f64) -> Value<'static> {
    Value::number(x)
}

fn same<'h>(o: Obj<'h>, c: &PropertyCache) -> Result<Value<'h>, Error> {
    let want = o.get(c.key());
    let got = o.get_cached(c);
    assert_eq!(got, want, "key {}", c.key());
    got
}

#[test]
fn hits_on_objects_built_alike() {
    let heap = Heap::new();
    let lit = heap.literal(&["a", "b", "c"]);
    let m = heap.mutator();
    let b = PropertyCache::new("b");
    for i in 0..100u32 {
        let o = m
            .literal(
                &lit,
                &[Value::from(i), Value::from(i + 1), Value::from(i + 2)],
            )
            .unwrap();
        assert_eq!(same(o, &b).unwrap(), Value::from(i + 1));
    }
}

/// One site over many key orders of one literal: polymorphic up to `CACHE_SHAPES` shapes,
/// megamorphic past them, and every read right (in a second round too, from the entries).
#[test]
fn polymorphic_and_megamorphic_sites_read_right() {
    use gc_object::{CACHE_SHAPES, MEGAMORPHIC_ENTRIES};
    let heap = Heap::new();
    let m = heap.mutator();
    let names: Vec<String> = (0..6).map(|i| format!("p{i}")).collect();
    let c = PropertyCache::new("p0");
    // Orders: every rotation of the keys, both ways, then objects with a distinct extra key
    // first (more shapes than the megamorphic table has entries).
    let mut objs = Vec::new();
    for r in 0..names.len() {
        for rev in [false, true] {
            let mut ks: Vec<&str> = (0..names.len())
                .map(|i| names[(i + r) % 6].as_str())
                .collect();
            if rev {
                ks.reverse();
            }
            let lit = heap.literal(&ks);
            let vals: Vec<Value<'_>> = ks
                .iter()
                .map(|k| Value::from(k[1..].parse::<u32>().unwrap() + 100 * objs.len() as u32))
                .collect();
            objs.push((m.literal(&lit, &vals).unwrap(), 100 * objs.len() as u32));
        }
    }
    for i in 0..2 * MEGAMORPHIC_ENTRIES as u32 {
        let o = m.object().unwrap();
        o.set(format!("extra{i}").as_str(), Value::from(1u32))
            .unwrap();
        o.set("p0", Value::from(7000 + i)).unwrap();
        objs.push((o, 7000 + i));
    }
    for round in 0..2 {
        for (i, &(o, want)) in objs.iter().enumerate() {
            assert_eq!(
                same(o, &c).unwrap(),
                Value::from(want),
                "round {round}, object {i}"
            );
        }
    }
    let (poly, mega) = c.shapes();
    assert_eq!(poly, CACHE_SHAPES);
    assert!(
        mega > 0 && mega <= MEGAMORPHIC_ENTRIES,
        "{mega} megamorphic entries"
    );
}

#[test]
fn shape_changes_are_seen() {
    let heap = Heap::new();
    let m = heap.mutator();
    let o = m.object().unwrap();
    let x = PropertyCache::new("x");
    assert!(same(o, &x).unwrap().is_undefined());
    o.set("x", n(1.0)).unwrap();
    assert_eq!(same(o, &x).unwrap(), n(1.0));
    // Same shape, new value: a hit must read the slot now.
    o.set("x", n(2.0)).unwrap();
    assert_eq!(same(o, &x).unwrap(), n(2.0));
    // Adding another property changes the shape but not the slot.
    o.set("y", n(3.0)).unwrap();
    assert_eq!(same(o, &x).unwrap(), n(2.0));
    // Deleting it: absent, then re-added in a new slot.
    assert!(o.delete("x").unwrap());
    assert!(same(o, &x).unwrap().is_undefined());
    o.set("x", n(4.0)).unwrap();
    assert_eq!(same(o, &x).unwrap(), n(4.0));
    // A different object whose shape has `x` in another slot.
    let p = m.object().unwrap();
    p.set("z", n(0.0)).unwrap();
    p.set("w", n(0.0)).unwrap();
    p.set("x", n(5.0)).unwrap();
    assert_eq!(same(p, &x).unwrap(), n(5.0));
    assert_eq!(same(o, &x).unwrap(), n(4.0));
}

fn getter_42<'h>(_this: Value<'h>, _arg: Value<'h>) -> Result<Value<'h>, Error> {
    Ok(Value::number(42.0))
}

#[test]
fn accessors_prototypes_attributes_and_restriction() {
    let heap = Heap::new();
    let m = heap.mutator();
    let g = m.function(getter_42).unwrap();
    let k = PropertyCache::new("k");
    let o = m.object().unwrap();
    o.set("k", n(1.0)).unwrap();
    assert_eq!(same(o, &k).unwrap(), n(1.0));
    // The same key becomes an accessor on the same object: the getter runs.
    o.define(
        "k",
        Property::Accessor {
            get: Some(g),
            set: None,
            enumerable: true,
            configurable: true,
        },
    )
    .unwrap();
    assert_eq!(same(o, &k).unwrap(), n(42.0));
    // Inherited through a prototype, then shadowed by an own property.
    let proto = m.object().unwrap();
    proto.set("k", n(7.0)).unwrap();
    let child = m.object_with_proto(Some(proto)).unwrap();
    assert_eq!(same(child, &k).unwrap(), n(7.0));
    child.set("k", n(8.0)).unwrap();
    assert_eq!(same(child, &k).unwrap(), n(8.0));
    // Non-writable (an attribute entry): still read correctly.
    child
        .define(
            "k",
            Property::Data {
                value: n(9.0),
                writable: false,
                enumerable: true,
                configurable: true,
            },
        )
        .unwrap();
    assert_eq!(same(child, &k).unwrap(), n(9.0));
    // Restricted to this thread: other threads get the error, as from `get`.
    let r = m.object().unwrap();
    r.set("k", n(3.0)).unwrap();
    assert_eq!(same(r, &k).unwrap(), n(3.0));
    r.restrict_to_current_thread().unwrap();
    std::thread::scope(|s| {
        s.spawn(|| {
            let k = PropertyCache::new("k");
            assert_eq!(same(r, &k), Err(Error::WrongThread));
        });
    });
    assert_eq!(same(r, &k).unwrap(), n(3.0));
}

/// A cache checks nothing but the shape id: it must never hit on an object that became
/// restricted or got an accessor or attribute after the cache saw its shape.
#[test]
fn a_warm_cache_never_reads_past_a_restriction_or_an_accessor() {
    let heap = Heap::new();
    let lit = heap.literal(&["x", "k"]);
    let m = heap.mutator();
    let g = m.function(getter_42).unwrap();
    let objs: Vec<Obj<'_>> = (0..4u32)
        .map(|i| m.literal(&lit, &[n(0.0), Value::from(i)]).unwrap())
        .collect();
    let k = PropertyCache::new("k");
    // Warm on objs[0]: every object of the literal shares its shape.
    assert_eq!(same(objs[0], &k).unwrap(), Value::from(0u32));
    objs[1].restrict_to_current_thread().unwrap();
    objs[2]
        .define(
            "k",
            Property::Accessor {
                get: Some(g),
                set: None,
                enumerable: true,
                configurable: true,
            },
        )
        .unwrap();
    objs[3]
        .define(
            "x",
            Property::Data {
                value: n(5.0),
                writable: false,
                enumerable: true,
                configurable: true,
            },
        )
        .unwrap();
    std::thread::scope(|s| {
        let warm = k.clone();
        let objs = &objs;
        s.spawn(move || {
            assert_eq!(same(objs[0], &warm).unwrap(), Value::from(0u32));
            assert_eq!(same(objs[1], &warm), Err(Error::WrongThread));
            assert_eq!(same(objs[2], &warm).unwrap(), n(42.0));
            assert_eq!(same(objs[3], &warm).unwrap(), Value::from(3u32));
        });
    });
    assert_eq!(same(objs[1], &k).unwrap(), Value::from(1u32));
    // Back to a data property: the new value, never the slot's old one.
    objs[2].define("k", Property::data(n(7.0))).unwrap();
    assert_eq!(same(objs[2], &k).unwrap(), n(7.0));
    // The shared shape still hits for the untouched object.
    assert_eq!(same(objs[0], &k).unwrap(), Value::from(0u32));
}

#[test]
fn arrays_and_index_keys() {
    let heap = Heap::new();
    let m = heap.mutator();
    let a = m.array().unwrap();
    a.push(n(10.0)).unwrap();
    a.push(n(11.0)).unwrap();
    let len = PropertyCache::new("length");
    let zero = PropertyCache::new("0");
    assert_eq!(zero.key(), PropertyKey::Index(0));
    let one = PropertyCache::new(PropertyKey::Name(Key::new("1")));
    assert_eq!(one.key(), PropertyKey::Index(1));
    assert_eq!(same(a, &len).unwrap(), n(2.0));
    assert_eq!(same(a, &zero).unwrap(), n(10.0));
    assert_eq!(same(a, &one).unwrap(), n(11.0));
    // A plain object with a "length" property, read through the same cache.
    let o = m.object().unwrap();
    o.set("length", n(99.0)).unwrap();
    assert_eq!(same(o, &len).unwrap(), n(99.0));
    assert_eq!(same(a, &len).unwrap(), n(2.0));
}

#[test]
fn a_cache_outlives_heaps_and_never_trusts_a_stale_shape() {
    let x = PropertyCache::new("x");
    for round in 0..50u32 {
        // Each round a fresh heap with a different layout: `x` moves between slots, and
        // the old heap's shapes are freed (their addresses may be reused).
        let heap = Heap::new();
        let names: Vec<String> = (0..round % 5).map(|i| format!("p{i}")).collect();
        let mut all: Vec<&str> = names.iter().map(String::as_str).collect();
        all.push("x");
        let lit = heap.literal(&all);
        let m = heap.mutator();
        let vals: Vec<Value<'_>> = (0..all.len() as u32)
            .map(|i| Value::from(round * 100 + i))
            .collect();
        let o = m.literal(&lit, &vals).unwrap();
        assert_eq!(
            same(o, &x).unwrap(),
            Value::from(round * 100 + all.len() as u32 - 1)
        );
    }
}

#[derive(Clone, Debug)]
enum Op {
    Set(usize, usize, u8),
    Delete(usize, usize),
    Accessor(usize, usize),
    Freeze(usize),
    Read(usize, usize),
}

const OBJECTS: usize = 3;
const KEYS: usize = 6;

fn key(i: usize) -> PropertyKey {
    match i {
        0 => PropertyKey::Index(0),
        1 => PropertyKey::length(),
        _ => PropertyKey::Name(Key::new(&format!("k{i}"))),
    }
}

fn ops() -> impl Strategy<Value = Vec<Op>> {
    let o = 0..OBJECTS;
    let k = 0..KEYS;
    let op = prop_oneof![
        6 => (o.clone(), k.clone(), any::<u8>()).prop_map(|(o, k, v)| Op::Set(o, k, v)),
        2 => (o.clone(), k.clone()).prop_map(|(o, k)| Op::Delete(o, k)),
        1 => (o.clone(), k.clone()).prop_map(|(o, k)| Op::Accessor(o, k)),
        1 => o.clone().prop_map(Op::Freeze),
        8 => (o, k).prop_map(|(o, k)| Op::Read(o, k)),
    ];
    let len = if cfg!(miri) { 16 } else { 80 };
    prop::collection::vec(op, 0..len)
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: if cfg!(miri) { 6 } else { 256 },
        failure_persistence: if cfg!(miri) { None } else { ProptestConfig::default().failure_persistence },
        ..ProptestConfig::default()
    })]
    /// Random changes to a few objects (one an array, one inheriting from another) with one
    /// long-lived cache per key: every read through a cache equals `get`.
    #[test]
    fn cached_reads_equal_get(ops in ops()) {
        let heap = Heap::new();
        let m = heap.mutator();
        let g = m.function(getter_42).unwrap();
        let base = m.object().unwrap();
        let objs = [base, m.object_with_proto(Some(base)).unwrap(), m.array().unwrap()];
        let caches: Vec<PropertyCache> = (0..KEYS).map(|k| PropertyCache::new(key(k))).collect();
        for op in ops {
            match op {
                Op::Set(o, k, v) => {
                    let _ = objs[o].set(key(k), Value::from(u32::from(v)));
                }
                Op::Delete(o, k) => {
                    let _ = objs[o].delete(key(k));
                }
                Op::Accessor(o, k) => {
                    let acc = Property::Accessor { get: Some(g), set: None, enumerable: true, configurable: true };
                    let _ = objs[o].define(key(k), acc);
                }
                Op::Freeze(o) => objs[o].freeze().unwrap(),
                Op::Read(o, k) => {
                    same(objs[o], &caches[k]).unwrap();
                }
            }
            for o in objs {
                for c in &caches {
                    same(o, c).unwrap();
                }
            }
        }
    }
}

#[test]
fn integer_conversions_are_exact() {
    for v in [0u32, 1, 7, 1_000_003, u32::MAX] {
        assert_eq!(Value::from(v), n(f64::from(v)));
        assert_eq!(Value::from(v).as_u32(), Some(v));
    }
    for v in [0i32, -1, 7, i32::MIN, i32::MAX] {
        assert_eq!(Value::from(v), n(f64::from(v)));
        assert_eq!(Value::from(v).as_i32(), Some(v));
    }
    assert_eq!(n(-0.0).as_u32(), Some(0));
    assert_eq!(n(-0.0).as_i32(), Some(0));
    for bad in [0.5, -1.0, 4_294_967_296.0, f64::NAN, f64::INFINITY, -0.5] {
        assert_eq!(n(bad).as_u32(), None, "{bad}");
    }
    for bad in [
        0.5,
        2_147_483_648.0,
        -2_147_483_649.0,
        f64::NAN,
        f64::NEG_INFINITY,
    ] {
        assert_eq!(n(bad).as_i32(), None, "{bad}");
    }
    assert_eq!(Value::undefined().as_u32(), None);
    assert_eq!(Value::bool(true).as_i32(), None);
}
