//! No source file of bench-suite imports, directly or through others, a file that imports
//! it back.
//!
//! Reads `src/` and builds the graph "file A names a path that resolves into file B":
//! `crate::...` and `super::...` paths anywhere in code (comments and string literals left
//! out), and paths through a file's own child modules (`child::spawn`, `use kernels as
//! k`). A `mod x;` declaration alone is containment, not an import. A path resolves to the
//! deepest module file it names (`super::Group` from `groups/tree.rs` is
//! `groups/mod.rs`; `super::group::Group` is `groups/group.rs`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

type Module = Vec<String>;

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// `src/groups/alloc/child.rs` -> `groups::alloc::child`; `mod.rs` names its folder.
fn module_of(src: &Path, file: &Path) -> Module {
    let rel = file.strip_prefix(src).unwrap().with_extension("");
    let mut m: Module = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if m.last().is_some_and(|l| l == "mod" || l == "lib") {
        m.pop();
    }
    m
}

/// The code of a line without its comment and with string literals blanked.
fn code(line: &str) -> String {
    let mut out = String::new();
    let mut in_str = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if in_str {
            if c == '\\' {
                chars.next();
            } else if c == '"' {
                in_str = false;
                out.push('"');
            }
            continue;
        }
        if c == '/' && chars.peek() == Some(&'/') {
            break;
        }
        if c == '"' {
            in_str = true;
        }
        out.push(c);
    }
    out
}

/// Every `a::b::c` path of a line of code (identifiers joined by `::`), with `{` groups
/// cut at the brace (`crate::x::{A, B}` -> `crate::x`).
fn paths(code: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let bytes: Vec<char> = code.chars().collect();
    let mut i = 0;
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    while i < bytes.len() {
        if ident(bytes[i]) && (i == 0 || !(ident(bytes[i - 1]) || bytes[i - 1] == ':')) {
            let mut segs = Vec::new();
            let mut j = i;
            loop {
                let s = j;
                while j < bytes.len() && ident(bytes[j]) {
                    j += 1;
                }
                segs.push(bytes[s..j].iter().collect::<String>());
                if j + 2 < bytes.len()
                    && bytes[j] == ':'
                    && bytes[j + 1] == ':'
                    && ident(bytes[j + 2])
                {
                    j += 2;
                } else {
                    break;
                }
            }
            if segs.len() > 1 {
                out.push(segs);
            }
            i = j;
        } else {
            i += 1;
        }
    }
    out
}

/// The import graph of the crate under `src`: file module -> modules it names.
fn graph(src: &Path) -> BTreeMap<Module, BTreeSet<Module>> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    files.retain(|f| f.file_name().is_some_and(|n| n != "main.rs"));
    let modules: BTreeSet<Module> = files.iter().map(|f| module_of(src, f)).collect();
    let mut g = BTreeMap::new();
    for f in &files {
        let me = module_of(src, f);
        let children: BTreeSet<String> = modules
            .iter()
            .filter(|m| m.len() == me.len() + 1 && m.starts_with(&me))
            .map(|m| m.last().unwrap().clone())
            .collect();
        let mut edges = BTreeSet::new();
        // Inline modules (`mod tests {`) deepen `super::` by one for the rest of the file.
        let mut inline = 0;
        for line in std::fs::read_to_string(f).unwrap().lines() {
            let c = code(line);
            let t = c.trim_start();
            if (t.starts_with("mod ") || t.starts_with("pub mod ")) && t.trim_end().ends_with('{') {
                inline += 1;
            }
            // `use kernels as k;`: a single-segment use of a child module.
            if let Some(u) = t
                .strip_prefix("use ")
                .or_else(|| t.strip_prefix("pub use "))
            {
                let first: String = u
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if children.contains(&first) {
                    let mut m = me.clone();
                    m.push(first);
                    edges.insert(m);
                }
            }
            for p in paths(&c) {
                let mut base: Module = me.clone();
                let mut rest = p.as_slice();
                match rest[0].as_str() {
                    "crate" => {
                        base.clear();
                        rest = &rest[1..];
                    }
                    "super" => {
                        let mut depth = inline;
                        while rest.first().is_some_and(|s| s == "super") {
                            if depth > 0 {
                                depth -= 1;
                            } else {
                                base.pop();
                            }
                            rest = &rest[1..];
                        }
                    }
                    "self" => rest = &rest[1..],
                    s if children.contains(s) => {}
                    _ => continue,
                }
                let mut target = base;
                let mut best = target.clone();
                for s in rest {
                    target.push(s.clone());
                    if modules.contains(&target) {
                        best = target.clone();
                    }
                }
                if best != me && modules.contains(&best) && !best.is_empty() {
                    edges.insert(best);
                }
            }
        }
        g.insert(me, edges);
    }
    g
}

