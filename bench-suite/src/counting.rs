//! A counting global allocator: the `memory` instrument.
//!
//! It forwards to an inner allocator (the system allocator by default) and, while
//! counting is switched on, records how many allocations were made, how many bytes were
//! requested, and how many bytes the allocator really handed out (its usable size, read
//! with `malloc_usable_size` on glibc). Physical bytes are what an allocator's size classes
//! make of a request: the number the lean-string header change is about.
//!
//! Counting is off by default and is switched on per thread: only the thread that turned
//! it on is counted, so a progress bar or test harness thread allocating at the same time
//! does not disturb a measurement. The timing instrument pays one thread-local read per
//! call.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering::Relaxed};

thread_local! {
    // Const-initialised and without a destructor: reading it never allocates.
    static ENABLED: Cell<bool> = const { Cell::new(false) };
}

/// Is counting on for the calling thread? (Off while the thread is being torn down.)
fn enabled() -> bool {
    ENABLED.try_with(Cell::get).unwrap_or(false)
}
static ALLOCS: AtomicU64 = AtomicU64::new(0);
static DEALLOCS: AtomicU64 = AtomicU64::new(0);
static REALLOCS: AtomicU64 = AtomicU64::new(0);
static REQUESTED_TOTAL: AtomicU64 = AtomicU64::new(0);
static REQUESTED_LIVE: AtomicI64 = AtomicI64::new(0);
static PHYSICAL_LIVE: AtomicI64 = AtomicI64::new(0);
// The highest live balances since the last `reset_peaks` (counted allocations only).
static PEAK_REQUESTED_LIVE: AtomicI64 = AtomicI64::new(0);
static PEAK_PHYSICAL_LIVE: AtomicI64 = AtomicI64::new(0);

/// An allocator that can say how many bytes a block it returned really spans.
///
/// # Safety
/// `usable_size` must return, for a live block `ptr` allocated with `layout` by `self`, a
/// number of bytes `>= layout.size()` that the block owns.
pub unsafe trait UsableSize: GlobalAlloc {
    /// The usable size of the live block `ptr`.
    ///
    /// # Safety
    /// `ptr` must be a live block allocated by `self` with `layout`.
    unsafe fn usable_size(&self, ptr: *mut u8, layout: Layout) -> usize;
}

// SAFETY: on glibc, `System` serves every layout from malloc/posix_memalign, and
// `malloc_usable_size` returns the usable size (>= the request) of such a block; elsewhere
// the requested size is returned, which is always a lower bound that the block owns.
unsafe impl UsableSize for System {
    unsafe fn usable_size(&self, ptr: *mut u8, layout: Layout) -> usize {
        #[cfg(all(target_os = "linux", target_env = "gnu"))]
        {
            let _ = layout;
            // SAFETY: `ptr` is a live block of glibc's malloc (caller's contract).
            unsafe { libc::malloc_usable_size(ptr.cast()) }
        }
        #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
        {
            let _ = ptr;
            layout.size()
        }
    }
}

/// The counting wrapper; install it with `#[global_allocator]`.
#[derive(Debug)]
pub struct CountingAlloc<A = System> {
    inner: A,
}

impl CountingAlloc<System> {
    /// Counts over the system allocator.
    pub const fn system() -> Self {
        CountingAlloc { inner: System }
    }
}

impl<A> CountingAlloc<A> {
    /// Counts over `inner`.
    pub const fn new(inner: A) -> Self {
        CountingAlloc { inner }
    }
}

fn on_alloc(requested: usize, physical: usize) {
    ALLOCS.fetch_add(1, Relaxed);
    REQUESTED_TOTAL.fetch_add(requested as u64, Relaxed);
    let r = REQUESTED_LIVE.fetch_add(requested as i64, Relaxed) + requested as i64;
    let p = PHYSICAL_LIVE.fetch_add(physical as i64, Relaxed) + physical as i64;
    PEAK_REQUESTED_LIVE.fetch_max(r, Relaxed);
    PEAK_PHYSICAL_LIVE.fetch_max(p, Relaxed);
}

fn on_dealloc(requested: usize, physical: usize) {
    DEALLOCS.fetch_add(1, Relaxed);
    REQUESTED_LIVE.fetch_sub(requested as i64, Relaxed);
    PHYSICAL_LIVE.fetch_sub(physical as i64, Relaxed);
}

