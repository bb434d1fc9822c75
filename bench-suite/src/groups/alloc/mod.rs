//! `alloc`: arena-alloc (default heap count and one heap) against glibc, mimalloc and
//! jemalloc.
//!
//! Single-threaded cases (through [`Ctx::time`], so the instructions instrument and
//! criterion cover them) call each allocator's `GlobalAlloc` methods directly: all five
//! allocators live in the runner process and every block is freed by the allocator that
//! made it, so the numbers are each allocator's own, without the runner's counting and
//! dispatch wrapper. Multi-threaded benchmarks run in child processes, one per
//! (allocator, benchmark, threads, sample), each with that allocator as its global
//! allocator ([`select`], [`child`]), so peak RSS is the
//! allocator's own too. Kernels and their parameters: [`kernels`],
//! [`child::Params`].

use std::alloc::System;
use std::collections::HashMap;

use crate::measure::{BenchError, BenchResult, Case, Ctx, Instrument, Stats};

use super::group::Group;

pub mod child;
pub mod claims;
pub mod kernels;
pub mod large;
pub mod select;

use child::{BENCHES, ChildReport};
use kernels as k;
use select::Which;

/// The group.
pub const GROUP: Group = Group {
    name: "alloc",
    about: "arena-alloc vs glibc, mimalloc, jemalloc: alloc+free pairs, size sweep, the seed's \
            malloc_test, glibc's simple bench; xmalloc, larson, cache-scratch/thrash, mstress, \
            malloc-large \
            thread sweeps with peak RSS",
    run,
    claims: claims::CLAIMS,
    ab_claims: &[],
};

/// The comparison baseline.
pub const BASELINE: &str = "glibc";

/// Request sizes of the size sweep: the seed loop's range, 1 KiB, 64 KiB, 1 MiB (design
/// note `arena-alloc.md`), and both sides of arena-alloc's largest size class
/// ([`arena_alloc::tuning::SMALL_MAX`], its mmap threshold).
pub const SIZES: [usize; 10] = [
    8,
    16,
    32,
    64,
    128,
    1024,
    64 << 10,
    arena_alloc::tuning::SMALL_MAX,
    arena_alloc::tuning::SMALL_MAX + 1,
    1 << 20,
];

/// glibc `bench-malloc-simple`: blocks allocated then freed per round.
pub const SIMPLE_BLOCKS: [usize; 4] = [25, 100, 400, 1600];
/// Block sizes of the simple bench (quick mode).
pub const SIMPLE_SIZES: [usize; 2] = [16, 256];
/// Block sizes of the simple bench (full mode).
pub const SIMPLE_SIZES_FULL: [usize; 4] = [16, 64, 256, 1024];

/// Operations per timed call of the pair and the size sweep.
const OPS: u64 = 1000;
/// Iterations per timed call of the seed loop.
const LOOP_OPS: u64 = 10_000;

/// The one-thread cache-scratch case of the single-threaded table: Hoard's
/// `cache-scratch 1 1000 1 1000` (a thousandth of the suggested passes).
const SCRATCH: k::Cache = k::Cache {
    iterations: 1000,
    repetitions: 1000,
    object_size: 1,
};

macro_rules! for_each_allocator {
    (|$label:ident, $a:ident| $body:block) => {{
        {
            let $label = Which::Glibc.label();
            let $a = &System;
            $body
        }
        {
            let $label = Which::Arena.label();
            let $a = &select::ARENA;
            $body
        }
        {
            let $label = Which::Arena1.label();
            let $a = &select::ARENA_1;
            $body
        }
        {
            let $label = Which::Mimalloc.label();
            let $a = &mimalloc::MiMalloc;
            $body
        }
        {
            let $label = Which::Jemalloc.label();
            let $a = &tikv_jemallocator::Jemalloc;
            $body
        }
    }};
}

