//! Misuse of `free` with `ArenaAlloc` as the global allocator: each case runs in a child
//! process (this binary, re-run with the case named in the environment), which must die
//! of `SIGABRT` after one line on stderr, never hand out overlapping blocks and never
//! segfault. Every case is caught in the default mode and in the hardened mode
//! (`ARENA_ALLOC_HARDENED=1`); a double free at every size class, in three ways: at once,
//! after another block of its class was freed, and after the thread's cache went back to
//! the arenas (the block is on its page's free list then).

use arena_alloc::tuning::{
    CLASS_SIZES, HARDENED_ENV, LARGE_MAX, NUM_CLASSES, SEGMENT_SIZE, SMALL_MAX,
};
use arena_alloc::{ArenaAlloc, flush_thread_cache};
use std::alloc::{GlobalAlloc, Layout};
use std::process::Command;

// Under Miri (no mmap, no rseq) the binary keeps `System` and its scenarios are skipped.
#[cfg_attr(not(miri), global_allocator)]
static GLOBAL: ArenaAlloc = ArenaAlloc::new();

const CASE: &str = "ARENA_ALLOC_MISUSE_CASE";

/// (case, hardened mode needed, what stderr must say)
const CASES: [(&str, bool, &str); 11] = [
    ("huge-double", false, "free(): double free detected"),
    ("huge-interior", false, "free(): invalid pointer"),
    ("span-interior-page", false, "free(): invalid pointer"),
    ("direct-double", false, "free(): double free detected"),
    ("small-interior-64", false, "not the start of a block"),
    ("small-interior-48", false, "not the start of a block"),
    ("small-interior-1k", false, "not the start of a block"),
    ("small-double", false, "double free detected"),
    ("medium-interior-10k", false, "not the start of a block"),
    ("medium-double", false, "double free detected"),
    ("unmapped-double", false, "free(): double free detected (0x"),
];

fn layout(size: usize) -> Layout {
    Layout::from_size_align(size, 16).unwrap()
}

/// The misuse itself (in the child). Returns only if the allocator let it pass.
fn misuse(case: &str) {
    let alloc = |size: usize| {
        // SAFETY: non-zero size.
        let p = unsafe { GLOBAL.alloc(layout(size)) };
        assert!(!p.is_null());
        p
    };
    let free = |p: *mut u8, size: usize| {
        // SAFETY: not met on purpose (these are the misuses under test): the allocator
        // must abort before it touches anything.
        unsafe { GLOBAL.dealloc(p, layout(size)) }
    };
    match case {
        "huge-double" => {
            let p = alloc(1 << 20);
            free(p, 1 << 20);
            free(p, 1 << 20);
        }
        "huge-interior" => free(alloc(1 << 20).wrapping_add(16), 1 << 20),
        "span-interior-page" => free(alloc(SMALL_MAX + 1).wrapping_add(4096), SMALL_MAX + 1),
        "direct-double" => {
            let n = 40 * SEGMENT_SIZE; // beyond the largest span: a mapping of its own
            let p = alloc(n);
            free(p, n);
            free(p, n);
        }
        "small-interior-64" => free(alloc(64).wrapping_add(16), 64),
        "small-interior-48" => free(alloc(48).wrapping_add(16), 48),
        "small-interior-1k" => free(alloc(1000).wrapping_add(512), 1000),
        "small-double" => {
            let p = alloc(64);
            free(p, 64);
            free(p, 64);
        }
        // A 10 KiB request gets a 16 KiB block (power-of-two classes above `POW2_MIN`):
        // 10 KiB in is where the next block of the old 10 KiB class started.
        "medium-interior-10k" => free(alloc(10 * 1024).wrapping_add(10 * 1024), 10 * 1024),
        "medium-double" => {
            let p = alloc(20 * 1024);
            free(p, 20 * 1024);
            free(p, 20 * 1024);
        }
        // A block whose small segment was unmapped before its second free: 8,000 blocks of
        // 8 KiB fill 16 segments; freed and trimmed, all but one of them are unmapped (the
        // middle one among them: only the last holds its class's head page).
        "unmapped-double" => {
            let size = 8 << 10;
            let blocks: Vec<*mut u8> = (0..8000).map(|_| alloc(size)).collect();
            let p = blocks[blocks.len() / 2];
            for &q in &blocks {
                free(q, size);
            }
            arena_alloc::trim();
            free(p, size);
        }
        "valid" => {
            for size in [
                48,
                64,
                1000,
                10 * 1024,
                20 * 1024,
                1 << 20,
                SMALL_MAX + 1,
                40 * SEGMENT_SIZE,
            ] {
                free(alloc(size), size);
            }
            return;
        }
        other => {
            // "double-<how>-<size>": a double free of a block of `size` bytes.
            let (how, size) = other
                .strip_prefix("double-")
                .and_then(|r| r.rsplit_once('-'))
                .unwrap_or_else(|| panic!("unknown case {other}"));
            let size: usize = size.parse().unwrap();
            let p = alloc(size);
            free(p, size);
            match how {
                "now" => {}
                "later" => free(alloc(size), size),
                "flushed" => flush_thread_cache(),
                _ => panic!("unknown case {other}"),
            }
            free(p, size);
        }
    }
    // Reached only if the misuse was accepted: show the damage it does.
    let a = alloc(64);
    let b = alloc(64);
    println!("ACCEPTED: next blocks {a:p} {b:p}");
}

