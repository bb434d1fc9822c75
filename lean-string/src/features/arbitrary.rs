//! `arbitrary::Arbitrary` (feature `arbitrary`): a string made from an arbitrary `&str`, so
//! short inputs give inline strings.

use arbitrary::{Arbitrary, Result, Unstructured};

use crate::{LeanStr, LeanString};

macro_rules! arbitrary_impl {
    ($t:ty) => {
        impl<'a> Arbitrary<'a> for $t {
            fn arbitrary(u: &mut Unstructured<'a>) -> Result<Self> {
                <&str as Arbitrary>::arbitrary(u).map(<$t>::from)
            }
            fn arbitrary_take_rest(u: Unstructured<'a>) -> Result<Self> {
                <&str as Arbitrary>::arbitrary_take_rest(u).map(<$t>::from)
            }
            fn size_hint(depth: usize) -> (usize, Option<usize>) {
                <&str as Arbitrary>::size_hint(depth)
            }
        }
    };
}
arbitrary_impl!(LeanString);
arbitrary_impl!(LeanStr);
