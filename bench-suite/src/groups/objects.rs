//! `objects`: the gc-object crate. The seed's object-churn benchmark (ported exactly) on
//! independent heaps, one shared heap and cold heaps at every lane count, against
//! gc-arena, dumpster and `Box`; and a property-count sweep around the inline-slot count.
//!
//! Churn, per job (design note `gc-object.md`): a ring of 256 objects
//! `{value, stamp, previous}` with `value = lane + job + slot + 1`, `stamp = slot & 7`,
//! `previous = 0`; then 20,000 iterations: read the displaced `ring[i & 255]`,
//! `value = (displaced.value + i + lane) % 1000003`, store a fresh
//! `{value, stamp: i & 7, previous: displaced.value}` in its place, add
//! `(value + stamp + previous) & 1023` to a checksum; finally add `ring[t].value & 1023`
//! over the ring. Every lane's checksum is compared with [`reference_job`] on every run.

use std::sync::{Barrier, Mutex, RwLock};
use std::time::Instant;

use gc_object::{Heap, INLINE_SLOTS, Key, Literal, PropertyCache, PropertyKey, Value};

use crate::measure::{BenchResult, Case, Ctx, Instrument, Stats};
use crate::seeds::AbClaim;

use super::group::Group;

mod props;
mod shape_patterns;
mod strings;
mod weak;

/// The group.
pub const GROUP: Group = Group {
    name: "objects",
    about: "gc-object: object churn (independent / shared / cold heaps, peers) per lane count; property-count sweep; property access against HashMap, Vec and boa_gc objects; object patterns (same keys, distinct key, JSON-shaped, delete-heavy, key orders) by size against HashMap<String, Value>",
    run,
    claims: &[],
    ab_claims: AB_CLAIMS,
};

/// Objects in the ring.
pub const RING: usize = 256;
/// Fresh objects per job.
pub const OBJECTS_PER_JOB: u64 = 20_000;
const MODULUS: u64 = 1_000_003;

/// The exact checksum of one job, computed with plain integers.
pub fn reference_job(lane: u64, job: u64) -> u64 {
    let mut ring: Vec<(u64, u64, u64)> = (0..RING as u64)
        .map(|slot| (lane + job + slot + 1, slot & 7, 0))
        .collect();
    let mut sum = 0u64;
    for i in 0..OBJECTS_PER_JOB {
        let displaced = ring[(i & 255) as usize];
        let value = (displaced.0 + i + lane) % MODULUS;
        let fresh = (value, i & 7, displaced.0);
        ring[(i & 255) as usize] = fresh;
        sum += (fresh.0 + fresh.1 + fresh.2) & 1023;
    }
    sum + ring.iter().map(|r| r.0 & 1023).sum::<u64>()
}

/// The ring as a fixed-size array (every implementation uses it, so `ring[i & 255]` needs
/// no bounds check in any of them).
fn ring_array<T>(ring: Vec<T>) -> Box<[T; RING]> {
    match ring.into_boxed_slice().try_into() {
        Ok(a) => a,
        Err(v) => panic!("ring of {} objects, expected {RING}", v.len()),
    }
}

/// One implementation of the churn: `lane_state` is made on the lane's thread; `job` runs
/// one job and returns its checksum.
trait Churn: Sync {
    const NAME: &'static str;
    type Lane;
    fn lane(&self) -> Self::Lane;
    fn job(&self, lane_state: &mut Self::Lane, lane: u64, job: u64) -> u64;
    /// After every lane finished a sample (the shared heap collects here).
    fn after_sample(&self) {}
}

/// A churn value read back (every churn value is an integer below 2^32, stored exactly).
fn num(v: Value<'_>) -> u64 {
    u64::from(v.as_u32().expect("churn values are u32 numbers"))
}

/// A churn value as a JS number (they stay below `MODULUS + RING + jobs`, far below 2^32).
fn val<'h>(n: u64) -> Value<'h> {
    Value::from(u32::try_from(n).expect("churn values fit u32"))
}

