//! No write copies a bucket: `K::clone` and `V::clone` calls per operation, counted, do not
//! grow with the map's size, for keys with no known prefix (tuples and structs: every key
//! of the map in one prefix's tree) and keys that share their first 8 bytes, with entries
//! in cells (types that need dropping) and inline in the trees' leaves (plain types).

use cob_tree::CobTree;
use std::cell::Cell;

// Per thread: the map clones on the calling thread, and the tests run in parallel.
thread_local! {
    static KEY_CLONES: Cell<usize> = const { Cell::new(0) };
    static VAL_CLONES: Cell<usize> = const { Cell::new(0) };
}

fn keys() -> usize {
    KEY_CLONES.with(Cell::get)
}

fn vals() -> usize {
    VAL_CLONES.with(Cell::get)
}

/// A key that counts its clones; `S` is its payload (a `String`, or plain words).
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Counted<S>(S);

impl<S: Clone> Clone for Counted<S> {
    fn clone(&self) -> Self {
        KEY_CLONES.with(|c| c.set(c.get() + 1));
        Counted(self.0.clone())
    }
}

/// A value that counts its clones.
#[derive(Debug, PartialEq)]
struct Val<S>(S);

impl<S: Clone> Clone for Val<S> {
    fn clone(&self) -> Self {
        VAL_CLONES.with(|c| c.set(c.get() + 1));
        Val(self.0.clone())
    }
}

fn mix(i: u64) -> u64 {
    i.wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(29)
}

/// Clones per operation of `n` random inserts, then `n` overwrites (`insert` of present
/// keys), `n` `update`s and `n` removes, each phase counted separately.
fn clones_per_op<K, V>(n: u64, key: impl Fn(u64) -> K, val: impl Fn(u64) -> V) -> [(f64, f64); 5]
where
    K: Ord + Clone + 'static,
    V: Clone + 'static,
{
    let t: CobTree<K, V> = CobTree::new();
    let mut out = [(0.0, 0.0); 5];
    let mut phase = |i: usize, f: &mut dyn FnMut(u64)| {
        let (k0, v0) = (keys(), vals());
        for j in 0..n {
            f(mix(j));
        }
        let (k1, v1) = (keys(), vals());
        out[i] = ((k1 - k0) as f64 / n as f64, (v1 - v0) as f64 / n as f64);
    };
    phase(0, &mut |x| assert!(t.insert(key(x), val(x)).is_none()));
    phase(1, &mut |x| assert!(t.insert(key(x), val(x)).is_some()));
    phase(2, &mut |x| {
        assert!(t.update(&key(x), |v| v.clone()).is_some())
    });
    phase(3, &mut |x| assert!(t.update_in_place(&key(x), |_| val(x))));
    phase(4, &mut |x| assert!(t.remove(&key(x)).is_some()));
    assert!(t.is_empty());
    out
}

/// The counts at 1K, 8K and 64K keys (fewer under Miri) are the same small constants.
fn check<K, V>(name: &str, key: impl Fn(u64) -> K + Copy, val: impl Fn(u64) -> V + Copy)
where
    K: Ord + Clone + 'static,
    V: Clone + 'static,
{
    let sizes: &[u64] = if cfg!(miri) {
        &[50, 400]
    } else {
        &[1_000, 8_000, 64_000]
    };
    let counts: Vec<_> = sizes.iter().map(|&n| clones_per_op(n, key, val)).collect();
    for (n, c) in sizes.iter().zip(&counts) {
        // Inserts of new keys clone nothing; an overwrite clones the value it returns and
        // (cell layout) the stored key into the new entry; `update` clones the new value it
        // returns (and the key, as an overwrite), the test's closure one more; a remove
        // clones the value it returns.
        let [ins, over, upd, in_place, rem] = *c;
        assert_eq!(ins, (0.0, 0.0), "{name}: inserts of new keys at {n}");
        assert!(
            over.0 <= 1.0 && over.1 <= 1.0,
            "{name}: overwrites at {n}: {over:?}"
        );
        assert!(
            upd.0 <= 1.0 && upd.1 <= 2.0,
            "{name}: updates at {n}: {upd:?}"
        );
        assert!(
            rem.0 == 0.0 && rem.1 <= 1.0,
            "{name}: removes at {n}: {rem:?}"
        );
        // In place: no value cloned (the closure makes a new one), at most the key.
        assert!(
            in_place.0 <= 1.0 && in_place.1 == 0.0,
            "{name}: in place at {n}: {in_place:?}"
        );
    }
    // And they do not grow with the map: the same at every size.
    assert!(
        counts.windows(2).all(|w| w[0] == w[1]),
        "{name}: {counts:?}"
    );
}

#[test]
fn tuple_and_struct_keys_clone_nothing_per_insert() {
    // Plain keys and values (inline in the leaves): no clone at all but the returned values.
    check(
        "(u32, u64) plain",
        |x| Counted(((x % 64) as u32, x)),
        |x| Val(x as u32),
    );
    // A key that needs dropping (entries in cells).
    check(
        "(String, u64)",
        |x| Counted((format!("t{}", x % 64), x)),
        Val,
    );
    // Keys that share their first 8 bytes: a 26-byte URL prefix.
    check(
        "URL",
        |x| Counted(format!("https://example.com/users/{:016x}", x)),
        |x| Val(vec![x as u8; 3]),
    );
}

/// A prefix's tree never copies entries by cloning them: a key's clones are the ones the
/// API hands out, whatever the map's size.
#[test]
fn one_bucket_of_many_keys_reads_without_cloning() {
    let n = if cfg!(miri) { 300 } else { 20_000 };
    let t: CobTree<Counted<(u32, u64)>, Val<u64>> = CobTree::new();
    for i in 0..n {
        t.insert(Counted((7, mix(i))), Val(i));
    }
    let k0 = keys();
    for i in 0..n {
        assert_eq!(
            t.pin().get(&Counted((7, mix(i)))).map(|e| e.value().0),
            Some(i)
        );
    }
    let p = t.pin();
    assert_eq!(p.iter().count(), n as usize);
    drop(p);
    assert_eq!(keys(), k0, "reads through the view clone no key");
}
