//! The arithmetic of array shapes: leaf sizes, the growth sequence an array steps through,
//! and the density bounds that decide when a window is rebalanced or the array resized.
//! Pure functions of sizes; nothing here touches an array.

use super::key::Pod;
use super::{FENCES, WORDS_PER_LINE};

/// The target size of one leaf in bytes (header + keys + values, before rounding up to whole
/// cache lines): sixteen cache lines, 62 `u64 -> u64` elements. Measured against 512 and
/// 2048 bytes by random builds of 1M keys (`cargo run --release -p memlayout-cob-tree --example quick
/// -- 1000000 ratio` with `LEAF=30/62/126`): writers prefetch the whole leaf, so its size
/// costs little latency, while a smaller index (half the fences) and half as many window
/// rebalances and leaf hops pay.
pub const LEAF_BYTES: usize = 1024;
/// How many times the cache lines of a narrow leaf a wide leaf spans, as a fraction. A map
/// alternates between arrays of narrow and of wide leaves as it grows (once an array spans
/// [`FINE_GROWTH_BYTES`]), so that each growth step multiplies its room by about 1.5 or
/// 1.33 rather than 2.
pub const WIDE_LEAF_FACTOR: (usize, usize) = (3, 2);
/// Arrays grow by doubling until their narrow leaves span this many bytes (4 MiB, about
/// one core's share of a last-level cache: 32 MiB for 8 cores on the EPYC measured here),
/// and by the finer two-leaf-size steps from there on. Below it a tighter fit buys little
/// (an array that size stays mostly cached) and costs inserts: the wide leaves' longer
/// shifts and the extra rebuilds (measured at 100K keys in the crate's MEASUREMENTS.md,
/// "get at 1M keys").
pub const FINE_GROWTH_BYTES: usize = 4 << 20;
/// The smallest leaf capacity (elements per leaf) accepted.
pub const MIN_LEAF_CAPACITY: usize = 4;
/// The largest leaf capacity accepted (the count lives in 32 bits).
pub const MAX_LEAF_CAPACITY: usize = 1 << 16;

/// Words of a leaf of `cap` `K -> V` elements, whole cache lines (its stride).
pub(super) fn leaf_words<K: Pod, V: Pod>(cap: usize) -> usize {
    (FENCES + 2 * K::WORDS + cap * (K::WORDS + V::WORDS)).next_multiple_of(WORDS_PER_LINE)
}

/// How many `K -> V` elements fit a leaf of `words` words after its header.
pub(super) fn capacity_in<K: Pod, V: Pod>(words: usize) -> usize {
    words.saturating_sub(FENCES + 2 * K::WORDS) / (K::WORDS + V::WORDS)
}

/// The default leaf capacity for `K -> V`: as many elements as fit [`LEAF_BYTES`] after the
/// header. Under loom and Miri leaves are [`MIN_LEAF_CAPACITY`] so splits happen quickly.
pub(crate) fn default_leaf_capacity<K: Pod, V: Pod>() -> usize {
    if cfg!(any(loom, miri)) {
        return MIN_LEAF_CAPACITY;
    }
    capacity_in::<K, V>(LEAF_BYTES / 8).clamp(MIN_LEAF_CAPACITY, MAX_LEAF_CAPACITY)
}

/// The capacity of the wide leaves of a map whose narrow leaves hold `cap`: what fits
/// [`WIDE_LEAF_FACTOR`] times as many cache lines, kept within `cap + 1..2 * cap` so that
/// every step of the growth sequence (see [`Growth`]) adds room.
pub(crate) fn wide_capacity<K: Pod, V: Pod>(cap: usize) -> usize {
    let lines = leaf_words::<K, V>(cap) / WORDS_PER_LINE * WIDE_LEAF_FACTOR.0 / WIDE_LEAF_FACTOR.1;
    capacity_in::<K, V>(lines * WORDS_PER_LINE).clamp(cap + 1, 2 * cap - 1)
}

/// The leaf count from which an array of narrow leaves of `cap` spans at least
/// [`FINE_GROWTH_BYTES`] (a power of two).
pub(crate) fn fine_growth_leaves<K: Pod, V: Pod>(cap: usize) -> usize {
    FINE_GROWTH_BYTES
        .div_ceil(leaf_words::<K, V>(cap) * 8)
        .next_power_of_two()
}

/// How full the append path packs a leaf of `cap` (the root's upper density).
pub(super) fn append_fill(cap: usize) -> usize {
    (cap * UPPER_ROOT.0 / UPPER_ROOT.1).max(1)
}

/// The shape of one array: `leaves` (a power of two) leaves of `cap` elements each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Geometry {
    pub(crate) leaves: usize,
    pub(crate) cap: usize,
}

impl Geometry {
    /// Whether `n` elements fit within the root density bound ([`UPPER_ROOT`]); `packed`:
    /// also packed left, [`append_fill`] per leaf.
    pub(crate) fn holds(self, n: usize, packed: bool) -> bool {
        let per_leaf = if packed {
            append_fill(self.cap)
        } else {
            self.cap * UPPER_ROOT.0 / UPPER_ROOT.1
        };
        self.leaves.saturating_mul(per_leaf) >= n
    }
}

