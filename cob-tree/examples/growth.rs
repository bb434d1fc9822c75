//! Per-insert time of random builds at growing sizes, for the key types users put in an
//! ordered map, against `BTreeMap` (a quick look at growth; the bench-suite `tree` group
//! has the measured rows). `cargo run --release -p memlayout-cob-tree --example growth`
//! (an argument caps the largest size).

use cob_tree::CobTree;
use std::collections::BTreeMap;
use std::time::Instant;

#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Debug)]
struct Key {
    tenant: u32,
    id: u64,
}

fn xorshift(x: &mut u64) -> u64 {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    *x
}

fn time<K: Ord + Clone + 'static>(name: &str, keys: &[K]) {
    let t = Instant::now();
    let c: CobTree<K, u64> = CobTree::new();
    for (i, k) in keys.iter().enumerate() {
        c.insert(k.clone(), i as u64);
    }
    let cob = t.elapsed().as_nanos() as f64 / keys.len() as f64;
    let t = Instant::now();
    let mut b = BTreeMap::new();
    for (i, k) in keys.iter().enumerate() {
        b.insert(k.clone(), i as u64);
    }
    let bt = t.elapsed().as_nanos() as f64 / keys.len() as f64;
    assert_eq!(c.len(), b.len());
    println!(
        "{name:>8} {:>8}: CobTree {cob:>9.1} ns/insert, BTreeMap {bt:>7.1} ({:.2}x)",
        keys.len(),
        cob / bt
    );
}

/// Builds a map of `keys` then gets every key once; the length (checked by the caller).
#[inline(never)]
fn cob<K: Ord + Clone + 'static>(keys: Vec<K>) -> usize {
    let c: CobTree<K, u64> = CobTree::new();
    for (i, k) in keys.iter().enumerate() {
        c.insert(k.clone(), i as u64);
    }
    let hits = keys.iter().filter(|k| c.get(*k).is_some()).count();
    assert_eq!(hits, keys.len());
    c.len()
}

/// As [`cob`], with `BTreeMap`.
#[inline(never)]
fn btree<K: Ord + Clone + 'static>(keys: Vec<K>) -> usize {
    let mut c = BTreeMap::new();
    for (i, k) in keys.iter().enumerate() {
        c.insert(k.clone(), i as u64);
    }
    let hits = keys.iter().filter(|k| c.contains_key(*k)).count();
    assert_eq!(hits, keys.len());
    c.len()
}

/// `growth one KIND N` / `growth btree KIND N`: only one map's build of `N` keys of one
/// kind, then a get of each (for callgrind: instructions per insert + get).
fn one(kind: &str, n: usize, peer: bool) {
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let raw: Vec<u64> = (0..n).map(|_| xorshift(&mut x)).collect();
    macro_rules! run {
        ($keys:expr) => {
            if peer { btree($keys) } else { cob($keys) }
        };
    }
    let len = match kind {
        "u128" => run!(
            raw.iter()
                .map(|&r| (u128::from(r % 8) << 64) | u128::from(r))
                .collect::<Vec<_>>()
        ),
        "tuple" => run!(
            raw.iter()
                .map(|&r| ((r % 64) as u32, r))
                .collect::<Vec<_>>()
        ),
        "struct" => run!(
            raw.iter()
                .map(|&r| Key {
                    tenant: (r % 64) as u32,
                    id: r
                })
                .collect::<Vec<_>>()
        ),
        "url" => run!(
            raw.iter()
                .map(|&r| format!("https://example.com/users/{:08}", r % 100_000_000))
                .collect::<Vec<_>>()
        ),
        "path" => run!(
            raw.iter()
                .map(|&r| format!("/usr/lib/x86_64-linux-gnu/lib{:x}.so.{}", r >> 40, r % 10))
                .collect::<Vec<_>>()
        ),
        "random" => run!(raw.iter().map(|&r| format!("{r:016x}")).collect::<Vec<_>>()),
        _ => panic!("kind: u128, tuple, struct, url, path, random"),
    };
    assert!(len > 0);
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(m @ ("one" | "btree")) = args.get(1).map(String::as_str) {
        return one(&args[2], args[3].parse().expect("N"), m == "btree");
    }
    let cap: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(160_000);
    for n in [10_000, 40_000, 160_000, 1_000_000] {
        if n > cap {
            break;
        }
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let raw: Vec<u64> = (0..n).map(|_| xorshift(&mut x)).collect();
        time("u64", &raw);
        time(
            "u128",
            &raw.iter()
                .map(|&r| (u128::from(r % 8) << 64) | u128::from(r))
                .collect::<Vec<_>>(),
        );
        time(
            "(u32,u64)",
            &raw.iter()
                .map(|&r| ((r % 64) as u32, r))
                .collect::<Vec<_>>(),
        );
        time(
            "struct",
            &raw.iter()
                .map(|&r| Key {
                    tenant: (r % 64) as u32,
                    id: r,
                })
                .collect::<Vec<_>>(),
        );
        time(
            "url",
            &raw.iter()
                .map(|&r| format!("https://example.com/users/{:08}", r % 100_000_000))
                .collect::<Vec<_>>(),
        );
        time(
            "random",
            &raw.iter().map(|&r| format!("{r:016x}")).collect::<Vec<_>>(),
        );
    }
}
