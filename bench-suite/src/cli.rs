//! The command line: `cargo run --release -p bench-suite -- [OPTIONS]`.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Parser;

use crate::callgrind;
use crate::groups::{self, Group};
use crate::measure::{Backend, Ctx, Instrument, Measurement, Plan, Settings, parse_threads};
use crate::provenance::Provenance;
use crate::report::{self, Document};

/// Measures the memlayout crates against their "before" layouts and their peers.
#[derive(Debug, Parser)]
#[command(name = "bench-suite", version, about)]
pub struct Cli {
    /// Run only these groups (comma-separated).
    #[arg(long, value_delimiter = ',', value_name = "GROUPS")]
    pub only: Vec<String>,
    /// Longer runs and larger sizes.
    #[arg(long)]
    pub full: bool,
    /// Samples per timed case (default 7, 21 with --full); also the repetitions of every
    /// thread sweep point when given.
    #[arg(long, value_parser = parse_samples, value_name = "N")]
    pub samples: Option<usize>,
    /// Thread counts for sweeps (comma-separated, each 1-1024).
    #[arg(long, value_delimiter = ',', value_parser = parse_threads, value_name = "N,N,...")]
    pub threads: Option<Vec<usize>>,
    /// Report folder (report.md, results.json).
    #[arg(long, default_value = "target/bench-suite", value_name = "DIR")]
    pub out: PathBuf,
    /// Print the results as JSON on stdout instead of Markdown tables.
    #[arg(long)]
    pub json: bool,
    /// Instruments to run (comma-separated).
    #[arg(long, value_delimiter = ',', value_enum, default_values_t = [Instrument::Time, Instrument::Memory])]
    pub instrument: Vec<Instrument>,
    /// Only cases whose name (`operation / implementation / param=value`) contains this.
    #[arg(long, value_name = "TEXT")]
    pub filter: Option<String>,
    /// Run only the multi-threaded sweeps (for the scaling script).
    #[arg(long)]
    pub sweeps_only: bool,
    /// Run only the scaling sweeps (groups `scaling-*`), each to its largest size (about a
    /// minute a group); `--only tree` then means `scaling-tree`.
    #[arg(long)]
    pub scaling: bool,
    /// Add the 1M size to the tree key-type series and 1M records to ycsb (implied by
    /// `--full`, or by `--only tree` / `--only ycsb` naming that group alone).
    #[arg(long)]
    pub large: bool,
    /// Compare two folders of results JSON files (A/B runs): medians per row and B / A.
    #[arg(long, num_args = 2, value_names = ["A_DIR", "B_DIR"])]
    pub ab_compare: Option<Vec<PathBuf>>,
    /// List the groups and exit.
    #[arg(long)]
    pub list: bool,
    /// Rewrite report.md and the plots in DIR from its results.json (no benchmark runs).
    #[arg(long, value_name = "DIR")]
    pub replot: Option<PathBuf>,
    /// Internal: this process is the child that runs under callgrind.
    #[arg(long, hide = true)]
    pub callgrind_child: bool,
}

/// Parses `--samples`.
pub fn parse_samples(s: &str) -> Result<usize, String> {
    let n: usize = s
        .trim()
        .parse()
        .map_err(|_| format!("`{s}` is not a sample count (a whole number 1-1000)"))?;
    if (1..=1000).contains(&n) {
        Ok(n)
    } else {
        Err(format!("sample count {n} is out of range 1-1000"))
    }
}

/// With `--scaling`: the scaling groups among `selected`, and the scaling group of each
/// benchmark group named with `--only` (`tree` -> `scaling-tree`).
pub fn scaling_only(only: &[String]) -> Vec<Group> {
    let prefix = crate::scaling::fit::GROUP_PREFIX;
    crate::scaling::groups()
        .into_iter()
        .filter(|g| {
            only.is_empty()
                || only
                    .iter()
                    .any(|n| n == g.name || format!("{prefix}{n}") == g.name)
        })
        .collect()
}

/// The groups `only` names, in report order; an error naming the valid groups if one is
/// unknown.
pub fn select(only: &[String]) -> Result<Vec<Group>, String> {
    let all = groups::all();
    for name in only {
        if !all.iter().any(|g| g.name == name) {
            return Err(format!(
                "unknown group `{name}`; valid groups: {}",
                groups::names().join(", ")
            ));
        }
    }
    Ok(all
        .into_iter()
        .filter(|g| only.is_empty() || only.iter().any(|n| n == g.name))
        .collect())
}

