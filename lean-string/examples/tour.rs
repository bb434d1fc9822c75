//! A tour of lean-string's three types: where each string lives (inline, static, heap),
//! what a clone costs, and how mutation copies on write.
//!
//! `cargo run -p memlayout-lean-string --example tour`

use lean_string::{INLINE_CAPACITY, LeanCString, LeanStr, LeanString};

fn place(s: &LeanString) -> &'static str {
    if s.as_static_str().is_some() {
        "static"
    } else if s.is_heap_allocated() {
        "heap"
    } else {
        "inline"
    }
}

fn main() {
    println!(
        "LeanString is {} bytes; up to {INLINE_CAPACITY} bytes live inline",
        size_of::<LeanString>()
    );
    for len in [0, 8, INLINE_CAPACITY, INLINE_CAPACITY + 1, 64] {
        let s = LeanString::from("x".repeat(len).as_str());
        println!("  {len:>2} bytes: {}", place(&s));
        assert_eq!(s.len(), len);
        assert_eq!(s.is_heap_allocated(), len > INLINE_CAPACITY);
    }

    // A string literal is borrowed, never copied, until it is changed.
    let mut greeting = LeanString::from_static_str("hello, a string that is too long to inline");
    assert_eq!(place(&greeting), "static");
    let copy = greeting.clone(); // still the same static bytes
    greeting.push('!'); // copy on write: now on the heap, `copy` untouched
    println!(
        "static literal: {} -> after push: {}",
        place(&copy),
        place(&greeting)
    );
    assert_eq!(place(&copy), "static");
    assert_eq!(place(&greeting), "heap");
    assert!(greeting.ends_with('!') && !copy.ends_with('!'));

    // Heap clones share one buffer (a refcount in the 8-byte header).
    let a = LeanString::from("a heap string shared by every clone of it");
    let b = a.clone();
    assert_eq!(a.as_ptr(), b.as_ptr());
    println!("clone shares the buffer: {}", a.as_ptr() == b.as_ptr());

    // LeanStr: immutable, exact-size buffer; LeanCString: NUL-terminated for C.
    let frozen: LeanStr = a.into_lean_str();
    assert_eq!(frozen.as_str(), b.as_str());
    let c = LeanCString::try_from("for C").expect("no interior NUL");
    assert_eq!(c.as_c_str(), c"for C");
    assert!(LeanCString::try_from("inner\0nul").is_err());
    println!(
        "LeanCString {:?} is {} bytes",
        c.as_c_str(),
        size_of::<LeanCString>()
    );
}
