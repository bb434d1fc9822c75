//! Start-up and fork: what must happen once per process before the first block is handed
//! out (the hardened mode read, the fork handlers and the thread-cache key registered),
//! and the fork handlers themselves. Above the arenas and the huge heap: they know
//! nothing of it, and the allocation entry points (`lib.rs`) call [`ensure_ready`] on
//! their cold paths before they first reach them.

use crate::sync::unmodeled::{AtomicU8, Ordering};
use crate::{arena, config, huge, sys, tcache};

/// 0: nothing done; 1: registering (a re-entrant allocation goes on); 2: done.
static READY: AtomicU8 = AtomicU8::new(0);

/// Registers the fork handlers once. Called with no arena lock held, because
/// `pthread_atfork` may itself allocate (and re-enter us: then the state is 1 and we go on).
#[cold]
pub(crate) fn ensure_ready() {
    if READY
        .compare_exchange(0, 1, Ordering::AcqRel, Ordering::Acquire)
        .is_ok()
    {
        // First: `atfork` may allocate, and every block must see the final mode.
        config::read_hardened();
        sys::atfork(fork_prepare, fork_parent, fork_child);
        tcache::create_cache_key();
        READY.store(2, Ordering::Release);
    }
}

/// Whether [`ensure_ready`] has run (or is running on this thread's behalf).
#[inline]
pub(crate) fn is_ready() -> bool {
    READY.load(Ordering::Relaxed) != 0
}

extern "C" fn fork_prepare() {
    arena::lock_all();
    huge::fork_lock();
}

extern "C" fn fork_parent() {
    arena::unlock_all();
    huge::fork_unlock();
}

extern "C" fn fork_child() {
    arena::reset_all();
    huge::fork_reset();
}