fn sched_getcpu() -> i32 {
    // SAFETY: no preconditions; returns -1 on failure.
    unsafe { libc::sched_getcpu() }
}

fn expect(want: u64) -> impl FnMut(&k::KResult) -> Result<(), String> {
    move |got| match got {
        Ok(o) if o.checksum == want => Ok(()),
        Ok(o) => Err(format!("checksum {} != expected {want}", o.checksum)),
        Err(e) => Err(e.clone()),
    }
}

fn single_threaded(ctx: &mut Ctx<'_>) -> BenchResult {
    if !ctx.wants(Instrument::Time) {
        return Ok(());
    }
    let simple_sizes: &[usize] = if ctx.full() {
        &SIMPLE_SIZES_FULL
    } else {
        &SIMPLE_SIZES
    };
    // Under valgrind glibc registers no rseq area, so arena-alloc falls back to
    // `sched_getcpu` (twice per pair): this row shows what that costs, so its
    // instruction count can be read with and without it.
    let case = Case::new("sched_getcpu", "libc", "calls", 1);
    ctx.time(
        &case,
        OPS,
        || OPS,
        |n| (0..n).map(|_| u64::from(sched_getcpu() >= 0)).sum::<u64>(),
        |&n| {
            if n == OPS {
                Ok(())
            } else {
                Err(format!("sched_getcpu failed {} times", OPS - n))
            }
        },
    )?;
    for_each_allocator!(|label, a| {
        let case = Case::new("alloc+free 16 B", label, "bytes", 16).baseline(BASELINE);
        ctx.time(
            &case,
            OPS,
            || OPS,
            |n| k::pair16::<_, false>(a, n),
            expect(OPS * (OPS - 1) / 2),
        )?;
        let case = Case::new("alloc+free 16 B, size opaque", label, "bytes", 16).baseline(BASELINE);
        ctx.time(
            &case,
            OPS,
            || OPS,
            |n| k::pair16::<_, true>(a, n),
            expect(OPS * (OPS - 1) / 2),
        )?;
        for size in SIZES {
            let n = if size > arena_alloc::tuning::SMALL_MAX {
                OPS / 10
            } else {
                OPS
            };
            let case =
                Case::new("alloc+write+free", label, "bytes", size as u64).baseline(BASELINE);
            ctx.time(
                &case,
                n,
                || n,
                |n| k::size_pair(a, size, n),
                expect(k::size_pair_expected(n)),
            )?;
        }
        // A fresh seed per call: a short sequence of sizes repeated call after call
        // would be learnt by the branch predictor and flatter every allocator.
        let case = Case::new("malloc_test loop", label, "threads", 1).baseline(BASELINE);
        let mut seed = 0u64;
        ctx.time(
            &case,
            LOOP_OPS,
            || {
                seed += 1;
                seed
            },
            |seed| k::seed_loop(a, LOOP_OPS, seed),
            expect(k::seed_loop_expected(LOOP_OPS)),
        )?;
        // cache-scratch's one-thread work on this thread (so callgrind counts it): every
        // allocator runs the same shared write loop, so only its own calls can make the
        // counts differ.
        let case = Case::new("cache-scratch work", label, "threads", 1).baseline(BASELINE);
        ctx.time(
            &case,
            SCRATCH.iterations * SCRATCH.passes(1),
            || (),
            |()| k::cache_inline(a, SCRATCH, true),
            expect(k::cache_expected(1, &SCRATCH)),
        )?;
        for &blocks in &SIMPLE_BLOCKS {
            let iters = (1600 / blocks) as u64;
            let want = iters * (blocks as u64 * (blocks as u64 - 1) / 2);
            for &size in simple_sizes {
                let op = format!("simple n={blocks}");
                let case = Case::new(&op, label, "bytes", size as u64).baseline(BASELINE);
                ctx.time(
                    &case,
                    iters * blocks as u64,
                    || iters,
                    |it| k::simple(a, size, blocks, it),
                    expect(want),
                )?;
            }
        }
    });
    Ok(())
}