/// The churn on a gc-object heap (the ring holds `Obj`s; the heap collects after a job).
/// `value` is read through a [`PropertyCache`], as an engine reads `displaced.value` at one
/// property-access site with an inline cache.
fn gc_object_job(heap: &Heap, lit: &Literal, value: PropertyKey, lane: u64, job: u64) -> u64 {
    let value = PropertyCache::new(value);
    let m = heap.mutator();
    let mut ring = Vec::with_capacity(RING);
    for slot in 0..RING as u64 {
        let vals = [val(lane + job + slot + 1), val(slot & 7), val(0)];
        ring.push(m.literal(lit, &vals).expect("object"));
    }
    let mut ring = ring_array(ring);
    let mut sum = 0u64;
    for i in 0..OBJECTS_PER_JOB {
        let displaced = num(ring[(i & 255) as usize].get_cached(&value).expect("get"));
        let v = (displaced + i + lane) % MODULUS;
        let stamp = i & 7;
        let vals = [val(v), val(stamp), val(displaced)];
        ring[(i & 255) as usize] = m.literal(lit, &vals).expect("object");
        sum += (v + stamp + displaced) & 1023;
    }
    for o in ring.iter() {
        sum += num(o.get_cached(&value).expect("get")) & 1023;
    }
    sum
}

fn value_key() -> PropertyKey {
    PropertyKey::Name(Key::new("value"))
}

const FIELDS: [&str; 3] = ["value", "stamp", "previous"];

struct Independent;
impl Churn for Independent {
    const NAME: &'static str = "gc-object independent";
    type Lane = (Heap, Literal);
    fn lane(&self) -> Self::Lane {
        let heap = Heap::new();
        let lit = heap.literal(&FIELDS);
        (heap, lit)
    }
    fn job(&self, (heap, lit): &mut Self::Lane, lane: u64, job: u64) -> u64 {
        let sum = gc_object_job(heap, lit, value_key(), lane, job);
        heap.collect();
        sum
    }
}

struct Cold;
impl Churn for Cold {
    const NAME: &'static str = "gc-object cold";
    type Lane = ();
    fn lane(&self) {}
    fn job(&self, (): &mut (), lane: u64, job: u64) -> u64 {
        let heap = Heap::new();
        let lit = heap.literal(&FIELDS);
        gc_object_job(&heap, &lit, value_key(), lane, job)
    }
}

/// One heap for every lane. The `RwLock` is the safepoint: lanes hold it shared while they
/// run jobs, the collection takes it exclusively (`&mut Heap`) between samples.
struct Shared {
    heap: RwLock<Heap>,
    lit: Literal,
}
impl Shared {
    fn new() -> Shared {
        let heap = Heap::new();
        let lit = heap.literal(&FIELDS);
        Shared {
            heap: RwLock::new(heap),
            lit,
        }
    }
}
impl Churn for Shared {
    const NAME: &'static str = "gc-object shared";
    type Lane = ();
    fn lane(&self) {}
    fn job(&self, (): &mut (), lane: u64, job: u64) -> u64 {
        let heap = self.heap.read().expect("heap lock");
        gc_object_job(&heap, &self.lit, value_key(), lane, job)
    }
    fn after_sample(&self) {
        self.heap.write().expect("heap lock").collect();
    }
}

/// The peers' three-field object.
#[derive(gc_arena::Collect, dumpster::Trace)]
#[collect(require_static)]
struct Node {
    value: u64,
    stamp: u64,
    previous: u64,
}

/// One churn job over a peer's pointer to a [`Node`] (`Box`, gc-arena's or dumpster's
/// `Gc`): `new` allocates one object.
fn peer_job<P: std::ops::Deref<Target = Node>>(
    lane: u64,
    job: u64,
    mut new: impl FnMut(Node) -> P,
) -> u64 {
    let ring: Vec<P> = (0..RING as u64)
        .map(|slot| {
            new(Node {
                value: lane + job + slot + 1,
                stamp: slot & 7,
                previous: 0,
            })
        })
        .collect();
    let mut ring = ring_array(ring);
    let mut sum = 0u64;
    for i in 0..OBJECTS_PER_JOB {
        let displaced = ring[(i & 255) as usize].value;
        let value = (displaced + i + lane) % MODULUS;
        let node = new(Node {
            value,
            stamp: i & 7,
            previous: displaced,
        });
        sum += (node.value + node.stamp + node.previous) & 1023;
        // Opaque, so no allocation can be elided.
        ring[(i & 255) as usize] = std::hint::black_box(node);
    }
    sum + ring.iter().map(|n| n.value & 1023).sum::<u64>()
}

struct GcArena;
impl Churn for GcArena {
    const NAME: &'static str = "gc-arena";
    type Lane = gc_arena::Arena<gc_arena::Rootable![()]>;
    fn lane(&self) -> Self::Lane {
        gc_arena::Arena::new(|_| ())
    }
    fn job(&self, arena: &mut Self::Lane, lane: u64, job: u64) -> u64 {
        let sum = arena.mutate(|mc, _| peer_job(lane, job, |n| gc_arena::Gc::new(mc, n)));
        arena.finish_cycle();
        sum
    }
}

