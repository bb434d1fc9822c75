//! The lock-free remote-free protocol: a block freed by a thread whose cache does not hold
//! its arena's blocks is pushed (one compare-and-swap, for one block or for a chain of
//! one page's blocks: `crate::tcache` pushes runs) onto its page's *thread-free list*,
//! and the first push onto an empty list also pushes the page onto its arena's *pending
//! stack*. The arena's lock holder later takes the whole stack (one swap), and for each
//! page the whole list (one swap), and puts the blocks back on the page under the lock it
//! already holds. The freeing thread never waits for, nor takes, the owner's lock.
//!
//! Invariants: a page is on its arena's pending stack exactly when it was pushed by the
//! push that made its list non-empty and no drain has taken it since; only a drain empties
//! a list, and it takes the page off the stack (reading the page's stack link) before it
//! empties the page's list, so the next push that finds the list empty may push the page
//! again and rewrite that link. A block stays counted as used by its page until drained,
//! so a page with pending blocks is never empty, never retired, and its segment stays
//! mapped.
//!
//! Both stacks are Treiber stacks with a take-all pop (a swap), so there is no ABA: no
//! thread ever reads the link of a node it did not take. Generic over the atomic word so
//! the protocol runs on `core` atomics in the allocator and on loom's in the `loom_`
//! models below.

use crate::sync::Ordering;
use core::ptr;

/// An atomic pointer: the operations the protocol needs.
pub(crate) trait PtrWord {
    fn load(&self, o: Ordering) -> *mut u8;
    fn swap(&self, v: *mut u8, o: Ordering) -> *mut u8;
    fn compare_exchange_weak(
        &self,
        cur: *mut u8,
        new: *mut u8,
        s: Ordering,
        f: Ordering,
    ) -> Result<*mut u8, *mut u8>;
}

impl PtrWord for crate::sync::unmodeled::AtomicPtr<u8> {
    #[inline]
    fn load(&self, o: Ordering) -> *mut u8 {
        self.load(o)
    }
    #[inline]
    fn swap(&self, v: *mut u8, o: Ordering) -> *mut u8 {
        self.swap(v, o)
    }
    #[inline]
    fn compare_exchange_weak(
        &self,
        cur: *mut u8,
        new: *mut u8,
        s: Ordering,
        f: Ordering,
    ) -> Result<*mut u8, *mut u8> {
        self.compare_exchange_weak(cur, new, s, f)
    }
}

/// Pushes `node` onto the stack `head`; `set_next(old)` stores the node's link to `old`
/// before each attempt. Returns whether the stack was empty (for a thread-free list: the
/// caller must then push the page onto its arena's pending stack).
///
/// Release publishes the link (and the node's contents) to the drain that takes it;
/// Acquire orders this push after the drain that last emptied the stack, whose reads of
/// links the next `set_next` may overwrite.
#[inline]
pub(crate) fn push<W: PtrWord>(head: &W, node: *mut u8, mut set_next: impl FnMut(*mut u8)) -> bool {
    let mut old = head.load(Ordering::Relaxed);
    loop {
        set_next(old);
        match head.compare_exchange_weak(old, node, Ordering::AcqRel, Ordering::Relaxed) {
            Ok(_) => return old.is_null(),
            Err(cur) => old = cur,
        }
    }
}

/// Takes the whole stack `head` (null if empty). Acquire pairs with the pushes' Release;
/// Release with the next pusher's Acquire (see [`push`]).
#[inline]
pub(crate) fn take_all<W: PtrWord>(head: &W) -> *mut u8 {
    if head.load(Ordering::Relaxed).is_null() {
        return ptr::null_mut();
    }
    head.swap(ptr::null_mut(), Ordering::AcqRel)
}

#[cfg(all(test, loom))]
mod loom_tests {
    //! One page (a thread-free list) and its arena's pending stack: two threads free
    //! blocks remotely while the owner drains, as the allocator does under its lock. Every
    //! block must come back exactly once, and the page must be pending exactly when its
    //! list holds blocks.
    use super::*;
    use crate::sync::UnsafeCell;
    use loom::sync::Arc;
    use loom::sync::atomic::AtomicPtr;

    impl PtrWord for AtomicPtr<u8> {
        fn load(&self, o: Ordering) -> *mut u8 {
            AtomicPtr::load(self, o)
        }
        fn swap(&self, v: *mut u8, o: Ordering) -> *mut u8 {
            AtomicPtr::swap(self, v, o)
        }
        fn compare_exchange_weak(
            &self,
            cur: *mut u8,
            new: *mut u8,
            s: Ordering,
            f: Ordering,
        ) -> Result<*mut u8, *mut u8> {
            AtomicPtr::compare_exchange_weak(self, cur, new, s, f)
        }
    }

