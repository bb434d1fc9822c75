//! `scaling-alloc`: arena-alloc against glibc, mimalloc and jemalloc, each in a child
//! process of its own (as in the `alloc` group: the runner re-executes itself as
//! `bench-suite --alloc-scaling-child SHAPE N` with `BENCH_SUITE_ALLOCATOR` set; the child
//! calls that allocator's `GlobalAlloc` methods directly, and the allocator is also the
//! child's global allocator, so the process's address space is the allocator's).
//!
//! Shapes ([`AllocShape`]): n live blocks of 100 B, 8 KiB and 200 KB (allocated, one byte
//! written per block, then all freed; per block); one block size after another from 1 KiB
//! to 64 MiB (16 live blocks in a ring, first and last byte written; per alloc+free; `n`
//! is the block size); and free-then-reuse (n bytes of 8 KiB blocks allocated, written,
//! freed, then n bytes of 100 B blocks; per 100 B block). Times are the child's thread
//! CPU time. Besides the time, the child reads its `VmSize` and `VmRSS`
//! (`/proc/self/status`) at the work's peak: the whole process's, per element, recorded as
//! `VmSize B/elem` and `RSS B/elem` (elements are blocks, or bytes where `n` is a size).

use std::alloc::{GlobalAlloc, Layout, System};
use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::groups::alloc::select::{self, Which};
use crate::groups::group::Group;
use crate::measure::{BenchResult, Ctx};

use super::sweep::{self, Meter, Row, thread_cpu};

/// The group.
pub const GROUP: Group = Group {
    name: "scaling-alloc",
    about: "growth with n: arena-alloc vs glibc, mimalloc, jemalloc (child processes): n live blocks of 100 B, 8 KiB, 200 KB; sizes 1 KiB-64 MiB; free-then-reuse; time, VmSize and RSS per element",
    run,
    claims: &[],
    ab_claims: &[],
};

/// The hidden first argument that makes the runner an alloc scaling child.
pub const FLAG: &str = "--alloc-scaling-child";

/// Metric of the address-space growth per element.
pub const VM: &str = "VmSize B/elem";
/// Metric of the resident-set growth per element.
pub const RSS: &str = "RSS B/elem";

/// The allocators compared (arena-alloc with its default heap count).
pub const ALLOCATORS: [Which; 4] = [Which::Glibc, Which::Arena, Which::Mimalloc, Which::Jemalloc];

/// What the children do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AllocShape {
    /// n live blocks of this many bytes, then all freed.
    Live(usize),
    /// Blocks of n bytes, 16 live in a ring.
    Size,
    /// n bytes of 8 KiB blocks, freed, then n bytes of 100 B blocks.
    Reuse,
}

/// Blocks of a [`AllocShape::Size`] ring.
pub const RING: usize = 16;
/// Allocations per round of a [`AllocShape::Size`] cell.
pub const RING_OPS: u64 = 256;

impl AllocShape {
    /// Every shape with its sizes: (shape, first n, last n).
    pub const ALL: [(AllocShape, u64, u64); 5] = [
        (AllocShape::Live(100), 1000, 1_024_000),
        (AllocShape::Live(8 << 10), 1000, 64_000),
        (AllocShape::Live(200_000), 16, 4096),
        (AllocShape::Size, 1 << 10, 64 << 20),
        (AllocShape::Reuse, 1 << 20, 64 << 20),
    ];

    /// The row label.
    pub fn name(self) -> String {
        match self {
            AllocShape::Live(100) => "live blocks (100 B)".into(),
            AllocShape::Live(8192) => "live blocks (8 KiB)".into(),
            AllocShape::Live(s) => format!("live blocks ({} KB)", s / 1000),
            AllocShape::Size => "alloc+free by block size".into(),
            AllocShape::Reuse => "reuse 8 KiB as 100 B".into(),
        }
    }

