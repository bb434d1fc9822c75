//! The packed memory array: layout, per-leaf seqlocks, the static index, and every
//! structural change. Safe code except [`root`] (publishing and reclaiming arrays),
//! [`hint`] (prefetch, the zeroed lines), [`inl`] (inline values' bytes), `repr`'s
//! unreachable tag, `leaf`'s unchecked splits and one unchecked load in the leaf search
//! below. The boxed path's store of entries, which uses this core as its index, is
//! `crate::entries`.
//!
//! # Layout
//!
//! One array is `leaves` (a power of two) leaves of `stride` words each, every leaf starting
//! on a cache line:
//!
//! ```text
//!  word 0      1            2..2+KW   2+KW..2+2KW   keys: cap*KW words   values: cap*VW words
//! +---------+------------+---------+-------------+--------------------+--------------------+
//! | version | count|flags | lo fence| hi fence    | k0 k1 .. k(n-1) __ | v0 v1 .. v(n-1) __ |
//! +---------+------------+---------+-------------+--------------------+--------------------+
//! ```
//!
//! The header is the leaf's *inline marker*: `version` is the seqlock (odd = a writer or a
//! move is in progress), `count|flags` the number of packed elements plus whether the leaf's
//! fences are -inf / +inf, and the fences bound the keys the leaf owns, `[lo, hi)`.
//! Leaf `j` owns exactly the keys in its fences; fences change only while the leaf is locked,
//! so a validated read of one leaf proves both its contents and that the key looked for
//! cannot be anywhere else.
//!
//! Leaves `>= live_end` are unused tail space (for the append fast path); the index pads
//! them with `K::MAX`.

pub(crate) mod geometry;
mod hint;
pub(crate) mod inl;
pub(crate) mod iter;
pub(crate) mod key;
mod leaf;
pub(crate) mod map;
mod read;
pub(crate) mod rebuild;
pub(crate) mod repr;
mod root;
mod write;

use geometry::leaf_words;
pub use geometry::{
    FINE_GROWTH_BYTES, LEAF_BYTES, LOWER_ROOT, MAX_LEAF_CAPACITY, MIN_LEAF_CAPACITY, UPPER_ROOT,
    WIDE_LEAF_FACTOR,
};
pub(crate) use geometry::{Geometry, Growth, default_leaf_capacity, fits};
pub(crate) use leaf::Leaf;
pub(crate) use read::{Offsets, Seek};
pub(crate) use root::{Guard, Held, Root, collect, pin};
pub use root::{KEPT_ARRAY_BYTES, KEPT_TOTAL_BYTES};
pub(crate) use write::{Edit, Upsert};

use crate::sync::{AtomicU64, AtomicUsize, Ordering, fence};
use core::cmp::Ordering as Cmp;
use core::marker::PhantomData;
use key::Borrow;
use key::{Key, Pod};

/// Marks the branch that calls it as the unlikely one, so the compiler lays the other out
/// as the straight path (`core::hint::cold_path` is newer than the crate's MSRV).
#[cold]
#[inline]
pub(crate) fn cold() {}

/// Bytes per cache line; every leaf starts on one.
pub const CACHE_LINE: usize = 64;

const WORDS_PER_LINE: usize = CACHE_LINE / 8;

#[cfg(not(loom))]
#[repr(C, align(64))]
pub(crate) struct Line([AtomicU64; WORDS_PER_LINE]);

#[cfg(not(loom))]
const _: () = assert!(core::mem::size_of::<Line>() == CACHE_LINE);
#[cfg(not(loom))]
const _: () = assert!(core::mem::align_of::<Line>() == CACHE_LINE);

/// The storage of one array: whole cache lines, read as one flat slice of words.
#[cfg(not(loom))]
type Store = hint::Lines;
/// Under loom alignment does not matter (and loom's atomics are not 8 bytes): plain words.
#[cfg(loom)]
type Store = Box<[AtomicU64]>;

/// `n` zeroed cache lines. Off loom this is one zeroed allocation (`calloc`: large arrays
/// come straight from the OS as untouched zero pages, so unused tail leaves cost nothing).
fn zeroed_lines(n: usize) -> Store {
    #[cfg(not(loom))]
    {
        hint::Lines::zeroed(n)
    }
    #[cfg(loom)]
    {
        (0..n * WORDS_PER_LINE).map(|_| AtomicU64::new(0)).collect()
    }
}

const VERSION: usize = 0;
const META: usize = 1;
const FENCES: usize = 2;

const COUNT_MASK: u64 = u32::MAX as u64;
const LO_NEG_INF: u64 = 1 << 32;
const HI_INF: u64 = 1 << 33;

/// The version bit of a *frozen* leaf: a rebuild (growth, shrink, clear) sets it on every
/// leaf of the old array before copying it. Writers refuse a frozen leaf (they wait for the
/// new array); readers ignore the bit, so they keep reading the old array, whose contents no
/// longer change, until the new one is published. Bit 0 is the write lock; writes add 2, so
/// the count never reaches this bit.
pub(crate) const FROZEN: u64 = 1 << 63;

