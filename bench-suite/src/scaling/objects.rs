//! `scaling-objects`: n objects built by the patterns programs use, gc-object against
//! `HashMap<String, serde_json::Value>` (a JSON object as a parser makes it: owned keys),
//! `HashMap<PropertyKey, Value>` (interned keys, the `objects` group's `HashMap std`) and
//! a `Vec` of pairs.
//!
//! Patterns ([`ObjShape`]): every object with the same 8 keys in the same order; every
//! object with `id` and one key of its own (n distinct keys); JSON-shaped (3-12 keys of a
//! 200-key vocabulary in a random order); delete-heavy (8 keys, 4 deleted, 2 added). One
//! operation is building one object; the plan of sets and deletes is made outside the
//! timing, and every object is checked against it (a sample of them) afterwards. And a
//! tree of n objects built, rooted, collected with everything alive, unrooted and
//! collected again (gc-object; `Box` nodes built and dropped as the floor).

use std::alloc::Layout;
use std::collections::{BTreeMap, HashMap};
use std::ptr::NonNull;

use gc_object::{Heap, Key, Obj, PropertyKey, RawAlloc, SystemAlloc, Value};

use crate::groups::group::Group;
use crate::measure::{BenchResult, Ctx};

use super::sweep::{self, Meter, Row};
use super::tree::mix;

/// The group.
pub const GROUP: Group = Group {
    name: "scaling-objects",
    about: "growth with n: gc-object vs HashMap<String, Value>, HashMap<PropertyKey, Value>, Vec building same-key, distinct-key, JSON-shaped and delete-heavy objects; object-tree build and collect",
    run,
    claims: &[],
    ab_claims: &[],
};

/// The most objects of the sweep.
pub const LAST: u64 = 256_000;
/// Keys of the JSON vocabulary.
pub const JSON_VOCABULARY: u32 = 200;

/// How the objects of a sweep are built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ObjShape {
    /// 8 keys, the same for every object, in the same order.
    SameKeys,
    /// `id`, then a key no other object has.
    DistinctKey,
    /// 3-12 keys from a [`JSON_VOCABULARY`]-key vocabulary, random order.
    Json,
    /// 8 keys set, 4 of them deleted, 2 more set.
    DeleteHeavy,
}

impl ObjShape {
    /// Every shape.
    pub const ALL: [ObjShape; 4] = [
        ObjShape::SameKeys,
        ObjShape::DistinctKey,
        ObjShape::Json,
        ObjShape::DeleteHeavy,
    ];

    /// The name in row labels.
    pub fn name(self) -> &'static str {
        match self {
            ObjShape::SameKeys => "same 8 keys",
            ObjShape::DistinctKey => "a distinct key each",
            ObjShape::Json => "JSON-shaped",
            ObjShape::DeleteHeavy => "delete-heavy",
        }
    }

    /// Key names used by a sweep of `n` objects (indices in [`Op`] point here).
    fn vocabulary(self, n: u64) -> u64 {
        match self {
            ObjShape::SameKeys => 8,
            ObjShape::DistinctKey => n + 1,
            ObjShape::Json => u64::from(JSON_VOCABULARY),
            ObjShape::DeleteHeavy => 24,
        }
    }

    /// The sets and deletes that build object `i`.
    fn ops(self, i: u64, out: &mut Vec<Op>) {
        let v = |j: u64| (i.wrapping_mul(31).wrapping_add(j) & 0x7fff_ffff) as u32;
        match self {
            ObjShape::SameKeys => out.extend((0..8).map(|j| Op::Set(j as u32, v(j)))),
            ObjShape::DistinctKey => {
                out.push(Op::Set(0, v(0)));
                out.push(Op::Set(1 + i as u32, v(1)));
            }
            ObjShape::Json => {
                let mut h = mix(i ^ 0x6a09_e667);
                let count = 3 + h % 10;
                let mut picked: Vec<u32> = Vec::new();
                while picked.len() < count as usize {
                    h = mix(h);
                    let k = (h % u64::from(JSON_VOCABULARY)) as u32;
                    if !picked.contains(&k) {
                        picked.push(k);
                    }
                }
                out.extend(
                    picked
                        .iter()
                        .enumerate()
                        .map(|(j, &k)| Op::Set(k, v(j as u64))),
                );
            }
            ObjShape::DeleteHeavy => {
                out.extend((0..8).map(|j| Op::Set(j as u32, v(j))));
                let first = (mix(i) % 4) as u32;
                out.extend((0..4).map(|j| Op::Delete((first + 2 * j) % 8)));
                out.push(Op::Set(8 + (i % 8) as u32, v(8)));
                out.push(Op::Set(16 + (i % 8) as u32, v(9)));
            }
        }
    }
}

