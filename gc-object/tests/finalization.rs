//! Finalization registries: a model test (a registration's callback is queued exactly when
//! its target is unreachable, runs once, after the collection, with a live held value, and
//! may allocate), plus the lifecycle and error cases.

use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use gc_object::{Error, FinalizationRegistry, Heap, Mutator, Obj, Root, Value};
use proptest::prelude::*;

type Log = Arc<Mutex<Vec<u32>>>;

/// A registry whose callback records the held value's id (a number, or an object's `id`
/// property), and allocates: it appends a fresh `{ id }` object to the rooted `sink` array.
fn logging_registry<'h>(
    m: &mut Mutator<'h>,
    log: &Log,
    sink: Arc<Root>,
) -> FinalizationRegistry<'h> {
    let log = Arc::clone(log);
    m.finalization_registry(move |m, held| {
        let id = match held.as_object() {
            Some(o) => o.get("id")?.as_u32().expect("held objects have an id"),
            None => held.as_u32().expect("held numbers are ids"),
        };
        log.lock().unwrap().push(id);
        let note = m.object()?;
        note.set("id", id.into())?;
        sink.get(m.heap())?.push(note.value())?;
        Ok(())
    })
    .unwrap()
}

#[derive(Debug, Clone)]
struct Case {
    nodes: usize,
    strong: Vec<(usize, usize)>,
    /// (target, held): held `Some(node)` is that object, `None` a number.
    regs: Vec<(usize, Option<usize>)>,
    roots: Vec<usize>,
    drop_roots: usize,
}

fn cases() -> impl Strategy<Value = Case> {
    let max: usize = if cfg!(miri) { 8 } else { 30 };
    (2..max).prop_flat_map(|nodes| {
        (
            Just(nodes),
            prop::collection::vec((0..nodes, 0..nodes), 0..nodes * 2),
            prop::collection::vec((0..nodes, prop::option::of(0..nodes)), 0..nodes * 2),
            prop::collection::vec(0..nodes, 1..4),
            0usize..4,
        )
            .prop_map(|(nodes, strong, regs, roots, drop_roots)| Case {
                nodes,
                strong,
                // A target cannot be its own held value.
                regs: regs
                    .into_iter()
                    .map(|(t, h)| (t, h.filter(|&h| h != t)))
                    .collect(),
                roots,
                drop_roots,
            })
    })
}

/// Nodes reachable from `roots` through strong edges and the held values of the
/// registrations still registered (the registry is alive and holds them strongly).
fn reachable(c: &Case, roots: &[usize], registered: &[bool]) -> HashSet<usize> {
    let mut seen = HashSet::new();
    let mut stack: Vec<usize> = roots.to_vec();
    stack.extend(
        c.regs
            .iter()
            .zip(registered)
            .filter_map(|(&(_, h), &r)| h.filter(|_| r)),
    );
    while let Some(n) = stack.pop() {
        if !seen.insert(n) {
            continue;
        }
        for &(a, b) in &c.strong {
            if a == n {
                stack.push(b);
            }
        }
    }
    seen
}

