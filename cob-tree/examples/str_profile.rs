//! Where a `String`-key map's iteration instructions go: `valgrind --tool=callgrind
//! --toggle-collect='*str_profile::work*' target/release/examples/str_profile N [range]`
//! runs ten full iterations (or with `range`, 1,000 ranges of 100 entries) of the
//! borrowing view of an `N`-key `CobTree<String, u64>` (or with `build`, builds one; random 8-32-byte keys, as
//! bench-suite's `str iterate`), with collection only inside `work` (or `work_range`);
//! `callgrind_annotate` then splits the count by function and source line. The loop checks
//! its answer.

use cob_tree::CobTree;
use std::hint::black_box;
use std::ops::Bound;

fn keys(n: usize) -> Vec<(String, u64)> {
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    (0..n)
        .map(|i| {
            let len = 8 + (next() % 25) as usize;
            let k: String = (0..len)
                .map(|_| (b'a' + (next() % 26) as u8) as char)
                .collect();
            (k, i as u64)
        })
        .collect()
}

#[inline(never)]
fn work(t: &CobTree<String, u64>) -> (usize, u64) {
    let mut out = (0, 0);
    for _ in 0..10 {
        out = black_box(t).pin().iter().fold((0usize, 0u64), |(c, s), e| {
            (c + 1, s.wrapping_add(*e.value()))
        });
    }
    out
}

#[inline(never)]
fn work_range(t: &CobTree<String, u64>, from: &[String]) -> u64 {
    from.iter().fold(0u64, |s, k| {
        black_box(t)
            .pin()
            .range::<str, _>((Bound::Included(k.as_str()), Bound::Unbounded))
            .take(100)
            .fold(s, |s, e| s.wrapping_add(*e.value()))
    })
}

#[inline(never)]
fn work_build(keys: &[(String, u64)]) -> CobTree<String, u64> {
    let t = CobTree::new();
    for (k, v) in keys {
        t.insert(k.clone(), *v);
    }
    t
}

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1000);
    let t: CobTree<String, u64> = CobTree::new();
    let mut want = (0, 0u64);
    for (k, v) in keys(n) {
        if t.insert(k, v).is_none() {
            want = (want.0 + 1, want.1.wrapping_add(v));
        } else {
            want.1 = want.1.wrapping_add(v);
        }
    }
    // Overwritten keys: the sum over what the map holds.
    let held = t.iter().fold(0u64, |s, (_, v)| s.wrapping_add(v));
    if std::env::args().nth(2).as_deref() == Some("build") {
        let ks = keys(n);
        let b = work_build(&ks);
        assert_eq!(b.len(), t.len());
        println!("built {}", b.len());
        return;
    }
    if std::env::args().nth(2).as_deref() == Some("range") {
        let from: Vec<String> = keys(n).into_iter().take(1000).map(|(k, _)| k).collect();
        let want: u64 = from.iter().fold(0u64, |s, k| {
            t.range::<str, _>((Bound::Included(k.as_str()), Bound::Unbounded))
                .take(100)
                .fold(s, |s, (_, v)| s.wrapping_add(v))
        });
        assert_eq!(work_range(&t, &from), want);
        println!("1000 ranges, sum {want}");
        return;
    }
    let got = work(&t);
    assert_eq!(got, (t.len(), held));
    assert_eq!(got.0, want.0);
    println!("{} entries, sum {}", got.0, got.1);
}
