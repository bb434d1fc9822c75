//! Moving elements between leaves: the in-place window rebalance, and building a fresh
//! array from a locked one (growth, shrink) or from sorted elements (tests).

use super::geometry::append_fill;
use super::key::{Key, Pod};
use super::{FENCES, Geometry, HI_INF, LO_NEG_INF, META, Pma};
use crate::sync::{AtomicU64, Ordering};

/// How [`Pma::redistribute`] lays a window out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Pack {
    /// The same count in every leaf (within one).
    Even,
    /// The first leaves filled to the append fill, the rest empty (`pop_first` compaction:
    /// the window must end before the last live leaf, whose upper fence bounds the empties).
    Left,
    /// The last leaves filled to the append fill, the first empty (`pop_last` compaction).
    Right,
}

impl<K: Key, V: Pod> Pma<K, V> {
    /// Number of elements in locked leaves `a..b`.
    pub(crate) fn count_range(&self, a: usize, b: usize) -> usize {
        (a..b).map(|j| self.count(j)).sum()
    }

    /// Spreads the elements of locked leaves `a..b` (plus `extra`) evenly over them, in
    /// place: first everything is packed against the window's right end, then dealt out
    /// left to right (every destination is at or before its source, so nothing is
    /// overwritten before it is read). Fences and the index are updated for the window;
    /// leaf `a`'s lower fence and the window's upper fence stay, so no leaf outside the
    /// window changes what it owns. Needs at least one element.
    pub(crate) fn redistribute(&self, a: usize, b: usize, extra: Option<(K, V)>, pack: Pack) {
        let cap = self.cap;
        let m = b - a;
        let live_end = self.live_end.load(Ordering::Relaxed);
        let last_live = b.min(live_end) - 1;
        let last_meta = self.meta(last_live);
        let win_hi = (last_meta & HI_INF == 0).then(|| self.hi(last_live));
        let a_flags = self.meta(a) & LO_NEG_INF;

        let mut dest = b * cap;
        for j in (a..b).rev() {
            let c = self.count(j);
            dest -= c;
            self.copy_cells(j * cap, dest, c);
        }
        let n = b * cap - dest;
        let total = n + usize::from(extra.is_some());
        assert!(total > 0, "redistributing an empty window");
        // The new element goes before the first packed key above it.
        let p = match extra {
            Some((ek, _)) => {
                let (mut lo, mut hi) = (0, n);
                while lo < hi {
                    let mid = (lo + hi) / 2;
                    if self.load_at::<K>(self.key_off_cell(dest + mid)) < ek {
                        lo = mid + 1;
                    } else {
                        hi = mid;
                    }
                }
                lo
            }
            None => n,
        };
        let (q, r) = (total / m, total % m);
        // `v` walks the merged sequence (packed elements with `extra` at `p`); every
        // destination cell is at or before its source, so dealing left to right never
        // overwrites an element before it is read.
        let mut v = 0;
        for (i, j) in (a..b).enumerate() {
            // Even: the remainder goes to the last leaves, so empty leaves (if any) come
            // first and the window's last leaf is never empty.
            let fill = append_fill(cap);
            let c = match pack {
                Pack::Even => q + usize::from(i >= m - r),
                Pack::Left => fill.min(total.saturating_sub(i * fill)),
                Pack::Right => fill.min(total.saturating_sub((m - 1 - i) * fill)),
            };
            let (mut out, mut left) = (j * cap, c);
            if v < p {
                let t = left.min(p - v);
                self.copy_cells(dest + v, out, t);
                (out, v, left) = (out + t, v + t, left - t);
            }
            if left > 0
                && v == p
                && let Some((ek, ev)) = extra
            {
                self.store_at(self.key_off_cell(out), ek);
                self.store_at(self.val_off(out / cap, out % cap), ev);
                (out, v, left) = (out + 1, v + 1, left - 1);
            }
            if left > 0 {
                let after = usize::from(extra.is_some() && v > p);
                self.copy_cells(dest + v - after, out, left);
                v += left;
            }
            self.word(self.base(j) + META)
                .store(c as u64, Ordering::Relaxed);
        }
        // Fences, right to left: an empty leaf owns the empty range at its successor's fence.
        let mut next_lo = win_hi;
        for j in (a..b).rev() {
            let mut flags = 0;
            match next_lo {
                Some(h) => self.store_at(self.base(j) + FENCES + K::WORDS, h),
                None => flags |= HI_INF,
            }
            if j == a {
                flags |= a_flags;
            } else {
                let lo = if self.count(j) > 0 {
                    self.key(j, 0)
                } else {
                    next_lo.expect("an empty leaf always has a non-empty leaf after it")
                };
                self.store_at(self.base(j) + FENCES, lo);
                self.set_index(j, lo);
                if j == b - 1 && b >= live_end {
                    self.set_tail(lo);
                }
                next_lo = Some(lo);
            }
            let n = self.count(j) as u64;
            self.word(self.base(j) + META)
                .store(n | flags, Ordering::Relaxed);
        }
        if b > live_end {
            self.live_end.store(b, Ordering::Release);
        }
    }

    fn key_off_cell(&self, c: usize) -> usize {
        self.key_off(c / self.cap, c % self.cap)
    }

