//! Property access against the object models a user would otherwise pick: get, set, create
//! and delete at 1, 4, 12, 13, 64 and 1,000 properties, gc-object uncached and through
//! [`PropertyCache`], against `HashMap<PropertyKey, Value>` (std's SipHash and an
//! Fx-style hasher), a `Vec<(PropertyKey, Value)>` scanned in order, boa's collector
//! (`boa_gc::Gc<GcRefCell<HashMap>>`: `boa_engine` itself does not build within the
//! 3 minutes the issue allows on this machine) and a plain slot array (the floor: the loop
//! and the check with one load per property). And a big build (10,000 and 100,000 keys)
//! to show that building costs the same per key at both sizes.
//!
//! Every routine sums what it read (or reads back what it wrote) and the sum is checked.

use std::cell::RefCell;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use gc_object::{Heap, Key, Obj, PropertyCache, PropertyKey, Root, Value};

use crate::measure::{BenchResult, Case, Ctx};

/// Property counts: around the inline slots (12), the shape-key limit (64), and a big
/// dictionary-mode object.
pub const PROP_COUNTS: [usize; 6] = [1, 4, 12, 13, 64, 1000];
/// Key counts of the big build.
pub const BUILD_KEYS: [usize; 2] = [10_000, 100_000];

const BASELINE: &str = "HashMap std";

/// An Fx-style hasher (rustc's: rotate, xor, multiply per word), written here so the
/// comparison needs no extra crate.
#[derive(Default, Clone, Copy, Debug)]
pub struct FxStyle(u64);

impl Hasher for FxStyle {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }
    #[inline]
    fn write_u8(&mut self, n: u8) {
        self.write_u64(u64::from(n));
    }
    #[inline]
    fn write_u32(&mut self, n: u32) {
        self.write_u64(u64::from(n));
    }
    #[inline]
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    #[inline]
    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }
    #[inline]
    fn write_isize(&mut self, n: isize) {
        self.write_u64(n as u64);
    }
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
}

type V = Value<'static>;

/// A peer object model: a map from keys to values.
trait Peer: Sized {
    const NAME: &'static str;
    fn empty() -> Self;
    fn get(&self, k: PropertyKey) -> Option<V>;
    fn set(&mut self, k: PropertyKey, v: V);
    fn delete(&mut self, k: PropertyKey) -> bool;
    fn dup(&self) -> Self;
}

struct StdMap(HashMap<PropertyKey, V>);
impl Peer for StdMap {
    const NAME: &'static str = BASELINE;
    fn empty() -> Self {
        StdMap(HashMap::new())
    }
    #[inline]
    fn get(&self, k: PropertyKey) -> Option<V> {
        self.0.get(&k).copied()
    }
    #[inline]
    fn set(&mut self, k: PropertyKey, v: V) {
        self.0.insert(k, v);
    }
    #[inline]
    fn delete(&mut self, k: PropertyKey) -> bool {
        self.0.remove(&k).is_some()
    }
    fn dup(&self) -> Self {
        StdMap(self.0.clone())
    }
}

struct FxMap(HashMap<PropertyKey, V, BuildHasherDefault<FxStyle>>);
impl Peer for FxMap {
    const NAME: &'static str = "HashMap fx";
    fn empty() -> Self {
        FxMap(HashMap::default())
    }
    #[inline]
    fn get(&self, k: PropertyKey) -> Option<V> {
        self.0.get(&k).copied()
    }
    #[inline]
    fn set(&mut self, k: PropertyKey, v: V) {
        self.0.insert(k, v);
    }
    #[inline]
    fn delete(&mut self, k: PropertyKey) -> bool {
        self.0.remove(&k).is_some()
    }
    fn dup(&self) -> Self {
        FxMap(self.0.clone())
    }
}

/// Properties in insertion order, found by a scan (what a small-object model without hidden
/// classes does).
struct VecObj(Vec<(PropertyKey, V)>);
impl Peer for VecObj {
    const NAME: &'static str = "Vec";
    fn empty() -> Self {
        VecObj(Vec::new())
    }
    #[inline]
    fn get(&self, k: PropertyKey) -> Option<V> {
        self.0.iter().find(|e| e.0 == k).map(|e| e.1)
    }
    #[inline]
    fn set(&mut self, k: PropertyKey, v: V) {
        match self.0.iter_mut().find(|e| e.0 == k) {
            Some(e) => e.1 = v,
            None => self.0.push((k, v)),
        }
    }
    #[inline]
    fn delete(&mut self, k: PropertyKey) -> bool {
        match self.0.iter().position(|e| e.0 == k) {
            Some(i) => {
                self.0.remove(i);
                true
            }
            None => false,
        }
    }
    fn dup(&self) -> Self {
        VecObj(self.0.clone())
    }
}

