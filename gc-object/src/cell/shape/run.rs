//! Key runs: the keys of shapes, one allocation each, shared by the shapes of one path.
//!
//! ```text
//!  +------------------------------+---------------------------------------+
//!  | RunHeader: cap, len, users   | keys[cap]: u32 key ids; [..len] written |
//!  +------------------------------+---------------------------------------+
//!  ^ allocation                   ^ Run (what a shape points at)
//! ```
//!
//! A shape reads `keys[..count]` of its run. Keys are written once, at index `len`, under
//! the shape table's write lock, before any shape that covers them is published; a shape
//! never reads past its count, so a write and a read never meet at one index (plain `u32`
//! accesses, which lets a lookup compare several keys at once).

use core::alloc::Layout;
use core::ptr::NonNull;

use crate::sync::unmodeled::{AtomicU32, Ordering};

#[repr(C)]
struct RunHeader {
    cap: u32,
    /// Keys written (changed only under the table's write lock).
    len: AtomicU32,
    /// Shapes whose keys are in this run (changed under the write lock or in a sweep).
    users: AtomicU32,
    _pad: u32,
}

const HEAD: usize = core::mem::size_of::<RunHeader>();
const _: () = assert!(HEAD == 16 && HEAD.is_multiple_of(core::mem::align_of::<u32>()));
const _: () = assert!(core::mem::align_of::<RunHeader>() <= 8);

fn layout(cap: u32) -> Layout {
    let bytes = (cap as usize)
        .checked_mul(4)
        .and_then(|k| k.checked_add(HEAD))
        .expect("gc-object: key run too large");
    Layout::from_size_align(bytes, 8).expect("gc-object: key run too large")
}

/// A key run, named by its first key (its header sits right before it).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) struct Run(NonNull<u32>);

// SAFETY: a run is plain memory owned by its shape table; every shared access follows the
// protocol in the module docs.
unsafe impl Send for Run {}
// SAFETY: as for `Send`.
unsafe impl Sync for Run {}

impl Run {
    /// A run of capacity `cap` (at least `prefix.len() + 1` with `key`) holding `prefix`
    /// and then `key`, with no users yet.
    pub(super) fn new(prefix: &[u32], key: Option<u32>, cap: usize) -> Run {
        let len = prefix.len() + usize::from(key.is_some());
        let cap = u32::try_from(cap.max(len)).expect("gc-object: key run too large");
        let layout = layout(cap);
        // SAFETY: the layout has a non-zero size (at least the header).
        let base = unsafe { std::alloc::alloc(layout) };
        let Some(base) = NonNull::new(base) else {
            std::alloc::handle_alloc_error(layout)
        };
        let head = base.cast::<RunHeader>();
        // Every access below: a fresh allocation of `HEAD + 4 * cap` bytes, aligned 8, so
        // the header fits at its start and `len <= cap` keys after it.
        // SAFETY: as just said.
        unsafe {
            head.as_ptr().write(RunHeader {
                cap,
                len: AtomicU32::new(len as u32),
                users: AtomicU32::new(0),
                _pad: 0,
            })
        };
        let keys = base.as_ptr().wrapping_add(HEAD).cast::<u32>();
        // SAFETY: as above (the keys' room does not overlap the caller's slice).
        unsafe { core::ptr::copy_nonoverlapping(prefix.as_ptr(), keys, prefix.len()) };
        if let Some(k) = key {
            // SAFETY: as above; `prefix.len() < len <= cap`.
            unsafe { keys.wrapping_add(prefix.len()).write(k) };
        }
        Run(NonNull::new(keys).expect("non-null: inside an allocation"))
    }

    /// The run whose keys start at `keys` (from [`Run::keys`]).
    ///
    /// # Safety
    /// `keys` came from [`Run::keys`] of a live run.
    pub(super) unsafe fn from_keys(keys: *mut u32) -> Run {
        // SAFETY: non-null (contract).
        Run(unsafe { NonNull::new_unchecked(keys) })
    }

    /// Where the keys start.
    pub(super) fn keys(self) -> *mut u32 {
        self.0.as_ptr()
    }

    fn header(&self) -> &RunHeader {
        // SAFETY: the header sits `HEAD` bytes before the keys of a live run (made by
        // `new`, freed only by `free`, after its last use).
        unsafe {
            &*self
                .0
                .as_ptr()
                .cast::<u8>()
                .wrapping_sub(HEAD)
                .cast::<RunHeader>()
        }
    }

    /// Capacity in keys.
    pub(super) fn cap(self) -> u32 {
        self.header().cap
    }

    /// Keys written.
    pub(super) fn len(self) -> u32 {
        self.header().len.load(Ordering::Relaxed)
    }

    /// The first `n` keys.
    ///
    /// # Safety
    /// `n <= len`, and the keys were published to this thread (through the shape table's
    /// lock or a shape's count).
    pub(super) unsafe fn prefix<'a>(self, n: u32) -> &'a [u32] {
        // SAFETY: `n` written, published keys (contract); only indices `>= len` are
        // written later.
        unsafe { core::slice::from_raw_parts(self.0.as_ptr(), n as usize) }
    }

    /// Appends `key` at `len`.
    ///
    /// # Safety
    /// The shape table's write lock is held (or exclusive access) and `len < cap`.
    pub(super) unsafe fn push(self, key: u32) {
        let h = self.header();
        let len = h.len.load(Ordering::Relaxed);
        debug_assert!(len < h.cap);
        // SAFETY: `len < cap`: inside the allocation; no reader reads index `len` (every
        // shape of this run has `count <= len`) and no other writer runs (lock held).
        unsafe { self.0.as_ptr().wrapping_add(len as usize).write(key) };
        h.len.store(len + 1, Ordering::Relaxed);
    }

    /// Counts one more shape using the run (write lock held, or exclusive access).
    pub(super) fn add_user(self) {
        let u = &self.header().users;
        u.store(u.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
    }

    /// Counts one shape less; `true` if it was the last (write lock held, or exclusive).
    pub(super) fn drop_user(self) -> bool {
        let u = &self.header().users;
        let n = u.load(Ordering::Relaxed) - 1;
        u.store(n, Ordering::Relaxed);
        n == 0
    }

    /// Frees the run.
    ///
    /// # Safety
    /// No shape uses it and no reader can still read it (exclusive access, or a run that
    /// was never published); freed once.
    pub(super) unsafe fn free(self) {
        let cap = self.cap();
        // SAFETY: allocated by `new` with `layout(cap)` at `HEAD` bytes before the keys.
        unsafe {
            std::alloc::dealloc(self.0.as_ptr().cast::<u8>().wrapping_sub(HEAD), layout(cap))
        };
    }
}
