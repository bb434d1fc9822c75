//! The sweep machinery every scaling group uses: a [`Row`] is one implementation doing one
//! operation on one input shape, its [`Kernel`] does the work once at a given `n`; [`run`]
//! measures all rows of a group size by size (all rows at 1K, then all at 4K, ...: rows
//! of one size are measured side by side), stopping a row whose next cell would take
//! longer than the cell cap (a quadratic row stops early, with enough points to be fitted
//! and flagged) and the whole group at its time budget.
//!
//! A cell (row, `n`) is: one call with the counting allocator on (the peak live bytes, and
//! the warm-up), then samples without counting (7 for a call under 50 ms, 3 under 0.5 s,
//! else the first call is the only one), each repeating the call for at least 5 ms;
//! `ns/op` is the median over samples of the thread CPU time per operation
//! ([`thread_cpu`]: on a machine shared with other work, the time the core spent elsewhere
//! does not count), `peak B/elem` the peak live physical bytes over `n`. A kernel that
//! measures in a child process reports its own numbers instead ([`Meter::report`]).

use std::time::{Duration, Instant};

use crate::counting;
use crate::measure::{BenchError, BenchResult, Case, Ctx, Instrument, Stats};

use super::fit::{MIN_POINTS, PARAM};

/// Metric of a cell's time.
pub const TIME: &str = "ns/op";
/// Metric of a cell's peak live bytes per element (counting allocator, physical bytes).
pub const PEAK: &str = "peak B/elem";

/// The first size of a row unless it says otherwise (about 1K).
pub const FIRST: u64 = 1000;
/// Sizes of a row are `first x 4^k`.
pub const STEP: u64 = 4;

/// How far a group sweeps.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Budget {
    /// Stop starting new sizes once the group has run this long.
    pub group: Duration,
    /// Stop a row when its next cell is predicted to take longer than this.
    pub cell: Duration,
    /// At most this many sizes per row (`None`: up to the row's `last`).
    pub sizes: Option<u32>,
}

impl Budget {
    /// The short sweep of the default run: 4 sizes per row (1K-64K), about 20 s a group.
    pub const QUICK: Budget = Budget {
        group: Duration::from_secs(20),
        cell: Duration::from_millis(1000),
        sizes: Some(4),
    };
    /// `--scaling`: up to each row's largest size, about a minute a group.
    pub const SCALING: Budget = Budget {
        group: Duration::from_secs(60),
        cell: Duration::from_secs(5),
        sizes: None,
    };

    /// The budget of this run.
    pub fn of(ctx: &Ctx<'_>) -> Budget {
        if ctx.settings().scaling {
            Budget::SCALING
        } else {
            Budget::QUICK
        }
    }
}

pub use crate::measure::thread_cpu;

/// What a kernel reports about one call ([`Meter::time`] around the measured work).
#[derive(Debug, Default)]
pub struct Meter {
    counting: bool,
    /// Wall time of the measured work (for the budget).
    elapsed: Duration,
    /// The thread's CPU time over it (the sample).
    cpu: Duration,
    peak: Option<f64>,
    timed: bool,
    reported: Option<Vec<f64>>,
    extra: Vec<(&'static str, f64)>,
}

impl Meter {
    /// Times `f` in thread CPU time (and, on the counting call, records its peak live
    /// bytes above those at its start). Call it once per kernel call, around the work
    /// that is measured.
    pub fn time<T>(&mut self, f: impl FnOnce() -> T) -> T {
        self.timed = true;
        let (start, cpu) = (Instant::now(), thread_cpu());
        let out = if self.counting {
            let (out, _, (_, physical)) = counting::measure_peak(f);
            self.peak = Some(physical as f64);
            out
        } else {
            std::hint::black_box(f())
        };
        self.cpu = thread_cpu().saturating_sub(cpu);
        self.elapsed = start.elapsed();
        out
    }

    /// For a kernel that measures elsewhere (a child process): its samples of nanoseconds
    /// per operation; the cell then takes no samples of its own.
    pub fn report(&mut self, ns_per_op: Vec<f64>) {
        self.timed = true;
        self.reported = Some(ns_per_op);
    }

    /// A memory figure measured elsewhere: `total` bytes, recorded per element as
    /// `metric` (`"VmSize B/elem"`).
    pub fn bytes(&mut self, metric: &'static str, total: f64) {
        self.extra.push((metric, total));
    }

