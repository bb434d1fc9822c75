//! Property semantics through the public API.

use gc_object::{Error, Heap, INLINE_SLOTS, Key, Property, PropertyKey, Value};

fn n(x: f64) -> Value<'static> {
    Value::number(x)
}

fn k(s: &str) -> PropertyKey {
    PropertyKey::parse(s)
}

#[test]
fn get_set_and_prototype_chain() {
    let heap = Heap::new();
    let m = heap.mutator();
    let proto = m.object().unwrap();
    proto.set("inherited", n(1.0)).unwrap();
    let o = m.object_with_proto(Some(proto)).unwrap();
    o.set("own", n(2.0)).unwrap();
    assert_eq!(o.get("own").unwrap(), n(2.0));
    assert_eq!(o.get("inherited").unwrap(), n(1.0));
    assert!(o.get("missing").unwrap().is_undefined());
    assert!(!o.has_own("inherited").unwrap());
    // Assignment shadows, it does not write the prototype.
    o.set("inherited", n(3.0)).unwrap();
    assert_eq!(o.get("inherited").unwrap(), n(3.0));
    assert_eq!(proto.get("inherited").unwrap(), n(1.0));
    // Cycles are refused.
    assert_eq!(proto.set_prototype(Some(o)), Err(Error::PrototypeCycle));
    assert_eq!(o.set_prototype(Some(o)), Err(Error::PrototypeCycle));
    // An inherited read-only property blocks assignment.
    proto
        .define(
            "ro",
            Property::Data {
                value: n(5.0),
                writable: false,
                enumerable: true,
                configurable: true,
            },
        )
        .unwrap();
    assert_eq!(o.set("ro", n(6.0)), Err(Error::NotWritable(k("ro"))));
    assert_eq!(o.get("ro").unwrap(), n(5.0));
}