    /// Builds an unshared array of `leaves` leaves from `n` sorted elements: packed left
    /// to the append fill (`pack_left`, for sorted input) or spread evenly over all leaves.
    #[cfg(test)]
    pub(crate) fn build(
        leaves: usize,
        cap: usize,
        n: usize,
        mut elems: impl Iterator<Item = (K, V)>,
        pack_left: bool,
    ) -> Self {
        let pma = Self::new_empty(leaves, cap);
        let used = pma.plan(n, pack_left, |pma, j, c| {
            let mut elems = elems.by_ref().take(c);
            for s in 0..c {
                let (k, v) = elems.next().expect("build: fewer elements than promised");
                pma.store_at(pma.key_off(j, s), k);
                pma.store_at(pma.val_off(j, s), v);
            }
        });
        assert!(elems.next().is_none(), "build: more elements than promised");
        pma.finish(used);
        pma
    }

    /// Builds an unshared array of geometry `to` holding every element of `self` (fully
    /// locked) plus `extra`, whose place in `self` is `(leaf, slot)`; laid out as `build`
    /// does, but copied leaf to leaf in runs of words rather than element by element.
    pub(crate) fn rebuild(
        &self,
        to: Geometry,
        extra: Option<((K, V), (usize, usize))>,
        pack_left: bool,
    ) -> Self {
        let live = self.live_end.load(Ordering::Relaxed);
        let n = self.count_range(0, live) + usize::from(extra.is_some());
        let pma = Self::new_empty(to.leaves, to.cap);
        let (mut sj, mut ss) = (0, 0);
        let mut extra = extra;
        let used = pma.plan(n, pack_left, |pma, j, c| {
            let mut s = 0;
            while s < c {
                if let Some(((k, v), at)) = extra
                    && at == (sj, ss)
                {
                    pma.store_at(pma.key_off(j, s), k);
                    pma.store_at(pma.val_off(j, s), v);
                    extra = None;
                    s += 1;
                    continue;
                }
                let have = self.count(sj);
                if ss == have {
                    (sj, ss) = (sj + 1, 0);
                    continue;
                }
                let mut t = (c - s).min(have - ss);
                if let Some((_, (ej, es))) = extra
                    && ej == sj
                {
                    t = t.min(es - ss);
                }
                let (kw, vw) = (t * K::WORDS, t * V::WORDS);
                copy_between(
                    self.span(self.key_off(sj, ss), kw),
                    pma.span(pma.key_off(j, s), kw),
                );
                copy_between(
                    self.span(self.val_off(sj, ss), vw),
                    pma.span(pma.val_off(j, s), vw),
                );
                (s, ss) = (s + t, ss + t);
            }
        });
        pma.finish(used);
        pma
    }

    /// Decides how many of `n` elements each leaf of this fresh array gets, sets the
    /// counts, and calls `fill(self, leaf, count)` for each used leaf in order; returns the
    /// number of leaves used.
    fn plan(&self, n: usize, pack_left: bool, mut fill: impl FnMut(&Self, usize, usize)) -> usize {
        let leaves = self.leaves;
        let (used, per, rem) = if pack_left {
            let fill = append_fill(self.cap);
            let used = n.div_ceil(fill).max(1);
            (used, fill, 0)
        } else {
            (leaves, n / leaves, n % leaves)
        };
        assert!(
            used <= leaves && n <= leaves * self.cap,
            "build: too many elements for the array"
        );
        let mut placed = 0;
        for j in 0..used {
            let c = if pack_left {
                per.min(n - placed)
            } else {
                per + usize::from(j >= leaves - rem)
            };
            fill(self, j, c);
            placed += c;
            self.word(self.base(j) + META)
                .store(c as u64, Ordering::Relaxed);
        }
        used
    }

    /// Sets the fences, index, tail hint and `live_end` of a freshly filled array whose
    /// first `used` leaves hold elements (empty leaves, if any, first).
    fn finish(&self, used: usize) {
        let mut next_lo: Option<K> = None;
        for j in (0..used).rev() {
            let mut flags = 0;
            match next_lo {
                Some(h) => self.store_at(self.base(j) + FENCES + K::WORDS, h),
                None => flags |= HI_INF,
            }
            if j == 0 {
                flags |= LO_NEG_INF;
            } else {
                let lo = if self.count(j) > 0 {
                    self.key(j, 0)
                } else {
                    next_lo.expect("empty leaves come first")
                };
                self.store_at(self.base(j) + FENCES, lo);
                self.set_index(j, lo);
                if j == used - 1 {
                    self.set_tail(lo);
                }
                next_lo = Some(lo);
            }
            let c = self.count(j) as u64;
            self.word(self.base(j) + META)
                .store(c | flags, Ordering::Relaxed);
        }
        self.live_end.store(used, Ordering::Relaxed);
    }
}

/// Copies the words of `src` to `dst` (same length, two different arrays).
#[cfg_attr(debug_assertions, inline)]
#[cfg_attr(not(debug_assertions), inline(always))]
fn copy_between(src: &[AtomicU64], dst: &[AtomicU64]) {
    for (to, from) in dst.iter().zip(src) {
        to.store(from.load(Ordering::Relaxed), Ordering::Relaxed);
    }
}
