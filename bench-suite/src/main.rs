//! `cargo run --release -p bench-suite -- --help`

use bench_suite::alloc_select::Selected;
use bench_suite::counting::CountingAlloc;

// Counting is off unless the memory instrument switches it on around a measured region.
// The allocator underneath is glibc unless BENCH_SUITE_ALLOCATOR names another (the
// `alloc` group's child processes).
#[global_allocator]
static GLOBAL: CountingAlloc<Selected> = CountingAlloc::new(Selected);

fn main() -> std::process::ExitCode {
    if let Some(code) = bench_suite::alloc_child::intercept() {
        return code;
    }
    bench_suite::cli::main()
}