/// One step of building an object: set key `k` (an index into the vocabulary) to a
/// number, or delete it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Set(u32, u32),
    Delete(u32),
}

/// The plan of a sweep of `n` objects: every object's steps, and the key names.
struct Plan {
    n: u64,
    ops: Vec<Op>,
    /// Object `i`'s steps are `ops[ends[i - 1]..ends[i]]`.
    ends: Vec<usize>,
    names: Vec<String>,
}

impl Plan {
    fn new(shape: ObjShape, n: u64) -> Plan {
        let mut ops = Vec::new();
        let mut ends = Vec::with_capacity(n as usize);
        for i in 0..n {
            shape.ops(i, &mut ops);
            ends.push(ops.len());
        }
        let names = (0..shape.vocabulary(n))
            .map(|k| if k == 0 { "id".into() } else { format!("k{k}") })
            .collect();
        Plan {
            n,
            ops,
            ends,
            names,
        }
    }

    fn object(&self, i: usize) -> &[Op] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.ops[start..self.ends[i]]
    }

    /// What object `i` holds at the end: key index -> value.
    fn expected(&self, i: usize) -> BTreeMap<u32, u32> {
        let mut m = BTreeMap::new();
        for op in self.object(i) {
            match *op {
                Op::Set(k, v) => {
                    m.insert(k, v);
                }
                Op::Delete(k) => {
                    m.remove(&k);
                }
            }
        }
        m
    }

    /// The objects checked after a build (64 spread over the sweep, and the last).
    fn sample(&self) -> impl Iterator<Item = usize> {
        let n = self.n as usize;
        (0..n).step_by((n / 64).max(1)).chain([n - 1])
    }
}

/// The global allocator without gc-object's process-wide chunk pool: a heap on it takes
/// fresh chunks, so the counting call sees all the memory the heap uses (a chunk pooled by
/// an earlier heap would be counted nowhere). The timed calls use [`Heap::new`], pool and
/// all, as users do.
#[derive(Debug)]
struct Unpooled;

// SAFETY: forwards to `SystemAlloc`, which upholds the contract.
unsafe impl RawAlloc for Unpooled {
    fn alloc(&self, layout: Layout) -> Option<NonNull<u8>> {
        SystemAlloc.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: NonNull<u8>, layout: Layout) {
        // SAFETY: the caller passes a pointer from `alloc` (SystemAlloc's) with `layout`.
        unsafe { SystemAlloc.dealloc(ptr, layout) }
    }
}

/// The heap of one kernel call ([`Unpooled`] on the counting call).
fn heap(m: &Meter) -> Heap {
    if m.counting() {
        Heap::with_allocator(Unpooled)
    } else {
        Heap::new()
    }
}

/// An object model the sweep can build.
trait Model {
    const NAME: &'static str;
    /// Interned or owned keys, made once per sweep size outside the timing.
    type Keys;
    type Object;
    fn keys(names: &[String]) -> Self::Keys;
    fn build(keys: &Self::Keys, ops: &[Op]) -> Self::Object;
    /// The number at key index `k`, if set.
    fn read(o: &Self::Object, keys: &Self::Keys, k: u32) -> Option<u32>;
    /// Count of keys present.
    fn size(o: &Self::Object) -> usize;
}