    /// A block: its link word (plain memory in the allocator, checked for races here).
    struct Block {
        next: UnsafeCell<*mut u8>,
        id: usize,
    }

    struct Page {
        /// The thread-free list.
        blocks: AtomicPtr<u8>,
        /// The page's link in the pending stack (plain memory, race-checked).
        next: UnsafeCell<*mut u8>,
    }

    struct World {
        page: Page,
        /// The arena's pending stack (of pages).
        pending: AtomicPtr<u8>,
        blocks: Vec<Block>,
    }
    // SAFETY: the cells are accessed only as the protocol allows (loom checks it).
    unsafe impl Sync for World {}
    // SAFETY: as above.
    unsafe impl Send for World {}

    fn page_ptr(w: &World) -> *mut u8 {
        (&w.page as *const Page).cast_mut().cast()
    }

    fn free_remote(w: &World, i: usize) {
        let b = &w.blocks[i];
        let bp = (b as *const Block).cast_mut().cast::<u8>();
        // SAFETY: the freeing thread owns the block until the push succeeds.
        let first = push(&w.page.blocks, bp, |old| {
            b.next.with_mut(|n| unsafe { *n = old })
        });
        if first {
            // SAFETY: only the pusher that made the list non-empty writes the page's link,
            // after the drain that took the page off the stack read it.
            push(&w.pending, page_ptr(w), |old| {
                w.page.next.with_mut(|n| unsafe { *n = old })
            });
        }
    }

    /// The owner's drain: returns the ids it took.
    fn drain(w: &World, out: &mut Vec<usize>) {
        let mut pg = take_all(&w.pending);
        while !pg.is_null() {
            assert_eq!(pg, page_ptr(w));
            // SAFETY: the page was taken off the stack by this drain.
            let next = w.page.next.with(|n| unsafe { *n });
            let mut b = take_all(&w.page.blocks);
            assert!(!b.is_null(), "a pending page with an empty list");
            while !b.is_null() {
                let blk = w
                    .blocks
                    .iter()
                    .find(|x| (*x as *const Block).cast_mut().cast::<u8>() == b)
                    .expect("a block of this page");
                out.push(blk.id);
                // SAFETY: the block was taken by this drain.
                b = blk.next.with(|n| unsafe { *n });
            }
            pg = next;
        }
    }

    fn world(n: usize) -> Arc<World> {
        Arc::new(World {
            page: Page {
                blocks: AtomicPtr::new(ptr::null_mut()),
                next: UnsafeCell::new(ptr::null_mut()),
            },
            pending: AtomicPtr::new(ptr::null_mut()),
            blocks: (0..n)
                .map(|id| Block {
                    next: UnsafeCell::new(ptr::null_mut()),
                    id,
                })
                .collect(),
        })
    }

    #[test]
    fn loom_remote_free_two_freers_and_a_drain() {
        loom::model(|| {
            let w = world(3);
            let (w1, w2) = (w.clone(), w.clone());
            let t1 = loom::thread::spawn(move || free_remote(&w1, 0));
            let t2 = loom::thread::spawn(move || {
                free_remote(&w2, 1);
                free_remote(&w2, 2);
            });
            let mut got = Vec::new();
            drain(&w, &mut got);
            t1.join().unwrap();
            t2.join().unwrap();
            drain(&w, &mut got);
            got.sort_unstable();
            assert_eq!(got, [0, 1, 2]);
            assert!(w.pending.load(Ordering::Relaxed).is_null());
            assert!(w.page.blocks.load(Ordering::Relaxed).is_null());
        });
    }

    /// A page already pending when a drain starts, and a free that finds its list just
    /// emptied by that drain: the freer pushes the page again (rewriting its link) while
    /// the drain is still walking the stack.
    #[test]
    fn loom_remote_free_during_drain() {
        loom::model(|| {
            let w = world(2);
            free_remote(&w, 0);
            let w1 = w.clone();
            let t = loom::thread::spawn(move || free_remote(&w1, 1));
            let mut got = Vec::new();
            drain(&w, &mut got);
            t.join().unwrap();
            drain(&w, &mut got);
            got.sort_unstable();
            assert_eq!(got, [0, 1]);
        });
    }

    /// A block freed again after the drain took it back (the page reused it): the page
    /// must be announced again, and the second drain must find it.
    #[test]
    fn loom_remote_free_repush_after_drain() {
        loom::model(|| {
            let w = world(2);
            let w1 = w.clone();
            let t = loom::thread::spawn(move || {
                free_remote(&w1, 0);
                free_remote(&w1, 1);
            });
            let mut got = Vec::new();
            drain(&w, &mut got);
            drain(&w, &mut got);
            t.join().unwrap();
            drain(&w, &mut got);
            got.sort_unstable();
            assert_eq!(got, [0, 1]);
        });
    }
}
