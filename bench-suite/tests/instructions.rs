//! `--instrument instructions` gives the same counts on two runs of the same build.

use std::process::Command;

fn counts(out: &std::path::Path) -> Vec<(String, f64)> {
    let status = Command::new(env!("CARGO_BIN_EXE_bench-suite"))
        .args([
            "--only",
            "std",
            "--filter",
            "construct / Box<str> / len=",
            "--instrument",
            "instructions",
            "--out",
        ])
        .arg(out)
        .status()
        .expect("run bench-suite");
    assert!(status.success(), "bench-suite failed: {status}");
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    doc["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                format!("{} {} {}", m["operation"], m["implementation"], m["param"]),
                m["stats"]["median"].as_f64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn two_runs_count_the_same_instructions() {
    if bench_suite::callgrind::valgrind_version().is_err() {
        eprintln!("skipped: {}", bench_suite::callgrind::INSTALL_HINT);
        return;
    }
    let base = std::env::temp_dir().join(format!("bench-suite-instr-{}", std::process::id()));
    let a = counts(&base.join("a"));
    let b = counts(&base.join("b"));
    assert_eq!(
        a.len(),
        bench_suite::groups::std_strings::LENGTHS.len(),
        "{a:?}"
    );
    // Building a Box<str> copies the bytes and allocates: some instructions per string.
    assert!(a.iter().all(|(_, n)| *n > 10.0), "{a:?}");
    assert_eq!(a, b);
    std::fs::remove_dir_all(&base).unwrap();
}
