// Standalone reproduction of the release-mode miscompilation that hit `huge_geometry`
// (safe code, no dependencies). With rustc 1.95.0 (LLVM 22.1.2) and 1.97.0-nightly
// (LLVM 22.1.4) on x86_64 Linux:
//   rustc -O llvm_select_repro.rs && ./llvm_select_repro   -> assertion fails
//   rustc llvm_select_repro.rs && ./llvm_select_repro      -> ok
// In the optimised IR the `max` call inside the `then` block carries `range(i64 0, 4194304)`
// on its argument (true only under `align < 4 MiB`); SimplifyCFG then hoists the call out of
// the branch without dropping that attribute, so for larger alignments it is poison and
// InstCombine folds `select(align < 4 MiB, max(align, 64), 4 MiB)` to `max(align, 64)`:
// the third field comes out as 8 MiB instead of 4 MiB. Upstream LLVM's hoisting dropped only
// poison-generating return attributes; llvm/llvm-project#195516 (merged May 2026, after the
// LLVM 22 branch) makes it drop parameter attributes as well.
#[inline(never)]
fn geometry(align: usize) -> (usize, usize, usize) {
    if align < (4 << 20) {
        (4 << 20, 0, align.max(64))
    } else {
        (align, 4 << 20, 4 << 20)
    }
}

fn main() {
    let align = std::hint::black_box(8usize << 20);
    let g = geometry(align);
    assert_eq!(g, (8 << 20, 4 << 20, 4 << 20), "align {align}");
    println!("ok {g:?}");
}
