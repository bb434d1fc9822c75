//! `serde` support (feature `serde`): a [`CobTree`] is a map.

use crate::CobTree;
use crate::key::{Key, Pod};
use core::fmt;
use core::marker::PhantomData;
use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde::ser::{Serialize, Serializer};

/// Serialized as a map, in key order (one weakly consistent iteration).
impl<K: Key + Serialize, V: Pod + Serialize> Serialize for CobTree<K, V> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.iter())
    }
}

/// Deserialized from a map; a repeated key keeps its last value, as `BTreeMap` does.
impl<'de, K: Key + Deserialize<'de>, V: Pod + Deserialize<'de>> Deserialize<'de> for CobTree<K, V> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct MapVisitor<K, V>(PhantomData<(K, V)>);
        impl<'de, K: Key + Deserialize<'de>, V: Pod + Deserialize<'de>> Visitor<'de> for MapVisitor<K, V> {
            type Value = CobTree<K, V>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a map")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Self::Value, A::Error> {
                let t = CobTree::new();
                while let Some((k, v)) = a.next_entry()? {
                    t.insert(k, v);
                }
                Ok(t)
            }
        }
        d.deserialize_map(MapVisitor(PhantomData))
    }
}