struct Dumpster;
impl Churn for Dumpster {
    const NAME: &'static str = "dumpster";
    type Lane = ();
    fn lane(&self) {}
    fn job(&self, (): &mut (), lane: u64, job: u64) -> u64 {
        peer_job(lane, job, dumpster::sync::Gc::new)
    }
}

struct Boxed;
impl Churn for Boxed {
    const NAME: &'static str = "Box";
    type Lane = ();
    fn lane(&self) {}
    fn job(&self, (): &mut (), lane: u64, job: u64) -> u64 {
        peer_job(lane, job, Box::new)
    }
}

/// Runs `samples + 1` samples (the first is a warm-up) of `jobs` jobs on each of `lanes`
/// threads. The lane threads and their state live across samples (warm heaps); each sample
/// starts them together and ends when the last finishes. Every lane's checksum is checked.
/// Returns the wall time of each sample in nanoseconds (warm-up excluded).
fn run_lanes<C: Churn>(
    c: &C,
    lanes: usize,
    jobs: u64,
    samples: usize,
    case: &Case,
) -> BenchResult<Vec<f64>> {
    let start = Barrier::new(lanes + 1);
    let end = Barrier::new(lanes + 1);
    let sums: Mutex<Vec<(u64, u64, u64)>> = Mutex::new(Vec::new());
    // Per sample: the earliest lane start and the latest lane end, taken by the lanes
    // themselves (the main thread may be descheduled around a barrier).
    let spans: Mutex<Vec<(Instant, Instant)>> = Mutex::new(Vec::new());
    let mut times = Vec::with_capacity(samples);
    std::thread::scope(|s| {
        for lane in 0..lanes as u64 {
            let (start, end, sums, spans) = (&start, &end, &sums, &spans);
            s.spawn(move || {
                let mut st = c.lane();
                for sample in 0..=samples as u64 {
                    start.wait();
                    let t0 = Instant::now();
                    let mut mine = Vec::with_capacity(jobs as usize);
                    for j in 0..jobs {
                        let job = sample * jobs + j;
                        mine.push((lane, job, c.job(&mut st, lane, job)));
                    }
                    let t1 = Instant::now();
                    sums.lock().expect("sums").extend(mine);
                    spans.lock().expect("spans").push((t0, t1));
                    end.wait();
                }
            });
        }
        for sample in 0..=samples {
            start.wait();
            end.wait();
            let mut sp = spans.lock().expect("spans");
            let first = sp.iter().map(|s| s.0).min().expect("a lane ran");
            let last = sp.iter().map(|s| s.1).max().expect("a lane ran");
            sp.clear();
            drop(sp);
            // The collection at the safepoint (shared heap) is part of the work.
            let gc = Instant::now();
            c.after_sample();
            let gc = gc.elapsed();
            if sample > 0 {
                times.push((last - first + gc).as_nanos() as f64);
            }
        }
    });
    let sums = sums.into_inner().expect("sums");
    crate::measure::check(
        sums.len() == lanes * jobs as usize * (samples + 1),
        case,
        || {
            format!(
                "{} job results, expected {}",
                sums.len(),
                lanes * jobs as usize * (samples + 1)
            )
        },
    )?;
    for (lane, job, sum) in sums {
        let want = reference_job(lane, job);
        crate::measure::check(sum == want, case, || {
            format!("lane {lane} job {job}: checksum {sum}, expected {want}")
        })?;
    }
    Ok(times)
}

fn sweep<C: Churn>(ctx: &mut Ctx<'_>, c: &C, lanes_list: &[usize], jobs: u64) -> BenchResult {
    let samples = ctx.settings().samples;
    let mut one_lane = None;
    for &lanes in lanes_list {
        let case = Case::new("churn", C::NAME, "lanes", lanes as u64).baseline("Box");
        if !ctx.sweep_point(&case) {
            continue;
        }
        let times = run_lanes(c, lanes, jobs, samples, &case)?;
        let per_object: Vec<f64> = times
            .iter()
            .map(|ns| ns / (jobs * OBJECTS_PER_JOB) as f64)
            .collect();
        let stats = Stats::of(&per_object);
        ctx.record(&case, "ns/object per lane", true, Instrument::Time, stats);
        if lanes == 1 {
            one_lane = Some(stats.median);
        }
        if let Some(t1) = one_lane {
            let scale: Vec<f64> = per_object.iter().map(|&t| lanes as f64 * t1 / t).collect();
            let case = Case::new("churn scaling", C::NAME, "lanes", lanes as u64);
            ctx.record(
                &case,
                "x vs 1 lane",
                false,
                Instrument::Time,
                Stats::of(&scale),
            );
        }
    }
    Ok(())
}

