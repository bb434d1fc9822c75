//! The benchmark groups. Each group is a function that measures through a
//! [`Ctx`](crate::measure::Ctx) and lists its seed claims ([`Group`]); register a new
//! one in [`all`].

use crate::seeds::{AbClaim, Claim};

pub mod alloc;
pub mod group;
pub mod mix;
pub mod objects;
pub mod peers;
pub mod real_text;
pub mod std_strings;
pub mod strings;
pub mod tree;
pub mod tree_keys;
pub mod tree_strings;
pub mod ycsb;

pub use group::Group;

/// Every group, in report order: the benchmark groups, then the scaling sweeps
/// ([`crate::scaling::groups`]).
pub fn all() -> Vec<Group> {
    let mut all = vec![
        std_strings::GROUP,
        strings::GROUP,
        real_text::GROUP,
        tree::GROUP,
        ycsb::GROUP,
        objects::GROUP,
        alloc::GROUP,
    ];
    all.extend(crate::scaling::groups());
    all
}

/// The names of every group.
pub fn names() -> Vec<&'static str> {
    all().iter().map(|g| g.name).collect()
}

/// Every group's seed claims, in report order.
pub fn claims() -> Vec<Claim> {
    all()
        .iter()
        .flat_map(|g| g.claims.iter().copied())
        .collect()
}

/// Every group's seed A/B figures.
pub fn ab_claims() -> Vec<AbClaim> {
    all()
        .iter()
        .flat_map(|g| g.ab_claims.iter().copied())
        .collect()
}
