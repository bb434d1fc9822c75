//! Model test: random operation sequences against `BTreeMap`, with tiny leaves so splits,
//! window rebalances, appends, growth and shrinking all happen within a few operations.
#![cfg(not(loom))]

use cob_tree::{CobTree, MIN_LEAF_CAPACITY};

/// Leaves longer than this hold more than a whole 1 KiB leaf of `u64` pairs.
const RANGE_CHUNK: usize = 64;
use proptest::prelude::*;
use std::collections::BTreeMap;
use std::ops::Bound;

#[derive(Debug, Clone)]
enum Op {
    Insert(u16, u32),
    Get(u16),
    Remove(u16),
    Range(Bound<u16>, Bound<u16>),
    Iter,
    Clear,
    First,
    Last,
    Append(u8),
    GetOrInsert(u16, u32),
    InsertIf(u16, u32, u32),
    Update(u16, u32),
    PopFirst,
    PopLast,
    RemoveEntry(u16),
    Retain(u32),
    LowerBound(Bound<u16>),
    UpperBound(Bound<u16>),
    RangeBack(Bound<u16>, Bound<u16>, u8),
    SplitAppend(u16),
    Keys,
}

fn bound() -> impl Strategy<Value = Bound<u16>> {
    prop_oneof![
        Just(Bound::Unbounded),
        (0u16..600).prop_map(Bound::Included),
        (0u16..600).prop_map(Bound::Excluded),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        30 => (0u16..600, any::<u32>()).prop_map(|(k, v)| Op::Insert(k, v)),
        10 => (0u16..600).prop_map(Op::Get),
        20 => (0u16..600).prop_map(Op::Remove),
        5 => (bound(), bound()).prop_map(|(a, b)| Op::Range(a, b)),
        2 => Just(Op::Iter),
        1 => Just(Op::Clear),
        2 => Just(Op::First),
        2 => Just(Op::Last),
        3 => (1u8..40).prop_map(Op::Append),
        4 => (0u16..600, any::<u32>()).prop_map(|(k, v)| Op::GetOrInsert(k, v)),
        4 => (0u16..600, any::<u32>(), any::<u32>()).prop_map(|(k, v, t)| Op::InsertIf(k, v, t)),
        4 => (0u16..600, any::<u32>()).prop_map(|(k, d)| Op::Update(k, d)),
        3 => Just(Op::PopFirst),
        3 => Just(Op::PopLast),
        3 => (0u16..600).prop_map(Op::RemoveEntry),
        1 => (2u32..9).prop_map(Op::Retain),
        2 => bound().prop_map(Op::LowerBound),
        2 => bound().prop_map(Op::UpperBound),
        3 => (bound(), bound(), any::<u8>()).prop_map(|(a, b, m)| Op::RangeBack(a, b, m)),
        1 => (0u16..600).prop_map(Op::SplitAppend),
        1 => Just(Op::Keys),
    ]
}

/// Whether `CobTree::range` accepts the bounds (start <= end); `BTreeMap::range` also
/// rejects `(Excluded(x), Excluded(x))`, which for `CobTree` is an empty range.
fn valid(a: &Bound<u16>, b: &Bound<u16>) -> bool {
    use Bound::*;
    match (a, b) {
        (Included(s) | Excluded(s), Included(e) | Excluded(e)) => s <= e,
        _ => true,
    }
}

/// `BTreeMap::range`, with `(Excluded(x), Excluded(x))` as an empty range.
fn model_range(m: &BTreeMap<u16, u32>, a: Bound<u16>, b: Bound<u16>) -> Vec<(u16, u32)> {
    if let (Bound::Excluded(s), Bound::Excluded(e)) = (a, b)
        && s == e
    {
        return Vec::new();
    }
    m.range((a, b)).map(|(k, v)| (*k, *v)).collect()
}