/// One job on one thread through the runner's timer (so that `--instrument instructions`
/// counts it too): ns (or instructions) per object.
fn single<C: Churn>(ctx: &mut Ctx<'_>, c: &C) -> BenchResult {
    let case = Case::new("churn job", C::NAME, "lanes", 1).baseline("Box");
    let st = std::cell::RefCell::new(c.lane());
    let job = std::cell::Cell::new(0u64);
    ctx.time(
        &case,
        OBJECTS_PER_JOB,
        || {
            job.set(job.get() + 1);
            job.get()
        },
        |j| {
            let sum = c.job(&mut st.borrow_mut(), 0, j);
            // The shared heap collects at its safepoint after every job here.
            c.after_sample();
            (j, sum)
        },
        |&(j, sum)| {
            let want = reference_job(0, j);
            if sum == want {
                Ok(())
            } else {
                Err(format!("job {j}: checksum {sum}, expected {want}"))
            }
        },
    )?;
    Ok(())
}

fn churn_single(ctx: &mut Ctx<'_>) -> BenchResult {
    single(ctx, &Boxed)?;
    single(ctx, &Independent)?;
    single(ctx, &Shared::new())?;
    single(ctx, &Cold)?;
    single(ctx, &GcArena)?;
    single(ctx, &Dumpster)?;
    Ok(())
}

fn churn(ctx: &mut Ctx<'_>) -> BenchResult {
    let mut lanes = ctx.threads_or(&[1, 2, 4, 8]);
    if !lanes.contains(&1) {
        // The scaling rows need the one-lane time.
        lanes.insert(0, 1);
    }
    let jobs = if ctx.full() { 8 } else { 4 };
    sweep(ctx, &Boxed, &lanes, jobs)?;
    sweep(ctx, &Independent, &lanes, jobs)?;
    sweep(ctx, &Shared::new(), &lanes, jobs)?;
    sweep(ctx, &Cold, &lanes, jobs)?;
    sweep(ctx, &GcArena, &lanes, jobs)?;
    sweep(ctx, &Dumpster, &lanes, jobs)?;
    Ok(())
}

/// Objects per batch in the property sweep.
pub const BATCH: usize = 1024;

/// Property counts swept: 0 through four past the inline slots.
pub fn property_counts() -> std::ops::RangeInclusive<usize> {
    0..=INLINE_SLOTS + 4
}

/// The answer check of a sweep case that returns a sum.
fn sum_is(want: u64) -> impl Fn(&u64) -> Result<(), String> {
    move |&sum| {
        if sum == want {
            Ok(())
        } else {
            Err(format!("sum {sum}, expected {want}"))
        }
    }
}

fn properties(ctx: &mut Ctx<'_>) -> BenchResult {
    // The same name in both layouts, so that the A/B script can pair the rows.
    let impl_name = "gc-object";
    for n in property_counts() {
        let names: Vec<String> = (0..n).map(|i| format!("p{i}")).collect();
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let keys: Vec<PropertyKey> = refs.iter().map(|s| PropertyKey::parse(s)).collect();
        let heap = std::cell::RefCell::new(Heap::new());
        let lit = heap.borrow().literal(&refs);
        let vals: Vec<Value<'static>> = (0..n).map(|i| Value::number(i as f64)).collect();
        let expect = BATCH as u64 * (0..n as u64).sum::<u64>();

        let case = Case::new("create", impl_name, "properties", n as u64);
        ctx.time(
            &case,
            BATCH as u64,
            || {
                heap.borrow_mut().collect();
            },
            |()| {
                let h = heap.borrow();
                let m = h.mutator();
                let mut sum = 0u64;
                for _ in 0..BATCH {
                    let o = m.literal(&lit, &vals).expect("object");
                    if let Some(k) = keys.last() {
                        sum += num(o.get(*k).expect("get"));
                    }
                }
                sum
            },
            sum_is(if n == 0 {
                0
            } else {
                BATCH as u64 * (n as u64 - 1)
            }),
        )?;

        heap.borrow_mut().collect();
        let h = heap.borrow();
        let m = h.mutator();
        let objs: Vec<_> = (0..BATCH)
            .map(|_| m.literal(&lit, &vals).expect("object"))
            .collect();
        let case = Case::new("read", impl_name, "properties", n as u64);
        ctx.time(
            &case,
            BATCH as u64,
            || (),
            |()| {
                let mut sum = 0u64;
                for o in &objs {
                    for k in &keys {
                        sum += num(o.get(*k).expect("get"));
                    }
                }
                sum
            },
            sum_is(expect),
        )?;
        // The same reads through one `PropertyCache` per key (an engine's inline cache per
        // access site): every object has the literal's shape, so all but the first hit.
        let caches: Vec<PropertyCache> = keys.iter().map(|&k| PropertyCache::new(k)).collect();
        let case = Case::new("read (cached)", impl_name, "properties", n as u64);
        ctx.time(
            &case,
            BATCH as u64,
            || (),
            |()| {
                let mut sum = 0u64;
                for o in &objs {
                    for c in &caches {
                        sum += num(o.get_cached(c).expect("get"));
                    }
                }
                sum
            },
            sum_is(expect),
        )?;
        let case = Case::new("write", impl_name, "properties", n as u64);
        ctx.time(
            &case,
            BATCH as u64,
            || (),
            |()| {
                for o in &objs {
                    for (i, k) in keys.iter().enumerate() {
                        o.set(*k, Value::number(i as f64)).expect("set");
                    }
                }
                objs.len()
            },
            |&len| {
                let sum: u64 = objs
                    .iter()
                    .flat_map(|o| keys.iter().map(move |k| num(o.get(*k).expect("get"))))
                    .sum();
                if len == BATCH && sum == expect {
                    Ok(())
                } else {
                    Err(format!("sum {sum}, expected {expect}"))
                }
            },
        )?;
    }
    Ok(())
}