/// The arguments that make a child runner do the same selection of cases.
fn child_args(cli: &Cli, selected: &[Group]) -> Vec<String> {
    let mut a = vec![
        "--only".to_owned(),
        selected
            .iter()
            .map(|g| g.name)
            .collect::<Vec<_>>()
            .join(","),
    ];
    if cli.full {
        a.push("--full".into());
    }
    if let Some(f) = &cli.filter {
        a.extend(["--filter".to_owned(), f.clone()]);
    }
    if cli.sweeps_only {
        a.push("--sweeps-only".into());
    }
    if cli.scaling {
        a.push("--scaling".into());
    }
    if cli.large {
        a.push("--large".into());
    }
    a
}

/// The run's settings from the command line.
pub fn settings(cli: &Cli) -> Settings {
    let mut settings = Settings::new(cli.full);
    settings.threads = cli.threads.clone();
    settings.filter = cli.filter.clone();
    settings.sweeps_only = cli.sweeps_only;
    settings.scaling = cli.scaling;
    settings.deep = cli.full
        || cli.large
        || (cli.only.len() == 1 && ["tree", "ycsb"].contains(&cli.only[0].as_str()));
    if let Some(n) = cli.samples {
        settings.samples = n;
        settings.samples_set = true;
    }
    settings.instruments = cli
        .instrument
        .iter()
        .copied()
        .filter(|i| *i != Instrument::Instructions)
        .collect();
    settings
}

/// The counting pass: every group runs with [`Backend::Count`], measuring nothing, so the
/// progress bar knows the total and a `--filter` that matches nothing fails before any
/// work. When only instructions are asked for it counts what the callgrind child runs.
pub fn plan(settings: &Settings, selected: &[Group]) -> Result<Plan, String> {
    let mut settings = settings.clone();
    let mut plan = Plan {
        native: !settings.instruments.is_empty(),
        ..Plan::default()
    };
    if settings.instruments.is_empty() {
        settings.instruments = vec![Instrument::Time];
    }
    let mut sink = Vec::new();
    for g in selected {
        let mut ctx =
            Ctx::new(&settings, g.name, &mut sink, None).with_backend(Backend::Count(&mut plan));
        (g.run)(&mut ctx).map_err(|e| format!("group `{}` failed: {e}", g.name))?;
    }
    Ok(plan)
}

/// The error for a `--filter` that selects no case: the groups and a few case names.
pub fn nothing_selected(cli: &Cli, plan: &Plan) -> String {
    let mut msg = format!(
        "--filter {:?} matches no case{}; cases are named `operation / implementation / \
         param=value`, for example:",
        cli.filter.as_deref().unwrap_or(""),
        if cli.sweeps_only {
            " of the sweeps (--sweeps-only)"
        } else {
            ""
        }
    );
    for (group, _, names) in &plan.groups {
        msg.push_str(&format!("\n  {group:8} {}", names.join("  |  ")));
    }
    msg.push_str(&format!(
        "\ngroups: {} (--list describes them); nothing was run and no report was written",
        groups::names().join(", ")
    ));
    msg
}

/// The progress display: a bar over the counted cases with an ETA, or nothing (under
/// callgrind, whose counted region must not see a ticking thread).
fn progress_bar(total: Option<usize>) -> indicatif::ProgressBar {
    let Some(total) = total else {
        return indicatif::ProgressBar::hidden();
    };
    let p = indicatif::ProgressBar::new(total as u64);
    p.set_style(
        indicatif::ProgressStyle::with_template(
            "{spinner} [{elapsed_precise}] {pos}/{len} cases, {left}: {wide_msg}",
        )
        .expect("static template")
        .with_key(
            "left",
            |s: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
                let _ = w.write_str(&left(s.elapsed().as_secs_f64(), s.pos(), s.len()));
            },
        ),
    );
    p.enable_steady_tick(Duration::from_millis(200));
    p
}

/// The time left, from the average time per case so far (cases differ a lot: a thread
/// sweep point takes seconds, a small timed case milliseconds, so this is an estimate).
pub fn left(elapsed_s: f64, done: u64, total: Option<u64>) -> String {
    match total {
        Some(total) if done > 0 && total >= done => {
            let s = (elapsed_s / done as f64 * (total - done) as f64).round() as u64;
            if s >= 60 {
                format!("about {}m {:02}s left", s / 60, s % 60)
            } else {
                format!("about {s}s left")
            }
        }
        _ => "estimating time left".to_owned(),
    }
}

/// What a run produced: every measurement and the groups' notes.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Every measurement.
    pub results: Vec<Measurement>,
    /// Per group, the lines it asked to print ([`Ctx::note`]).
    pub notes: Vec<(String, Vec<String>)>,
}

