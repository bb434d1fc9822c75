//! The arena lock: a three-state futex mutex (0 free, 1 held, 2 held with waiters).
//!
//! Uncontended it is one `cmpxchg` to take and one `xchg` to release. Generic over its
//! word so the same protocol runs on `core` atomics with futexes in the allocator and on
//! loom atomics (waiting = yielding) in the `loom_` models below.

use crate::sync::Ordering;

const FREE: u32 = 0;
const HELD: u32 = 1;
const WAITERS: u32 = 2;
/// Rounds of `spin_wait` before sleeping (63 spin hints, then two yields): critical
/// sections are a few dozen instructions.
const SPINS: u32 = if cfg!(loom) { 1 } else { 8 };

/// The atomic word of a [`RawLock`] plus how to sleep and wake on it.
pub(crate) trait LockWord {
    fn load(&self, o: Ordering) -> u32;
    fn swap(&self, v: u32, o: Ordering) -> u32;
    fn store(&self, v: u32, o: Ordering);
    fn compare_exchange(&self, cur: u32, new: u32, s: Ordering, f: Ordering) -> Result<u32, u32>;
    /// Sleeps while the word equals `expected` (may return spuriously).
    fn wait(&self, expected: u32);
    /// Wakes one sleeper.
    fn wake_one(&self);
}

impl LockWord for crate::sync::unmodeled::AtomicU32 {
    #[inline]
    fn load(&self, o: Ordering) -> u32 {
        self.load(o)
    }
    #[inline]
    fn swap(&self, v: u32, o: Ordering) -> u32 {
        self.swap(v, o)
    }
    #[inline]
    fn store(&self, v: u32, o: Ordering) {
        self.store(v, o)
    }
    #[inline]
    fn compare_exchange(&self, cur: u32, new: u32, s: Ordering, f: Ordering) -> Result<u32, u32> {
        self.compare_exchange(cur, new, s, f)
    }
    fn wait(&self, expected: u32) {
        crate::sys::futex_wait(self.as_ptr(), expected);
    }
    fn wake_one(&self) {
        crate::sys::futex_wake(self.as_ptr());
    }
}

/// A mutex without a payload; the caller pairs `lock`/`unlock`.
#[derive(Debug)]
pub(crate) struct RawLock<W> {
    word: W,
}

impl<W: LockWord> RawLock<W> {
    pub(crate) const fn new(word: W) -> Self {
        Self { word }
    }

    /// Whether the lock is held right now (a relaxed read: a hint only).
    #[inline]
    pub(crate) fn is_locked(&self) -> bool {
        self.word.load(Ordering::Relaxed) != FREE
    }

    /// Takes the lock if it is free (the whole uncontended path: one `cmpxchg`).
    #[inline]
    pub(crate) fn try_lock(&self) -> bool {
        self.word
            .compare_exchange(FREE, HELD, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    }

    /// Takes the lock; returns `true` when it had to wait (contention statistic).
    #[inline]
    pub(crate) fn lock(&self) -> bool {
        if self.try_lock() {
            return false;
        }
        self.lock_contended();
        true
    }

    /// Takes the lock after `try_lock` failed: spin briefly, then sleep.
    #[cold]
    #[inline(never)]
    pub(crate) fn lock_contended(&self) {
        let mut spins = 0;
        for _ in 0..SPINS {
            if self.word.load(Ordering::Relaxed) == FREE && self.try_lock() {
                return;
            }
            crate::sync::spin_wait(&mut spins);
        }
        // From here on we may sleep, so the lock is marked as having waiters; whoever
        // releases it sees WAITERS and wakes one.
        while self.word.swap(WAITERS, Ordering::Acquire) != FREE {
            self.word.wait(WAITERS);
        }
    }

    /// Releases the lock; `true` means a waiter must be woken with [`Self::wake`] (split so
    /// the fast path can make that call in tail position).
    #[inline]
    #[must_use]
    pub(crate) fn release(&self) -> bool {
        self.word.swap(FREE, Ordering::Release) == WAITERS
    }

    /// Wakes one waiter after `release` returned `true`.
    #[cold]
    #[inline(never)]
    pub(crate) fn wake(&self) {
        self.word.wake_one();
    }

    /// Releases the lock and wakes a waiter if there is one.
    #[inline]
    pub(crate) fn unlock(&self) {
        if self.release() {
            self.wake();
        }
    }

    /// Makes the lock free without waking anyone: only for the child after `fork`, where
    /// the lock was held by the forking thread and no other thread exists.
    pub(crate) fn reset(&self) {
        self.word.store(FREE, Ordering::Relaxed);
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use loom::sync::Arc;
    use loom::sync::atomic::AtomicU32;

    impl LockWord for AtomicU32 {
        fn load(&self, o: Ordering) -> u32 {
            AtomicU32::load(self, o)
        }
        fn swap(&self, v: u32, o: Ordering) -> u32 {
            AtomicU32::swap(self, v, o)
        }
        fn store(&self, v: u32, o: Ordering) {
            AtomicU32::store(self, v, o)
        }
        fn compare_exchange(
            &self,
            cur: u32,
            new: u32,
            s: Ordering,
            f: Ordering,
        ) -> Result<u32, u32> {
            AtomicU32::compare_exchange(self, cur, new, s, f)
        }
        fn wait(&self, _expected: u32) {
            loom::thread::yield_now();
        }
        fn wake_one(&self) {}
    }

    struct Guarded {
        lock: RawLock<AtomicU32>,
        value: crate::sync::UnsafeCell<u32>,
    }
    // SAFETY: `value` is only touched while `lock` is held.
    unsafe impl Sync for Guarded {}

    fn bump(g: &Guarded) {
        g.lock.lock();
        // SAFETY: the lock is held, so this is the only access (loom checks it).
        g.value.with_mut(|p| unsafe { *p += 1 });
        g.lock.unlock();
    }

    #[test]
    fn loom_lock_mutual_exclusion_two_threads() {
        loom::model(|| {
            let g = Arc::new(Guarded {
                lock: RawLock::new(AtomicU32::new(FREE)),
                value: crate::sync::UnsafeCell::new(0),
            });
            let g2 = g.clone();
            let t = loom::thread::spawn(move || bump(&g2));
            bump(&g);
            t.join().unwrap();
            g.lock.lock();
            // SAFETY: lock held and all other threads joined.
            let v = g.value.with(|p| unsafe { *p });
            g.lock.unlock();
            assert_eq!(v, 2);
            assert_eq!(g.lock.word.load(Ordering::Relaxed), FREE);
        });
    }

    /// The holder keeps the lock while the other thread arrives, so the contended path
    /// (WAITERS state, wake on release) is exercised; nobody may be left holding it.
    #[test]
    fn loom_lock_contended_handoff() {
        loom::model(|| {
            let g = Arc::new(Guarded {
                lock: RawLock::new(AtomicU32::new(FREE)),
                value: crate::sync::UnsafeCell::new(0),
            });
            g.lock.lock();
            let g2 = g.clone();
            let t = loom::thread::spawn(move || {
                let waited = g2.lock.lock();
                // SAFETY: the lock is held.
                g2.value.with_mut(|p| unsafe { *p += 1 });
                g2.lock.unlock();
                waited
            });
            // SAFETY: the lock is held.
            g.value.with_mut(|p| unsafe { *p += 10 });
            g.lock.unlock();
            t.join().unwrap();
            // SAFETY: the other thread is joined.
            let v = g.value.with(|p| unsafe { *p });
            assert_eq!(v, 11);
            assert_eq!(g.lock.word.load(Ordering::Relaxed), FREE);
        });
    }
}
