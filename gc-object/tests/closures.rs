//! Native closures: host data captured by the closure, a traced environment value, a
//! mutator in every call (so they allocate), accessors reached through `Mutator::get` and
//! `Mutator::set`, collection of the closure with its function, and the errors.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use gc_object::{Error, Heap, Property, Value};

/// Counts its drops.
struct Tracker(Arc<AtomicUsize>);
impl Drop for Tracker {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn a_closure_captures_host_data_allocates_and_keeps_its_environment() {
    let mut heap = Heap::new();
    let calls = Arc::new(AtomicUsize::new(0));
    let drops = Arc::new(AtomicUsize::new(0));
    let f = {
        let m = heap.mutator();
        let env = m.array().unwrap(); // the closure's state, only reachable through it
        let (c, t) = (Arc::clone(&calls), Tracker(Arc::clone(&drops)));
        let f = m
            .closure(env.value(), move |m, _this, arg, env| {
                let _keep = &t;
                c.fetch_add(1, Ordering::SeqCst);
                let note = m.object()?; // allocates
                note.set("arg", arg)?;
                let env = env.as_object().expect("the environment is an array");
                env.push(note.value())?;
                Ok(env.array_length()?.unwrap().into())
            })
            .unwrap();
        assert!(f.is_function());
        assert_eq!(m.call(f, Value::UNDEFINED, 7u32.into()), Ok(1u32.into()));
        assert_eq!(m.call(f, Value::UNDEFINED, 8u32.into()), Ok(2u32.into()));
        // Without a mutator a closure cannot run.
        assert_eq!(
            f.call(Value::UNDEFINED, 9u32.into()),
            Err(Error::NeedsMutator)
        );
        heap.root(f).unwrap()
    };
    // The function keeps its environment and the objects in it: function, env, 2 notes.
    let s = heap.collect();
    assert_eq!((s.marked, s.freed), (4, 0));
    {
        let m = heap.mutator();
        let f = f.get(m.heap()).unwrap();
        assert_eq!(m.call(f, Value::UNDEFINED, 10u32.into()), Ok(3u32.into()));
    }
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    assert_eq!(drops.load(Ordering::SeqCst), 0);
    // Unrooted: the function, its environment and the notes go, and the Rust closure is
    // dropped with them.
    drop(f);
    let s = heap.collect();
    assert_eq!((s.marked, s.freed), (0, 5));
    assert_eq!(drops.load(Ordering::SeqCst), 1);
}

#[test]
fn closures_as_accessors_get_the_mutator() {
    let heap = Heap::new();
    let m = heap.mutator();
    let env = m.object().unwrap();
    env.set("stored", Value::UNDEFINED).unwrap();
    let getter = m
        .closure(env.value(), |m, this, _, env| {
            // A fresh object each time, holding what the setter stored.
            let o = m.object()?;
            o.set("this_is_object", this.as_object().is_some().into())?;
            o.set("stored", env.as_object().unwrap().get("stored")?)?;
            Ok(o.value())
        })
        .unwrap();
    let setter = m
        .closure(env.value(), |m, _, v, env| {
            let s = m.string("set")?;
            let env = env.as_object().unwrap();
            env.set("stored", v)?;
            env.set("how", s.value())?;
            Ok(Value::UNDEFINED)
        })
        .unwrap();
    let proto = m.object().unwrap();
    proto
        .define(
            "acc",
            Property::Accessor {
                get: Some(getter),
                set: Some(setter),
                enumerable: true,
                configurable: true,
            },
        )
        .unwrap();
    let o = m.object_with_proto(Some(proto)).unwrap();
    assert_eq!(o.get("acc"), Err(Error::NeedsMutator));
    assert_eq!(o.set("acc", 1u32.into()), Err(Error::NeedsMutator));
    m.set(o, "acc", 5u32.into()).unwrap();
    assert_eq!(env.get("stored").unwrap(), 5u32.into());
    assert_eq!(env.get("how").unwrap().as_str(), Some("set"));
    assert!(!o.has_own("acc").unwrap()); // the inherited setter ran, nothing was added
    let got = m.get(o, "acc").unwrap().as_object().unwrap();
    assert_eq!(got.get("stored").unwrap(), 5u32.into());
    assert_eq!(got.get("this_is_object").unwrap(), true.into());
    // Plain properties and plain native functions work through the mutator too.
    o.set("plain", 3u32.into()).unwrap();
    assert_eq!(m.get(o, "plain").unwrap(), 3u32.into());
    let f = m.function(|_, a| Ok(a)).unwrap();
    assert_eq!(m.call(f, Value::UNDEFINED, 4u32.into()), Ok(4u32.into()));
    assert_eq!(f.call(Value::UNDEFINED, 4u32.into()), Ok(4u32.into()));
}

#[test]
fn closure_errors_are_values() {
    let (h1, h2) = (Heap::new(), Heap::new());
    let (m1, m2) = (h1.mutator(), h2.mutator());
    let drops = Arc::new(AtomicUsize::new(0));
    let foreign = m2.object().unwrap();
    let t = Tracker(Arc::clone(&drops));
    let r = m1.closure(foreign.value(), move |_, _, _, _| {
        let _keep = &t;
        Ok(Value::UNDEFINED)
    });
    assert_eq!(r.err(), Some(Error::ForeignHeap));
    assert_eq!(
        drops.load(Ordering::SeqCst),
        1,
        "the refused closure is dropped"
    );
    let f2 = m2
        .closure(Value::UNDEFINED, |_, _, _, _| Ok(1u32.into()))
        .unwrap();
    assert_eq!(
        m1.call(f2, Value::UNDEFINED, Value::UNDEFINED),
        Err(Error::ForeignHeap)
    );
    let not_fn = m1.object().unwrap();
    assert_eq!(
        m1.call(not_fn, Value::UNDEFINED, Value::UNDEFINED),
        Err(Error::NotCallable)
    );
    let thrower = m1
        .closure(Value::UNDEFINED, |_, _, _, _| Err(Error::Thrown("boom")))
        .unwrap();
    assert_eq!(
        m1.call(thrower, Value::UNDEFINED, Value::UNDEFINED),
        Err(Error::Thrown("boom"))
    );
    assert_eq!(
        m2.call(f2, Value::UNDEFINED, Value::UNDEFINED),
        Ok(1u32.into())
    );
}

#[test]
fn a_dropped_heap_drops_its_closures() {
    let drops = Arc::new(AtomicUsize::new(0));
    {
        let heap = Heap::new();
        let m = heap.mutator();
        for _ in 0..3 {
            let t = Tracker(Arc::clone(&drops));
            m.closure(Value::UNDEFINED, move |_, _, _, _| {
                let _keep = &t;
                Ok(Value::UNDEFINED)
            })
            .unwrap();
        }
    }
    assert_eq!(drops.load(Ordering::SeqCst), 3);
}
