//! `serde` support (feature `serde`, through `serde_core` so `no_std` builds work): all
//! three types serialize as strings.

use core::fmt;

use serde_core::de::{Deserialize, Deserializer, Error, Unexpected, Visitor};
use serde_core::ser::{Serialize, Serializer};

use crate::{HeaderPolicy, LeanCString, LeanStr, LeanStringWith};

macro_rules! serde_impls {
    ([$($g:tt)*] $t:ty, $expecting:literal, |$v:ident| $make:expr) => {
        impl<$($g)*> Serialize for $t {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }
        impl<'de, $($g)*> Deserialize<'de> for $t {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                struct V<T>(core::marker::PhantomData<T>);
                impl<'de, $($g)*> Visitor<'de> for V<$t> {
                    type Value = $t;
                    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                        f.write_str($expecting)
                    }
                    fn visit_str<E: Error>(self, $v: &str) -> Result<Self::Value, E> {
                        $make
                    }
                    fn visit_bytes<E: Error>(self, b: &[u8]) -> Result<Self::Value, E> {
                        match core::str::from_utf8(b) {
                            Ok(s) => self.visit_str(s),
                            Err(_) => Err(E::invalid_value(Unexpected::Bytes(b), &self)),
                        }
                    }
                }
                deserializer.deserialize_str(V::<$t>(core::marker::PhantomData))
            }
        }
    };
}

serde_impls!([L: HeaderPolicy] LeanStringWith<L>, "a string", |v| v.parse().map_err(E::custom));
serde_impls!([] LeanStr, "a string", |v| v.parse().map_err(E::custom));
serde_impls!([] LeanCString, "a string without NUL bytes", |v| v.parse().map_err(E::custom));