#[test]
fn values_round_trip() {
    let heap = Heap::new();
    let m = heap.mutator();
    let o = m.object().unwrap();
    let other = m.object().unwrap();
    let s = Key::new("hello");
    let vals = [
        Value::undefined(),
        Value::null(),
        Value::bool(true),
        Value::bool(false),
        n(0.0),
        n(-0.0),
        n(f64::NAN),
        n(f64::INFINITY),
        n(-1.5e300),
        Value::string(s),
        other.value(),
    ];
    for (i, v) in vals.iter().enumerate() {
        o.set(format!("p{i}").as_str(), *v).unwrap();
    }
    for (i, v) in vals.iter().enumerate() {
        assert_eq!(o.get(format!("p{i}").as_str()).unwrap(), *v, "value {i}");
    }
    assert!(o.get("p6").unwrap().as_number().unwrap().is_nan());
    assert_ne!(n(0.0), n(-0.0));
    assert_eq!(o.get("p9").unwrap().as_string(), Some(s));
    assert_eq!(o.get("p10").unwrap().as_object(), Some(other));
    assert_eq!(std::mem::size_of::<Value<'_>>(), 8);
}

#[test]
fn type_of_names_every_kind_of_value() {
    fn f<'h>(_: Value<'h>, _: Value<'h>) -> Result<Value<'h>, gc_object::Error> {
        Ok(Value::undefined())
    }
    let heap = Heap::new();
    let m = heap.mutator();
    let cases = [
        (Value::undefined(), "undefined"),
        (Value::null(), "object"),
        (Value::bool(false), "boolean"),
        (n(f64::NAN), "number"),
        (Value::string(Key::new("s")), "string"),
        (m.string("a string value").unwrap().value(), "string"),
        (m.symbol(None).unwrap().value(), "symbol"),
        (m.object().unwrap().value(), "object"),
        (m.array().unwrap().value(), "object"),
        (m.function(f).unwrap().value(), "function"),
        (
            m.closure(Value::undefined(), |_, _, _, _| Ok(Value::null()))
                .unwrap()
                .value(),
            "function",
        ),
    ];
    let target = m.object().unwrap();
    let weak = [
        m.weak_ref(target).unwrap().value(),
        m.weak_map().unwrap().value(),
        m.finalization_registry(|_, _| Ok(())).unwrap().value(),
    ];
    for (v, want) in cases.into_iter().chain(weak.map(|v| (v, "object"))) {
        assert_eq!(v.type_of(), want, "{v:?}");
    }
}

#[test]
fn spill_past_inline_slots_and_delete() {
    let heap = Heap::new();
    let m = heap.mutator();
    let o = m.object().unwrap();
    let count = INLINE_SLOTS + 20;
    for i in 0..count {
        o.set(format!("k{i}").as_str(), n(i as f64)).unwrap();
        assert_eq!(o.has_side_state().unwrap(), i >= INLINE_SLOTS);
    }
    for i in 0..count {
        assert_eq!(o.get(format!("k{i}").as_str()).unwrap(), n(i as f64));
    }
    assert!(o.delete("k3").unwrap());
    assert!(!o.delete("k3").unwrap());
    assert!(o.get("k3").unwrap().is_undefined());
    o.set("k3", n(33.0)).unwrap();
    let keys = o.own_keys().unwrap();
    assert_eq!(keys.len(), count);
    assert_eq!(*keys.last().unwrap(), k("k3"), "re-added key goes last");
    assert_eq!(o.get("k3").unwrap(), n(33.0));
}

#[test]
fn own_keys_order() {
    let heap = Heap::new();
    let m = heap.mutator();
    let o = m.object().unwrap();
    o.set("b", n(1.0)).unwrap();
    o.set(PropertyKey::Index(10), n(1.0)).unwrap();
    o.set("a", n(1.0)).unwrap();
    o.set(PropertyKey::Index(2), n(1.0)).unwrap();
    o.set("10x", n(1.0)).unwrap();
    assert_eq!(
        o.own_keys().unwrap(),
        vec![k("2"), k("10"), k("b"), k("a"), k("10x")]
    );
}

#[test]
fn attributes_and_define() {
    let heap = Heap::new();
    let m = heap.mutator();
    let o = m.object().unwrap();
    o.define(
        "x",
        Property::Data {
            value: n(1.0),
            writable: false,
            enumerable: false,
            configurable: false,
        },
    )
    .unwrap();
    assert_eq!(o.set("x", n(2.0)), Err(Error::NotWritable(k("x"))));
    assert_eq!(o.delete("x"), Err(Error::NotConfigurable(k("x"))));
    // Redefining identically is allowed, changing is not.
    o.define(
        "x",
        Property::Data {
            value: n(1.0),
            writable: false,
            enumerable: false,
            configurable: false,
        },
    )
    .unwrap();
    assert_eq!(
        o.define(
            "x",
            Property::Data {
                value: n(2.0),
                writable: false,
                enumerable: false,
                configurable: false
            }
        ),
        Err(Error::NotConfigurable(k("x")))
    );
    assert_eq!(
        o.define("x", Property::data(n(1.0))),
        Err(Error::NotConfigurable(k("x")))
    );
    let d = o.get_own_property("x").unwrap().unwrap();
    assert_eq!(
        d,
        Property::Data {
            value: n(1.0),
            writable: false,
            enumerable: false,
            configurable: false
        }
    );
    // A writable non-configurable property can still be written and made read-only.
    o.define(
        "y",
        Property::Data {
            value: n(1.0),
            writable: true,
            enumerable: true,
            configurable: false,
        },
    )
    .unwrap();
    o.set("y", n(2.0)).unwrap();
    o.define(
        "y",
        Property::Data {
            value: n(3.0),
            writable: false,
            enumerable: true,
            configurable: false,
        },
    )
    .unwrap();
    assert_eq!(o.get("y").unwrap(), n(3.0));
    // A configurable property goes back to defaults and loses its cold entry.
    o.define(
        "z",
        Property::Data {
            value: n(1.0),
            writable: false,
            enumerable: true,
            configurable: true,
        },
    )
    .unwrap();
    o.define("z", Property::data(n(4.0))).unwrap();
    o.set("z", n(5.0)).unwrap();
    assert_eq!(o.get("z").unwrap(), n(5.0));
}

fn getter_42<'h>(_this: Value<'h>, _arg: Value<'h>) -> Result<Value<'h>, Error> {
    Ok(Value::number(42.0))
}

fn getter_this_x<'h>(this: Value<'h>, _arg: Value<'h>) -> Result<Value<'h>, Error> {
    this.as_object()
        .ok_or(Error::Thrown("this is not an object"))?
        .get("x")
}

fn setter_to_x<'h>(this: Value<'h>, arg: Value<'h>) -> Result<Value<'h>, Error> {
    let o = this
        .as_object()
        .ok_or(Error::Thrown("this is not an object"))?;
    o.set("x", arg)?;
    Ok(Value::undefined())
}

#[test]
fn accessors() {
    let heap = Heap::new();
    let m = heap.mutator();
    let g42 = m.function(getter_42).unwrap();
    let gx = m.function(getter_this_x).unwrap();
    let sx = m.function(setter_to_x).unwrap();
    assert!(g42.is_function());
    let proto = m.object().unwrap();
    proto
        .define(
            "acc",
            Property::Accessor {
                get: Some(gx),
                set: Some(sx),
                enumerable: true,
                configurable: true,
            },
        )
        .unwrap();
    let o = m.object_with_proto(Some(proto)).unwrap();
    o.set("x", n(7.0)).unwrap();
    // Inherited getter sees the receiver as `this`.
    assert_eq!(o.get("acc").unwrap(), n(7.0));
    // Inherited setter runs on the receiver.
    o.set("acc", n(9.0)).unwrap();
    assert_eq!(o.get("x").unwrap(), n(9.0));
    assert!(!o.has_own("acc").unwrap());
    // Getter only.
    o.define(
        "ro",
        Property::Accessor {
            get: Some(g42),
            set: None,
            enumerable: false,
            configurable: true,
        },
    )
    .unwrap();
    assert_eq!(o.get("ro").unwrap(), n(42.0));
    assert_eq!(o.set("ro", n(1.0)), Err(Error::NoSetter(k("ro"))));
    // Accessor -> data.
    o.define("ro", Property::data(n(1.0))).unwrap();
    assert_eq!(o.get("ro").unwrap(), n(1.0));
    assert_eq!(
        o.call(Value::undefined(), Value::undefined()),
        Err(Error::NotCallable)
    );
    assert_eq!(
        o.define(
            PropertyKey::Index(0),
            Property::Accessor {
                get: Some(g42),
                set: None,
                enumerable: true,
                configurable: true
            }
        ),
        Err(Error::Unsupported(
            "accessor properties on array-index keys"
        ))
    );
}

#[test]
fn arrays_and_length() {
    let heap = Heap::new();
    let m = heap.mutator();
    let a = m.array().unwrap();
    assert!(a.is_array().unwrap());
    assert_eq!(a.array_length().unwrap(), Some(0));
    for i in 0..10 {
        a.push(n(i as f64)).unwrap();
    }
    assert_eq!(a.get("length").unwrap(), n(10.0));
    a.set("length", n(4.0)).unwrap();
    assert_eq!(a.array_length().unwrap(), Some(4));
    assert!(a.get(PropertyKey::Index(5)).unwrap().is_undefined());
    // Sparse length: no elements, just a length floor in cold state.
    a.set_array_length(1000).unwrap();
    assert_eq!(a.array_length().unwrap(), Some(1000));
    assert_eq!(
        a.own_keys().unwrap(),
        vec![k("0"), k("1"), k("2"), k("3"), k("length")]
    );
    a.set(PropertyKey::Index(20), n(1.0)).unwrap();
    assert_eq!(a.array_length().unwrap(), Some(1000));
    a.set(PropertyKey::Index(1500), n(1.0)).unwrap();
    assert_eq!(a.array_length().unwrap(), Some(1501));
    assert_eq!(a.set("length", n(-1.0)), Err(Error::InvalidArrayLength));
    assert_eq!(a.set("length", n(1.5)), Err(Error::InvalidArrayLength));
    assert_eq!(
        a.delete("length"),
        Err(Error::NotConfigurable(PropertyKey::length()))
    );
    // Any index up to 2^32 - 2 is accepted (a sparse element far past the dense ones).
    a.set(PropertyKey::Index(4_000_000_000), n(1.0)).unwrap();
    assert_eq!(a.array_length().unwrap(), Some(4_000_000_001));
    assert_eq!(a.get(PropertyKey::Index(4_000_000_000)).unwrap(), n(1.0));
    a.set_array_length(1501).unwrap();
    assert!(
        a.get(PropertyKey::Index(4_000_000_000))
            .unwrap()
            .is_undefined()
    );
    // Deleting an element leaves a hole and keeps the length.
    assert!(a.delete(PropertyKey::Index(1500)).unwrap());
    assert_eq!(a.array_length().unwrap(), Some(1501));
    // Read-only length.
    a.define(
        "length",
        Property::Data {
            value: n(3.0),
            writable: false,
            enumerable: false,
            configurable: false,
        },
    )
    .unwrap();
    assert_eq!(a.array_length().unwrap(), Some(3));
    assert_eq!(
        a.push(n(1.0)),
        Err(Error::NotWritable(PropertyKey::length()))
    );
    a.set(PropertyKey::Index(1), n(11.0)).unwrap();
    let plain = m.object().unwrap();
    assert_eq!(plain.set_array_length(1), Err(Error::NotAnArray));
}

#[test]
fn prevent_extensions_seal_freeze() {
    let heap = Heap::new();
    let m = heap.mutator();
    let o = m.object().unwrap();
    o.set("a", n(1.0)).unwrap();
    o.prevent_extensions().unwrap();
    assert!(!o.is_extensible().unwrap());
    assert_eq!(o.set("b", n(1.0)), Err(Error::NotExtensible(k("b"))));
    o.set("a", n(2.0)).unwrap();
    assert!(!o.is_sealed().unwrap());
    o.seal().unwrap();
    assert!(o.is_sealed().unwrap());
    assert!(!o.is_frozen().unwrap());
    assert_eq!(o.delete("a"), Err(Error::NotConfigurable(k("a"))));
    o.set("a", n(3.0)).unwrap();
    o.freeze().unwrap();
    assert!(o.is_frozen().unwrap());
    assert_eq!(o.set("a", n(4.0)), Err(Error::NotWritable(k("a"))));
    assert_eq!(o.get("a").unwrap(), n(3.0));
    let arr = m.array().unwrap();
    arr.push(n(1.0)).unwrap();
    arr.freeze().unwrap();
    assert_eq!(
        arr.set(PropertyKey::Index(0), n(2.0)),
        Err(Error::NotWritable(k("0")))
    );
    assert_eq!(arr.push(n(2.0)), Err(Error::NotExtensible(k("1"))));
    assert_eq!(
        arr.set_array_length(0),
        Err(Error::NotWritable(PropertyKey::length()))
    );
    let p = m.object().unwrap();
    assert!(matches!(
        o.set_prototype(Some(p)),
        Err(Error::NotExtensible(_))
    ));
    // An empty non-extensible object is frozen.
    let e = m.object().unwrap();
    e.prevent_extensions().unwrap();
    assert!(e.is_frozen().unwrap());
}

#[test]
fn literals_share_shapes() {
    let heap = Heap::new();
    let lit = heap.literal(&["value", "stamp", "previous"]);
    let m = heap.mutator();
    let a = m.literal(&lit, &[n(1.0), n(2.0), n(3.0)]).unwrap();
    let b = m.object().unwrap();
    for (key, v) in [("value", 4.0), ("stamp", 5.0), ("previous", 6.0)] {
        b.set(key, n(v)).unwrap();
    }
    assert_eq!(a.own_keys().unwrap(), b.own_keys().unwrap());
    assert_eq!(a.get("stamp").unwrap(), n(2.0));
    assert!(!a.has_side_state().unwrap());
    assert_eq!(
        m.literal(&lit, &[n(1.0); 4]).err(),
        Some(Error::TooManyValues)
    );
    let other = Heap::new();
    let om = other.mutator();
    assert_eq!(om.literal(&lit, &[]).err(), Some(Error::ForeignHeap));
    let x = om.object().unwrap();
    assert_eq!(a.set("value", x.value()), Err(Error::ForeignHeap));
    assert_eq!(heap.root(x).err(), Some(Error::ForeignHeap));
    // A literal longer than the inline slots takes the general path.
    let names: Vec<String> = (0..INLINE_SLOTS + 3).map(|i| format!("f{i}")).collect();
    let refs: Vec<&str> = names.iter().map(|s| s.as_str()).collect();
    let big = heap.literal(&refs);
    let vals: Vec<Value<'_>> = (0..refs.len()).map(|i| n(i as f64)).collect();
    let o = m.literal(&big, &vals).unwrap();
    assert_eq!(
        o.get(refs[INLINE_SLOTS + 2]).unwrap(),
        n((INLINE_SLOTS + 2) as f64)
    );
}

#[test]
fn restriction_to_owner_thread() {
    let heap = Heap::new();
    let m = heap.mutator();
    let o = m.object().unwrap();
    o.set("a", n(1.0)).unwrap();
    o.restrict_to_current_thread().unwrap();
    o.set("a", n(2.0)).unwrap();
    std::thread::scope(|s| {
        s.spawn(|| {
            assert_eq!(o.get("a"), Err(Error::WrongThread));
            assert_eq!(o.set("a", n(3.0)), Err(Error::WrongThread));
            assert_eq!(o.restrict_to_current_thread(), Err(Error::WrongThread));
            assert_eq!(o.own_keys(), Err(Error::WrongThread));
        });
    });
    assert_eq!(o.get("a").unwrap(), n(2.0));
}

#[test]
fn restriction_covers_array_queries_and_side_state() {
    let heap = Heap::new();
    let m = heap.mutator();
    let a = m.array().unwrap();
    a.push(n(1.0)).unwrap();
    a.restrict_to_current_thread().unwrap();
    std::thread::scope(|s| {
        s.spawn(|| {
            assert_eq!(a.is_array(), Err(Error::WrongThread));
            assert_eq!(a.array_length(), Err(Error::WrongThread));
            assert_eq!(a.has_side_state(), Err(Error::WrongThread));
            assert_eq!(a.push(n(2.0)), Err(Error::WrongThread));
            assert_eq!(a.set_array_length(0), Err(Error::WrongThread));
        });
    });
    assert_eq!(a.is_array(), Ok(true));
    assert_eq!(a.array_length(), Ok(Some(1)));
    assert_eq!(a.has_side_state(), Ok(true));
}

#[test]
fn roots_survive_collection() {
    let mut heap = Heap::new();
    let root = {
        let m = heap.mutator();
        let o = m.object().unwrap();
        let child = m.object().unwrap();
        child.set("v", n(5.0)).unwrap();
        o.set("child", child.value()).unwrap();
        for _ in 0..100 {
            m.object().unwrap();
        }
        heap.root(o).unwrap()
    };
    let s = heap.collect();
    assert_eq!(s.marked, 2);
    assert_eq!(s.freed, 100);
    let o = root.get(&heap).unwrap();
    let child = o.get("child").unwrap().as_object().unwrap();
    assert_eq!(child.get("v").unwrap(), n(5.0));
    let other = Heap::new();
    assert_eq!(root.get(&other).err(), Some(Error::ForeignHeap));
    drop(root);
    let s = heap.collect();
    assert_eq!((s.marked, s.freed), (0, 2));
}

/// A literal names each property once (JS `{a: 1, a: 2}` has one key): a repeated name is
/// rejected with a message that says so, instead of a shape listing the key twice.
#[test]
#[should_panic(expected = "gc-object: literal names property \"a\" twice")]
fn literal_with_a_repeated_name_is_rejected() {
    let heap = Heap::new();
    let lit = heap.literal(&["a", "b", "a"]);
    let m = heap.mutator();
    let o = m.literal(&lit, &[n(1.0), n(2.0), n(3.0)]).unwrap();
    // Without the check (release): `a` is listed twice and reads the first value.
    let keys = o.own_keys().unwrap();
    assert_eq!(keys.len(), 2, "own keys {keys:?}");
}

/// A literal's names become shape keys; an array-index name ("0") would be a named
/// property that `get("0")` (an index key) never finds. Rejected with a message.
#[test]
#[should_panic(expected = "gc-object: literal property \"0\" is an array index")]
fn literal_with_an_index_name_is_rejected() {
    let heap = Heap::new();
    let lit = heap.literal(&["x", "0"]);
    let m = heap.mutator();
    let o = m.literal(&lit, &[n(1.0), n(2.0)]).unwrap();
    // Without the check: the value is stored but not found.
    assert_eq!(o.get("0").unwrap(), n(2.0));
}

/// `Name("0")` and `Index(0)` are one property, whichever spelling made it (no separate
/// named property "0" that shadows or hides the element).
#[test]
fn index_like_names_are_the_index() {
    use gc_object::{Key, PropertyKey};
    let heap = gc_object::Heap::new();
    let m = heap.mutator();
    let a = m.array().unwrap();
    a.push(gc_object::Value::number(7.0)).unwrap();
    let name = PropertyKey::Name(Key::new("0"));
    assert_eq!(a.get(name).unwrap(), gc_object::Value::number(7.0));
    assert_eq!(
        a.get(PropertyKey::from(Key::new("0"))).unwrap(),
        gc_object::Value::number(7.0)
    );
    let o = m.object().unwrap();
    o.set(
        PropertyKey::Name(Key::new("5")),
        gc_object::Value::number(1.0),
    )
    .unwrap();
    assert_eq!(o.get(5u32).unwrap(), gc_object::Value::number(1.0));
    assert!(o.has_own("5").unwrap());
    assert!(o.delete(PropertyKey::Name(Key::new("5"))).unwrap());
    assert!(!o.has_own(5u32).unwrap());
}
