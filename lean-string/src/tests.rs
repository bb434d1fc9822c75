//! Unit tests of the unsafe core: refcount saturation (through the test-only hook), header
//! selection, and loom models of the refcount protocol.

#[cfg(not(loom))]
use crate::repr::Mutable;
use crate::repr::Shared;
use crate::repr::heap::{self, MAX_REFCOUNT};
use crate::sync::Ordering;
#[cfg(not(loom))]
use crate::{LeanCString, WideLeanString};
use crate::{LeanStr, LeanString};

const LONG: &str = "a heap string longer than the inline capacity";

#[cfg(not(loom))]
mod leak_check {
    //! Counts live allocations of the current thread, so each test can check it frees
    //! exactly what it allocated.
    use std::alloc::{GlobalAlloc, Layout, System};
    use std::cell::Cell;

    std::thread_local! {
        static LIVE: Cell<isize> = const { Cell::new(0) };
    }

    struct Counting;

    // SAFETY: forwards to `System`; the counter has no effect on the memory handed out.
    unsafe impl GlobalAlloc for Counting {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            let _ = LIVE.try_with(|c| c.set(c.get() + 1));
            // SAFETY: caller's contract, forwarded.
            unsafe { System.alloc(layout) }
        }
        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            let _ = LIVE.try_with(|c| c.set(c.get() - 1));
            // SAFETY: caller's contract, forwarded.
            unsafe { System.dealloc(ptr, layout) }
        }
    }

    #[global_allocator]
    static A: Counting = Counting;

    pub(crate) fn live() -> isize {
        LIVE.with(Cell::get)
    }
}

/// Runs `f` and checks it freed every allocation it made.
#[cfg(not(loom))]
fn leak_free(f: impl FnOnce()) {
    let before = leak_check::live();
    f();
    assert_eq!(leak_check::live(), before, "allocations leaked");
}

#[cfg(not(loom))]
#[test]
fn saturated_lean_string_clones_by_copy_and_stays_leak_free() {
    fn run<L: crate::HeaderPolicy>() {
        leak_free(|| {
            let a = crate::LeanStringWith::<L>::from(LONG);
            let mut b = a.clone();
            let rc = a.repr().refcount_for_test();
            assert_eq!(rc.load(Ordering::Relaxed), 2);
            // Pretend MAX_REFCOUNT - 2 more owners exist: the next clone still shares.
            heap::set_refcount_for_test(rc, MAX_REFCOUNT);
            let shared = a.clone();
            assert_eq!(shared.as_ptr(), a.as_ptr());
            assert_eq!(rc.load(Ordering::Relaxed), MAX_REFCOUNT + 1);
            // Above the threshold a clone deep-copies and leaves the count alone.
            let copy = a.clone();
            assert_ne!(copy.as_ptr(), a.as_ptr());
            assert_eq!(copy, LONG);
            assert_eq!(rc.load(Ordering::Relaxed), MAX_REFCOUNT + 1);
            let copy2 = copy.clone();
            assert_eq!(
                copy2.as_ptr(),
                copy.as_ptr(),
                "the copy has its own fresh count"
            );
            // Mutating a saturated shared string unshares it.
            b.push_str("!");
            assert_ne!(b.as_ptr(), a.as_ptr());
            assert_eq!(b, format!("{LONG}!"));
            assert_eq!(a, LONG);
            drop(shared);
            assert_eq!(rc.load(Ordering::Relaxed), MAX_REFCOUNT - 1);
            // Restore the true count (only `a`; `b` released its reference when it copied).
            heap::set_refcount_for_test(rc, 1);
            drop((a, b, copy, copy2));
        });
    }
    run::<crate::Compact>();
    run::<crate::Wide>();
}

#[cfg(not(loom))]
#[test]
fn saturated_lean_str_and_cstring_clone_by_copy() {
    leak_free(|| {
        let a = LeanStr::from(LONG);
        let rc = a.repr().refcount_for_test();
        heap::set_refcount_for_test(rc, MAX_REFCOUNT + 1);
        let copy = a.clone();
        assert_ne!(copy.as_ptr(), a.as_ptr());
        assert_eq!(copy, a);
        heap::set_refcount_for_test(rc, 1);
        drop((a, copy));

        let c = LeanCString::try_from(LONG).unwrap();
        let rc = c.repr().refcount_for_test();
        heap::set_refcount_for_test(rc, MAX_REFCOUNT + 1);
        let mut copy = c.clone();
        assert_ne!(copy.as_ptr(), c.as_ptr());
        copy.push_str("x").unwrap();
        assert_eq!(c, LONG);
        heap::set_refcount_for_test(rc, 1);
        drop((c, copy));
    });
}

