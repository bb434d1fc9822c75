//! `scaling-strings`: vectors of n strings, `LeanString` against upstream `lean_string`
//! 0.8, `compact_str`, `smol_str`, `ecow`, `arcstr`, `Arc<str>` and `String`.
//!
//! Input shapes ([`TextShape`], see [`shapes`]): length bands around lean-string's inline
//! capacity (short: 1 to `INLINE_CAPACITY` bytes, inline; medium: up to 64; long: 65 to
//! 512), random ASCII; and the `real-text` group's corpora (identifiers, trimmed lines,
//! string literals of Rust sources), when a source could be read. Operations: `construct` (n strings from `&str`; per string, with
//! peak bytes per string) and `sort` (a shuffled vector of n strings; per string). To add
//! a shape (a text corpus), add a [`TextShape`] to [`shapes`]; to add a type, implement
//! [`SweepStr`] (the macro below) and add it to [`rows_for`].

use std::sync::Arc;

use lean_string::INLINE_CAPACITY;

use crate::corpus::{self, Caps};
use crate::groups::group::Group;
use crate::measure::{BenchResult, Ctx};

use super::sweep::{self, Meter, Row};
use super::tree::mix;

/// The group.
pub const GROUP: Group = Group {
    name: "scaling-strings",
    about: "growth with n: LeanString vs lean_string 0.8, compact_str, smol_str, ecow, arcstr, Arc<str>, String constructing and sorting n strings per length band",
    run,
    claims: &[],
    ab_claims: &[],
};

/// The most strings of the sweep.
pub const LAST: u64 = 1_024_000;

/// An input shape: `texts(n)` gives n strings (the same ones every call).
#[derive(Clone, Copy, Debug)]
pub struct TextShape {
    /// The name in row labels.
    pub name: &'static str,
    /// The strings of a sweep of size `n`.
    pub texts: fn(u64) -> Vec<String>,
}

/// `n` random ASCII strings with lengths in `lo..=hi`.
pub fn band(n: u64, lo: usize, hi: usize) -> Vec<String> {
    (0..n)
        .map(|i| {
            let mut h = mix(i ^ (lo as u64) << 32);
            let len = lo + (h % (hi - lo + 1) as u64) as usize;
            (0..len)
                .map(|j| {
                    if j % 8 == 0 {
                        h = mix(h);
                    }
                    char::from(b'a' + ((h >> (8 * (j % 8))) % 26) as u8)
                })
                .collect()
        })
        .collect()
}

/// The synthetic length bands (every other shape is a corpus).
const BANDS: [&str; 3] = ["short", "medium", "long"];

/// Every shape of the sweep (add corpora here).
pub fn shapes() -> Vec<TextShape> {
    vec![
        TextShape {
            name: "short",
            texts: |n| band(n, 1, INLINE_CAPACITY),
        },
        TextShape {
            name: "medium",
            texts: |n| band(n, INLINE_CAPACITY + 1, 64),
        },
        TextShape {
            name: "long",
            texts: |n| band(n, 65, 512),
        },
        // Real text (the `real-text` group's corpora, quick caps): the first n strings in
        // reading order, cycled when the corpus is shorter than n. Left out when no source
        // could be read.
        TextShape {
            name: "identifiers",
            texts: |n| cycled(&corpus::shared(Caps::QUICK).identifiers.strings, n),
        },
        TextShape {
            name: "lines",
            texts: |n| cycled(&corpus::shared(Caps::QUICK).lines.strings, n),
        },
        TextShape {
            name: "literals",
            texts: |n| cycled(&corpus::shared(Caps::QUICK).literals.strings, n),
        },
    ]
    .into_iter()
    .filter(|s| BANDS.contains(&s.name) || !corpus::shared(Caps::QUICK).is_empty())
    .collect()
}

/// The first `n` of `strings`, starting over at the end (`n` empty strings if there are
/// none).
pub fn cycled(strings: &[String], n: u64) -> Vec<String> {
    if strings.is_empty() {
        return vec![String::new(); n as usize];
    }
    strings.iter().cycle().take(n as usize).cloned().collect()
}

/// A string type of the sweep.
pub trait SweepStr: Clone + Ord + 'static {
    /// The name in the report.
    const NAME: &'static str;
    /// From a `&str`.
    fn make(s: &str) -> Self;
    /// The text.
    fn text(&self) -> &str;
}

macro_rules! sweep_str {
    ($t:ty, $name:expr) => {
        impl SweepStr for $t {
            const NAME: &'static str = $name;
            fn make(s: &str) -> Self {
                <$t>::from(s)
            }
            fn text(&self) -> &str {
                self
            }
        }
    };
}