fn run_case(c: &Case) {
    let mut heap = Heap::new();
    let log: Log = Arc::default();
    let (mut roots, reg_root, sink) = {
        let mut m = heap.mutator();
        let sink = Arc::new(heap.root(m.array().unwrap()).unwrap());
        let objs: Vec<Obj<'_>> = (0..c.nodes)
            .map(|i| {
                let o = m.object().unwrap();
                o.set("id", Value::from(i as u32)).unwrap();
                o
            })
            .collect();
        for (e, &(a, b)) in c.strong.iter().enumerate() {
            objs[a]
                .set(format!("s{e}").as_str(), objs[b].value())
                .unwrap();
        }
        let reg = logging_registry(&mut m, &log, Arc::clone(&sink));
        for (r, &(t, h)) in c.regs.iter().enumerate() {
            // Held numbers are ids past the nodes: 1000 + registration.
            let held = h.map_or(Value::from(1000 + r as u32), |h| objs[h].value());
            reg.register(objs[t], held, None).unwrap();
        }
        let roots: Vec<(usize, Root)> = c
            .roots
            .iter()
            .map(|&i| (i, heap.root(objs[i]).unwrap()))
            .collect();
        (roots, heap.root_value(reg.value()).unwrap(), sink)
    };
    let id_of = |r: usize| c.regs[r].1.map_or(1000 + r as u32, |h| h as u32);
    let mut registered = vec![true; c.regs.len()];
    let mut calls: BTreeMap<usize, u32> = BTreeMap::new();
    for round in 0..2 {
        if round == 1 {
            roots.truncate(roots.len().saturating_sub(c.drop_roots));
        }
        let root_ids: Vec<usize> = roots.iter().map(|(i, _)| *i).collect();
        let live = reachable(c, &root_ids, &registered);
        let dies: Vec<usize> = (0..c.regs.len())
            .filter(|&r| registered[r] && !live.contains(&c.regs[r].0))
            .collect();
        let s = heap.collect();
        assert_eq!(
            s.finalizers_queued,
            dies.len() as u64,
            "round {round}: {c:?}"
        );
        // Nothing runs inside the collection.
        assert_eq!(
            log.lock().unwrap().len(),
            calls.values().sum::<u32>() as usize
        );
        let reg = reg_root
            .value(&heap)
            .unwrap()
            .as_finalization_registry()
            .unwrap();
        assert_eq!(reg.pending(), dies.len());
        let before = log.lock().unwrap().len();
        assert_eq!(heap.run_finalizers().unwrap(), dies.len());
        assert_eq!(heap.run_finalizers().unwrap(), 0, "nothing runs twice");
        let mut got: Vec<u32> = log.lock().unwrap()[before..].to_vec();
        got.sort_unstable();
        let mut want: Vec<u32> = dies.iter().map(|&r| id_of(r)).collect();
        want.sort_unstable();
        assert_eq!(got, want, "round {round}: {c:?}");
        for &r in &dies {
            registered[r] = false;
            *calls.entry(r).or_default() += 1;
        }
        assert_eq!(reg.pending(), 0);
        assert_eq!(reg.len(), registered.iter().filter(|&&r| r).count());
        // The callbacks' allocations are in the sink, in call order.
        let sink = sink.get(&heap).unwrap();
        assert_eq!(
            sink.array_length().unwrap().unwrap() as usize,
            log.lock().unwrap().len()
        );
    }
    assert!(calls.values().all(|&n| n == 1));
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: if cfg!(miri) { 3 } else { 96 },
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn callbacks_run_once_exactly_for_collected_targets(c in cases()) {
        run_case(&c);
    }
}

#[test]
fn a_callback_runs_after_the_collection_and_may_allocate_and_use_objects() {
    let mut heap = Heap::new();
    let log: Log = Arc::default();
    let (reg, sink) = {
        let mut m = heap.mutator();
        let sink = Arc::new(heap.root(m.array().unwrap()).unwrap());
        let reg = logging_registry(&mut m, &log, Arc::clone(&sink));
        let held = m.object().unwrap();
        held.set("id", 7u32.into()).unwrap();
        reg.register(m.object().unwrap(), held.value(), None)
            .unwrap();
        assert_eq!((reg.len(), reg.pending()), (1, 0));
        (heap.root_value(reg.value()).unwrap(), sink)
    };
    assert_eq!(heap.collect().finalizers_queued, 1);
    assert!(log.lock().unwrap().is_empty());
    // A collection between the queueing and the run keeps the held object alive.
    let s = heap.collect();
    assert_eq!((s.finalizers_queued, s.freed), (0, 0));
    assert_eq!(heap.run_finalizers(), Ok(1));
    assert_eq!(*log.lock().unwrap(), [7]);
    let reg_v = reg
        .value(&heap)
        .unwrap()
        .as_finalization_registry()
        .unwrap();
    assert!(reg_v.is_empty());
    let note = sink
        .get(&heap)
        .unwrap()
        .get(0u32)
        .unwrap()
        .as_object()
        .unwrap();
    assert_eq!(note.get("id").unwrap(), 7u32.into());
    // Now the held object is garbage.
    assert_eq!(heap.collect().freed, 1);
}

