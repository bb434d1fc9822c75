//! The measurement core: cases, samples, medians, spreads, and the per-run context that
//! groups use to time code and count its memory.
//!
//! Every timed routine returns its result, and the group checks it (a checksum, a length,
//! a hit count) outside the timed region: a broken optimisation cannot look fast.

use std::fmt;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::counting;
use crate::goal::Goal;

/// What a measurement measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Instrument {
    /// Time: medians over repeated samples (wall clock, or the thread's CPU time in the
    /// single-threaded groups that choose it).
    Time,
    /// Allocation counts and requested / physical bytes, from the counting allocator.
    Memory,
    /// Instruction counts from valgrind's callgrind.
    Instructions,
}

impl fmt::Display for Instrument {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Instrument::Time => "time",
            Instrument::Memory => "memory",
            Instrument::Instructions => "instructions",
        })
    }
}

/// Run settings shared by every group.
#[derive(Clone, Debug)]
pub struct Settings {
    /// Longer runs and larger sizes.
    pub full: bool,
    /// Thread counts asked for on the command line (`None`: each group's default).
    pub threads: Option<Vec<usize>>,
    /// Which instruments to run.
    pub instruments: Vec<Instrument>,
    /// Samples per timed case (after one warm-up).
    pub samples: usize,
    /// Whether `samples` was asked for (`--samples`): then sweeps use it too instead of
    /// their own defaults ([`Ctx::samples_or`]).
    pub samples_set: bool,
    /// Each sample repeats the routine until it has run at least this long.
    pub min_sample_time: Duration,
    /// Only cases whose name (`operation / implementation / param=value`) contains this.
    pub filter: Option<String>,
    /// Run only the multi-threaded sweeps (see [`Ctx::sweeps`]).
    pub sweeps_only: bool,
    /// `--scaling`: the scaling groups sweep to their largest sizes (see
    /// [`crate::scaling`]); otherwise they run their short sweep.
    pub scaling: bool,
    /// `--large`, `--full`, or a run of the `tree` or `ycsb` group alone: the tree
    /// key-type series and YCSB add their 1M size.
    pub deep: bool,
}

impl Settings {
    /// Quick mode (`full = false`) or full mode.
    pub fn new(full: bool) -> Self {
        Settings {
            full,
            threads: None,
            instruments: vec![Instrument::Time, Instrument::Memory],
            samples: if full { 21 } else { 7 },
            samples_set: false,
            min_sample_time: Duration::from_millis(if full { 20 } else { 4 }),
            filter: None,
            sweeps_only: false,
            scaling: false,
            deep: full,
        }
    }
}

/// Parses one thread count.
pub fn parse_threads(s: &str) -> Result<usize, String> {
    let n: usize = s
        .trim()
        .parse()
        .map_err(|_| format!("`{s}` is not a thread count (a whole number 1-1024)"))?;
    if (1..=1024).contains(&n) {
        Ok(n)
    } else {
        Err(format!("thread count {n} is out of range 1-1024"))
    }
}

/// A time whose interquartile range exceeds this percentage of its median is marked
/// noisy in the tables and plots.
pub const NOISE_PCT: f64 = 10.0;

/// Summary statistics of a set of samples.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Stats {
    /// The median.
    pub median: f64,
    /// The smallest sample.
    pub min: f64,
    /// The largest sample.
    pub max: f64,
    /// Interquartile range as a percentage of the median.
    pub spread_pct: f64,
    /// How many samples.
    pub samples: usize,
}

impl Stats {
    /// Statistics of `values` (which must not be empty or contain NaN).
    ///
    /// # Panics
    /// If `values` is empty or holds a NaN.
    pub fn of(values: &[f64]) -> Stats {
        assert!(!values.is_empty(), "Stats::of needs at least one sample");
        let mut v = values.to_vec();
        v.sort_by(|a, b| a.partial_cmp(b).expect("a sample is NaN"));
        let median = quantile(&v, 0.5);
        let iqr = quantile(&v, 0.75) - quantile(&v, 0.25);
        Stats {
            median,
            min: v[0],
            max: v[v.len() - 1],
            spread_pct: if median != 0.0 {
                100.0 * iqr / median
            } else {
                0.0
            },
            samples: v.len(),
        }
    }

