//! Elements against a reference model (`BTreeMap<u32, Value>` plus a length): any index up
//! to 2^32 - 2 on arrays and plain objects, dense and sparse, JS `length` semantics.

use std::collections::BTreeMap;

use gc_object::{Error, Heap, MAX_ARRAY_INDEX, Obj, PropertyKey, Value};
use proptest::prelude::*;

#[derive(Default, Debug)]
struct Model {
    elems: BTreeMap<u32, u32>,
    length: u32,
}

#[derive(Clone, Debug)]
enum Op {
    Set(u32, u32),
    Push(u32),
    Delete(u32),
    SetLength(u32),
    /// `a.length = n` through `set`.
    AssignLength(u32),
    /// Delete the `k`-th present index (so deletes hit).
    DeleteNth(usize),
}

fn index() -> impl Strategy<Value = u32> {
    prop_oneof![
        4 => 0u32..40,
        2 => 0u32..5_000,
        1 => 100_000u32..300_000,
        1 => (MAX_ARRAY_INDEX - 50)..=MAX_ARRAY_INDEX,
        1 => 0..=MAX_ARRAY_INDEX,
    ]
}

fn length() -> impl Strategy<Value = u32> {
    prop_oneof![
        4 => 0u32..60,
        1 => 0u32..6_000,
        1 => 0..=u32::MAX,
    ]
}

fn ops(array: bool) -> impl Strategy<Value = Vec<Op>> {
    let v = 0u32..1000;
    let op = prop_oneof![
        6 => (index(), v.clone()).prop_map(|(i, v)| Op::Set(i, v)),
        4 => v.clone().prop_map(Op::Push),
        2 => index().prop_map(Op::Delete),
        3 => (0usize..64).prop_map(Op::DeleteNth),
        2 => length().prop_map(Op::SetLength),
        1 => length().prop_map(Op::AssignLength),
    ]
    .prop_filter("plain objects have no length", move |op| {
        array || !matches!(op, Op::Push(_) | Op::SetLength(_) | Op::AssignLength(_))
    });
    let len = if cfg!(miri) { 10 } else { 50 };
    prop::collection::vec(op, 0..len)
}

fn check(o: Obj<'_>, m: &Model, array: bool) {
    if array {
        assert_eq!(o.array_length().unwrap(), Some(m.length));
        assert_eq!(o.get("length").unwrap(), Value::number(f64::from(m.length)));
    } else {
        assert_eq!(o.array_length().unwrap(), None);
    }
    let mut want: Vec<PropertyKey> = m.elems.keys().map(|&i| PropertyKey::Index(i)).collect();
    if array {
        want.push(PropertyKey::length());
    }
    want.push(PropertyKey::parse("name"));
    assert_eq!(o.own_keys().unwrap(), want);
    for (&i, &v) in &m.elems {
        assert_eq!(o.get(i).unwrap(), Value::from(v), "index {i}");
        assert!(o.has_own(i).unwrap());
    }
    for probe in [0, 1, 17, 4_999, 200_000, MAX_ARRAY_INDEX] {
        if !m.elems.contains_key(&probe) {
            assert!(o.get(probe).unwrap().is_undefined(), "index {probe}");
        }
    }
}

fn run(ops: Vec<Op>, array: bool) -> Result<(), TestCaseError> {
    let heap = Heap::new();
    let mu = heap.mutator();
    let o = if array {
        mu.array().unwrap()
    } else {
        mu.object().unwrap()
    };
    o.set("name", Value::from(1u32)).unwrap();
    let mut m = Model::default();
    for op in ops {
        match op {
            Op::Set(i, v) => {
                o.set(i, Value::from(v)).unwrap();
                m.elems.insert(i, v);
                if array && i >= m.length {
                    m.length = i + 1;
                }
            }
            Op::Push(v) => {
                let r = o.push(Value::from(v));
                if m.length > MAX_ARRAY_INDEX {
                    prop_assert_eq!(r, Err(Error::InvalidArrayLength));
                } else {
                    prop_assert_eq!(r, Ok(()));
                    m.elems.insert(m.length, v);
                    m.length += 1;
                }
            }
            Op::Delete(i) => {
                prop_assert_eq!(o.delete(i).unwrap(), m.elems.remove(&i).is_some());
            }
            Op::DeleteNth(k) => {
                if let Some(&i) = m.elems.keys().nth(k % m.elems.len().max(1)) {
                    prop_assert!(o.delete(i).unwrap());
                    m.elems.remove(&i);
                }
            }
            Op::SetLength(n) => {
                o.set_array_length(n).unwrap();
                m.elems.retain(|&i, _| i < n);
                m.length = n;
            }
            Op::AssignLength(n) => {
                o.set("length", Value::number(f64::from(n))).unwrap();
                m.elems.retain(|&i, _| i < n);
                m.length = n;
            }
        }
        check(o, &m, array);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: if cfg!(miri) { 4 } else { 256 },
        failure_persistence: if cfg!(miri) { None } else { ProptestConfig::default().failure_persistence },
        ..ProptestConfig::default()
    })]
    #[test]
    fn array_elements_match_the_model(ops in ops(true)) {
        run(ops, true)?;
    }

    #[test]
    fn plain_object_index_keys_match_the_model(ops in ops(false)) {
        run(ops, false)?;
    }
}

#[test]
fn far_indices_are_sparse_and_length_deletes_them() {
    let heap = Heap::new();
    let m = heap.mutator();
    let a = m.array().unwrap();
    a.set(200_000u32, Value::from(1u32)).unwrap();
    assert_eq!(a.array_length().unwrap(), Some(200_001));
    let o = m.object().unwrap();
    o.set(3_000_000u32, Value::from(2u32)).unwrap();
    o.set("3000001", Value::from(3u32)).unwrap();
    assert_eq!(
        o.own_keys().unwrap(),
        vec![PropertyKey::Index(3_000_000), PropertyKey::Index(3_000_001)]
    );
    for i in 0..100u32 {
        a.push(Value::from(i)).unwrap();
    }
    assert_eq!(a.array_length().unwrap(), Some(200_101));
    assert_eq!(a.get(200_050u32).unwrap(), Value::from(49u32));
    a.set_array_length(200_050).unwrap();
    assert!(a.get(200_050u32).unwrap().is_undefined());
    assert_eq!(a.get(200_049u32).unwrap(), Value::from(48u32));
    a.set_array_length(0).unwrap();
    assert_eq!(a.own_keys().unwrap(), vec![PropertyKey::length()]);
    a.set(MAX_ARRAY_INDEX, Value::from(5u32)).unwrap();
    assert_eq!(a.array_length().unwrap(), Some(u32::MAX));
    assert_eq!(a.push(Value::from(6u32)), Err(Error::InvalidArrayLength));
}