fn run(cap: usize, ops: Vec<Op>) {
    let t: CobTree<u16, u32> = CobTree::with_leaf_capacity(cap);
    let mut m = BTreeMap::new();
    for op in ops {
        match op {
            Op::Insert(k, v) => assert_eq!(t.insert(k, v), m.insert(k, v), "insert {k}"),
            Op::Get(k) => {
                assert_eq!(t.get(&k), m.get(&k).copied(), "get {k}");
                assert_eq!(t.contains_key(&k), m.contains_key(&k));
            }
            Op::Remove(k) => assert_eq!(t.remove(&k), m.remove(&k), "remove {k}"),
            Op::Range(a, b) => {
                if valid(&a, &b) {
                    let got: Vec<_> = t.range((a, b)).collect();
                    let want = model_range(&m, a, b);
                    assert_eq!(got, want, "range {a:?}..{b:?}");
                    // Internal iteration (`fold`) walks the same elements.
                    let folded = t.range((a, b)).fold(Vec::new(), |mut v, e| {
                        v.push(e);
                        v
                    });
                    assert_eq!(folded, want, "fold over range {a:?}..{b:?}");
                }
            }
            Op::Iter => {
                let got: Vec<_> = t.iter().collect();
                let want: Vec<_> = m.iter().map(|(k, v)| (*k, *v)).collect();
                assert_eq!(got, want);
            }
            Op::Clear => {
                t.clear();
                m.clear();
            }
            Op::First => assert_eq!(
                t.first_key_value(),
                m.first_key_value().map(|(k, v)| (*k, *v))
            ),
            Op::Last => assert_eq!(
                t.last_key_value(),
                m.last_key_value().map(|(k, v)| (*k, *v))
            ),
            Op::Append(n) => {
                let start = m.last_key_value().map_or(0, |(k, _)| *k + 1);
                for k in start..(start + u16::from(n)).min(600) {
                    assert_eq!(t.insert(k, u32::from(k)), m.insert(k, u32::from(k)));
                }
            }
            Op::GetOrInsert(k, v) => {
                let want = *m.entry(k).or_insert(v);
                if k % 2 == 0 {
                    assert_eq!(t.get_or_insert(k, v), want, "get_or_insert {k}");
                } else {
                    assert_eq!(
                        t.get_or_insert_with(k, || v),
                        want,
                        "get_or_insert_with {k}"
                    );
                }
            }
            Op::InsertIf(k, v, th) => {
                // Replace only values below the threshold.
                let want = match m.get(&k) {
                    Some(&o) if o >= th => Err(o),
                    old => {
                        let old = old.copied();
                        m.insert(k, v);
                        Ok(old)
                    }
                };
                if th % 2 == 0 {
                    assert_eq!(t.insert_if(k, v, |o| *o < th), want, "insert_if {k}");
                } else {
                    let now = t.compare_insert(k, v, |o| *o < th);
                    assert_eq!(now, want.map_or_else(|o| o, |_| v), "compare_insert {k}");
                }
            }
            Op::Update(k, d) => {
                let want = m.get_mut(&k).map(|o| {
                    *o = o.wrapping_add(d);
                    *o
                });
                assert_eq!(t.update(&k, |o| o.wrapping_add(d)), want, "update {k}");
            }
            Op::PopFirst => assert_eq!(t.pop_first(), m.pop_first(), "pop_first"),
            Op::PopLast => assert_eq!(t.pop_last(), m.pop_last(), "pop_last"),
            Op::RemoveEntry(k) => {
                assert_eq!(t.remove_entry(&k), m.remove_entry(&k), "remove_entry {k}");
                assert_eq!(
                    t.get_key_value(&k),
                    m.get_key_value(&k).map(|(a, b)| (*a, *b))
                );
            }
            Op::Retain(d) => {
                t.retain(|k, v| (u32::from(*k) + v) % d != 0);
                m.retain(|k, v| (u32::from(*k) + *v) % d != 0);
            }
            Op::LowerBound(b) => {
                let want = m.range((b, Bound::Unbounded)).next().map(|(k, v)| (*k, *v));
                assert_eq!(t.lower_bound(b.as_ref()), want, "lower_bound {b:?}");
            }
            Op::UpperBound(b) => {
                let want = m
                    .range((Bound::Unbounded, b))
                    .next_back()
                    .map(|(k, v)| (*k, *v));
                assert_eq!(t.upper_bound(b.as_ref()), want, "upper_bound {b:?}");
            }
            Op::RangeBack(a, b, mask) => {
                if valid(&a, &b) {
                    let want = model_range(&m, a, b);
                    let rev: Vec<_> = t.range((a, b)).rev().collect();
                    assert!(rev.iter().eq(want.iter().rev()), "rev range {a:?}..{b:?}");
                    // Both ends at once, in the order the mask's bits say: they meet exactly.
                    let mut it = t.range((a, b));
                    let (mut front, mut back) = (Vec::new(), Vec::new());
                    for i in 0.. {
                        let e = if (mask >> (i % 8)) & 1 == 0 {
                            it.next()
                        } else {
                            it.next_back()
                        };
                        let Some(e) = e else { break };
                        if (mask >> (i % 8)) & 1 == 0 {
                            front.push(e)
                        } else {
                            back.push(e)
                        }
                    }
                    assert_eq!(it.next(), None);
                    assert_eq!(it.next_back(), None);
                    front.extend(back.into_iter().rev());
                    assert_eq!(front, want, "both ends of {a:?}..{b:?}, mask {mask:#x}");
                }
            }
            Op::SplitAppend(k) => {
                let hi = t.split_off(&k);
                let mhi = m.split_off(&k);
                assert!(
                    hi.iter().eq(mhi.iter().map(|(a, b)| (*a, *b))),
                    "split_off {k}"
                );
                assert_eq!(hi.len(), mhi.len());
                assert!(t.iter().eq(m.iter().map(|(a, b)| (*a, *b))));
                t.append(&hi);
                m.extend(mhi);
                assert!(hi.is_empty());
            }
            Op::Keys => {
                assert!(t.keys().eq(m.keys().copied()));
                assert!(t.values().rev().eq(m.values().rev().copied()));
                let c = t.clone();
                assert!(c == t);
                assert!(c.clone().into_iter().eq(m.clone()));
                assert!(c.clone().into_iter().rev().eq(m.clone().into_iter().rev()));
                assert_eq!(c.clone().into_iter().len(), m.len());
                assert!(c.clone().into_keys().eq(m.keys().copied()));
                assert!(c.into_values().rev().eq(m.values().rev().copied()));
                let mut e: CobTree<u16, u32> = CobTree::with_leaf_capacity(cap);
                e.extend(m.iter());
                assert!(e == t);
                let h = |x: &dyn Fn(&mut std::collections::hash_map::DefaultHasher)| {
                    let mut s = std::collections::hash_map::DefaultHasher::new();
                    x(&mut s);
                    std::hash::Hasher::finish(&s)
                };
                use std::hash::Hash;
                assert_eq!(h(&|s| e.hash(s)), h(&|s| t.hash(s)));
            }
        }
        assert_eq!(t.len(), m.len());
        assert_eq!(t.is_empty(), m.is_empty());
    }
    let got: Vec<_> = t.iter().collect();
    let want: Vec<_> = m.iter().map(|(k, v)| (*k, *v)).collect();
    assert_eq!(got, want);
}

