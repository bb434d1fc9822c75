//! Handle scopes and collection at a context's safepoints: handles keep exactly their
//! values alive across collections, scopes close in LIFO order, an escape hands a handle
//! out, scoped native closures collect inside a call, and the counts are exact. (A handle
//! or value kept past its scope is a compile error: see the `compile_fail` examples of
//! `Context` and `Local`.)

use gc_object::{Error, HANDLE_BLOCK_SLOTS, Heap, Local, Pacing, Scope, Value};

/// A small deterministic generator (xorshift).
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// A new object `{id}` rooted in `s`.
fn make<'s>(s: &Scope<'s>, id: u32) -> Local<'s> {
    let o = s.mutator().object().unwrap();
    o.set("id", id.into()).unwrap();
    s.root(o.value()).unwrap()
}

/// The `id` of a handle's object (a handle of an outer scope is one of every inner scope:
/// `Local` is covariant).
fn id<'s>(s: &Scope<'s>, l: Local<'s>) -> u32 {
    let v = s.get(l);
    v.as_object().unwrap().get("id").unwrap().as_u32().unwrap()
}

#[test]
fn handles_keep_their_values_across_collections_until_their_scope_closes() {
    let mut heap = Heap::new();
    let mut cx = heap.context();
    {
        let mut s = cx.scope();
        // More than a block of handles in each scope.
        let (outer, inner) = (
            HANDLE_BLOCK_SLOTS as u32 + 100,
            HANDLE_BLOCK_SLOTS as u32 + 50,
        );
        let kept: Vec<Local<'_>> = (0..outer).map(|i| make(&s, i)).collect();
        {
            let mut t = s.scope();
            for i in 0..inner {
                make(&t, 10_000 + i);
            }
            let st = t.collect().expect("a context's scope collects");
            assert_eq!((st.marked, st.freed), (u64::from(outer + inner), 0));
        }
        // The inner scope closed: its objects are garbage now.
        let st = s.collect().unwrap();
        assert_eq!((st.marked, st.freed), (u64::from(outer), u64::from(inner)));
        for (i, &l) in kept.iter().enumerate() {
            assert_eq!(id(&s, l), i as u32);
        }
        // Values that name no cell are handles without a slot, and survive as well.
        let n = s.root(Value::number(2.5)).unwrap();
        let t = s.root(Value::bool(true)).unwrap();
        s.collect().unwrap();
        assert_eq!(s.get(n), Value::number(2.5));
        assert_eq!(s.get(t), Value::bool(true));
    }
    let st = cx.collect();
    assert_eq!(
        (st.marked, st.freed),
        (0, u64::from(HANDLE_BLOCK_SLOTS as u32 + 100))
    );
}

#[test]
fn an_escape_hands_one_handle_out_of_a_closing_scope() {
    let mut heap = Heap::new();
    let mut cx = heap.context();
    let mut s = cx.scope();
    let out = {
        let mut t = s.escape_scope();
        for i in 0..(2 * HANDLE_BLOCK_SLOTS as u32) {
            make(&t, i);
        }
        let keep = make(&t, 777);
        t.collect().unwrap();
        t.escape(keep).unwrap()
    };
    let st = s.collect().unwrap();
    assert_eq!((st.marked, st.freed), (1, 2 * HANDLE_BLOCK_SLOTS as u64));
    assert_eq!(id(&s, out), 777);
    // An immediate escapes without a slot; a handle of an outer scope is rooted again.
    let n = {
        let t = s.escape_scope();
        let null = t.root(Value::NULL).unwrap();
        t.escape(null).unwrap()
    };
    assert!(s.get(n).is_null());
    let again = {
        let t = s.escape_scope();
        t.escape(out).unwrap()
    };
    assert_eq!(id(&s, again), 777);
}

