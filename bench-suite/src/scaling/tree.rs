//! `scaling-tree`: ordered maps over the key shapes users bring, `CobTree` against
//! `BTreeMap` and `crossbeam_skiplist::SkipMap`.
//!
//! Key shapes ([`KeyShape`], each a [`KeyGen`] with a generator): integers, `(u32, u64)`
//! tuples, a `#[derive(Ord)]` struct, random strings, strings with a 26-byte shared prefix
//! (`https://example.com/users/00000042`) and file paths. Keys are distinct and inserted
//! in a shuffled order. Operations: `insert` (build a map of n keys; per insert) and `get`
//! (look every key up in a built map; per lookup). To add a map, implement [`SweepMap`]
//! and add it to [`rows_for`]; to add a shape, implement [`KeyGen`] and add it to
//! [`rows`].

use std::collections::BTreeMap;
use std::fmt::Debug;

use cob_tree::CobTree;
use crossbeam_skiplist::SkipMap;

use crate::groups::group::Group;
use crate::measure::{BenchResult, Ctx};

use super::sweep::{self, Meter, Row};

/// The group.
pub const GROUP: Group = Group {
    name: "scaling-tree",
    about: "growth with n: CobTree vs BTreeMap, SkipMap inserting and looking up integer, tuple, struct, random string, shared-prefix string and path keys",
    run,
    claims: &[],
    ab_claims: &[],
};

/// The largest map of the sweep (`--scaling`, if the budget allows).
pub const LAST: u64 = 4_096_000;

/// The key shapes of the sweep.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyShape {
    /// `u64`, pseudo-random.
    U64,
    /// `(u32, u64)`: a tenant out of 64 and an id.
    Tuple,
    /// [`TenantId`], a `#[derive(Ord)]` struct with the tuple's fields.
    Struct,
    /// 16 random hex digits.
    RandomString,
    /// `https://example.com/users/{i:08}`: a 26-byte shared prefix.
    PrefixString,
    /// `/usr/lib/x86_64-linux-gnu/...` paths.
    Path,
}

impl KeyShape {
    /// Every shape, in report order.
    pub const ALL: [KeyShape; 6] = [
        KeyShape::U64,
        KeyShape::Tuple,
        KeyShape::Struct,
        KeyShape::RandomString,
        KeyShape::PrefixString,
        KeyShape::Path,
    ];

    /// The name in row labels.
    pub fn name(self) -> &'static str {
        match self {
            KeyShape::U64 => "u64",
            KeyShape::Tuple => "(u32, u64)",
            KeyShape::Struct => "struct",
            KeyShape::RandomString => "random String",
            KeyShape::PrefixString => "prefixed String",
            KeyShape::Path => "path String",
        }
    }
}

/// A struct key as users derive it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TenantId {
    /// The tenant.
    pub tenant: u32,
    /// The id within it.
    pub id: u64,
}