#[cfg(not(loom))]
#[test]
fn header_choice_and_crossing_resize() {
    leak_free(|| {
        let mut w = WideLeanString::with_capacity(40);
        assert!(w.uses_wide_header());
        w.push_str(LONG);
        w.push_str(LONG); // realloc within wide
        assert!(w.uses_wide_header());
        assert_eq!(w, format!("{LONG}{LONG}"));
        let c = LeanString::from(LONG);
        assert!(!c.uses_wide_header());
        // Crossing both ways through the core (the public types fix the policy).
        let data = heap::allocate(32, false).unwrap();
        // SAFETY: fresh unique buffer; 0 bytes to keep.
        let data = unsafe { heap::resize(data, 0, 64, true) }.unwrap();
        // SAFETY: live buffer.
        assert!(unsafe { heap::is_wide(data) });
        // SAFETY: live buffer.
        assert_eq!(unsafe { heap::capacity(data) }, 64);
        // SAFETY: unique buffer; 0 bytes to keep.
        let data = unsafe { heap::resize(data, 0, 48, false) }.unwrap();
        // SAFETY: live buffer.
        assert!(!unsafe { heap::is_wide(data) });
        // SAFETY: live buffer.
        assert_eq!(unsafe { heap::capacity(data) }, 48);
        // SAFETY: live buffer, the only reference.
        unsafe { heap::free(data) };
    });
}

#[test]
fn acquire_refuses_above_threshold() {
    #[cfg(loom)]
    loom::model(|| check());
    #[cfg(not(loom))]
    check();
    fn check() {
        let rc = crate::sync::AtomicU32::new(MAX_REFCOUNT);
        assert!(heap::acquire(&rc));
        assert!(!heap::acquire(&rc));
        assert_eq!(rc.load(Ordering::Relaxed), MAX_REFCOUNT + 1);
        assert!(!heap::release(&rc));
    }
}

#[cfg(loom)]
mod loom_models {
    use super::*;
    use loom::thread;

    #[test]
    fn loom_clone_and_drop_across_threads() {
        loom::model(|| {
            let a = LeanString::from(LONG);
            let b = a.clone();
            let t = thread::spawn(move || {
                let c = b.clone();
                assert_eq!(c, LONG);
                drop(c);
                drop(b);
            });
            let d = a.clone();
            drop(a);
            assert_eq!(d, LONG);
            t.join().unwrap();
        });
    }

    #[test]
    fn loom_make_unique_races() {
        loom::model(|| {
            let mut a = LeanString::from(LONG);
            let mut b = a.clone();
            let t = thread::spawn(move || {
                b.push('b');
                assert_eq!(b, format!("{LONG}b"));
                b
            });
            a.push('a');
            assert_eq!(a, format!("{LONG}a"));
            let b = t.join().unwrap();
            assert_ne!(a.as_ptr(), b.as_ptr());
        });
    }

    #[test]
    fn loom_saturated_clones_never_wrap() {
        loom::model(|| {
            let a = LeanStr::from(LONG);
            let rc = a.repr().refcount_for_test();
            heap::set_refcount_for_test(rc, MAX_REFCOUNT);
            let b = a.clone(); // count now MAX_REFCOUNT + 1: every further clone copies
            let t = thread::spawn(move || {
                let c = b.clone();
                assert_ne!(c.as_ptr(), b.as_ptr());
                drop(c);
                b
            });
            let d = a.clone();
            assert_ne!(d.as_ptr(), a.as_ptr());
            let b = t.join().unwrap();
            assert_eq!(rc.load(Ordering::Relaxed), MAX_REFCOUNT + 1);
            heap::set_refcount_for_test(rc, 2);
            drop((a, b, d));
        });
    }
}

