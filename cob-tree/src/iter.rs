//! Weakly consistent range iteration.

use crate::CobTree;
use crate::key::{Key, Pod};
use crate::pma::{Guard, Probe, Snapshot};
use core::ops::Bound;

/// How many leaves an iterator reads under one pin before re-pinning (so a long-lived
/// iterator does not hold back memory reclamation).
const LEAVES_PER_PIN: usize = 64;

/// An iterator over a range of a [`CobTree`], in key order, yielding copies `(K, V)`.
///
/// Weakly consistent under concurrent writers (like `crossbeam_skiplist::SkipMap`'s):
/// keys come out strictly increasing, never twice, and every key present for the whole
/// iteration is seen. It reads a leaf in validated runs of up to [`crate::RANGE_CHUNK`]
/// elements (snapshots held inline: a range allocates nothing), so it never
/// blocks writers. It holds an epoch pin, hence is neither `Send` nor `Sync`.
pub struct Range<'a, K: Key, V: Pod> {
    tree: &'a CobTree<K, V>,
    guard: Guard,
    buf: Snapshot<K, V>,
    pos: usize,
    /// Where the next leaf read starts; `None` once the last leaf has been read.
    next: Option<Bound<K>>,
    end: Bound<K>,
    /// The array and leaf the next read most likely needs (valid while pinned).
    hint: Option<(usize, usize)>,
    reads: usize,
}

impl<'a, K: Key, V: Pod> Range<'a, K, V> {
    pub(crate) fn new(tree: &'a CobTree<K, V>, start: Bound<K>, end: Bound<K>) -> Self {
        Range {
            tree,
            guard: tree.map.guard(),
            buf: Snapshot::new(),
            pos: 0,
            next: Some(start),
            end,
            hint: None,
            reads: 0,
        }
    }

    fn past_end(&self, k: &K) -> bool {
        match &self.end {
            Bound::Unbounded => false,
            Bound::Included(e) => k > e,
            Bound::Excluded(e) => k >= e,
        }
    }

    /// Reads the next run of elements into `buf`; false when none are left.
    #[inline(never)]
    fn refill(&mut self) -> bool {
        let mut spins = 0;
        loop {
            let Some(start) = self.next else {
                return false;
            };
            // A range that starts past its end is empty.
            if let Bound::Included(s) | Bound::Excluded(s) = &start
                && self.past_end(s)
            {
                self.next = None;
                return false;
            }
            self.reads += 1;
            if self.reads.is_multiple_of(LEAVES_PER_PIN) {
                // Arrays loaded so far may be freed after this: forget the hint.
                self.hint = None;
                crate::pma::repin(&mut self.guard);
            }
            let pma = self.tree.map.pma(&self.guard);
            let id = core::ptr::from_ref(pma).addr();
            let mut j = match self.hint {
                Some((h, j)) if h == id && j < pma.live_end() => j,
                _ => match &start {
                    Bound::Unbounded => 0,
                    Bound::Included(k) | Bound::Excluded(k) => pma.locate(k),
                },
            };
            let from = start.as_ref();
            let found = loop {
                match pma.probe_range(j, from, &mut self.buf) {
                    Probe::Here(found) => break Some(found),
                    Probe::Left if j > 0 => j -= 1,
                    Probe::Right if j + 1 < pma.leaves() => j += 1,
                    _ => break None,
                }
            };
            let Some((hi, more)) = found else {
                // Busy: forget the hint, back off, reload the array.
                self.hint = None;
                crate::sync::spin_wait(&mut spins);
                continue;
            };
            self.pos = 0;
            if more {
                // The rest of this leaf: past the last key copied.
                self.next = Some(Bound::Excluded(self.buf.items[self.buf.len - 1].0));
                self.hint = Some((id, j));
            } else {
                self.next = hi.map(Bound::Included);
                self.hint = Some((id, j + 1));
            }
            // Keys past the end are cut here, once per run, so `next` only indexes.
            let items = &self.buf.items[..self.buf.len];
            let keep = items.partition_point(|(k, _)| !self.past_end(k));
            if keep < self.buf.len {
                self.buf.len = keep;
                self.next = None;
            }
            if self.buf.len > 0 {
                return true;
            }
        }
    }
}

impl<K: Key, V: Pod> Iterator for Range<'_, K, V> {
    type Item = (K, V);

    #[inline]
    fn next(&mut self) -> Option<(K, V)> {
        if self.pos == self.buf.len && !self.refill() {
            return None;
        }
        let item = self.buf.items[self.pos];
        self.pos += 1;
        Some(item)
    }

    /// Internal iteration (`fold`, `for_each`, `sum`, ...) walks each validated run as a
    /// slice.
    fn fold<B, F>(mut self, init: B, mut f: F) -> B
    where
        F: FnMut(B, Self::Item) -> B,
    {
        let mut acc = init;
        loop {
            for &item in &self.buf.items[self.pos..self.buf.len] {
                acc = f(acc, item);
            }
            self.pos = self.buf.len;
            if !self.refill() {
                return acc;
            }
        }
    }
}

impl<K: Key + core::fmt::Debug, V: Pod + core::fmt::Debug> core::fmt::Debug for Range<'_, K, V> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Range")
            .field("next", &self.next)
            .field("end", &self.end)
            .finish_non_exhaustive()
    }
}
