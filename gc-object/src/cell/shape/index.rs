//! The shape index: every shape of a heap (but the root and the dictionary shape) by the
//! hash of its key sequence. Separate chaining through the shapes' own `next` links, at
//! most one shape per bucket on average: an insert is a push, a removal a walk of one
//! short chain. Changed only under the table's write lock (or with exclusive access).

use super::{Ordering, Shape};

/// Shapes by hash (several shapes may share one hash).
pub(super) struct Index {
    buckets: Box<[*mut Shape]>,
    /// 64 - log2(buckets.len()).
    shift: u32,
    live: usize,
}

/// The next shape of `s`'s chain.
fn next(s: *mut Shape) -> *mut Shape {
    // SAFETY: indexed shapes are alive (freed only after they leave the index).
    unsafe { &*s }.next.load(Ordering::Relaxed)
}

fn set_next(s: *mut Shape, n: *mut Shape) {
    // SAFETY: as in `next`; links change only under the write lock.
    unsafe { &*s }.next.store(n, Ordering::Relaxed);
}

impl Index {
    /// An index with room for `n` shapes.
    pub(super) fn with_room(n: usize) -> Index {
        let len = n.max(8).next_power_of_two();
        Index {
            buckets: vec![core::ptr::null_mut(); len].into_boxed_slice(),
            shift: 64 - len.trailing_zeros(),
            live: 0,
        }
    }

    /// Shapes held.
    pub(super) fn len(&self) -> usize {
        self.live
    }

    #[inline]
    fn bucket(&self, hash: u64) -> usize {
        // Fibonacci hashing: the high bits of the product depend on every bit of the hash.
        (hash.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> self.shift) as usize
    }

    /// The first shape with `hash` that `want` accepts.
    #[inline]
    pub(super) fn find(
        &self,
        hash: u64,
        mut want: impl FnMut(*mut Shape) -> bool,
    ) -> Option<*mut Shape> {
        let mut s = self.buckets[self.bucket(hash)];
        while !s.is_null() {
            // SAFETY: as in `next`.
            if unsafe { &*s }.table_hash() == hash && want(s) {
                return Some(s);
            }
            s = next(s);
        }
        None
    }

    /// Adds `shape` under `hash` (doubling the buckets past one shape per bucket).
    pub(super) fn insert(&mut self, hash: u64, shape: *mut Shape) {
        if self.live >= self.buckets.len() {
            let mut bigger = Index::with_room(2 * self.buckets.len());
            for (h, s) in self.drain() {
                bigger.put(h, s);
            }
            *self = bigger;
        }
        self.put(hash, shape);
    }

    fn put(&mut self, hash: u64, shape: *mut Shape) {
        let b = self.bucket(hash);
        set_next(shape, self.buckets[b]);
        self.buckets[b] = shape;
        self.live += 1;
    }

    /// Removes `shape`, which is held under `hash`, and returns the pointer the index held
    /// (the owning one: `shape` may be derived from a shared reference, which may not free
    /// or re-own the shape).
    pub(super) fn remove(&mut self, hash: u64, shape: *const Shape) -> *mut Shape {
        let b = self.bucket(hash);
        let mut s = self.buckets[b];
        let held = if core::ptr::eq(s, shape) {
            self.buckets[b] = next(s);
            s
        } else {
            loop {
                assert!(!s.is_null(), "gc-object: a shape missing from its index");
                let n = next(s);
                if core::ptr::eq(n, shape) {
                    set_next(s, next(n));
                    break n;
                }
                s = n;
            }
        };
        set_next(held, core::ptr::null_mut());
        self.live -= 1;
        held
    }

    /// Takes every shape out, with its hash (the index is left empty).
    pub(super) fn drain(&mut self) -> Vec<(u64, *mut Shape)> {
        let mut all = Vec::with_capacity(self.live);
        for head in self.buckets.iter_mut() {
            let mut s = core::mem::replace(head, core::ptr::null_mut());
            while !s.is_null() {
                let n = next(s);
                set_next(s, core::ptr::null_mut());
                // SAFETY: as in `next`.
                all.push((unsafe { &*s }.table_hash(), s));
                s = n;
            }
        }
        self.live = 0;
        all
    }

    /// Every shape held.
    pub(super) fn iter(&self) -> impl Iterator<Item = *mut Shape> + '_ {
        self.buckets.iter().flat_map(|&head| {
            core::iter::successors((!head.is_null()).then_some(head), |&s| {
                let n = next(s);
                (!n.is_null()).then_some(n)
            })
        })
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::super::run::Run;
    use super::*;

    #[test]
    fn insert_find_remove_against_a_model() {
        let run = Run::new(&[], None, 0);
        let mut idx = Index::with_room(0);
        let mut model: Vec<*mut Shape> = Vec::new();
        let mut x = 12345u64;
        // (Miri interprets: fewer steps, the same checks.)
        let steps = if cfg!(miri) { 300 } else { 4000 };
        for step in 0..steps {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            if x.is_multiple_of(3) && !model.is_empty() {
                let s = model.swap_remove((x as usize / 3) % model.len());
                // SAFETY: a shape of this test, alive.
                assert_eq!(idx.remove(unsafe { &*s }.table_hash(), s), s);
                // SAFETY: out of the index, made by `Box::into_raw`, freed once.
                drop(unsafe { Box::from_raw(s) });
            } else {
                // Few hashes, so that chains are long.
                let s = Box::into_raw(Box::new(Shape::new(run, 0, x % 97, true)));
                // SAFETY: just made.
                idx.insert(unsafe { &*s }.table_hash(), s);
                model.push(s);
            }
            assert_eq!(idx.len(), model.len());
            if step % 97 != 0 {
                continue;
            }
            for &s in &model {
                // SAFETY: alive.
                let h = unsafe { &*s }.table_hash();
                assert_eq!(idx.find(h, |c| core::ptr::eq(c, s)), Some(s));
            }
            let mut all: Vec<_> = idx.iter().map(|s| s as usize).collect();
            let mut want: Vec<_> = model.iter().map(|&s| s as usize).collect();
            all.sort();
            want.sort();
            assert_eq!(all, want);
        }
        for s in idx.drain().into_iter().map(|(_, s)| s) {
            // SAFETY: as above.
            drop(unsafe { Box::from_raw(s) });
        }
        // SAFETY: no shape uses it any more.
        unsafe { run.free() };
    }
}
