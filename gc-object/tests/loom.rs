//! loom models of the object protocol (run with `RUSTFLAGS="--cfg loom"`). `INLINE_SLOTS`
//! is 2 under loom, so the third property spills.
#![cfg(loom)]

use loom::sync::Arc;
use loom::thread;

use gc_object::{Heap, INLINE_SLOTS, Key, Property, Root, Value};

fn setup() -> (Arc<Heap>, Arc<Root>) {
    let heap = Heap::new();
    let root = {
        let m = heap.mutator();
        let o = m.object().unwrap();
        for i in 0..INLINE_SLOTS {
            o.set(format!("p{i}").as_str(), Value::number(i as f64))
                .unwrap();
        }
        heap.root(o).unwrap()
    };
    (Arc::new(heap), Arc::new(root))
}

fn keys() -> (Key, Key, Key) {
    (Key::new("p0"), Key::new("spill_a"), Key::new("spill_b"))
}

#[test]
fn loom_first_installation_race() {
    let (p0, a, _) = keys();
    loom::model(move || {
        let (heap, root) = setup();
        let (h2, r2) = (heap.clone(), root.clone());
        let t = thread::spawn(move || {
            // Installs storage + external slots.
            let o = r2.get(&h2).unwrap();
            o.set(a, Value::number(10.0)).unwrap();
        });
        {
            // Installs storage + cold state.
            let o = root.get(&heap).unwrap();
            o.define(
                p0,
                Property::Data {
                    value: Value::number(5.0),
                    writable: false,
                    enumerable: true,
                    configurable: true,
                },
            )
            .unwrap();
        }
        t.join().unwrap();
        let o = root.get(&heap).unwrap();
        assert!(o.has_side_state().unwrap());
        assert_eq!(o.get(a).unwrap(), Value::number(10.0));
        assert_eq!(
            o.get_own_property(p0).unwrap(),
            Some(Property::Data {
                value: Value::number(5.0),
                writable: false,
                enumerable: true,
                configurable: true
            })
        );
    });
}

#[test]
fn loom_publication_vs_unlocked_reader() {
    let (p0, a, _) = keys();
    loom::model(move || {
        let (heap, root) = setup();
        let (h2, r2) = (heap.clone(), root.clone());
        let t = thread::spawn(move || {
            let o = r2.get(&h2).unwrap();
            o.set(a, Value::number(10.0)).unwrap();
        });
        {
            let o = root.get(&heap).unwrap();
            // Lock-free reads: the spilled property is either absent or complete. (The
            // yields let loom schedule the writer between the reads: its partial-order
            // reduction does not reorder a load before a same-location load-then-store.)
            for _ in 0..2 {
                let v = o.get(a).unwrap();
                assert!(v.is_undefined() || v == Value::number(10.0), "{v:?}");
                assert_eq!(o.get(p0).unwrap(), Value::number(0.0));
                thread::yield_now();
            }
        }
        t.join().unwrap();
        assert_eq!(
            root.get(&heap).unwrap().get(a).unwrap(),
            Value::number(10.0)
        );
    });
}

#[test]
fn loom_two_threads_add_properties() {
    let (_, a, b) = keys();
    loom::model(move || {
        let (heap, root) = setup();
        let (h2, r2) = (heap.clone(), root.clone());
        let t = thread::spawn(move || {
            r2.get(&h2).unwrap().set(a, Value::number(1.0)).unwrap();
        });
        root.get(&heap).unwrap().set(b, Value::number(2.0)).unwrap();
        t.join().unwrap();
        let o = root.get(&heap).unwrap();
        assert_eq!(o.get(a).unwrap(), Value::number(1.0));
        assert_eq!(o.get(b).unwrap(), Value::number(2.0));
        assert_eq!(o.own_keys().unwrap().len(), INLINE_SLOTS + 2);
    });
}

/// Two threads push onto one array at once: both elements land, at different indices.
#[test]
fn loom_two_concurrent_pushes() {
    loom::model(|| {
        let heap = Heap::new();
        let root = {
            let m = heap.mutator();
            heap.root(m.array().unwrap()).unwrap()
        };
        let (heap, root) = (Arc::new(heap), Arc::new(root));
        let (h2, r2) = (heap.clone(), root.clone());
        let t = thread::spawn(move || {
            r2.get(&h2).unwrap().push(Value::number(1.0)).unwrap();
        });
        root.get(&heap).unwrap().push(Value::number(2.0)).unwrap();
        t.join().unwrap();
        let a = root.get(&heap).unwrap();
        assert_eq!(a.array_length().unwrap(), Some(2));
        let mut got: Vec<f64> = (0..2u32)
            .map(|i| a.get(i).unwrap().as_number().unwrap())
            .collect();
        got.sort_by(f64::total_cmp);
        assert_eq!(got, vec![1.0, 2.0]);
    });
}

