//! ARENA_ALLOC_HEAP_COUNT: the test spawns itself as a child with the variable set and
//! checks the stderr line and the heap count actually used (no arena beyond it is touched).

use arena_alloc::tuning::{HEAP_COUNT_ENV, MAX_HEAP_COUNT};
use arena_alloc::{ArenaAlloc, HeapCountError, arena_stats};
use std::process::Command;

// Under Miri (no mmap, no rseq) the binary keeps `System` and its scenarios are skipped.
#[cfg_attr(not(miri), global_allocator)]
static GLOBAL: ArenaAlloc = ArenaAlloc::new();

const CHILD: &str = "ARENA_ALLOC_TEST_CHILD";

/// In the child: allocate on several threads and report the count and the arenas used.
#[test]
#[cfg_attr(miri, ignore = "spawns processes, needs mmap/rseq FFI")]
fn child_report() {
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    let n = GLOBAL.heap_count();
    let hs: Vec<_> = (0..8)
        .map(|i| {
            std::thread::spawn(move || {
                (0..2000)
                    .map(|k| vec![i as u8; k % 300].len())
                    .sum::<usize>()
            })
        })
        .collect();
    for h in hs {
        assert_eq!(h.join().unwrap(), (0..2000).map(|k| k % 300).sum::<usize>());
    }
    let highest_used = (0..MAX_HEAP_COUNT)
        .filter(|&i| arena_stats(i).unwrap().allocations > 0)
        .max()
        .unwrap();
    println!("CHILD heap_count={n} highest_arena_used={highest_used}");
}

fn run_child(value: &str) -> (usize, usize, String) {
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child_report", "--nocapture", "--test-threads=1"])
        .env(HEAP_COUNT_ENV, value)
        .env(CHILD, "1")
        .output()
        .unwrap();
    assert!(out.status.success(), "child failed for {value:?}: {out:?}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    let line = stdout
        .lines()
        .find_map(|l| l.split("CHILD ").nth(1))
        .unwrap_or_else(|| panic!("no report in {stdout:?}"));
    let nums: Vec<usize> = line
        .split(' ')
        .map(|kv| kv.split('=').nth(1).unwrap().parse().unwrap())
        .collect();
    (nums[0], nums[1], String::from_utf8(out.stderr).unwrap())
}

#[test]
#[cfg_attr(miri, ignore = "spawns processes")]
fn valid_values_are_used() {
    for (value, expect) in [("1", 1), ("128", 128), ("3", 3)] {
        let (n, highest, stderr) = run_child(value);
        assert_eq!(n, expect, "value {value}");
        assert!(highest < n, "arena {highest} used with {n} heaps");
        assert!(
            !stderr.contains("arena-alloc"),
            "unexpected message: {stderr}"
        );
    }
}

#[test]
#[cfg_attr(miri, ignore = "spawns processes")]
fn invalid_values_fall_back_with_one_line() {
    let default = arena_alloc::tuning::default_heap_count();
    assert!(default >= 2);
    for value in ["0", "129", "abc", ""] {
        let (n, highest, stderr) = run_child(value);
        assert_eq!(n, default, "value {value:?}");
        assert!(highest < n);
        let lines: Vec<&str> = stderr
            .lines()
            .filter(|l| l.contains("arena-alloc"))
            .collect();
        assert_eq!(lines.len(), 1, "stderr: {stderr}");
        assert_eq!(
            lines[0],
            format!(
                "arena-alloc: ignoring {HEAP_COUNT_ENV}=\"{value}\": not a number in 1..=128; \
                 using the default of {default} heaps"
            )
        );
    }
}

#[test]
#[cfg_attr(miri, ignore = "spawns processes")]
fn over_long_values_fall_back() {
    // The value is copied into a 64-byte buffer when read: a longer one (here a valid
    // number behind 100 zeros) is rejected, and the message shows its first 64 bytes.
    let default = arena_alloc::tuning::default_heap_count();
    let value = format!("{}4", "0".repeat(100));
    let (n, highest, stderr) = run_child(&value);
    assert_eq!(n, default);
    assert!(highest < n);
    let zeros = "0".repeat(64);
    assert!(
        stderr.contains(&format!(
            "arena-alloc: ignoring {HEAP_COUNT_ENV}=\"{zeros}\": not a number in 1..=128"
        )),
        "stderr: {stderr}"
    );
}

#[test]
fn explicit_counts() {
    assert_eq!(ArenaAlloc::with_heap_count(1).heap_count(), 1);
    assert_eq!(ArenaAlloc::with_heap_count(128).heap_count(), 128);
    if !cfg!(miri) {
        assert!(ArenaAlloc::with_heap_count(1).arena_index() == 0);
    }
    assert_eq!(
        ArenaAlloc::try_with_heap_count(0).unwrap_err(),
        HeapCountError::OutOfRange
    );
    assert!(ArenaAlloc::try_with_heap_count(129).is_err());
}

#[test]
#[should_panic(expected = "heap count must be in 1..=128")]
fn explicit_zero_panics() {
    let _ = ArenaAlloc::with_heap_count(std::hint::black_box(0));
}
