//! `proptest::arbitrary::Arbitrary` (feature `proptest`): `any::<LeanString>()` is
//! `any::<String>()` converted, so the same parameters and shrinking apply.

use alloc::string::String;
use proptest::arbitrary::{Arbitrary, StrategyFor, any_with};
use proptest::strategy::{MapInto, Strategy};

use crate::{LeanStr, LeanString};

macro_rules! strategy {
    ($t:ty) => {
        impl Arbitrary for $t {
            type Parameters = <String as Arbitrary>::Parameters;
            type Strategy = MapInto<StrategyFor<String>, Self>;
            fn arbitrary_with(args: Self::Parameters) -> Self::Strategy {
                any_with::<String>(args).prop_map_into()
            }
        }
    };
}
strategy!(LeanString);
strategy!(LeanStr);