struct JsonMap;
impl Model for JsonMap {
    const NAME: &'static str = "HashMap<String, Value>";
    type Keys = Vec<String>;
    type Object = HashMap<String, serde_json::Value>;
    fn keys(names: &[String]) -> Vec<String> {
        names.to_vec()
    }
    fn build(keys: &Vec<String>, ops: &[Op]) -> Self::Object {
        let mut o = HashMap::new();
        for op in ops {
            match *op {
                Op::Set(k, v) => {
                    o.insert(keys[k as usize].clone(), serde_json::Value::from(v));
                }
                Op::Delete(k) => {
                    o.remove(&keys[k as usize]);
                }
            }
        }
        o
    }
    fn read(o: &Self::Object, keys: &Vec<String>, k: u32) -> Option<u32> {
        o.get(&keys[k as usize])
            .and_then(serde_json::Value::as_u64)
            .map(|v| v as u32)
    }
    fn size(o: &Self::Object) -> usize {
        o.len()
    }
}

fn interned(names: &[String]) -> Vec<PropertyKey> {
    names
        .iter()
        .map(|s| PropertyKey::Name(Key::new(s)))
        .collect()
}

struct KeyMap;
impl Model for KeyMap {
    const NAME: &'static str = "HashMap std";
    type Keys = Vec<PropertyKey>;
    type Object = HashMap<PropertyKey, Value<'static>>;
    fn keys(names: &[String]) -> Vec<PropertyKey> {
        interned(names)
    }
    fn build(keys: &Vec<PropertyKey>, ops: &[Op]) -> Self::Object {
        let mut o = HashMap::new();
        for op in ops {
            match *op {
                Op::Set(k, v) => {
                    o.insert(keys[k as usize], Value::from(v));
                }
                Op::Delete(k) => {
                    o.remove(&keys[k as usize]);
                }
            }
        }
        o
    }
    fn read(o: &Self::Object, keys: &Vec<PropertyKey>, k: u32) -> Option<u32> {
        o.get(&keys[k as usize]).and_then(|v| v.as_u32())
    }
    fn size(o: &Self::Object) -> usize {
        o.len()
    }
}

struct PairVec;
impl Model for PairVec {
    const NAME: &'static str = "Vec";
    type Keys = Vec<PropertyKey>;
    type Object = Vec<(PropertyKey, Value<'static>)>;
    fn keys(names: &[String]) -> Vec<PropertyKey> {
        interned(names)
    }
    fn build(keys: &Vec<PropertyKey>, ops: &[Op]) -> Self::Object {
        let mut o: Self::Object = Vec::new();
        for op in ops {
            match *op {
                Op::Set(k, v) => {
                    let key = keys[k as usize];
                    match o.iter_mut().find(|p| p.0 == key) {
                        Some(p) => p.1 = Value::from(v),
                        None => o.push((key, Value::from(v))),
                    }
                }
                Op::Delete(k) => {
                    let key = keys[k as usize];
                    o.retain(|p| p.0 != key);
                }
            }
        }
        o
    }
    fn read(o: &Self::Object, keys: &Vec<PropertyKey>, k: u32) -> Option<u32> {
        let key = keys[k as usize];
        o.iter().find(|p| p.0 == key).and_then(|p| p.1.as_u32())
    }
    fn size(o: &Self::Object) -> usize {
        o.len()
    }
}

/// Checks the sampled objects of `plan` through `read(i, k)` and `size(i)`.
fn check(
    plan: &Plan,
    read: impl Fn(usize, u32) -> Result<Option<u32>, String>,
    size: impl Fn(usize) -> Result<usize, String>,
) -> Result<(), String> {
    for i in plan.sample() {
        let want = plan.expected(i);
        for k in 0..plan.names.len() as u32 {
            let got = read(i, k)?;
            if got != want.get(&k).copied() {
                return Err(format!(
                    "object {i}, key {}: {got:?}, expected {:?}",
                    plan.names[k as usize],
                    want.get(&k)
                ));
            }
            if plan.names.len() > 256 && k >= 1 {
                // Distinct keys: the object's own key and one other are enough.
                let own = 1 + i as u32;
                for k in [own, own % (plan.names.len() as u32 - 1) + 1] {
                    if read(i, k)? != want.get(&k).copied() {
                        return Err(format!("object {i}, key {}", plan.names[k as usize]));
                    }
                }
                break;
            }
        }
        if size(i)? != want.len() {
            return Err(format!(
                "object {i} has {} keys, expected {}",
                size(i)?,
                want.len()
            ));
        }
    }
    Ok(())
}

/// The cached plan and keys of a row between the calls of a cell.
struct Cache<K> {
    plan: Option<(Plan, K)>,
}

impl<K> Cache<K> {
    fn get(&mut self, shape: ObjShape, n: u64, keys: impl FnOnce(&[String]) -> K) -> &(Plan, K) {
        if self.plan.as_ref().is_none_or(|p| p.0.n != n) {
            self.plan = None;
            let plan = Plan::new(shape, n);
            let k = keys(&plan.names);
            self.plan = Some((plan, k));
        }
        self.plan.as_ref().expect("made above")
    }
}

fn model_row<'a, M: Model + 'a>(shape: ObjShape) -> Row<'a> {
    let mut cache: Cache<M::Keys> = Cache { plan: None };
    Row::new(
        format!("build ({})", shape.name()),
        M::NAME,
        LAST,
        move |n, m: &mut Meter| {
            if n == 0 {
                cache.plan = None;
                return Ok(0);
            }
            let (plan, keys) = cache.get(shape, n, M::keys);
            let objects: Vec<M::Object> = m.time(|| {
                (0..n as usize)
                    .map(|i| M::build(keys, plan.object(i)))
                    .collect()
            });
            check(
                plan,
                |i, k| Ok(M::read(&objects[i], keys, k)),
                |i| Ok(M::size(&objects[i])),
            )?;
            Ok(n)
        },
    )
}

