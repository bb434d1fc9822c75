//! The boxed path drops every value exactly once (on overwrite and remove a clone of the
//! old value goes back to the caller, and the stored one drops when its retired node is
//! reclaimed, at the latest with the map; on map drop the rest are dropped), and a user
//! `Ord` that panics leaves the map memory-safe and usable. While the map lives, a count
//! is only a lower bound (retired nodes wait for the epoch collector); after the map
//! drops it is exact.

use cob_tree::CobTree;
use std::cell::Cell;
use std::cmp::Ordering;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

#[test]
fn values_dropped_exactly_once() {
    let n: usize = if cfg!(miri) { 60 } else { 3000 };
    let probe = Arc::new(0u8);
    {
        let t: CobTree<String, Arc<u8>> = CobTree::with_leaf_capacity(4);
        for i in 0..n {
            assert!(t.insert(format!("key{i:05}"), Arc::clone(&probe)).is_none());
        }
        assert_eq!(Arc::strong_count(&probe), n + 1);
        // Overwrite: the old value comes back and is dropped by us.
        for i in 0..n / 2 {
            let old = t.insert(format!("key{i:05}"), Arc::clone(&probe));
            assert!(old.is_some());
        }
        assert!(Arc::strong_count(&probe) > n);
        // Reads hand out clones, which we drop.
        let got: Vec<_> = t.iter().collect();
        assert!(Arc::strong_count(&probe) > 2 * n);
        drop(got);
        // Removes return the value.
        for i in (0..n).step_by(3) {
            assert!(t.remove(format!("key{i:05}").as_str()).is_some());
        }
        let left = n - n.div_ceil(3);
        assert!(Arc::strong_count(&probe) > left);
        t.retain(|k, _| !k.ends_with('1'));
        let left = t.len();
        assert!(Arc::strong_count(&probe) > left);
        assert!(t.update("key00002", Arc::clone).is_some());
        assert!(Arc::strong_count(&probe) > left);
        let popped = t.pop_first();
        assert!(popped.is_some());
        drop(popped);
        assert!(Arc::strong_count(&probe) >= left);
        // The rest drop with the map.
    }
    assert_eq!(Arc::strong_count(&probe), 1);

    // By-value iteration moves values out; a half-consumed iterator drops the rest.
    let t: CobTree<Vec<u8>, Arc<u8>> = CobTree::new();
    for i in 0..100u8 {
        t.insert(vec![i; 9], Arc::clone(&probe));
    }
    let mut it = t.into_iter();
    let first: Vec<_> = it.by_ref().take(10).collect();
    assert_eq!(Arc::strong_count(&probe), 101);
    drop(it);
    assert_eq!(Arc::strong_count(&probe), 11);
    drop(first);
    assert_eq!(Arc::strong_count(&probe), 1);
}

thread_local! {
    /// Comparisons left before `Touchy::cmp` panics (`u32::MAX`: never).
    static FUSE: Cell<u32> = const { Cell::new(u32::MAX) };
}

/// A key whose `cmp` panics on the Nth call after the fuse is lit.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Touchy(String);

impl PartialOrd for Touchy {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Touchy {
    fn cmp(&self, o: &Self) -> Ordering {
        FUSE.with(|f| {
            let left = f.get();
            if left == 0 {
                f.set(u32::MAX);
                panic!("Touchy::cmp fuse blew");
            }
            if left != u32::MAX {
                f.set(left - 1);
            }
        });
        self.0.cmp(&o.0)
    }
}

fn light(n: u32) {
    FUSE.with(|f| f.set(n));
}

#[test]
fn panicking_ord_leaves_the_map_usable() {
    let n: u32 = if cfg!(miri) { 40 } else { 400 };
    let t: CobTree<Touchy, Arc<u32>> = CobTree::with_leaf_capacity(4);
    let probe = Arc::new(0u32);
    for i in 0..n {
        t.insert(Touchy(format!("{i:04}")), Arc::clone(&probe));
    }
    let mut blown = 0;
    for nth in 0..12u32 {
        // Each kind of operation, with the fuse set to blow inside it.
        let k = Touchy(format!("{:04}x", nth * 7));
        let ops: [&dyn Fn(); 6] = [
            &|| drop(t.insert(k.clone(), Arc::clone(&probe))),
            &|| drop(t.get(&k)),
            &|| drop(t.remove(&Touchy(format!("{:04}", nth * 7 + 1)))),
            &|| {
                let _ = t.range(k.clone()..).take(3).count();
            },
            &|| drop(t.update(&Touchy(format!("{:04}", nth * 7 + 2)), Arc::clone)),
            &|| drop(t.get_or_insert(k.clone(), Arc::clone(&probe))),
        ];
        for op in ops {
            light(nth % 5);
            if catch_unwind(AssertUnwindSafe(op)).is_err() {
                blown += 1;
            }
            light(u32::MAX);
        }
    }
    assert!(blown > 0, "the fuse never blew");
    // Every key the panicking operations did not touch is still there; the map works.
    for i in 0..n {
        let k = Touchy(format!("{i:04}"));
        let touched = i % 7 == 1 || i % 7 == 2;
        if !touched {
            assert!(t.get(&k).is_some(), "lost {k:?}");
        }
    }
    let all: Vec<_> = t.keys().collect();
    assert!(all.windows(2).all(|w| w[0] < w[1]));
    assert_eq!(all.len(), t.len());
    assert!(
        t.insert(Touchy("zzzz".into()), Arc::clone(&probe))
            .is_none()
    );
    assert!(t.remove(&Touchy("zzzz".into())).is_some());
    drop(all);
    assert!(Arc::strong_count(&probe) > t.len());
    drop(t);
    assert_eq!(Arc::strong_count(&probe), 1);
}

/// An `Ord` that is not a total order (random answers) must not break memory safety or
/// hang; every entry is still dropped once.
#[test]
fn inconsistent_ord_is_memory_safe() {
    #[derive(Clone, Debug, PartialEq, Eq)]
    struct Liar(u32);
    impl PartialOrd for Liar {
        fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
            Some(self.cmp(o))
        }
    }
    impl Ord for Liar {
        fn cmp(&self, o: &Self) -> Ordering {
            let h = (self.0 ^ o.0.rotate_left(7)).wrapping_mul(2654435761) >> 30;
            [
                Ordering::Less,
                Ordering::Equal,
                Ordering::Greater,
                Ordering::Less,
            ][h as usize]
        }
    }
    let probe = Arc::new(());
    let t: CobTree<Liar, Arc<()>> = CobTree::with_leaf_capacity(4);
    let n = if cfg!(miri) { 50 } else { 2000 };
    for i in 0..n {
        drop(t.insert(Liar(i), Arc::clone(&probe)));
        drop(t.get(&Liar(i / 2)));
        if i % 3 == 0 {
            drop(t.remove(&Liar(i / 3)));
        }
    }
    let _ = t.iter().count();
    drop(t);
    assert_eq!(Arc::strong_count(&probe), 1);
}