/// Samples per (allocator, benchmark, threads): separate child processes, alternating
/// allocators so that machine noise hits all alike.
fn samples(full: bool) -> usize {
    if full { 7 } else { 5 }
}

fn sweeps(ctx: &mut Ctx<'_>) -> BenchResult {
    if !ctx.sweeps() {
        return Ok(());
    }
    let ncpu = std::thread::available_parallelism().map_or(1, |n| n.get());
    // 1 thread, every core, and the seed's 2 x ncpu.
    let mut default = vec![1, ncpu, 2 * ncpu];
    default.dedup();
    let threads = ctx.threads_or(&default);
    let case = |bench: &str, w: Which, t: usize| {
        Case::new(bench, w.label(), "threads", t as u64).baseline(BASELINE)
    };
    let work: Vec<(&str, usize, Which)> = BENCHES
        .iter()
        .flat_map(|&b| threads.iter().map(move |&t| (b, t)))
        .flat_map(|(b, t)| Which::ALL.into_iter().map(move |w| (b, t, w)))
        .filter(|&(b, t, w)| ctx.selected(&case(b, w, t)))
        .collect();
    if work.is_empty() {
        return Ok(());
    }
    if select::current().is_none() {
        return Err(BenchError(
            "the alloc group's thread sweeps re-run the bench-suite binary under each \
             allocator; this process's global allocator is not select::Selected"
                .into(),
        ));
    }
    let exe = std::env::current_exe()
        .map_err(|e| BenchError(format!("cannot find the runner's own binary: {e}")))?;
    let full = ctx.full();
    let mut runs: HashMap<(&str, usize, Which), Vec<ChildReport>> = HashMap::new();
    let mut checksums: HashMap<(&str, usize), (u64, Which)> = HashMap::new();
    for _ in 0..ctx.samples_or(samples(full)) {
        for &(bench, t, w) in &work {
            if !ctx.sweep_point(&case(bench, w, t)) {
                continue;
            }
            let r = child::spawn(&exe, w, bench, t, full).map_err(BenchError)?;
            // Every allocator must give the same answer for the same work.
            let (sum, first) = *checksums.entry((bench, t)).or_insert((r.checksum, w));
            if sum != r.checksum {
                return Err(BenchError(format!(
                    "self-check failed in {}: checksum {} but {} gave {sum}",
                    case(bench, w, t),
                    r.checksum,
                    first.label()
                )));
            }
            runs.entry((bench, t, w)).or_default().push(r);
        }
    }
    for &(bench, t, w) in &work {
        let Some(rs) = runs.get(&(bench, t, w)) else {
            continue; // the counting pass measured nothing
        };
        let mops: Vec<f64> = rs
            .iter()
            .map(|r| r.ops as f64 / r.seconds.max(1e-9) / 1e6)
            .collect();
        // Per CPU second: stable on a shared machine (waiting for a core costs no CPU
        // time), while false sharing still shows (stalled cycles are CPU time).
        let cpu_mops: Vec<f64> = rs
            .iter()
            .map(|r| r.ops as f64 / r.cpu_seconds.max(1e-9) / 1e6)
            .collect();
        let rss: Vec<f64> = rs.iter().map(|r| r.peak_rss_kib as f64 / 1024.0).collect();
        let c = case(bench, w, t);
        ctx.record(&c, "Mops/s", false, Instrument::Time, Stats::of(&mops));
        ctx.record(
            &c,
            "Mops per CPU s",
            false,
            Instrument::Time,
            Stats::of(&cpu_mops),
        );
        ctx.record(
            &c,
            "peak RSS MiB",
            true,
            Instrument::Memory,
            Stats::of(&rss),
        );
    }
    Ok(())
}

fn run(ctx: &mut Ctx<'_>) -> BenchResult {
    single_threaded(ctx)?;
    sweeps(ctx)
}
