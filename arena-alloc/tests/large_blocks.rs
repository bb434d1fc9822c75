//! Blocks above `SMALL_MAX`: sized to the request (usable bytes at most 1.25x it, for
//! every request from 128 KiB to 64 MiB, each size-class edge and one byte either side),
//! address space like glibc's mappings (N live blocks of one size), a limited address
//! space (`RLIMIT_AS`, in a child process), and memory freed by one size serving another
//! (the process's peak resident bytes, in a child process).

mod common;
use arena_alloc::tuning::{LARGE_MAX, LARGE_UNIT, SMALL_MAX, large_class_size};
use common::*;
use std::alloc::{GlobalAlloc, Layout};
use std::process::Command;

// Under Miri (no mmap, no rseq) the binary keeps `System` and its scenarios are skipped.
#[cfg_attr(not(miri), global_allocator)]
static GLOBAL: Counting = Counting::new(arena_alloc::ArenaAlloc::new());

const CHILD: &str = "ARENA_ALLOC_LARGE_CHILD";

/// A `/proc/self/status` field, in KiB.
fn status_kib(key: &str) -> usize {
    let s = std::fs::read_to_string("/proc/self/status").unwrap();
    s.lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("no {key} in /proc/self/status"))
}

fn alloc(size: usize) -> *mut u8 {
    // SAFETY: non-zero size.
    let p = unsafe { GLOBAL.alloc(Layout::from_size_align(size, 16).unwrap()) };
    assert!(!p.is_null(), "alloc({size}) failed");
    p
}

fn free(p: *mut u8, size: usize) {
    // SAFETY: `p` is a live block of this layout.
    unsafe { GLOBAL.dealloc(p, Layout::from_size_align(size, 16).unwrap()) };
}

/// Requests on every class edge from 128 KiB to 64 MiB, one byte either side, and the OS
/// pages' edges around them.
fn edge_sizes() -> Vec<usize> {
    let mut sizes = Vec::new();
    let mut c = SMALL_MAX;
    while c < 64 << 20 {
        for s in [c - 1, c, c + 1, c + LARGE_UNIT - 1, c + LARGE_UNIT + 1] {
            if s > SMALL_MAX && s <= 64 << 20 {
                sizes.push(s);
            }
        }
        c = large_class_size(c + 1);
    }
    sizes.push(64 << 20);
    sizes
}

fn usable_sizes() {
    for size in edge_sizes() {
        let p = alloc(size);
        // SAFETY: `p` is live.
        let usable = unsafe { GLOBAL.inner.usable_size(p) };
        assert!(
            usable >= size && usable <= size + size / 4,
            "request {size}: usable {usable}"
        );
        // SAFETY: the block has `usable` bytes.
        unsafe { p.wrapping_add(usable - 1).write(1) };
        free(p, size);
    }
}

/// glibc maps each of these requests itself: `size` plus its 16-byte header, in whole
/// pages. N live blocks of one size must take at most 1.5 times that, plus `FIXED`.
const FIXED: usize = 16 << 20;

fn address_space() {
    for size in [
        SMALL_MAX + 1,
        200_000,
        600_000,
        (1 << 20) + 1,
        LARGE_MAX,
        LARGE_MAX + 1,
        2_000_000,
        (4 << 20) + 1,
        6_000_000,
    ] {
        let n = (256 << 20) / size;
        let before = status_kib("VmSize:") << 10;
        let blocks: Vec<*mut u8> = (0..n).map(|_| alloc(size)).collect();
        let grown = (status_kib("VmSize:") << 10).saturating_sub(before);
        let glibc = n * (size + 16).next_multiple_of(4096);
        assert!(
            grown <= glibc + glibc / 2 + FIXED,
            "{n} blocks of {size}: {grown} bytes of address space, glibc's {glibc}"
        );
        for p in blocks {
            free(p, size);
        }
        arena_alloc::trim();
    }
}