/// Three cases under Miri (about 20 s each there); `cargo test` runs 96.
fn cases() -> u32 {
    if cfg!(miri) { 3 } else { 96 }
}

fn max_ops() -> usize {
    if cfg!(miri) { 60 } else { 600 }
}

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: cases(),
        // Miri isolates the file system: no regression files there.
        failure_persistence: if cfg!(miri) {
            None
        } else {
            ProptestConfig::default().failure_persistence
        },
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn matches_btreemap(cap in MIN_LEAF_CAPACITY..9usize, ops in prop::collection::vec(op(), 0..max_ops())) {
        run(cap, ops);
    }

    /// Leaves bigger than a range iterator's chunk: ranges read a leaf in several runs.
    #[test]
    fn matches_btreemap_with_leaves_past_the_range_chunk(
        cap in RANGE_CHUNK + 1..2 * RANGE_CHUNK + 3,
        ops in prop::collection::vec(op(), 0..max_ops() * if cfg!(miri) { 1 } else { 2 }),
    ) {
        run(cap, ops);
    }
}

#[test]
fn ranges_over_leaves_longer_than_a_chunk() {
    let n: u32 = if cfg!(miri) {
        3 * RANGE_CHUNK as u32
    } else {
        5_000
    };
    let t: CobTree<u32, ()> = CobTree::with_leaf_capacity(3 * RANGE_CHUNK);
    let m: BTreeMap<u32, ()> = (0..n).map(|k| (k * 2, ())).collect();
    for &k in m.keys() {
        t.insert(k, ());
    }
    assert!(t.iter().eq(m.iter().map(|(k, v)| (*k, *v))));
    assert_eq!(
        t.iter().map(|(k, _)| u64::from(k)).sum::<u64>(),
        m.keys().map(|&k| u64::from(k)).sum()
    );
    for a in (0..2 * n).step_by(if cfg!(miri) { 41 } else { 7 }) {
        let got: Vec<_> = t.range(a..).take(150).collect();
        let want: Vec<_> = m.range(a..).take(150).map(|(k, v)| (*k, *v)).collect();
        assert_eq!(got, want, "range {a}..");
        let got: Vec<_> = t
            .range((Bound::Excluded(a), Bound::Included(a + 300)))
            .collect();
        let want: Vec<_> = m
            .range((Bound::Excluded(a), Bound::Included(a + 300)))
            .map(|(k, v)| (*k, *v))
            .collect();
        assert_eq!(got, want, "range ({a}, {}]", a + 300);
    }
}

