//! Several threads on one object and on one shared heap.
#![cfg(not(loom))]

use std::sync::atomic::{AtomicUsize, Ordering};

use gc_object::{Heap, INLINE_SLOTS, Key, Property, PropertyKey, Root, Value};

const THREADS: usize = 4;

fn scale(n: usize) -> usize {
    if cfg!(miri) { n.min(8) } else { n }
}

#[test]
fn concurrent_adds_and_writes_on_one_object_lose_nothing() {
    let heap = Heap::new();
    let m = heap.mutator();
    let o = m.object().unwrap();
    let arr = m.array().unwrap();
    let per = scale(3 * INLINE_SLOTS);
    let keys: Vec<Vec<Key>> = (0..THREADS)
        .map(|t| (0..per).map(|i| Key::new(&format!("t{t}_{i}"))).collect())
        .collect();
    std::thread::scope(|s| {
        for (t, ks) in keys.iter().enumerate() {
            s.spawn(move || {
                for (i, &k) in ks.iter().enumerate() {
                    o.set(k, Value::number((t * 1000 + i) as f64)).unwrap();
                    // Readers on every thread see complete properties only.
                    for (j, &k2) in ks[..=i].iter().enumerate() {
                        assert_eq!(o.get(k2).unwrap(), Value::number((t * 1000 + j) as f64));
                    }
                    arr.set(
                        PropertyKey::Index((i * THREADS + t) as u32),
                        Value::number(1.0),
                    )
                    .unwrap();
                    if i % 7 == 0 {
                        o.define(
                            format!("ro{t}_{i}").as_str(),
                            Property::Data {
                                value: Value::number(1.0),
                                writable: false,
                                enumerable: true,
                                configurable: true,
                            },
                        )
                        .unwrap();
                    }
                }
            });
        }
    });
    let own = o.own_keys().unwrap();
    let ro = THREADS * per.div_ceil(7);
    assert_eq!(own.len(), THREADS * per + ro);
    for (t, ks) in keys.iter().enumerate() {
        for (i, &k) in ks.iter().enumerate() {
            assert_eq!(o.get(k).unwrap(), Value::number((t * 1000 + i) as f64));
        }
    }
    assert_eq!(arr.array_length().unwrap(), Some((THREADS * per) as u32));
    for i in 0..THREADS * per {
        assert_eq!(
            arr.get(PropertyKey::Index(i as u32)).unwrap(),
            Value::number(1.0)
        );
    }
}

#[test]
fn first_installation_from_many_threads_installs_once() {
    for _ in 0..scale(50) {
        let heap = Heap::new();
        let m = heap.mutator();
        let o = m.object().unwrap();
        for i in 0..INLINE_SLOTS {
            o.set(format!("p{i}").as_str(), Value::number(0.0)).unwrap();
        }
        std::thread::scope(|s| {
            for t in 0..THREADS {
                s.spawn(move || match t % 3 {
                    0 => o
                        .set(format!("spill{t}").as_str(), Value::number(t as f64))
                        .unwrap(),
                    1 => o
                        .set(PropertyKey::Index(t as u32), Value::number(t as f64))
                        .unwrap(),
                    _ => o
                        .define(
                            "p0",
                            Property::Data {
                                value: Value::number(0.0),
                                writable: false,
                                enumerable: true,
                                configurable: true,
                            },
                        )
                        .unwrap(),
                });
            }
        });
        for t in 0..THREADS {
            match t % 3 {
                0 => assert_eq!(
                    o.get(format!("spill{t}").as_str()).unwrap(),
                    Value::number(t as f64)
                ),
                1 => assert_eq!(
                    o.get(PropertyKey::Index(t as u32)).unwrap(),
                    Value::number(t as f64)
                ),
                _ => assert_eq!(
                    o.set("p0", Value::number(1.0)),
                    Err(gc_object::Error::NotWritable(PropertyKey::parse("p0")))
                ),
            }
        }
    }
}