sweep_str!(lean_string::LeanString, "LeanString");
sweep_str!(lean_string_08::LeanString, "lean_string 0.8");
sweep_str!(compact_str::CompactString, "compact_str");
sweep_str!(smol_str::SmolStr, "smol_str");
sweep_str!(ecow::EcoString, "ecow");
sweep_str!(arcstr::ArcStr, "arcstr");
sweep_str!(Arc<str>, "Arc<str>");
sweep_str!(String, "String");

/// The texts of a row, kept between the calls of a cell.
type Texts = Option<(u64, Vec<String>)>;

fn texts(cache: &mut Texts, shape: TextShape, n: u64) -> &[String] {
    if cache.as_ref().is_none_or(|c| c.0 != n) {
        *cache = None;
        *cache = Some((n, (shape.texts)(n)));
    }
    &cache.as_ref().expect("made above").1
}

fn construct_row<'a, S: SweepStr>(shape: TextShape) -> Row<'a> {
    let mut cache: Texts = None;
    Row::new(
        format!("construct ({})", shape.name),
        S::NAME,
        LAST,
        move |n, m: &mut Meter| {
            if n == 0 {
                cache = None;
                return Ok(0);
            }
            let src = texts(&mut cache, shape, n);
            let built: Vec<S> = m.time(|| src.iter().map(|s| S::make(s)).collect());
            if built.len() != src.len() || built.iter().zip(src).any(|(b, s)| b.text() != s) {
                return Err("a string differs from its source".into());
            }
            Ok(n)
        },
    )
}

fn sort_row<'a, S: SweepStr>(shape: TextShape) -> Row<'a> {
    let mut cache: Texts = None;
    Row::new(
        format!("sort ({})", shape.name),
        S::NAME,
        LAST,
        move |n, m: &mut Meter| {
            if n == 0 {
                cache = None;
                return Ok(0);
            }
            let src = texts(&mut cache, shape, n);
            let mut v: Vec<S> = src.iter().map(|s| S::make(s)).collect();
            m.time(|| v.sort_unstable());
            if v.len() != src.len() || v.windows(2).any(|w| w[0].text() > w[1].text()) {
                return Err("not sorted".into());
            }
            Ok(n)
        },
    )
    .no_memory()
}

/// Every type's rows for `shape` (add a type here).
pub fn rows_for<'a>(shape: TextShape, rows: &mut Vec<Row<'a>>) {
    macro_rules! each {
        ($f:ident) => {
            rows.push($f::<lean_string::LeanString>(shape));
            rows.push($f::<lean_string_08::LeanString>(shape));
            rows.push($f::<compact_str::CompactString>(shape));
            rows.push($f::<smol_str::SmolStr>(shape));
            rows.push($f::<ecow::EcoString>(shape));
            rows.push($f::<arcstr::ArcStr>(shape));
            rows.push($f::<Arc<str>>(shape));
            rows.push($f::<String>(shape));
        };
    }
    each!(construct_row);
    each!(sort_row);
}

/// Every row of the group.
pub fn rows<'a>() -> Vec<Row<'a>> {
    let mut rows = Vec::new();
    for shape in shapes() {
        rows_for(shape, &mut rows);
    }
    rows
}

fn run(ctx: &mut Ctx<'_>) -> BenchResult {
    sweep::run(ctx, rows())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bands_have_their_lengths() {
        for (shape, lo, hi) in [("short", 1, INLINE_CAPACITY), ("long", 65, 512)] {
            let s = shapes().into_iter().find(|s| s.name == shape).unwrap();
            let t = (s.texts)(300);
            assert_eq!(t.len(), 300);
            assert!(t.iter().all(|x| (lo..=hi).contains(&x.len())), "{shape}");
            assert_eq!(t, (s.texts)(300));
        }
    }

    #[test]
    fn corpus_shapes_cycle_their_strings() {
        let texts = ["a".to_string(), "bc".to_string()];
        assert_eq!(super::cycled(&texts, 5), ["a", "bc", "a", "bc", "a"]);
        assert_eq!(super::cycled(&[], 2), ["", ""]);
        let names: Vec<_> = shapes().iter().map(|s| s.name).collect();
        assert!(names.starts_with(&super::BANDS), "{names:?}");
    }

    #[test]
    fn rows_build_and_check_every_type() {
        for mut row in rows() {
            let mut m = Meter::default();
            assert_eq!((row.kernel)(100, &mut m), Ok(100), "{}", row.operation);
        }
    }
}