/// On 32-bit the unit-test build keeps lengths of at least `LONG_LEN` (100 there, instead of
/// 2^24 - 1) in the wide header, with the sentinel in word 1. Strings are driven across
/// that threshold both ways, shared and unshared, against `String` (on 64-bit the same
/// sequence runs with lengths in the word).
#[cfg(not(loom))]
#[test]
fn long_lengths_cross_the_header_threshold() {
    use crate::repr::LONG_LEN;
    let header_len = cfg!(target_pointer_width = "32");
    assert_eq!(header_len, LONG_LEN == 100);
    let check = |s: &LeanString, c: &LeanCString, w: &WideLeanString, m: &str| {
        assert_eq!((s.as_str(), s.len()), (m, m.len()));
        assert_eq!((c.as_str(), c.as_c_str().to_bytes()), (m, m.as_bytes()));
        assert_eq!(w.as_str(), m);
        assert!(s.capacity() >= m.len() && c.capacity() >= m.len());
        let long = header_len && m.len() >= LONG_LEN;
        assert_eq!(s.repr().len_in_header(), long, "len {}", m.len());
        assert_eq!(c.repr().len_in_header(), long, "len {}", m.len());
        assert_eq!(w.repr().len_in_header(), long, "len {}", m.len());
        if long {
            assert!(s.uses_wide_header(), "a long string needs the length word");
        }
    };
    leak_free(|| {
        let unit = "abcdefg\u{e9}"; // 9 bytes
        let (mut s, mut c, mut w) = (LeanString::new(), LeanCString::new(), WideLeanString::new());
        let mut m = String::new();
        let mut shared = Vec::new();
        for round in 0..14 {
            s.push_str(unit);
            c.push_str(unit).unwrap();
            w.push_str(unit);
            m.push_str(unit);
            if round % 4 == 3 {
                shared.push((s.clone(), c.clone(), w.clone(), m.clone()));
            }
            check(&s, &c, &w, &m);
        }
        // Exactly at the threshold, one byte each way (126 = 14 * 9 bytes now).
        for target in [100, 99, 100, 101] {
            while m.len() > target {
                assert_eq!(s.pop(), m.pop());
                c.pop();
                w.pop();
            }
            while m.len() < target {
                s.push('x');
                c.push('x').unwrap();
                w.push('x');
                m.push('x');
            }
            check(&s, &c, &w, &m);
        }
        s.insert_str(3, unit);
        c.insert_str(3, unit).unwrap();
        w.insert_str(3, unit);
        m.insert_str(3, unit);
        check(&s, &c, &w, &m);
        let f = |ch: char| ch != 'a';
        s.retain(f);
        c.retain(f);
        w.retain(f);
        m.retain(f);
        check(&s, &c, &w, &m);
        let tails = (
            s.split_off(50),
            c.split_off(50),
            w.split_off(50),
            m.split_off(50),
        );
        check(&s, &c, &w, &m);
        check(&tails.0, &tails.1, &tails.2, &tails.3);
        let mut big = (s.repeat(3), c.repeat(3), w.repeat(3), m.repeat(3));
        check(&big.0, &big.1, &big.2, &big.3);
        big.0.shrink_to_fit();
        big.1.shrink_to_fit();
        big.2.shrink_to_fit();
        check(&big.0, &big.1, &big.2, &big.3);
        big.0.truncate(120);
        big.1.truncate(120);
        big.2.truncate(120);
        big.3.truncate(120);
        check(&big.0, &big.1, &big.2, &big.3);
        big.0.shrink_to(0);
        big.1.shrink_to(0);
        big.2.shrink_to(0);
        check(&big.0, &big.1, &big.2, &big.3);
        for (s2, c2, w2, m2) in &shared {
            check(s2, c2, w2, m2);
        }
        // A shared long string is copied on mutation; the original keeps its length.
        let (mut s2, mut c2, mut w2, mut m2) = shared.pop().unwrap();
        let keep = (s2.clone(), c2.clone(), w2.clone(), m2.clone());
        s2.truncate(10);
        c2.truncate(10);
        w2.truncate(10);
        m2.truncate(10);
        check(&s2, &c2, &w2, &m2);
        check(&keep.0, &keep.1, &keep.2, &keep.3);
        let lean_str = LeanStr::from(keep.0.as_str());
        assert_eq!(lean_str, keep.3);
    });
}
