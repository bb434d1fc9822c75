//! Model tests: random sequences of every mutator against `String`, for `LeanString`
//! (compact and forced-wide), `LeanStr` and `LeanCString`. Sequences cross the inline/heap
//! boundary both ways, take clones in the middle (clone-on-write) and start from static
//! strings.

use lean_string::{HeaderPolicy, LeanCString, LeanStr, LeanStringWith};
use proptest::prelude::*;

const STATICS: [&str; 4] = [
    "",
    "short",
    "exactly sixteen!",
    "a static string well past the inline limit",
];

/// Fewer cases under Miri, and no failure-persistence file (Miri isolates the filesystem).
fn config() -> ProptestConfig {
    let mut c = ProptestConfig::with_cases(if cfg!(miri) { 2 } else { 192 });
    if cfg!(miri) {
        c.failure_persistence = None;
    }
    c
}

fn text() -> impl Strategy<Value = String> {
    // ASCII and 2-, 3- and 4-byte chars, so boundaries land inside chars too, and NUL
    // (an ordinary char for `LeanString`, rejected by `LeanCString`).
    proptest::string::string_regex("[a-z\u{e9}\u{20ac}\u{1f600}\x00]{0,12}").unwrap()
}

#[derive(Debug, Clone)]
enum Op {
    Push(char),
    PushStr(String),
    Pop,
    Truncate(usize),
    Remove(usize),
    Insert(usize, char),
    InsertStr(usize, String),
    Retain(u32),
    Clear,
    Reserve(usize),
    ShrinkToFit,
    ShrinkTo(usize),
    SplitOff(usize),
    Repeat(usize),
    Clone,
    DropClone(usize),
    Static(usize),
    // The lean_string 0.8 and compact_str additions.
    ReserveExact(usize),
    ExtendFromWithin(usize, usize),
    ReplaceRange(usize, usize, String),
    AsciiCase(bool),
    ToAsciiCase(bool),
    ToCase(bool),
    Drain(usize, usize),
    MutStr,
    RetainPanics(u32, usize),
}

fn op() -> impl Strategy<Value = Op> {
    let ch = prop_oneof![
        Just('x'),
        Just('\u{e9}'),
        Just('\u{20ac}'),
        Just('\u{1f600}'),
        Just('\0'),
        any::<char>()
    ];
    prop_oneof![
        3 => ch.clone().prop_map(Op::Push),
        4 => text().prop_map(Op::PushStr),
        2 => Just(Op::Pop),
        2 => any::<usize>().prop_map(Op::Truncate),
        1 => any::<usize>().prop_map(Op::Remove),
        1 => (any::<usize>(), ch).prop_map(|(i, c)| Op::Insert(i, c)),
        2 => (any::<usize>(), text()).prop_map(|(i, s)| Op::InsertStr(i, s)),
        1 => (2u32..5).prop_map(Op::Retain),
        1 => Just(Op::Clear),
        1 => (0usize..40).prop_map(Op::Reserve),
        1 => Just(Op::ShrinkToFit),
        1 => (0usize..40).prop_map(Op::ShrinkTo),
        1 => any::<usize>().prop_map(Op::SplitOff),
        1 => (0usize..4).prop_map(Op::Repeat),
        3 => Just(Op::Clone),
        1 => any::<usize>().prop_map(Op::DropClone),
        1 => (0usize..STATICS.len()).prop_map(Op::Static),
        1 => (0usize..40).prop_map(Op::ReserveExact),
        2 => (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Op::ExtendFromWithin(a, b)),
        2 => (any::<usize>(), any::<usize>(), text()).prop_map(|(a, b, t)| Op::ReplaceRange(a, b, t)),
        1 => any::<bool>().prop_map(Op::AsciiCase),
        1 => any::<bool>().prop_map(Op::ToAsciiCase),
        1 => any::<bool>().prop_map(Op::ToCase),
        1 => (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Op::Drain(a, b)),
        1 => Just(Op::MutStr),
        1 => (2u32..5, 0usize..6).prop_map(|(k, n)| Op::RetainPanics(k, n)),
    ]
}

/// Operations per sequence (shorter under Miri, which is ~1000x slower).
const MAX_OPS: usize = if cfg!(miri) { 12 } else { 40 };

/// Two char boundaries of `s`, in order.
fn range(s: &str, a: usize, b: usize) -> std::ops::Range<usize> {
    let (a, b) = (boundary(s, a), boundary(s, b));
    a.min(b)..a.max(b)
}