/// A bijection of `u64` (splitmix64's finaliser): distinct inputs, distinct
/// random-looking outputs.
pub fn mix(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// Directories of the path shape.
const DIRS: [&str; 8] = [
    "gconv",
    "perl5/5.36/auto",
    "gdk-pixbuf-2.0/2.10.0/loaders",
    "gstreamer-1.0",
    "dri",
    "libfakeroot",
    "qt6/plugins/platforms",
    "security",
];

/// A generator of one key shape: key `i` of a sweep (injective in `i`).
pub trait KeyGen {
    /// The key type.
    type Key: Ord + Clone + Debug + Send + Sync + 'static;
    /// The shape.
    const SHAPE: KeyShape;
    /// Key number `i`.
    fn key(i: u64) -> Self::Key;
}

/// [`KeyShape::U64`].
#[derive(Debug)]
pub struct U64Keys;
impl KeyGen for U64Keys {
    type Key = u64;
    const SHAPE: KeyShape = KeyShape::U64;
    fn key(i: u64) -> u64 {
        mix(i)
    }
}

/// [`KeyShape::Tuple`].
#[derive(Debug)]
pub struct TupleKeys;
impl KeyGen for TupleKeys {
    type Key = (u32, u64);
    const SHAPE: KeyShape = KeyShape::Tuple;
    fn key(i: u64) -> (u32, u64) {
        ((mix(i) % 64) as u32, i)
    }
}

/// [`KeyShape::Struct`].
#[derive(Debug)]
pub struct StructKeys;
impl KeyGen for StructKeys {
    type Key = TenantId;
    const SHAPE: KeyShape = KeyShape::Struct;
    fn key(i: u64) -> TenantId {
        TenantId {
            tenant: (mix(i) % 64) as u32,
            id: i,
        }
    }
}

/// [`KeyShape::RandomString`].
#[derive(Debug)]
pub struct RandomStrings;
impl KeyGen for RandomStrings {
    type Key = String;
    const SHAPE: KeyShape = KeyShape::RandomString;
    fn key(i: u64) -> String {
        format!("{:016x}", mix(i))
    }
}

/// [`KeyShape::PrefixString`].
#[derive(Debug)]
pub struct PrefixStrings;
impl KeyGen for PrefixStrings {
    type Key = String;
    const SHAPE: KeyShape = KeyShape::PrefixString;
    fn key(i: u64) -> String {
        format!("https://example.com/users/{i:08}")
    }
}

/// [`KeyShape::Path`].
#[derive(Debug)]
pub struct Paths;
impl KeyGen for Paths {
    type Key = String;
    const SHAPE: KeyShape = KeyShape::Path;
    fn key(i: u64) -> String {
        let h = mix(i);
        format!(
            "/usr/lib/x86_64-linux-gnu/{}/lib{:x}-{i}.so.{}",
            DIRS[(h % 8) as usize],
            (h >> 8) & 0xfff,
            (h >> 20) % 4
        )
    }
}

/// `n` distinct keys of `G` in a shuffled order (seeded: the same keys every call).
pub fn keys<G: KeyGen>(n: u64) -> Vec<G::Key> {
    let mut v: Vec<G::Key> = (0..n).map(G::key).collect();
    let mut x = 0x2545_f491_4f6c_dd1d_u64 ^ n;
    for i in (1..v.len()).rev() {
        x = mix(x);
        v.swap(i, (x % (i as u64 + 1)) as usize);
    }
    v
}

/// The value stored with key number `i` (every read checks it).
fn val(i: usize) -> u64 {
    (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1
}

/// An ordered map the sweep can fill and read.
pub trait SweepMap<K>: Sized {
    /// The implementation's name in the report.
    const NAME: &'static str;
    /// An empty map.
    fn empty() -> Self;
    /// Inserts (keys are distinct).
    fn put(&mut self, k: K, v: u64);
    /// Looks up.
    fn find(&self, k: &K) -> Option<u64>;
    /// The number of entries.
    fn count(&self) -> usize;
}

impl<K: Ord + Clone + Send + Sync + 'static> SweepMap<K> for CobTree<K, u64> {
    const NAME: &'static str = "CobTree";
    fn empty() -> Self {
        CobTree::new()
    }
    fn put(&mut self, k: K, v: u64) {
        self.insert(k, v);
    }
    fn find(&self, k: &K) -> Option<u64> {
        self.get(k)
    }
    fn count(&self) -> usize {
        self.len()
    }
}

impl<K: Ord> SweepMap<K> for BTreeMap<K, u64> {
    const NAME: &'static str = "BTreeMap";
    fn empty() -> Self {
        BTreeMap::new()
    }
    fn put(&mut self, k: K, v: u64) {
        self.insert(k, v);
    }
    fn find(&self, k: &K) -> Option<u64> {
        self.get(k).copied()
    }
    fn count(&self) -> usize {
        self.len()
    }
}

impl<K: Ord + Send + 'static> SweepMap<K> for SkipMap<K, u64> {
    const NAME: &'static str = "SkipMap";
    fn empty() -> Self {
        SkipMap::new()
    }
    fn put(&mut self, k: K, v: u64) {
        self.insert(k, v);
    }
    fn find(&self, k: &K) -> Option<u64> {
        self.get(k).map(|e| *e.value())
    }
    fn count(&self) -> usize {
        self.len()
    }
}

/// Checks every key of `keys` (by position) in `map`.
fn check_all<K, M: SweepMap<K>>(map: &M, keys: &[K]) -> Result<(), String> {
    if map.count() != keys.len() {
        return Err(format!("{} entries, expected {}", map.count(), keys.len()));
    }
    let step = (keys.len() / 64).max(1);
    for i in (0..keys.len()).step_by(step) {
        if map.find(&keys[i]) != Some(val(i)) {
            return Err(format!("key #{i} lost or wrong"));
        }
    }
    Ok(())
}