/// Arrays up to this many bytes are not prefetched: they sit in a core's L2 cache
/// (512 KiB on the machine measured), where a prefetch only costs instructions (about 60 of
/// the 300 a `get` on a 100-key map cost before this bound).
const PREFETCH_MIN_BYTES: usize = 256 << 10;

/// What one validated look at a leaf says.
pub(crate) enum Probe<T> {
    /// The leaf owns the key; here is the answer.
    Here(T),
    /// The key is owned by a leaf further left.
    Left,
    /// The key is owned by a leaf further right.
    Right,
    /// The leaf was being written (or the array retired): reload and retry.
    Busy,
}

/// One packed memory array. Shared between threads only behind a [`Root`].
pub(crate) struct Pma<K, V> {
    lines: Store,
    /// Eytzinger-ordered lower fences of leaves `1..leaves` (node `p` at words `p*KW..`).
    /// Cache-line aligned, so the 16 nodes four levels below a node (`16 * KW` words)
    /// are exactly `2 * KW` whole lines.
    index: Store,
    leaves: usize,
    height: u32,
    cap: usize,
    stride: usize,
    /// Leaves `>= live_end` own no keys yet; only grows within one array.
    live_end: AtomicUsize,
    /// The lower fence of leaf `live_end - 1` (a hint, like the index): appends find their
    /// leaf with one comparison instead of a search.
    tail_lo: [AtomicU64; 2],
    /// Whether reads and writes prefetch (the array is larger than [`PREFETCH_MIN_BYTES`]).
    prefetch: bool,
    _kv: PhantomData<fn() -> (K, V)>,
}

impl<K, V> Pma<K, V> {
    /// Bytes of the leaf lines (what [`KEPT_ARRAY_BYTES`] bounds).
    pub(crate) fn lines_bytes(&self) -> usize {
        self.leaves * self.stride * 8
    }

    /// Bytes this array allocated: its lines and its index, as the allocator was asked.
    pub(crate) fn heap_bytes(&self) -> usize {
        store_bytes(&self.lines) + store_bytes(&self.index)
    }
}

/// Bytes the allocation of `store` asked for.
fn store_bytes(store: &Store) -> usize {
    #[cfg(not(loom))]
    {
        store.alloc_bytes()
    }
    #[cfg(loom)]
    {
        store.len() * core::mem::size_of::<AtomicU64>()
    }
}

impl<K: Key, V: Pod> Pma<K, V> {
    /// An array of `leaves` empty leaves (a power of two) of `cap` elements; leaf 0 owns
    /// every key.
    pub(crate) fn new_empty(leaves: usize, cap: usize) -> Self {
        assert!(
            leaves.is_power_of_two(),
            "leaf count must be a power of two"
        );
        let stride = leaf_words::<K, V>(cap);
        let words = leaves
            .checked_mul(stride)
            .expect("CobTree capacity overflows usize");
        let lines = zeroed_lines(words / WORDS_PER_LINE);
        let index = zeroed_lines((leaves * K::WORDS).div_ceil(WORDS_PER_LINE).max(1));
        let pma = Pma {
            lines,
            index,
            leaves,
            height: leaves.trailing_zeros(),
            cap,
            stride,
            live_end: AtomicUsize::new(1),
            tail_lo: [AtomicU64::new(0), AtomicU64::new(0)],
            prefetch: words * 8 > PREFETCH_MIN_BYTES,
            _kv: PhantomData,
        };
        for p in 1..leaves {
            pma.store_words(
                pma.index_span(p * K::WORDS, K::WORDS),
                K::greatest().to_words(),
                K::WORDS,
            );
        }
        pma.word(META).store(LO_NEG_INF | HI_INF, Ordering::Relaxed);
        pma
    }

    pub(crate) fn leaves(&self) -> usize {
        self.leaves
    }

    pub(crate) fn cap(&self) -> usize {
        self.cap
    }

    pub(crate) fn geometry(&self) -> Geometry {
        Geometry {
            leaves: self.leaves,
            cap: self.cap,
        }
    }

    pub(crate) fn live_end(&self) -> usize {
        self.live_end.load(Ordering::Acquire)
    }

    // ----- words ------------------------------------------------------------------------

    /// Words `start..start + len` of the array, flat (leaf `j` starts at `j * stride`).
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn span(&self, start: usize, len: usize) -> &[AtomicU64] {
        span(&self.lines, start, len)
    }