#[test]
fn grows_and_shrinks_in_order() {
    let n: u32 = if cfg!(miri) { 300 } else { 20_000 };
    let t: CobTree<u32, u32> = CobTree::with_leaf_capacity(4);
    for k in 0..n {
        assert_eq!(t.insert(k, k * 2), None);
    }
    assert_eq!(t.len(), n as usize);
    assert!(t.iter().eq((0..n).map(|k| (k, k * 2))));
    for k in (0..n).rev().step_by(3) {
        assert_eq!(t.remove(&k), Some(k * 2));
    }
    for k in 0..n {
        assert_eq!(
            t.get(&k),
            (!(n - 1 - k).is_multiple_of(3)).then_some(k * 2),
            "key {k}"
        );
    }
    for k in 0..n {
        t.remove(&k);
    }
    assert!(t.is_empty());
    assert_eq!(t.iter().next(), None);
    assert_eq!(t.first_key_value(), None);
}

#[test]
fn random_order_default_leaves() {
    let n: u64 = if cfg!(miri) { 200 } else { 50_000 };
    let t: CobTree<u64, u64> = CobTree::new();
    let mut x = 0x9e3779b97f4a7c15u64;
    let mut m = BTreeMap::new();
    for _ in 0..n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let k = x % (n * 4);
        assert_eq!(t.insert(k, x), m.insert(k, x));
    }
    assert_eq!(t.len(), m.len());
    assert!(t.iter().eq(m.iter().map(|(k, v)| (*k, *v))));
    let r: Vec<_> = t.range(n..n * 2).collect();
    let w: Vec<_> = m.range(n..n * 2).map(|(k, v)| (*k, *v)).collect();
    assert_eq!(r, w);
}