    /// Whether this call counts allocations (the first call of a cell).
    pub fn counting(&self) -> bool {
        self.counting
    }
}

/// Does the work of a row once at size `n`, calling [`Meter::time`] around the part that
/// is measured; checks its answer; returns the operations done (the time's divisor).
/// Called with `n = 0` after each cell: drop whatever input it kept between the calls of
/// a cell (and return `Ok(0)`).
pub type Kernel<'a> = Box<dyn FnMut(u64, &mut Meter) -> Result<u64, String> + 'a>;

/// One implementation doing one operation on one input shape.
pub struct Row<'a> {
    /// `operation (shape)`, for example `insert (u64)`.
    pub operation: String,
    /// The implementation.
    pub implementation: String,
    /// What `n` counts (`n`, or `bytes` for a block-size sweep).
    pub param_name: &'static str,
    /// The first size.
    pub first: u64,
    /// The largest size it may reach.
    pub last: u64,
    /// Whether the counting call records `peak B/elem`.
    pub memory: bool,
    /// The work.
    pub kernel: Kernel<'a>,
}

impl std::fmt::Debug for Row<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Row({} / {} / {}={}..={})",
            self.operation, self.implementation, self.param_name, self.first, self.last
        )
    }
}

impl<'a> Row<'a> {
    /// A row from [`FIRST`] to `last`, recording peak memory.
    pub fn new(
        operation: impl Into<String>,
        implementation: impl Into<String>,
        last: u64,
        kernel: impl FnMut(u64, &mut Meter) -> Result<u64, String> + 'a,
    ) -> Row<'a> {
        Row {
            operation: operation.into(),
            implementation: implementation.into(),
            param_name: PARAM,
            first: FIRST,
            last,
            memory: true,
            kernel: Box::new(kernel),
        }
    }

    /// Sizes from `first`.
    pub fn first(mut self, first: u64) -> Self {
        self.first = first;
        self
    }

    /// Without `peak B/elem` (an operation on a structure built outside the timing).
    pub fn no_memory(mut self) -> Self {
        self.memory = false;
        self
    }

    /// `n` counts something else (`bytes`).
    pub fn param(mut self, name: &'static str) -> Self {
        self.param_name = name;
        self
    }

    /// The sizes of this row under `budget`.
    pub fn sizes(&self, budget: Budget) -> Vec<u64> {
        let mut out = Vec::new();
        let mut n = self.first;
        while n <= self.last && budget.sizes.is_none_or(|k| out.len() < k as usize) {
            out.push(n);
            n *= STEP;
        }
        out
    }
}

/// What one cell took, for predicting the next.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Took {
    n: u64,
    /// Wall seconds of one call's measured work.
    call: f64,
    /// Wall seconds of the cell outside the measured work (making input, checking).
    setup: f64,
    /// Nanoseconds per operation.
    per_op: f64,
}

/// Per row: what the last cells took.
#[derive(Clone, Debug, Default)]
struct Progress {
    points: usize,
    /// The last two cells.
    last: Vec<Took>,
    /// The smallest and largest sizes measured.
    lowest: u64,
    highest: u64,
    stopped: bool,
}

impl Progress {
    /// The predicted wall time of the cell at `n`: one call grows with `n` times the
    /// per-op growth of the last step (at least 1), the cell makes 1 + samples calls
    /// ([`plan`]), its set-up grows with `n`.
    fn predict(&self, n: u64) -> f64 {
        let Some(t) = self.last.last() else {
            return 0.0;
        };
        let growth = match self.last.as_slice() {
            [a, b] if a.per_op > 0.0 => (b.per_op / a.per_op).max(1.0),
            _ => 1.0,
        };
        let k = n as f64 / t.n as f64;
        let call = t.call * k * growth;
        let (samples, _) = plan(Duration::from_secs_f64(call));
        t.setup * k + call + samples as f64 * call.max(SAMPLE)
    }
}

/// Each sample lasts at least this long (repeating the call): a shorter one is mostly
/// timer and scheduler noise.
const SAMPLE: f64 = 0.005;
/// A cell whose first call took longer than this takes that call as its only sample.
const SLOW: f64 = 0.5;

fn plan(warm: Duration) -> (usize, u64) {
    let s = warm.as_secs_f64();
    let samples = if s < 0.05 {
        7
    } else if s < SLOW {
        3
    } else {
        0
    };
    let reps = (SAMPLE / s.max(1e-9)).ceil().clamp(1.0, 10_000.0) as u64;
    (samples, reps)
}

fn err(case: &Case, e: String) -> BenchError {
    BenchError(format!("self-check failed in {case}: {e}"))
}

