//! Model test: random operation sequences against a simple reference object (a `Vec` of
//! properties with attributes), including key order, deletes, attributes, seal and freeze,
//! in shape mode and dictionary mode (a delete, or more than `MAX_SHAPE_KEYS` keys).

use gc_object::{Error, Heap, Key, Obj, Property, PropertyKey, Value};
use proptest::prelude::*;

#[derive(Clone, Copy, Debug, PartialEq)]
struct RefProp {
    value: f64,
    w: bool,
    e: bool,
    c: bool,
}

#[derive(Default, Debug)]
struct RefObj {
    props: Vec<(PropertyKey, RefProp)>,
    non_extensible: bool,
}

impl RefObj {
    fn find(&self, k: PropertyKey) -> Option<usize> {
        self.props.iter().position(|p| p.0 == k)
    }
    fn set(&mut self, k: PropertyKey, v: f64) -> Result<(), Error> {
        match self.find(k) {
            Some(i) if !self.props[i].1.w => Err(Error::NotWritable(k)),
            Some(i) => {
                self.props[i].1.value = v;
                Ok(())
            }
            None if self.non_extensible => Err(Error::NotExtensible(k)),
            None => {
                self.props.push((
                    k,
                    RefProp {
                        value: v,
                        w: true,
                        e: true,
                        c: true,
                    },
                ));
                Ok(())
            }
        }
    }
    fn define(&mut self, k: PropertyKey, d: RefProp) -> Result<(), Error> {
        match self.find(k) {
            Some(i) => {
                let cur = self.props[i].1;
                if !cur.c
                    && (d.c
                        || d.e != cur.e
                        || (!cur.w && (d.w || d.value.to_bits() != cur.value.to_bits())))
                {
                    return Err(Error::NotConfigurable(k));
                }
                self.props[i].1 = d;
                Ok(())
            }
            None if self.non_extensible => Err(Error::NotExtensible(k)),
            None => {
                self.props.push((k, d));
                Ok(())
            }
        }
    }
    fn delete(&mut self, k: PropertyKey) -> Result<bool, Error> {
        match self.find(k) {
            None => Ok(false),
            Some(i) if !self.props[i].1.c => Err(Error::NotConfigurable(k)),
            Some(i) => {
                self.props.remove(i);
                Ok(true)
            }
        }
    }
    fn keys(&self) -> Vec<PropertyKey> {
        let mut idx: Vec<PropertyKey> = self
            .props
            .iter()
            .map(|p| p.0)
            .filter(|k| matches!(k, PropertyKey::Index(_)))
            .collect();
        idx.sort();
        idx.extend(
            self.props
                .iter()
                .map(|p| p.0)
                .filter(|k| matches!(k, PropertyKey::Name(_))),
        );
        idx
    }
}

#[derive(Clone, Debug)]
enum Op {
    Set(usize, u8),
    Define(usize, u8, bool, bool, bool),
    Delete(usize),
    PreventExtensions,
    Seal,
    Freeze,
}

const NAMES: usize = 20;
const INDICES: usize = 6;

fn key(i: usize) -> PropertyKey {
    if i < NAMES {
        PropertyKey::Name(Key::new(&format!("m{i}")))
    } else {
        PropertyKey::Index((i - NAMES) as u32 * 3)
    }
}

fn ops() -> impl Strategy<Value = Vec<Op>> {
    let k = 0..NAMES + INDICES;
    let op = prop_oneof![
        8 => (k.clone(), any::<u8>()).prop_map(|(k, v)| Op::Set(k, v)),
        4 => (k.clone(), any::<u8>(), any::<bool>(), any::<bool>(), any::<bool>())
            .prop_map(|(k, v, w, e, c)| Op::Define(k, v, w, e, c)),
        3 => k.prop_map(Op::Delete),
        1 => Just(Op::PreventExtensions),
        1 => Just(Op::Seal),
        1 => Just(Op::Freeze),
    ];
    let len = if cfg!(miri) { 12 } else { 60 };
    prop::collection::vec(op, 0..len)
}

fn check(o: Obj<'_>, r: &RefObj) {
    assert_eq!(o.own_keys().unwrap(), r.keys());
    for (k, p) in &r.props {
        let got = o.get_own_property(*k).unwrap().expect("property present");
        assert_eq!(
            got,
            Property::Data {
                value: Value::number(p.value),
                writable: p.w,
                enumerable: p.e,
                configurable: p.c
            },
            "key {k}"
        );
    }
    assert_eq!(o.is_extensible().unwrap(), !r.non_extensible);
    for i in 0..NAMES + INDICES {
        let k = key(i);
        let want = r
            .find(k)
            .map(|j| Value::number(r.props[j].1.value))
            .unwrap_or(Value::undefined());
        assert_eq!(o.get(k).unwrap(), want);
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: if cfg!(miri) { 6 } else { 256 },
        // Miri isolates the file system: no failure persistence there.
        failure_persistence: if cfg!(miri) { None } else { ProptestConfig::default().failure_persistence },
        ..ProptestConfig::default()
    })]
    #[test]
    fn object_matches_reference(ops in ops(), many in any::<bool>()) {
        let heap = Heap::new();
        let m = heap.mutator();
        let o = m.object().unwrap();
        let mut r = RefObj::default();
        // (Not under Miri, for time: there deletes alone take objects to dictionary mode.)
        if many && !cfg!(miri) {
            // Past MAX_SHAPE_KEYS: the object is in dictionary mode from the start.
            for i in 0..gc_object::MAX_SHAPE_KEYS + 6 {
                let k = PropertyKey::Name(Key::new(&format!("pre{i}")));
                prop_assert_eq!(o.set(k, Value::number(i as f64)), r.set(k, i as f64));
            }
        }
        for op in ops {
            match op {
                Op::Set(k, v) => {
                    let k = key(k);
                    prop_assert_eq!(o.set(k, Value::number(f64::from(v))), r.set(k, f64::from(v)));
                }
                Op::Define(k, v, w, e, c) => {
                    let k = key(k);
                    let d = RefProp { value: f64::from(v), w, e, c };
                    let p = Property::Data { value: Value::number(d.value), writable: w, enumerable: e, configurable: c };
                    prop_assert_eq!(o.define(k, p), r.define(k, d));
                }
                Op::Delete(k) => {
                    let k = key(k);
                    prop_assert_eq!(o.delete(k), r.delete(k));
                }
                Op::PreventExtensions => {
                    o.prevent_extensions().unwrap();
                    r.non_extensible = true;
                }
                Op::Seal => {
                    o.seal().unwrap();
                    r.non_extensible = true;
                    for p in &mut r.props {
                        p.1.c = false;
                    }
                }
                Op::Freeze => {
                    o.freeze().unwrap();
                    r.non_extensible = true;
                    for p in &mut r.props {
                        p.1.c = false;
                        p.1.w = false;
                    }
                }
            }
            check(o, &r);
        }
        let sealed = r.non_extensible && r.props.iter().all(|p| !p.1.c);
        let frozen = sealed && r.props.iter().all(|p| !p.1.w);
        prop_assert_eq!(o.is_sealed().unwrap(), sealed);
        prop_assert_eq!(o.is_frozen().unwrap(), frozen);
    }
}
