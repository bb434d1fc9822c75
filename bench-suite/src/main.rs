//! `cargo run --release -p bench-suite -- --help`

use bench_suite::counting::CountingAlloc;
use bench_suite::groups::alloc::select::Selected;

// Counting is off unless the memory instrument switches it on around a measured region.
// The allocator underneath is glibc unless BENCH_SUITE_ALLOCATOR names another (the
// `alloc` group's child processes).
#[global_allocator]
static GLOBAL: CountingAlloc<Selected> = CountingAlloc::new(Selected);

fn main() -> std::process::ExitCode {
    if let Some(code) = bench_suite::groups::alloc::child::intercept() {
        return code;
    }
    if let Some(code) = bench_suite::scaling::alloc::intercept() {
        return code;
    }
    bench_suite::cli::main()
}