/// 4 threads push onto one array at once: no push is lost or doubled (`push` reads the
/// length and writes that index as one step under the object's lock).
#[test]
fn concurrent_pushes_lose_nothing() {
    let per = if cfg!(miri) { 40 } else { 100_000 };
    let heap = Heap::new();
    let m = heap.mutator();
    let arr = m.array().unwrap();
    std::thread::scope(|s| {
        for t in 0..THREADS {
            s.spawn(move || {
                for i in 0..per {
                    arr.push(Value::from((t * per + i) as u32)).unwrap();
                }
            });
        }
    });
    let len = arr.array_length().unwrap().unwrap() as usize;
    assert_eq!(len, THREADS * per);
    let mut seen = vec![false; THREADS * per];
    let mut last = [None; THREADS];
    for j in 0..len {
        let v = arr
            .get(PropertyKey::Index(j as u32))
            .unwrap()
            .as_u32()
            .unwrap() as usize;
        assert!(!seen[v], "value {v} pushed twice");
        seen[v] = true;
        // Each thread's pushes land in its own order.
        let (t, i) = (v / per, v % per);
        assert!(last[t].is_none_or(|p| p < i), "thread {t} out of order");
        last[t] = Some(i);
    }
    assert!(seen.iter().all(|&b| b), "every value exactly once");
}

/// Threads define and delete disjoint keys of one object at once (named keys, which move
/// the object to dictionary mode on the first delete, and index keys, sparse and dense),
/// with readers on every thread: the object ends with exactly the keys each thread left.
#[test]
fn concurrent_define_and_delete_of_disjoint_keys_end_in_the_exact_key_set() {
    let per = scale(300);
    let rounds = if cfg!(miri) { 1 } else { 3 };
    let heap = Heap::new();
    let m = heap.mutator();
    let o = m.object().unwrap();
    let name = |t: usize, i: usize| Key::new(&format!("d{t}_{i}"));
    let index = |t: usize, i: usize| PropertyKey::Index((i * THREADS + t) as u32 * 1000);
    // Kept at the end: i % 3 != 0, and i % 6 == 0 (deleted, then defined again).
    let kept = |i: usize| !i.is_multiple_of(3) || i.is_multiple_of(6);
    std::thread::scope(|s| {
        for t in 0..THREADS {
            s.spawn(move || {
                for round in 0..rounds {
                    for i in 0..per {
                        let v = Value::from((t * per + i) as u32);
                        o.define(name(t, i), Property::data(v)).unwrap();
                        if t % 2 == 0 {
                            o.define(index(t, i), Property::data(v)).unwrap();
                        }
                    }
                    for i in (0..per).filter(|i| i.is_multiple_of(3)) {
                        assert!(o.delete(name(t, i)).unwrap());
                        if t % 2 == 0 {
                            assert!(o.delete(index(t, i)).unwrap());
                        }
                        assert!(o.get(name(t, i)).unwrap().is_undefined());
                    }
                    for i in (0..per).filter(|i| i.is_multiple_of(6)) {
                        let v = Value::from((t * per + i) as u32);
                        o.set(name(t, i), v).unwrap();
                        if t % 2 == 0 {
                            o.set(index(t, i), v).unwrap();
                        }
                    }
                    for i in 0..per {
                        let want = if kept(i) {
                            Value::from((t * per + i) as u32)
                        } else {
                            Value::undefined()
                        };
                        assert_eq!(o.get(name(t, i)).unwrap(), want, "round {round}");
                    }
                    if round + 1 < rounds {
                        for i in (0..per).filter(|&i| kept(i)) {
                            assert!(o.delete(name(t, i)).unwrap());
                            if t % 2 == 0 {
                                assert!(o.delete(index(t, i)).unwrap());
                            }
                        }
                    }
                }
            });
        }
    });
    let mut want: Vec<PropertyKey> = Vec::new();
    for t in 0..THREADS {
        for i in (0..per).filter(|&i| kept(i)) {
            want.push(PropertyKey::Name(name(t, i)));
            if t % 2 == 0 {
                want.push(index(t, i));
            }
        }
    }
    let mut got = o.own_keys().unwrap();
    assert_eq!(got.len(), want.len());
    got.sort();
    want.sort();
    assert_eq!(got, want);
    for t in 0..THREADS {
        for i in (0..per).filter(|&i| kept(i)) {
            let v = Value::from((t * per + i) as u32);
            assert_eq!(o.get(name(t, i)).unwrap(), v);
            if t % 2 == 0 {
                assert_eq!(o.get(index(t, i)).unwrap(), v);
            }
        }
    }
}

