//! Multi-threaded `String`-key stress on the boxed path: writers on disjoint and shared
//! keys, readers of untouched keys, a scanner; exact final contents.

use cob_tree::CobTree;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};

fn stable(i: usize) -> String {
    // Stable keys share 8-byte prefixes with the writers' keys ("key-0000" ...).
    format!("key-{:04}-stable", i)
}

fn written(w: usize, i: usize) -> String {
    format!("key-{:04}-w{w}-{i}", i % 500)
}

#[test]
fn writers_readers_scanner_exact() {
    let (writers, per) = if cfg!(miri) { (2, 40) } else { (3, 6000) };
    let stables = if cfg!(miri) { 30 } else { 500 };
    let t: CobTree<String, Vec<u8>> = CobTree::with_leaf_capacity(8);
    for i in 0..stables {
        t.insert(stable(i), i.to_le_bytes().to_vec());
    }
    let done = AtomicBool::new(false);
    std::thread::scope(|s| {
        let mut ws = Vec::new();
        for w in 0..writers {
            let t = &t;
            ws.push(s.spawn(move || {
                for i in 0..per {
                    assert!(t.insert(written(w, i), vec![w as u8; i % 7]).is_none());
                    if i % 3 == 0 {
                        // Each key is removed at most once (of 2j and 2j + 1 at most one
                        // is a multiple of 3), after it was inserted.
                        assert!(t.remove(written(w, i / 2).as_str()).is_some());
                    }
                }
            }));
        }
        for _ in 0..2 {
            let (t, done) = (&t, &done);
            s.spawn(move || {
                let mut i = 0;
                while !done.load(Ordering::Relaxed) {
                    let k = stable(i % stables);
                    assert_eq!(
                        t.get(k.as_str()),
                        Some((i % stables).to_le_bytes().to_vec()),
                        "{k}"
                    );
                    i += 1;
                }
            });
        }
        {
            let (t, done) = (&t, &done);
            s.spawn(move || {
                while !done.load(Ordering::Relaxed) {
                    let mut seen = 0;
                    let mut last: Option<String> = None;
                    for (k, _) in t.iter() {
                        if let Some(l) = &last {
                            assert!(*l < k, "out of order: {l} then {k}");
                        }
                        if k.ends_with("-stable") {
                            seen += 1;
                        }
                        last = Some(k);
                    }
                    assert_eq!(seen, stables, "a scan missed or repeated a stable key");
                }
            });
        }
        for h in ws {
            h.join().expect("writer");
        }
        done.store(true, Ordering::Relaxed);
    });
    let mut want = BTreeMap::new();
    for i in 0..stables {
        want.insert(stable(i), i.to_le_bytes().to_vec());
    }
    for w in 0..writers {
        let mut m = BTreeMap::new();
        for i in 0..per {
            m.insert(written(w, i), vec![w as u8; i % 7]);
            if i % 3 == 0 {
                m.remove(&written(w, i / 2));
            }
        }
        want.extend(m);
    }
    assert_eq!(t.len(), want.len());
    assert!(t.iter().eq(want.into_iter()));
}

/// Four threads increment shared `String`-keyed counters through `get_or_insert` +
/// `update` and an `insert_if` compare-and-swap loop: exact totals.
#[test]
fn shared_counters_exact() {
    let (threads, rounds, keys) = if cfg!(miri) {
        (2, 20, 3)
    } else {
        (4, 3000, 40)
    };
    let t: CobTree<String, u64> = CobTree::with_leaf_capacity(4);
    std::thread::scope(|s| {
        for th in 0..threads {
            let t = &t;
            s.spawn(move || {
                for r in 0..rounds {
                    let k = format!("counter-with-a-long-name-{}", (r * 7 + th) % keys);
                    if r % 2 == 0 {
                        t.get_or_insert(k.clone(), 0);
                        t.update(k.as_str(), |v| v + 1).expect("present");
                    } else {
                        loop {
                            let cur = t.get(k.as_str());
                            let next = cur.map_or(1, |c| c + 1);
                            if t.insert_if(k.clone(), next, |o| Some(*o) == cur).is_ok() {
                                break;
                            }
                        }
                    }
                }
            });
        }
    });
    let total: u64 = t.values().sum();
    assert_eq!(total, (threads * rounds) as u64);
}

/// The borrowing view under writers that overwrite and remove the keys it is reading:
/// every entry it hands out stays readable and whole (its value matches its key) for the
/// view's lifetime, and the keys present throughout (the even ones) are all seen, in order.
#[test]
fn pinned_views_under_overwrites_and_removes() {
    let (keys, rounds) = if cfg!(miri) { (12, 2) } else { (400, 60) };
    let key = |i: usize| format!("view-{:03}-{}", i % 50, i);
    let val = |k: &str, r: usize| format!("{k}={r}").into_bytes();
    let t: CobTree<String, Vec<u8>> = CobTree::with_leaf_capacity(4);
    for i in 0..keys {
        t.insert(key(i), val(&key(i), 0));
    }
    let done = AtomicBool::new(false);
    std::thread::scope(|s| {
        let writer = s.spawn(|| {
            for r in 1..=rounds {
                for i in (0..keys).filter(|i| i % 2 == 1) {
                    // Odd keys: overwritten, removed and put back; even keys: overwritten.
                    if r % 3 == 0 {
                        assert!(t.remove(key(i).as_str()).is_some());
                    }
                    t.insert(key(i), val(&key(i), r));
                }
                for i in (0..keys).filter(|i| i.is_multiple_of(2)) {
                    assert!(t.insert(key(i), val(&key(i), r)).is_some());
                }
            }
            done.store(true, Ordering::Release);
        });
        while !done.load(Ordering::Acquire) {
            let p = t.pin();
            let held: Vec<_> = p.iter().collect();
            let mut evens = 0;
            for w in held.windows(2) {
                assert!(w[0].key() < w[1].key(), "out of order");
            }
            for e in &held {
                let v = std::str::from_utf8(e.value()).expect("whole value");
                let (k, _) = v.split_once('=').expect("key=round");
                assert_eq!(k, e.key());
                let i: usize = e.key().rsplit('-').next().unwrap().parse().unwrap();
                evens += usize::from(i.is_multiple_of(2));
            }
            assert_eq!(evens, keys.div_ceil(2), "an even key was missed");
            if let Some(e) = p.get(key(0).as_str()) {
                assert!(e.value().starts_with(key(0).as_bytes()));
            }
            drop(held);
            drop(p);
        }
        writer.join().unwrap();
    });
    assert_eq!(t.len(), keys);
    for i in 0..keys {
        assert_eq!(t.get(key(i).as_str()), Some(val(&key(i), rounds)));
    }
}
