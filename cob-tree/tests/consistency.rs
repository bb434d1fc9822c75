//! The iterator rule, checked exactly: one thread interleaves `next` / `next_back` of one
//! iterator with inserts and removes on the same map (every method takes `&self`), so
//! "removed before the iterator reached the key" is unambiguous. A yielded key must be
//! present at that moment; every key present from the iterator's creation to its end is
//! yielded exactly once; the front yields increasing keys, the back decreasing ones, and
//! the two never overlap. Removing keys just ahead of the front, inside the run it is
//! reading, is what a copy taken ahead (or a run validated once and not re-checked) gets
//! wrong.

use cob_tree::CobTree;
use proptest::prelude::*;
use std::collections::{BTreeMap, BTreeSet};

#[derive(Clone, Debug)]
enum Op {
    Next,
    NextBack,
    Insert(u16),
    Remove(u16),
    /// Removes the key just after the last one the front yielded (in the model).
    RemoveAhead,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => Just(Op::Next),
        2 => Just(Op::NextBack),
        2 => (0u16..400).prop_map(Op::Insert),
        2 => (0u16..400).prop_map(Op::Remove),
        2 => Just(Op::RemoveAhead),
    ]
}

fn run(cap: usize, start: Vec<u16>, ops: Vec<Op>, lo: u16, hi: u16) {
    let t: CobTree<u16, u32> = CobTree::with_leaf_capacity(cap);
    let mut m = BTreeMap::new();
    for k in start {
        t.insert(k, u32::from(k) * 3);
        m.insert(k, u32::from(k) * 3);
    }
    // Keys present throughout: those present now and never touched later.
    let mut touched = BTreeSet::new();
    let initial: BTreeSet<u16> = m.keys().copied().filter(|k| (lo..hi).contains(k)).collect();
    let mut it = t.range(lo..hi);
    let (mut front, mut back): (Option<u16>, Option<u16>) = (None, None);
    let mut seen = BTreeSet::new();
    let mut done = false;
    let check = |k: u16, v: u32, m: &BTreeMap<u16, u32>, seen: &mut BTreeSet<u16>| {
        assert!((lo..hi).contains(&k), "{k} outside {lo}..{hi}");
        assert_eq!(
            m.get(&k),
            Some(&v),
            "yielded {k} -> {v}, which is not in the map now"
        );
        assert!(seen.insert(k), "{k} yielded twice");
    };
    for op in ops {
        match op {
            // Not fused: a `None` ends nothing; later calls may find later inserts.
            Op::Next => {
                if let Some((k, v)) = it.next() {
                    check(k, v, &m, &mut seen);
                    assert!(front.is_none_or(|f| k > f), "front went back to {k}");
                    assert!(back.is_none_or(|b| k < b), "front passed the back at {k}");
                    front = Some(k);
                }
            }
            Op::NextBack => {
                if let Some((k, v)) = it.next_back() {
                    check(k, v, &m, &mut seen);
                    assert!(back.is_none_or(|b| k < b), "back went forward to {k}");
                    assert!(front.is_none_or(|f| k > f), "back passed the front at {k}");
                    back = Some(k);
                }
            }
            Op::Insert(k) => {
                touched.insert(k);
                assert_eq!(t.insert(k, u32::from(k) * 5), m.insert(k, u32::from(k) * 5));
            }
            Op::Remove(k) => {
                touched.insert(k);
                assert_eq!(t.remove(&k), m.remove(&k));
            }
            Op::RemoveAhead => {
                let from = front.map_or(lo, |f| f.saturating_add(1));
                if let Some((&k, _)) = m.range(from..).next() {
                    touched.insert(k);
                    assert_eq!(t.remove(&k), m.remove(&k));
                }
            }
        }
    }
    // Drain both ways alternately.
    let mut flip = false;
    while !done {
        flip = !flip;
        let e = if flip { it.next() } else { it.next_back() };
        match e {
            Some((k, v)) => {
                check(k, v, &m, &mut seen);
                if flip {
                    assert!(front.is_none_or(|f| k > f) && back.is_none_or(|b| k < b));
                    front = Some(k);
                } else {
                    assert!(back.is_none_or(|b| k < b) && front.is_none_or(|f| k > f));
                    back = Some(k);
                }
            }
            None => done = true,
        }
    }
    for k in initial.difference(&touched) {
        assert!(
            seen.contains(k),
            "{k} was present throughout but not yielded"
        );
    }
}

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: if cfg!(miri) { 4 } else { 256 },
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn iterators_never_yield_removed_keys(
        cap in prop_oneof![Just(4usize), Just(7), Just(62)],
        start in prop::collection::vec(0u16..400, 0..if cfg!(miri) { 80 } else { 300 }),
        ops in prop::collection::vec(op(), 0..if cfg!(miri) { 60 } else { 200 }),
        lo in 0u16..100,
        len in 0u16..400,
    ) {
        run(cap, start, ops, lo, lo.saturating_add(len));
    }
}

