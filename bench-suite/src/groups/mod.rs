//! The benchmark groups. Each group is a function that measures through a
//! [`Ctx`](crate::measure::Ctx); register a new one in [`all`].

use crate::measure::{BenchResult, Ctx};

pub mod alloc;
pub mod objects;
pub mod std_strings;
pub mod strings;
pub mod tree;

/// A named group of benchmark cases.
#[derive(Clone, Copy, Debug)]
pub struct Group {
    /// The name used with `--only`.
    pub name: &'static str,
    /// One line on what it measures.
    pub about: &'static str,
    /// Runs every case of the group.
    pub run: fn(&mut Ctx<'_>) -> BenchResult,
}

/// Every group, in report order.
pub fn all() -> Vec<Group> {
    vec![
        std_strings::GROUP,
        strings::GROUP,
        tree::GROUP,
        objects::GROUP,
        alloc::GROUP,
    ]
}

/// The names of every group.
pub fn names() -> Vec<&'static str> {
    all().iter().map(|g| g.name).collect()
}
