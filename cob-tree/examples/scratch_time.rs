// Scratch (not committed): time 1K-key String iteration, CobTree view vs BTreeMap.
use cob_tree::CobTree;
use std::collections::BTreeMap;
use std::hint::black_box;
use std::time::Instant;

fn keys(n: usize, seed: u64) -> Vec<String> {
    let mut x = seed | 1;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    while out.len() < n {
        let len = 8 + (next() % 25) as usize;
        let k: String = (0..len)
            .map(|_| (b'a' + (next() % 26) as u8) as char)
            .collect();
        if seen.insert(k.clone()) {
            out.push(k);
        }
    }
    out
}

fn med(mut v: Vec<f64>) -> (f64, f64) {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    (v[0], v[v.len() / 2])
}

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1000);
    let ks = keys(n, 7);
    let t: CobTree<String, u64> = CobTree::new();
    let b: BTreeMap<String, u64> = BTreeMap::new();
    let mut b = b;
    for (i, k) in ks.iter().enumerate() {
        t.insert(k.clone(), i as u64);
        b.insert(k.clone(), i as u64);
    }
    let mut sorted = ks.clone();
    sorted.sort();
    let ts: CobTree<String, u64> = CobTree::new();
    for k in &sorted {
        ts.insert(k.clone(), 1);
    }
    let reps = (2_000_000 / n.max(1)).max(1);
    let (mut a, mut bb, mut c, mut r, mut rs) = (vec![], vec![], vec![], vec![], vec![]);
    let trials: usize = std::env::args()
        .nth(2)
        .and_then(|a| a.parse().ok())
        .unwrap_or(300);
    for _ in 0..trials {
        let s = Instant::now();
        let mut acc = 0u64;
        for _ in 0..reps {
            acc = acc.wrapping_add(
                black_box(&t)
                    .pin()
                    .iter()
                    .fold(0u64, |s, e| s.wrapping_add(*e.value())),
            );
        }
        black_box(acc);
        let x = s.elapsed().as_secs_f64() * 1e9 / (reps * n) as f64;
        let s = Instant::now();
        for _ in 0..reps {
            acc = acc.wrapping_add(
                black_box(&b)
                    .iter()
                    .fold(0u64, |s, (_, v)| s.wrapping_add(*v)),
            );
        }
        black_box(acc);
        let y = s.elapsed().as_secs_f64() * 1e9 / (reps * n) as f64;
        let s = Instant::now();
        for _ in 0..reps {
            acc = acc.wrapping_add(
                black_box(&ts)
                    .pin()
                    .iter()
                    .fold(0u64, |s, e| s.wrapping_add(*e.value())),
            );
        }
        black_box(acc);
        let z = s.elapsed().as_secs_f64() * 1e9 / (reps * n) as f64;
        a.push(x);
        bb.push(y);
        c.push(z);
        r.push(x / y);
        rs.push(z / y);
    }
    let (a, bb, c) = (med(a), med(bb), med(c));
    let (r, rs) = (med(r), med(rs));
    println!(
        "n={n} cob {:.3}/{:.3} btree {:.3}/{:.3} sortedcob {:.3}/{:.3} (min/med) | ratio min {:.2} med-of-ratios {:.2} | sorted {:.2} {:.2}",
        a.0,
        a.1,
        bb.0,
        bb.1,
        c.0,
        c.1,
        a.0 / bb.0,
        r.1,
        c.0 / bb.0,
        rs.1
    );
}
