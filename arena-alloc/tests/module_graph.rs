//! No source file of the crate imports, directly or through others, a file that imports it
//! back (the house rule "no import circles"): the arenas know nothing of start-up
//! (`init.rs`) or of the crate root's re-exports, and inside `arena/` each file uses only
//! those below it.
//!
//! The graph: file A names a path that resolves into file B. Paths are `crate::...` and
//! `super::...` anywhere in code (comments and string literals left out, test modules
//! included), and paths through a file's own child modules. A `mod x;` declaration alone
//! is containment, not an import. A path resolves to the deepest module file it names.

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

/// `src/arena/loan.rs` -> `arena::loan`; `mod.rs` names its folder, `lib.rs` the root.
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

/// The code of a line: its comment cut, string literals blanked.
fn code(line: &str) -> String {
    let (mut out, mut in_str, mut chars) = (String::new(), false, line.chars().peekable());
    while let Some(c) = chars.next() {
        if in_str {
            if c == '\\' {
                chars.next();
            } else if c == '"' {
                in_str = false;
            }
            continue;
        }
        if c == '/' && chars.peek() == Some(&'/') {
            break;
        }
        in_str = c == '"';
        out.push(c);
    }
    out
}

/// Every `a::b::c` path of a line of code; `{` groups are cut at the brace.
fn paths(code: &str) -> Vec<Vec<String>> {
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    let chars: Vec<char> = code.chars().collect();
    let (mut out, mut i) = (Vec::new(), 0);
    while i < chars.len() {
        if !ident(chars[i]) || (i > 0 && (ident(chars[i - 1]) || chars[i - 1] == ':')) {
            i += 1;
            continue;
        }
        let mut segs = Vec::new();
        loop {
            let s = i;
            while i < chars.len() && ident(chars[i]) {
                i += 1;
            }
            segs.push(chars[s..i].iter().collect::<String>());
            if i + 2 < chars.len() && chars[i] == ':' && chars[i + 1] == ':' && ident(chars[i + 2])
            {
                i += 2;
            } else {
                break;
            }
        }
        if segs.len() > 1 || code.trim_start().starts_with("use ") {
            out.push(segs);
        }
    }
    out
}

/// `use a::b::{c, d::e};` -> `use a::b::c;`, `use a::b::d::e;` (one level of braces).
fn expand_use(stmt: &str) -> Vec<String> {
    let Some(open) = stmt.find('{') else {
        return vec![stmt.to_owned()];
    };
    let close = stmt.rfind('}').unwrap_or(stmt.len());
    let prefix = &stmt[..open];
    stmt[open + 1..close]
        .split(',')
        .map(str::trim)
        .filter(|i| !i.is_empty())
        .map(|i| format!("{prefix}{i};"))
        .collect()
}

fn graph(src: &Path) -> BTreeMap<Module, BTreeSet<Module>> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let modules: BTreeSet<Module> = files.iter().map(|f| module_of(src, f)).collect();
    let mut g = BTreeMap::new();
    for f in &files {
        let me = module_of(src, f);
        let mut edges = BTreeSet::new();
        // Inline modules (`mod tests {`) deepen `super::` by one for the rest of the file.
        let mut inline = 0;
        // A `use` statement, joined over its lines, its `{...}` group expanded one level.
        let mut pending_use = String::new();
        for line in std::fs::read_to_string(f).unwrap().lines() {
            let c = code(line);
            let t = c.trim_start();
            if (t.starts_with("mod ") || t.starts_with("pub mod ")) && t.trim_end().ends_with('{') {
                inline += 1;
            }
            let mut lines = vec![c.clone()];
            if !pending_use.is_empty() || t.contains("use ") && t.contains('{') {
                pending_use.push_str(t);
                if !t.contains(';') {
                    continue;
                }
                lines = expand_use(&std::mem::take(&mut pending_use));
            }
            for p in lines.iter().flat_map(|l| paths(l)) {
                let (mut base, mut rest) = (me.clone(), p.as_slice());
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
                    s if modules.contains(&[me.clone(), vec![s.to_owned()]].concat()) => {}
                    _ => continue,
                }
                let (mut target, mut best) = (base.clone(), None);
                for s in rest {
                    target.push(s.clone());
                    if modules.contains(&target) {
                        best = Some(target.clone());
                    }
                }
                if let Some(b) = best.filter(|b| *b != me && !b.is_empty()) {
                    edges.insert(b);
                }
            }
        }
        g.insert(me, edges);
    }
    g
}

fn find_cycle(g: &BTreeMap<Module, BTreeSet<Module>>) -> Option<Vec<Module>> {
    fn visit(
        g: &BTreeMap<Module, BTreeSet<Module>>,
        m: &Module,
        stack: &mut Vec<Module>,
        done: &mut BTreeSet<Module>,
    ) -> Option<Vec<Module>> {
        if let Some(i) = stack.iter().position(|s| s == m) {
            return Some([&stack[i..], std::slice::from_ref(m)].concat());
        }
        if !done.insert(m.clone()) {
            return None;
        }
        stack.push(m.clone());
        for n in g.get(m).into_iter().flatten() {
            if let Some(c) = visit(g, n, stack, done) {
                return Some(c);
            }
        }
        stack.pop();
        None
    }
    let mut done = BTreeSet::new();
    g.keys()
        .find_map(|m| visit(g, m, &mut Vec::new(), &mut done))
}

fn main() {
    if cfg!(miri) {
        // Miri's isolation forbids reading the source tree, and the test has no unsafe
        // code to check.
        println!("module_graph: skipped under Miri");
        return;
    }
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let g = graph(&src);
    // The reader sees edges it must see: a check that the parser works.
    let m = |s: &str| -> Module { s.split("::").map(str::to_owned).collect() };
    for (from, to) in [
        ("init", "arena"),
        ("arena", "arena::loan"),
        ("arena::loan", "arena::upkeep"),
        ("tcache", "arena"),
    ] {
        assert!(g[&m(from)].contains(&m(to)), "{from} -> {to} not seen");
    }
    if let Some(c) = find_cycle(&g) {
        let names: Vec<String> = c.iter().map(|m| m.join("::")).collect();
        panic!("import cycle: {}", names.join(" -> "));
    }
    println!("module_graph: no import cycle among {} files", g.len());
}