/// A reader of a dictionary-mode object while a writer's set/delete churn compacts the
/// dictionary in place: the reader always sees the untouched key's value (the sequence
/// lock makes it retry across a compaction).
#[test]
fn loom_dictionary_reader_vs_compaction() {
    let (p0, a, _) = keys();
    loom::model(move || {
        let heap = Heap::new();
        let root = {
            let m = heap.mutator();
            let o = m.object().unwrap();
            o.set(a, Value::number(1.0)).unwrap();
            o.set(p0, Value::number(7.0)).unwrap();
            // The first delete moves the object to dictionary mode: entries [a, p0] in a
            // table of 4. Two more set/delete rounds leave it full: [-, p0, -, -].
            o.delete(a).unwrap();
            for _ in 0..2 {
                o.set(a, Value::number(1.0)).unwrap();
                o.delete(a).unwrap();
            }
            heap.root(o).unwrap()
        };
        let (heap, root) = (Arc::new(heap), Arc::new(root));
        let (h2, r2) = (heap.clone(), root.clone());
        let t = thread::spawn(move || {
            let o = r2.get(&h2).unwrap();
            // The dictionary is full with one live entry: this add compacts in place,
            // moving p0 to the front.
            o.set(a, Value::number(2.0)).unwrap();
        });
        {
            let o = root.get(&heap).unwrap();
            for _ in 0..2 {
                assert_eq!(o.get(p0).unwrap(), Value::number(7.0));
                thread::yield_now();
            }
        }
        t.join().unwrap();
        let o = root.get(&heap).unwrap();
        assert_eq!(o.get(a).unwrap(), Value::number(2.0));
        assert_eq!(o.own_keys().unwrap().len(), 2);
    });
}

/// Two threads link two objects crosswise (`a.__proto__ = b` and `b.__proto__ = a`): one of
/// them must see the other's link and refuse with `PrototypeCycle`. A cycle would make
/// every lookup of a missing key loop forever.
#[test]
fn loom_crosswise_prototypes_make_no_cycle() {
    loom::model(|| {
        let heap = Heap::new();
        let (ra, rb) = {
            let m = heap.mutator();
            let a = m.object().unwrap();
            let b = m.object().unwrap();
            (heap.root(a).unwrap(), heap.root(b).unwrap())
        };
        let (heap, ra, rb) = (Arc::new(heap), Arc::new(ra), Arc::new(rb));
        let (h2, a2, b2) = (heap.clone(), ra.clone(), rb.clone());
        let t = thread::spawn(move || {
            let (a, b) = (a2.get(&h2).unwrap(), b2.get(&h2).unwrap());
            let _ = a.set_prototype(Some(b));
        });
        {
            let (a, b) = (ra.get(&heap).unwrap(), rb.get(&heap).unwrap());
            let _ = b.set_prototype(Some(a));
        }
        t.join().unwrap();
        let (a, b) = (ra.get(&heap).unwrap(), rb.get(&heap).unwrap());
        let cycle = a.prototype().unwrap() == Some(b) && b.prototype().unwrap() == Some(a);
        assert!(!cycle, "prototype cycle a <-> b");
    });
}

/// Two threads register targets in one finalization registry at once (the second
/// registration under loom's 2-entry first table grows it): every registration is kept,
/// and each callback runs once after the collection.
#[test]
fn loom_two_threads_register_in_one_registry() {
    loom::model(|| {
        let heap = Heap::new();
        let calls = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let reg = {
            let m = heap.mutator();
            let c = calls.clone();
            let r = m
                .finalization_registry(move |_, held| {
                    assert!(held.as_u32().is_some());
                    c.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    Ok(())
                })
                .unwrap();
            r.register(m.object().unwrap(), 0u32.into(), None).unwrap();
            heap.root_value(r.value()).unwrap()
        };
        let (heap, reg) = (Arc::new(heap), Arc::new(reg));
        let (h2, r2) = (heap.clone(), reg.clone());
        let t = thread::spawn(move || {
            let m = h2.mutator();
            let r = r2.value(&h2).unwrap().as_finalization_registry().unwrap();
            r.register(m.object().unwrap(), 1u32.into(), None).unwrap();
        });
        {
            let m = heap.mutator();
            let r = reg
                .value(&heap)
                .unwrap()
                .as_finalization_registry()
                .unwrap();
            r.register(m.object().unwrap(), 2u32.into(), None).unwrap();
        }
        t.join().unwrap();
        let mut heap = Arc::try_unwrap(heap).unwrap();
        assert_eq!(heap.collect().finalizers_queued, 3);
        assert_eq!(heap.run_finalizers(), Ok(3));
        assert_eq!(calls.load(std::sync::atomic::Ordering::Relaxed), 3);
    });
}
