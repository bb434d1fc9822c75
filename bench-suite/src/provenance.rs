//! Where and how a run was made: the machine (CPU, cores, kernel, glibc), the build
//! (commit, rustc, profile, global allocator) and the exact command, for `report.md` and
//! `results.json`. A leaf: it imports nothing of the crate.

use std::process::Command;

use serde::{Deserialize, Serialize};

/// The machine a run was made on.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Machine {
    /// Logical CPUs available to this process.
    pub cores: usize,
    /// CPU model from `/proc/cpuinfo` (or `unknown`).
    pub model: String,
    /// UTC date and time the run started (`YYYY-MM-DD HH:MM`).
    pub date: String,
    /// The kernel (`/proc/sys/kernel/ostype` and `osrelease`).
    pub kernel: String,
    /// The C library the runner is linked against (`gnu_get_libc_version`).
    pub libc: String,
}

impl Machine {
    /// Reads the machine's description.
    pub fn detect() -> Machine {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let model = std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with("model name"))
                    .and_then(|l| l.split_once(':'))
                    .map(|(_, m)| m.trim().to_owned())
            })
            .unwrap_or_else(|| "unknown".to_owned());
        let secs = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let read = |p: &str| std::fs::read_to_string(p).map(|s| s.trim().to_owned());
        let kernel = match (
            read("/proc/sys/kernel/ostype"),
            read("/proc/sys/kernel/osrelease"),
        ) {
            (Ok(t), Ok(r)) => format!("{t} {r}"),
            _ => std::env::consts::OS.to_owned(),
        };
        Machine {
            cores,
            model,
            date: utc_date(secs),
            kernel,
            libc: libc_version(),
        }
    }
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn libc_version() -> String {
    // SAFETY: no preconditions; it returns a pointer to a static NUL-terminated string.
    let p = unsafe { libc::gnu_get_libc_version() };
    // SAFETY: `p` points to glibc's static, NUL-terminated version string.
    let v = unsafe { std::ffi::CStr::from_ptr(p) };
    format!("glibc {}", v.to_string_lossy())
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn libc_version() -> String {
    format!("not glibc ({})", std::env::consts::OS)
}

/// How the runner was built.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Build {
    /// The source commit (`git rev-parse`), with `-dirty` when tracked files differ from
    /// it; `unknown (...)` away from the source tree.
    pub commit: String,
    /// The compiler that built the runner (`rustc --version`, recorded at build time).
    pub rustc: String,
    /// `release` or `debug` (whether debug assertions are on).
    pub profile: String,
    /// The runner's global allocator.
    pub allocator: String,
}

impl Build {
    /// This binary's build; `allocator` names the global allocator in effect.
    pub fn detect(allocator: String) -> Build {
        Build {
            commit: commit(env!("CARGO_MANIFEST_DIR")),
            rustc: env!("BENCH_SUITE_RUSTC_VERSION").to_owned(),
            profile: if cfg!(debug_assertions) {
                "debug"
            } else {
                "release"
            }
            .to_owned(),
            allocator,
        }
    }
}

/// The commit of the git work tree holding `dir`, `-dirty` if a tracked file differs.
pub fn commit(dir: &str) -> String {
    let git = |args: &[&str]| {
        Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
    };
    match git(&["rev-parse", "HEAD"]) {
        Some(hash) => match git(&["status", "--porcelain", "--untracked-files=no"]) {
            Some(s) if s.is_empty() => hash,
            Some(_) => format!("{hash}-dirty"),
            None => format!("{hash} (status unknown)"),
        },
        None => format!("unknown (no git work tree at {dir})"),
    }
}

/// Everything `report.md` and `results.json` say about a run's origin.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Provenance {
    /// The machine.
    pub machine: Machine,
    /// The build.
    pub build: Build,
    /// The command line, quoted for a POSIX shell so it can be pasted back.
    pub command: String,
}

impl Provenance {
    /// This run's provenance: `args` is the command line (`std::env::args()`).
    pub fn detect(allocator: String, args: &[String]) -> Provenance {
        Provenance {
            machine: Machine::detect(),
            build: Build::detect(allocator),
            command: shell_command(args),
        }
    }
}

/// `args` as one POSIX shell command line: each argument single-quoted unless it is
/// made only of characters the shell never interprets.
pub fn shell_command(args: &[String]) -> String {
    args.iter()
        .map(|a| {
            let plain = !a.is_empty()
                && a.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_-./,=:@%+".contains(c));
            if plain {
                a.clone()
            } else {
                format!("'{}'", a.replace('\'', r"'\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// `YYYY-MM-DD HH:MM` (UTC) for Unix time `secs` (days-to-civil conversion).
pub fn utc_date(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}",
        rem / 3600,
        rem % 3600 / 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_civil_utc() {
        assert_eq!(utc_date(0), "1970-01-01 00:00");
        assert_eq!(utc_date(951_782_400), "2000-02-29 00:00");
        assert_eq!(utc_date(1_796_000_000), "2026-11-30 00:53");
    }

    #[test]
    fn commands_are_quoted_for_pasting() {
        let args: Vec<String> = [
            "target/release/bench-suite",
            "--filter",
            "get / sorted Vec",
            "--only",
            "tree,alloc",
            "it's",
            "",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(
            shell_command(&args),
            r"target/release/bench-suite --filter 'get / sorted Vec' --only tree,alloc 'it'\''s' ''"
        );
    }

    #[test]
    fn the_machine_and_build_say_something() {
        let m = Machine::detect();
        assert!(m.cores >= 1 && !m.kernel.is_empty() && !m.libc.is_empty());
        let b = Build::detect("glibc".into());
        assert!(b.rustc.starts_with("rustc "), "{}", b.rustc);
        assert!(!b.commit.is_empty());
        assert!(commit("/").starts_with("unknown"), "{}", commit("/"));
    }
}