/// Random pushes, nested scopes and collections, checked against a model: after every
/// collection exactly the objects of open scopes are marked, and every handle reads its
/// own object.
#[test]
fn nested_scopes_against_a_model() {
    /// `budget`: scopes left to open in the whole run (it keeps the tree small).
    fn run<'s>(
        s: &mut Scope<'s>,
        outer: &[(Local<'s>, u32)],
        rng: &mut Rng,
        next: &mut u32,
        budget: &mut u32,
        depth: u32,
    ) {
        let mut mine: Vec<(Local<'s>, u32)> = outer.to_vec();
        let ops = 5 + rng.below(20);
        for _ in 0..ops {
            match rng.below(10) {
                0..=5 => {
                    // (Under Miri fewer: the other tests cross block boundaries.)
                    let most = if cfg!(miri) {
                        6
                    } else {
                        3 * HANDLE_BLOCK_SLOTS as u64 / 4
                    };
                    for _ in 0..=rng.below(most) {
                        mine.push((make(s, *next), *next));
                        *next += 1;
                    }
                }
                6 | 7 if depth < 6 && *budget > 0 => {
                    *budget -= 1;
                    let mut t = s.scope();
                    let inherited: Vec<(Local<'_>, u32)> = mine.clone();
                    run(&mut t, &inherited, rng, next, budget, depth + 1);
                }
                _ => {
                    let st = s.collect().unwrap();
                    assert_eq!(st.marked, mine.len() as u64, "depth {depth}");
                    for &(l, want) in &mine {
                        assert_eq!(id(s, l), want);
                    }
                }
            }
        }
        for &(l, want) in &mine {
            assert_eq!(id(s, l), want);
        }
    }
    for seed in 1..=(if cfg!(miri) { 1 } else { 8 }) {
        let mut heap = Heap::new();
        let mut cx = heap.context();
        let mut s = cx.scope();
        let (mut next, mut budget) = (0, if cfg!(miri) { 4 } else { 30 });
        run(
            &mut s,
            &[],
            &mut Rng(seed * 0x9E37_79B9),
            &mut next,
            &mut budget,
            0,
        );
        drop(s);
        assert_eq!(cx.collect().marked, 0);
        assert!(next > 0);
    }
}

#[test]
fn a_scoped_native_collects_inside_a_call_and_its_handles_stay_valid() {
    let mut heap = Heap::new();
    let (n, floor) = if cfg!(miri) {
        (60u32, 2048)
    } else {
        (2000, 16 * 1024)
    };
    heap.set_pacing(Pacing {
        debt_percent: 0,
        min_debt: floor,
    });
    let mut cx = heap.context();
    let mut s = cx.scope();
    // `grow(list, n)`: pushes n fresh objects onto `list`, making garbage as it goes and
    // collecting whenever one is due; returns a new object holding the count.
    let grow = s
        .mutator()
        .scoped_closure(Value::UNDEFINED, |s, _this, arg, _env| {
            let args = s.get(arg).as_object().ok_or(Error::WrongKind)?;
            let list = s.root(args.get(0u32)?)?;
            let n = args.get(1u32)?.as_u32().ok_or(Error::WrongKind)?;
            let mut collected = 0u32;
            for i in 0..n {
                {
                    let mut t = s.scope();
                    let m = t.mutator();
                    let o = m.object()?;
                    o.set("id", i.into())?;
                    for _ in 0..8 {
                        m.object()?; // garbage
                    }
                    t.get(list).as_object().unwrap().push(o.value())?;
                    if t.collect_if_due().is_some() {
                        collected += 1;
                    }
                }
            }
            let out = s.mutator().object()?;
            out.set("collected", collected.into())?;
            out.set("count", n.into())?;
            s.root(out.value())
        })
        .unwrap();
    let grow = s.root(grow.value()).unwrap();
    let list = s.root(s.mutator().array().unwrap().value()).unwrap();
    let args = {
        let a = s.mutator().array().unwrap();
        a.push(s.get(list)).unwrap();
        a.push(n.into()).unwrap();
        s.root(a.value()).unwrap()
    };
    let undefined = s.root(Value::UNDEFINED).unwrap();
    let r = s.call(grow, undefined, args).unwrap();
    let collected = s.get(r).as_object().unwrap().get("collected").unwrap();
    // Each round allocates 9 cells (1152 bytes), the debt allowed is fixed, and a round
    // checks once: a collection at least every `floor / 1152 + 1` rounds.
    let rounds_per = floor as u32 / 1152 + 1;
    assert!(
        collected.as_u32().unwrap() >= n / rounds_per,
        "{collected:?}"
    );
    let l = s.get(list).as_object().unwrap();
    assert_eq!(l.array_length().unwrap(), Some(n));
    for i in 0..n {
        let o = l.get(i).unwrap().as_object().unwrap();
        assert_eq!(o.get("id").unwrap(), i.into());
    }
    // The function, the list and its objects, the arguments and the result.
    assert_eq!(s.collect().unwrap().marked, u64::from(n) + 4);
    drop(s);
    drop(cx);

    // Through a plain mutator the native's scope cannot collect; the call still works.
    let m = heap.mutator();
    let f = m
        .scoped_closure(Value::UNDEFINED, |s, this, _arg, _env| {
            assert!(!s.can_collect());
            assert!(s.collect().is_none() && s.collect_if_due().is_none());
            let o = s.mutator().object()?;
            o.set("this", s.get(this))?;
            s.root(o.value())
        })
        .unwrap();
    let r = m.call(f, 5u32.into(), Value::UNDEFINED).unwrap();
    assert_eq!(r.as_object().unwrap().get("this").unwrap(), 5u32.into());
    // And as a getter.
    let holder = m.object().unwrap();
    holder
        .define(
            "g",
            gc_object::Property::Accessor {
                get: Some(f),
                set: None,
                enumerable: true,
                configurable: true,
            },
        )
        .unwrap();
    let got = m.get(holder, "g").unwrap().as_object().unwrap();
    assert_eq!(got.get("this").unwrap(), holder.value());
    assert_eq!(holder.get("g"), Err(Error::NeedsMutator));
}

#[test]
fn errors_foreign_cells_and_plain_mutator_scopes() {
    let other = Heap::new();
    let om = other.mutator();
    let foreign = om.object().unwrap();
    let mut heap = Heap::new();
    let mut cx = heap.context();
    let s = cx.scope();
    assert_eq!(s.root(foreign.value()).err(), Some(Error::ForeignHeap));
    let f = s.root(Value::number(1.0)).unwrap();
    let u = s.root(Value::UNDEFINED).unwrap();
    let mut s = s;
    assert_eq!(s.call(f, u, u).err(), Some(Error::NotCallable));
    drop(s);
    drop(cx);
    let mut m = heap.mutator();
    let mut plain = m.scope();
    assert!(!plain.can_collect() && plain.collect().is_none());
    let o = plain.mutator().object().unwrap();
    let l = plain.root(o.value()).unwrap();
    assert_eq!(plain.get(l), o.value());
}
