//! The `alloc` group's child protocol: the runner binary re-executed with
//! `BENCH_SUITE_ALLOCATOR` set runs one benchmark on that allocator and reports it.

use std::process::Command;

use bench_suite::groups::alloc::child::{ChildReport, FLAG};
use bench_suite::groups::alloc::select::{ENV, Which};

fn child(allocator: &str, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_bench-suite"))
        .env(ENV, allocator)
        .arg(FLAG)
        .args(args)
        .output()
        .expect("run bench-suite")
}

#[test]
fn every_allocator_runs_the_same_work_to_the_same_checksum() {
    let mut sums = Vec::new();
    for w in Which::ALL {
        let out = child(w.env_value(), &["mstress", "2", "quick"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{}: {stderr}", w.label());
        let r: ChildReport =
            serde_json::from_str(String::from_utf8_lossy(&out.stdout).trim()).unwrap();
        assert_eq!(
            (r.allocator.as_str(), r.bench.as_str(), r.threads),
            (w.env_value(), "mstress", 2)
        );
        assert!(r.seconds > 0.0 && r.peak_rss_kib > 0 && r.ops > 0, "{r:?}");
        assert!(r.cpu_seconds > 0.0, "{r:?}");
        sums.push(r.checksum);
    }
    assert!(sums.windows(2).all(|w| w[0] == w[1]), "{sums:?}");
}

#[test]
fn bad_requests_fail_with_a_reason() {
    let out = child("tcmalloc", &["mstress", "1", "quick"]);
    assert!(!out.status.success());
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(
        e.contains("tcmalloc") && e.contains("names no allocator"),
        "{e}"
    );
    let out = child("glibc", &["nosuchbench", "1", "quick"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown alloc benchmark"));
    let out = child("glibc", &["mstress", "0", "quick"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("thread count"));
}