fn run(ctx: &mut Ctx<'_>) -> BenchResult {
    if !ctx.wants(Instrument::Time) {
        return Ok(());
    }
    properties(ctx)?;
    props::run(ctx)?;
    shape_patterns::run(ctx)?;
    weak::run(ctx)?;
    strings::run(ctx)?;
    churn_single(ctx)?;
    if ctx.sweeps() {
        churn(ctx)?;
    }
    Ok(())
}

const CHURN_AB_NOTE: &str = "seed: exact-parent A/B of a Zig engine's object (256- vs 128-byte slab class), 7 samples; here: the wide-object build (B) over the 128-byte build (A), time per object, > 1 = the 128-byte layout is faster";

/// The gc-object seed's A/B (`gc-object-128-byte-slab.txt`): every direct and
/// independent-context churn row 1.04-1.65x faster; shared 1 / 4 / 8 lanes 1.19x, 1.39x,
/// 1.16x.
pub const AB_CLAIMS: &[AbClaim] = &[
    AbClaim {
        group: "objects",
        operation: "churn",
        implementation: "gc-object independent",
        param: 1,
        seed: "1.04-1.65x (every independent row)",
        note: CHURN_AB_NOTE,
    },
    AbClaim {
        group: "objects",
        operation: "churn",
        implementation: "gc-object independent",
        param: 2,
        seed: "1.04-1.65x (every independent row)",
        note: CHURN_AB_NOTE,
    },
    AbClaim {
        group: "objects",
        operation: "churn",
        implementation: "gc-object independent",
        param: 4,
        seed: "1.04-1.65x (every independent row)",
        note: CHURN_AB_NOTE,
    },
    AbClaim {
        group: "objects",
        operation: "churn",
        implementation: "gc-object independent",
        param: 8,
        seed: "1.04-1.65x (every independent row)",
        note: CHURN_AB_NOTE,
    },
    AbClaim {
        group: "objects",
        operation: "churn",
        implementation: "gc-object shared",
        param: 1,
        seed: "1.19x",
        note: CHURN_AB_NOTE,
    },
    AbClaim {
        group: "objects",
        operation: "churn",
        implementation: "gc-object shared",
        param: 4,
        seed: "1.39x",
        note: CHURN_AB_NOTE,
    },
    AbClaim {
        group: "objects",
        operation: "churn",
        implementation: "gc-object shared",
        param: 8,
        seed: "1.16x",
        note: CHURN_AB_NOTE,
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_implementation_matches_the_reference_checksum() {
        let want = reference_job(3, 5);
        assert_eq!(Independent.job(&mut Independent.lane(), 3, 5), want);
        assert_eq!(Cold.job(&mut (), 3, 5), want);
        assert_eq!(Shared::new().job(&mut (), 3, 5), want);
        assert_eq!(GcArena.job(&mut GcArena.lane(), 3, 5), want);
        assert_eq!(Dumpster.job(&mut (), 3, 5), want);
        assert_eq!(Boxed.job(&mut (), 3, 5), want);
        assert_ne!(reference_job(3, 6), want);
    }
}