#[test]
fn other_key_types() {
    let m: u8 = if cfg!(miri) { 20 } else { 100 };
    let t: CobTree<[u8; 12], i128> = (0..m).map(|i| ([i; 12], -(i as i128))).collect();
    assert_eq!(t.get(&[7; 12]), Some(-7));
    assert_eq!(t.last_key_value(), Some(([m - 1; 12], -i128::from(m - 1))));
    let s: CobTree<i64, ()> = [5i64, -3, 9].into_iter().map(|k| (k, ())).collect();
    assert_eq!(s.iter().map(|(k, _)| k).collect::<Vec<_>>(), vec![-3, 5, 9]);
    let n: u64 = if cfg!(miri) { 50 } else { 1000 };
    let mut big = CobTree::<u64, u64>::with_capacity(10 * n as usize);
    big.extend((0..n).map(|k| (k, k)));
    assert_eq!(big.len(), n as usize);
    assert_eq!(
        format!("{:?}", CobTree::<u8, u8>::from_iter([(1, 2)])),
        "{1: 2}"
    );
    assert!(CobTree::<u8, u8>::default().is_empty());
}

#[test]
#[should_panic(expected = "range start is greater than range end")]
fn bad_range_panics() {
    let t: CobTree<u64, u64> = CobTree::new();
    let (a, b) = (5, 3);
    let _ = t.range(a..b);
}

#[test]
#[should_panic(expected = "leaf capacity")]
fn bad_leaf_capacity_panics() {
    let _ = CobTree::<u64, u64>::with_leaf_capacity(1);
}

/// The pair, `bool` and `char` types: random inserts, removes, gets and ranges against
/// `BTreeMap` with tiny leaves (splits, rebalances, growth and shrinking), keys `(u8, u16)`
/// ordered as tuples, values `(char, bool)`.
#[test]
fn pair_keys_match_btreemap() {
    let ops = if cfg!(miri) { 100 } else { 20_000 };
    let t: CobTree<(u8, u16), (char, bool)> = CobTree::with_leaf_capacity(4);
    let mut m = BTreeMap::new();
    let mut x = 0x9e37_79b9_7f4a_7c15_u64;
    for i in 0..ops {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let k = ((x % 7) as u8, ((x >> 8) % 300) as u16);
        let v = (char::from_u32(0x61 + (i % 26) as u32).unwrap(), x & 1 == 0);
        match (x >> 32) % 8 {
            0..=3 if (i / 2_000) % 3 != 2 => assert_eq!(t.insert(k, v), m.insert(k, v)),
            0..=4 => assert_eq!(t.remove(&k), m.remove(&k)),
            5 => assert_eq!(t.get(&k), m.get(&k).copied()),
            6 => {
                let hi = (k.0.saturating_add(1), k.1);
                let got: Vec<_> = t.range(k..hi).collect();
                let want: Vec<_> = m.range(k..hi).map(|(a, b)| (*a, *b)).collect();
                assert_eq!(got, want, "range {k:?}..{hi:?}");
            }
            _ => {
                let got: Vec<_> = t.range(..=k).rev().take(5).collect();
                let want: Vec<_> = m.range(..=k).rev().take(5).map(|(a, b)| (*a, *b)).collect();
                assert_eq!(got, want, "..={k:?} backwards");
            }
        }
        assert_eq!(t.len(), m.len());
    }
    assert!(t.iter().eq(m.iter().map(|(k, v)| (*k, *v))));
    assert_eq!(
        t.last_key_value(),
        m.last_key_value().map(|(k, v)| (*k, *v))
    );
    let set: CobTree<char, ()> = "hello".chars().map(|c| (c, ())).collect();
    assert_eq!(set.keys().collect::<String>(), "ehlo");
    let flags: CobTree<bool, u8> = [(true, 1), (false, 0)].into_iter().collect();
    assert_eq!(flags.first_key_value(), Some((false, 0)));
}
