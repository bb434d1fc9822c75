//! The child processes of the `alloc` group: one per (allocator, benchmark, threads,
//! sample). The parent re-executes its own binary as
//! `bench-suite --alloc-child BENCH THREADS quick|full` with
//! [`BENCH_SUITE_ALLOCATOR`](super::select::ENV) set; the child checks that it runs
//! on the allocator it was asked for, runs one kernel of [`super::kernels`] on that
//! allocator (direct calls; it is also the child's global allocator), checks the answer, and prints one JSON line ([`ChildReport`]).

use std::process::{Command, ExitCode};
use std::time::Instant;

use serde::{Deserialize, Serialize};

use std::alloc::{GlobalAlloc, System};

use super::kernels::{self as k, KResult, Outcome};
use super::large::{Large, malloc_large, malloc_large_expected};
use super::select::{self, Which};

/// The hidden first argument that makes the runner a child.
pub const FLAG: &str = "--alloc-child";

/// The multi-threaded benchmarks run in children.
pub const BENCHES: [&str; 7] = [
    "malloc_test",
    "xmalloc",
    "larson",
    "cache-scratch",
    "cache-thrash",
    "mstress",
    "malloc-large",
];

/// What a child prints (one JSON line on stdout).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct ChildReport {
    /// The allocator the child ran on (`BENCH_SUITE_ALLOCATOR` value).
    pub allocator: String,
    /// The benchmark.
    pub bench: String,
    /// Threads.
    pub threads: usize,
    /// Operations done (the benchmark's unit).
    pub ops: u64,
    /// Wall time of the benchmark itself (not process start-up).
    pub seconds: f64,
    /// CPU time (user + system, all threads) the process spent during the benchmark:
    /// unlike the wall time, it does not grow while other processes hold the cores.
    pub cpu_seconds: f64,
    /// Peak resident set size of the child (`VmHWM`), KiB.
    pub peak_rss_kib: u64,
    /// The benchmark's checksum (already checked by the child where an expected value
    /// exists; compared across allocators by the parent).
    pub checksum: u64,
    /// Where arena-alloc reads the CPU number in this process (`rseq` or `sched_getcpu`).
    pub cpu_source: String,
}

/// The parameters of every benchmark, quick and full mode (documented in `bench-suite/docs/alloc.md`).
#[derive(Clone, Copy, Debug)]
pub struct Params {
    /// malloc_test iterations per thread.
    pub malloc_test_iters: u64,
    /// xmalloc-test.
    pub xmalloc: k::Xmalloc,
    /// larson.
    pub larson: k::Larson,
    /// cache-scratch and cache-thrash.
    pub cache: k::Cache,
    /// mstress.
    pub mstress: k::Mstress,
    /// malloc-large.
    pub large: Large,
}

impl Params {
    /// Quick (`full = false`) or full parameters.
    pub const fn new(full: bool) -> Params {
        Params {
            malloc_test_iters: if full { 2_000_000 } else { 200_000 },
            xmalloc: k::Xmalloc {
                blocks_per_producer: if full { 4_000_000 } else { 300_000 },
                batch: 4096,
                size: 64,
                queue_cap: 16,
            },
            larson: k::Larson {
                chunks: if full { 5000 } else { 1000 },
                min: 8,
                max: 1000,
                ops_per_generation: if full { 100_000 } else { 20_000 },
                generations: if full { 30 } else { 10 },
            },
            // Hoard's `P 1000 1 1000000` (full); a tenth of the passes (quick).
            cache: k::Cache {
                iterations: 1000,
                repetitions: if full { 1_000_000 } else { 100_000 },
                object_size: 1,
            },
            mstress: k::Mstress {
                scale: if full { 50 } else { 20 },
                rounds: if full { 25 } else { 10 },
            },
            // The original's 20 buffers and 2,000 replacements (full); a quarter (quick).
            large: Large {
                slots: 20,
                iterations: if full { 2000 } else { 500 },
            },
        }
    }
}

/// Runs `bench` on `threads` threads, calling `a` directly; checks the checksum where it
/// is known in advance.
pub fn run_bench<A: GlobalAlloc + Sync>(
    a: &'static A,
    bench: &str,
    threads: usize,
    p: &Params,
) -> KResult {
    let expect = |o: Outcome, want: u64| {
        if o.checksum == want {
            Ok(o)
        } else {
            Err(format!(
                "{bench}: checksum {} != expected {want}",
                o.checksum
            ))
        }
    };
    match bench {
        "malloc_test" => expect(
            k::malloc_test(a, threads, p.malloc_test_iters)?,
            threads as u64 * k::seed_loop_expected(p.malloc_test_iters),
        ),
        "xmalloc" => expect(
            k::xmalloc(a, threads, p.xmalloc)?,
            k::xmalloc_expected(threads, p.xmalloc.blocks_per_producer),
        ),
        // Sizes drawn per lineage: compared across allocators by the parent.
        "larson" => k::larson(a, threads, p.larson),
        "cache-scratch" => expect(
            k::cache(a, threads, p.cache, true)?,
            k::cache_expected(threads, &p.cache),
        ),
        "cache-thrash" => expect(
            k::cache(a, threads, p.cache, false)?,
            k::cache_expected(threads, &p.cache),
        ),
        "mstress" => expect(
            k::mstress(a, threads, p.mstress)?,
            k::mstress_expected(threads, &p.mstress),
        ),
        "malloc-large" => expect(
            malloc_large(a, threads, p.large)?,
            malloc_large_expected(threads, &p.large),
        ),
        other => Err(format!("unknown alloc benchmark `{other}`")),
    }
}