/// Runs `retain` with a predicate that panics on its `n`-th call, catching the panic.
fn retain_panicking(k: u32, n: usize, retain: impl FnOnce(&mut dyn FnMut(char) -> bool)) {
    let mut calls = 0;
    let mut f = |c: char| {
        calls += 1;
        if calls > n {
            panic!("predicate panics");
        }
        !(c as u32).is_multiple_of(k)
    };
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| retain(&mut f)));
}

/// A char boundary of `s` picked by `raw`.
fn boundary(s: &str, raw: usize) -> usize {
    let b: Vec<usize> = s.char_indices().map(|(i, _)| i).chain([s.len()]).collect();
    b[raw % b.len()]
}

fn run_string<L: HeaderPolicy>(start: &str, ops: &[Op]) {
    let mut s = LeanStringWith::<L>::from(start);
    let mut m = String::from(start);
    let mut clones: Vec<(LeanStringWith<L>, String)> = Vec::new();
    for op in ops {
        match op.clone() {
            Op::Push(c) => {
                s.push(c);
                m.push(c);
            }
            Op::PushStr(t) => {
                s.push_str(&t);
                m.push_str(&t);
            }
            Op::Pop => assert_eq!(s.pop(), m.pop()),
            Op::Truncate(i) => {
                let i = boundary(&m, i);
                s.truncate(i);
                m.truncate(i);
            }
            Op::Remove(i) => {
                if !m.is_empty() {
                    let starts: Vec<usize> = m.char_indices().map(|(i, _)| i).collect();
                    let i = starts[i % starts.len()];
                    assert_eq!(s.remove(i), m.remove(i));
                }
            }
            Op::Insert(i, c) => {
                let i = boundary(&m, i);
                s.insert(i, c);
                m.insert(i, c);
            }
            Op::InsertStr(i, t) => {
                let i = boundary(&m, i);
                s.insert_str(i, &t);
                m.insert_str(i, &t);
            }
            Op::Retain(k) => {
                let f = |c: char| !(c as u32).is_multiple_of(k);
                s.retain(f);
                m.retain(f);
            }
            Op::Clear => {
                s.clear();
                m.clear();
            }
            Op::Reserve(n) => {
                s.reserve(n);
                assert!(s.capacity() >= m.len() + n);
            }
            Op::ShrinkToFit => s.shrink_to_fit(),
            Op::ShrinkTo(n) => s.shrink_to(n),
            Op::SplitOff(i) => {
                let i = boundary(&m, i);
                assert_eq!(s.split_off(i), m.split_off(i));
            }
            Op::Repeat(n) => {
                s = s.repeat(n);
                m = m.repeat(n);
            }
            Op::Clone => clones.push((s.clone(), m.clone())),
            Op::DropClone(i) => {
                if !clones.is_empty() {
                    clones.remove(i % clones.len());
                }
            }
            Op::Static(i) => {
                s = LeanStringWith::<L>::from_static_str(STATICS[i]);
                m = String::from(STATICS[i]);
            }
            Op::ReserveExact(n) => {
                let before = s.capacity();
                s.reserve_exact(n);
                assert!(s.capacity() >= m.len() + n);
                if s.is_heap_allocated() && before < m.len() + n {
                    assert_eq!(
                        s.capacity(),
                        (m.len() + n).max(lean_string::INLINE_CAPACITY)
                    );
                }
            }
            Op::ExtendFromWithin(a, b) => {
                let r = range(&m, a, b);
                s.extend_from_within(r.clone());
                m.extend_from_within(r);
            }
            Op::ReplaceRange(a, b, t) => {
                let r = range(&m, a, b);
                s.replace_range(r.clone(), &t);
                m.replace_range(r, &t);
            }
            Op::AsciiCase(upper) => {
                if upper {
                    s.make_ascii_uppercase();
                    m.make_ascii_uppercase();
                } else {
                    s.make_ascii_lowercase();
                    m.make_ascii_lowercase();
                }
            }
            Op::ToAsciiCase(upper) => {
                if upper {
                    s = s.to_ascii_uppercase();
                    m = m.to_ascii_uppercase();
                } else {
                    s = s.to_ascii_lowercase();
                    m = m.to_ascii_lowercase();
                }
            }
            Op::ToCase(upper) => {
                if upper {
                    s = s.to_uppercase();
                    m = m.to_uppercase();
                } else {
                    s = s.to_lowercase();
                    m = m.to_lowercase();
                }
            }
            Op::Drain(a, b) => {
                let r = range(&m, a, b);
                let got: String = s.drain(r.clone()).collect();
                assert_eq!(got, m.drain(r).collect::<String>());
            }
            Op::MutStr => {
                s.as_mut_str().make_ascii_uppercase();
                m.make_ascii_uppercase();
            }
            Op::RetainPanics(k, n) => {
                retain_panicking(k, n, |f| s.retain(f));
                retain_panicking(k, n, |f| m.retain(f));
            }
        }
        assert_eq!(s.as_str(), m.as_str());
        assert_eq!(s.len(), m.len());
        assert!(s.capacity() >= s.len());
        assert_eq!(s.is_heap_allocated() && L::FORCE_WIDE, s.uses_wide_header());
        for (c, expected) in &clones {
            assert_eq!(
                c.as_str(),
                expected.as_str(),
                "a clone changed: copy-on-write broke"
            );
        }
    }
}

