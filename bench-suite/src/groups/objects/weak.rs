//! Weak references and weak maps: the cost of a `WeakRef` upgrade and of a `WeakMap` get
//! against gc-arena's `GcWeak` and boa_gc's `WeakGc` / `WeakMap`, and the cost of a
//! collection when 10% of the objects are weakly referenced, against the same heap without
//! weak references.
//!
//! Every routine counts (or sums) what it read and the result is checked.

use std::cell::RefCell;

use gc_arena::{Arena, Gc, GcWeak, Rootable};
use gc_object::{Heap, Obj, Root, Value};

use crate::measure::{BenchResult, Case, Ctx};

/// Weak references (or map keys) per batch.
pub const WEAK_COUNT: usize = 4096;
/// Objects in the heap of the collection case.
pub const COLLECT_OBJECTS: usize = 20_000;

fn count_is(want: u64) -> impl Fn(&u64) -> Result<(), String> {
    move |&got| {
        if got == want {
            Ok(())
        } else {
            Err(format!("{got}, expected {want}"))
        }
    }
}

/// Sum of 0..n.
fn triangle(n: usize) -> u64 {
    (n as u64) * (n as u64 - 1) / 2
}

fn upgrade(ctx: &mut Ctx<'_>) -> BenchResult {
    let n = WEAK_COUNT;
    let case = |imp: &str| Case::new("weak upgrade", imp, "refs", n as u64).baseline("gc-object");
    // gc-object: targets kept by roots, weak references in a Vec (they live while the heap
    // is borrowed; no collection runs during the case).
    {
        let heap = Heap::new();
        let m = heap.mutator();
        let targets: Vec<Obj<'_>> = (0..n)
            .map(|i| {
                let o = m.object().expect("object");
                o.set("id", Value::from(i as u32)).expect("set");
                o
            })
            .collect();
        let weak: Vec<_> = targets
            .iter()
            .map(|&t| m.weak_ref(t).expect("weak"))
            .collect();
        ctx.time(
            &case("gc-object"),
            n as u64,
            || (),
            |()| {
                weak.iter()
                    .map(|w| u64::from(w.upgrade().is_some()))
                    .sum::<u64>()
            },
            count_is(n as u64),
        )?;
    }
    // gc-arena: strong `Gc`s in the root keep the targets; `GcWeak::upgrade` per weak.
    {
        type Root = Rootable![Vec<(Gc<'_, u32>, GcWeak<'_, u32>)>];
        let arena: Arena<Root> = Arena::new(|mc| {
            (0..n as u32)
                .map(|i| {
                    let g = Gc::new(mc, i);
                    (g, Gc::downgrade(g))
                })
                .collect()
        });
        ctx.time(
            &case("gc-arena GcWeak"),
            n as u64,
            || (),
            |()| {
                arena.mutate(|mc, root| {
                    root.iter()
                        .map(|(_, w)| u64::from(w.upgrade(mc).is_some()))
                        .sum::<u64>()
                })
            },
            count_is(n as u64),
        )?;
    }
    // boa_gc: `Gc`s held by the benchmark keep the targets; `WeakGc::upgrade` per weak.
    {
        let strong: Vec<boa_gc::Gc<u32>> = (0..n as u32).map(boa_gc::Gc::new).collect();
        let weak: Vec<boa_gc::WeakGc<u32>> = strong.iter().map(boa_gc::WeakGc::new).collect();
        ctx.time(
            &case("boa_gc WeakGc"),
            n as u64,
            || (),
            |()| {
                weak.iter()
                    .map(|w| u64::from(w.upgrade().is_some()))
                    .sum::<u64>()
            },
            count_is(n as u64),
        )?;
        drop(weak);
        drop(strong);
    }
    Ok(())
}

fn map_get(ctx: &mut Ctx<'_>) -> BenchResult {
    let n = WEAK_COUNT;
    let case = |imp: &str| Case::new("weak map get", imp, "keys", n as u64).baseline("gc-object");
    {
        let heap = Heap::new();
        let m = heap.mutator();
        let map = m.weak_map().expect("map");
        let keys: Vec<Obj<'_>> = (0..n).map(|_| m.object().expect("object")).collect();
        for (i, &k) in keys.iter().enumerate() {
            map.set(k, Value::from(i as u32)).expect("set");
        }
        ctx.time(
            &case("gc-object"),
            n as u64,
            || (),
            |()| {
                keys.iter()
                    .map(|&k| {
                        let v = map.get(k).expect("get").expect("entry");
                        u64::from(v.as_u32().expect("u32"))
                    })
                    .sum::<u64>()
            },
            count_is(triangle(n)),
        )?;
    }
    {
        let keys: Vec<boa_gc::Gc<u32>> = (0..n as u32).map(boa_gc::Gc::new).collect();
        let mut map = boa_gc::WeakMap::<u32, u32>::new();
        for (i, k) in keys.iter().enumerate() {
            map.insert(k, i as u32);
        }
        ctx.time(
            &case("boa_gc WeakMap"),
            n as u64,
            || (),
            |()| {
                keys.iter()
                    .map(|k| {
                        let e = map.get(k).expect("entry");
                        u64::from(*e.value().expect("value"))
                    })
                    .sum::<u64>()
            },
            count_is(triangle(n)),
        )?;
        drop(map);
        drop(keys);
    }
    Ok(())
}

/// A heap of `COLLECT_OBJECTS` objects kept by one rooted array, and (if `weak`) a rooted
/// array of weak references to every tenth of them.
fn collect_heap(weak: bool) -> (Heap, Vec<Root>) {
    let heap = Heap::new();
    let roots = {
        let m = heap.mutator();
        let all = m.array().expect("array");
        let refs = m.array().expect("array");
        for i in 0..COLLECT_OBJECTS {
            let o = m.object().expect("object");
            o.set("id", Value::from(i as u32)).expect("set");
            all.push(o.value()).expect("push");
            if weak && i % 10 == 0 {
                refs.push(m.weak_ref(o).expect("weak").value())
                    .expect("push");
            }
        }
        vec![
            heap.root(all).expect("root"),
            heap.root(refs).expect("root"),
        ]
    };
    (heap, roots)
}

fn collect_weak(ctx: &mut Ctx<'_>) -> BenchResult {
    for (pct, weak) in [(0u64, false), (10, true)] {
        let (heap, roots) = collect_heap(weak);
        let heap = RefCell::new(heap);
        let want = COLLECT_OBJECTS as u64 + 2 + if weak { COLLECT_OBJECTS as u64 / 10 } else { 0 };
        let case = Case::new("collect", "gc-object", "weak %", pct).baseline("gc-object");
        ctx.time(
            &case,
            COLLECT_OBJECTS as u64,
            || (),
            |()| {
                let s = heap.borrow_mut().collect();
                (s.marked, s.freed, s.weak_cleared)
            },
            |&(marked, freed, cleared)| {
                if (marked, freed, cleared) == (want, 0, 0) {
                    Ok(())
                } else {
                    Err(format!(
                        "marked {marked} (expected {want}), freed {freed}, cleared {cleared}"
                    ))
                }
            },
        )?;
        drop(roots);
    }
    Ok(())
}

/// Every case of this file.
pub fn run(ctx: &mut Ctx<'_>) -> BenchResult {
    upgrade(ctx)?;
    map_get(ctx)?;
    collect_weak(ctx)?;
    Ok(())
}