/// [`run_bench`] on the allocator `which`, which is also this process's global allocator
/// (so the child's other allocations and its peak RSS are the same allocator's).
pub fn run_on(which: Which, bench: &str, threads: usize, p: &Params) -> KResult {
    match which {
        Which::Glibc => run_bench(&System, bench, threads, p),
        Which::Arena => run_bench(&select::ARENA, bench, threads, p),
        Which::Arena1 => run_bench(&select::ARENA_1, bench, threads, p),
        Which::Mimalloc => run_bench(&mimalloc::MiMalloc, bench, threads, p),
        Which::Jemalloc => run_bench(&tikv_jemallocator::Jemalloc, bench, threads, p),
    }
}

/// User + system CPU time of this process so far, all threads (`getrusage`), seconds.
pub fn process_cpu_seconds() -> f64 {
    // SAFETY: an all-zero `rusage` is a valid value of the plain C struct.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `u` is a valid, writable `rusage`; RUSAGE_SELF needs nothing else.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) } != 0 {
        return 0.0;
    }
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    secs(u.ru_utime) + secs(u.ru_stime)
}

/// Peak resident set size of this process in KiB (`VmHWM` of `/proc/self/status`).
pub fn peak_rss_kib() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// If this process was started as an alloc child, runs it and returns its exit code.
pub fn intercept() -> Option<ExitCode> {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) != Some(FLAG) {
        return None;
    }
    Some(match child(&args[2..]) {
        Ok(report) => {
            println!(
                "{}",
                serde_json::to_string(&report).expect("report serializes")
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("bench-suite alloc child: {e}");
            ExitCode::FAILURE
        }
    })
}

fn child(args: &[String]) -> Result<ChildReport, String> {
    let [bench, threads, mode] = args else {
        return Err(format!("usage: {FLAG} BENCH THREADS quick|full"));
    };
    let threads: usize = crate::measure::parse_threads(threads)?;
    let full = match mode.as_str() {
        "quick" => false,
        "full" => true,
        m => return Err(format!("mode `{m}` is not quick or full")),
    };
    if let Some(bad) = select::invalid_env() {
        return Err(format!(
            "{}={bad} names no allocator (one of glibc, arena, arena-1, mimalloc, jemalloc)",
            select::ENV
        ));
    }
    let which = select::current().ok_or("the runner's global allocator is not select::Selected")?;
    let before = arena_alloc::total_stats().allocations;
    let cpu_start = process_cpu_seconds();
    let start = Instant::now();
    let out = run_on(which, bench, threads, &Params::new(full))?;
    let seconds = start.elapsed().as_secs_f64();
    let cpu_seconds = process_cpu_seconds() - cpu_start;
    let arena_used = arena_alloc::total_stats().allocations > before;
    if arena_used != matches!(which, Which::Arena | Which::Arena1) {
        return Err(format!(
            "running on {} but arena-alloc served allocations: {arena_used}",
            which.env_value()
        ));
    }
    Ok(ChildReport {
        allocator: which.env_value().to_owned(),
        bench: bench.clone(),
        threads,
        ops: out.ops,
        seconds,
        cpu_seconds,
        peak_rss_kib: peak_rss_kib().ok_or("cannot read VmHWM from /proc/self/status")?,
        checksum: out.checksum,
        cpu_source: arena_alloc::cpu_source().to_owned(),
    })
}

/// Runs one child of `exe` (the runner binary) and returns its report.
pub fn spawn(
    exe: &std::path::Path,
    which: Which,
    bench: &str,
    threads: usize,
    full: bool,
) -> Result<ChildReport, String> {
    let out = Command::new(exe)
        .env(select::ENV, which.env_value())
        .env_remove(arena_alloc::tuning::HEAP_COUNT_ENV)
        .args([
            FLAG,
            bench,
            &threads.to_string(),
            if full { "full" } else { "quick" },
        ])
        .output()
        .map_err(|e| format!("cannot start {}: {e}", exe.display()))?;
    let what = format!("{bench} on {} with {threads} threads", which.label());
    if !out.status.success() {
        return Err(format!(
            "{what} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout.lines().last().unwrap_or_default();
    let report: ChildReport = serde_json::from_str(line)
        .map_err(|e| format!("{what}: bad child output `{line}`: {e}"))?;
    if report.allocator != which.env_value() || report.bench != bench || report.threads != threads {
        return Err(format!("{what}: the child ran something else: {report:?}"));
    }
    Ok(report)
}
