//! The `instructions` instrument: deterministic instruction counts from valgrind's
//! callgrind.
//!
//! The runner re-runs itself under callgrind as a child (`--callgrind-child`), with
//! collection off at start and toggled on only inside
//! [`measured_region`](crate::measure::measured_region), and a dump after each call of it.
//! In the child every single-threaded timed case runs its routine once inside that region
//! (set-up, warm-up and self-checks run outside it). The parent then reads dump *i* as the
//! count of the child's *i*-th case. Counts are per operation (total / operations per
//! call), and are the same on every run of the same build, whatever the machine is doing.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::measure::{Instrument, Measurement, Stats};

/// The demangled symbol of [`measured_region`](crate::measure::measured_region).
pub const REGION: &str = "bench_suite::measure::measured_region";

/// How to install valgrind, printed when it is missing.
pub const INSTALL_HINT: &str = "valgrind is needed for --instrument instructions; install it with \
     `sudo apt-get install valgrind` (Debian/Ubuntu), `sudo dnf install valgrind` (Fedora) or \
     your system's package manager";

/// The installed valgrind's version line, or an error saying how to install it.
pub fn valgrind_version() -> Result<String, String> {
    match Command::new("valgrind").arg("--version").output() {
        Ok(o) if o.status.success() => Ok(String::from_utf8_lossy(&o.stdout).trim().to_owned()),
        _ => Err(INSTALL_HINT.to_owned()),
    }
}

/// Reads the instruction total (`Ir`) of one callgrind output file.
pub fn read_total(path: &Path) -> Result<u64, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let line = text
        .lines()
        .find(|l| l.starts_with("totals:"))
        .or_else(|| text.lines().find(|l| l.starts_with("summary:")))
        .ok_or_else(|| format!("{}: no totals line", path.display()))?;
    let n = line
        .split_whitespace()
        .nth(1)
        .ok_or_else(|| format!("{}: empty totals", path.display()))?;
    n.parse()
        .map_err(|_| format!("{}: bad total `{n}`", path.display()))
}

/// The dump files `base.1`, `base.2`, ... in order.
fn dumps(base: &Path) -> Vec<PathBuf> {
    let (dir, stem) = (
        base.parent().unwrap_or(Path::new(".")),
        base.file_name().unwrap_or_default(),
    );
    let prefix = format!("{}.", stem.to_string_lossy());
    let mut found: Vec<(u64, PathBuf)> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let n = name.strip_prefix(&prefix)?.parse().ok()?;
            Some((n, e.path()))
        })
        .collect();
    found.sort();
    found.into_iter().map(|(_, p)| p).collect()
}

/// Runs `child_args` (the runner's own arguments for the child) under callgrind and
/// returns one instructions-per-operation row per single-threaded timed case.
pub fn run(child_args: &[String], work: &Path) -> Result<Vec<Measurement>, String> {
    valgrind_version()?;
    let exe =
        std::env::current_exe().map_err(|e| format!("cannot find the runner's own binary: {e}"))?;
    if work.exists() {
        std::fs::remove_dir_all(work).map_err(|e| format!("{}: {e}", work.display()))?;
    }
    std::fs::create_dir_all(work).map_err(|e| format!("{}: {e}", work.display()))?;
    let base = work.join("cg.out");
    let child_out = work.join("child");
    let status = Command::new("valgrind")
        .arg("--tool=callgrind")
        .arg("--collect-atstart=no")
        // Exact names: valgrind 3.19 ignores wildcard patterns in --dump-after.
        .arg(format!("--toggle-collect={REGION}"))
        .arg(format!("--dump-after={REGION}"))
        .arg(format!("--callgrind-out-file={}", base.display()))
        .arg(&exe)
        .args(child_args)
        .args(["--callgrind-child", "--instrument", "time", "--out"])
        .arg(&child_out)
        .stdout(std::process::Stdio::null())
        .status()
        .map_err(|e| format!("cannot start valgrind: {e}"))?;
    if !status.success() {
        return Err(format!("the runner failed under callgrind ({status})"));
    }
    let json = std::fs::read_to_string(child_out.join("results.json"))
        .map_err(|e| format!("child results: {e}"))?;
    let doc: serde_json::Value =
        serde_json::from_str(&json).map_err(|e| format!("child results: {e}"))?;
    let rows: Vec<Measurement> = serde_json::from_value(doc["results"].clone())
        .map_err(|e| format!("child results: {e}"))?;
    let mut rows: Vec<Measurement> = rows
        .into_iter()
        .filter(|m| m.instrument == Instrument::Instructions)
        .collect();
    let files = dumps(&base);
    if files.len() != rows.len() {
        return Err(format!(
            "{} cases ran under callgrind but {} dumps were written",
            rows.len(),
            files.len()
        ));
    }
    for (m, f) in rows.iter_mut().zip(&files) {
        let total = read_total(f)?;
        let ops = m.ops.unwrap_or(1).max(1);
        m.stats = Stats::exact(total as f64 / ops as f64);
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_totals_line() {
        let dir = std::env::temp_dir().join(format!("bench-suite-cg-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("cg.out.1");
        std::fs::write(
            &f,
            "version: 1\nevents: Ir\nfn=main\n1 5\nsummary: 12345\ntotals: 12345\n",
        )
        .unwrap();
        assert_eq!(read_total(&f).unwrap(), 12345);
        std::fs::write(dir.join("cg.out.10"), "totals: 1\n").unwrap();
        std::fs::write(dir.join("cg.out.2"), "totals: 1\n").unwrap();
        let names: Vec<String> = dumps(&dir.join("cg.out"))
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["cg.out.1", "cg.out.2", "cg.out.10"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