/// Runs the groups of `cli`; `total` is the counting pass's case count (the progress bar's
/// length; `None` hides the bar).
pub fn run(
    cli: &Cli,
    settings: &Settings,
    selected: &[Group],
    total: Option<usize>,
) -> Result<Outcome, String> {
    let mut out = Outcome::default();
    if cli.instrument.contains(&Instrument::Instructions) && !cli.callgrind_child {
        let work = cli.out.join("callgrind");
        eprintln!("bench-suite: counting instructions under callgrind (slow: about 50x)...");
        out.results
            .extend(callgrind::run(&child_args(cli, selected), &work)?);
        if settings.instruments.is_empty() {
            return Ok(out);
        }
    }
    let progress = progress_bar(total.filter(|_| !cli.callgrind_child));
    let lines = !std::io::stdout().is_terminal() && !cli.callgrind_child;
    let run_start = Instant::now();
    for (i, g) in selected.iter().enumerate() {
        let start = Instant::now();
        let before = progress.position();
        let mut ctx = Ctx::new(settings, g.name, &mut out.results, Some(&progress));
        if cli.callgrind_child {
            ctx = ctx.with_backend(Backend::Callgrind);
        }
        (g.run)(&mut ctx).map_err(|e| format!("group `{}` failed: {e}", g.name))?;
        let notes = ctx.take_notes();
        out.notes.push((g.name.to_owned(), notes));
        if lines {
            let (pos, len) = (progress.position(), progress.length().unwrap_or(0));
            let rest = left(run_start.elapsed().as_secs_f64(), pos, Some(len));
            progress.suspend(|| {
                eprintln!(
                    "bench-suite: group {} of {}, {}, done: {} cases in {:.0} s ({pos} of {len} cases done, {rest})",
                    i + 1,
                    selected.len(),
                    g.name,
                    pos - before,
                    start.elapsed().as_secs_f64(),
                )
            });
        }
    }
    progress.finish_and_clear();
    Ok(out)
}

/// The runner's global allocator, for the provenance.
fn allocator() -> String {
    let env = crate::groups::alloc::select::ENV;
    match crate::groups::alloc::select::current() {
        Some(w) => format!(
            "CountingAlloc over {} ({env} {}); the alloc group's children run each allocator",
            w.label(),
            std::env::var(env).map_or_else(|_| "unset".into(), |v| format!("= {v}"))
        ),
        None => "not bench-suite's Selected (a test or bench harness)".into(),
    }
}

