//! Where each group's layout trick is taught: the measured crate's `_tutorial` module, and a
//! link to its rendered page relative to the report, when `cargo doc` has built it.

use std::path::{Path, PathBuf};

/// The library whose `_tutorial` module explains what group `group` measures (the scaling
/// groups share their plain group's); `None` for groups of std types only.
pub fn crate_of(group: &str) -> Option<&'static str> {
    match group.strip_prefix("scaling-").unwrap_or(group) {
        "strings" | "real-text" => Some("lean_string"),
        "tree" => Some("cob_tree"),
        "objects" => Some("gc_object"),
        "alloc" => Some("arena_alloc"),
        _ => None,
    }
}

/// The rendered tutorial of `krate` in the `doc` folder of the target directory this binary
/// runs from (`target/doc/<krate>/_tutorial/index.html` for `target/release/bench-suite`),
/// if `cargo doc` has written it.
pub fn rendered(krate: &str) -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    exe.ancestors()
        .skip(1)
        .map(|d| {
            d.join("doc")
                .join(krate)
                .join("_tutorial")
                .join("index.html")
        })
        .find(|p| p.is_file())
}

/// The path from folder `from` to `to`, after resolving both (`None` if either does not
/// exist).
pub fn relative(from: &Path, to: &Path) -> Option<PathBuf> {
    let from = std::fs::canonicalize(from).ok()?;
    let to = std::fs::canonicalize(to).ok()?;
    let f: Vec<_> = from.components().collect();
    let t: Vec<_> = to.components().collect();
    let common = f.iter().zip(&t).take_while(|(a, b)| a == b).count();
    let mut out = PathBuf::new();
    for _ in common..f.len() {
        out.push("..");
    }
    for c in &t[common..] {
        out.push(c.as_os_str());
    }
    Some(out)
}

/// The line under group `group`'s heading in a report written to folder `out`: the
/// tutorial's rustdoc path and how to open it, and a relative link to `page` (its
/// rendered page) when there is one. `None` for a group without a tutorial.
pub fn line(group: &str, out: Option<&Path>, page: Option<&Path>) -> Option<String> {
    let krate = crate_of(group)?;
    let mut s = format!(
        "What this group measures is taught in `{krate}::_tutorial` \
         (`cargo doc --workspace --no-deps --open`)"
    );
    if let Some(rel) = out.zip(page).and_then(|(o, p)| relative(o, p)) {
        s.push_str(&format!(
            "; rendered: [{krate}/_tutorial]({})",
            rel.display()
        ));
    }
    s.push('.');
    Some(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_crate_group_has_a_tutorial() {
        for (g, k) in [
            ("strings", "lean_string"),
            ("real-text", "lean_string"),
            ("tree", "cob_tree"),
            ("scaling-tree", "cob_tree"),
            ("objects", "gc_object"),
            ("alloc", "arena_alloc"),
            ("scaling-alloc", "arena_alloc"),
        ] {
            assert_eq!(crate_of(g), Some(k), "{g}");
        }
        assert_eq!(crate_of("std"), None);
        assert_eq!(line("std", None, None), None);
        assert_eq!(
            line("tree", None, None).unwrap(),
            "What this group measures is taught in `cob_tree::_tutorial` \
             (`cargo doc --workspace --no-deps --open`)."
        );
    }

    #[test]
    fn the_link_is_relative_to_the_report() {
        let root =
            std::env::temp_dir().join(format!("bench-suite-tutorial-{}", std::process::id()));
        let out = root.join("target").join("bench-suite");
        let page = root.join("target/doc/gc_object/_tutorial/index.html");
        std::fs::create_dir_all(&out).unwrap();
        std::fs::create_dir_all(page.parent().unwrap()).unwrap();
        std::fs::write(&page, "<html/>").unwrap();
        assert_eq!(
            relative(&out, &page).unwrap(),
            Path::new("../doc/gc_object/_tutorial/index.html")
        );
        let l = line("objects", Some(&out), Some(&page)).unwrap();
        assert!(
            l.ends_with(
                "; rendered: [gc_object/_tutorial](../doc/gc_object/_tutorial/index.html)."
            ),
            "{l}"
        );
        // A page that does not exist gives no link.
        assert!(relative(&out, &root.join("missing.html")).is_none());
        std::fs::remove_dir_all(&root).unwrap();
    }
}