    /// No samples (a case that was not run, or whose numbers come later).
    pub const NONE: Stats = Stats {
        median: 0.0,
        min: 0.0,
        max: 0.0,
        spread_pct: 0.0,
        samples: 0,
    };

    /// Whether the samples spread more than [`NOISE_PCT`] (interquartile range over the
    /// median).
    pub fn noisy(&self) -> bool {
        self.samples > 1 && self.spread_pct > NOISE_PCT
    }

    /// The interquartile band as `median ± IQR/2` (what the A/B comparison overlaps).
    pub fn band(&self) -> (f64, f64) {
        let half = self.median * self.spread_pct / 200.0;
        (self.median - half, self.median + half)
    }

    /// A single exact value (counts, bytes): no spread.
    pub fn exact(value: f64) -> Stats {
        Stats {
            median: value,
            min: value,
            max: value,
            spread_pct: 0.0,
            samples: 1,
        }
    }
}

/// Linear-interpolation quantile of sorted data.
fn quantile(sorted: &[f64], q: f64) -> f64 {
    let pos = q * (sorted.len() - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = pos.ceil() as usize;
    sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
}

/// One row of results: one implementation, one operation, one size, one metric.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Measurement {
    /// The group (`strings`, `tree`, ...).
    pub group: String,
    /// The operation (`construct`, `get`, ...).
    pub operation: String,
    /// The implementation (`LeanString`, `BTreeMap`, ...).
    pub implementation: String,
    /// What the parameter is (`len`, `keys`, `threads`, ...).
    pub param_name: String,
    /// The parameter's value.
    pub param: u64,
    /// The metric and its unit (`ns/op`, `physical B/item`, ...).
    pub metric: String,
    /// Whether a smaller value is better.
    pub lower_is_better: bool,
    /// The instrument that produced it.
    pub instrument: Instrument,
    /// The numbers.
    pub stats: Stats,
    /// The implementation this row is compared against (same group, operation, parameter
    /// and metric, measured in the same run).
    pub baseline: Option<String>,
    /// Operations per measured call (kept for instruction counts, which are per call).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ops: Option<u64>,
    /// The goal of a target row (judged on the median; `max` is the worst case).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goal: Option<Goal>,
}

/// What is measured: names a case.
#[derive(Clone, Debug)]
pub struct Case {
    /// The operation.
    pub operation: String,
    /// The implementation.
    pub implementation: String,
    /// The parameter's name.
    pub param_name: String,
    /// The parameter.
    pub param: u64,
    /// The baseline implementation for ratios.
    pub baseline: Option<String>,
}

impl Case {
    /// A case of `operation` on `implementation`, parameter `param_name = param`.
    pub fn new(operation: &str, implementation: &str, param_name: &str, param: u64) -> Case {
        Case {
            operation: operation.to_owned(),
            implementation: implementation.to_owned(),
            param_name: param_name.to_owned(),
            param,
            baseline: None,
        }
    }

    /// Compare against `implementation`, measured in the same run.
    pub fn baseline(mut self, implementation: &str) -> Case {
        self.baseline = Some(implementation.to_owned());
        self
    }
}

impl fmt::Display for Case {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} / {} / {}={}",
            self.operation, self.implementation, self.param_name, self.param
        )
    }
}

/// A failed self-check or a measurement that could not be made.
#[derive(Debug)]
pub struct BenchError(pub String);

impl fmt::Display for BenchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BenchError {}

/// Result of a group's work.
pub type BenchResult<T = ()> = Result<T, BenchError>;