#[test]
fn a_registry_with_pending_work_is_kept_until_it_ran_and_a_dead_one_never_calls_back() {
    let mut heap = Heap::new();
    let log: Log = Arc::default();
    let drops = Arc::new(AtomicUsize::new(0));
    struct OnDrop(Arc<AtomicUsize>);
    impl Drop for OnDrop {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
    fn registry<'h>(
        m: &mut Mutator<'h>,
        log: &Log,
        drops: &Arc<AtomicUsize>,
        held: u32,
        target_rooted: bool,
        keep: &mut Vec<Root>,
    ) -> FinalizationRegistry<'h> {
        let l = Arc::clone(log);
        let guard = OnDrop(Arc::clone(drops));
        let r = m
            .finalization_registry(move |_, held| {
                let _keep = &guard;
                l.lock().unwrap().push(held.as_u32().unwrap());
                Ok(())
            })
            .unwrap();
        let target = m.object().unwrap();
        r.register(target, held.into(), None).unwrap();
        if target_rooted {
            keep.push(m.heap().root(target).unwrap());
        }
        r
    }
    let mut keep = Vec::new();
    let a_root = {
        let mut m = heap.mutator();
        // A: rooted for the collection that frees its target.
        let a = registry(&mut m, &log, &drops, 1, false, &mut keep);
        // B: unreachable, its target rooted: freed at once, never calls back.
        registry(&mut m, &log, &drops, 2, true, &mut keep);
        // C: unreachable, its target too: freed with its target, never calls back.
        registry(&mut m, &log, &drops, 3, false, &mut keep);
        heap.root_value(a.value()).unwrap()
    };
    let s = heap.collect();
    assert_eq!(s.finalizers_queued, 1);
    assert_eq!(
        drops.load(Ordering::SeqCst),
        2,
        "B's and C's callbacks went with them"
    );
    // A is unreachable now, but queued: the pending list keeps it (and its held values).
    drop(a_root);
    assert_eq!(heap.collect().freed, 0);
    assert_eq!(drops.load(Ordering::SeqCst), 2);
    assert_eq!(heap.run_finalizers(), Ok(1));
    assert_eq!(*log.lock().unwrap(), [1]);
    // A ran everything: it is an ordinary unreachable cell again.
    assert_eq!(heap.collect().freed, 1);
    assert_eq!(drops.load(Ordering::SeqCst), 3);
    assert_eq!(heap.run_finalizers(), Ok(0));
}

#[test]
fn unregister_removes_armed_and_pending_registrations_and_tokens_are_weak() {
    let mut heap = Heap::new();
    let log: Log = Arc::default();
    let sink = Arc::new(heap.root(heap.mutator().array().unwrap()).unwrap());
    let mut keep = Vec::new();
    let (reg, token, other) = {
        let mut m = heap.mutator();
        let reg = logging_registry(&mut m, &log, Arc::clone(&sink));
        let token = m.object().unwrap();
        let other = m.object().unwrap();
        reg.register(m.object().unwrap(), 1u32.into(), Some(token))
            .unwrap();
        reg.register(m.object().unwrap(), 2u32.into(), Some(other))
            .unwrap();
        reg.register(m.object().unwrap(), 3u32.into(), Some(token))
            .unwrap();
        let kept = m.object().unwrap();
        reg.register(kept, 4u32.into(), Some(token)).unwrap();
        keep.push(heap.root(kept).unwrap());
        (
            heap.root_value(reg.value()).unwrap(),
            heap.root(token).unwrap(),
            heap.root(other).unwrap(),
        )
    };
    drop(other); // a token is weak: the registration stays, only the token goes
    assert_eq!(heap.collect().finalizers_queued, 3);
    {
        let reg = reg
            .value(&heap)
            .unwrap()
            .as_finalization_registry()
            .unwrap();
        assert_eq!((reg.len(), reg.pending()), (4, 3));
        // 1 and 3 are pending, 4 armed: all three go.
        assert_eq!(reg.unregister(token.get(&heap).unwrap()), Ok(3));
        assert_eq!((reg.len(), reg.pending()), (1, 1));
    }
    assert_eq!(heap.run_finalizers(), Ok(1));
    assert_eq!(*log.lock().unwrap(), [2]);
}