    /// Every word of the array, flat (for reads that index it with precomputed offsets).
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn words(&self) -> Words<'_> {
        #[cfg(not(any(loom, miri)))]
        {
            Words(self.lines.all())
        }
        #[cfg(any(loom, miri))]
        {
            Words(&self.lines)
        }
    }

    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn word(&self, i: usize) -> &AtomicU64 {
        &self.span(i, 1)[0]
    }

    /// Copies words `src..src + len` to `dst..dst + len` of the array (overlap allowed).
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn copy_within_array(&self, src: usize, dst: usize, len: usize) {
        if len > 0 {
            let lo = src.min(dst);
            let w = self.span(lo, src.max(dst) + len - lo);
            copy_words(w, src - lo, dst - lo, len);
        }
    }

    /// Leaf `j`'s key words and value words (`cap` elements each), bounds-checked once.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn cells(&self, j: usize) -> (&[AtomicU64], &[AtomicU64]) {
        let k0 = self.key_off(j, 0);
        let kw = self.cap * K::WORDS;
        self.span(k0, kw + self.cap * V::WORDS).split_at(kw)
    }

    /// Copies `len` elements from global cell `src` to global cell `dst` (cell `c` is slot
    /// `c % cap` of leaf `c / cap`); the ranges may overlap, like `copy_within`. Runs of
    /// cells that stay within one leaf on both sides move as two word loops.
    fn copy_cells(&self, src: usize, dst: usize, len: usize) {
        let cap = self.cap;
        if len == 0 || src == dst {
            return;
        }
        if dst < src {
            let mut done = 0;
            while done < len {
                let (s, d) = (src + done, dst + done);
                let c = (len - done).min(cap - s % cap).min(cap - d % cap);
                self.copy_run(s, d, c);
                done += c;
            }
        } else {
            let mut left = len;
            while left > 0 {
                let (s, d) = (src + left, dst + left);
                let c = left.min((s - 1) % cap + 1).min((d - 1) % cap + 1);
                self.copy_run(s - c, d - c, c);
                left -= c;
            }
        }
    }

    /// `copy_cells` for a run that stays within one leaf at both ends.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn copy_run(&self, s: usize, d: usize, c: usize) {
        let (sj, ss, dj, ds) = (s / self.cap, s % self.cap, d / self.cap, d % self.cap);
        self.copy_within_array(self.key_off(sj, ss), self.key_off(dj, ds), c * K::WORDS);
        self.copy_within_array(self.val_off(sj, ss), self.val_off(dj, ds), c * V::WORDS);
    }

    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn load_at<T: Pod>(&self, off: usize) -> T {
        let mut w = [0u64; 2];
        for (i, x) in w.iter_mut().enumerate().take(T::WORDS) {
            *x = self.word(off + i).load(Ordering::Relaxed);
        }
        T::from_words(w)
    }

    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn store_at<T: Pod>(&self, off: usize, t: T) {
        let w = t.to_words();
        for (i, x) in w.iter().enumerate().take(T::WORDS) {
            self.word(off + i).store(*x, Ordering::Relaxed);
        }
    }

    fn store_words(&self, dst: &[AtomicU64], w: [u64; 2], n: usize) {
        for i in 0..n {
            dst[i].store(w[i], Ordering::Relaxed);
        }
    }

    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn base(&self, j: usize) -> usize {
        j * self.stride
    }

    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn key_off(&self, j: usize, s: usize) -> usize {
        self.base(j) + FENCES + 2 * K::WORDS + s * K::WORDS
    }

    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn val_off(&self, j: usize, s: usize) -> usize {
        self.base(j) + FENCES + 2 * K::WORDS + self.cap * K::WORDS + s * V::WORDS
    }

    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn key(&self, j: usize, s: usize) -> K {
        self.load_at(self.key_off(j, s))
    }

    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn val(&self, j: usize, s: usize) -> V {
        self.load_at(self.val_off(j, s))
    }

    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn meta(&self, j: usize) -> u64 {
        self.word(self.base(j) + META).load(Ordering::Relaxed)
    }

    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn count_of(&self, meta: u64) -> usize {
        // A torn (unvalidated) meta word must not send a reader out of bounds.
        ((meta & COUNT_MASK) as usize).min(self.cap)
    }

    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn count(&self, j: usize) -> usize {
        self.count_of(self.meta(j))
    }

    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn lo(&self, j: usize) -> K {
        self.load_at(self.base(j) + FENCES)
    }

    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn hi(&self, j: usize) -> K {
        self.load_at(self.base(j) + FENCES + K::WORDS)
    }

    /// Where `k` lies relative to leaf `j`'s fences (`meta` read with them): the leaf owns
    /// the keys in `[lo, hi)`.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn owns<Q: ?Sized + Ord>(&self, j: usize, meta: u64, k: &Q) -> Cmp
    where
        K: Borrow<Q>,
    {
        if meta & LO_NEG_INF == 0 && k < Borrow::<Q>::borrow(&self.lo(j)) {
            Cmp::Less
        } else if meta & HI_INF == 0 && k >= Borrow::<Q>::borrow(&self.hi(j)) {
            Cmp::Greater
        } else {
            Cmp::Equal
        }
    }

    /// Where the position just below `k` lies relative to leaf `j`'s fences: the leaf
    /// holds the keys below `k` nearest to it when `lo < k <= hi` (a backward scan).
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn owns_below<Q: ?Sized + Ord>(&self, j: usize, meta: u64, k: &Q) -> Cmp
    where
        K: Borrow<Q>,
    {
        if meta & LO_NEG_INF == 0 && k <= Borrow::<Q>::borrow(&self.lo(j)) {
            Cmp::Less
        } else if meta & HI_INF == 0 && k > Borrow::<Q>::borrow(&self.hi(j)) {
            Cmp::Greater
        } else {
            Cmp::Equal
        }
    }

    // ----- seqlock -----------------------------------------------------------------------

    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn version(&self, j: usize) -> &AtomicU64 {
        self.word(self.base(j) + VERSION)
    }

    /// Starts a validated read of leaf `j`: its version if no writer holds it.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn read_begin(&self, j: usize) -> Option<u64> {
        let v = self.version(j).load(Ordering::Acquire);
        (v & 1 == 0).then_some(v)
    }

    /// Ends a read begun at version `v`: true if nothing changed the leaf meanwhile (being
    /// frozen changes nothing in it).
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn read_end(&self, j: usize, v: u64) -> bool {
        // Pairs with the writer's release fence after locking: if any word read above was
        // written by a later writer, this load sees that writer's odd version (or later).
        fence(Ordering::Acquire);
        (self.version(j).load(Ordering::Relaxed) ^ v) & !FROZEN == 0
    }

    /// Ends a read begun at version `v` exactly: true if the leaf did not change and was
    /// not frozen meanwhile (iterators, which must also notice that the array is retiring).
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub(crate) fn still(&self, j: usize, v: u64) -> bool {
        fence(Ordering::Acquire);
        self.version(j).load(Ordering::Relaxed) == v
    }

    /// Tries to lock leaf `j` for writing; fails while another writer holds it and for good
    /// once it is frozen.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub(crate) fn try_lock(&self, j: usize) -> bool {
        try_lock(self.version(j))
    }

    /// Locks leaf `j`, waiting for the (short, single-leaf) writer that holds it. Only
    /// the structure-lock holder calls this on the current array, so the holder is an
    /// in-leaf writer that never waits while holding a leaf.
    pub(crate) fn lock_spin(&self, j: usize) {
        let mut spins = 0;
        while !self.try_lock(j) {
            crate::sync::spin_wait(&mut spins);
        }
    }

    /// Unlocks leaf `j`; the version moves to the next even number (63 bits, +2 per write:
    /// it would take centuries of writes to one leaf to reach [`FROZEN`]).
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub(crate) fn unlock(&self, j: usize) {
        let ver = self.version(j);
        let v = ver.load(Ordering::Relaxed);
        debug_assert!(v & 1 == 1, "unlocking a leaf that is not locked");
        ver.store(v + 1, Ordering::Release);
    }

    /// Freezes leaf `j` (see [`FROZEN`]), waiting for the in-leaf writer that holds it, if
    /// any (it never waits while holding it). Only the structure-lock holder freezes.
    pub(crate) fn freeze(&self, j: usize) {
        let ver = self.version(j);
        let mut spins = 0;
        loop {
            let v = ver.load(Ordering::Relaxed);
            // Acquire: the copy that follows sees every write of the last writer.
            if v & 1 == 0
                && ver
                    .compare_exchange(v, v | FROZEN, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
            {
                return;
            }
            crate::sync::spin_wait(&mut spins);
        }
    }

    /// Unlocks leaf `j` (held by the caller, which changed nothing in it) and freezes it in
    /// the same store.
    pub(crate) fn unlock_frozen(&self, j: usize) {
        let ver = self.version(j);
        let v = ver.load(Ordering::Relaxed);
        debug_assert!(v & 1 == 1, "unlocking a leaf that is not locked");
        ver.store((v + 1) | FROZEN, Ordering::Release);
    }

    /// Undoes [`freeze`](Self::freeze) of a leaf nothing was copied from (a shrink that
    /// turned out not to be needed): writers may use it again.
    pub(crate) fn thaw(&self, j: usize) {
        let ver = self.version(j);
        let v = ver.load(Ordering::Relaxed);
        debug_assert!(v & FROZEN != 0, "thawing a leaf that is not frozen");
        ver.store((v & !FROZEN) + 2, Ordering::Release);
    }

    // ----- index -------------------------------------------------------------------------

    /// Index words `start..start + len` (node `p` at `p * KW..`), flat.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn index_span(&self, start: usize, len: usize) -> &[AtomicU64] {
        span(&self.index, start, len)
    }

    /// Eytzinger position of the fence of in-order rank `r` (the lower fence of leaf r+1).
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn pos_of_rank(&self, r: usize) -> usize {
        let i = r + 1;
        let tz = i.trailing_zeros();
        let depth = self.height - 1 - tz;
        (1usize << depth) + ((i >> tz) >> 1)
    }

    /// In-order rank of Eytzinger position `p` (a perfect tree of `leaves - 1` nodes).
    #[cfg(test)]
    fn rank_of_pos(&self, p: usize) -> usize {
        let depth = usize::BITS - 1 - p.leading_zeros();
        let j = p - (1usize << depth);
        ((2 * j + 1) << (self.height - 1 - depth)) - 1
    }

    fn set_index(&self, leaf: usize, k: K) {
        let p = self.pos_of_rank(leaf - 1);
        self.store_words(
            self.index_span(p * K::WORDS, K::WORDS),
            k.to_words(),
            K::WORDS,
        );
    }

    /// The leaf the index says owns `k`: the last live leaf whose lower fence is `<= k`.
    /// A hint only (the index may be mid-update); callers validate with the fences.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub(crate) fn locate<Q: ?Sized + Ord>(&self, k: &Q) -> usize
    where
        K: Borrow<Q>,
    {
        let live = self.live_end.load(Ordering::Relaxed).max(1);
        if live == 1 {
            return 0;
        }
        let mut w = [0u64; 2];
        for (i, x) in w.iter_mut().enumerate().take(K::WORDS) {
            *x = self.tail_lo[i].load(Ordering::Relaxed);
        }
        if k >= Borrow::<Q>::borrow(&K::from_words(w)) {
            return live - 1;
        }
        // `height` levels of a perfect tree of `leaves - 1` nodes: `p < leaves` throughout,
        // so `p & mask == p`; the mask only lets the compiler drop the bounds check.
        let idx = self.index_span(0, self.leaves * K::WORDS);
        let mask = self.leaves - 1;
        let mut p = 1usize;
        if self.prefetch {
            for _ in 0..self.height {
                // The 16 great-great-grandchildren of `p` are contiguous (two lines for one
                // word keys, aligned): start fetching them now. Past the last levels this
                // points beyond the index, which a prefetch tolerates.
                for line in 0..2 * K::WORDS {
                    hint::prefetch_at(idx, 16 * p * K::WORDS + WORDS_PER_LINE * line);
                }
                p = 2 * p + usize::from(Borrow::<Q>::borrow(&load::<K>(idx, p & mask)) <= k);
            }
        } else {
            for _ in 0..self.height {
                p = 2 * p + usize::from(Borrow::<Q>::borrow(&load::<K>(idx, p & mask)) <= k);
            }
        }
        // After `height` levels `p` is the external node in `leaves..2 * leaves` whose
        // in-order rank, `p - leaves`, is the number of fences `<= k`: the leaf.
        (p - self.leaves).min(live - 1)
    }

    fn set_tail(&self, k: K) {
        let w = k.to_words();
        for (i, x) in w.iter().enumerate().take(K::WORDS) {
            self.tail_lo[i].store(*x, Ordering::Relaxed);
        }
    }

    /// Starts loading every line of leaf `j` in parallel (a writer reads the header and
    /// keys and shifts values: one memory round trip instead of several).
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub(crate) fn prefetch_leaf(&self, j: usize) {
        if self.prefetch {
            self.prefetch_lines(self.base(j), self.stride);
        }
    }

    /// Starts loading leaf `j`'s header and key lines in parallel.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub(crate) fn prefetch_keys(&self, j: usize) {
        if self.prefetch {
            self.prefetch_lines(self.base(j), FENCES + 2 * K::WORDS + self.cap * K::WORDS);
        }
    }

    /// Prefetches the lines of words `first..first + len` (`first` on a line boundary).
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn prefetch_lines(&self, first: usize, len: usize) {
        let w = self.words();
        let mut off = first;
        while off < first + len {
            w.prefetch(off);
            off += WORDS_PER_LINE;
        }
    }
}