/// Shared heap: threads allocate through their own mutators, link objects across threads,
/// mutate shared objects; collections between rounds; at the end the reachable graph is
/// exactly what the threads built and nothing else is left.
#[test]
fn shared_heap_stress() {
    let mut heap = Heap::new();
    let rounds = scale(6);
    let per_thread = scale(400);
    let (shared_root, lists): (Root, Vec<Root>) = {
        let m = heap.mutator();
        let shared = m.object().unwrap();
        let lists = (0..THREADS)
            .map(|_| heap.root(m.array().unwrap()).unwrap())
            .collect();
        (heap.root(shared).unwrap(), lists)
    };
    let mut expected_live = 1 + THREADS; // shared object + one list per thread
    for round in 0..rounds {
        let garbage = AtomicUsize::new(0);
        {
            let heap = &heap;
            let shared = shared_root.get(heap).unwrap();
            let lists: Vec<_> = lists.iter().map(|r| r.get(heap).unwrap()).collect();
            let lists = &lists;
            let garbage = &garbage;
            std::thread::scope(|s| {
                for t in 0..THREADS {
                    s.spawn(move || {
                        let m = heap.mutator();
                        let list = lists[t];
                        for i in 0..per_thread {
                            let o = m.object().unwrap();
                            o.set("round", Value::number(round as f64)).unwrap();
                            o.set("i", Value::number(i as f64)).unwrap();
                            if i % 4 == 0 {
                                // Kept: linked from this thread's list.
                                list.push(o.value()).unwrap();
                                // Cross-thread link: point at the previous thread's list.
                                o.set("peer", lists[(t + 1) % THREADS].value()).unwrap();
                            } else {
                                garbage.fetch_add(1, Ordering::Relaxed);
                            }
                            // Everyone mutates the shared object.
                            shared
                                .set(format!("t{t}").as_str(), Value::number(i as f64))
                                .unwrap();
                        }
                    });
                }
            });
        }
        let kept = THREADS * per_thread.div_ceil(4);
        expected_live += kept;
        let s = heap.collect();
        assert_eq!(s.marked as usize, expected_live, "round {round}");
        assert_eq!(
            s.freed as usize,
            garbage.load(Ordering::Relaxed),
            "round {round}"
        );
        let shared = shared_root.get(&heap).unwrap();
        for t in 0..THREADS {
            assert_eq!(
                shared.get(format!("t{t}").as_str()).unwrap(),
                Value::number((per_thread - 1) as f64)
            );
        }
    }
    // Every kept object is where its thread put it.
    for (t, r) in lists.iter().enumerate() {
        let list = r.get(&heap).unwrap();
        let len = list.array_length().unwrap().unwrap() as usize;
        assert_eq!(len, rounds * per_thread.div_ceil(4));
        for j in 0..len {
            let o = list
                .get(PropertyKey::Index(j as u32))
                .unwrap()
                .as_object()
                .unwrap();
            assert_eq!(
                o.get("round").unwrap(),
                Value::number((j / per_thread.div_ceil(4)) as f64)
            );
            assert_eq!(
                o.get("peer").unwrap().as_object(),
                Some(lists[(t + 1) % THREADS].get(&heap).unwrap())
            );
        }
    }
    drop(lists);
    drop(shared_root);
    let s = heap.collect();
    assert_eq!(s.marked, 0);
    assert_eq!(s.freed as usize, expected_live);
}

/// Independent heaps, one per thread, still work side by side.
#[test]
fn independent_heaps_per_thread() {
    std::thread::scope(|s| {
        for t in 0..THREADS {
            s.spawn(move || {
                let mut heap = Heap::new();
                let lit = heap.literal(&["value", "stamp", "previous"]);
                for round in 0..3 {
                    {
                        let m = heap.mutator();
                        for i in 0..scale(1000) {
                            m.literal(
                                &lit,
                                &[
                                    Value::number((t + i) as f64),
                                    Value::number(1.0),
                                    Value::number(round as f64),
                                ],
                            )
                            .unwrap();
                        }
                    }
                    let s = heap.collect();
                    assert_eq!(s.freed as usize, scale(1000));
                }
            });
        }
    });
}

