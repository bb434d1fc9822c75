//! Prints the size-class table of REFERENCE.md (class, block size, worst-case waste).
//! `cargo run -p memlayout-arena-alloc --example size_classes`

use arena_alloc::tuning::{NUM_CLASSES, PAGE_SIZE, class_size, worst_case_waste_permille};

fn main() {
    println!("| class | block bytes | requests | worst-case waste | blocks per page |");
    println!("| ---: | ---: | ---: | ---: | ---: |");
    for c in 0..NUM_CLASSES {
        let lo = if c == 0 { 1 } else { class_size(c - 1) + 1 };
        let w = worst_case_waste_permille(c);
        println!(
            "| {c} | {} | {lo}-{} | {}.{}% | {} |",
            class_size(c),
            class_size(c),
            w / 10,
            w % 10,
            PAGE_SIZE / class_size(c)
        );
    }
    println!("cpu source: {}", arena_alloc::cpu_source());
    println!(
        "default heap count: {}",
        arena_alloc::tuning::default_heap_count()
    );
}