/// The binary's entry point. Exit status 2: a bad invocation (unknown group, unwritable
/// `--out`, a `--filter` that matches nothing), found before any benchmark runs.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    if cli.list {
        for g in groups::all() {
            println!("{:10} {}", g.name, g.about);
        }
        return ExitCode::SUCCESS;
    }
    if let Some(dir) = &cli.replot {
        return match report::replot(dir, &groups::claims()) {
            Ok(()) => {
                eprintln!("report: {}", dir.join("report.md").display());
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("bench-suite: --replot {}: {e}", dir.display());
                ExitCode::FAILURE
            }
        };
    }
    if let Some(dirs) = &cli.ab_compare {
        let name = |p: &PathBuf| {
            p.file_name()
                .map_or("?".into(), |n| n.to_string_lossy().into_owned())
        };
        return match (report::read_runs(&dirs[0]), report::read_runs(&dirs[1])) {
            (Ok(a), Ok(b)) => {
                print!(
                    "{}",
                    report::ab_table(
                        &name(&dirs[0]),
                        &a,
                        &name(&dirs[1]),
                        &b,
                        &groups::ab_claims(),
                    )
                );
                ExitCode::SUCCESS
            }
            (Err(e), _) | (_, Err(e)) => {
                eprintln!("bench-suite: {e}");
                ExitCode::FAILURE
            }
        };
    }
    let selected = match select(&cli.only) {
        Ok(_) if cli.scaling => scaling_only(&cli.only),
        Ok(s) => s,
        Err(e) => {
            eprintln!("bench-suite: {e}");
            return ExitCode::from(2);
        }
    };
    if selected.is_empty() {
        eprintln!(
            "bench-suite: --scaling with --only {}: none of these groups has a scaling sweep",
            cli.only.join(",")
        );
        return ExitCode::from(2);
    }
    if let Err(e) = report::check_writable(&cli.out) {
        eprintln!(
            "bench-suite: --out {}: {e}; nothing was run",
            cli.out.display()
        );
        return ExitCode::from(2);
    }
    let settings = settings(&cli);
    // Before the work: the commit and date of the tree the run started from.
    let args: Vec<String> = std::env::args().collect();
    let prov = Provenance::detect(allocator(), &args);
    let total = if cli.callgrind_child {
        None
    } else {
        match plan(&settings, &selected) {
            // With no filter, a run whose groups found nothing to measure (real-text
            // without any source to read) still runs and prints their notes.
            Ok(p) if p.selected == 0 && (cli.filter.is_some() || cli.sweeps_only) => {
                eprintln!("bench-suite: {}", nothing_selected(&cli, &p));
                return ExitCode::from(2);
            }
            Ok(p) => Some(p.selected),
            Err(e) => {
                eprintln!("bench-suite: {e}");
                return ExitCode::FAILURE;
            }
        }
    };
    let out = match run(&cli, &settings, &selected, total) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("bench-suite: {e}");
            return ExitCode::FAILURE;
        }
    };
    let goal_lines = report::goal_lines(&out.results);
    if cli.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&Document::new(&prov, &out.results))
                .expect("results serialize")
        );
    } else {
        let m = &prov.machine;
        println!(
            "machine: {} logical CPUs, {}; {}; {}; {} UTC\ncommit {}; {}\n",
            m.cores, m.model, m.kernel, m.libc, m.date, prov.build.commit, prov.build.rustc
        );
        if !goal_lines.is_empty() {
            println!("targets (value [worst] goal: verdict):\n{goal_lines}");
        }
        print!("{}", crate::scaling::fit::section(&out.results));
        for (group, notes) in &out.notes {
            if !notes.is_empty() {
                println!("{group}:\n{}\n", notes.join("\n"));
            }
        }
        print!("{}", report::markdown(&out.results));
    }
    if let Err(e) = report::write(&cli.out, &prov, &out.results, &groups::claims()) {
        eprintln!(
            "bench-suite: cannot write the report to {}: {e}",
            cli.out.display()
        );
        return ExitCode::FAILURE;
    }
    eprintln!("report: {}", cli.out.join("report.md").display());
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("bench-suite").chain(args.iter().copied()))
    }

    #[test]
    fn defaults() {
        let c = parse(&[]).unwrap();
        assert!(c.only.is_empty() && !c.full && !c.json && c.threads.is_none());
        assert_eq!(c.instrument, vec![Instrument::Time, Instrument::Memory]);
        assert_eq!(c.out, PathBuf::from("target/bench-suite"));
    }

    #[test]
    fn lists_are_comma_separated() {
        let c = parse(&[
            "--only",
            "std",
            "--threads",
            "1,2,16",
            "--instrument",
            "memory",
            "--full",
        ])
        .unwrap();
        assert_eq!(c.only, vec!["std"]);
        assert_eq!(c.threads, Some(vec![1, 2, 16]));
        assert_eq!(c.instrument, vec![Instrument::Memory]);
        assert!(c.full);
    }

    #[test]
    fn bad_thread_counts_are_rejected_with_a_reason() {
        for bad in ["0", "x", "2000", "1,,2"] {
            let e = parse(&["--threads", bad]).unwrap_err().to_string();
            assert!(e.contains("thread count"), "{bad}: {e}");
        }
        assert!(parse(&["--instrument", "cycles"]).is_err());
    }

    #[test]
    fn time_left_is_the_average_so_far() {
        assert_eq!(left(10.0, 5, Some(20)), "about 30s left");
        assert_eq!(left(60.0, 1, Some(3)), "about 2m 00s left");
        assert_eq!(left(1.0, 0, Some(3)), "estimating time left");
        assert!(parse(&["--samples", "0"]).is_err());
        assert_eq!(parse(&["--samples", "3"]).unwrap().samples, Some(3));
    }

    #[test]
    fn unknown_groups_name_the_valid_ones() {
        let e = select(&["nosuchgroup".into()]).unwrap_err();
        assert!(e.contains("nosuchgroup") && e.contains("std"), "{e}");
        assert_eq!(select(&[]).unwrap().len(), groups::all().len());
        assert_eq!(select(&["std".into()]).unwrap()[0].name, "std");
    }

    #[test]
    fn scaling_selects_the_scaling_groups() {
        let c = parse(&["--scaling", "--only", "tree,scaling-alloc"]).unwrap();
        assert!(c.scaling && settings(&c).scaling);
        let names: Vec<&str> = scaling_only(&c.only).iter().map(|g| g.name).collect();
        assert_eq!(names, ["scaling-tree", "scaling-alloc"]);
        assert_eq!(scaling_only(&[]).len(), crate::scaling::groups().len());
        assert!(scaling_only(&["std".into()]).is_empty());
        assert!(!settings(&parse(&[]).unwrap()).scaling);
    }
}
