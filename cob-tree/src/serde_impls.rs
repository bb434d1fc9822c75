//! `serde` support (feature `serde`): a [`CobTree`] is a map.

use crate::CobTree;
use core::fmt;
use core::marker::PhantomData;
use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde::ser::{Serialize, Serializer};

/// Serialized as a map, in key order (one weakly consistent iteration).
impl<K: Ord + Clone + Serialize + 'static, V: Clone + Serialize + 'static> Serialize
    for CobTree<K, V>
{
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.iter())
    }
}

/// Deserialized from a map; a repeated key keeps its last value, as `BTreeMap` does.
impl<'de, K: Ord + Clone + Deserialize<'de> + 'static, V: Clone + Deserialize<'de> + 'static>
    Deserialize<'de> for CobTree<K, V>
{
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct MapVisitor<K, V>(PhantomData<(K, V)>);
        impl<
            'de,
            K: Ord + Clone + Deserialize<'de> + 'static,
            V: Clone + Deserialize<'de> + 'static,
        > Visitor<'de> for MapVisitor<K, V>
        {
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
