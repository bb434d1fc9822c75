//! The allocator's boundary constants and the arithmetic behind them: geometry, size
//! classes, thread-cache sizes, large-block limits, the heap-count and hardened-mode
//! settings. Public so that tests, examples and benchmarks derive their sweeps from them
//! (a size just above each boundary is where a cost changes); nothing here needs to be
//! called to use the allocator.

pub use crate::arena::{EMPTY_SEGMENTS_KEPT, LEND_RESERVE};
pub use crate::class::{
    CLASS_SIZES, LUT_MAX, MIN_BLOCK, NUM_CLASSES, POW2_MAX, POW2_MIN, SMALL_MAX, class_for,
    class_of, class_size, large_class_size, served_class, worst_case_waste_permille,
};
pub use crate::config::{
    HARDENED_ENV, HEAP_COUNT_ENV, MAX_HEAP_COUNT, MIN_DEFAULT_HEAP_COUNT, check_heap_count,
    default_heap_count, hardened, parse_hardened, parse_heap_count,
};
pub use crate::huge::{
    LARGE_EMPTY_KEPT, LARGE_MAX, LARGE_UNIT, MAX_LARGE_SEGMENTS, RETAIN_MIN, RETAIN_PEAK_WINDOW,
    RETAIN_SHARE, SOLO_CACHE,
};
pub use crate::page::{HUGE_HEADER, PAGE_SIZE, PAGES_PER_SEGMENT, SEGMENT_SIZE};
pub use crate::tcache::{
    CACHE_BIN_BYTES, CACHE_BLOCKS, CACHE_MIN_BLOCKS, CACHED_CLASSES, FREE_TAG, REFILL_BYTES,
    REMOTE_BATCH_BYTES, bin_capacity, refill_count, remote_batch,
};

// Every size the inlined table path serves is a cached class.
const _: () = assert!(class_of(LUT_MAX) < CACHED_CLASSES);