// SAFETY: every method forwards to `inner` with the caller's arguments unchanged and
// returns its result unchanged; the bookkeeping only reads the returned block's size.
unsafe impl<A: UsableSize> GlobalAlloc for CountingAlloc<A> {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded under the caller's contract.
        let p = unsafe { self.inner.alloc(layout) };
        if !p.is_null() && enabled() {
            // SAFETY: `p` was just allocated by `inner` with `layout`.
            on_alloc(layout.size(), unsafe { self.inner.usable_size(p, layout) });
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded under the caller's contract.
        let p = unsafe { self.inner.alloc_zeroed(layout) };
        if !p.is_null() && enabled() {
            // SAFETY: `p` was just allocated by `inner` with `layout`.
            on_alloc(layout.size(), unsafe { self.inner.usable_size(p, layout) });
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if enabled() {
            // SAFETY: `ptr` is live until the call below (caller's contract).
            on_dealloc(layout.size(), unsafe {
                self.inner.usable_size(ptr, layout)
            });
        }
        // SAFETY: forwarded under the caller's contract.
        unsafe { self.inner.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let counting = enabled();
        // SAFETY: `ptr` is live until the realloc below (caller's contract).
        let old_physical = counting.then(|| unsafe { self.inner.usable_size(ptr, layout) });
        // SAFETY: forwarded under the caller's contract.
        let p = unsafe { self.inner.realloc(ptr, layout, new_size) };
        if let (Some(old_physical), false) = (old_physical, p.is_null()) {
            // SAFETY: `layout.align()` was valid and `new_size` is valid for it
            // (the caller's contract of `realloc`).
            let new_layout = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
            REALLOCS.fetch_add(1, Relaxed);
            // SAFETY: `p` is the live block `realloc` just returned for `new_layout`.
            let new_physical = unsafe { self.inner.usable_size(p, new_layout) };
            REQUESTED_TOTAL.fetch_add(new_size.saturating_sub(layout.size()) as u64, Relaxed);
            let dr = new_size as i64 - layout.size() as i64;
            let dp = new_physical as i64 - old_physical as i64;
            PEAK_REQUESTED_LIVE.fetch_max(REQUESTED_LIVE.fetch_add(dr, Relaxed) + dr, Relaxed);
            PEAK_PHYSICAL_LIVE.fetch_max(PHYSICAL_LIVE.fetch_add(dp, Relaxed) + dp, Relaxed);
        }
        p
    }
}

/// The counters at one moment (monotonic ones, and the live byte balances).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Snapshot {
    /// Successful `alloc` + `alloc_zeroed` calls.
    pub allocs: u64,
    /// `dealloc` calls.
    pub deallocs: u64,
    /// Successful `realloc` calls.
    pub reallocs: u64,
    /// Bytes requested by allocations (and by the growing part of reallocations).
    pub requested_total: u64,
    /// Requested bytes currently live (counted since counting was switched on).
    pub requested_live: i64,
    /// Usable bytes currently live (counted since counting was switched on).
    pub physical_live: i64,
}

impl Snapshot {
    /// What happened between `self` and the later snapshot `later`.
    pub fn delta(&self, later: &Snapshot) -> Snapshot {
        Snapshot {
            allocs: later.allocs - self.allocs,
            deallocs: later.deallocs - self.deallocs,
            reallocs: later.reallocs - self.reallocs,
            requested_total: later.requested_total - self.requested_total,
            requested_live: later.requested_live - self.requested_live,
            physical_live: later.physical_live - self.physical_live,
        }
    }
}

/// Reads the counters.
pub fn snapshot() -> Snapshot {
    Snapshot {
        allocs: ALLOCS.load(Relaxed),
        deallocs: DEALLOCS.load(Relaxed),
        reallocs: REALLOCS.load(Relaxed),
        requested_total: REQUESTED_TOTAL.load(Relaxed),
        requested_live: REQUESTED_LIVE.load(Relaxed),
        physical_live: PHYSICAL_LIVE.load(Relaxed),
    }
}

/// Switches counting on or off for the calling thread; returns the previous setting.
pub fn set_enabled(on: bool) -> bool {
    ENABLED.with(|e| e.replace(on))
}

/// Whether this process's global allocator is a [`CountingAlloc`] that sees allocations:
/// allocates one probe box with counting on and checks that it was counted.
pub fn is_installed() -> bool {
    let was = set_enabled(true);
    let before = snapshot();
    let probe = std::hint::black_box(Box::new(0u64));
    let after = snapshot();
    drop(probe);
    set_enabled(was);
    after.allocs > before.allocs
}

/// Runs `f` with counting on and returns its result, the counters' change, and the highest
/// requested and physical live bytes reached during `f`, above where they were at its start
/// (a structure's peak while it was built, e.g. an old and a new array alive together).
pub fn measure_peak<T>(f: impl FnOnce() -> T) -> (T, Snapshot, (i64, i64)) {
    let was = set_enabled(true);
    let before = snapshot();
    PEAK_REQUESTED_LIVE.store(before.requested_live, Relaxed);
    PEAK_PHYSICAL_LIVE.store(before.physical_live, Relaxed);
    let out = f();
    let after = snapshot();
    let peak = (
        PEAK_REQUESTED_LIVE.load(Relaxed) - before.requested_live,
        PEAK_PHYSICAL_LIVE.load(Relaxed) - before.physical_live,
    );
    set_enabled(was);
    (out, before.delta(&after), peak)
}

/// Runs `f` with counting on and returns its result with the counters' change.
/// The result is returned alive, so its live bytes are in the delta.
pub fn measure<T>(f: impl FnOnce() -> T) -> (T, Snapshot) {
    let was = set_enabled(true);
    let before = snapshot();
    let out = f();
    let after = snapshot();
    set_enabled(was);
    (out, before.delta(&after))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[global_allocator]
    static GLOBAL: CountingAlloc = CountingAlloc::system();

    // Tests run on several threads; counting is per thread but the counters are shared,
    // so every test that reads them holds this lock.
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

    #[test]
    fn peak_sees_a_freed_block() {
        let _g = SERIAL.lock().unwrap();
        let (b, d, (req, _)) = measure_peak(|| {
            drop(std::hint::black_box(vec![0u8; 10_000]));
            Box::new([0u8; 100])
        });
        assert_eq!(d.requested_live, 100);
        assert!(req >= 10_000, "peak {req}");
        drop(b);
    }

    #[test]
    fn counts_one_box_exactly() {
        let _g = SERIAL.lock().unwrap();
        let (b, d) = measure(|| Box::new([0u8; 100]));
        assert_eq!(d.allocs, 1);
        assert_eq!(d.requested_total, 100);
        assert_eq!(d.requested_live, 100);
        assert!(
            d.physical_live >= 100,
            "physical {} < requested",
            d.physical_live
        );
        #[cfg(all(target_os = "linux", target_env = "gnu"))]
        {
            // glibc: chunk = request + 8 rounded up to 16, minimum 32; usable = chunk - 8.
            assert_eq!(d.physical_live, 104);
        }
        let physical = d.physical_live;
        let (_, d) = measure(|| drop(b));
        assert_eq!(d.deallocs, 1);
        assert_eq!(d.requested_live, -100);
        assert_eq!(d.physical_live, -physical);
    }

    #[test]
    fn glibc_size_classes_show_up_as_physical_bytes() {
        let _g = SERIAL.lock().unwrap();
        // (request, usable size on glibc x86_64)
        for (req, usable) in [
            (1usize, 24i64),
            (24, 24),
            (25, 40),
            (40, 40),
            (41, 56),
            (56, 56),
        ] {
            let (v, d) = measure(|| Vec::<u8>::with_capacity(req));
            assert_eq!(d.allocs, 1, "request {req}");
            assert_eq!(d.requested_live, req as i64);
            if cfg!(all(
                target_os = "linux",
                target_env = "gnu",
                target_pointer_width = "64"
            )) {
                assert_eq!(d.physical_live, usable, "request {req}");
            }
            drop(v);
        }
    }

    #[test]
    fn realloc_is_counted_as_a_resize() {
        let _g = SERIAL.lock().unwrap();
        let mut v: Vec<u8> = Vec::with_capacity(16);
        let (_, d) = measure(|| v.reserve_exact(1000));
        assert_eq!(d.reallocs, 1);
        assert_eq!(d.allocs, 0);
        assert_eq!(d.requested_live, 1000 - 16 + v.capacity() as i64 - 1000);
        assert!(d.physical_live >= 1000 - 40);
    }

    #[test]
    fn nothing_is_counted_while_off() {
        let _g = SERIAL.lock().unwrap();
        set_enabled(false);
        let before = snapshot();
        let b = std::hint::black_box(Box::new(1u32));
        drop(b);
        assert_eq!(snapshot(), before);
        assert!(is_installed());
    }
}
