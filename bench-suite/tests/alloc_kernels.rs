//! The `alloc` group's kernels and allocators, in their own process: they churn glibc's
//! heap, which must not disturb the exact-size checks of the counting allocator's unit
//! tests.

use std::alloc::{GlobalAlloc, Layout, System};
use std::time::Duration;

use bench_suite::counting::UsableSize;
use bench_suite::groups;
use bench_suite::groups::alloc::kernels::*;
use bench_suite::groups::alloc::select::{ARENA, ARENA_1, Which};
use bench_suite::measure::{Ctx, Instrument, Settings};

#[test]
fn single_thread_kernels_return_their_expected_checksums() {
    assert_eq!(
        pair16::<_, false>(&System, 1000).unwrap().checksum,
        999 * 1000 / 2
    );
    assert_eq!(
        pair16::<_, true>(&System, 1000).unwrap().checksum,
        999 * 1000 / 2
    );
    for size in [8, 100, 4096, 1 << 20] {
        let o = size_pair(&System, size, 300).unwrap();
        assert_eq!(o.checksum, size_pair_expected(300), "{size}");
    }
    assert_eq!(
        seed_loop(&System, 5000, 3).unwrap().checksum,
        seed_loop_expected(5000)
    );
    let o = simple(&System, 16, 100, 3).unwrap();
    assert_eq!((o.ops, o.checksum), (300, 3 * 99 * 100 / 2));
}

#[test]
fn multi_thread_kernels_check_out() {
    let a = Global;
    let o = malloc_test(&a, 3, 2000).unwrap();
    assert_eq!(o.checksum, 3 * seed_loop_expected(2000));
    for threads in [1, 2, 3, 4] {
        let p = Xmalloc {
            blocks_per_producer: 1000,
            batch: 64,
            size: 64,
            queue_cap: 4,
        };
        let o = xmalloc(&a, threads, p).unwrap();
        assert_eq!(o.checksum, xmalloc_expected(threads, 1000), "{threads}");
    }
    let p = Larson {
        chunks: 100,
        min: 8,
        max: 200,
        ops_per_generation: 500,
        generations: 3,
    };
    let (x, y) = (
        larson(&Global, 2, p).unwrap(),
        larson(&Global, 2, p).unwrap(),
    );
    assert_eq!(x, y, "larson is deterministic");
    assert_eq!(x.ops, 2 * 3 * 500);
    assert!(larson(&Global, 1, Larson { min: 4, ..p }).is_err());
    let p = Cache {
        iterations: 10,
        repetitions: 300,
        object_size: 8,
    };
    for scratch in [false, true] {
        let o = cache(&a, 3, p, scratch).unwrap();
        assert_eq!(o.checksum, cache_expected(3, &p));
        // Hoard divides the passes among the threads: 100 each, 8 bytes of 1..=8.
        assert_eq!(o.checksum, 3 * 10 * 100 * 36);
        assert_eq!(o.ops, 3 * 10 * 100);
        let o = cache_inline(&a, p, scratch).unwrap();
        assert_eq!(o.checksum, cache_expected(1, &p));
        assert_eq!(o.ops, 10 * 300);
    }
    let p = Mstress {
        scale: 2,
        rounds: 2,
    };
    assert_eq!(mstress(&a, 3, p).unwrap().ops, mstress_expected(3, &p));
}

#[test]
fn every_target_serves_and_sizes_blocks() {
    // Direct calls (this test binary's global allocator is the default one).
    fn probe<A: GlobalAlloc>(a: &A, usable: impl Fn(*mut u8, Layout) -> usize) {
        for (size, align) in [(1, 1), (16, 8), (100, 16), (4096, 64), (1 << 20, 4096)] {
            let l = Layout::from_size_align(size, align).unwrap();
            // SAFETY: `l` has a non-zero size.
            let p = unsafe { a.alloc(l) };
            assert!(
                !p.is_null() && (p as usize).is_multiple_of(align),
                "{size}/{align}"
            );
            // SAFETY: `p` is a fresh block of `size` bytes.
            unsafe { p.write_bytes(0xa5, size) };
            assert!(usable(p, l) >= size, "{size}/{align}");
            // SAFETY: `p` was allocated by `a` with `l`.
            unsafe { a.dealloc(p, l) };
        }
    }
    // Each closure is called only on live blocks of its allocator.
    // SAFETY: see above.
    probe(&System, |p, l| unsafe { System.usable_size(p, l) });
    // SAFETY: see above.
    probe(&ARENA, |p, _| unsafe { ARENA.usable_size(p) });
    // SAFETY: see above.
    probe(&ARENA_1, |p, _| unsafe { ARENA_1.usable_size(p) });
    // SAFETY: see above.
    probe(&mimalloc::MiMalloc, |p, _| unsafe {
        mimalloc::MiMalloc.usable_size(p)
    });
    // SAFETY: see above.
    probe(&tikv_jemallocator::Jemalloc, |p, _| unsafe {
        tikv_jemallocator::usable_size(p)
    });
}

#[test]
fn the_group_times_the_pair_for_every_allocator() {
    let mut settings = Settings::new(false);
    settings.samples = 1;
    settings.min_sample_time = Duration::from_micros(1);
    settings.instruments = vec![Instrument::Time];
    settings.filter = Some("alloc+free 16 B /".into());
    let mut results = Vec::new();
    let group = groups::all()
        .into_iter()
        .find(|g| g.name == "alloc")
        .unwrap();
    let mut ctx = Ctx::new(&settings, "alloc", &mut results, None);
    (group.run)(&mut ctx).unwrap();
    let names: Vec<&str> = results.iter().map(|m| m.implementation.as_str()).collect();
    let want: Vec<&str> = Which::ALL.iter().map(|w| w.label()).collect();
    assert_eq!(names, want);
    assert!(results.iter().all(|m| m.stats.median > 0.0));
}

/// An allocator whose `alloc_zeroed` does not zero: mstress must say so.
struct Unzeroed;

// SAFETY: forwards to `System`; `alloc_zeroed` returns a valid (if not zeroed) block.
unsafe impl GlobalAlloc for Unzeroed {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        // SAFETY: forwarded.
        unsafe { System.alloc(l) }
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        // SAFETY: forwarded.
        let p = unsafe { System.alloc(l) };
        if !p.is_null() {
            // SAFETY: `p` holds `l.size()` bytes.
            unsafe { p.write_bytes(0xa5, l.size()) };
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        // SAFETY: forwarded.
        unsafe { System.dealloc(p, l) }
    }
}

#[test]
fn mstress_rejects_a_calloc_that_does_not_zero() {
    let p = Mstress {
        scale: 1,
        rounds: 1,
    };
    let e = mstress(&Unzeroed, 1, p).unwrap_err();
    assert!(e.contains("alloc_zeroed"), "{e}");
}
