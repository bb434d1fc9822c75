//! Exact allocator requests: a heap string of capacity `c` asks for `c + 8` bytes with the
//! compact header and `c + 16` with the wide one (64-bit); `LeanStr` asks for `len + 4`;
//! clones and inline/static construction allocate nothing.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use lean_string::{
    COMPACT_HEADER_SIZE, EXACT_HEADER_SIZE, INLINE_CAPACITY, LeanCString, LeanStr, LeanString,
    WIDE_HEADER_SIZE, WideLeanString,
};

std::thread_local! {
    static COUNT: Cell<usize> = const { Cell::new(0) };
    static LAST_SIZE: Cell<usize> = const { Cell::new(0) };
}

struct Counting;

// SAFETY: forwards every call to `System`; the counters do not touch the memory.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = COUNT.try_with(|c| c.set(c.get() + 1));
        let _ = LAST_SIZE.try_with(|c| c.set(layout.size()));
        // SAFETY: caller's contract, forwarded.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: caller's contract, forwarded.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static A: Counting = Counting;

/// (allocations, size of the last request) made by `f` on this thread.
fn requests<T>(f: impl FnOnce() -> T) -> (usize, usize, T) {
    let before = COUNT.with(Cell::get);
    LAST_SIZE.with(|c| c.set(0));
    let v = f();
    (COUNT.with(Cell::get) - before, LAST_SIZE.with(Cell::get), v)
}

#[test]
fn header_sizes_are_the_promised_ones() {
    assert_eq!(COMPACT_HEADER_SIZE, 8);
    // 64-bit: [usize capacity] + 8; 32-bit: [usize len][usize capacity] + 8.
    assert_eq!(WIDE_HEADER_SIZE, 16);
    assert_eq!(EXACT_HEADER_SIZE, 4);
}

#[test]
fn heap_capacity_requests_are_exact() {
    for c in [INLINE_CAPACITY + 1, 24, 25, 32, 48, 100, 1000] {
        let (n, size, s) = requests(|| LeanString::with_capacity(c));
        assert_eq!((n, size), (1, c + 8), "compact, capacity {c}");
        assert_eq!(s.capacity(), c);
        let (n, size, w) = requests(|| WideLeanString::with_capacity(c));
        assert_eq!((n, size), (1, c + WIDE_HEADER_SIZE), "wide, capacity {c}");
        assert_eq!(w.capacity(), c);
        let text = "x".repeat(c);
        let (n, size, _s) = requests(|| LeanString::from(text.as_str()));
        assert_eq!((n, size), (1, c + 8), "from &str of length {c}");
        let (n, size, _s) = requests(|| LeanStr::from(text.as_str()));
        assert_eq!((n, size), (1, c + 4), "LeanStr of length {c}");
        let (n, size, _s) = requests(|| LeanCString::try_from(text.as_str()).unwrap());
        assert_eq!(
            (n, size),
            (1, c + 1 + 8),
            "LeanCString of length {c} (+ NUL)"
        );
    }
}

#[test]
fn clone_and_small_construction_allocate_nothing() {
    let heap = LeanString::from("a string that lives on the heap");
    let (n, _, c) = requests(|| heap.clone());
    assert_eq!(n, 0);
    drop(c);
    let wide = WideLeanString::from("a string that lives on the heap");
    assert_eq!(requests(|| wide.clone()).0, 0);
    let ls = LeanStr::from("a string that lives on the heap");
    assert_eq!(requests(|| ls.clone()).0, 0);
    let cs = LeanCString::try_from("a string that lives on the heap").unwrap();
    assert_eq!(requests(|| cs.clone()).0, 0);
    let small = "x".repeat(INLINE_CAPACITY);
    assert_eq!(requests(|| LeanString::from(small.as_str())).0, 0);
    assert_eq!(requests(|| LeanStr::from(small.as_str())).0, 0);
    assert_eq!(
        requests(|| LeanString::from_static_str("a static string past the inline limit")).0,
        0
    );
    let mut s = LeanString::from("abc");
    assert_eq!(requests(|| s.push_str("def")).0, 0);
}
