//! Object patterns at several sizes, against one `HashMap<String, Value>` per object (what
//! a user would otherwise keep), so that growth with the number of objects shows:
//!
//! - `same keys`: every object adds the same 8 keys in the same order (class-like);
//! - `distinct key`: every object adds one key no other object has (a parser's, a memo
//!   table's or an ID-keyed cache's objects);
//! - `json`: 3 to 12 keys drawn from a 200-key vocabulary, in random order;
//! - `delete-heavy`: 8 keys, then 4 of them deleted and 2 more added.
//!
//! Per pattern and size: the build (per object), uncached reads of every key, the bytes
//! right after the build (and after a collection), and the collection that frees the
//! objects (for the map: dropping them). And cached reads over one 8-key literal written in
//! 1 and in 8 key orders, through one [`PropertyCache`] per key (an engine's inline caches).
//!
//! Every routine checks what it built or read.

use std::alloc::Layout;
use std::cell::RefCell;
use std::collections::HashMap;
use std::ptr::NonNull;

use gc_object::{Heap, Key, Obj, PropertyCache, PropertyKey, RawAlloc, Root, Value};

use crate::measure::{BenchResult, Case, Ctx};

/// Objects per pattern run.
pub const PATTERN_SIZES: [usize; 3] = [5_000, 20_000, 100_000];
/// The JSON pattern's sizes (50,000 is the issue's).
pub const JSON_SIZES: [usize; 3] = [5_000, 50_000, 100_000];
/// Keys the JSON pattern draws from.
pub const JSON_VOCABULARY: usize = 200;
/// Objects of the key-order workload.
pub const ORDER_SIZES: [usize; 2] = [10_000, 100_000];
/// Keys of the key-order workload's literal, and its orders.
pub const ORDER_KEYS: usize = 8;

const MAP: &str = "HashMap<String, Value>";

type V = Value<'static>;

/// splitmix64: a fixed, seedable sequence (no dependency).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// What one object does: keys added in order (with their values), then keys deleted.
#[derive(Clone, Debug)]
struct Plan {
    adds: Vec<u32>,
    deletes: Vec<u32>,
    more: Vec<u32>,
}

impl Plan {
    /// The keys left at the end, in insertion order.
    fn left(&self) -> Vec<u32> {
        self.adds
            .iter()
            .filter(|k| !self.deletes.contains(k))
            .chain(&self.more)
            .copied()
            .collect()
    }
}

/// One pattern: its name, names of its keys and one plan per object.
struct Pattern {
    name: &'static str,
    names: Vec<String>,
    keys: Vec<PropertyKey>,
    plans: Vec<Plan>,
}

impl Pattern {
    fn new(name: &'static str, names: Vec<String>, plans: Vec<Plan>) -> Pattern {
        let keys = names
            .iter()
            .map(|n| PropertyKey::Name(Key::new(n)))
            .collect();
        Pattern {
            name,
            names,
            keys,
            plans,
        }
    }

    fn same_keys(n: usize) -> Pattern {
        let names = (0..8).map(|i| format!("field{i}")).collect();
        let plan = Plan {
            adds: (0..8).collect(),
            deletes: vec![],
            more: vec![],
        };
        Pattern::new("same keys", names, vec![plan; n])
    }

    fn distinct_key(n: usize) -> Pattern {
        let names = (0..n).map(|i| format!("id{i}")).collect();
        let plans = (0..n as u32)
            .map(|i| Plan {
                adds: vec![i],
                deletes: vec![],
                more: vec![],
            })
            .collect();
        Pattern::new("distinct key", names, plans)
    }

    fn json(n: usize) -> Pattern {
        let names = (0..JSON_VOCABULARY).map(|i| format!("key{i}")).collect();
        let mut rng = Rng(0x5EED_0000 + n as u64);
        let mut pool: Vec<u32> = (0..JSON_VOCABULARY as u32).collect();
        let plans = (0..n)
            .map(|_| {
                let k = 3 + rng.below(10);
                // A partial Fisher-Yates shuffle: k distinct keys in random order.
                for i in 0..k {
                    let j = i + rng.below(pool.len() - i);
                    pool.swap(i, j);
                }
                Plan {
                    adds: pool[..k].to_vec(),
                    deletes: vec![],
                    more: vec![],
                }
            })
            .collect();
        Pattern::new("json", names, plans)
    }

    fn delete_heavy(n: usize) -> Pattern {
        let names = (0..10).map(|i| format!("slot{i}")).collect();
        let plan = Plan {
            adds: (0..8).collect(),
            deletes: vec![0, 2, 4, 6],
            more: vec![8, 9],
        };
        Pattern::new("delete-heavy", names, vec![plan; n])
    }