/// A boa_gc object: a garbage-collected cell holding a property map.
#[derive(boa_gc::Trace, boa_gc::Finalize)]
struct BoaProps {
    // Keys and values of this benchmark hold no `Gc` pointers.
    #[unsafe_ignore_trace]
    map: HashMap<PropertyKey, V>,
}

struct BoaObj(boa_gc::Gc<boa_gc::GcRefCell<BoaProps>>);
impl Peer for BoaObj {
    const NAME: &'static str = "boa_gc HashMap";
    fn empty() -> Self {
        BoaObj(boa_gc::Gc::new(boa_gc::GcRefCell::new(BoaProps {
            map: HashMap::new(),
        })))
    }
    #[inline]
    fn get(&self, k: PropertyKey) -> Option<V> {
        self.0.borrow().map.get(&k).copied()
    }
    #[inline]
    fn set(&mut self, k: PropertyKey, v: V) {
        self.0.borrow_mut().map.insert(k, v);
    }
    #[inline]
    fn delete(&mut self, k: PropertyKey) -> bool {
        self.0.borrow_mut().map.remove(&k).is_some()
    }
    fn dup(&self) -> Self {
        let map = self.0.borrow().map.clone();
        BoaObj(boa_gc::Gc::new(boa_gc::GcRefCell::new(BoaProps { map })))
    }
}

/// The value of property `i` (distinct small integers, so sums check every read).
fn val(i: usize) -> V {
    Value::from(i as u32)
}

/// What every get routine adds per read (the same few instructions in every row).
#[inline(always)]
fn fold(sum: f64, v: Value<'_>) -> f64 {
    sum + v.as_number().unwrap_or(-1.0)
}

fn expect_sum(objects: usize, n: usize) -> f64 {
    (objects * n * (n - 1) / 2) as f64
}

fn sum_is(want: f64) -> impl Fn(&f64) -> Result<(), String> {
    move |&got| {
        if got == want {
            Ok(())
        } else {
            Err(format!("sum {got}, expected {want}"))
        }
    }
}

fn count_is(want: usize) -> impl Fn(&usize) -> Result<(), String> {
    move |&got| {
        if got == want {
            Ok(())
        } else {
            Err(format!("{got} done, expected {want}"))
        }
    }
}

/// Objects per batch with `n` properties (about 4,096 properties in all, at least 4).
fn objects_for(n: usize) -> usize {
    (4096 / n).max(4)
}

fn keys(n: usize) -> Vec<PropertyKey> {
    (0..n)
        .map(|i| PropertyKey::Name(Key::new(&format!("p{i}"))))
        .collect()
}

fn peer<P: Peer>(ctx: &mut Ctx<'_>, n: usize, keys: &[PropertyKey]) -> BenchResult {
    let objects = objects_for(n);
    let ops = (objects * n) as u64;
    let build = || -> P {
        let mut o = P::empty();
        for (i, &k) in keys.iter().enumerate() {
            o.set(k, val(i));
        }
        o
    };
    let objs: Vec<P> = (0..objects).map(|_| build()).collect();
    let case = |op: &str| Case::new(op, P::NAME, "properties", n as u64).baseline(BASELINE);
    ctx.time(
        &case("get"),
        ops,
        || (),
        |()| {
            let mut sum = 0.0;
            for o in &objs {
                for &k in keys {
                    sum = fold(sum, o.get(k).unwrap_or(Value::UNDEFINED));
                }
            }
            sum
        },
        sum_is(expect_sum(objects, n)),
    )?;
    let objs = RefCell::new(objs);
    ctx.time(
        &case("set"),
        ops,
        || (),
        |()| {
            for o in objs.borrow_mut().iter_mut() {
                for (i, &k) in keys.iter().enumerate() {
                    o.set(k, val(i));
                }
            }
        },
        |()| {
            let sum = objs.borrow().iter().fold(0.0, |s, o| {
                keys.iter()
                    .fold(s, |s, &k| fold(s, o.get(k).unwrap_or(Value::UNDEFINED)))
            });
            sum_is(expect_sum(objects, n))(&sum)
        },
    )?;
    ctx.time(
        &case("create (assign)"),
        ops,
        || (),
        |()| (0..objects).map(|_| build()).collect::<Vec<P>>(),
        |made| {
            let sum = made.iter().fold(0.0, |s, o| {
                keys.iter()
                    .fold(s, |s, &k| fold(s, o.get(k).unwrap_or(Value::UNDEFINED)))
            });
            sum_is(expect_sum(objects, n))(&sum)
        },
    )?;
    let proto = build();
    ctx.time(
        &case("delete"),
        ops,
        || (0..objects).map(|_| proto.dup()).collect::<Vec<P>>(),
        |mut objs| {
            let mut done = 0;
            for o in &mut objs {
                for &k in keys {
                    done += usize::from(o.delete(k));
                }
            }
            done
        },
        count_is(objects * n),
    )?;
    Ok(())
}

