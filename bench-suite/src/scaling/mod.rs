//! The scaling sweeps: how each operation's cost grows with n and with the input's shape,
//! against the peers, and where it grows faster (a cliff).
//!
//! Each scaling group (`scaling-tree`, `scaling-objects`, `scaling-strings`,
//! `scaling-alloc`) is a list of [`sweep::Row`]s (one implementation doing one operation
//! on one input shape) measured over sizes spaced 4x by [`sweep::run`]: a short sweep in
//! the default run (four sizes from about 1K, about 20 s a group), up to each row's
//! largest size with `--scaling` (about a minute a group). [`fit`] turns the rows of a run
//! into growth exponents and the cliff flags of the report's **Scaling** section.
//!
//! Adding rows: a shape or an implementation goes into the group's file (`tree.rs` has the
//! reusable key generators, [`tree::KeyGen`]; `strings.rs` the text shapes,
//! [`strings::shapes`]).

pub mod alloc;
pub mod fit;
pub mod objects;
pub mod strings;
pub mod sweep;
pub mod tree;

use crate::groups::group::Group;

/// The scaling groups, in report order.
pub fn groups() -> Vec<Group> {
    vec![strings::GROUP, tree::GROUP, objects::GROUP, alloc::GROUP]
}