/// A cycle of `g` as a list of modules, if there is one.
fn find_cycle(g: &BTreeMap<Module, BTreeSet<Module>>) -> Option<Vec<Module>> {
    fn visit(
        g: &BTreeMap<Module, BTreeSet<Module>>,
        m: &Module,
        stack: &mut Vec<Module>,
        done: &mut BTreeSet<Module>,
    ) -> Option<Vec<Module>> {
        if let Some(i) = stack.iter().position(|s| s == m) {
            let mut c = stack[i..].to_vec();
            c.push(m.clone());
            return Some(c);
        }
        if done.contains(m) {
            return None;
        }
        stack.push(m.clone());
        for n in g.get(m).into_iter().flatten() {
            if let Some(c) = visit(g, n, stack, done) {
                return Some(c);
            }
        }
        stack.pop();
        done.insert(m.clone());
        None
    }
    let mut done = BTreeSet::new();
    for m in g.keys() {
        if let Some(c) = visit(g, m, &mut Vec::new(), &mut done) {
            return Some(c);
        }
    }
    None
}

fn show(c: &[Module]) -> String {
    c.iter()
        .map(|m| m.join("::"))
        .collect::<Vec<_>>()
        .join(" -> ")
}

#[test]
fn no_source_file_imports_a_file_that_imports_it_back() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let g = graph(&src);
    // The reader sees the edges it must: a sanity check that the parser works.
    let tree: Module = vec!["groups".into(), "tree".into()];
    assert!(
        g[&tree].contains(&vec!["measure".to_owned()]),
        "groups::tree -> measure not seen: {:?}",
        g[&tree]
    );
    let alloc: Module = vec!["groups".into(), "alloc".into()];
    for child in ["child", "kernels"] {
        assert!(
            g[&alloc].contains(&vec!["groups".into(), "alloc".into(), child.into()]),
            "groups::alloc -> {child} not seen: {:?}",
            g[&alloc]
        );
    }
    if let Some(c) = find_cycle(&g) {
        panic!("import cycle: {}", show(&c));
    }
}

#[test]
fn the_reader_finds_a_cycle_through_super_and_crate_paths() {
    let dir = std::env::temp_dir().join(format!("bench-suite-graph-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("groups")).unwrap();
    std::fs::write(dir.join("lib.rs"), "pub mod groups;\npub mod seeds;\n").unwrap();
    std::fs::write(
        dir.join("groups/mod.rs"),
        "pub mod tree;\npub struct Group;\n// crate::seeds::x in a comment\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("groups/tree.rs"),
        "use super::Group;\nlet s = \"crate::seeds\";\n",
    )
    .unwrap();
    std::fs::write(dir.join("seeds.rs"), "fn f() { crate::groups::tree::X }\n").unwrap();
    let g = graph(&dir);
    assert_eq!(find_cycle(&g), None, "{g:?}");
    std::fs::write(
        dir.join("groups/mod.rs"),
        "pub mod tree;\npub struct Group;\npub fn all() { tree::GROUP }\n",
    )
    .unwrap();
    let c = find_cycle(&graph(&dir)).expect("groups <-> groups::tree");
    assert_eq!(show(&c), "groups -> groups::tree -> groups");
    std::fs::remove_dir_all(&dir).unwrap();
}