#[cfg(not(miri))]
fn main() {
    use std::os::unix::process::ExitStatusExt;
    if let Ok(case) = std::env::var(CASE) {
        misuse(&case);
        return;
    }
    for (case, hardened, expect) in CASES {
        let modes: &[&str] = if hardened { &["1"] } else { &["0", "1"] };
        for mode in modes {
            let out = Command::new(std::env::current_exe().unwrap())
                .env(CASE, case)
                .env(HARDENED_ENV, mode)
                .output()
                .unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(
                out.status.signal(),
                Some(libc::SIGABRT),
                "{case} (hardened={mode}): {:?}, stdout {:?}, stderr {stderr:?}",
                out.status,
                String::from_utf8_lossy(&out.stdout),
            );
            assert!(
                stderr.contains("arena-alloc: ") && stderr.contains(expect),
                "{case} (hardened={mode}): stderr {stderr:?}"
            );
        }
    }
    // A double free of a block of every size class, and of the extents and mappings above
    // them, in three ways.
    let sizes = CLASS_SIZES[..NUM_CLASSES]
        .iter()
        .map(|&s| s as usize)
        .chain([SMALL_MAX + 1, LARGE_MAX, LARGE_MAX + 1]);
    for size in sizes {
        for how in ["now", "later", "flushed"] {
            let case = format!("double-{how}-{size}");
            let out = Command::new(std::env::current_exe().unwrap())
                .env(CASE, &case)
                .env(HARDENED_ENV, "0")
                .output()
                .unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(
                out.status.signal(),
                Some(libc::SIGABRT),
                "{case}: {:?}, stdout {:?}, stderr {stderr:?}",
                out.status,
                String::from_utf8_lossy(&out.stdout),
            );
            assert!(
                stderr.contains("arena-alloc: free(): double free detected (0x"),
                "{case}: stderr {stderr:?}"
            );
        }
    }
    // The same frees without misuse run to the end in both modes.
    for mode in ["0", "1"] {
        let out = Command::new(std::env::current_exe().unwrap())
            .env(CASE, "valid")
            .env(HARDENED_ENV, mode)
            .output()
            .unwrap();
        assert!(out.status.success(), "valid (hardened={mode}): {out:?}");
    }
    println!("misuse: every case aborted with its message");
}

#[cfg(miri)]
fn main() {
    // The allocator needs mmap; the misuse cases are process-level anyway.
    let _ = misuse;
}