/// In a child: 2,000 live blocks of 200 KB under a 600,000 KiB address-space limit.
fn limited_address_space_child() {
    let limit = libc::rlimit {
        rlim_cur: 600_000 << 10,
        rlim_max: 600_000 << 10,
    };
    // SAFETY: a valid rlimit for this process.
    assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_AS, &limit) }, 0);
    let blocks: Vec<*mut u8> = (0..2000)
        .map(|i| {
            // SAFETY: non-zero size.
            let p = unsafe { GLOBAL.alloc(Layout::from_size_align(200_000, 16).unwrap()) };
            assert!(!p.is_null(), "block {i} of 2,000 failed under the limit");
            // SAFETY: a live block of 200,000 bytes.
            unsafe { p.write_bytes(7, 200_000) };
            p
        })
        .collect();
    println!("CHILD blocks={}", blocks.len());
}

/// In a child: 64 MiB of 8 KiB blocks, all freed, then 64 MiB of 100-byte blocks (and the
/// same from large blocks to small ones); prints the peak resident KiB and the bytes the
/// second phase's blocks take.
fn reuse_child(a: usize, b: usize) {
    let total = 64 << 20;
    let first: Vec<*mut u8> = (0..total / a)
        .map(|_| {
            let p = alloc(a);
            // SAFETY: a live block of `a` bytes.
            unsafe { p.write_bytes(1, a) };
            p
        })
        .collect();
    for &p in &first {
        free(p, a);
    }
    drop(first);
    let second: Vec<*mut u8> = (0..total / b)
        .map(|_| {
            let p = alloc(b);
            // SAFETY: a live block of `b` bytes.
            unsafe { p.write_bytes(2, b) };
            p
        })
        .collect();
    // SAFETY: live blocks.
    let usable: usize = second
        .iter()
        .map(|&p| unsafe { GLOBAL.inner.usable_size(p) })
        .sum();
    println!(
        "CHILD peak_kib={} second_kib={}",
        status_kib("VmHWM:"),
        usable >> 10
    );
}

fn child(args: &[&str]) -> String {
    let out = Command::new(std::env::current_exe().unwrap())
        .args(args)
        .env(CHILD, "1")
        .output()
        .unwrap();
    assert!(out.status.success(), "child {args:?} failed: {out:?}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    stdout
        .lines()
        .find_map(|l| l.strip_prefix("CHILD "))
        .unwrap_or_else(|| panic!("no report in {stdout:?}"))
        .to_owned()
}

fn limited_address_space() {
    assert_eq!(child(&["limit"]), "blocks=2000");
}

/// The peak while the second phase's blocks are live is at most 1.05 times what they take
/// (their usable bytes: glibc's chunks take as much for 100-byte requests) plus 8 MiB: the
/// first phase's memory served them.
fn reuse_across_sizes() {
    for (a, b) in [
        (8192, 100),
        (200_000, 100),
        (1 << 20, 5000),
        (6_000_000, 200_000),
    ] {
        let line = child(&["reuse", &a.to_string(), &b.to_string()]);
        let nums: Vec<usize> = line
            .split(' ')
            .map(|kv| kv.split('=').nth(1).unwrap().parse().unwrap())
            .collect();
        let (peak, second) = (nums[0], nums[1]);
        assert!(
            peak <= second + second / 20 + (8 << 10),
            "{a} B then {b} B: peak {peak} KiB, the second phase's blocks {second} KiB"
        );
    }
}

fn main() {
    if std::env::var_os(CHILD).is_some() {
        let args: Vec<String> = std::env::args().skip(1).collect();
        match args[0].as_str() {
            "limit" => limited_address_space_child(),
            "reuse" => reuse_child(args[1].parse().unwrap(), args[2].parse().unwrap()),
            other => panic!("unknown child {other}"),
        }
        return;
    }
    run("large_blocks", || {
        let before = snapshot(&GLOBAL);
        usable_sizes();
        address_space();
        assert_no_leak(&GLOBAL, &before);
        limited_address_space();
        reuse_across_sizes();
    });
}
