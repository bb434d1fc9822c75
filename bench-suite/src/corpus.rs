//! Real text for the string benchmarks: corpora harvested at run time from Rust sources
//! nobody tuned for a benchmark.
//!
//! The sources are this workspace's `.rs` files, then, where present, cargo's registry
//! source cache (`$CARGO_HOME/registry/src`, default `~/.cargo/registry/src`). Files are
//! read in a deterministic order (the workspace by path, then the registry ordered by a
//! hash of each file's path below the cache, so a cap samples every crate rather than the
//! first few alphabetically) until a byte cap is reached. A light lexer (comments skipped,
//! raw strings, char literals and lifetimes told apart) cuts them into:
//!
//! - identifiers (keywords included, as the lexer sees them),
//! - trimmed non-empty lines,
//! - string literals (the text between the quotes, escapes as written),
//! - integer literals (as `u64`) and float literals (as `f64`).
//!
//! Nothing here depends on the rest of the runner: a leaf module.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// How much to read: a cap on source bytes and on strings per corpus.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Caps {
    /// Source bytes read at most (whole files; the file that crosses the cap is the last).
    pub source_bytes: usize,
    /// Strings kept per corpus at most (the first ones, in reading order).
    pub per_corpus: usize,
}

impl Caps {
    /// The quick run's caps: 4 MiB of sources, 2^18 strings per corpus.
    pub const QUICK: Caps = Caps {
        source_bytes: 4 << 20,
        per_corpus: 1 << 18,
    };
    /// `--full`: 32 MiB of sources, 2^21 strings per corpus.
    pub const FULL: Caps = Caps {
        source_bytes: 32 << 20,
        per_corpus: 1 << 21,
    };
}

/// One corpus of strings, in reading order.
#[derive(Clone, Debug, Default)]
pub struct Corpus {
    /// Its name (`identifiers`, `lines`, `literals`).
    pub name: &'static str,
    /// The strings.
    pub strings: Vec<String>,
}

impl Corpus {
    /// Total bytes of the strings.
    pub fn bytes(&self) -> usize {
        self.strings.iter().map(String::len).sum()
    }

    /// The share (0..=1) of strings at most `len` bytes long.
    pub fn share_at_most(&self, len: usize) -> f64 {
        if self.strings.is_empty() {
            return 0.0;
        }
        let n = self.strings.iter().filter(|s| s.len() <= len).count();
        n as f64 / self.strings.len() as f64
    }

    /// The length at quantile `q` (0..=1) of the sorted lengths.
    pub fn length_quantile(&self, q: f64) -> usize {
        let mut lens: Vec<usize> = self.strings.iter().map(String::len).collect();
        if lens.is_empty() {
            return 0;
        }
        lens.sort_unstable();
        let at = ((lens.len() - 1) as f64 * q.clamp(0.0, 1.0)).round() as usize;
        lens[at]
    }

    /// One line: count, bytes, mean and quantile lengths, and the share up to 16 and 24.
    pub fn summary(&self) -> String {
        let n = self.strings.len();
        let bytes = self.bytes();
        format!(
            "{:<11} {:>8} strings, {:>9} bytes, mean {:5.1} B; length p50 {} p90 {} p99 {} max {}; <= 16 B {:5.1}%, <= 24 B {:5.1}%",
            self.name,
            n,
            bytes,
            if n > 0 { bytes as f64 / n as f64 } else { 0.0 },
            self.length_quantile(0.5),
            self.length_quantile(0.9),
            self.length_quantile(0.99),
            self.length_quantile(1.0),
            100.0 * self.share_at_most(16),
            100.0 * self.share_at_most(24),
        )
    }
}

/// Everything harvested in one pass.
#[derive(Clone, Debug, Default)]
pub struct Harvest {
    /// Where the text came from: (root, files read, bytes read).
    pub sources: Vec<(PathBuf, usize, usize)>,
    /// Identifier tokens.
    pub identifiers: Corpus,
    /// Trimmed non-empty lines.
    pub lines: Corpus,
    /// String literal contents.
    pub literals: Corpus,
    /// Integer literals that fit a `u64`.
    pub integers: Vec<u64>,
    /// Float literals.
    pub floats: Vec<f64>,
}

