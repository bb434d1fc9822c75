//! Where a `String`-key map's iteration instructions go: `valgrind --tool=callgrind
//! --toggle-collect='*str_profile::work*' target/release/examples/str_profile N` runs ten
//! full iterations of the borrowing view of an `N`-key `CobTree<String, u64>` (random
//! 8-32-byte keys, as bench-suite's `str iterate`), with collection only inside `work`;
//! `callgrind_annotate` then splits the count by function and source line. The loop checks
//! its answer.

use cob_tree::CobTree;
use std::hint::black_box;

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
    let got = work(&t);
    assert_eq!(got, (t.len(), held));
    assert_eq!(got.0, want.0);
    println!("{} entries, sum {}", got.0, got.1);
}
