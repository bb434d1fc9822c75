//! The runner refuses bad invocations before any benchmark runs, and never clobbers an
//! existing report with an empty one.

use std::path::PathBuf;
use std::process::Command;

fn runner() -> Command {
    Command::new(env!("CARGO_BIN_EXE_bench-suite"))
}

fn temp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("bench-suite-cli-{name}-{}", std::process::id()))
}

#[test]
fn a_filter_that_matches_nothing_exits_2_and_leaves_the_report_alone() {
    let out = temp("filter");
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(out.join("report.md"), "old report").unwrap();
    std::fs::write(out.join("results.json"), "{}").unwrap();
    let run = runner()
        .args(["--only", "std", "--filter", "no such case", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("matches no case"), "{stderr}");
    // The groups, and case names to copy from.
    assert!(
        stderr.contains("std, strings, real-text, tree, ycsb, objects, alloc"),
        "{stderr}"
    );
    assert!(stderr.contains("construct / String / len=0"), "{stderr}");
    assert_eq!(
        std::fs::read_to_string(out.join("report.md")).unwrap(),
        "old report"
    );
    assert_eq!(
        std::fs::read_to_string(out.join("results.json")).unwrap(),
        "{}"
    );
    std::fs::remove_dir_all(&out).unwrap();
}

#[test]
fn an_unwritable_out_is_refused_before_any_benchmark() {
    let start = std::time::Instant::now();
    let run = runner()
        .args(["--out", "/proc/forbidden/report"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("/proc/forbidden") && stderr.contains("nothing was run"),
        "{stderr}"
    );
    // Every group would take minutes in a debug build.
    assert!(start.elapsed().as_secs() < 20, "{:?}", start.elapsed());
}

#[test]
fn a_small_run_writes_provenance_and_per_group_lines() {
    let out = temp("small");
    let run = runner()
        .args([
            "--only",
            "std",
            "--filter",
            "construct / Box<str> / len=64",
            "--samples",
            "3",
            "--instrument",
            "time",
            "--out",
        ])
        .arg(&out)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{stderr}");
    // stdout is a pipe here: one line per finished group.
    assert!(
        stderr.contains("group 1 of 1, std, done: 1 cases"),
        "{stderr}"
    );
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("- command: `"), "{md}");
    assert!(md.contains("'construct / Box<str> / len=64'"), "{md}");
    assert!(md.contains("- rustc: rustc "), "{md}");
    assert!(md.contains("±"), "{md}");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    assert_eq!(json["results"][0]["stats"]["samples"], 3);
    assert!(
        json["build"]["commit"]
            .as_str()
            .is_some_and(|c| !c.is_empty())
    );
    assert!(json["machine"]["libc"].as_str().is_some());
    std::fs::remove_dir_all(&out).unwrap();
}