/// Measures one cell.
fn cell(ctx: &mut Ctx<'_>, row: &mut Row<'_>, case: &Case, n: u64) -> BenchResult<Took> {
    let start = Instant::now();
    let mut m = Meter {
        counting: row.memory && ctx.wants(Instrument::Memory) && counting::is_installed(),
        ..Meter::default()
    };
    let ops = (row.kernel)(n, &mut m).map_err(|e| err(case, e))?;
    if !m.timed || ops == 0 {
        return Err(err(case, "the kernel measured nothing".into()));
    }
    let mut measured = m.elapsed;
    let per_op = |d: Duration, calls: u64| d.as_nanos() as f64 / (calls * ops) as f64;
    let samples = match m.reported.take() {
        Some(s) if !s.is_empty() => s,
        Some(_) => return Err(err(case, "the kernel reported no sample".into())),
        // One slow call: the counting allocator's cost is small beside it.
        None if plan(m.elapsed).0 == 0 => vec![per_op(m.cpu, 1)],
        None => {
            let (samples, reps) = plan(m.elapsed);
            let mut out = Vec::with_capacity(samples);
            for _ in 0..samples {
                let mut cpu = Duration::ZERO;
                for _ in 0..reps {
                    let mut t = Meter::default();
                    let o = (row.kernel)(n, &mut t).map_err(|e| err(case, e))?;
                    if o != ops {
                        return Err(err(case, format!("{o} operations, then {ops}")));
                    }
                    cpu += t.cpu;
                    measured += t.elapsed;
                }
                out.push(per_op(cpu, reps));
            }
            out
        }
    };
    (row.kernel)(0, &mut Meter::default()).map_err(|e| err(case, e))?;
    let stats = Stats::of(&samples);
    ctx.record(case, TIME, true, Instrument::Time, stats);
    if let Some(peak) = m.peak {
        ctx.record(
            case,
            PEAK,
            true,
            Instrument::Memory,
            Stats::exact(peak / n as f64),
        );
    }
    for (metric, total) in std::mem::take(&mut m.extra) {
        ctx.record(
            case,
            metric,
            true,
            Instrument::Memory,
            Stats::exact(total / n as f64),
        );
    }
    let wall = start.elapsed();
    Ok(Took {
        n,
        // A reporting kernel (a child process) measured elsewhere: its whole call counts.
        call: if m.elapsed.is_zero() {
            wall.as_secs_f64()
        } else {
            m.elapsed.as_secs_f64()
        },
        setup: wall.saturating_sub(measured).as_secs_f64(),
        per_op: stats.median,
    })
}

/// Runs `rows` under this run's [`Budget`]: size by size, every row at each size. Skipped
/// (returns at once) unless the run measures sweeps (native timer, time instrument) and is
/// not `--sweeps-only`.
pub fn run(ctx: &mut Ctx<'_>, mut rows: Vec<Row<'_>>) -> BenchResult {
    if !ctx.sweeps() || ctx.settings().sweeps_only {
        return Ok(());
    }
    let budget = Budget::of(ctx);
    let mut sizes: Vec<u64> = rows.iter().flat_map(|r| r.sizes(budget)).collect();
    sizes.sort_unstable();
    sizes.dedup();
    let mut progress = vec![Progress::default(); rows.len()];
    let start = Instant::now();
    let cap = budget.cell.as_secs_f64();
    let mut out_of_time = 0;
    for &n in &sizes {
        for (row, p) in rows.iter_mut().zip(progress.iter_mut()) {
            if p.stopped || !row.sizes(budget).contains(&n) {
                continue;
            }
            let left = budget.group.as_secs_f64() - start.elapsed().as_secs_f64();
            let next = p.predict(n);
            if !ctx.counting() && (next > cap || next > left) && !p.last.is_empty() {
                p.stopped = true;
                // Too slow to go up before it has enough points to be fitted: it gets
                // them below its first size (a quadratic row still gets its exponent).
                let mut low = p.lowest / STEP;
                while p.points < MIN_POINTS && low >= 4 {
                    measure(ctx, row, p, low)?;
                    low /= STEP;
                }
                if next > cap {
                    ctx.note(format!(
                        "{} / {}: stopped after {}={}: the next size would take about \
                         {next:.0} s (cell cap {cap:.0} s)",
                        row.operation, row.implementation, row.param_name, p.highest,
                    ));
                } else {
                    out_of_time += 1;
                }
                continue;
            }
            measure(ctx, row, p, n)?;
        }
    }
    if out_of_time > 0 {
        ctx.note(format!(
            "the group used its {} s budget: {out_of_time} rows stopped before their largest size",
            budget.group.as_secs()
        ));
    }
    Ok(())
}