#[test]
fn errors_foreign_heaps_held_is_target_and_a_failing_callback() {
    let heap = Heap::new();
    let other = Heap::new();
    let m = heap.mutator();
    let om = other.mutator();
    let calls = Arc::new(AtomicUsize::new(0));
    let c = Arc::clone(&calls);
    let reg = m
        .finalization_registry(move |_, held| {
            c.fetch_add(1, Ordering::SeqCst);
            if held.as_bool() == Some(false) {
                return Err(Error::Thrown("callback failed"));
            }
            Ok(())
        })
        .unwrap();
    let t = m.object().unwrap();
    let foreign = om.object().unwrap();
    assert_eq!(
        reg.register(foreign, Value::NULL, None),
        Err(Error::ForeignHeap)
    );
    assert_eq!(
        reg.register(t, foreign.value(), None),
        Err(Error::ForeignHeap)
    );
    assert_eq!(
        reg.register(t, Value::NULL, Some(foreign)),
        Err(Error::ForeignHeap)
    );
    assert_eq!(reg.unregister(foreign), Err(Error::ForeignHeap));
    assert_eq!(reg.register(t, t.value(), None), Err(Error::HeldIsTarget));
    assert!(reg.is_empty());
    drop((m, om));
    let mut heap = heap;
    // The failing callback: its registration is consumed, the error returned, the other
    // one stays queued for the next call.
    let keep = {
        let m = heap.mutator();
        let c = Arc::clone(&calls);
        let reg = m
            .finalization_registry(move |_, held| {
                c.fetch_add(1, Ordering::SeqCst);
                match held.as_bool() {
                    Some(false) => Err(Error::Thrown("callback failed")),
                    _ => Ok(()),
                }
            })
            .unwrap();
        reg.register(m.object().unwrap(), Value::bool(false), None)
            .unwrap();
        reg.register(m.object().unwrap(), Value::bool(false), None)
            .unwrap();
        heap.root_value(reg.value()).unwrap()
    };
    calls.store(0, Ordering::SeqCst);
    assert_eq!(heap.collect().finalizers_queued, 2);
    assert_eq!(heap.run_finalizers(), Err(Error::Thrown("callback failed")));
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert_eq!(heap.run_finalizers(), Err(Error::Thrown("callback failed")));
    assert_eq!(heap.run_finalizers(), Ok(0));
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    drop(keep);
}

#[test]
fn a_callback_may_register_again_and_run_finalizers_sees_it_next_time() {
    let mut heap = Heap::new();
    let count = Arc::new(AtomicUsize::new(0));
    let keep = {
        let m = heap.mutator();
        let c = Arc::clone(&count);
        let reg = m
            .finalization_registry(move |m, held| {
                c.fetch_add(1, Ordering::SeqCst);
                // Re-register a fresh target with the registry found in the held object.
                let o = held.as_object().unwrap();
                let reg = o.get("reg")?.as_finalization_registry().unwrap();
                let n = o.get("n")?.as_u32().unwrap();
                if n > 0 {
                    let next = m.object()?;
                    next.set("reg", reg.value())?;
                    next.set("n", (n - 1).into())?;
                    reg.register(m.object()?, next.value(), None)?;
                }
                Ok(())
            })
            .unwrap();
        let held = m.object().unwrap();
        held.set("reg", reg.value()).unwrap();
        held.set("n", 3u32.into()).unwrap();
        reg.register(m.object().unwrap(), held.value(), None)
            .unwrap();
        heap.root_value(reg.value()).unwrap()
    };
    for round in 1..=4 {
        assert_eq!(heap.collect().finalizers_queued, 1);
        assert_eq!(heap.run_finalizers(), Ok(1));
        assert_eq!(count.load(Ordering::SeqCst), round);
    }
    assert_eq!(heap.collect().finalizers_queued, 0);
    drop(keep);
}
