//! String-value churn: each run makes `STRING_CHURN` distinct string values (texts built
//! before the run) and keeps the last `STRING_RING` of them in a ring, dropping the one it
//! displaces; a run of a collected implementation ends with a full collection (so its
//! cost is in the per-string number). gc-object's `HeapString` against `Rc<str>` and
//! gc-arena (`Gc<Box<str>>`: gc-arena has no dynamically sized `Gc<str>`, so the text is a
//! second allocation).
//!
//! Every routine returns the total length of the ring's texts at the end (and gc-object
//! what the collection freed); the result is checked.

use std::cell::RefCell;
use std::rc::Rc;

use gc_arena::{Arena, Gc, Rootable};
use gc_object::{Heap, Value};

use crate::measure::{BenchResult, Case, Ctx};

/// String values made per run.
pub const STRING_CHURN: usize = 20_000;
/// Strings kept at a time.
pub const STRING_RING: usize = 256;

fn texts() -> Vec<String> {
    (0..STRING_CHURN)
        .map(|i| format!("string value {i:06}"))
        .collect()
}

/// Total length of the last `STRING_RING` texts.
fn ring_len(texts: &[String]) -> u64 {
    texts[texts.len() - STRING_RING..]
        .iter()
        .map(|t| t.len() as u64)
        .sum()
}

/// Every case of this file.
pub fn run(ctx: &mut Ctx<'_>) -> BenchResult {
    let texts = texts();
    let want = ring_len(&texts);
    let n = STRING_CHURN as u64;
    let case = |imp: &str| Case::new("string churn", imp, "strings", n).baseline("gc-object");
    {
        let heap = Heap::new();
        let ring = {
            let m = heap.mutator();
            let a = m.array().expect("array");
            for _ in 0..STRING_RING {
                a.push(Value::null()).expect("push");
            }
            heap.root(a).expect("root")
        };
        let heap = RefCell::new(heap);
        ctx.time(
            &case("gc-object"),
            n,
            || (),
            |()| {
                let mut h = heap.borrow_mut();
                let len = {
                    let m = h.mutator();
                    let a = ring.get(m.heap()).expect("ring");
                    for (i, t) in texts.iter().enumerate() {
                        let s = m.string(t).expect("string");
                        a.set((i % STRING_RING) as u32, s.value()).expect("set");
                    }
                    (0..STRING_RING as u32)
                        .map(|i| a.get(i).expect("get").as_str().expect("str").len() as u64)
                        .sum::<u64>()
                };
                (len, h.collect().freed)
            },
            |&(len, freed)| {
                // Each run frees the strings of the run before it that were still in the
                // ring and all of its own but the last 256 (the first run: 256 fewer).
                if len == want && (freed == n || freed == n - STRING_RING as u64) {
                    Ok(())
                } else {
                    Err(format!(
                        "ring length {len} (expected {want}), freed {freed}"
                    ))
                }
            },
        )?;
    }
    {
        let ring: RefCell<Vec<Rc<str>>> = RefCell::new(vec![Rc::from(""); STRING_RING]);
        ctx.time(
            &case("Rc<str>"),
            n,
            || (),
            |()| {
                let mut r = ring.borrow_mut();
                for (i, t) in texts.iter().enumerate() {
                    r[i % STRING_RING] = std::hint::black_box(Rc::from(t.as_str()));
                }
                r.iter().map(|s| s.len() as u64).sum::<u64>()
            },
            |&len| {
                if len == want {
                    Ok(())
                } else {
                    Err(format!("ring length {len}, expected {want}"))
                }
            },
        )?;
    }
    {
        type Ring = Rootable![Vec<Gc<'_, Box<str>>>];
        let arena: Arena<Ring> = Arena::new(|mc| {
            (0..STRING_RING)
                .map(|_| Gc::new(mc, Box::<str>::from("")))
                .collect()
        });
        let arena = RefCell::new(arena);
        ctx.time(
            &case("gc-arena Gc<Box<str>>"),
            n,
            || (),
            |()| {
                let mut a = arena.borrow_mut();
                let len = a.mutate_root(|mc, ring| {
                    for (i, t) in texts.iter().enumerate() {
                        ring[i % STRING_RING] = Gc::new(mc, Box::from(t.as_str()));
                    }
                    ring.iter().map(|s| s.len() as u64).sum::<u64>()
                });
                a.finish_cycle();
                len
            },
            |&len| {
                if len == want {
                    Ok(())
                } else {
                    Err(format!("ring length {len}, expected {want}"))
                }
            },
        )?;
    }
    Ok(())
}
