//! The YCSB core workloads A-F as operation mixes (from the YCSB core workload
//! specification): proportions of reads, updates, inserts, scans and read-modify-writes,
//! and the request distribution that picks their records.

use super::zipf::unit;

/// One operation of a workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    /// Read one record.
    Read,
    /// Overwrite one record's value.
    Update,
    /// Insert a new record.
    Insert,
    /// Read a short run of records from a start key (1 to [`MAX_SCAN`] records).
    Scan,
    /// Read one record, change it, write it back.
    ReadModifyWrite,
}

/// How requests pick their record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dist {
    /// Scrambled zipfian over the records.
    Zipfian,
    /// Zipfian over recency: the newest records the most popular.
    Latest,
}

/// The longest scan (YCSB's default `maxscanlength`); lengths are uniform in
/// `1..=MAX_SCAN`.
pub const MAX_SCAN: usize = 100;

/// A workload: its letter, its operation mix (proportions summing to 1) and its request
/// distribution.
#[derive(Clone, Copy, Debug)]
pub struct Workload {
    /// `A`..`F`.
    pub name: &'static str,
    /// What it models.
    pub about: &'static str,
    /// `(operation, proportion)`.
    pub mix: &'static [(Op, f64)],
    /// How requests pick records.
    pub dist: Dist,
}

/// The core workloads, in YCSB's recommended run order (A, B, C, F, D, E: the two with
/// inserts last, so the others run on the loaded records).
pub const WORKLOADS: [Workload; 6] = [
    Workload {
        name: "A",
        about: "update heavy: 50% read, 50% update",
        mix: &[(Op::Read, 0.5), (Op::Update, 0.5)],
        dist: Dist::Zipfian,
    },
    Workload {
        name: "B",
        about: "read mostly: 95% read, 5% update",
        mix: &[(Op::Read, 0.95), (Op::Update, 0.05)],
        dist: Dist::Zipfian,
    },
    Workload {
        name: "C",
        about: "read only",
        mix: &[(Op::Read, 1.0)],
        dist: Dist::Zipfian,
    },
    Workload {
        name: "F",
        about: "read-modify-write: 50% read, 50% read-modify-write",
        mix: &[(Op::Read, 0.5), (Op::ReadModifyWrite, 0.5)],
        dist: Dist::Zipfian,
    },
    Workload {
        name: "D",
        about: "read latest: 95% read, 5% insert, latest records most popular",
        mix: &[(Op::Read, 0.95), (Op::Insert, 0.05)],
        dist: Dist::Latest,
    },
    Workload {
        name: "E",
        about: "short ranges: 95% scan (1-100 records), 5% insert",
        mix: &[(Op::Scan, 0.95), (Op::Insert, 0.05)],
        dist: Dist::Zipfian,
    },
];

impl Workload {
    /// The next operation, drawn from the xorshift state `x`.
    pub fn next_op(&self, x: &mut u64) -> Op {
        let u = unit(x);
        let mut acc = 0.0;
        for &(op, p) in self.mix {
            acc += p;
            if u < acc {
                return op;
            }
        }
        self.mix[self.mix.len() - 1].0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mixes_sum_to_one() {
        for w in WORKLOADS {
            let s: f64 = w.mix.iter().map(|m| m.1).sum();
            assert!((s - 1.0).abs() < 1e-12, "{}", w.name);
        }
    }

    #[test]
    fn operation_counts_match_each_mix() {
        let n = 200_000;
        for w in WORKLOADS {
            let mut x = 0x2545_f491_4f6c_dd1d;
            let mut counts = std::collections::HashMap::new();
            for _ in 0..n {
                *counts.entry(w.next_op(&mut x)).or_insert(0u32) += 1;
            }
            let total: u32 = counts.values().sum();
            assert_eq!(total, n);
            for &(op, p) in w.mix {
                let got = f64::from(counts.get(&op).copied().unwrap_or(0)) / f64::from(n);
                assert!((got - p).abs() < 0.005, "{} {op:?}: {got} vs {p}", w.name);
            }
            // No operation outside the mix.
            assert!(
                counts.keys().all(|op| w.mix.iter().any(|m| m.0 == *op)),
                "{}",
                w.name
            );
        }
    }
}
