//! Pacing: a collection is due exactly when the bytes allocated since the last one reach
//! `max(min_debt, live * debt_percent / 100)`. Deterministic allocation sequences (one
//! 128-byte object cell per step, no side state), collection counts checked against a
//! model of the rule and against fixed numbers.

use gc_object::{Heap, OBJECT_CLASS_BYTES, Pacing, Root};

const CELL: u64 = OBJECT_CLASS_BYTES as u64;

/// The steps after which the rule calls for a collection, allocating one cell per step and
/// keeping every `keep`-th (the first one included); 0: keep none.
fn model(steps: u64, keep: u64, p: Pacing) -> Vec<u64> {
    let (mut allocated, mut kept) = (0, 0);
    let mut due = p.debt_allowed(0);
    let mut at = Vec::new();
    for i in 0..steps {
        allocated += CELL;
        if keep != 0 && i % keep == 0 {
            kept += 1;
        }
        if allocated >= due {
            at.push(i);
            due = allocated + p.debt_allowed(kept * CELL);
        }
    }
    at
}

/// The same sequence on a heap, with a short mutator per step and `Heap::collect_if_due`
/// between them; the steps where a collection ran.
fn on_heap(steps: u64, keep: u64, p: Pacing) -> Vec<u64> {
    let mut heap = Heap::new();
    heap.set_pacing(p);
    assert_eq!(heap.pacing(), p);
    let mut roots: Vec<Root> = Vec::new();
    let mut at = Vec::new();
    for i in 0..steps {
        {
            let m = heap.mutator();
            let o = m.object().unwrap();
            if keep != 0 && i % keep == 0 {
                roots.push(heap.root(o).unwrap());
            }
        }
        if let Some(s) = heap.collect_if_due() {
            assert_eq!(s.live_bytes, roots.len() as u64 * CELL, "step {i}");
            assert_eq!(s.marked, roots.len() as u64);
            at.push(i);
        }
    }
    assert_eq!(heap.stats().collections, at.len() as u64);
    at
}

/// The same with a context: one mutator for the whole run, `Context::collect_if_due` after
/// every allocation.
fn in_context(steps: u64, keep: u64, p: Pacing) -> Vec<u64> {
    let mut heap = Heap::new();
    heap.set_pacing(p);
    let mut roots: Vec<Root> = Vec::new();
    let mut at = Vec::new();
    let mut cx = heap.context();
    for i in 0..steps {
        let o = cx.mutator().object().unwrap();
        if keep != 0 && i % keep == 0 {
            roots.push(cx.heap().root(o).unwrap());
        }
        assert_eq!(cx.is_collection_due(), model_due(&at, i, keep, p));
        if let Some(s) = cx.collect_if_due() {
            assert_eq!(s.live_bytes, roots.len() as u64 * CELL, "step {i}");
            at.push(i);
        }
    }
    drop(cx);
    assert_eq!(heap.stats().collections, at.len() as u64);
    at
}

/// Is a collection due after step `i`, given the collections so far?
fn model_due(so_far: &[u64], i: u64, keep: u64, p: Pacing) -> bool {
    let kept_after = |step: u64| step.checked_div(keep).map_or(0, |k| k + 1);
    let due = match so_far.last() {
        None => p.debt_allowed(0),
        Some(&c) => (c + 1) * CELL + p.debt_allowed(kept_after(c) * CELL),
    };
    (i + 1) * CELL >= due
}

#[test]
fn collections_come_exactly_when_the_debt_reaches_the_share_of_live_bytes() {
    let p = Pacing {
        debt_percent: 100,
        min_debt: 64 * 1024,
    };
    let (runs, pace): (&[(u64, u64)], _) = if cfg!(miri) {
        let small = Pacing {
            min_debt: 8 * 1024,
            ..p
        };
        (&[(400, 8), (400, 1)], small)
    } else {
        (&[(20_000, 8), (20_000, 1), (20_000, 0), (5_000, 3)], p)
    };
    for &(steps, keep) in runs {
        let want = model(steps, keep, pace);
        assert!(want.len() >= 3);
        assert_eq!(
            on_heap(steps, keep, pace),
            want,
            "{steps} steps, keep every {keep}"
        );
        assert_eq!(
            in_context(steps, keep, pace),
            want,
            "{steps} steps, keep every {keep}"
        );
    }
    if gc_object::WIDE_OBJECT {
        return; // (the numbers below are for the 128-byte cell)
    }
    // The numbers themselves: garbage only: a collection every 512 cells (64 KiB).
    assert_eq!(model(20_000, 0, p).len(), 39);
    // Keeping everything: the live heap doubles between collections (512, 1024, ...).
    assert_eq!(model(20_000, 1, p), [511, 1023, 2047, 4095, 8191, 16383]);
    // Keeping an eighth: every 512 cells until 512 are kept (64 KiB live, step 4,096),
    // then the debt grows with the live bytes.
    assert_eq!(model(20_000, 8, p).len(), 21);
}

#[test]
fn a_smaller_share_collects_more_often_and_the_floor_bounds_small_heaps() {
    let half = Pacing {
        debt_percent: 50,
        min_debt: if cfg!(miri) { 4 * 1024 } else { 32 * 1024 },
    };
    let steps = if cfg!(miri) { 400 } else { 30_000 };
    let want = model(steps, 1, half);
    assert_eq!(in_context(steps, 1, half), want);
    if cfg!(miri) || gc_object::WIDE_OBJECT {
        return; // (the numbers below are for the 128-byte cell)
    }
    // Live growing with a half share: after two at the 32 KiB floor (256 cells), each
    // collection comes once the live bytes grew by half (768, 1152, 1728, ... cells).
    assert_eq!(want.len(), 12);
    let floor = Pacing {
        debt_percent: 0,
        min_debt: 32 * 1024,
    };
    // 256 cells per collection whatever is live.
    assert_eq!(on_heap(10_000, 2, floor).len(), 39);
}

#[test]
fn side_state_counts_as_debt() {
    // An array's element block: one cell, and 8 bytes per element past the debt allowed.
    let (n, floor) = if cfg!(miri) {
        (1_000u32, 4 * 1024)
    } else {
        (40_000, 256 * 1024)
    };
    let mut heap = Heap::new();
    heap.set_pacing(Pacing {
        debt_percent: 100,
        min_debt: floor,
    });
    let before = heap.stats().heap_bytes;
    {
        let m = heap.mutator();
        let a = m.array().unwrap();
        for i in 0..n {
            a.push(i.into()).unwrap();
        }
    }
    assert!(heap.stats().heap_bytes >= before + 8 * n as usize);
    let s = heap.collect_if_due().expect("the elements are debt");
    assert_eq!(s.freed, 1);
    assert!(heap.collect_if_due().is_none());
}

#[test]
fn new_pacing_applies_from_the_last_collection() {
    let mut heap = Heap::new();
    heap.set_pacing(Pacing {
        debt_percent: 100,
        min_debt: 1 << 30,
    });
    let n: u64 = if cfg!(miri) { 50 } else { 1000 };
    for _ in 0..n {
        heap.mutator().object().unwrap();
        assert!(heap.collect_if_due().is_none());
    }
    // Half of what was allocated since the start (the last collection, none).
    heap.set_pacing(Pacing {
        debt_percent: 100,
        min_debt: n * CELL / 2,
    });
    assert_eq!(heap.collect_if_due().map(|s| s.freed), Some(n));
    assert!(heap.collect_if_due().is_none());
    assert_eq!(Pacing::default(), Pacing::DEFAULT);
}