/// Fails with a message naming the case unless `ok`.
pub fn check(ok: bool, case: &Case, what: impl FnOnce() -> String) -> BenchResult {
    if ok {
        Ok(())
    } else {
        Err(BenchError(format!(
            "self-check failed in {case}: {}",
            what()
        )))
    }
}

/// How [`Ctx::time`] measures.
pub enum Backend<'a> {
    /// The runner's own timer: medians over samples.
    Native,
    /// Under callgrind: each case's routine runs once inside [`measured_region`], which the
    /// parent process told callgrind to count and dump (see [`crate::callgrind`]).
    Callgrind,
    /// As criterion benchmarks (`cargo bench -p bench-suite`): one benchmark group per
    /// operation, `BenchmarkId::new(implementation, param)`.
    Criterion(&'a mut criterion::Criterion),
    /// Nothing runs: every case is counted into the [`Plan`] (the runner's first pass,
    /// for the progress total and for a `--filter` that matches nothing).
    Count(&'a mut Plan),
}

/// What a counting pass ([`Backend::Count`]) saw.
#[derive(Debug, Default)]
pub struct Plan {
    /// Cases that will run (they pass `--filter` and `--sweeps-only`).
    pub selected: usize,
    /// Per group: (name, cases that will run, a few case names whatever the filter).
    pub groups: Vec<(String, usize, Vec<String>)>,
    /// Whether the real pass is the native one (sweeps and memory cases run); false when
    /// it runs under callgrind.
    pub native: bool,
}

impl Plan {
    /// Case names kept per group for an error message.
    pub const NAMES_PER_GROUP: usize = 3;

    fn see(&mut self, group: &str, case: &Case, runs: bool) {
        if self.groups.last().is_none_or(|g| g.0 != group) {
            self.groups.push((group.to_owned(), 0, Vec::new()));
        }
        let g = self.groups.last_mut().expect("just pushed");
        if runs {
            self.selected += 1;
            g.1 += 1;
        }
        let name = case.to_string();
        if g.2.len() < Self::NAMES_PER_GROUP && !g.2.contains(&name) {
            g.2.push(name);
        }
    }
}

impl fmt::Debug for Backend<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Backend::Native => "Native",
            Backend::Callgrind => "Callgrind",
            Backend::Criterion(_) => "Criterion",
            Backend::Count(_) => "Count",
        })
    }
}

/// The region callgrind counts: everything `f` executes, nothing else. Never inlined, so
/// its symbol exists for `--toggle-collect` and `--dump-after`.
#[inline(never)]
pub fn measured_region<O>(f: impl FnOnce() -> O) -> O {
    std::hint::black_box(f())
}

/// The calling thread's CPU time (`CLOCK_THREAD_CPUTIME_ID`): unlike the wall clock it
/// does not run while other processes hold the core, so single-threaded work measured on a
/// loaded machine still shows what it costs.
pub fn thread_cpu() -> Duration {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid, writable timespec; the clock id is a constant Linux knows.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID) failed");
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

/// The clock [`Ctx::time`] reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Clock {
    /// Wall-clock time (the default): right for any routine, including one that waits or
    /// hands work to other threads.
    Wall,
    /// The calling thread's CPU time ([`thread_cpu`]): for single-threaded routines only,
    /// where it leaves out the time other processes held the core.
    ThreadCpu,
}

impl Clock {
    fn now(self) -> Duration {
        match self {
            // Wall time as an offset from a fixed instant, so both clocks subtract alike.
            Clock::Wall => {
                static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
                START.get_or_init(Instant::now).elapsed()
            }
            Clock::ThreadCpu => thread_cpu(),
        }
    }
}

/// The per-group context: settings, the results so far, the progress display.
#[derive(Debug)]
pub struct Ctx<'a> {
    settings: &'a Settings,
    group: String,
    results: &'a mut Vec<Measurement>,
    progress: Option<&'a indicatif::ProgressBar>,
    backend: Backend<'a>,
    notes: Vec<String>,
    clock: Clock,
}