    /// The value object `i` gives key `k` (small integers: sums check every read).
    fn value(i: usize, k: u32) -> u32 {
        (i as u32 % 1000) + k
    }

    /// The sum of every value left in every object.
    fn expected_sum(&self) -> u64 {
        self.plans
            .iter()
            .enumerate()
            .map(|(i, p)| {
                p.left()
                    .iter()
                    .map(|&k| u64::from(Pattern::value(i, k)))
                    .sum::<u64>()
            })
            .sum()
    }

    fn keys_left(&self) -> usize {
        self.plans.iter().map(|p| p.left().len()).sum()
    }
}

fn build_gc<'h>(m: &mut gc_object::Mutator<'h>, p: &Pattern, i: usize) -> Obj<'h> {
    let plan = &p.plans[i];
    let o = m.object().expect("object");
    for &k in &plan.adds {
        o.set(p.keys[k as usize], Value::from(Pattern::value(i, k)))
            .expect("set");
    }
    for &k in &plan.deletes {
        assert!(o.delete(p.keys[k as usize]).expect("delete"));
    }
    for &k in &plan.more {
        o.set(p.keys[k as usize], Value::from(Pattern::value(i, k)))
            .expect("set");
    }
    o
}

fn build_map(p: &Pattern, i: usize) -> HashMap<String, V> {
    let plan = &p.plans[i];
    let mut o = HashMap::new();
    for &k in &plan.adds {
        o.insert(
            p.names[k as usize].clone(),
            Value::from(Pattern::value(i, k)),
        );
    }
    for &k in &plan.deletes {
        assert!(o.remove(p.names[k as usize].as_str()).is_some());
    }
    for &k in &plan.more {
        o.insert(
            p.names[k as usize].clone(),
            Value::from(Pattern::value(i, k)),
        );
    }
    o
}

fn num(v: Value<'_>) -> u64 {
    u64::from(v.as_u32().expect("a u32 value"))
}

fn sum_is(want: u64) -> impl Fn(&u64) -> Result<(), String> {
    move |&got| {
        if got == want {
            Ok(())
        } else {
            Err(format!("sum {got}, expected {want}"))
        }
    }
}

