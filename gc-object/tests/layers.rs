//! The crate's layers import only downwards: `heap` -> `object` -> `cell` -> `slab`, with
//! the leaves `key`, `sync` and `error` usable from anywhere (and importing no layer). So
//! the unsafe core (`cell`, `slab`) never imports the layers above it.
//!
//! Reads `src/` and collects every `crate::` path in code (comments and string literals
//! left out, `use crate::{a, b}` groups expanded); a path to an item re-exported at the
//! crate root (`crate::Obj`) counts as an import of `lib.rs`, the top.
#![cfg(not(miri))]

use std::path::{Path, PathBuf};

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

/// Layer of a top-level module: `None` for a leaf.
fn layer(top: &str) -> Option<u8> {
    match top {
        "slab" => Some(0),
        "cell" => Some(1),
        "object" => Some(2),
        "heap" => Some(3),
        "lib" => Some(4),
        "key" | "sync" | "error" => None,
        other => panic!("unknown module {other}: give it a layer"),
    }
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
        if c == '"' {
            in_str = true;
            out.push('"');
        } else if c == '/' && chars.peek() == Some(&'/') {
            break;
        } else {
            out.push(c);
        }
    }
    out
}

/// The first-level names after each `crate::` in `text`.
fn crate_targets(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find("crate::") {
        let before = rest[..i].chars().last();
        rest = &rest[i + "crate::".len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue; // e.g. `my_crate::`
        }
        if let Some(group) = rest.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            for name in group[..end].split(',') {
                let name: String = name
                    .trim()
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if !name.is_empty() {
                    out.push(name);
                }
            }
        } else {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            out.push(name);
        }
    }
    out
}

fn top_of(name: &str) -> &str {
    match name {
        "slab" | "cell" | "object" | "heap" | "key" | "sync" | "error" => name,
        // An item re-exported by lib.rs.
        _ => "lib",
    }
}

#[test]
fn every_layer_imports_only_the_layers_below_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut checked = 0;
    let mut bad = Vec::new();
    for f in &files {
        let rel = f.strip_prefix(&src).unwrap();
        let first = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy();
        let top = first.trim_end_matches(".rs").to_owned();
        let text: String = std::fs::read_to_string(f)
            .unwrap()
            .lines()
            .map(code)
            .collect::<Vec<_>>()
            .join("\n");
        for target in crate_targets(&text) {
            let t = top_of(&target);
            checked += 1;
            let ok = match (layer(&top), layer(t)) {
                // A leaf imports only leaves.
                (None, target_layer) => target_layer.is_none(),
                (Some(_), None) => true,
                (Some(from), Some(to)) => to <= from,
            };
            if !ok {
                bad.push(format!("{} imports crate::{target} ({t})", rel.display()));
            }
        }
    }
    assert!(checked > 20, "the reader found only {checked} crate paths");
    assert!(
        bad.is_empty(),
        "imports against the layering:\n{}",
        bad.join("\n")
    );
}

#[test]
fn the_reader_sees_paths_groups_and_root_items_and_skips_comments() {
    assert_eq!(
        crate_targets(&code(
            "use crate::{cell::Obj, error::Error}; let x = crate::Heap::new(); // crate::object"
        )),
        vec!["cell", "error", "Heap"]
    );
    assert_eq!(top_of("Heap"), "lib");
    assert_eq!(code(r#"let s = "crate::heap"; x"#), r#"let s = ""; x"#);
}