/// Measures `row` at `n` (if `--filter` selects it) and notes it in `p`.
fn measure(ctx: &mut Ctx<'_>, row: &mut Row<'_>, p: &mut Progress, n: u64) -> BenchResult {
    let case = Case::new(&row.operation, &row.implementation, row.param_name, n);
    if !ctx.sweep_point(&case) {
        return Ok(());
    }
    let took = cell(ctx, row, &case, n)?;
    p.points += 1;
    p.lowest = if p.lowest == 0 { n } else { p.lowest.min(n) };
    p.highest = p.highest.max(n);
    p.last.push(took);
    if p.last.len() > 2 {
        p.last.remove(0);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::Settings;

    #[test]
    fn sizes_are_spaced_4x_and_capped() {
        let r = Row::new("op", "X", 300_000, |_, _| Ok(1));
        assert_eq!(r.sizes(Budget::QUICK), vec![1000, 4000, 16_000, 64_000]);
        assert_eq!(
            r.sizes(Budget::SCALING),
            vec![1000, 4000, 16_000, 64_000, 256_000]
        );
        let r = Row::new("op", "X", 1 << 26, |_, _| Ok(1))
            .first(1 << 10)
            .param("bytes");
        assert_eq!(r.sizes(Budget::SCALING).len(), 9);
        assert_eq!(r.param_name, "bytes");
    }

    #[test]
    fn a_quadratic_row_is_predicted_to_outgrow_the_cap() {
        let took = |n, call, per_op| Took {
            n,
            call,
            setup: 0.01,
            per_op,
        };
        let p = Progress {
            points: 3,
            last: vec![took(4000, 0.1, 100.0), took(16_000, 0.4, 400.0)],
            lowest: 1000,
            highest: 16_000,
            stopped: false,
        };
        // 4x the elements, 4x the per-op cost: one call takes 16x as long (6.4 s: no
        // samples beside the first call), set-up 4x.
        assert!(
            (p.predict(64_000) - 6.44).abs() < 1e-9,
            "{}",
            p.predict(64_000)
        );
        let flat = Progress {
            last: vec![took(4000, 0.1, 100.0), took(16_000, 0.4, 90.0)],
            ..p
        };
        assert!((flat.predict(64_000) - 1.64).abs() < 1e-9);
        // A quick call: 7 samples of at least 5 ms each.
        let quick = Progress {
            last: vec![took(1000, 0.0001, 10.0)],
            ..Progress::default()
        };
        assert!((quick.predict(4000) - (0.04 + 0.0004 + 7.0 * 0.005)).abs() < 1e-9);
    }

    #[test]
    fn cells_record_time_and_reported_memory() {
        let mut settings = Settings::new(false);
        settings.scaling = true;
        let mut results = Vec::new();
        let mut ctx = Ctx::new(&settings, "scaling-test", &mut results, None);
        let mut calls = 0;
        let rows = vec![
            Row::new("sum", "flat", 64_000, |n, m| {
                if n == 0 {
                    return Ok(0); // the end of a cell: nothing kept
                }
                let s = m.time(|| (0..n).sum::<u64>());
                if s == n * (n - 1) / 2 {
                    Ok(n)
                } else {
                    Err(format!("sum {s}"))
                }
            })
            .no_memory(),
            Row::new("fill", "quadratic", 1 << 40, |n, m| {
                if n == 0 {
                    return Ok(0);
                }
                calls += 1;
                // Reported as if each element cost n ns: the cell would take n^2 ns.
                m.report(vec![n as f64; 3]);
                m.bytes("VmSize B/elem", 8.0 * n as f64);
                Ok(n)
            }),
        ];
        run(&mut ctx, rows).unwrap();
        let flat: Vec<_> = results
            .iter()
            .filter(|m| m.implementation == "flat")
            .collect();
        assert_eq!(flat.len(), 4, "{flat:#?}");
        assert!(
            flat.iter()
                .all(|m| m.metric == TIME && m.stats.samples >= 1)
        );
        let vm: Vec<_> = results
            .iter()
            .filter(|m| m.metric == "VmSize B/elem")
            .collect();
        assert!(vm.iter().all(|m| m.stats.median == 8.0));
        assert!(calls >= 3, "{calls}");
    }

    #[test]
    fn a_kernel_that_fails_its_check_names_the_cell() {
        let settings = Settings::new(false);
        let mut results = Vec::new();
        let mut ctx = Ctx::new(&settings, "scaling-test", &mut results, None);
        let rows = vec![Row::new("op", "broken", 4000, |_, m| {
            m.time(|| ());
            Err("wrong answer".to_string())
        })];
        let e = run(&mut ctx, rows).unwrap_err().0;
        assert!(
            e.contains("op / broken / n=1000") && e.contains("wrong answer"),
            "{e}"
        );
    }
}