fn gc_row<'a>(shape: ObjShape) -> Row<'a> {
    let mut cache: Cache<Vec<PropertyKey>> = Cache { plan: None };
    Row::new(
        format!("build ({})", shape.name()),
        "gc-object",
        LAST,
        move |n, m: &mut Meter| {
            if n == 0 {
                cache.plan = None;
                return Ok(0);
            }
            let (plan, keys) = cache.get(shape, n, interned);
            let heap = heap(m);
            let objects = m.time(|| -> Result<Vec<Obj<'_>>, gc_object::Error> {
                let mu = heap.mutator();
                let mut out = Vec::with_capacity(n as usize);
                for i in 0..n as usize {
                    let o = mu.object()?;
                    for op in plan.object(i) {
                        match *op {
                            Op::Set(k, v) => o.set(keys[k as usize], Value::from(v))?,
                            Op::Delete(k) => {
                                o.delete(keys[k as usize])?;
                            }
                        }
                    }
                    out.push(o);
                }
                Ok(out)
            });
            let objects = objects.map_err(|e| format!("gc-object: {e}"))?;
            let e = |e: gc_object::Error| e.to_string();
            check(
                plan,
                |i, k| {
                    let v = objects[i].get(keys[k as usize]).map_err(e)?;
                    Ok(if v.is_undefined() { None } else { v.as_u32() })
                },
                |i| {
                    let want = plan.expected(i);
                    // The keys it should have are there (the reads above showed that no
                    // other key of the vocabulary is).
                    let mut c = 0;
                    for &k in want.keys() {
                        c += usize::from(
                            !objects[i].get(keys[k as usize]).map_err(e)?.is_undefined(),
                        );
                    }
                    Ok(c)
                },
            )?;
            drop(objects);
            drop(heap);
            Ok(n)
        },
    )
}

/// A node of the floor's tree.
struct BoxNode {
    value: u32,
    left: Option<Box<BoxNode>>,
    right: Option<Box<BoxNode>>,
}

fn box_tree(i: u32, n: u32) -> Option<Box<BoxNode>> {
    (i < n).then(|| {
        Box::new(BoxNode {
            value: i,
            left: box_tree(2 * i + 1, n),
            right: box_tree(2 * i + 2, n),
        })
    })
}