/// A `String` key of `k`: even `k` a prefix of its own (a one-entry bucket), odd `k` in
/// groups of three sharing their first 8 bytes (buckets of several entries).
fn skey(k: u16) -> String {
    if k.is_multiple_of(2) {
        format!("k{k:04}")
    } else {
        format!("s{:07}{}", k / 6, k % 6)
    }
}

/// The borrowing view's internal iteration (`fold`, a tight loop over the core's runs that
/// reads only the cell numbers) with the map changed from inside the closure, one op per
/// element: keys present throughout are yielded once, in order; a key with a bucket of its
/// own is present when it is yielded (one that shares its bucket may be yielded from the
/// bucket as it was when the bucket was reached). Small leaves, so the changes split
/// leaves, move runs and grow or shrink the core under the fold.
fn fold_boxed(cap: usize, start: Vec<u16>, ops: Vec<Op>, range: Option<(u16, u16)>) {
    let t: CobTree<String, u32> = CobTree::with_leaf_capacity(cap);
    let mut m = BTreeMap::new();
    for k in start {
        t.insert(skey(k), u32::from(k));
        m.insert(skey(k), u32::from(k));
    }
    let (lo, hi) = range.map_or((String::new(), "z".to_string()), |(a, b)| {
        let (a, b) = (skey(a), skey(b));
        if a <= b { (a, b) } else { (b, a) }
    });
    let initial: BTreeSet<String> = m
        .range(lo.clone()..hi.clone())
        .map(|(k, _)| k.clone())
        .collect();
    let mut touched = BTreeSet::new();
    let mut ops = ops.into_iter();
    let v = t.pin();
    let step = |mut seen: Vec<String>, e: cob_tree::Entry<'_, String, u32>| {
        let k = e.key().clone();
        assert!(
            seen.last().is_none_or(|l| *l < k),
            "{k} after {:?}",
            seen.last()
        );
        assert!(lo <= k && k < hi, "{k} outside the range");
        if k.starts_with('k') {
            assert_eq!(
                m.get(&k),
                Some(e.value()),
                "yielded {k}, not in the map now"
            );
        }
        match ops.next() {
            Some(Op::Insert(x)) => {
                touched.insert(skey(x));
                assert_eq!(t.insert(skey(x), 7), m.insert(skey(x), 7));
            }
            Some(Op::Remove(x)) => {
                touched.insert(skey(x));
                assert_eq!(t.remove(&skey(x)), m.remove(&skey(x)));
            }
            Some(Op::RemoveAhead) => {
                let ahead = m.range(k.clone()..).nth(1).map(|(a, _)| a.clone());
                if let Some(a) = ahead {
                    touched.insert(a.clone());
                    assert_eq!(t.remove(&a), m.remove(&a));
                }
            }
            _ => {}
        }
        seen.push(k);
        seen
    };
    let seen = match range {
        None => v.iter().fold(Vec::new(), step),
        Some(_) => v.range(lo.clone()..hi.clone()).fold(Vec::new(), step),
    };
    let seen: BTreeSet<String> = seen.into_iter().collect();
    for k in initial.difference(&touched) {
        assert!(
            seen.contains(k),
            "{k} was present throughout but not yielded"
        );
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn boxed_fold_is_weakly_consistent(
        cap in prop_oneof![Just(4usize), Just(7), Just(62)],
        start in prop::collection::vec(0u16..400, 0..if cfg!(miri) { 60 } else { 300 }),
        ops in prop::collection::vec(op(), 0..if cfg!(miri) { 40 } else { 300 }),
        range in prop::option::of((0u16..200, 200u16..400)),
    ) {
        fold_boxed(cap, start, ops, range);
    }
}