impl<'a> Ctx<'a> {
    /// A context for `group` that appends to `results`.
    pub fn new(
        settings: &'a Settings,
        group: &str,
        results: &'a mut Vec<Measurement>,
        progress: Option<&'a indicatif::ProgressBar>,
    ) -> Self {
        Ctx {
            settings,
            group: group.to_owned(),
            results,
            progress,
            backend: Backend::Native,
            notes: Vec::new(),
            clock: Clock::Wall,
        }
    }

    /// The same context measuring through `backend`.
    pub fn with_backend(mut self, backend: Backend<'a>) -> Self {
        self.backend = backend;
        self
    }

    /// Times this group's [`Ctx::time`] cases on `clock` (a group whose routines all run
    /// on the calling thread may choose [`Clock::ThreadCpu`]).
    pub fn set_clock(&mut self, clock: Clock) {
        self.clock = clock;
    }

    /// Whether multi-threaded sweeps (measured by the group itself and passed to
    /// [`Ctx::record`]) should run: only with the native timer, not under callgrind or
    /// criterion, and only if the time instrument is on.
    pub fn sweeps(&self) -> bool {
        let on = match &self.backend {
            Backend::Native => true,
            Backend::Count(plan) => plan.native,
            _ => false,
        };
        on && self.wants(Instrument::Time)
    }

    /// Announces one point of a sweep (the progress label names it) and says whether to
    /// measure it: whether it passes `--filter`; always false in the counting pass, which
    /// only counts it. Call it once per measured point, right before measuring.
    pub fn sweep_point(&mut self, case: &Case) -> bool {
        let selected = self.selected(case);
        if let Backend::Count(plan) = &mut self.backend {
            plan.see(&self.group, case, selected);
            return false;
        }
        if selected {
            self.announce(case);
        }
        selected
    }

    /// Whether the native timer runs (not callgrind or criterion): rows that time
    /// themselves and record with [`Ctx::record`] (through [`Ctx::sweep_point`]) run only
    /// then.
    pub fn native(&self) -> bool {
        match &self.backend {
            Backend::Native => true,
            Backend::Count(plan) => plan.native,
            _ => false,
        }
    }

    /// Whether this is the counting pass ([`Backend::Count`]): nothing is measured.
    pub fn counting(&self) -> bool {
        matches!(self.backend, Backend::Count(_))
    }

    /// A line for the reader, printed after the run with the group's results (not while
    /// the progress bar is drawn; dropped in the counting pass).
    pub fn note(&mut self, line: String) {
        if !self.counting() {
            self.notes.push(line);
        }
    }

    /// The notes so far ([`Ctx::note`]).
    pub fn take_notes(&mut self) -> Vec<String> {
        std::mem::take(&mut self.notes)
    }

    /// Does `case` pass the `--filter`?
    pub fn selected(&self, case: &Case) -> bool {
        self.settings
            .filter
            .as_deref()
            .is_none_or(|f| case.to_string().contains(f))
    }

    /// Should the single-threaded case `case` run? (`--filter`, and not `--sweeps-only`.)
    fn runs(&self, case: &Case) -> bool {
        !self.settings.sweeps_only && self.selected(case)
    }

    /// The run's settings.
    pub fn settings(&self) -> &Settings {
        self.settings
    }

    /// Full mode?
    pub fn full(&self) -> bool {
        self.settings.full
    }

    /// Is `instrument` asked for?
    pub fn wants(&self, instrument: Instrument) -> bool {
        self.settings.instruments.contains(&instrument)
    }

    /// The samples asked for with `--samples`, or `default` (for sweeps, whose samples
    /// are longer than a timed case's).
    pub fn samples_or(&self, default: usize) -> usize {
        if self.settings.samples_set {
            self.settings.samples
        } else {
            default
        }
    }