    /// The child's argument.
    pub fn arg(self) -> String {
        match self {
            AllocShape::Live(s) => format!("live:{s}"),
            AllocShape::Size => "size".into(),
            AllocShape::Reuse => "reuse".into(),
        }
    }

    /// Parses [`AllocShape::arg`].
    pub fn parse(s: &str) -> Option<AllocShape> {
        match s {
            "size" => Some(AllocShape::Size),
            "reuse" => Some(AllocShape::Reuse),
            _ => s.strip_prefix("live:")?.parse().ok().map(AllocShape::Live),
        }
    }

    fn param(self) -> &'static str {
        match self {
            AllocShape::Live(_) => "n",
            AllocShape::Size | AllocShape::Reuse => "bytes",
        }
    }
}

/// What a child prints (one JSON line).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// Samples of nanoseconds per operation.
    pub ns_per_op: Vec<f64>,
    /// Operations per round.
    pub ops: u64,
    /// `VmSize` at the work's peak, bytes.
    pub vm_bytes: f64,
    /// `VmRSS` at the work's peak, bytes.
    pub rss_bytes: f64,
}

/// `VmSize` and `VmRSS` of this process, bytes.
pub fn vm() -> (f64, f64) {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        s.lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse::<f64>().ok())
            .map_or(0.0, |kib| kib * 1024.0)
    };
    (field("VmSize:"), field("VmRSS:"))
}

/// The highest (VmSize, VmRSS) seen: the whole process's, its fixed part included (an
/// allocator that reserves address space at start-up pays for it here, and no row
/// divides by a growth of zero).
struct Peak {
    top: (f64, f64),
}

impl Peak {
    fn new() -> Peak {
        Peak { top: vm() }
    }
    fn see(&mut self) {
        let (v, r) = vm();
        self.top = (self.top.0.max(v), self.top.1.max(r));
    }
}

fn layout(size: usize) -> Result<Layout, String> {
    Layout::from_size_align(size, 16).map_err(|e| e.to_string())
}

fn alloc<A: GlobalAlloc>(a: &A, l: Layout, stamp: u8) -> Result<*mut u8, String> {
    // SAFETY: every layout here has a non-zero size.
    let p = unsafe { a.alloc(l) };
    if p.is_null() {
        return Err(format!("allocation of {} bytes failed", l.size()));
    }
    // SAFETY: `p` holds `l.size()` bytes; the first is written.
    unsafe { p.write_volatile(stamp) };
    // SAFETY: as above; the last.
    unsafe { p.wrapping_add(l.size() - 1).write_volatile(stamp) };
    Ok(p)
}

fn free<A: GlobalAlloc>(a: &A, p: *mut u8, l: Layout, stamp: u8) -> Result<u64, String> {
    // SAFETY: `p` came from `alloc` with layout `l`, which wrote its first byte.
    let x = unsafe { p.read_volatile() };
    // SAFETY: as above; and its last byte.
    let y = unsafe { p.wrapping_add(l.size() - 1).read_volatile() };
    if x != stamp || y != stamp {
        return Err(format!("a block of {} bytes lost its stamp", l.size()));
    }
    // SAFETY: as above; freed once.
    unsafe { a.dealloc(p, l) };
    Ok(u64::from(stamp))
}

