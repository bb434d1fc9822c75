//! `cargo bench -p bench-suite`: the runner's single-threaded timed cases as criterion
//! benchmarks (one benchmark group per group/operation, `BenchmarkId::new(implementation,
//! size)`), for anyone who prefers criterion's statistics and HTML reports.
//! `cargo bench -p bench-suite -- --test` runs every case once. Arguments after `--` are
//! criterion's (a filter such as `strings/construct` selects benchmarks).

use bench_suite::groups;
use bench_suite::measure::{Backend, Ctx, Instrument, Settings};

fn main() {
    let mut criterion = criterion::Criterion::default().configure_from_args();
    let mut settings = Settings::new(false);
    settings.instruments = vec![Instrument::Time];
    let mut results = Vec::new();
    for g in groups::all() {
        let ctx = Ctx::new(&settings, g.name, &mut results, None);
        let mut ctx = ctx.with_backend(Backend::Criterion(&mut criterion));
        if let Err(e) = (g.run)(&mut ctx) {
            eprintln!("bench-suite: group `{}` failed: {e}", g.name);
            std::process::exit(1);
        }
    }
    criterion.final_summary();
}
