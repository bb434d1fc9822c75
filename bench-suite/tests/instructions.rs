//! `--instrument instructions` gives the same counts on two runs of the same build.

use std::process::Command;

fn counts(out: &std::path::Path) -> Vec<(String, f64)> {
    let run = Command::new(env!("CARGO_BIN_EXE_bench-suite"))
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
        .output()
        .expect("run bench-suite");
    // The runner's tables and valgrind's banner are captured: shown only on failure or
    // with --nocapture.
    print!("{}", String::from_utf8_lossy(&run.stdout));
    eprint!("{}", String::from_utf8_lossy(&run.stderr));
    assert!(run.status.success(), "bench-suite failed: {}", run.status);
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

// Whether valgrind exists is decided when the test is built (build.rs): without it the
// test is ignored, and the summary line says so.
#[test]
#[cfg_attr(
    not(valgrind_found),
    ignore = "needs valgrind (not found when this test was built)"
)]
fn two_runs_count_the_same_instructions() {
    if let Err(e) = bench_suite::callgrind::valgrind_version() {
        panic!("valgrind was found when this test was built, but not now: {e}");
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