/// One round of `shape` at `n` on `a`: (operations, checksum), `peak` updated at the
/// work's peak.
fn round<A: GlobalAlloc>(
    a: &A,
    shape: AllocShape,
    n: u64,
    peak: &mut Peak,
) -> Result<(u64, u64), String> {
    let mut sum = 0;
    match shape {
        AllocShape::Live(size) => {
            let l = layout(size)?;
            let mut blocks = Vec::with_capacity(n as usize);
            for i in 0..n {
                blocks.push(alloc(a, l, i as u8 | 1)?);
            }
            peak.see();
            for (i, p) in blocks.into_iter().enumerate() {
                sum += free(a, p, l, i as u8 | 1)?;
            }
            Ok((n, sum))
        }
        AllocShape::Size => {
            let l = layout(n as usize)?;
            let mut ring: Vec<Option<(*mut u8, u8)>> = vec![None; RING];
            for i in 0..RING_OPS {
                let stamp = i as u8 | 1;
                let fresh = alloc(a, l, stamp)?;
                if let Some((p, s)) = ring[i as usize % RING].replace((fresh, stamp)) {
                    sum += free(a, p, l, s)?;
                }
                if i as usize == RING - 1 {
                    peak.see();
                }
            }
            for (p, s) in ring.into_iter().flatten() {
                sum += free(a, p, l, s)?;
            }
            Ok((RING_OPS, sum))
        }
        AllocShape::Reuse => {
            let big = layout(8 << 10)?;
            let blocks: Vec<*mut u8> = (0..n / (8 << 10))
                .map(|_| {
                    let p = alloc(a, big, 7)?;
                    // One byte per page: the memory is really used.
                    for off in (0..big.size()).step_by(4096) {
                        // SAFETY: inside the block.
                        unsafe { p.wrapping_add(off).write_volatile(7) };
                    }
                    Ok(p)
                })
                .collect::<Result<_, String>>()?;
            peak.see();
            for p in blocks {
                sum += free(a, p, big, 7)?;
            }
            let small = layout(100)?;
            let count = n / 100;
            let blocks: Vec<*mut u8> = (0..count)
                .map(|i| alloc(a, small, i as u8 | 1))
                .collect::<Result<_, String>>()?;
            peak.see();
            for (i, p) in blocks.into_iter().enumerate() {
                sum += free(a, p, small, i as u8 | 1)?;
            }
            Ok((count, sum))
        }
    }
}

/// The checksum of a round (every stamp freed once).
fn expected(shape: AllocShape, n: u64) -> u64 {
    let stamps = |count: u64| (0..count).map(|i| u64::from(i as u8 | 1)).sum::<u64>();
    match shape {
        AllocShape::Live(_) => stamps(n),
        AllocShape::Size => stamps(RING_OPS),
        AllocShape::Reuse => 7 * (n / (8 << 10)) + stamps(n / 100),
    }
}

/// The child's work on `a`: a first round (the peak address space and RSS), then timed
/// samples of rounds (each at least 5 ms).
pub fn work<A: GlobalAlloc>(a: &A, shape: AllocShape, n: u64) -> Result<Report, String> {
    let mut peak = Peak::new();
    let start = Instant::now();
    let (ops, sum) = round(a, shape, n, &mut peak)?;
    let warm = start.elapsed();
    let check = |sum: u64| {
        let want = expected(shape, n);
        if sum == want {
            Ok(())
        } else {
            Err(format!("checksum {sum}, expected {want}"))
        }
    };
    check(sum)?;
    let (vm_bytes, rss_bytes) = peak.top;
    let reps = (Duration::from_millis(5).as_nanos() / warm.as_nanos().max(1)).clamp(1, 1000) as u64;
    let samples = if warm.as_secs_f64() < 0.5 { 3 } else { 1 };
    let mut ns_per_op = Vec::new();
    for _ in 0..samples {
        let start = thread_cpu();
        for _ in 0..reps {
            let (_, sum) = round(a, shape, n, &mut peak)?;
            check(sum)?;
        }
        let cpu = thread_cpu().saturating_sub(start);
        ns_per_op.push(cpu.as_nanos() as f64 / (reps * ops) as f64);
    }
    Ok(Report {
        ns_per_op,
        ops,
        vm_bytes,
        rss_bytes,
    })
}

/// If this process was started as an alloc scaling child, runs it and returns its exit
/// code.
pub fn intercept() -> Option<ExitCode> {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) != Some(FLAG) {
        return None;
    }
    Some(match child(&args[2..]) {
        Ok(r) => {
            println!("{}", serde_json::to_string(&r).expect("report serializes"));
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("bench-suite alloc scaling child: {e}");
            ExitCode::FAILURE
        }
    })
}