fn fill(o: Obj<'_>, keys: &[PropertyKey]) {
    for (i, &k) in keys.iter().enumerate() {
        o.set(k, val(i)).expect("set");
    }
}

fn gc_object(ctx: &mut Ctx<'_>, n: usize, keys: &[PropertyKey]) -> BenchResult {
    let objects = objects_for(n);
    let ops = (objects * n) as u64;
    let heap = RefCell::new(Heap::new());
    let name = "gc-object";
    let case = |op: &str, imp: &str| Case::new(op, imp, "properties", n as u64).baseline(BASELINE);
    {
        let h = heap.borrow();
        let m = h.mutator();
        let objs: Vec<Obj<'_>> = (0..objects)
            .map(|_| {
                let o = m.object().expect("object");
                fill(o, keys);
                o
            })
            .collect();
        ctx.time(
            &case("get", name),
            ops,
            || (),
            |()| {
                let mut sum = 0.0;
                for o in &objs {
                    for &k in keys {
                        sum = fold(sum, o.get(k).unwrap_or(Value::UNDEFINED));
                    }
                }
                sum
            },
            sum_is(expect_sum(objects, n)),
        )?;
        // One cache per key: per property-access site, as an engine's inline caches.
        let caches: Vec<PropertyCache> = keys.iter().map(|&k| PropertyCache::new(k)).collect();
        ctx.time(
            &case("get", "gc-object cached"),
            ops,
            || (),
            |()| {
                let mut sum = 0.0;
                for o in &objs {
                    for c in &caches {
                        sum = fold(sum, o.get_cached(c).unwrap_or(Value::UNDEFINED));
                    }
                }
                sum
            },
            sum_is(expect_sum(objects, n)),
        )?;
        ctx.time(
            &case("set", name),
            ops,
            || (),
            |()| {
                for o in &objs {
                    for (i, &k) in keys.iter().enumerate() {
                        o.set(k, val(i)).expect("set");
                    }
                }
            },
            |()| {
                let sum = objs.iter().fold(0.0, |s, o| {
                    keys.iter()
                        .fold(s, |s, &k| fold(s, o.get(k).unwrap_or(Value::UNDEFINED)))
                });
                sum_is(expect_sum(objects, n))(&sum)
            },
        )?;
    }
    ctx.time(
        &case("create (assign)", name),
        ops,
        || {
            heap.borrow_mut().collect();
        },
        |()| {
            let h = heap.borrow();
            let m = h.mutator();
            let mut sum = 0.0;
            for _ in 0..objects {
                let o = m.object().expect("object");
                fill(o, keys);
                sum = fold(sum, o.get(keys[n - 1]).unwrap_or(Value::UNDEFINED));
            }
            sum
        },
        sum_is((objects * (n - 1)) as f64),
    )?;
    // Deletes: the objects are built (and rooted) outside the timing.
    let roots = RefCell::new(Vec::<Root>::new());
    ctx.time(
        &case("delete", name),
        ops,
        || {
            roots.borrow_mut().clear();
            let mut h = heap.borrow_mut();
            h.collect();
            let m = h.mutator();
            let made: Vec<Root> = (0..objects)
                .map(|_| {
                    let o = m.object().expect("object");
                    fill(o, keys);
                    h.root(o).expect("root")
                })
                .collect();
            drop(m);
            *roots.borrow_mut() = made;
        },
        |()| {
            let h = heap.borrow();
            let roots = roots.borrow();
            let mut done = 0;
            for r in roots.iter() {
                let o = r.get(&h).expect("root");
                for &k in keys {
                    done += usize::from(o.delete(k).expect("delete"));
                }
            }
            done
        },
        count_is(objects * n),
    )?;
    roots.borrow_mut().clear();
    Ok(())
}

