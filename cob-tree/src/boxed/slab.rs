//! The boxed path's buckets: type-stable slots, each a lock-protected sorted `Vec` of the
//! entries that share one key prefix.
//!
//! A slot is never freed while the map lives (it is reused for another prefix once its own
//! was removed), so a reader holding a stale slot number reads a live bucket; it checks
//! the bucket's prefix under the bucket's read lock, and a bucket of another prefix cannot
//! hold its key. Slots live in chunks of doubling size, each made once (`OnceLock`), so
//! finding a slot is two loads and no chunk ever moves.

use crate::sync::lock_std;
use std::sync::{Mutex, OnceLock, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// Slots in the first chunk; chunk `c` has `FIRST_CHUNK << c`.
pub const FIRST_CHUNK: usize = 16;
/// Chunks (enough for `FIRST_CHUNK * (2^CHUNKS - 1)` slots).
const CHUNKS: usize = 40;

/// One bucket: the prefix it holds now (`None`: free) and its entries, sorted by key.
pub(crate) struct Bucket<K, V> {
    pub(crate) prefix: Option<u64>,
    pub(crate) entries: Vec<(K, V)>,
}

/// One chunk of slots.
type Chunk<K, V> = Box<[RwLock<Bucket<K, V>>]>;

pub(crate) struct Slab<K, V> {
    chunks: [OnceLock<Chunk<K, V>>; CHUNKS],
    /// Free slots, and the number of slots ever handed out.
    free: Mutex<(Vec<u64>, u64)>,
}

/// Chunk and offset of slot `s`.
#[inline(always)]
fn place(s: u64) -> (usize, usize) {
    let i = s as usize / FIRST_CHUNK + 1;
    let c = (usize::BITS - 1 - i.leading_zeros()) as usize;
    (c, s as usize - FIRST_CHUNK * ((1 << c) - 1))
}

impl<K, V> Slab<K, V> {
    pub(crate) fn new() -> Self {
        Slab {
            chunks: [const { OnceLock::new() }; CHUNKS],
            free: Mutex::new((Vec::new(), 0)),
        }
    }

    #[inline(always)]
    fn slot(&self, s: u64) -> &RwLock<Bucket<K, V>> {
        let (c, o) = place(s);
        // Every slot number in the map was handed out by `alloc`, which made its chunk.
        &self.chunks[c]
            .get()
            .expect("CobTree: slot of an unmade chunk")[o]
    }

    /// Reads bucket `s` (a poisoned lock still guards a consistent bucket: every change
    /// to one is a single `Vec` operation, and `Vec` stays valid when a comparison panics).
    #[inline(always)]
    pub(crate) fn read(&self, s: u64) -> RwLockReadGuard<'_, Bucket<K, V>> {
        self.slot(s).read().unwrap_or_else(|e| e.into_inner())
    }

    #[inline(always)]
    pub(crate) fn write(&self, s: u64) -> RwLockWriteGuard<'_, Bucket<K, V>> {
        self.slot(s).write().unwrap_or_else(|e| e.into_inner())
    }

    /// A free slot, now holding `prefix` with the one entry `e`.
    pub(crate) fn alloc(&self, prefix: u64, e: (K, V)) -> u64 {
        let s = {
            let mut f = lock_std(&self.free);
            match f.0.pop() {
                Some(s) => s,
                None => {
                    f.1 += 1;
                    f.1 - 1
                }
            }
        };
        let (c, _) = place(s);
        self.chunks[c].get_or_init(|| {
            (0..FIRST_CHUNK << c)
                .map(|_| {
                    RwLock::new(Bucket {
                        prefix: None,
                        entries: Vec::new(),
                    })
                })
                .collect()
        });
        let mut b = self.write(s);
        b.prefix = Some(prefix);
        b.entries.clear();
        // Most buckets keep one entry (random keys rarely share 8 bytes): room for exactly
        // one, not the 4 a first `push` reserves.
        b.entries.reserve_exact(1);
        b.entries.push(e);
        s
    }

    /// Returns slot `s` (its prefix was removed from the index, its bucket is empty).
    pub(crate) fn release(&self, s: u64) {
        let mut b = self.write(s);
        b.prefix = None;
        b.entries = Vec::new();
        drop(b);
        lock_std(&self.free).0.push(s);
    }

    /// Bytes of the chunks and of the buckets' entry vectors (not what keys and values
    /// own themselves).
    pub(crate) fn heap_bytes(&self) -> usize {
        let mut n = 0;
        for c in self.chunks.iter().filter_map(OnceLock::get) {
            n += core::mem::size_of_val(&**c);
            for b in c.iter() {
                let b = b.read().unwrap_or_else(|e| e.into_inner());
                n += b.entries.capacity() * core::mem::size_of::<(K, V)>();
            }
        }
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn places_are_dense() {
        let mut next = (0, 0);
        for s in 0..10_000u64 {
            let p = place(s);
            assert_eq!(p, next, "slot {s}");
            next = if p.1 + 1 == FIRST_CHUNK << p.0 {
                (p.0 + 1, 0)
            } else {
                (p.0, p.1 + 1)
            };
        }
    }
}