impl Harvest {
    /// The three string corpora, identifiers first.
    pub fn corpora(&self) -> [&Corpus; 3] {
        [&self.identifiers, &self.lines, &self.literals]
    }

    /// Whether nothing at all could be read.
    pub fn is_empty(&self) -> bool {
        self.corpora().iter().all(|c| c.strings.is_empty())
    }

    /// Total files read.
    pub fn files(&self) -> usize {
        self.sources.iter().map(|s| s.1).sum()
    }
}

/// This workspace's root (the folder above bench-suite's manifest), as built.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
}

/// cargo's registry source cache: `$CARGO_HOME/registry/src`, else `~/.cargo/registry/src`.
pub fn registry_src() -> Option<PathBuf> {
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cargo")))?;
    Some(home.join("registry").join("src"))
}

/// Every `.rs` file below `dir`, skipping hidden folders and build output (`target`).
/// Unreadable folders are skipped.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let path = e.path();
        let name = e.file_name();
        let name = name.to_string_lossy();
        let Ok(kind) = e.file_type() else { continue };
        if kind.is_dir() {
            if !name.starts_with('.') && name != "target" {
                rust_files(&path, out);
            }
        } else if kind.is_file() && name.ends_with(".rs") {
            out.push(path);
        }
    }
}

/// FNV-1a of a path's bytes: the registry's reading order (stable across runs).
fn fnv(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// The files of `root` in reading order: by path, or by the hash of the path below
/// `root` (`hashed`).
pub fn reading_order(root: &Path, hashed: bool) -> Vec<PathBuf> {
    let mut files = Vec::new();
    rust_files(root, &mut files);
    let key = |p: &PathBuf| {
        let rel = p
            .strip_prefix(root)
            .unwrap_or(p)
            .to_string_lossy()
            .into_owned();
        (if hashed { fnv(&rel) } else { 0 }, rel)
    };
    let mut keyed: Vec<_> = files.into_iter().map(|p| (key(&p), p)).collect();
    keyed.sort();
    keyed.into_iter().map(|(_, p)| p).collect()
}

/// Reads the roots in order (each with its reading order) up to the caps and cuts the text
/// into corpora. Files that cannot be read, or are not UTF-8, are skipped.
pub fn harvest(roots: &[(PathBuf, bool)], caps: Caps) -> Harvest {
    let mut h = Harvest {
        identifiers: Corpus {
            name: "identifiers",
            ..Corpus::default()
        },
        lines: Corpus {
            name: "lines",
            ..Corpus::default()
        },
        literals: Corpus {
            name: "literals",
            ..Corpus::default()
        },
        ..Harvest::default()
    };
    let mut budget = caps.source_bytes;
    for (root, hashed) in roots {
        if budget == 0 {
            break;
        }
        let (mut files, mut bytes) = (0, 0);
        for path in reading_order(root, *hashed) {
            if budget == 0 {
                break;
            }
            let Ok(text) = std::fs::read_to_string(&path) else {
                continue;
            };
            files += 1;
            bytes += text.len();
            budget = budget.saturating_sub(text.len());
            lex(&text, &mut h, caps.per_corpus);
        }
        if files > 0 {
            h.sources.push((root.clone(), files, bytes));
        }
    }
    h
}

/// The harvest of this workspace and the registry cache with `caps`, made once per process
/// (every pass of the runner sees the same corpora).
pub fn shared(caps: Caps) -> &'static Harvest {
    static QUICK: OnceLock<Harvest> = OnceLock::new();
    static FULL: OnceLock<Harvest> = OnceLock::new();
    static OTHER: OnceLock<Harvest> = OnceLock::new();
    let cell = match caps {
        Caps::QUICK => &QUICK,
        Caps::FULL => &FULL,
        _ => &OTHER,
    };
    cell.get_or_init(|| {
        let mut roots = vec![(workspace_root(), false)];
        roots.extend(registry_src().filter(|p| p.is_dir()).map(|p| (p, true)));
        harvest(&roots, caps)
    })
}

