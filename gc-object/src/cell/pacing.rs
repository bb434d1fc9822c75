//! When a collection is due: the heap's allocation debt against the live bytes the last
//! collection left (safe code; the collector applies it).

/// How much a heap may allocate between two collections: a collection is due once the
/// bytes allocated since the last one (cells, side state, host closures, handle blocks)
/// reach `max(min_debt, live * debt_percent / 100)`, where `live` is what the last
/// collection left ([`CollectStats::live_bytes`](crate::CollectStats::live_bytes)).
///
/// This is Lua's `pause` (Lua's default 200 lets the heap double, `debt_percent` = 100
/// here) and gc-arena's `sleep_factor` with `min_sleep`. A collection here is not
/// incremental, so Lua's `stepmul` and gc-arena's work factors have no counterpart: when a
/// collection is due, [`Heap::collect_if_due`](crate::Heap::collect_if_due),
/// [`Context::collect_if_due`](crate::Context::collect_if_due) or
/// [`Scope::collect_if_due`](crate::Scope::collect_if_due) runs a whole one.
///
/// The cost: marking touches the live cells, so with a debt of `p`% of the live bytes the
/// collector marks about `100 / p` bytes per byte allocated, whatever the heap's size, and
/// the heap peaks near `1 + p / 100` times its live bytes (plus `min_debt` on small heaps).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pacing {
    /// Debt allowed after a collection, in percent of the live bytes it left.
    pub debt_percent: u32,
    /// The least debt allowed, in bytes (so a small heap does not collect all the time).
    pub min_debt: u64,
}

impl Pacing {
    /// The default: a collection after allocating half the live bytes, at least 256 KiB.
    pub const DEFAULT: Pacing = Pacing {
        debt_percent: 50,
        min_debt: 256 * 1024,
    };

    /// The debt allowed after a collection that left `live` bytes.
    pub fn debt_allowed(&self, live: u64) -> u64 {
        let share = u128::from(live) * u128::from(self.debt_percent) / 100;
        u64::try_from(share).unwrap_or(u64::MAX).max(self.min_debt)
    }
}

impl Default for Pacing {
    fn default() -> Self {
        Pacing::DEFAULT
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debt_is_a_share_of_the_live_bytes_with_a_floor() {
        let p = Pacing {
            debt_percent: 50,
            min_debt: 1000,
        };
        assert_eq!(p.debt_allowed(0), 1000);
        assert_eq!(p.debt_allowed(1999), 1000);
        assert_eq!(p.debt_allowed(4000), 2000);
        let big = Pacing {
            debt_percent: u32::MAX,
            min_debt: 0,
        };
        assert_eq!(big.debt_allowed(u64::MAX), u64::MAX);
    }
}
