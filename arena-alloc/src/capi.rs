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
//!
//! glibc's other entry points are ours too, so a program (or a library such as libstdc++)
//! that mixes them with `malloc`/`free` stays on one allocator: the `__libc_*` family,
//! `cfree`, `malloc_trim`, `mallinfo`/`mallinfo2` (from [`crate::total_stats`] and the huge
//! heap), `mallopt`, `malloc_stats` and `malloc_info` (see [`info`]), and C23's
//! `free_sized`/`free_aligned_sized`.

mod cxx;
mod info;

use crate::{ArenaAlloc, arena, sys};
use core::ffi::{c_int, c_void};

static C_ALLOC: ArenaAlloc = ArenaAlloc::new();
/// `alignof(max_align_t)` on x86_64 and aarch64 Linux.
const MALLOC_ALIGN: usize = 16;

/// Runs when the library is loaded: registers the fork handlers before any thread of the
/// host program can fork in the middle of a first allocation.
extern "C" fn on_load() {
    crate::init::ensure_ready();
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

/// C23 `free_sized`: `free`, the size is not needed (the block's page knows it).
///
/// # Safety
/// `p` is NULL or a live block from this library's allocation functions.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn free_sized(p: *mut c_void, _size: usize) {
    // SAFETY: forwarded from the caller.
    unsafe { free(p) }
}

/// C23 `free_aligned_sized`: `free`.
///
/// # Safety
/// `p` is NULL or a live block from `aligned_alloc` (or any allocation function here).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn free_aligned_sized(p: *mut c_void, _align: usize, _size: usize) {
    // SAFETY: forwarded from the caller.
    unsafe { free(p) }
}

/// Legacy `cfree`: `free`.
///
/// # Safety
/// `p` is NULL or a live block from this library's allocation functions.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cfree(p: *mut c_void) {
    // SAFETY: forwarded from the caller.
    unsafe { free(p) }
}

/// glibc's `__libc_malloc`: ours, so `free(__libc_malloc(n))` is safe.
#[unsafe(no_mangle)]
pub extern "C" fn __libc_malloc(size: usize) -> *mut c_void {
    malloc(size)
}

/// glibc's `__libc_free`.
///
/// # Safety
/// As for `free`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __libc_free(p: *mut c_void) {
    // SAFETY: forwarded from the caller.
    unsafe { free(p) }
}

/// glibc's `__libc_calloc`.
#[unsafe(no_mangle)]
pub extern "C" fn __libc_calloc(n: usize, size: usize) -> *mut c_void {
    calloc(n, size)
}

/// glibc's `__libc_realloc`.
///
/// # Safety
/// As for `realloc`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __libc_realloc(p: *mut c_void, size: usize) -> *mut c_void {
    // SAFETY: forwarded from the caller.
    unsafe { realloc(p, size) }
}

/// glibc's `__libc_memalign`.
#[unsafe(no_mangle)]
pub extern "C" fn __libc_memalign(align: usize, size: usize) -> *mut c_void {
    memalign(align, size)
}

/// glibc's `__libc_valloc`.
#[unsafe(no_mangle)]
pub extern "C" fn __libc_valloc(size: usize) -> *mut c_void {
    valloc(size)
}

/// glibc's `__libc_pvalloc`.
#[unsafe(no_mangle)]
pub extern "C" fn __libc_pvalloc(size: usize) -> *mut c_void {
    pvalloc(size)
}

/// `malloc_trim`: returns the calling thread's cached blocks, then the memory of every
/// empty page and every free resident huge block to the OS (`MADV_DONTNEED`, `munmap`); 1 if any was
/// released, else 0. `pad` is ignored (nothing is kept at a heap top).
#[unsafe(no_mangle)]
pub extern "C" fn malloc_trim(_pad: usize) -> c_int {
    c_int::from(crate::trim())
}

/// glibc's `M_TRIM_THRESHOLD`.
pub const M_TRIM_THRESHOLD: c_int = -1;
/// glibc's `M_TOP_PAD`.
pub const M_TOP_PAD: c_int = -2;
/// glibc's `M_MMAP_THRESHOLD`.
pub const M_MMAP_THRESHOLD: c_int = -3;
/// glibc's `M_MMAP_MAX`.
pub const M_MMAP_MAX: c_int = -4;
/// glibc's `M_ARENA_MAX`.
pub const M_ARENA_MAX: c_int = -8;

/// `mallopt`: accepts every `M_*` parameter and returns 1. Honoured: `M_MMAP_THRESHOLD`
/// (requests of at least that many bytes, above [`crate::tuning::SMALL_MAX`], get a mapping of
/// their own instead of an extent), `M_MMAP_MAX` (0: no such mappings but for requests no
/// extent holds), `M_TRIM_THRESHOLD` (dirty bytes of freed huge blocks always kept) and
/// `M_ARENA_MAX` (the heap count, 1-128, for later allocations). The others (`M_TOP_PAD`,
/// `M_PERTURB`, `M_CHECK_ACTION`, `M_ARENA_TEST`, `M_MXFAST`) have no counterpart here.
#[unsafe(no_mangle)]
pub extern "C" fn mallopt(param: c_int, value: c_int) -> c_int {
    let v = usize::try_from(value).ok();
    match (param, v) {
        (M_MMAP_THRESHOLD, Some(v)) => crate::huge::set_direct_min(v),
        (M_MMAP_MAX, Some(0)) => crate::huge::set_direct_min(usize::MAX),
        (M_TRIM_THRESHOLD, Some(v)) => crate::huge::set_retain_min(v),
        (M_ARENA_MAX, Some(v)) if v > 0 => crate::config::set_env_heap_count(v),
        _ => {}
    }
    1
}

/// glibc's `__libc_mallopt`.
#[unsafe(no_mangle)]
pub extern "C" fn __libc_mallopt(param: c_int, value: c_int) -> c_int {
    mallopt(param, value)
}

pub use info::{MallInfo, MallInfo2, mallinfo, mallinfo2, malloc_info, malloc_stats};
