//! Every `try_*` method under a failing allocator: it returns an error (never panics or
//! aborts) and leaves the string unchanged. `harness = false`: one thread, one allocator.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, Ordering};

use lean_string::{LeanCString, LeanStr, LeanString, ToLeanStr, ToLeanString};

trait Checked {
    fn to_lean_string_checked(&self) -> Result<LeanString, lean_string::ToLeanStringError>;
}

/// A `Display` value long enough to need the heap.
impl Checked for i32 {
    fn to_lean_string_checked(&self) -> Result<LeanString, lean_string::ToLeanStringError> {
        struct Long(i32);
        impl std::fmt::Display for Long {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, "{:040}", self.0)
            }
        }
        Long(*self).try_to_lean_string()
    }
}

static FAIL: AtomicBool = AtomicBool::new(false);
/// Fail only the next allocation (the panic machinery's own allocation then succeeds).
static FAIL_ONCE: AtomicBool = AtomicBool::new(false);

struct Failing;

// SAFETY: forwards to `System`, or returns null (a valid "allocation failed" answer).
unsafe impl GlobalAlloc for Failing {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if FAIL.load(Ordering::Relaxed) || FAIL_ONCE.swap(false, Ordering::Relaxed) {
            return std::ptr::null_mut();
        }
        // SAFETY: caller's contract, forwarded.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: caller's contract, forwarded.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if FAIL.load(Ordering::Relaxed) || FAIL_ONCE.swap(false, Ordering::Relaxed) {
            return std::ptr::null_mut();
        }
        // SAFETY: caller's contract, forwarded.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static A: Failing = Failing;

/// Runs `f` with every allocation failing.
fn failing<T>(f: impl FnOnce() -> T) -> T {
    FAIL.store(true, Ordering::Relaxed);
    let v = f();
    FAIL.store(false, Ordering::Relaxed);
    v
}

const LONG: &str = "a heap string that is well past the inline limit";
const FULL: &str = "0123456789abcdef"; // a full inline string on 64-bit; heap on 32-bit

/// A uniquely owned heap string with spare capacity.
fn spare() -> LeanString {
    let mut s = LeanString::with_capacity(200);
    s.push_str(LONG);
    s
}

/// Checks that `op` fails on `s` and leaves it (and a clone sharing it) unchanged.
fn check(name: &str, mut s: LeanString, op: impl FnOnce(&mut LeanString) -> bool) {
    let before = String::from(s.as_str());
    let (ptr, heap) = (s.as_ptr(), s.is_heap_allocated());
    let failed = failing(|| op(&mut s));
    assert!(failed, "{name}: expected an error");
    assert_eq!(s.as_str(), before, "{name}: string changed");
    assert_eq!(
        (s.as_ptr(), s.is_heap_allocated()),
        (ptr, heap),
        "{name}: representation changed"
    );
    println!("ok: {name}");
}

fn shared() -> (LeanString, LeanString) {
    let a = LeanString::from(LONG);
    let b = a.clone();
    (a, b)
}