    /// The thread counts asked for, or `default`.
    pub fn threads_or(&self, default: &[usize]) -> Vec<usize> {
        self.settings
            .threads
            .clone()
            .unwrap_or_else(|| default.to_vec())
    }

    /// The results recorded so far (all groups).
    pub fn results(&self) -> &[Measurement] {
        self.results
    }

    fn announce(&self, case: &Case) {
        if let Some(p) = self.progress {
            p.set_message(format!("{}: {case}", self.group));
            p.inc(1);
        }
    }

    /// Records a measurement made elsewhere (for example by a sweep that times threads
    /// itself).
    pub fn record(
        &mut self,
        case: &Case,
        metric: &str,
        lower_is_better: bool,
        instrument: Instrument,
        stats: Stats,
    ) {
        self.results.push(Measurement {
            group: self.group.clone(),
            operation: case.operation.clone(),
            implementation: case.implementation.clone(),
            param_name: case.param_name.clone(),
            param: case.param,
            metric: metric.to_owned(),
            lower_is_better,
            instrument,
            stats,
            baseline: case.baseline.clone(),
            ops: None,
            goal: None,
        });
    }

    /// Records a target row: `stats.median` is what `goal` is judged on, `stats.max` the
    /// worst case behind it (a ratio over several lengths: their geometric mean and the
    /// largest). Returns the verdict (for a line of output).
    pub fn record_goal(
        &mut self,
        case: &Case,
        metric: &str,
        instrument: Instrument,
        stats: Stats,
        goal: Goal,
    ) -> crate::goal::Verdict {
        self.record(case, metric, true, instrument, stats);
        if let Some(m) = self.results.last_mut() {
            m.goal = Some(goal);
        }
        goal.judge(stats.median, stats.max)
    }

    /// Times `routine` on inputs made by `setup` (not timed) and reports nanoseconds per
    /// operation, where one call of `routine` does `ops` operations. Every output is
    /// passed to `verify` (not timed) and dropped outside the timed region.
    ///
    /// One warm-up call, then `settings.samples` samples; each sample repeats the routine
    /// until it has run for `settings.min_sample_time`.
    ///
    /// Under callgrind the routine runs once (after a warm-up) and the result has no
    /// samples yet (the parent process fills in instructions per operation); under
    /// criterion, criterion measures and reports. A case left out by `--filter` or `--sweeps-only`, or any
    /// case when the time instrument is off, is not run and returns [`Stats::NONE`].
    pub fn time<I, O>(
        &mut self,
        case: &Case,
        ops: u64,
        mut setup: impl FnMut() -> I,
        mut routine: impl FnMut(I) -> O,
        mut verify: impl FnMut(&O) -> Result<(), String>,
    ) -> BenchResult<Stats> {
        if !self.wants(Instrument::Time) {
            // Not measured, as a filtered-out case (`--instrument memory` alone).
            return Ok(Stats::NONE);
        }
        assert!(ops > 0, "a timed case must do at least one operation");
        let runs = self.runs(case);
        if let Backend::Count(plan) = &mut self.backend {
            plan.see(&self.group, case, runs);
            return Ok(Stats::NONE);
        }
        if !runs {
            return Ok(Stats::NONE);
        }
        self.announce(case);
        let fail = |e: String| BenchError(format!("self-check failed in {case}: {e}"));
        match &mut self.backend {
            Backend::Native => {}
            Backend::Callgrind => {
                verify(&routine(setup())).map_err(fail)?;
                let input = setup();
                let out = measured_region(|| routine(input));
                verify(&out).map_err(fail)?;
                drop(out);
                let pending = Stats::NONE;
                self.record(
                    case,
                    "instructions/op",
                    true,
                    Instrument::Instructions,
                    pending,
                );
                if let Some(m) = self.results.last_mut() {
                    m.ops = Some(ops);
                }
                return Ok(pending);
            }
            Backend::Count(_) => unreachable!("counted above"),
            Backend::Criterion(c) => {
                verify(&routine(setup())).map_err(fail)?;
                let mut group = c.benchmark_group(format!("{}/{}", self.group, case.operation));
                group.throughput(criterion::Throughput::Elements(ops));
                group.bench_function(
                    criterion::BenchmarkId::new(case.implementation.as_str(), case.param),
                    |b| b.iter_batched(&mut setup, &mut routine, criterion::BatchSize::LargeInput),
                );
                group.finish();
                return Ok(Stats::NONE);
            }
        }
        let clock = self.clock;
        let mut run_once =
            |verify: &mut dyn FnMut(&O) -> Result<(), String>| -> BenchResult<Duration> {
                let input = setup();
                let start = clock.now();
                let out = routine(std::hint::black_box(input));
                let elapsed = clock.now().saturating_sub(start);
                let out = std::hint::black_box(out);
                verify(&out)
                    .map_err(|e| BenchError(format!("self-check failed in {case}: {e}")))?;
                drop(out);
                Ok(elapsed)
            };
        let warm = run_once(&mut verify)?;
        // Repeat count per sample so that a sample lasts at least min_sample_time.
        let min = self.settings.min_sample_time;
        let reps = if warm.is_zero() {
            1000
        } else {
            (min.as_nanos() / warm.as_nanos()).clamp(1, 1_000_000) as u64
        };
        let mut samples = Vec::with_capacity(self.settings.samples);
        for _ in 0..self.settings.samples {
            let mut total = Duration::ZERO;
            for _ in 0..reps {
                total += run_once(&mut verify)?;
            }
            samples.push(total.as_nanos() as f64 / (reps * ops) as f64);
        }
        let stats = Stats::of(&samples);
        self.record(case, "ns/op", true, Instrument::Time, stats);
        Ok(stats)
    }

