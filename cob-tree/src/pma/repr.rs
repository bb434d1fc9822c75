//! Which storage a map of `K -> V` has, as a value the compiler folds ([`Kind::of`]), and
//! the `match` that uses it so that each method compiles only its one live arm.

use super::inl::{is_inline, width};

/// The storage of a `CobTree<K, V>`: inline by the words `K` and `V` travel in, or boxed.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Kind {
    I11,
    I12,
    I21,
    I22,
    Boxed,
}

impl Kind {
    /// The storage of `K -> V` (a pure function of the two types; folds to a constant).
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub(crate) fn of<K: 'static, V: 'static>() -> Kind {
        match (
            is_inline::<K>() && is_inline::<V>(),
            width::<K>(),
            width::<V>(),
        ) {
            (true, 1, 1) => Kind::I11,
            (true, 1, _) => Kind::I12,
            (true, _, 1) => Kind::I21,
            (true, _, _) => Kind::I22,
            (false, _, _) => Kind::Boxed,
        }
    }
}

/// `match` on a storage enum with variants `I11`..`I22` and `Boxed` (`CobTree`'s `Repr`,
/// the iterators' reprs) built for `K -> V` by [`Kind::of`]: `$inline` for the inline
/// variant, `$boxed` for the boxed one. Only the arm of `Kind::of::<K, V>()` is live, so
/// each instantiation compiles one arm and no discriminant test.
macro_rules! on_repr {
    ($t:ident, $k:ty, $v:ty; $r:expr; $m:ident => $inline:expr; $b:ident => $boxed:expr) => {
        match ($r, $crate::pma::repr::Kind::of::<$k, $v>()) {
            ($t::I11($m), $crate::pma::repr::Kind::I11) => $inline,
            ($t::I12($m), $crate::pma::repr::Kind::I12) => $inline,
            ($t::I21($m), $crate::pma::repr::Kind::I21) => $inline,
            ($t::I22($m), $crate::pma::repr::Kind::I22) => $inline,
            ($t::Boxed($b), $crate::pma::repr::Kind::Boxed) => $boxed,
            // SAFETY: every value of these enums is built by matching on the same
            // `Kind::of::<K, V>()` (`CobTree::build`, `Range::new`, `IntoIter::new`), a pure
            // function of `K` and `V`, so its variant is always the one `Kind` names.
            _ => unsafe { core::hint::unreachable_unchecked() },
        }
    };
}
pub(crate) use on_repr;
