//! Unit tests of the unsafe core: refcount saturation (through the test-only hook), header
//! selection, and loom models of the refcount protocol.

use crate::repr::heap::{self, MAX_REFCOUNT};
use crate::sync::Ordering;
use crate::{LeanCString, LeanStr, LeanString, WideLeanString};

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
