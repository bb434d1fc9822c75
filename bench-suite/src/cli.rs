//! The command line: `cargo run --release -p bench-suite -- [OPTIONS]`.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;

use crate::callgrind;
use crate::groups::{self, Group};
use crate::measure::{Backend, Ctx, Instrument, Measurement, Settings, parse_threads};
use crate::report::{self, Machine};

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
    /// Compare two folders of results JSON files (A/B runs): medians per row and B / A.
    #[arg(long, num_args = 2, value_names = ["A_DIR", "B_DIR"])]
    pub ab_compare: Option<Vec<PathBuf>>,
    /// List the groups and exit.
    #[arg(long)]
    pub list: bool,
    /// Internal: this process is the child that runs under callgrind.
    #[arg(long, hide = true)]
    pub callgrind_child: bool,
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
    a
}

/// Runs the groups of `cli`, returns every measurement.
pub fn run(cli: &Cli, selected: &[Group]) -> Result<Vec<Measurement>, String> {
    let mut settings = Settings::new(cli.full);
    settings.threads = cli.threads.clone();
    settings.filter = cli.filter.clone();
    settings.sweeps_only = cli.sweeps_only;
    settings.instruments = cli
        .instrument
        .iter()
        .copied()
        .filter(|i| *i != Instrument::Instructions)
        .collect();
    let mut results = Vec::new();
    if cli.instrument.contains(&Instrument::Instructions) && !cli.callgrind_child {
        let work = cli.out.join("callgrind");
        eprintln!("bench-suite: counting instructions under callgrind (slow: about 50x)...");
        results.extend(callgrind::run(&child_args(cli, selected), &work)?);
        if settings.instruments.is_empty() {
            return Ok(results);
        }
    }
    // The child under callgrind must not run a ticking progress thread: its instructions
    // would land in the counted region.
    let progress = if cli.callgrind_child {
        indicatif::ProgressBar::hidden()
    } else {
        let p = indicatif::ProgressBar::new_spinner();
        p.set_style(
            indicatif::ProgressStyle::with_template(
                "{spinner} [{elapsed_precise}] case {pos}: {wide_msg}",
            )
            .expect("static template"),
        );
        p.enable_steady_tick(std::time::Duration::from_millis(200));
        p
    };
    for g in selected {
        let mut ctx = Ctx::new(&settings, g.name, &mut results, Some(&progress));
        if cli.callgrind_child {
            ctx = ctx.with_backend(Backend::Callgrind);
        }
        (g.run)(&mut ctx).map_err(|e| format!("group `{}` failed: {e}", g.name))?;
    }
    progress.finish_and_clear();
    Ok(results)
}

/// The binary's entry point.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    if cli.list {
        for g in groups::all() {
            println!("{:10} {}", g.name, g.about);
        }
        return ExitCode::SUCCESS;
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
        Ok(s) => s,
        Err(e) => {
            eprintln!("bench-suite: {e}");
            return ExitCode::from(2);
        }
    };
    let results = match run(&cli, &selected) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("bench-suite: {e}");
            return ExitCode::FAILURE;
        }
    };
    let machine = Machine::detect();
    let command = std::env::args().collect::<Vec<_>>().join(" ");
    if cli.json {
        let doc = report::Document {
            machine: &machine,
            command: &command,
            results: &results,
        };
        println!(
            "{}",
            serde_json::to_string_pretty(&doc).expect("results serialize")
        );
    } else {
        println!(
            "machine: {} logical CPUs, {}; {} UTC\n",
            machine.cores, machine.model, machine.date
        );
        print!("{}", report::markdown(&results));
    }
    if let Err(e) = report::write(&cli.out, &machine, &command, &results, &groups::claims()) {
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
    fn unknown_groups_name_the_valid_ones() {
        let e = select(&["nosuchgroup".into()]).unwrap_err();
        assert!(e.contains("nosuchgroup") && e.contains("std"), "{e}");
        assert_eq!(select(&[]).unwrap().len(), groups::all().len());
        assert_eq!(select(&["std".into()]).unwrap()[0].name, "std");
    }
}