/// The sequence of geometries one map steps through as it grows and shrinks. Below
/// `fine_from` leaves the leaf count doubles, `(L, narrow) -> (2L, narrow)`; from there on
/// the leaf size alternates, `(L, narrow) -> (L, wide) -> (2L, narrow)`, which multiplies
/// the room by about 1.5 or 1.33 per step.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Growth {
    pub(crate) narrow: usize,
    pub(crate) wide: usize,
    /// The leaf count (a power of two) from which the wide step is taken.
    pub(crate) fine_from: usize,
}

impl Growth {
    /// The sequence of `K -> V` maps with narrow leaves of `cap`.
    pub(crate) fn new<K: Pod, V: Pod>(cap: usize) -> Growth {
        Growth {
            narrow: cap,
            wide: wide_capacity::<K, V>(cap),
            fine_from: fine_growth_leaves::<K, V>(cap),
        }
    }

    /// The next larger geometry.
    pub(crate) fn up(self, g: Geometry) -> Geometry {
        if g.cap == self.narrow && g.leaves >= self.fine_from {
            Geometry {
                leaves: g.leaves,
                cap: self.wide,
            }
        } else {
            Geometry {
                leaves: g.leaves * 2,
                cap: self.narrow,
            }
        }
    }

    /// The smallest geometry of the sequence with room for `n` elements at density 1/2
    /// (what a shrink aims at).
    pub(crate) fn for_len(self, n: usize) -> Geometry {
        let want = n.saturating_mul(2).max(1);
        let leaves = want.div_ceil(self.narrow).next_power_of_two();
        let half = leaves / 2;
        if half >= self.fine_from && half * self.wide >= want {
            Geometry {
                leaves: half,
                cap: self.wide,
            }
        } else {
            Geometry {
                leaves,
                cap: self.narrow,
            }
        }
    }

    /// The larger of two geometries of the sequence.
    pub(crate) fn larger(self, a: Geometry, b: Geometry) -> Geometry {
        let rank = |g: Geometry| (g.leaves.trailing_zeros(), g.cap != self.narrow);
        if rank(a) >= rank(b) { a } else { b }
    }
}

/// Upper density bound of the whole array, as a fraction: grow beyond it.
pub const UPPER_ROOT: (usize, usize) = (3, 4);
/// Lower density bound of the whole array, as a fraction: shrink below it.
pub const LOWER_ROOT: (usize, usize) = (1, 4);

/// Whether `total` elements fit a window of `m` leaves at `level` of `height`: the upper
/// density bound falls linearly from 1 at a leaf to [`UPPER_ROOT`] at the root.
pub(crate) fn fits(total: usize, m: usize, cap: usize, level: u32, height: u32) -> bool {
    let (num, den) = UPPER_ROOT;
    let h = height.max(1) as usize;
    let l = level as usize;
    // density <= 1 - (1 - num/den) * l / h
    total * den * h <= m * cap * (den * h - (den - num) * l)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pma::inl::Inl;

    #[test]
    #[cfg_attr(
        miri,
        ignore = "integer arithmetic only, no unsafe code: `cargo test` runs it"
    )]
    fn growth_sequence_steps_up() {
        // The shipped `u64 -> u64` leaves (loom and Miri builds use smaller defaults).
        assert_eq!(wide_capacity::<Inl<u64>, Inl<u64>>(62), 94);
        // 1 KiB narrow leaves: the wide steps start at 4 MiB of them.
        assert_eq!(fine_growth_leaves::<Inl<u64>, Inl<u64>>(62), 4096);
        for cap in [4usize, 5, 7, 30, 62, 66, 126, 1000] {
            for fine_from in [1, 4, fine_growth_leaves::<Inl<u64>, Inl<u64>>(cap)] {
                let gr = Growth {
                    narrow: cap,
                    wide: wide_capacity::<Inl<u64>, Inl<u64>>(cap),
                    fine_from,
                };
                assert!(cap < gr.wide && gr.wide < 2 * cap, "{gr:?}");
                let mut g = Geometry { leaves: 1, cap };
                for _ in 0..40 {
                    let next = gr.up(g);
                    let (a, b) = (g.leaves * g.cap, next.leaves * next.cap);
                    if g.leaves < fine_from {
                        assert_eq!(b, 2 * a, "{g:?} -> {next:?}");
                    } else {
                        assert!(a < b && b < 2 * a, "{g:?} -> {next:?}");
                    }
                    assert_eq!(gr.larger(g, next), next);
                    assert_eq!(gr.larger(next, g), next);
                    g = next;
                }
            }
        }
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "integer arithmetic only, no unsafe code: `cargo test` runs it"
    )]
    fn for_len_is_the_smallest_step_at_most_half_full() {
        for fine_from in [1, 16, 1024] {
            let gr = Growth {
                narrow: 62,
                wide: 94,
                fine_from,
            };
            // Walk the sequence from one leaf, checking each n against it.
            let mut seq = vec![Geometry { leaves: 1, cap: 62 }];
            while seq.last().unwrap().leaves < 1 << 12 {
                seq.push(gr.up(*seq.last().unwrap()));
            }
            for n in (0..100_000).step_by(37) {
                let g = gr.for_len(n);
                let first = seq
                    .iter()
                    .find(|s| s.leaves * s.cap >= 2 * n.max(1))
                    .unwrap();
                assert_eq!(g, *first, "n {n}, fine_from {fine_from}");
            }
        }
    }

    #[test]
    fn thresholds() {
        assert!(!fits(8, 2, 4, 1, 1)); // 8/8 > 3/4 at the root
        assert!(fits(6, 2, 4, 1, 1));
        assert!(fits(4, 1, 4, 0, 3));
    }
}
