//! The C ABI (feature `capi`): `malloc` and friends with C semantics, for the cdylib that
//! is preloaded into unmodified programs (`LD_PRELOAD=.../libarena_alloc.so prog`).
//!
//! Semantics (glibc's where C leaves a choice):
//! * `malloc(0)` returns a unique minimal block; `free(NULL)` does nothing;
//! * `realloc(NULL, n)` is `malloc(n)`; `realloc(p, 0)` frees `p` and returns NULL;
//! * overflow in `calloc`/`reallocarray`/`pvalloc` returns NULL with `errno = ENOMEM`;
//! * `posix_memalign` returns `EINVAL` for an alignment that is not a power of two times
//!   `sizeof(void *)`; `aligned_alloc` sets `errno = EINVAL` for one that is not a power of
//!   two; `memalign` rounds a non-power-of-two alignment up (as glibc does);
//! * every block is 16-byte aligned (`max_align_t`).
//!
//! The heap count comes from `ARENA_ALLOC_HEAP_COUNT` as for Rust users.

use crate::{ArenaAlloc, arena, sys};
use core::ffi::{c_int, c_void};

static C_ALLOC: ArenaAlloc = ArenaAlloc::new();
/// `alignof(max_align_t)` on x86_64 and aarch64 Linux.
const MALLOC_ALIGN: usize = 16;

/// Runs when the library is loaded: registers the fork handlers before any thread of the
/// host program can fork in the middle of a first allocation.
extern "C" fn on_load() {
    arena::ensure_ready();
}

#[used]
#[unsafe(link_section = ".init_array")]
static ON_LOAD: extern "C" fn() = on_load;

fn alloc_aligned(size: usize, align: usize) -> *mut c_void {
    let p = C_ALLOC.allocate(size.max(1), align.max(MALLOC_ALIGN));
    if p.is_null() {
        sys::set_errno(libc::ENOMEM);
    }
    p.cast()
}

/// C `malloc`.
#[unsafe(no_mangle)]
pub extern "C" fn malloc(size: usize) -> *mut c_void {
    alloc_aligned(size, MALLOC_ALIGN)
}

/// C `free`.
///
/// # Safety
/// `p` is NULL or a live block from this library's allocation functions.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn free(p: *mut c_void) {
    if p.is_null() {
        return;
    }
    // SAFETY: the caller passes a live block of ours.
    unsafe { C_ALLOC.free(p.cast()) }
}

/// C `calloc`.
#[unsafe(no_mangle)]
pub extern "C" fn calloc(n: usize, size: usize) -> *mut c_void {
    let Some(total) = n.checked_mul(size) else {
        sys::set_errno(libc::ENOMEM);
        return core::ptr::null_mut();
    };
    let p = C_ALLOC.allocate_zeroed(total.max(1), MALLOC_ALIGN);
    if p.is_null() {
        sys::set_errno(libc::ENOMEM);
    }
    p.cast()
}

/// C `realloc`.
///
/// # Safety
/// `p` is NULL or a live block from this library's allocation functions.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn realloc(p: *mut c_void, size: usize) -> *mut c_void {
    if p.is_null() {
        return malloc(size);
    }
    if size == 0 {
        // SAFETY: forwarded from the caller.
        unsafe { free(p) };
        return core::ptr::null_mut();
    }
    // SAFETY: `p` is a live block of ours.
    let old = unsafe { arena::usable_size(p.cast()) };
    // SAFETY: `p` is live and 16-aligned; `size > 0`.
    let q = unsafe { C_ALLOC.reallocate(p.cast(), old, size, MALLOC_ALIGN) };
    if q.is_null() {
        sys::set_errno(libc::ENOMEM);
    }
    q.cast()
}

/// C `reallocarray`.
///
/// # Safety
/// `p` is NULL or a live block from this library's allocation functions.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn reallocarray(p: *mut c_void, n: usize, size: usize) -> *mut c_void {
    match n.checked_mul(size) {
        // SAFETY: forwarded from the caller.
        Some(total) => unsafe { realloc(p, total) },
        None => {
            sys::set_errno(libc::ENOMEM);
            core::ptr::null_mut()
        }
    }
}

/// C `posix_memalign`.
///
/// # Safety
/// `memptr` is valid for a pointer write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn posix_memalign(
    memptr: *mut *mut c_void,
    align: usize,
    size: usize,
) -> c_int {
    if !align.is_power_of_two() || !align.is_multiple_of(size_of::<*mut c_void>()) {
        return libc::EINVAL;
    }
    let p = C_ALLOC.allocate(size.max(1), align.max(MALLOC_ALIGN));
    if p.is_null() {
        return libc::ENOMEM;
    }
    // SAFETY: the caller passes a writable `memptr`.
    unsafe { memptr.write(p.cast()) };
    0
}

/// C11 `aligned_alloc`.
#[unsafe(no_mangle)]
pub extern "C" fn aligned_alloc(align: usize, size: usize) -> *mut c_void {
    if !align.is_power_of_two() {
        sys::set_errno(libc::EINVAL);
        return core::ptr::null_mut();
    }
    alloc_aligned(size, align)
}

/// Legacy `memalign`.
#[unsafe(no_mangle)]
pub extern "C" fn memalign(align: usize, size: usize) -> *mut c_void {
    let Some(align) = align.checked_next_power_of_two() else {
        sys::set_errno(libc::EINVAL);
        return core::ptr::null_mut();
    };
    alloc_aligned(size, align)
}

/// Legacy `valloc`: page-aligned.
#[unsafe(no_mangle)]
pub extern "C" fn valloc(size: usize) -> *mut c_void {
    alloc_aligned(size, sys::os_page_size())
}

/// Legacy `pvalloc`: page-aligned, size rounded up to whole pages.
#[unsafe(no_mangle)]
pub extern "C" fn pvalloc(size: usize) -> *mut c_void {
    let ps = sys::os_page_size();
    let Some(rounded) = size.max(1).checked_add(ps - 1) else {
        sys::set_errno(libc::ENOMEM);
        return core::ptr::null_mut();
    };
    alloc_aligned(rounded & !(ps - 1), ps)
}

/// `malloc_usable_size`: 0 for NULL.
///
/// # Safety
/// `p` is NULL or a live block from this library's allocation functions.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn malloc_usable_size(p: *mut c_void) -> usize {
    if p.is_null() {
        return 0;
    }
    // SAFETY: the caller passes a live block of ours.
    unsafe { arena::usable_size(p.cast()) }
}