fn push_capped(v: &mut Vec<String>, s: &str, cap: usize) {
    if v.len() < cap {
        v.push(s.to_owned());
    }
}

fn is_ident_start(c: char) -> bool {
    c == '_' || c.is_alphabetic()
}

fn is_ident_continue(c: char) -> bool {
    c == '_' || c.is_alphanumeric()
}

/// Cuts one file into the corpora.
fn lex(text: &str, h: &mut Harvest, cap: usize) {
    for line in text.lines() {
        let t = line.trim();
        if !t.is_empty() {
            push_capped(&mut h.lines.strings, t, cap);
        }
    }
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        match c {
            b'/' if b.get(i + 1) == Some(&b'/') => {
                i = memchr_newline(b, i);
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                i = skip_block_comment(b, i);
            }
            b'"' => {
                let end = string_end(b, i + 1);
                push_capped(&mut h.literals.strings, &text[i + 1..end], cap);
                i = (end + 1).min(b.len());
            }
            b'\'' => i = char_or_lifetime(text, i, h, cap),
            b'0'..=b'9' => i = number(text, i, h, cap),
            _ => {
                // A byte literal `b'x'`: skipped, as char literals are.
                if c == b'b' && b.get(i + 1) == Some(&b'\'') && (i == 0 || !is_word_byte(b[i - 1]))
                {
                    i = char_or_lifetime(text, i + 1, h, cap);
                    continue;
                }
                // Raw strings `r"..."`, `r#"..."#` and byte/C strings `b"..."`, `br"..."`.
                if let Some((start, end, next)) = prefixed_string(b, i) {
                    push_capped(&mut h.literals.strings, &text[start..end], cap);
                    i = next;
                    continue;
                }
                let ch = text[i..].chars().next().expect("i is a char boundary");
                if is_ident_start(ch) {
                    let end = ident_end(text, i);
                    push_capped(&mut h.identifiers.strings, &text[i..end], cap);
                    i = end;
                } else {
                    i += ch.len_utf8();
                }
            }
        }
    }
}

fn is_word_byte(c: u8) -> bool {
    c == b'_' || c.is_ascii_alphanumeric()
}

fn ident_end(text: &str, start: usize) -> usize {
    text[start..]
        .char_indices()
        .find(|&(_, c)| !is_ident_continue(c))
        .map_or(text.len(), |(k, _)| start + k)
}

fn memchr_newline(b: &[u8], from: usize) -> usize {
    b[from..]
        .iter()
        .position(|&c| c == b'\n')
        .map_or(b.len(), |k| from + k)
}

/// Past a (nested) block comment starting at `from`.
fn skip_block_comment(b: &[u8], from: usize) -> usize {
    let mut depth = 0usize;
    let mut i = from;
    while i + 1 < b.len() {
        if b[i] == b'/' && b[i + 1] == b'*' {
            depth += 1;
            i += 2;
        } else if b[i] == b'*' && b[i + 1] == b'/' {
            depth -= 1;
            i += 2;
            if depth == 0 {
                return i;
            }
        } else {
            i += 1;
        }
    }
    b.len()
}

/// The index of the closing quote of a string whose contents start at `from` (escapes
/// skipped), or the end of the text.
fn string_end(b: &[u8], from: usize) -> usize {
    let mut i = from;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'"' => return i,
            _ => i += 1,
        }
    }
    b.len()
}

