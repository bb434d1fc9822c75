//! What both tree series share: the xorshift stream, the self-check error, and the
//! threaded read/write mix (threads on one shared map, every read checked).

use std::time::Instant;

use crate::measure::{BenchError, BenchResult, Case, Ctx, Instrument, Stats};

/// One step of a xorshift64 stream (`x` must not be 0).
#[inline]
pub fn xorshift(x: &mut u64) -> u64 {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    *x
}

pub fn fail(case: &Case, e: String) -> BenchError {
    BenchError(format!("self-check failed in {case}: {e}"))
}

/// One timed run: `threads` threads of `ops` operations each on one shared map. Thread `t`
/// draws from its own xorshift stream (seeded from `t` and `round`); `op` does one
/// operation from that stream and returns true when its check failed (a read that missed
/// or saw a wrong value). Mops/s, or an error counting the failed checks.
pub fn mix_once(
    threads: usize,
    ops: usize,
    round: u64,
    op: impl Fn(&mut u64) -> bool + Sync,
) -> Result<f64, String> {
    let op = &op;
    let start = Instant::now();
    let bad = std::thread::scope(|s| {
        let hs: Vec<_> = (0..threads)
            .map(|t| {
                s.spawn(move || {
                    let mut x = ((t as u64 + 1) * 0x9e37_79b9_7f4a_7c15) ^ (round << 32) | 1;
                    (0..ops).filter(|_| op(&mut x)).count()
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).sum::<usize>()
    });
    let secs = start.elapsed().as_secs_f64();
    if bad > 0 {
        return Err(format!("{bad} reads missed or saw a wrong value"));
    }
    Ok((threads * ops) as f64 / secs / 1e6)
}

/// Records `op` (a mix of one map, named `name`) at each thread count of the sweep
/// (`threads` unless the command line says otherwise), `samples` runs each, against
/// `baseline`; `once(threads, ops, round)` is one timed run.
pub fn sweep(
    ctx: &mut Ctx<'_>,
    op: &str,
    name: &str,
    baseline: &str,
    threads: &[usize],
    samples: usize,
    once: impl Fn(usize, usize, u64) -> Result<f64, String>,
) -> BenchResult {
    let ops = if ctx.full() { 1_000_000 } else { 200_000 };
    let samples = ctx.samples_or(samples);
    for t in ctx.threads_or(threads) {
        let case = Case::new(op, name, "threads", t as u64).baseline(baseline);
        if !ctx.sweep_point(&case) {
            continue;
        }
        let mut v = Vec::with_capacity(samples);
        for r in 0..samples {
            v.push(once(t, ops, r as u64).map_err(|e| fail(&case, e))?);
        }
        ctx.record(&case, "Mops/s", false, Instrument::Time, Stats::of(&v));
    }
    Ok(())
}