fn child(args: &[String]) -> Result<Report, String> {
    let [shape, n] = args else {
        return Err(format!("usage: {FLAG} SHAPE N"));
    };
    let shape = AllocShape::parse(shape).ok_or_else(|| format!("unknown shape `{shape}`"))?;
    let n: u64 = n.parse().map_err(|_| format!("`{n}` is not a size"))?;
    if let Some(bad) = select::invalid_env() {
        return Err(format!("{}={bad} names no allocator", select::ENV));
    }
    match select::current().ok_or("the global allocator is not select::Selected")? {
        Which::Glibc => work(&System, shape, n),
        Which::Arena => work(&select::ARENA, shape, n),
        Which::Arena1 => work(&select::ARENA_1, shape, n),
        Which::Mimalloc => work(&mimalloc::MiMalloc, shape, n),
        Which::Jemalloc => work(&tikv_jemallocator::Jemalloc, shape, n),
    }
}

fn spawn(exe: &std::path::Path, which: Which, shape: AllocShape, n: u64) -> Result<Report, String> {
    let out = Command::new(exe)
        .env(select::ENV, which.env_value())
        .env_remove(arena_alloc::tuning::HEAP_COUNT_ENV)
        .args([FLAG, &shape.arg(), &n.to_string()])
        .output()
        .map_err(|e| format!("cannot start {}: {e}", exe.display()))?;
    if !out.status.success() {
        return Err(format!(
            "child on {} failed ({}): {}",
            which.label(),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout.lines().last().unwrap_or_default();
    serde_json::from_str(line).map_err(|e| format!("bad child output `{line}`: {e}"))
}

fn row<'a>(
    exe: &'a std::path::Path,
    which: Which,
    shape: AllocShape,
    first: u64,
    last: u64,
) -> Row<'a> {
    Row::new(
        shape.name(),
        which.label(),
        last,
        move |n, m: &mut Meter| {
            if n == 0 {
                return Ok(0);
            }
            let r = spawn(exe, which, shape, n)?;
            m.report(r.ns_per_op);
            m.bytes(VM, r.vm_bytes.max(0.0));
            m.bytes(RSS, r.rss_bytes.max(0.0));
            Ok(r.ops.max(1))
        },
    )
    .first(first)
    .param(shape.param())
    .no_memory()
}

fn run(ctx: &mut Ctx<'_>) -> BenchResult {
    if !ctx.sweeps() {
        return Ok(());
    }
    let exe = std::env::current_exe().map_err(|e| {
        crate::measure::BenchError(format!("cannot find the runner's own binary: {e}"))
    })?;
    if !ctx.counting() && select::current().is_none() {
        return Err(crate::measure::BenchError(
            "scaling-alloc re-runs the bench-suite binary under each allocator; this \
             process's global allocator is not select::Selected"
                .into(),
        ));
    }
    let mut rows = Vec::new();
    for (shape, first, last) in AllocShape::ALL {
        for w in ALLOCATORS {
            rows.push(row(&exe, w, shape, first, last));
        }
    }
    sweep::run(ctx, rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shape_runs_and_checks_on_the_system_allocator() {
        for (shape, first, _) in AllocShape::ALL {
            let n = if shape == AllocShape::Reuse {
                1 << 16
            } else {
                first.min(1 << 12)
            };
            let r = work(&System, shape, n).unwrap();
            assert!(r.ops > 0 && !r.ns_per_op.is_empty(), "{shape:?}");
            assert_eq!(AllocShape::parse(&shape.arg()), Some(shape));
        }
        assert_eq!(AllocShape::parse("live:x"), None);
        let (v, r) = vm();
        assert!(v > 0.0 && r > 0.0);
    }
}