#[test]
fn weak_refs_and_finalizer_registration_while_other_threads_mutate() {
    use std::sync::{Arc, Mutex};
    let mut heap = Heap::new();
    let n = scale(400);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    // Roots: a registry, a shared object, a list per thread, a weak-ref list per registrar.
    let (registry, shared_root, lists, weaks) = {
        let m = heap.mutator();
        let r = m
            .finalization_registry(move |_, held| {
                log.lock().unwrap().push(held.as_u32().unwrap());
                Ok(())
            })
            .unwrap();
        let lists: Vec<Root> = (0..THREADS)
            .map(|_| heap.root(m.array().unwrap()).unwrap())
            .collect();
        let weaks: Vec<Root> = (0..2)
            .map(|_| heap.root(m.array().unwrap()).unwrap())
            .collect();
        let shared = heap.root(m.object().unwrap()).unwrap();
        (heap.root_value(r.value()).unwrap(), shared, lists, weaks)
    };
    {
        let heap = &heap;
        let r = registry
            .value(heap)
            .unwrap()
            .as_finalization_registry()
            .unwrap();
        let shared = shared_root.get(heap).unwrap();
        let lists: Vec<_> = lists.iter().map(|r| r.get(heap).unwrap()).collect();
        let weaks: Vec<_> = weaks.iter().map(|r| r.get(heap).unwrap()).collect();
        let (lists, weaks) = (&lists, &weaks);
        std::thread::scope(|s| {
            // Threads 0 and 1: make targets, a weak reference to each and a registration
            // of each (held: its id); every even target is kept.
            for t in 0..2 {
                s.spawn(move || {
                    let m = heap.mutator();
                    for i in 0..n {
                        let id = (t * n + i) as u32;
                        let o = m.object().unwrap();
                        o.set("id", id.into()).unwrap();
                        let w = m.weak_ref(o).unwrap();
                        weaks[t].push(w.value()).unwrap();
                        r.register(o, id.into(), None).unwrap();
                        if i % 2 == 0 {
                            lists[t].push(o.value()).unwrap();
                        }
                        shared.set(format!("r{t}").as_str(), id.into()).unwrap();
                    }
                });
            }
            // Threads 2 and 3 mutate meanwhile: the shared object, fresh objects and
            // string values, a quarter of each kept.
            for (t, &list) in lists.iter().enumerate().skip(2) {
                s.spawn(move || {
                    let m = heap.mutator();
                    for i in 0..n {
                        let o = m.object().unwrap();
                        o.set("i", (i as u32).into()).unwrap();
                        let st = m.string(&format!("t{t} string {i}")).unwrap();
                        if i % 4 == 0 {
                            list.push(o.value()).unwrap();
                            list.push(st.value()).unwrap();
                        }
                        shared
                            .set(format!("m{t}").as_str(), (i as u32).into())
                            .unwrap();
                        shared
                            .set(format!("k{t}_{}", i % 8).as_str(), st.value())
                            .unwrap();
                    }
                });
            }
        });
    }
    let dropped_targets = 2 * (n / 2);
    let mutator_kept = 2 * 2 * n.div_ceil(4);
    // The strings still held by the shared object's `k{t}_{j}` slots (the last 8 per
    // mutator thread), unless they are kept in the list anyway.
    let held_by_shared: usize = (2..THREADS)
        .map(|_| (n - 8.min(n)..n).filter(|i| i % 4 != 0).count())
        .sum();
    let s = heap.collect();
    assert_eq!(s.weak_cleared as usize, dropped_targets);
    assert_eq!(s.finalizers_queued as usize, dropped_targets);
    let roots = 1 + 1 + THREADS + 2;
    let live = roots + 2 * n.div_ceil(2) + 2 * n + mutator_kept + held_by_shared;
    assert_eq!(s.marked as usize, live);
    let garbage = dropped_targets + 2 * 2 * n - mutator_kept - held_by_shared;
    assert_eq!(s.freed as usize, garbage);
    // Exactly the dropped targets' callbacks, once each, after the collection.
    assert!(seen.lock().unwrap().is_empty());
    assert_eq!(heap.run_finalizers(), Ok(dropped_targets));
    assert_eq!(heap.run_finalizers(), Ok(0));
    let mut got = seen.lock().unwrap().clone();
    got.sort_unstable();
    let want: Vec<u32> = (0..2)
        .flat_map(|t| {
            (0..n)
                .filter(|i| i % 2 == 1)
                .map(move |i| (t * n + i) as u32)
        })
        .collect();
    assert_eq!(got, want);
    // Weak references: kept targets upgrade to the right object, dropped ones to nothing.
    for (t, w) in weaks.iter().enumerate() {
        let w = w.get(&heap).unwrap();
        assert_eq!(w.array_length().unwrap(), Some(n as u32));
        for i in 0..n {
            let wr = w.get(i as u32).unwrap().as_weak_ref().unwrap();
            match wr.upgrade() {
                Some(o) => {
                    assert_eq!(i % 2, 0);
                    assert_eq!(o.get("id").unwrap(), ((t * n + i) as u32).into());
                }
                None => assert_eq!(i % 2, 1),
            }
        }
    }
    // A second collection changes nothing.
    let s = heap.collect();
    assert_eq!((s.weak_cleared, s.finalizers_queued, s.freed), (0, 0, 0));
    assert_eq!(s.marked as usize, live);
}
