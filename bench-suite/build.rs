//! Build-time facts: the compiler's version (`BENCH_SUITE_RUSTC_VERSION`, for the report's
//! provenance) and whether valgrind is installed. Sets
//! `cfg(valgrind_found)` when `valgrind --version` runs, so the callgrind test is marked
//! `#[ignore = "needs valgrind"]` (and shows as ignored in the summary line) where it
//! cannot run. Rebuilt when PATH changes or, once found, when the valgrind binary does.
use std::process::Command;

fn main() {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let version = Command::new(&rustc)
        .arg("--version")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_else(|| format!("unknown ({rustc} --version failed)"));
    println!("cargo::rustc-env=BENCH_SUITE_RUSTC_VERSION={version}");
    println!("cargo::rerun-if-env-changed=RUSTC");
    println!("cargo::rustc-check-cfg=cfg(valgrind_found)");
    println!("cargo::rerun-if-env-changed=PATH");
    println!("cargo::rerun-if-changed=build.rs");
    let found = Command::new("valgrind")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if found {
        println!("cargo::rustc-cfg=valgrind_found");
        if let Some(path) = std::env::var_os("PATH").and_then(|p| {
            std::env::split_paths(&p)
                .map(|d| d.join("valgrind"))
                .find(|f| f.is_file())
        }) {
            println!("cargo::rerun-if-changed={}", path.display());
        }
    }
}