    /// Builds one value with `build` and records, per item (`items` things built), the
    /// allocator calls and the *peak* requested and physical live bytes while it ran (the
    /// counting allocator's high-water mark, not what is left at the end). `verify` checks
    /// the built value. Native timer only; counted, not measured, in the counting pass.
    ///
    /// Needs the counting allocator as the global allocator; fails otherwise.
    pub fn peak_memory<T>(
        &mut self,
        case: &Case,
        items: u64,
        build: impl FnOnce() -> T,
        verify: impl FnOnce(&T) -> Result<(), String>,
    ) -> BenchResult {
        let runs = self.runs(case);
        if let Backend::Count(plan) = &mut self.backend {
            if plan.native {
                plan.see(&self.group, case, runs);
            }
            return Ok(());
        }
        if !runs || !matches!(self.backend, Backend::Native) {
            return Ok(());
        }
        if !counting::is_installed() {
            return Err(BenchError(
                "the memory instrument needs bench_suite::counting::CountingAlloc as the global allocator".into(),
            ));
        }
        self.announce(case);
        let (built, delta, (requested, physical)) = counting::measure_peak(build);
        verify(&built).map_err(|e| BenchError(format!("self-check failed in {case}: {e}")))?;
        drop(built);
        for (metric, total) in [
            ("allocs/item", delta.allocs as f64),
            ("peak requested B/item", requested as f64),
            ("peak physical B/item", physical as f64),
        ] {
            let per_item = Stats::exact(total / items as f64);
            self.record(case, metric, true, Instrument::Memory, per_item);
        }
        Ok(())
    }

