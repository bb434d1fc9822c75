//! `serde` (feature `serde`): a map round-trips through JSON, as `BTreeMap` does.
#![cfg(all(feature = "serde", not(loom)))]

use cob_tree::CobTree;
use std::collections::BTreeMap;

#[test]
fn round_trips_like_btreemap() {
    let t: CobTree<u32, i64> = (0..200u32).map(|k| (k * 3, -i64::from(k))).collect();
    let m: BTreeMap<u32, i64> = t.iter().collect();
    let json = serde_json::to_string(&t).unwrap();
    assert_eq!(json, serde_json::to_string(&m).unwrap());
    let back: CobTree<u32, i64> = serde_json::from_str(&json).unwrap();
    assert!(back == t);
    let err = serde_json::from_str::<CobTree<u32, i64>>("[1, 2]").unwrap_err();
    assert!(err.to_string().contains("a map"), "{err}");
}