/// The `insert` row of `M` on shape `G`: per insert, building a map of n keys.
pub fn insert_row<'a, G: KeyGen, M: SweepMap<G::Key> + 'a>() -> Row<'a> {
    let mut cache: (u64, Vec<G::Key>) = (0, Vec::new());
    Row::new(
        format!("insert ({})", G::SHAPE.name()),
        M::NAME,
        LAST,
        move |n, m: &mut Meter| {
            if n == 0 {
                cache = (0, Vec::new());
                return Ok(0);
            }
            if cache.0 != n || cache.1.is_empty() {
                cache = (n, keys::<G>(n));
            }
            // The keys are cloned outside the timing: the map takes them by value.
            let input = cache.1.clone();
            let map = m.time(|| {
                let mut map = M::empty();
                for (i, k) in input.into_iter().enumerate() {
                    map.put(k, val(i));
                }
                map
            });
            check_all(&map, &cache.1)?;
            Ok(n)
        },
    )
}

/// The `get` row of `M` on shape `G`: per lookup, every key of a map of n keys.
pub fn get_row<'a, G: KeyGen, M: SweepMap<G::Key> + 'a>() -> Row<'a> {
    let mut built: Option<(u64, Vec<G::Key>, M)> = None;
    Row::new(
        format!("get ({})", G::SHAPE.name()),
        M::NAME,
        LAST,
        move |n, m: &mut Meter| {
            if n == 0 {
                built = None;
                return Ok(0);
            }
            if built.as_ref().is_none_or(|b| b.0 != n) {
                built = None; // the last size's map goes first
                let ks = keys::<G>(n);
                let mut map = M::empty();
                for (i, k) in ks.iter().enumerate() {
                    map.put(k.clone(), val(i));
                }
                built = Some((n, ks, map));
            }
            let (_, ks, map) = built.as_ref().expect("built above");
            let sum = m.time(|| {
                ks.iter()
                    .fold(0u64, |s, k| s.wrapping_add(map.find(k).unwrap_or(0)))
            });
            let want = (0..ks.len()).fold(0u64, |s, i| s.wrapping_add(val(i)));
            if sum != want {
                return Err(format!("lookup sum {sum}, expected {want}"));
            }
            Ok(n)
        },
    )
    .no_memory()
}

/// Every map's rows for shape `G` (add a peer here).
pub fn rows_for<'a, G: KeyGen + 'a>(get: bool, rows: &mut Vec<Row<'a>>) {
    rows.push(insert_row::<G, CobTree<G::Key, u64>>());
    rows.push(insert_row::<G, BTreeMap<G::Key, u64>>());
    rows.push(insert_row::<G, SkipMap<G::Key, u64>>());
    if get {
        rows.push(get_row::<G, CobTree<G::Key, u64>>());
        rows.push(get_row::<G, BTreeMap<G::Key, u64>>());
        rows.push(get_row::<G, SkipMap<G::Key, u64>>());
    }
}

/// Every row of the group (add a shape here).
pub fn rows<'a>() -> Vec<Row<'a>> {
    let mut rows = Vec::new();
    rows_for::<U64Keys>(true, &mut rows);
    rows_for::<TupleKeys>(false, &mut rows);
    rows_for::<StructKeys>(false, &mut rows);
    rows_for::<RandomStrings>(false, &mut rows);
    rows_for::<PrefixStrings>(true, &mut rows);
    rows_for::<Paths>(false, &mut rows);
    rows
}

fn run(ctx: &mut Ctx<'_>) -> BenchResult {
    sweep::run(ctx, rows())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn distinct<G: KeyGen>() {
        let mut k = keys::<G>(5000);
        k.sort();
        k.dedup();
        assert_eq!(k.len(), 5000, "{:?}", G::SHAPE);
    }

    #[test]
    fn every_shape_gives_distinct_keys() {
        distinct::<U64Keys>();
        distinct::<TupleKeys>();
        distinct::<StructKeys>();
        distinct::<RandomStrings>();
        distinct::<PrefixStrings>();
        distinct::<Paths>();
        assert_eq!(PrefixStrings::key(42), "https://example.com/users/00000042");
        assert_eq!("https://example.com/users/".len(), 26);
        assert!(Paths::key(7).starts_with("/usr/lib/x86_64-linux-gnu/"));
        // Shuffled, but the same every call.
        assert_eq!(keys::<U64Keys>(100), keys::<U64Keys>(100));
        assert_ne!(keys::<PrefixStrings>(100)[0], PrefixStrings::key(0));
    }

    #[test]
    fn rows_build_and_check_every_map() {
        for mut row in rows() {
            let mut m = Meter::default();
            assert_eq!((row.kernel)(300, &mut m), Ok(300), "{}", row.operation);
        }
    }
}