fn main() {
    // Loom's atomics only work inside a loom model; this binary has no loom tests.
    if cfg!(loom) {
        println!("alloc_failure: skipped under --cfg loom");
        return;
    }
    assert!(failing(|| LeanString::try_with_capacity(100)).is_err());
    println!("ok: try_with_capacity");
    check("try_reserve", LeanString::from("abc"), |s| {
        s.try_reserve(100).is_err()
    });
    check("try_shrink_to_fit", spare(), |s| {
        s.try_shrink_to_fit().is_err()
    });
    check("try_shrink_to", spare(), |s| {
        s.try_shrink_to(LONG.len() + 10).is_err()
    });
    check("try_push", LeanString::from(FULL), |s| {
        s.try_push('x').is_err()
    });
    check("try_push_str", LeanString::from(FULL), |s| {
        s.try_push_str("more").is_err()
    });
    check("try_insert", LeanString::from(FULL), |s| {
        s.try_insert(0, 'x').is_err()
    });
    check("try_insert_str", LeanString::from(FULL), |s| {
        s.try_insert_str(3, "abc").is_err()
    });
    // Shortening a shared or static LeanString rewrites its own length: nothing to allocate.
    let (a, mut b) = shared();
    assert_eq!(failing(|| b.try_pop()), Ok(Some('t')));
    assert_eq!(failing(|| b.try_truncate(LONG.len() - 5)), Ok(()));
    assert_eq!(b.as_ptr(), a.as_ptr(), "still sharing");
    let mut st = LeanString::from_static_str(LONG);
    assert_eq!(failing(|| st.try_truncate(3)), Ok(()));
    assert!(st.as_static_str().is_some());
    println!("ok: try_pop / try_truncate (shared, static) allocate nothing");
    let (a2, b) = shared();
    check("try_remove (shared)", b, |s| s.try_remove(0).is_err());
    let (a3, b) = shared();
    check("try_retain (shared)", b, |s| {
        s.try_retain(|c| c != 'a').is_err()
    });
    let a4 = spare();
    check("try_shrink_to (shared)", a4.clone(), |s| {
        s.try_shrink_to(0).is_err()
    });
    let (a5, b) = shared();
    check("try_split_off", b, |s| s.try_split_off(4).is_err());
    check("try_push_str (shared)", a5.clone(), |s| {
        s.try_push_str("x").is_err()
    });
    let st = LeanString::from_static_str(LONG);
    check("try_push on static", st, |s| s.try_push('x').is_err());
    // The 0.8 additions.
    check("try_reserve_exact", LeanString::from("abc"), |s| {
        s.try_reserve_exact(100).is_err()
    });
    check("try_extend_from_within", LeanString::from(FULL), |s| {
        s.try_extend_from_within(..).is_err()
    });
    check("try_extend_from_within (shared)", a5.clone(), |s| {
        s.try_extend_from_within(..2).is_err()
    });
    check("try_replace_range (shared)", a5.clone(), |s| {
        s.try_replace_range(1..3, "").is_err()
    });
    let long_x = "x".repeat(300);
    check("try_replace_range (grows)", spare(), |s| {
        s.try_replace_range(1..3, &long_x).is_err()
    });
    check("try_make_ascii_uppercase (shared)", a5.clone(), |s| {
        s.try_make_ascii_uppercase().is_err()
    });
    check("try_as_mut_str (shared)", a5.clone(), |s| {
        s.try_as_mut_str().is_err()
    });
    assert!(failing(|| a5.try_to_ascii_uppercase()).is_err());
    let frozen = LeanStr::from(LONG);
    assert!(failing(|| frozen.try_to_ascii_uppercase()).is_err());
    assert!(failing(|| frozen.try_repeat(2)).is_err());
    println!("ok: the 0.8 try_* methods");
    for x in [&a, &a2, &a3, &a4, &a5] {
        assert_eq!(x.as_str(), LONG, "a clone sharing the buffer changed");
    }
    let long = LeanString::from(LONG);
    assert!(failing(|| long.try_repeat(3)).is_err());
    println!("ok: try_repeat");
    let long2 = long.clone();
    assert!(failing(|| long2.try_into_lean_str()).is_err());
    println!("ok: try_into_lean_str");
    let ls = LeanStr::from(LONG);
    assert!(failing(|| ls.clone().try_into_lean_string()).is_err());
    assert_eq!(ls, LONG);
    println!("ok: LeanStr::try_into_lean_string");
    assert!(failing(|| LONG.try_to_lean_string()).is_err());
    assert!(failing(|| LONG.try_to_lean_str()).is_err());
    assert!(failing(|| 12345.to_lean_string_checked()).is_err());
    println!("ok: try_to_lean_string / try_to_lean_str");

    // LeanCString.
    assert!(failing(|| LeanCString::try_from_str(LONG)).is_err());
    let full_c = LeanCString::try_from("0123456789abcde").unwrap();
    for (name, op) in [
        (
            "LeanCString::try_push",
            (|s: &mut LeanCString| s.try_push('x').is_err()) as fn(&mut LeanCString) -> bool,
        ),
        ("LeanCString::try_push_str", |s| {
            s.try_push_str("xy").is_err()
        }),
        ("LeanCString::try_reserve", |s| s.try_reserve(1).is_err()),
        ("LeanCString::try_insert", |s| s.try_insert(3, 'x').is_err()),
        ("LeanCString::try_insert_str", |s| {
            s.try_insert_str(0, "xy").is_err()
        }),
    ] {
        let mut s = full_c.clone();
        assert!(failing(|| op(&mut s)), "{name}");
        assert_eq!(s, "0123456789abcde", "{name}");
        assert_eq!(s.as_bytes_with_nul().last(), Some(&0));
        println!("ok: {name}");
    }
    let c_long = LeanCString::try_from(LONG).unwrap();
    for (name, op) in [
        (
            "LeanCString::try_pop (shared)",
            (|s: &mut LeanCString| s.try_pop().is_err()) as fn(&mut LeanCString) -> bool,
        ),
        ("LeanCString::try_truncate (shared)", |s| {
            s.try_truncate(20).is_err()
        }),
        ("LeanCString::try_remove (shared)", |s| {
            s.try_remove(0).is_err()
        }),
        ("LeanCString::try_retain (shared)", |s| {
            s.try_retain(|c| c != 'a').is_err()
        }),
        ("LeanCString::try_split_off", |s| {
            s.try_split_off(1).is_err()
        }),
        ("LeanCString::try_replace_range (shared)", |s| {
            s.try_replace_range(1..2, "").is_err()
        }),
        ("LeanCString::try_make_ascii_uppercase (shared)", |s| {
            s.try_make_ascii_uppercase().is_err()
        }),
        ("LeanCString::try_reserve_exact (shared)", |s| {
            s.try_reserve_exact(1).is_err()
        }),
    ] {
        let mut s = c_long.clone();
        assert!(failing(|| op(&mut s)), "{name}");
        assert_eq!(s, LONG, "{name}");
        println!("ok: {name}");
    }
    let mut c_spare = LeanCString::try_from(LONG).unwrap();
    c_spare.reserve(100);
    assert!(failing(|| c_spare.try_shrink_to_fit()).is_err());
    assert_eq!(c_spare, LONG);
    println!("ok: LeanCString::try_shrink_to_fit");
    assert!(failing(|| c_spare.try_shrink_to(LONG.len() + 1)).is_err());
    assert_eq!(c_spare, LONG);
    println!("ok: LeanCString::try_shrink_to");
    assert!(failing(|| LeanCString::try_with_capacity(64)).is_err());
    println!("ok: LeanCString::try_with_capacity");
    assert!(failing(|| c_long.try_repeat(2)).is_err());
    println!("ok: LeanCString::try_repeat");
    // An infallible method whose allocation fails panics (it does not abort), with
    // `lean_string`'s message.
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {})); // the panic is expected: keep stderr quiet
    let caught = std::panic::catch_unwind(|| {
        let mut s = LeanString::from("abc");
        FAIL_ONCE.store(true, Ordering::Relaxed);
        s.reserve(100);
    });
    FAIL_ONCE.store(false, Ordering::Relaxed);
    std::panic::set_hook(hook);
    let payload = caught.expect_err("reserve must panic");
    let msg = payload.downcast_ref::<&str>().copied().unwrap_or("");
    assert!(
        msg.starts_with("Cannot allocate memory to hold LeanString"),
        "{msg}"
    );
    println!("ok: an infallible method panics, catchably");
    println!("all try_* methods returned errors and left their strings unchanged");
}