/// A raw, byte or C string literal at `i` (`r"`, `r#"`, `b"`, `br"`, `c"`, `cr#"`...):
/// (contents start, contents end, index after the literal). `None` if there is none, or if
/// `i` continues an identifier.
fn prefixed_string(b: &[u8], i: usize) -> Option<(usize, usize, usize)> {
    if i > 0 && is_word_byte(b[i - 1]) {
        return None;
    }
    let mut j = i;
    if matches!(b[j], b'b' | b'c') {
        j += 1;
    }
    let raw = b.get(j) == Some(&b'r');
    if raw {
        j += 1;
    }
    if j == i {
        return None;
    }
    let mut hashes = 0;
    while raw && b.get(j) == Some(&b'#') {
        hashes += 1;
        j += 1;
    }
    if b.get(j) != Some(&b'"') {
        return None;
    }
    let start = j + 1;
    if !raw {
        let end = string_end(b, start);
        return Some((start, end, (end + 1).min(b.len())));
    }
    let mut k = start;
    while k < b.len() {
        if b[k] == b'"'
            && b[k + 1..]
                .iter()
                .take(hashes)
                .filter(|&&c| c == b'#')
                .count()
                == hashes
        {
            return Some((start, k, k + 1 + hashes));
        }
        k += 1;
    }
    Some((start, b.len(), b.len()))
}

/// A char literal (skipped) or a lifetime (its name is an identifier) at the quote `i`.
fn char_or_lifetime(text: &str, i: usize, h: &mut Harvest, cap: usize) -> usize {
    let rest = &text[i + 1..];
    let mut chars = rest.char_indices();
    match chars.next() {
        Some((_, '\\')) => {
            // An escaped char literal: up to the closing quote.
            rest[1..]
                .find('\'')
                .map_or(text.len(), |k| i + 1 + 1 + k + 1)
        }
        Some((_, c)) => {
            let after = i + 1 + c.len_utf8();
            if text.as_bytes().get(after) == Some(&b'\'') {
                after + 1
            } else if is_ident_start(c) {
                let end = ident_end(text, i + 1);
                push_capped(&mut h.identifiers.strings, &text[i + 1..end], cap);
                end
            } else {
                after
            }
        }
        None => text.len(),
    }
}

