//! Statistics: per-arena counters, read from the arenas (under each lock) and the huge heap.
//! Safe code over `arena`'s snapshots.

use crate::config::MAX_HEAP_COUNT;
use crate::{arena, huge};

/// A snapshot of one arena's counters (or their sum).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ArenaStats {
    /// Blocks allocated (small and huge).
    pub allocations: u64,
    /// Blocks freed (small and huge).
    pub frees: u64,
    /// Frees made while the freeing thread was on another arena's CPU.
    pub remote_frees: u64,
    /// Bytes in live blocks (usable sizes: block size for small, mapping for huge).
    pub bytes_in_use: usize,
    /// Lock acquisitions that found the arena lock held.
    pub contended_locks: u64,
    /// Of `allocations`, those above `SMALL_MAX` (huge).
    pub huge_allocations: u64,
    /// Of `bytes_in_use`, those in huge blocks.
    pub huge_bytes_in_use: usize,
    /// Bytes of small segments mapped by the arena.
    pub segment_bytes: usize,
}

impl ArenaStats {
    /// Blocks allocated and not yet freed.
    pub fn live_allocations(&self) -> u64 {
        self.allocations.wrapping_sub(self.frees)
    }

    pub(crate) fn add(&mut self, o: &ArenaStats) {
        self.allocations = self.allocations.wrapping_add(o.allocations);
        self.frees = self.frees.wrapping_add(o.frees);
        self.remote_frees = self.remote_frees.wrapping_add(o.remote_frees);
        self.bytes_in_use = self.bytes_in_use.wrapping_add(o.bytes_in_use);
        self.contended_locks = self.contended_locks.wrapping_add(o.contended_locks);
        self.huge_allocations = self.huge_allocations.wrapping_add(o.huge_allocations);
        self.huge_bytes_in_use = self.huge_bytes_in_use.wrapping_add(o.huge_bytes_in_use);
        self.segment_bytes = self.segment_bytes.wrapping_add(o.segment_bytes);
    }
}

/// Counters of arena `index` (`None` when `index >= MAX_HEAP_COUNT`).
pub fn arena_stats(index: usize) -> Option<ArenaStats> {
    let s = arena::small_snapshot(index)?;
    let h = huge::counters(index);
    Some(ArenaStats {
        allocations: s.allocs.wrapping_add(h.allocs),
        frees: s.frees.wrapping_add(h.frees),
        remote_frees: s.remote_frees.wrapping_add(h.remote_frees),
        bytes_in_use: s.bytes_in_use.wrapping_add(h.bytes),
        contended_locks: s.contended,
        huge_allocations: h.allocs,
        huge_bytes_in_use: h.bytes,
        segment_bytes: s.segments * crate::page::SEGMENT_SIZE,
    })
}

/// Sum of the counters of all arenas.
pub fn total_stats() -> ArenaStats {
    let mut t = ArenaStats::default();
    for i in 0..MAX_HEAP_COUNT {
        if let Some(s) = arena_stats(i) {
            t.add(&s);
        }
    }
    t
}