/// An array's words for indexed reads: the whole flat slice natively; under loom and
/// Miri the storage, sliced per access (Miri retags all that a reference covers).
#[derive(Clone, Copy)]
struct Words<'a>(
    #[cfg(not(any(loom, miri)))] &'a [AtomicU64],
    #[cfg(any(loom, miri))] &'a Store,
);

impl<'a> Words<'a> {
    /// Word `i`.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn at(self, i: usize) -> &'a AtomicU64 {
        #[cfg(not(any(loom, miri)))]
        {
            &self.0[i]
        }
        #[cfg(any(loom, miri))]
        {
            &span(self.0, i, 1)[0]
        }
    }

    /// Words `start..start + len`.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn slice(self, start: usize, len: usize) -> &'a [AtomicU64] {
        #[cfg(not(any(loom, miri)))]
        {
            &self.0[start..start + len]
        }
        #[cfg(any(loom, miri))]
        {
            span(self.0, start, len)
        }
    }

    /// Starts loading the line of word `i` (no bounds check: a prefetch never faults).
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn prefetch(self, i: usize) {
        #[cfg(not(any(loom, miri)))]
        hint::prefetch_at(self.0, i);
        #[cfg(any(loom, miri))]
        let _ = i;
    }

    /// The `T` stored at word `off` (one indexed load for one-word types).
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn load<T: Pod>(self, off: usize) -> T {
        if T::WORDS == 1 {
            return T::from_words([self.at(off).load(Ordering::Relaxed), 0]);
        }
        load::<T>(self.slice(off, T::WORDS), 0)
    }
}

