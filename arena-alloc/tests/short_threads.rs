//! 10,000 short-lived threads allocate, hand some blocks back to the main thread and exit.
//! Nothing is stranded: all blocks come back, and RSS grows by at most 16 MiB.

mod common;
use common::*;

// Under Miri (no mmap, no rseq) the binary keeps `System` and its scenarios are skipped.
#[cfg_attr(not(miri), global_allocator)]
static GLOBAL: Counting = Counting::new(arena_alloc::ArenaAlloc::new());

const THREADS: usize = 10_000;
const BATCH: usize = 8;
/// The design's bound on RSS growth for this scenario.
const RSS_LIMIT: usize = 16 << 20;

fn rss_bytes() -> usize {
    let s = std::fs::read_to_string("/proc/self/statm").unwrap();
    let pages: usize = s.split_whitespace().nth(1).unwrap().parse().unwrap();
    // SAFETY: sysconf has no preconditions.
    pages * unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize
}

fn scenario() {
    let before = snapshot(&GLOBAL);
    let rss0 = rss_bytes();
    let mut kept = Vec::new();
    for batch in 0..THREADS / BATCH {
        let hs: Vec<_> = (0..BATCH)
            .map(|i| {
                std::thread::spawn(move || {
                    let seed = (batch + i) as u8;
                    let tmp: Vec<Vec<u8>> = (0..16).map(|k| pattern(8 + k * 24, seed)).collect();
                    for v in &tmp {
                        check_pattern(v, seed);
                    }
                    (pattern(40, seed), seed)
                })
            })
            .collect();
        for h in hs {
            kept.push(h.join().unwrap());
        }
        if kept.len() > 256 {
            for (v, s) in kept.drain(..) {
                check_pattern(&v, s);
            }
        }
    }
    for (v, s) in kept.drain(..) {
        check_pattern(&v, s);
    }
    drop(kept);
    let grown = rss_bytes().saturating_sub(rss0);
    assert_no_leak(&GLOBAL, &before);
    println!("RSS growth after {THREADS} threads: {} KiB", grown >> 10);
    assert!(grown <= RSS_LIMIT, "RSS grew by {grown} bytes");
}

fn main() {
    run("short_lived_threads", scenario);
}