/// A number literal at `i`: an integer (`42`, `0xFF_u8`, `1_000`) or a float (`1.5`,
/// `2e-3`, `1f64`). A tuple index (`x.0`) and a method call on an integer (`1.max(2)`) are
/// integers followed by a dot.
fn number(text: &str, i: usize, h: &mut Harvest, _cap: usize) -> usize {
    let b = text.as_bytes();
    let tuple_index = i > 0 && b[i - 1] == b'.' && !(i > 1 && b[i - 2] == b'.');
    if tuple_index || i > 0 && is_word_byte(b[i - 1]) {
        // Part of an identifier or a tuple index (`x.0`, not the end of `3..4`): skip.
        let mut j = i;
        while j < b.len() && (b[j] == b'_' || b[j].is_ascii_alphanumeric()) {
            j += 1;
        }
        return j;
    }
    let radix_prefix = b[i] == b'0' && matches!(b.get(i + 1), Some(b'x' | b'o' | b'b'));
    let mut j = i;
    let mut float = false;
    if radix_prefix {
        j += 2;
        while j < b.len() && (b[j] == b'_' || b[j].is_ascii_hexdigit()) {
            j += 1;
        }
    } else {
        while j < b.len() && (b[j] == b'_' || b[j].is_ascii_digit()) {
            j += 1;
        }
        // A fraction: a dot followed by a digit (not `..`, not a method or field).
        if b.get(j) == Some(&b'.') && b.get(j + 1).is_some_and(u8::is_ascii_digit) {
            float = true;
            j += 1;
            while j < b.len() && (b[j] == b'_' || b[j].is_ascii_digit()) {
                j += 1;
            }
        } else if b.get(j) == Some(&b'.')
            && !b
                .get(j + 1)
                .is_some_and(|&c| c == b'.' || c == b'_' || c.is_ascii_alphabetic())
        {
            // `1.` alone is a float.
            float = true;
            j += 1;
        }
        if matches!(b.get(j), Some(b'e' | b'E')) {
            let mut k = j + 1;
            if matches!(b.get(k), Some(b'+' | b'-')) {
                k += 1;
            }
            if b.get(k).is_some_and(u8::is_ascii_digit) {
                float = true;
                j = k;
                while j < b.len() && (b[j] == b'_' || b[j].is_ascii_digit()) {
                    j += 1;
                }
            }
        }
    }
    let digits_end = j;
    // The type suffix.
    while j < b.len() && (b[j] == b'_' || b[j].is_ascii_alphanumeric()) {
        j += 1;
    }
    let suffix = text[digits_end..j].trim_start_matches('_');
    if suffix == "f32" || suffix == "f64" {
        float = true;
    }
    let digits: String = text[i..digits_end].chars().filter(|&c| c != '_').collect();
    if float {
        if !radix_prefix && let Ok(v) = digits.parse::<f64>() {
            h.floats.push(v);
        }
    } else {
        let v = if radix_prefix {
            let radix = match b[i + 1] {
                b'x' => 16,
                b'o' => 8,
                _ => 2,
            };
            u64::from_str_radix(&digits[2..], radix)
        } else {
            digits.parse::<u64>()
        };
        if let Ok(v) = v {
            h.integers.push(v);
        }
    }
    j
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lexed(src: &str) -> Harvest {
        let mut h = Harvest::default();
        lex(src, &mut h, usize::MAX);
        h
    }

    #[test]
    fn cuts_identifiers_literals_lines_and_numbers() {
        let h = lexed(
            "fn main() { // a comment with words\n    let s = \"hi \\\"there\\\"\"; /* more\n words */ x.0.max(1_000);\n    let r = r#\"raw \"q\"\"#; 'a'; b'q'; '\\n'; &'static str; 0xFF_u8; 1.5e3; 2f64; 3..4;\n}\n",
        );
        assert_eq!(
            h.identifiers.strings,
            [
                "fn", "main", "let", "s", "x", "max", "let", "r", "static", "str"
            ]
        );
        assert_eq!(h.literals.strings, ["hi \\\"there\\\"", "raw \"q\""]);
        assert_eq!(h.integers, [1000, 255, 3, 4]);
        assert_eq!(h.floats, [1500.0, 2.0]);
        assert_eq!(h.lines.strings.len(), 5);
        assert_eq!(h.lines.strings[0], "fn main() { // a comment with words");
    }

    #[test]
    fn caps_bound_each_corpus_and_stats_describe_it() {
        let mut h = Harvest::default();
        lex("a bb ccc dddd", &mut h, 3);
        assert_eq!(h.identifiers.strings, ["a", "bb", "ccc"]);
        let c = &h.identifiers;
        assert_eq!(c.bytes(), 6);
        assert_eq!(c.share_at_most(2), 2.0 / 3.0);
        assert_eq!((c.length_quantile(0.0), c.length_quantile(1.0)), (1, 3));
        assert!(Corpus::default().summary().contains("0 strings"));
    }

    #[test]
    fn harvest_reads_this_workspace_in_a_deterministic_order() {
        let root = workspace_root();
        let caps = Caps {
            source_bytes: 256 << 10,
            per_corpus: 10_000,
        };
        let a = harvest(&[(root.clone(), false)], caps);
        let b = harvest(&[(root.clone(), false)], caps);
        assert!(
            !a.is_empty(),
            "no Rust source found under {}",
            root.display()
        );
        assert_eq!(a.identifiers.strings, b.identifiers.strings);
        assert_eq!(a.lines.strings, b.lines.strings);
        // The cap stops reading after the file that crosses it.
        let (_, files, bytes) = a.sources[0];
        assert!(
            files > 0 && bytes >= caps.source_bytes,
            "{files} files, {bytes} bytes"
        );
        let none = harvest(&[(root.join("no such folder"), false)], caps);
        assert!(none.is_empty() && none.sources.is_empty());
    }
}
