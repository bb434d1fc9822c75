//! `cargo run --release -p bench-suite -- --help`

use bench_suite::counting::CountingAlloc;

// Counting is off unless the memory instrument switches it on around a measured region.
#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc::system();

fn main() -> std::process::ExitCode {
    bench_suite::cli::main()
}
