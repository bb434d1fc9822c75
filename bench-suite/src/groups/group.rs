//! What a benchmark group is. A leaf below the groups: it imports only the measurement
//! core and the seed-claim types, so a group file and the list of groups never import each
//! other.

use crate::measure::{BenchResult, Ctx};
use crate::seeds::{AbClaim, Claim};

/// Names of the scaling groups ([`crate::scaling`]) start with this: their rows are
/// fitted for growth exponents and plotted log-log.
pub const SCALING_PREFIX: &str = "scaling-";

/// A named group of benchmark cases, with the seed's published figures for its rows.
#[derive(Clone, Copy, Debug)]
pub struct Group {
    /// The name used with `--only`.
    pub name: &'static str,
    /// One line on what it measures.
    pub about: &'static str,
    /// Runs every case of the group.
    pub run: fn(&mut Ctx<'_>) -> BenchResult,
    /// The seed's published numbers that rows of this group measure the same way.
    pub claims: &'static [Claim],
    /// The seed's A/B figures for rows of this group (for `--ab-compare`).
    pub ab_claims: &'static [AbClaim],
}
