//! The arenas themselves: one lock, the per-class page lists and counters each, and the
//! static table of them. Everything here is reached only under the arena's lock (but the
//! two lock-free stacks, see `crate::remote` and `super::loan`).

use crate::class::NUM_CLASSES;
use crate::config::MAX_HEAP_COUNT;
use crate::lock::RawLock;
use crate::page::{Page, SegmentHeader};
use crate::sync::unmodeled::{AtomicPtr, AtomicU32, UnsafeCell};
use core::ptr;

/// Lock-guarded state of one arena.
pub(super) struct ArenaState {
    /// Pages of each class with at least one free block.
    pub(super) classes: [*mut Page; NUM_CLASSES],
    /// Unformatted pages of this arena's segments.
    pub(super) free_pages: *mut Page,
    /// Segments that have no page in use.
    pub(super) empty_segments: u32,
    /// Free pages that may hold resident memory (`Page::dirty`); they precede the clean
    /// ones in `free_pages`, so a fresh page is a dirty one while there is one.
    pub(super) dirty_free: u32,
    /// `allocs` when another arena's `loan::borrow` last looked at this one: an arena
    /// that has handed out no block since is idle, and lends all its resident free pages
    /// then. Starts at 0, as every field does (an arena that has handed out nothing has
    /// nothing to lend), so `ARENAS` is all zeros and lies in `.bss`. A non-zero start put
    /// its 80 KiB in `.data`, file-backed pages that a C program under `LD_PRELOAD`
    /// faulted in.
    pub(super) idle_mark: u64,
    /// Small-block counters: plain integers under the lock (no extra locked instruction
    /// on the fast path); `arena_stats` takes the lock to read them.
    pub(super) allocs: u64,
    pub(super) frees: u64,
    pub(super) remote_frees: u64,
    pub(super) contended: u64,
    /// This arena's small segments (linked through their headers), for statistics.
    pub(super) segments: *mut SegmentHeader,
    /// Pages of other arenas' segments lent to this one (`loan`), linked through their
    /// `RemoteWords::loan_next`/`loan_prev`, for statistics.
    pub(super) borrowed: *mut Page,
}

/// A value on a cache line of its own.
#[repr(C, align(64))]
pub(super) struct Line<T>(pub(super) T);

/// One arena, on its own cache lines.
#[repr(C, align(128))]
pub(crate) struct Arena {
    pub(super) lock: RawLock<AtomicU32>,
    /// Pages of this arena with blocks on their thread-free lists (`crate::remote`),
    /// linked through their `RemoteWords::next`; drained by the lock holder. On its own
    /// line: other threads push here while the holder works under the lock.
    pub(super) pending: Line<AtomicPtr<u8>>,
    /// Pages of this arena's segments that the arenas they were lent to gave back
    /// (`loan`), linked through their `RemoteWords::loan_next`; taken by the lock holder.
    pub(super) returned: Line<AtomicPtr<u8>>,
    pub(super) state: UnsafeCell<ArenaState>,
}

// SAFETY: `state` (raw page pointers) is only accessed while `lock` is held.
unsafe impl Sync for Arena {}

const _: () = assert!(core::mem::align_of::<Arena>() == 128);
const _: () = assert!(MAX_HEAP_COUNT <= u32::MAX as usize);

impl Arena {
    const fn new() -> Self {
        Self {
            lock: RawLock::new(AtomicU32::new(0)),
            pending: Line(AtomicPtr::new(ptr::null_mut())),
            returned: Line(AtomicPtr::new(ptr::null_mut())),
            state: UnsafeCell::new(ArenaState {
                classes: [ptr::null_mut(); NUM_CLASSES],
                free_pages: ptr::null_mut(),
                dirty_free: 0,
                idle_mark: 0,
                empty_segments: 0,
                allocs: 0,
                frees: 0,
                remote_frees: 0,
                contended: 0,
                segments: ptr::null_mut(),
                borrowed: ptr::null_mut(),
            }),
        }
    }

    /// Takes the lock and returns the state it guards.
    #[inline]
    #[allow(clippy::mut_from_ref)]
    pub(super) fn acquire(&self) -> &mut ArenaState {
        if !self.lock.try_lock() {
            return self.acquire_contended();
        }
        // SAFETY: the lock is held until the caller's matching `unlock`, and the state is
        // only reached under it, so this is the only reference.
        unsafe { &mut *self.state.get() }
    }

    /// `acquire` after `try_lock` failed; counts the contention.
    #[cold]
    #[inline(never)]
    #[allow(clippy::mut_from_ref)]
    pub(super) fn acquire_contended(&self) -> &mut ArenaState {
        self.lock.lock_contended();
        // SAFETY: as in `acquire`.
        let st = unsafe { &mut *self.state.get() };
        st.contended += 1;
        st
    }
}

/// Arena `idx`.
#[inline]
pub(super) fn arena(idx: usize) -> &'static Arena {
    debug_assert!(idx < MAX_HEAP_COUNT);
    // SAFETY: indices are `cpu % heap_count` with heap_count <= MAX_HEAP_COUNT, or an owner
    // recorded in a segment header from such an index.
    unsafe { ARENAS.get_unchecked(idx) }
}

/// Whether arena `idx`'s lock is held right now (a hint: it may change at once).
#[inline]
pub(crate) fn is_locked(idx: usize) -> bool {
    arena(idx).lock.is_locked()
}

pub(super) static ARENAS: [Arena; MAX_HEAP_COUNT] = [const { Arena::new() }; MAX_HEAP_COUNT];
