//! YCSB's request distributions, written from the YCSB paper and its core workload
//! specification: a zipfian generator (Gray et al., "Quickly generating billion-record
//! synthetic databases", SIGMOD 1994, the algorithm YCSB uses, with YCSB's constant 0.99),
//! its scrambled form (popular items spread over the key space by an FNV hash) and the
//! "latest" form (popular items are the newest), and the FNV-64 hash YCSB names keys with.
//! Deterministic: every draw comes from a caller-owned xorshift state.

use crate::groups::mix::xorshift;

/// YCSB's zipfian constant.
pub const THETA: f64 = 0.99;

/// FNV-1a, 64 bits, over the 8 little-endian bytes of `x`, as YCSB's `fnvhash64`
/// (its absolute value as a signed 64-bit number).
pub fn fnv64(mut x: u64) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for _ in 0..8 {
        h ^= x & 0xff;
        h = h.wrapping_mul(0x100_0000_01b3);
        x >>= 8;
    }
    (h as i64).unsigned_abs()
}

/// A uniform draw in `[0, 1)` from the xorshift state `x`.
pub fn unit(x: &mut u64) -> f64 {
    (xorshift(x) >> 11) as f64 / (1u64 << 53) as f64
}

/// `sum_{i=1..=n} 1 / i^theta`.
pub fn zeta(n: u64, theta: f64) -> f64 {
    (1..=n).map(|i| (i as f64).powf(-theta)).sum()
}

/// Zipfian ranks over `[0, n)`: rank 0 is the most popular, with probability
/// `1 / zeta(n)`; rank `r` has probability `(r + 1)^-theta / zeta(n)`.
#[derive(Clone, Copy, Debug)]
pub struct Zipf {
    n: u64,
    theta: f64,
    alpha: f64,
    zetan: f64,
    eta: f64,
    half_pow_theta: f64,
}

impl Zipf {
    /// The distribution over `n >= 2` items with YCSB's constant ([`THETA`]); `O(n)`
    /// to set up (the zeta sum), `O(1)` per draw.
    pub fn new(n: u64) -> Zipf {
        assert!(
            n >= 2,
            "a zipfian distribution needs at least 2 items, got {n}"
        );
        let theta = THETA;
        let zetan = zeta(n, theta);
        let zeta2 = zeta(2, theta);
        Zipf {
            n,
            theta,
            alpha: 1.0 / (1.0 - theta),
            zetan,
            eta: (1.0 - (2.0 / n as f64).powf(1.0 - theta)) / (1.0 - zeta2 / zetan),
            half_pow_theta: 0.5f64.powf(theta),
        }
    }

    /// The number of items.
    pub fn items(&self) -> u64 {
        self.n
    }

    /// The probability of rank `r`.
    pub fn probability(&self, r: u64) -> f64 {
        ((r + 1) as f64).powf(-self.theta) / self.zetan
    }

    /// One rank, from the xorshift state `x`.
    pub fn rank(&self, x: &mut u64) -> u64 {
        let u = unit(x);
        let uz = u * self.zetan;
        if uz < 1.0 {
            return 0;
        }
        if uz < 1.0 + self.half_pow_theta {
            return 1;
        }
        let r = (self.n as f64 * (self.eta * u - self.eta + 1.0).powf(self.alpha)) as u64;
        r.min(self.n - 1)
    }

    /// YCSB's scrambled zipfian: a record id in `[0, records)`, the popular ranks spread
    /// over the ids by [`fnv64`] (`records` may exceed the item count as inserts add
    /// records).
    pub fn scrambled(&self, x: &mut u64, records: u64) -> u64 {
        fnv64(self.rank(x)) % records
    }

    /// YCSB's "latest": a record id in `[0, records)`, the newest ids the most popular.
    pub fn latest(&self, x: &mut u64, records: u64) -> u64 {
        records - 1 - self.rank(x) % records
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_follow_the_zipfian_probabilities() {
        let z = Zipf::new(1_000);
        let draws = 400_000;
        let mut counts = vec![0u64; 1_000];
        let mut x = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..draws {
            counts[z.rank(&mut x) as usize] += 1;
        }
        // Ranks 0 and 1 are drawn exactly (within 3% of their probability); Gray's method
        // approximates the rest (rank 2 comes out about 18% too often), so the bands are
        // checked by their mass: ranks 0-9, 10-99 and 100-999 each within 6%.
        for (r, &c) in counts.iter().enumerate().take(2) {
            let want = z.probability(r as u64) * draws as f64;
            let err = (c as f64 - want).abs() / want;
            assert!(err < 0.03, "rank {r}: {c} draws, expected {want:.0}");
        }
        for (lo, hi) in [(0, 10), (10, 100), (100, 1_000)] {
            let got: u64 = counts[lo..hi].iter().sum();
            let want: f64 = (lo..hi).map(|r| z.probability(r as u64)).sum::<f64>() * draws as f64;
            let err = (got as f64 - want).abs() / want;
            assert!(
                err < 0.06,
                "ranks {lo}..{hi}: {got} draws, expected {want:.0}"
            );
        }
        // Skewed: rank 0 is drawn far more often than the median rank; every rank is in
        // range and the tail is reached.
        assert!(counts[0] > 50 * counts[500].max(1));
        assert!(counts[900..].iter().sum::<u64>() > 0);
        // The probabilities sum to 1.
        let total: f64 = (0..1_000).map(|r| z.probability(r)).sum();
        assert!((total - 1.0).abs() < 1e-9);
    }

    #[test]
    fn scrambled_and_latest_stay_in_range_and_skew() {
        let z = Zipf::new(10_000);
        let mut x = 7;
        let mut latest_top = 0;
        for _ in 0..50_000 {
            assert!(z.scrambled(&mut x, 12_000) < 12_000);
            let l = z.latest(&mut x, 12_000);
            assert!(l < 12_000);
            if l >= 11_990 {
                latest_top += 1;
            }
        }
        // The 10 newest records draw about 30% of "latest" requests (zipf mass of 10 ranks).
        let want: f64 = (0..10).map(|r| z.probability(r)).sum::<f64>() * 50_000.0;
        assert!(
            (f64::from(latest_top) - want).abs() / want < 0.05,
            "{latest_top} vs {want}"
        );
    }

    #[test]
    fn fnv64_matches_the_reference_and_spreads() {
        // FNV-1a 64 of eight zero bytes.
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for _ in 0..8 {
            h = h.wrapping_mul(0x100_0000_01b3);
        }
        assert_eq!(fnv64(0), (h as i64).unsigned_abs());
        let mut v: Vec<u64> = (0..100_000).map(fnv64).collect();
        v.sort_unstable();
        v.dedup();
        assert_eq!(v.len(), 100_000);
    }

    #[test]
    #[should_panic(expected = "at least 2 items")]
    fn one_item_is_refused() {
        Zipf::new(1);
    }
}