fn run_cstring(start: &str, ops: &[Op]) {
    let start: String = start.chars().filter(|&c| c != '\0').collect();
    let mut s = LeanCString::try_from(start.as_str()).unwrap();
    let mut m = start;
    let mut clones: Vec<(LeanCString, String)> = Vec::new();
    for op in ops {
        match op.clone() {
            Op::Push(c) => match s.push(c) {
                Ok(()) => m.push(c),
                Err(e) => assert_eq!((c, e.nul_position()), ('\0', 0)),
            },
            Op::PushStr(t) => {
                let before = s.clone();
                match (s.push_str(&t), t.find('\0')) {
                    (Ok(()), None) => m.push_str(&t),
                    (Err(e), Some(p)) => {
                        assert_eq!(e.nul_position(), p);
                        assert_eq!(s, before, "a rejected push_str changed the string");
                    }
                    (r, p) => panic!("push_str({t:?}) gave {r:?}, NUL at {p:?}"),
                }
            }
            Op::Insert(i, c) => {
                let i = boundary(&m, i);
                match s.insert(i, c) {
                    Ok(()) => m.insert(i, c),
                    Err(e) => assert_eq!((c, e.nul_position()), ('\0', 0)),
                }
            }
            Op::InsertStr(i, t) => {
                let i = boundary(&m, i);
                let before = s.clone();
                match (s.insert_str(i, &t), t.find('\0')) {
                    (Ok(()), None) => m.insert_str(i, &t),
                    (Err(e), Some(p)) => {
                        assert_eq!(e.nul_position(), p);
                        assert_eq!(s, before, "a rejected insert_str changed the string");
                    }
                    (r, p) => panic!("insert_str({i}, {t:?}) gave {r:?}, NUL at {p:?}"),
                }
            }
            Op::Pop => assert_eq!(s.pop(), m.pop()),
            Op::Remove(i) => {
                if !m.is_empty() {
                    let starts: Vec<usize> = m.char_indices().map(|(i, _)| i).collect();
                    let i = starts[i % starts.len()];
                    assert_eq!(s.remove(i), m.remove(i));
                }
            }
            Op::Truncate(i) => {
                let i = boundary(&m, i);
                s.truncate(i);
                m.truncate(i);
            }
            Op::SplitOff(i) => {
                let i = boundary(&m, i);
                let tail = s.split_off(i);
                assert_eq!(tail, m.split_off(i));
                assert_eq!(tail.as_bytes_with_nul().last(), Some(&0));
            }
            Op::Retain(k) => {
                let f = |c: char| !(c as u32).is_multiple_of(k);
                s.retain(f);
                m.retain(f);
            }
            Op::Clear => {
                s.clear();
                m.clear();
            }
            Op::Reserve(n) => {
                s.reserve(n);
                assert!(s.capacity() >= m.len() + n);
            }
            Op::ShrinkToFit => s.shrink_to_fit(),
            Op::ShrinkTo(n) => {
                s.shrink_to(n);
                assert!(s.capacity() >= m.len());
            }
            Op::Repeat(n) => {
                s = s.repeat(n);
                m = m.repeat(n);
            }
            Op::Clone => clones.push((s.clone(), m.clone())),
            Op::DropClone(i) => {
                if !clones.is_empty() {
                    clones.remove(i % clones.len());
                }
            }
            Op::Static(i) => {
                let statics = [
                    c"",
                    c"short",
                    c"fifteen bytes!!",
                    c"a static C string past the inline limit",
                ];
                let c = statics[i % statics.len()];
                s = LeanCString::from_static_c_str(c).unwrap();
                m = c.to_str().unwrap().to_owned();
            }
            Op::ReserveExact(n) => {
                s.reserve_exact(n);
                assert!(s.capacity() >= m.len() + n);
            }
            Op::ExtendFromWithin(a, b) => {
                let r = range(&m, a, b);
                s.extend_from_within(r.clone());
                m.extend_from_within(r);
            }
            Op::ToAsciiCase(upper) => {
                if upper {
                    s = s.to_ascii_uppercase();
                    m = m.to_ascii_uppercase();
                } else {
                    s = s.to_ascii_lowercase();
                    m = m.to_ascii_lowercase();
                }
            }
            Op::RetainPanics(k, n) => {
                retain_panicking(k, n, |f| s.retain(f));
                retain_panicking(k, n, |f| m.retain(f));
            }
            // Not offered by LeanCString.
            Op::ReplaceRange(..)
            | Op::AsciiCase(_)
            | Op::ToCase(_)
            | Op::Drain(..)
            | Op::MutStr => {}
        }
        assert_eq!(s.as_str(), m.as_str());
        assert_eq!(s.as_c_str().to_bytes(), m.as_bytes());
        assert_eq!(s.as_bytes_with_nul().last(), Some(&0));
        assert!(s.capacity() >= s.len());
        for (c, expected) in &clones {
            assert_eq!(
                c.as_str(),
                expected.as_str(),
                "a clone changed: copy-on-write broke"
            );
            assert_eq!(c.as_c_str().to_bytes(), expected.as_bytes());
        }
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn lean_string_matches_string(start in text(), ops in proptest::collection::vec(op(), 1..MAX_OPS)) {
        run_string::<lean_string::Compact>(&start, &ops);
    }

    #[test]
    fn wide_lean_string_matches_string(start in text(), ops in proptest::collection::vec(op(), 1..MAX_OPS)) {
        run_string::<lean_string::Wide>(&start, &ops);
    }

    #[test]
    fn lean_cstring_matches_string(start in text(), ops in proptest::collection::vec(op(), 1..MAX_OPS)) {
        run_cstring(&start, &ops);
    }

    #[test]
    fn ordering_and_equality_match_str(
        a in text(), b in text(), ka in 0usize..50, kb in 0usize..50, share in any::<bool>()
    ) {
        // Cut each string to a char boundary after building it, so the inline ones keep
        // stale bytes past their length; `share` keeps heap ones shared when cut.
        let cut = |s: &str, k: usize| {
            let k = boundary(s, k.min(s.len()));
            let mut l = lean_string::LeanString::from(s);
            let keep = l.clone();
            l.truncate(k);
            (l, if share { Some(keep) } else { None }, s[..k].to_owned())
        };
        let (la, _ka, sa) = cut(&format!("{a}{b}"), ka);
        let (lb, _kb, sb) = cut(&format!("{b}{a}"), kb);
        assert_eq!(la.cmp(&lb), sa.cmp(&sb), "{sa:?} vs {sb:?}");
        assert_eq!(la == lb, sa == sb, "{sa:?} vs {sb:?}");
        assert_eq!(la.cmp(&la.clone()), std::cmp::Ordering::Equal);
        let (fa, fb) = (LeanStr::from(sa.as_str()), LeanStr::from(sb.as_str()));
        assert_eq!(fa.cmp(&fb), sa.cmp(&sb));
        assert_eq!(fa == fb, sa == sb);
    }

    #[test]
    fn lean_str_matches_str(parts in proptest::collection::vec(text(), 0..6), st in 0usize..STATICS.len()) {
        let joined: String = parts.concat();
        let s = LeanStr::from(joined.as_str());
        let c = s.clone();
        assert_eq!(s.as_str(), joined.as_str());
        assert_eq!(c, s);
        let collected: LeanStr = parts.iter().map(String::as_str).collect();
        assert_eq!(collected, joined);
        let ls = c.into_lean_string();
        assert_eq!(ls, joined);
        assert_eq!(ls.into_lean_str(), joined);
        // Short static strings are inline, as in lean_string; long ones stay static.
        let stat = LeanStr::from_static_str(STATICS[st]);
        let want = (STATICS[st].len() > lean_string::INLINE_CAPACITY).then_some(STATICS[st]);
        assert_eq!(stat.as_static_str(), want);
        assert_eq!(stat.into_lean_string().as_static_str(), want, "static moves without copying");
        let r = LeanStr::from(joined.as_str()).repeat(st);
        assert_eq!(r, joined.repeat(st));
        assert_eq!(LeanStr::from(joined.as_str()).to_ascii_uppercase(), joined.to_ascii_uppercase());
        assert_eq!(LeanStr::from(joined.as_str()).to_lowercase(), joined.to_lowercase());
    }
}
