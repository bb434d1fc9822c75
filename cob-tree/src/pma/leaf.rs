//! A view of one leaf's words, sliced once: the header (constant length, so its fields
//! need no bounds checks), the key words and the value words. The hot single-key paths
//! (`get`, the in-leaf writes) go through it instead of recomputing the leaf's offset and
//! checking bounds at every field.

use super::key::Borrow;
use super::key::{Key, Pod};
use super::{
    COUNT_MASK, FENCES, HI_INF, LO_NEG_INF, META, Pma, VERSION, load, search, shift_down, shift_up,
};
use crate::sync::{AtomicU64, Ordering};
use core::cmp::Ordering as Cmp;
use core::marker::PhantomData;

/// Leaf `j` of an array, as slices.
#[derive(Clone, Copy)]
pub(crate) struct Leaf<'a, K, V> {
    /// `FENCES + 2 * K::WORDS` words: version, count|flags, lo, hi.
    pub(crate) hdr: &'a [AtomicU64],
    /// `cap * K::WORDS` words.
    pub(crate) ks: &'a [AtomicU64],
    /// `cap * V::WORDS` words.
    pub(crate) vs: &'a [AtomicU64],
    pub(crate) cap: usize,
    _kv: PhantomData<fn() -> (K, V)>,
}

impl<K: Key, V: Pod> Pma<K, V> {
    /// Leaf `j`'s words (one bounds check, for the leaf; the splits need none).
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub(crate) fn leaf(&self, j: usize) -> Leaf<'_, K, V> {
        let words = self.span(self.base(j), self.stride);
        let (h, kw, vw) = (
            FENCES + 2 * K::WORDS,
            self.cap * K::WORDS,
            self.cap * V::WORDS,
        );
        // `stride` is set once, in `new_empty`, to `leaf_words::<K, V>(cap)`: at least
        // `h + kw + vw` words (a header, `cap` keys, `cap` values, rounded up to lines).
        debug_assert!(h + kw + vw <= words.len());
        // SAFETY: `words` is `stride >= h + kw + vw` words (above), so `h <= words.len()`.
        let (hdr, cells) = unsafe { words.split_at_unchecked(h) };
        // SAFETY: `cells` is `stride - h >= kw + vw` words, so `kw <= cells.len()`.
        let (ks, rest) = unsafe { cells.split_at_unchecked(kw) };
        // SAFETY: `rest` is `stride - h - kw >= vw` words.
        let vs = unsafe { rest.get_unchecked(..vw) };
        Leaf {
            hdr,
            ks,
            vs,
            cap: self.cap,
            _kv: PhantomData,
        }
    }
}

impl<K: Key, V: Pod> Leaf<'_, K, V> {
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub(crate) fn version(&self) -> &AtomicU64 {
        &self.hdr[VERSION]
    }

    /// Tries to lock the leaf (see [`Pma::try_lock`]).
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub(crate) fn try_lock(&self) -> bool {
        super::try_lock(self.version())
    }

    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub(crate) fn meta(&self) -> u64 {
        self.hdr[META].load(Ordering::Relaxed)
    }

    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub(crate) fn count_of(&self, meta: u64) -> usize {
        // A torn (unvalidated) meta word must not send a reader out of bounds.
        ((meta & COUNT_MASK) as usize).min(self.cap)
    }

    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub(crate) fn lo(&self) -> K {
        load::<K>(&self.hdr[FENCES..], 0)
    }

    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub(crate) fn hi(&self) -> K {
        load::<K>(&self.hdr[FENCES + K::WORDS..], 0)
    }

    /// Where `k` lies relative to the fences (`meta` read with them): the leaf owns
    /// `[lo, hi)`.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub(crate) fn owns<Q: ?Sized + Ord>(&self, meta: u64, k: &Q) -> Cmp
    where
        K: Borrow<Q>,
    {
        if meta & LO_NEG_INF == 0 && k < Borrow::<Q>::borrow(&self.lo()) {
            Cmp::Less
        } else if meta & HI_INF == 0 && k >= Borrow::<Q>::borrow(&self.hi()) {
            Cmp::Greater
        } else {
            Cmp::Equal
        }
    }

    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub(crate) fn key(&self, s: usize) -> K {
        load::<K>(self.ks, s)
    }

    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub(crate) fn val(&self, s: usize) -> V {
        load::<V>(self.vs, s)
    }

    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub(crate) fn set_key(&self, s: usize, k: K) {
        store::<K>(self.ks, s, k);
    }

    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub(crate) fn set_val(&self, s: usize, v: V) {
        store::<V>(self.vs, s, v);
    }

    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub(crate) fn set_count(&self, meta: u64, n: usize) {
        let m = (meta & !COUNT_MASK) | n as u64;
        self.hdr[META].store(m, Ordering::Relaxed);
    }

    /// The slot of `k` among the `n` keys (`Ok`), or where it would go; `binary`: search
    /// (a leaf in cache), else scan (a leaf being prefetched: the scan starts on its
    /// first lines while the rest arrive).
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub(crate) fn find<Q: ?Sized + Ord>(
        &self,
        n: usize,
        k: &Q,
        binary: bool,
    ) -> Result<usize, usize>
    where
        K: Borrow<Q>,
    {
        // Appends (sorted input) go past the last key: one comparison, not a search.
        if n == 0 || Borrow::<Q>::borrow(&self.key(n - 1)) < k {
            return Err(n);
        }
        if binary {
            let s = search::<K, Q>(self.ks, n, k);
            return match Borrow::<Q>::borrow(&self.key(s)).cmp(k) {
                Cmp::Equal => Ok(s),
                Cmp::Less => Err(s + 1),
                Cmp::Greater => Err(s),
            };
        }
        for s in 0..n {
            let x = self.key(s);
            if Borrow::<Q>::borrow(&x) >= k {
                return if Borrow::<Q>::borrow(&x) == k {
                    Ok(s)
                } else {
                    Err(s)
                };
            }
        }
        Err(n)
    }

    /// Puts `(k, v)` at slot `pos` of the `n` elements (the leaf has room).
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub(crate) fn insert_at(&self, meta: u64, n: usize, pos: usize, k: K, v: V) {
        shift_up::<K, V>(self.ks, self.vs, pos, n);
        self.set_key(pos, k);
        self.set_val(pos, v);
        self.set_count(meta, n + 1);
    }

    /// Removes slot `s` of the `n` elements; returns it.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub(crate) fn take(&self, meta: u64, n: usize, s: usize) -> (K, V) {
        let old = (self.key(s), self.val(s));
        shift_down::<K, V>(self.ks, self.vs, s, n);
        self.set_count(meta, n - 1);
        old
    }
}

/// Stores `t` at element `i` of a key or value slice.
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
fn store<T: Pod>(ws: &[AtomicU64], i: usize, t: T) {
    let w = t.to_words();
    if T::WORDS == 1 {
        ws[i].store(w[0], Ordering::Relaxed);
        return;
    }
    for (a, x) in ws[i * T::WORDS..(i + 1) * T::WORDS].iter().zip(w) {
        a.store(x, Ordering::Relaxed);
    }
}