/// The floor: a slot array per object read by position (no key search at all).
fn floor(ctx: &mut Ctx<'_>, n: usize) -> BenchResult {
    let objects = objects_for(n);
    let objs: Vec<Vec<V>> = (0..objects).map(|_| (0..n).map(val).collect()).collect();
    let case = Case::new("get", "slot array (floor)", "properties", n as u64).baseline(BASELINE);
    ctx.time(
        &case,
        (objects * n) as u64,
        || (),
        |()| {
            let mut sum = 0.0;
            for o in &objs {
                for &v in o {
                    sum = fold(sum, v);
                }
            }
            sum
        },
        sum_is(expect_sum(objects, n)),
    )?;
    Ok(())
}

/// Building one object of `n` keys by assignment, per key: gc-object and std's map.
fn big_build(ctx: &mut Ctx<'_>, n: usize) -> BenchResult {
    let keys: Vec<PropertyKey> = (0..n)
        .map(|i| PropertyKey::Name(Key::new(&format!("b{i}"))))
        .collect();
    let heap = RefCell::new(Heap::new());
    let last = keys[n - 1];
    let case = |imp: &str| Case::new("build", imp, "keys", n as u64).baseline(BASELINE);
    ctx.time(
        &case("gc-object"),
        n as u64,
        || {
            heap.borrow_mut().collect();
        },
        |()| {
            let h = heap.borrow();
            let m = h.mutator();
            let o = m.object().expect("object");
            for (i, &k) in keys.iter().enumerate() {
                o.set(k, val(i)).expect("set");
            }
            o.get(last).expect("get").as_number()
        },
        |&got| match got {
            Some(v) if v == (n - 1) as f64 => Ok(()),
            _ => Err(format!("last key read {got:?}")),
        },
    )?;
    ctx.time(
        &case(BASELINE),
        n as u64,
        || (),
        |()| {
            let mut o = StdMap::empty();
            for (i, &k) in keys.iter().enumerate() {
                o.set(k, val(i));
            }
            o
        },
        |o| {
            if o.0.len() == n && o.get(last) == Some(val(n - 1)) {
                Ok(())
            } else {
                Err(format!("{} keys", o.0.len()))
            }
        },
    )?;
    Ok(())
}

/// Every case of this file.
pub fn run(ctx: &mut Ctx<'_>) -> BenchResult {
    for n in PROP_COUNTS {
        let keys = keys(n);
        floor(ctx, n)?;
        gc_object(ctx, n, &keys)?;
        peer::<StdMap>(ctx, n, &keys)?;
        peer::<FxMap>(ctx, n, &keys)?;
        peer::<VecObj>(ctx, n, &keys)?;
        peer::<BoaObj>(ctx, n, &keys)?;
    }
    for n in BUILD_KEYS {
        big_build(ctx, n)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check<P: Peer>() {
        let ks = keys(20);
        let mut o = P::empty();
        for (i, &k) in ks.iter().enumerate() {
            o.set(k, val(i));
        }
        o.set(ks[3], val(33));
        assert_eq!(o.get(ks[3]), Some(val(33)));
        assert_eq!(o.get(ks[4]), Some(val(4)));
        let d = o.dup();
        assert!(o.delete(ks[4]));
        assert!(!o.delete(ks[4]));
        assert_eq!(o.get(ks[4]), None);
        assert_eq!(d.get(ks[4]), Some(val(4)));
    }

    #[test]
    fn every_peer_is_a_map() {
        check::<StdMap>();
        check::<FxMap>();
        check::<VecObj>();
        check::<BoaObj>();
    }

    #[test]
    fn fx_style_hashes_differ_by_key() {
        use std::hash::{BuildHasher, BuildHasherDefault};
        let b = BuildHasherDefault::<FxStyle>::default();
        let (k1, k2) = (keys(2)[0], keys(2)[1]);
        assert_ne!(b.hash_one(k1), b.hash_one(k2));
    }
}