/// The case the rule is about, spelled out: the front reads a run of one leaf, and the
/// next key of that run is removed before the next call.
#[test]
fn a_key_removed_ahead_in_the_same_leaf_is_not_yielded() {
    let t: CobTree<u64, u64> = CobTree::new();
    for k in 0..40 {
        t.insert(k, k);
    }
    let mut it = t.iter();
    assert_eq!(it.next(), Some((0, 0)));
    assert_eq!(it.next(), Some((1, 1)));
    assert_eq!(t.remove(&2), Some(2));
    assert_eq!(t.remove(&3), Some(3));
    assert_eq!(it.next(), Some((4, 4)));
    let rest: Vec<u64> = it.map(|(k, _)| k).collect();
    assert_eq!(rest, (5..40).collect::<Vec<_>>());
    // The same from the back, and through `fold` (which walks runs in a tight loop).
    let mut it = t.iter();
    assert_eq!(it.next_back(), Some((39, 39)));
    t.remove(&38);
    assert_eq!(it.next_back(), Some((37, 37)));
    t.remove(&36);
    let keys = it.fold(Vec::new(), |mut v, (k, _)| {
        if k == 10 {
            t.remove(&11);
        }
        v.push(k);
        v
    });
    let want: Vec<u64> = [0, 1].into_iter().chain(4..=10).chain(12..36).collect();
    assert_eq!(keys, want);
}

/// Not fused, as SkipMap's iterators (its own `ordered_iter` test): after `None`, a later
/// call yields what was inserted past the last key since, from either end, and the two
/// ends still never overlap.
fn resumes_after_none<K: Ord + Clone + core::fmt::Debug + 'static>(key: impl Fn(u32) -> K) {
    let t: CobTree<K, u32> = CobTree::new();
    t.insert(key(1), 1);
    let mut it = t.iter();
    assert_eq!(it.next(), Some((key(1), 1)));
    assert_eq!(it.next(), None);
    assert_eq!(it.next(), None);
    t.insert(key(2), 2);
    t.insert(key(0), 0); // behind the front: not yielded by it
    assert_eq!(it.next(), Some((key(2), 2)));
    assert_eq!(it.next(), None);
    for i in 3..=5 {
        t.insert(key(i), i);
    }
    assert_eq!(it.next_back(), Some((key(5), 5)));
    assert_eq!(it.next(), Some((key(3), 3)));
    assert_eq!(it.next_back(), Some((key(4), 4)));
    assert_eq!(it.next(), None);
    assert_eq!(it.next_back(), None);
    // Between the two ends' last keys there is no room left: nothing is yielded twice.
    t.insert(key(4), 40);
    assert_eq!(it.next(), None);
    assert_eq!(it.next_back(), None);
    // A range resumes the same way, within its bounds.
    let mut r = t.range(key(2)..key(9));
    assert_eq!(r.by_ref().count(), 4);
    t.insert(key(8), 8);
    t.insert(key(9), 9);
    assert_eq!(r.next(), Some((key(8), 8)));
    assert_eq!(r.next(), None);
}

#[test]
fn an_exhausted_iterator_resumes_with_later_inserts() {
    resumes_after_none(|i| i as u16);
    resumes_after_none(|i| format!("key{i:04}"));
}
