//! The one handle type: `Obj`, `WeakRef`, `WeakMap`, `FinalizationRegistry`, `Symbol` and
//! `HeapString` are `Gc<'h, K>` for their kind `K`, so code generic over the kind works on
//! all of them: copy, compare, print, send; and a value downcasts to exactly its kind.

use gc_object::{
    CellKind, FinalizationRegistryKind, Gc, Heap, HeapString, Obj, ObjectKind, StringKind, Symbol,
    SymbolKind, Value, WeakMapKind, WeakRefKind,
};
use static_assertions::{assert_impl_all, assert_not_impl_any};

assert_impl_all!(Gc<'static, ObjectKind>: Copy, Send, Sync, Eq, core::fmt::Debug);
assert_impl_all!(Gc<'static, WeakRefKind>: Copy, Send, Sync, Eq);
assert_impl_all!(Gc<'static, WeakMapKind>: Copy, Send, Sync, Eq);
assert_impl_all!(Gc<'static, FinalizationRegistryKind>: Copy, Send, Sync, Eq);
assert_impl_all!(Gc<'static, SymbolKind>: Copy, Send, Sync, Eq);
assert_impl_all!(Gc<'static, StringKind>: Copy, Send, Sync, Eq);
// A `Gc` of one kind is not another kind's.
assert_not_impl_any!(Obj<'static>: From<Symbol<'static>>);
const _: () = assert!(core::mem::size_of::<Option<HeapString<'static>>>() == size_of::<usize>());

/// Generic over the kind: what every handle offers.
fn describe<K: CellKind>(a: Gc<'_, K>, b: Gc<'_, K>) -> (String, bool, bool) {
    let copy = a;
    (format!("{a:?}"), a == copy, a == b)
}

/// Sends a handle to another thread and back (borrowing the heap for the scope).
fn through_a_thread<K: CellKind>(g: Gc<'_, K>) -> Gc<'_, K> {
    std::thread::scope(|s| s.spawn(move || g).join().unwrap())
}

#[test]
fn every_kind_is_one_generic_handle() {
    let heap = Heap::new();
    let m = heap.mutator();
    let (o1, o2) = (m.object().unwrap(), m.object().unwrap());
    let (d, same, other) = describe(o1, o2);
    assert!(d.starts_with("Obj@0x"), "{d}");
    assert!(same && !other);
    assert_eq!(through_a_thread(o1), o1);

    let (w1, w2) = (m.weak_ref(o1).unwrap(), m.weak_ref(o1).unwrap());
    let (d, same, other) = describe(w1, w2);
    assert!(d.starts_with("WeakRef@0x"), "{d}");
    assert!(
        same && !other,
        "two weak references to one target are two cells"
    );
    assert_eq!(through_a_thread(w1).upgrade(), Some(o1));

    let (m1, m2) = (m.weak_map().unwrap(), m.weak_map().unwrap());
    let (d, same, other) = describe(m1, m2);
    assert!(d.starts_with("WeakMap@0x"), "{d}");
    assert!(same && !other);

    let (r1, r2) = (
        m.finalization_registry(|_, _| Ok(())).unwrap(),
        m.finalization_registry(|_, _| Ok(())).unwrap(),
    );
    let (d, same, other) = describe(r1, r2);
    assert!(d.starts_with("FinalizationRegistry@0x"), "{d}");
    assert!(same && !other);

    // Symbols print their description and are equal only to themselves.
    let (s1, s2) = (
        m.symbol(Some("tag")).unwrap(),
        m.symbol(Some("tag")).unwrap(),
    );
    assert_eq!(describe(s1, s2), ("Symbol(tag)".to_owned(), true, false));
    assert_eq!(format!("{:?}", m.symbol(None).unwrap()), "Symbol()");

    // String values print and compare by their text, whichever cells hold it.
    let (t1, t2) = (m.string("hi").unwrap(), m.string("hi").unwrap());
    assert_eq!(describe(t1, t2), ("\"hi\"".to_owned(), true, true));
    assert_ne!(t1, m.string("ho").unwrap());
    assert_eq!(through_a_thread(t1).as_str(), "hi");
}

#[test]
fn a_value_downcasts_to_its_own_kind_only() {
    let heap = Heap::new();
    let m = heap.mutator();
    let o = m.object().unwrap();
    let values: [Value<'_>; 6] = [
        o.value(),
        m.weak_ref(o).unwrap().value(),
        m.weak_map().unwrap().value(),
        m.finalization_registry(|_, _| Ok(())).unwrap().value(),
        m.symbol(None).unwrap().value(),
        m.string("text").unwrap().value(),
    ];
    for (i, v) in values.iter().enumerate() {
        let kinds = [
            v.as_object().is_some(),
            v.as_weak_ref().is_some(),
            v.as_weak_map().is_some(),
            v.as_finalization_registry().is_some(),
            v.as_symbol().is_some(),
            v.as_heap_string().is_some(),
        ];
        let want: Vec<bool> = (0..6).map(|k| k == i).collect();
        assert_eq!(kinds.to_vec(), want, "value {i}");
    }
    // Numbers and interned strings name no cell: no kind.
    for v in [Value::number(1.5), Value::from(gc_object::Key::new("k"))] {
        assert!(v.as_object().is_none() && v.as_symbol().is_none());
        assert!(v.as_heap_string().is_none() && v.as_weak_ref().is_none());
    }
}