/// Tries to lock the leaf whose version word is `ver` (see [`Pma::try_lock`]).
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
fn try_lock(ver: &AtomicU64) -> bool {
    let v = ver.load(Ordering::Relaxed);
    if v & (1 | FROZEN) != 0
        || ver
            .compare_exchange(v, v + 1, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
    {
        return false;
    }
    // Orders the odd version before every data store of this write (see `read_end`).
    fence(Ordering::Release);
    true
}

/// Words `start..start + len` of an array's storage (`Lines` off loom, plain words on it).
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
fn span(store: &Store, start: usize, len: usize) -> &[AtomicU64] {
    #[cfg(not(loom))]
    {
        store.words(start, len)
    }
    #[cfg(loom)]
    {
        &store[start..start + len]
    }
}

/// The slot of the last of the first `n` (at least one) keys of `ks` that is `<= k`, or 0
/// when every key is greater: a binary search without data-dependent branches (the
/// comparison picks the next base with a conditional move), so an unpredictable key costs
/// no mispredicted branch. The first probe, at `n - p` (`p` the largest power of two
/// `<= n`), leaves a power-of-two range `base..base + p`, which the rest halves with
/// precomputed steps (no length bookkeeping: seven instructions a step instead of ten).
/// The slot is below `n` whatever the keys hold, so a torn, unvalidated leaf can only give
/// a wrong answer, which its version check then discards.
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
fn search<K: Key + Borrow<Q>, Q: ?Sized + Ord>(ks: &[AtomicU64], n: usize, k: &Q) -> usize {
    let ks = &ks[..n * K::WORDS];
    let at = |i: usize| {
        debug_assert!(i < n);
        // SAFETY: every call below passes `i < n` (argued at each), and `ks` is exactly
        // `n` elements of `K::WORDS` words (sliced above), so element `i` lies inside it.
        // The check the compiler cannot elide here was a compare and branch per step, on
        // every search.
        let w = unsafe { ks.get_unchecked(i * K::WORDS..(i + 1) * K::WORDS) };
        load::<K>(w, 0)
    };
    let p = 1usize << (usize::BITS - 1 - n.leading_zeros());
    // `n >= 1`, so `1 <= p <= n` and `n - p < n`. The answer lies in `0..p` if the key at
    // `n - p` is greater (then it is below `n - p < p`), else in `n - p..n`.
    let mut base = if Borrow::<Q>::borrow(&at(n - p)) <= k {
        n - p
    } else {
        0
    };
    // Invariant: the answer lies in `base..base + 2 * step` and `base + 2 * step <= n`,
    // so the probe `base + step < n`.
    let mut step = p / 2;
    while step > 0 {
        base = core::hint::select_unpredictable(
            Borrow::<Q>::borrow(&at(base + step)) <= k,
            base + step,
            base,
        );
        step /= 2;
    }
    base
}

/// Loads the `T` stored at element `i` of a key or value slice.
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
fn load<T: Pod>(ws: &[AtomicU64], i: usize) -> T {
    // The common one-word case as a single indexed load (`WORDS` is a constant).
    if T::WORDS == 1 {
        return T::from_words([ws[i].load(Ordering::Relaxed), 0]);
    }
    let mut w = [0u64; 2];
    for (x, a) in w.iter_mut().zip(&ws[i * T::WORDS..(i + 1) * T::WORDS]) {
        *x = a.load(Ordering::Relaxed);
    }
    T::from_words(w)
}

/// Copies words `src..src + len` of `ws` to `dst..dst + len` (overlap allowed), like
/// `copy_within`; relaxed atomics, as every cell access. Four words at a time, each group
/// loaded whole before it is stored and the groups taken in the order that reads every
/// source word before it is overwritten, so overlaps of any distance copy correctly. (The
/// compiler neither vectorizes nor unrolls atomic loops, and an insert into a wide leaf
/// shifts tens of words.)
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
fn copy_words(ws: &[AtomicU64], src: usize, dst: usize, len: usize) {
    let (lo, hi) = (src.min(dst), src.max(dst));
    let s = &ws[lo..hi + len];
    let d = hi - lo;
    let (upper, lower) = (&s[d..d + len], &s[..len]);
    let copy4 = |to: &[AtomicU64; 4], from: &[AtomicU64; 4]| {
        let w = from.each_ref().map(|f| f.load(Ordering::Relaxed));
        for (t, w) in to.iter().zip(w) {
            t.store(w, Ordering::Relaxed);
        }
    };
    if dst > src {
        // Shift up: highest group first, then the words below the groups, highest first.
        let (t_rest, t4) = upper.as_rchunks::<4>();
        let (f_rest, f4) = lower.as_rchunks::<4>();
        t4.iter()
            .rev()
            .zip(f4.iter().rev())
            .for_each(|(t, f)| copy4(t, f));
        for (t, f) in t_rest.iter().rev().zip(f_rest.iter().rev()) {
            t.store(f.load(Ordering::Relaxed), Ordering::Relaxed);
        }
    } else if dst < src {
        // Shift down: lowest group first, then the words above the groups.
        let (t4, t_rest) = lower.as_chunks::<4>();
        let (f4, f_rest) = upper.as_chunks::<4>();
        t4.iter().zip(f4).for_each(|(t, f)| copy4(t, f));
        for (t, f) in t_rest.iter().zip(f_rest) {
            t.store(f.load(Ordering::Relaxed), Ordering::Relaxed);
        }
    }
}

/// Opens slot `pos` of a leaf holding `n < cap` elements: elements `pos..n` of the key
/// words `ks` and the value words `vs` move up one slot, keys and values in one pass (an
/// insert's shift, the largest cost of a random insert into a small map).
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
fn shift_up<K: Pod, V: Pod>(ks: &[AtomicU64], vs: &[AtomicU64], pos: usize, n: usize) {
    if K::WORDS != 1 || V::WORDS != 1 {
        let (kw, vw) = (K::WORDS, V::WORDS);
        copy_words(ks, pos * kw, (pos + 1) * kw, (n - pos) * kw);
        copy_words(vs, pos * vw, (pos + 1) * vw, (n - pos) * vw);
        return;
    }
    // One word each: element `e` of these slices moves to `e + 1`, highest first; each
    // group of four is loaded whole before any of it is stored, so nothing is overwritten
    // before it is read.
    let (ks, vs) = (&ks[pos..=n], &vs[pos..=n]);
    let m = n - pos;
    // Unchecked: `ks` and `vs` are `m + 1` words long (sliced, checked, above), and every
    // index used is at most `i <= m` (`i` starts at `m` and only falls). The bounds checks
    // this skips were four compares and branches per group of four (the compiler cannot
    // relate the falling `i` to the lengths), nearly doubling the shift's instructions.
    let kat = |i: usize| {
        debug_assert!(i <= m);
        // SAFETY: see above.
        unsafe { ks.get_unchecked(i) }
    };
    let vat = |i: usize| {
        debug_assert!(i <= m);
        // SAFETY: see above.
        unsafe { vs.get_unchecked(i) }
    };
    let mut i = m;
    while i >= 4 {
        let k = [
            kat(i - 1).load(Ordering::Relaxed),
            kat(i - 2).load(Ordering::Relaxed),
            kat(i - 3).load(Ordering::Relaxed),
            kat(i - 4).load(Ordering::Relaxed),
        ];
        let v = [
            vat(i - 1).load(Ordering::Relaxed),
            vat(i - 2).load(Ordering::Relaxed),
            vat(i - 3).load(Ordering::Relaxed),
            vat(i - 4).load(Ordering::Relaxed),
        ];
        for (d, (k, v)) in k.into_iter().zip(v).enumerate() {
            kat(i - d).store(k, Ordering::Relaxed);
            vat(i - d).store(v, Ordering::Relaxed);
        }
        i -= 4;
    }
    while i > 0 {
        kat(i).store(kat(i - 1).load(Ordering::Relaxed), Ordering::Relaxed);
        vat(i).store(vat(i - 1).load(Ordering::Relaxed), Ordering::Relaxed);
        i -= 1;
    }
}

/// Closes slot `s` of a leaf holding `n > s` elements: elements `s + 1..n` move down one
/// slot, keys and values in one pass (a remove's shift; see [`shift_up`]).
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
fn shift_down<K: Pod, V: Pod>(ks: &[AtomicU64], vs: &[AtomicU64], s: usize, n: usize) {
    if K::WORDS != 1 || V::WORDS != 1 {
        let (kw, vw) = (K::WORDS, V::WORDS);
        copy_words(ks, (s + 1) * kw, s * kw, (n - s - 1) * kw);
        copy_words(vs, (s + 1) * vw, s * vw, (n - s - 1) * vw);
        return;
    }
    // Element `e + 1` of these slices moves to `e`, lowest first, four at a time.
    let (ks, vs) = (&ks[s..n], &vs[s..n]);
    let m = ks.len();
    // Unchecked: `ks` and `vs` are `m` words long (sliced, checked, above), and every index
    // used is below `m`: the loops run only while `i + 4 < m` and `i + 1 < m`.
    let kat = |i: usize| {
        debug_assert!(i < m);
        // SAFETY: see above.
        unsafe { ks.get_unchecked(i) }
    };
    let vat = |i: usize| {
        debug_assert!(i < m);
        // SAFETY: see above.
        unsafe { vs.get_unchecked(i) }
    };
    let mut i = 0;
    while i + 4 < m {
        let k = [
            kat(i + 1).load(Ordering::Relaxed),
            kat(i + 2).load(Ordering::Relaxed),
            kat(i + 3).load(Ordering::Relaxed),
            kat(i + 4).load(Ordering::Relaxed),
        ];
        let v = [
            vat(i + 1).load(Ordering::Relaxed),
            vat(i + 2).load(Ordering::Relaxed),
            vat(i + 3).load(Ordering::Relaxed),
            vat(i + 4).load(Ordering::Relaxed),
        ];
        for (d, (k, v)) in k.into_iter().zip(v).enumerate() {
            kat(i + d).store(k, Ordering::Relaxed);
            vat(i + d).store(v, Ordering::Relaxed);
        }
        i += 4;
    }
    while i + 1 < m {
        kat(i).store(kat(i + 1).load(Ordering::Relaxed), Ordering::Relaxed);
        vat(i).store(vat(i + 1).load(Ordering::Relaxed), Ordering::Relaxed);
        i += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pma::inl::{Inl, Look};

    #[test]
    fn eytzinger_rank_round_trip() {
        for leaves in [2usize, 4, 8, 64, 1024] {
            let p: Pma<Inl<u64>, Inl<u64>> = Pma::new_empty(leaves, 4);
            let mut seen = vec![false; leaves];
            for r in 0..leaves - 1 {
                let pos = p.pos_of_rank(r);
                assert!(pos >= 1 && pos < leaves);
                assert!(!seen[pos]);
                seen[pos] = true;
                assert_eq!(p.rank_of_pos(pos), r);
            }
        }
    }

    #[test]
    fn locate_finds_owner() {
        // Fewer leaves under Miri (CI time); every key between and beside the stored ones.
        let (n, leaves) = if cfg!(miri) {
            (120u64, 32)
        } else {
            (1000, 256)
        };
        let elems = (0..n).map(|i| (Inl::new(i * 3), Inl::new(i)));
        let p: Pma<Inl<u64>, Inl<u64>> = Pma::build(leaves, 8, n as usize, elems, false);
        for k in 0..3 * n {
            let j = p.locate(Look::new(&k));
            assert_eq!(
                p.owns_locked(j, Look::new(&k)),
                Cmp::Equal,
                "key {k} leaf {j}"
            );
        }
    }

    #[test]
    fn search_is_last_at_most() {
        // Every length a leaf can have here, every key between and beside the stored ones.
        let top: u64 = if cfg!(miri) { 9 } else { 70 };
        for n in 1..=top {
            let ks: Vec<AtomicU64> = (0..n).map(|i| AtomicU64::new(10 * i + 10)).collect();
            for k in 0..10 * n + 20 {
                let want = (0..n as usize)
                    .rev()
                    .find(|&i| 10 * i as u64 + 10 <= k)
                    .unwrap_or(0);
                let got = search::<Inl<u64>, Inl<u64>>(&ks, n as usize, &Inl::new(k));
                assert_eq!(got, want, "n {n} k {k}");
            }
        }
    }

    #[test]
    fn shifts_move_one_slot() {
        const N: usize = if cfg!(miri) { 7 } else { 13 };
        for n in 0..N {
            for pos in 0..=n {
                let init = |base: u64| -> Vec<AtomicU64> {
                    (0..=N as u64).map(|i| AtomicU64::new(base + i)).collect()
                };
                let get = |ws: &[AtomicU64]| -> Vec<u64> {
                    ws.iter().map(|w| w.load(Ordering::Relaxed)).collect()
                };
                let (ks, vs) = (init(100), init(200));
                shift_up::<Inl<u64>, Inl<u64>>(&ks, &vs, pos, n);
                let mut want: Vec<u64> = (100..=100 + N as u64).collect();
                want.copy_within(pos..n, pos + 1);
                assert_eq!(get(&ks), want, "up: pos {pos} n {n}");
                let want_v: Vec<u64> = want.iter().map(|w| w + 100).collect();
                assert_eq!(get(&vs), want_v, "up: pos {pos} n {n}");
                if pos < n {
                    let (ks, vs) = (init(100), init(200));
                    shift_down::<Inl<u64>, Inl<u64>>(&ks, &vs, pos, n);
                    let mut want: Vec<u64> = (100..=100 + N as u64).collect();
                    want.copy_within(pos + 1..n, pos);
                    assert_eq!(get(&ks), want, "down: pos {pos} n {n}");
                    let want_v: Vec<u64> = want.iter().map(|w| w + 100).collect();
                    assert_eq!(get(&vs), want_v, "down: pos {pos} n {n}");
                }
            }
        }
    }

    #[test]
    fn copy_words_is_copy_within() {
        // Every overlap distance up to N - 1 and every group/remainder split of four.
        const N: usize = if cfg!(miri) { 11 } else { 24 };
        for src in 0..N {
            for dst in 0..N {
                for len in 0..=N - src.max(dst) {
                    let want = {
                        let mut w: Vec<u64> = (100..100 + N as u64).collect();
                        w.copy_within(src..src + len, dst);
                        w
                    };
                    let ws: Vec<AtomicU64> = (100..100 + N as u64).map(AtomicU64::new).collect();
                    copy_words(&ws, src, dst, len);
                    let got: Vec<u64> = ws.iter().map(|w| w.load(Ordering::Relaxed)).collect();
                    assert_eq!(got, want, "src {src} dst {dst} len {len}");
                }
            }
        }
    }
}