/// Reads every key left in every gc-object object (uncached `get`).
fn read_gc(objs: &[Obj<'_>], lefts: &[Vec<u32>], p: &Pattern) -> u64 {
    let mut sum = 0;
    for (o, left) in objs.iter().zip(lefts) {
        for &k in left {
            sum += num(o.get(p.keys[k as usize]).expect("get"));
        }
    }
    sum
}

fn read_map(maps: &[HashMap<String, V>], lefts: &[Vec<u32>], p: &Pattern) -> u64 {
    let mut sum = 0;
    for (o, left) in maps.iter().zip(lefts) {
        for &k in left {
            sum += num(o[p.names[k as usize].as_str()]);
        }
    }
    sum
}

/// The global allocator without the chunk pool, so that a memory row counts every chunk
/// its heap takes.
struct Unpooled;

// SAFETY: forwards to the global allocator, which upholds the contract.
unsafe impl RawAlloc for Unpooled {
    fn alloc(&self, layout: Layout) -> Option<NonNull<u8>> {
        if layout.size() == 0 {
            return None;
        }
        // SAFETY: a non-zero size (checked above).
        NonNull::new(unsafe { std::alloc::alloc(layout) })
    }
    unsafe fn dealloc(&self, ptr: NonNull<u8>, layout: Layout) {
        // SAFETY: `ptr` came from `alloc` with this layout (contract).
        unsafe { std::alloc::dealloc(ptr.as_ptr(), layout) }
    }
}

/// A heap holding the pattern's objects in one rooted array.
fn held_heap(p: &Pattern, collect: bool) -> (Heap, Root) {
    let mut heap = Heap::with_allocator(Unpooled);
    let root = {
        let mut m = heap.mutator();
        let all = m.array().expect("array");
        for i in 0..p.plans.len() {
            let o = build_gc(&mut m, p, i);
            all.push(o.value()).expect("push");
        }
        heap.root(all).expect("root")
    };
    if collect {
        heap.collect();
    }
    (heap, root)
}

fn check_held(p: &Pattern, (heap, root): &(Heap, Root)) -> Result<(), String> {
    let all = root.get(heap).map_err(|e| e.to_string())?;
    let mut sum = 0;
    for (i, plan) in p.plans.iter().enumerate() {
        let o = all.get(i as u32).map_err(|e| e.to_string())?;
        let o = o.as_object().ok_or("not an object")?;
        for k in plan.left() {
            sum += num(o.get(p.keys[k as usize]).map_err(|e| e.to_string())?);
        }
    }
    sum_is(p.expected_sum())(&sum)
}

/// Whether a set-up for `cases` should run: in the counting pass (which builds nothing:
/// it only counts the cases) or when one of them passes `--filter`.
fn wanted(ctx: &Ctx<'_>, cases: &[&Case]) -> bool {
    ctx.counting() || cases.iter().any(|c| ctx.selected(c))
}

/// `n` objects of the pattern, unless this is the counting pass (which runs no routine).
fn objects_of<'h>(ctx: &Ctx<'_>, heap: &'h Heap, p: &Pattern) -> Vec<Obj<'h>> {
    if ctx.counting() {
        return Vec::new();
    }
    let mut m = heap.mutator();
    (0..p.plans.len()).map(|i| build_gc(&mut m, p, i)).collect()
}

fn pattern(ctx: &mut Ctx<'_>, p: &Pattern) -> BenchResult {
    let n = p.plans.len();
    let case = |op: &str, imp: &str| {
        Case::new(&format!("{} {op}", p.name), imp, "objects", n as u64).baseline(MAP)
    };
    let lefts: Vec<Vec<u32>> = p.plans.iter().map(Plan::left).collect();
    let want = p.expected_sum();
    // Build: one object after another, each read back once (the same in both).
    let heap = RefCell::new(Heap::new());
    ctx.time(
        &case("build", "gc-object"),
        n as u64,
        || {
            heap.borrow_mut().collect();
        },
        |()| {
            let h = heap.borrow();
            let mut m = h.mutator();
            let objs: Vec<Obj<'_>> = (0..n).map(|i| build_gc(&mut m, p, i)).collect();
            read_gc(&objs, &lefts, p)
        },
        sum_is(want),
    )?;
    ctx.time(
        &case("build", MAP),
        n as u64,
        || (),
        |()| {
            let maps: Vec<HashMap<String, V>> = (0..n).map(|i| build_map(p, i)).collect();
            (read_map(&maps, &lefts, p), maps)
        },
        |(s, _)| sum_is(want)(s),
    )?;
    // Reads: every key left in every object, uncached.
    let ops = p.keys_left() as u64;
    let read = (case("read", "gc-object"), case("read", MAP));
    if wanted(ctx, &[&read.0, &read.1]) {
        heap.borrow_mut().collect();
        let h = heap.borrow();
        let objs = objects_of(ctx, &h, p);
        ctx.time(
            &read.0,
            ops,
            || (),
            |()| read_gc(&objs, &lefts, p),
            sum_is(want),
        )?;
        drop(objs);
        let maps: Vec<HashMap<String, V>> = if ctx.counting() {
            Vec::new()
        } else {
            (0..n).map(|i| build_map(p, i)).collect()
        };
        ctx.time(
            &read.1,
            ops,
            || (),
            |()| read_map(&maps, &lefts, p),
            sum_is(want),
        )?;
    }
    // Freeing them: the collection after the build (the map: dropping them).
    ctx.time(
        &case("free", "gc-object"),
        n as u64,
        || {
            let mut h = heap.borrow_mut();
            h.collect();
            let mut m = h.mutator();
            for i in 0..n {
                build_gc(&mut m, p, i);
            }
        },
        |()| heap.borrow_mut().collect(),
        |s| {
            if s.freed >= n as u64 {
                Ok(())
            } else {
                Err(format!("freed {}, expected {n}", s.freed))
            }
        },
    )?;
    ctx.time(
        &case("free", MAP),
        n as u64,
        || (0..n).map(|i| build_map(p, i)).collect::<Vec<_>>(),
        |maps| {
            let len = maps.len();
            drop(maps);
            len
        },
        |&len| {
            if len == n {
                Ok(())
            } else {
                Err(format!("{len} maps"))
            }
        },
    )?;
    // Bytes: right after the build, and after a collection.
    ctx.memory(
        &case("bytes", "gc-object"),
        n as u64,
        || held_heap(p, false),
        |h| check_held(p, h),
    )?;
    ctx.memory(
        &case("bytes", "gc-object after collect"),
        n as u64,
        || held_heap(p, true),
        |h| check_held(p, h),
    )?;
    ctx.memory(
        &case("bytes", MAP),
        n as u64,
        || (0..n).map(|i| build_map(p, i)).collect::<Vec<_>>(),
        |maps| sum_is(want)(&read_map(maps, &lefts, p)),
    )?;
    if !ctx.counting() && ctx.selected(&case("bytes", "gc-object")) {
        let h = held_heap(p, false);
        let shapes = h.0.stats().shapes;
        ctx.note(format!(
            "objects: {} pattern, {n} objects: {shapes} shapes after the build",
            p.name
        ));
    }
    Ok(())
}

/// Cached reads over one 8-key literal written in `orders` key orders (each object takes
/// one at random), through one cache per key.
fn key_orders(ctx: &mut Ctx<'_>, n: usize, orders: usize) -> BenchResult {
    let imp = format!(
        "gc-object, {orders} order{}",
        if orders == 1 { "" } else { "s" }
    );
    let case = |op: &str| Case::new(op, &imp, "objects", n as u64).baseline("gc-object, 1 order");
    let cached = case("key orders: cached read");
    let uncached = case("key orders: read");
    if !wanted(ctx, &[&cached, &uncached]) {
        return Ok(());
    }
    // The counting pass builds nothing (it runs no routine).
    let n_built = if ctx.counting() { 0 } else { n };
    let names: Vec<String> = (0..ORDER_KEYS).map(|i| format!("prop{i}")).collect();
    let mut rng = Rng(0x0DE5 + n as u64);
    // Order `o` of the literal: the keys rotated by `o`, odd orders reversed.
    let order = |o: usize| -> Vec<usize> {
        let mut v: Vec<usize> = (0..ORDER_KEYS).map(|i| (i + o) % ORDER_KEYS).collect();
        if o % 2 == 1 {
            v.reverse();
        }
        v
    };
    let heap = Heap::new();
    let lits: Vec<(Vec<usize>, gc_object::Literal)> = (0..orders)
        .map(|o| {
            let ord = order(o);
            let ks: Vec<&str> = ord.iter().map(|&i| names[i].as_str()).collect();
            (ord, heap.literal(&ks))
        })
        .collect();
    let m = heap.mutator();
    let objs: Vec<Obj<'_>> = (0..n_built)
        .map(|i| {
            let (ord, lit) = &lits[rng.below(orders)];
            let vals: Vec<Value<'_>> = ord
                .iter()
                .map(|&k| Value::from(Pattern::value(i, k as u32)))
                .collect();
            m.literal(lit, &vals).expect("literal")
        })
        .collect();
    let want: u64 = (0..n)
        .map(|i| {
            (0..ORDER_KEYS as u32)
                .map(|k| u64::from(Pattern::value(i, k)))
                .sum::<u64>()
        })
        .sum();
    let caches: Vec<PropertyCache> = names
        .iter()
        .map(|k| PropertyCache::new(k.as_str()))
        .collect();
    let keys: Vec<PropertyKey> = names
        .iter()
        .map(|k| PropertyKey::from(k.as_str()))
        .collect();
    ctx.time(
        &cached,
        (n * ORDER_KEYS) as u64,
        || (),
        |()| {
            let mut sum = 0;
            for o in &objs {
                for c in &caches {
                    sum += num(o.get_cached(c).expect("get"));
                }
            }
            sum
        },
        sum_is(want),
    )?;
    ctx.time(
        &uncached,
        (n * ORDER_KEYS) as u64,
        || (),
        |()| {
            let mut sum = 0;
            for o in &objs {
                for &k in &keys {
                    sum += num(o.get(k).expect("get"));
                }
            }
            sum
        },
        sum_is(want),
    )?;
    Ok(())
}

/// Every case of this file.
pub fn run(ctx: &mut Ctx<'_>) -> BenchResult {
    for n in PATTERN_SIZES {
        pattern(ctx, &Pattern::same_keys(n))?;
        pattern(ctx, &Pattern::distinct_key(n))?;
        pattern(ctx, &Pattern::delete_heavy(n))?;
    }
    for n in JSON_SIZES {
        pattern(ctx, &Pattern::json(n))?;
    }
    for n in ORDER_SIZES {
        key_orders(ctx, n, 1)?;
        key_orders(ctx, n, ORDER_KEYS)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_plans_have_3_to_12_distinct_keys_of_the_vocabulary() {
        let p = Pattern::json(500);
        for plan in &p.plans {
            assert!((3..=12).contains(&plan.adds.len()));
            let mut k = plan.adds.clone();
            k.sort();
            k.dedup();
            assert_eq!(k.len(), plan.adds.len());
            assert!(k.iter().all(|&k| (k as usize) < JSON_VOCABULARY));
        }
    }

    #[test]
    fn every_pattern_builds_the_same_objects_in_both() {
        for p in [
            Pattern::same_keys(50),
            Pattern::distinct_key(50),
            Pattern::json(50),
            Pattern::delete_heavy(50),
        ] {
            let lefts: Vec<Vec<u32>> = p.plans.iter().map(Plan::left).collect();
            let maps: Vec<_> = (0..50).map(|i| build_map(&p, i)).collect();
            assert_eq!(read_map(&maps, &lefts, &p), p.expected_sum());
            let held = held_heap(&p, true);
            check_held(&p, &held).unwrap();
        }
    }
}