fn box_sum(t: &Option<Box<BoxNode>>) -> u64 {
    t.as_ref().map_or(0, |b| {
        u64::from(b.value) + box_sum(&b.left) + box_sum(&b.right)
    })
}

/// gc-object: a complete binary tree of n objects (`v`, `left`, `right`), rooted at its
/// top, collected (all alive), unrooted and collected again (all freed). Per node.
fn gc_tree_row<'a>() -> Row<'a> {
    Row::new(
        "tree build+collect",
        "gc-object",
        LAST,
        |n, m: &mut Meter| {
            if n == 0 {
                return Ok(0);
            }
            let [left, right, v] = [
                PropertyKey::Name(Key::new("left")),
                PropertyKey::Name(Key::new("right")),
                PropertyKey::Name(Key::new("v")),
            ];
            let mut heap = heap(m);
            let stats = m.time(|| -> Result<_, gc_object::Error> {
                let root = {
                    let mu = heap.mutator();
                    let mut nodes = Vec::with_capacity(n as usize);
                    for i in 0..n as u32 {
                        let o = mu.object()?;
                        o.set(v, Value::from(i))?;
                        nodes.push(o);
                    }
                    for i in 1..n as usize {
                        let parent = nodes[(i - 1) / 2];
                        parent.set(if i % 2 == 1 { left } else { right }, Value::from(nodes[i]))?;
                    }
                    heap.root(nodes[0])?
                };
                let alive = heap.collect();
                drop(root);
                let dead = heap.collect();
                Ok((alive.marked, dead.freed))
            });
            let (marked, freed) = stats.map_err(|e| format!("gc-object: {e}"))?;
            if marked != n || freed != n {
                return Err(format!("marked {marked} and freed {freed} of {n} nodes"));
            }
            Ok(n)
        },
    )
}

/// The floor: the same tree as `Box` nodes, built and dropped. A time floor only: a
/// 24-byte node with no properties is no memory peer of an object.
fn box_tree_row<'a>() -> Row<'a> {
    Row::new("tree build+collect", "Box", LAST, |n, m: &mut Meter| {
        if n == 0 {
            return Ok(0);
        }
        let sum = m.time(|| {
            let t = box_tree(0, n as u32);
            let s = box_sum(&t);
            drop(t);
            s
        });
        if sum != n * (n - 1) / 2 {
            return Err(format!("tree sum {sum}"));
        }
        Ok(n)
    })
    .no_memory()
}

/// Every row of the group.
pub fn rows<'a>() -> Vec<Row<'a>> {
    let mut rows = Vec::new();
    for shape in ObjShape::ALL {
        rows.push(gc_row(shape));
        rows.push(model_row::<JsonMap>(shape));
        rows.push(model_row::<KeyMap>(shape));
        rows.push(model_row::<PairVec>(shape));
    }
    rows.push(gc_tree_row());
    rows.push(box_tree_row());
    rows
}

fn run(ctx: &mut Ctx<'_>) -> BenchResult {
    sweep::run(ctx, rows())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_make_the_documented_objects() {
        let p = Plan::new(ObjShape::Json, 500);
        for i in 0..500 {
            let e = p.expected(i);
            assert!((3..=12).contains(&e.len()), "{e:?}");
        }
        let p = Plan::new(ObjShape::DistinctKey, 100);
        assert_eq!(p.names.len(), 101);
        assert_eq!(
            p.expected(7).keys().copied().collect::<Vec<_>>(),
            vec![0, 8]
        );
        let p = Plan::new(ObjShape::DeleteHeavy, 10);
        assert!(p.expected(3).len() == 6, "{:?}", p.expected(3));
    }

    #[test]
    fn rows_build_and_check_every_model() {
        for mut row in rows() {
            let mut m = Meter::default();
            assert_eq!((row.kernel)(200, &mut m), Ok(200), "{}", row.operation);
        }
    }
}