    /// Counts what building `build()` allocates, keeping the result alive while the
    /// counters are read, and reports allocations, requested bytes and physical bytes per
    /// item (`items` things built). `verify` checks the built value.
    ///
    /// Needs the counting allocator as the global allocator; fails otherwise.
    pub fn memory<T>(
        &mut self,
        case: &Case,
        items: u64,
        build: impl FnOnce() -> T,
        verify: impl FnOnce(&T) -> Result<(), String>,
    ) -> BenchResult<counting::Snapshot> {
        let runs = self.runs(case);
        if let Backend::Count(plan) = &mut self.backend {
            if plan.native {
                plan.see(&self.group, case, runs);
            }
            return Ok(counting::Snapshot::default());
        }
        if !runs || !matches!(self.backend, Backend::Native) {
            return Ok(counting::Snapshot::default());
        }
        if !counting::is_installed() {
            return Err(BenchError(
                "the memory instrument needs bench_suite::counting::CountingAlloc as the global allocator".into(),
            ));
        }
        self.announce(case);
        assert!(items > 0, "a memory case must build at least one item");
        let (value, delta) = counting::measure(build);
        verify(&value).map_err(|e| BenchError(format!("self-check failed in {case}: {e}")))?;
        drop(value);
        let per = |x: f64| Stats::exact(x / items as f64);
        self.record(
            case,
            "allocs/item",
            true,
            Instrument::Memory,
            per(delta.allocs as f64),
        );
        self.record(
            case,
            "requested B/item",
            true,
            Instrument::Memory,
            per(delta.requested_live as f64),
        );
        self.record(
            case,
            "physical B/item",
            true,
            Instrument::Memory,
            per(delta.physical_live as f64),
        );
        Ok(delta)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(Stats::of(&[3.0, 1.0, 2.0]).median, 2.0);
        assert_eq!(Stats::of(&[4.0, 1.0, 3.0, 2.0]).median, 2.5);
        assert_eq!(Stats::of(&[7.0]).median, 7.0);
    }

    #[test]
    fn spread_is_the_interquartile_range_over_the_median() {
        // Sorted: 1 2 3 4 5; q25 = 2, q75 = 4, median 3.
        let s = Stats::of(&[5.0, 4.0, 3.0, 2.0, 1.0]);
        assert_eq!((s.min, s.max), (1.0, 5.0));
        assert!(
            (s.spread_pct - 200.0 / 3.0).abs() < 1e-9,
            "{}",
            s.spread_pct
        );
        assert_eq!(Stats::of(&[2.0, 2.0, 2.0]).spread_pct, 0.0);
    }

    #[test]
    #[should_panic(expected = "at least one sample")]
    fn empty_samples_panic_with_a_message() {
        Stats::of(&[]);
    }

    #[test]
    fn time_records_ns_per_op_and_runs_the_check() {
        let mut settings = Settings::new(false);
        settings.samples = 3;
        settings.min_sample_time = Duration::from_micros(50);
        let mut results = Vec::new();
        let mut ctx = Ctx::new(&settings, "g", &mut results, None);
        let case = Case::new("sum", "loop", "n", 1000).baseline("loop");
        let mut verified = 0;
        let s = ctx
            .time(
                &case,
                1000,
                || 1000u64,
                |n| (0..n).sum::<u64>(),
                |&sum| {
                    verified += 1;
                    if sum == 499_500 {
                        Ok(())
                    } else {
                        Err(format!("sum {sum}"))
                    }
                },
            )
            .unwrap();
        assert!(verified >= 4, "verify ran {verified} times");
        assert!(s.median > 0.0);
        assert_eq!(results.len(), 1);
        assert_eq!(results[0].metric, "ns/op");
        assert_eq!(results[0].baseline.as_deref(), Some("loop"));
    }

    #[test]
    fn a_wrong_answer_fails_the_case_by_name() {
        let settings = Settings::new(false);
        let mut results = Vec::new();
        let mut ctx = Ctx::new(&settings, "g", &mut results, None);
        let case = Case::new("sum", "broken", "n", 3);
        let err = ctx.time(
            &case,
            1,
            || (),
            |()| 41,
            |&x| {
                if x == 42 {
                    Ok(())
                } else {
                    Err(format!("got {x}"))
                }
            },
        );
        let msg = err.unwrap_err().0;
        assert!(
            msg.contains("sum / broken / n=3") && msg.contains("got 41"),
            "{msg}"
        );
        assert!(results.is_empty());
    }
}
