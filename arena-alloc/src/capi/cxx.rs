//! C++'s `operator new` and `operator delete` (every form of the Itanium C++ ABI on 64-bit
//! Linux), so a C++ program's allocations reach the allocator directly instead of through
//! libstdc++'s wrappers around `malloc` and `free` (a call, a null check and a PLT jump
//! each way: 7% of mimalloc-bench's alloc-test).
//!
//! When the allocator is out of memory, a `new` passes the call on to the next definition
//! of the same operator (libstdc++'s, found with `dlsym(RTLD_NEXT, ...)`), which calls
//! `malloc` (ours) again and does what C++ requires on failure: it calls the installed
//! `new_handler` and retries, or throws `std::bad_alloc` (the `nothrow` forms return null).
//! The exception passes through our frame, which is why these functions use the
//! `C-unwind` ABI. A program that defines its own operators keeps them (the executable
//! comes first in the lookup order).

#![allow(non_snake_case)]

use super::{C_ALLOC, MALLOC_ALIGN, free};
use crate::sys;
use core::ffi::{CStr, c_void};

/// The next definition of operator `name`, or an abort saying it is missing (a C++
/// program always has one: libstdc++ defines every form).
#[cold]
#[inline(never)]
fn next(name: &CStr) -> *mut c_void {
    let f = sys::next_symbol(name);
    if f.is_null() {
        sys::abort_with(
            "operator new: out of memory, and no next definition to report it",
            0,
        );
    }
    f
}

/// A block of `size` bytes aligned to `align` (a power of two), or null.
#[inline]
fn try_new(size: usize, align: usize) -> *mut c_void {
    C_ALLOC
        .allocate(size.max(1), align.max(MALLOC_ALIGN))
        .cast()
}

type NewFn = unsafe extern "C-unwind" fn(usize) -> *mut c_void;
type NewNothrowFn = unsafe extern "C-unwind" fn(usize, *const c_void) -> *mut c_void;
type NewAlignFn = unsafe extern "C-unwind" fn(usize, usize) -> *mut c_void;
type NewAlignNothrowFn = unsafe extern "C-unwind" fn(usize, usize, *const c_void) -> *mut c_void;

/// The failure path of the unaligned forms.
#[cold]
#[inline(never)]
fn new_failed(name: &CStr, size: usize) -> *mut c_void {
    // SAFETY: `next` returns libstdc++'s definition of the same operator, which has this
    // signature.
    let f: NewFn = unsafe { core::mem::transmute::<*mut c_void, NewFn>(next(name)) };
    // SAFETY: calling that operator with the caller's own arguments.
    unsafe { f(size) }
}

#[cold]
#[inline(never)]
fn new_nothrow_failed(name: &CStr, size: usize, tag: *const c_void) -> *mut c_void {
    // SAFETY: as in `new_failed`.
    let f: NewNothrowFn = unsafe { core::mem::transmute::<*mut c_void, NewNothrowFn>(next(name)) };
    // SAFETY: as in `new_failed`.
    unsafe { f(size, tag) }
}

#[cold]
#[inline(never)]
fn new_align_failed(name: &CStr, size: usize, align: usize) -> *mut c_void {
    // SAFETY: as in `new_failed`.
    let f: NewAlignFn = unsafe { core::mem::transmute::<*mut c_void, NewAlignFn>(next(name)) };
    // SAFETY: as in `new_failed`.
    unsafe { f(size, align) }
}

#[cold]
#[inline(never)]
fn new_align_nothrow_failed(
    name: &CStr,
    size: usize,
    align: usize,
    tag: *const c_void,
) -> *mut c_void {
    // SAFETY: as in `new_failed`.
    let f: NewAlignNothrowFn =
        unsafe { core::mem::transmute::<*mut c_void, NewAlignNothrowFn>(next(name)) };
    // SAFETY: as in `new_failed`.
    unsafe { f(size, align, tag) }
}

macro_rules! operator_new {
    ($($(#[$m:meta])* $sym:ident = $name:literal;)*) => {$(
        $(#[$m])*
        #[unsafe(no_mangle)]
        pub extern "C-unwind" fn $sym(size: usize) -> *mut c_void {
            let p = try_new(size, MALLOC_ALIGN);
            if p.is_null() {
                return new_failed(
                    $name,
                    size,
                );
            }
            p
        }
    )*};
}

macro_rules! operator_new_nothrow {
    ($($(#[$m:meta])* $sym:ident = $name:literal;)*) => {$(
        $(#[$m])*
        #[unsafe(no_mangle)]
        pub extern "C-unwind" fn $sym(size: usize, tag: *const c_void) -> *mut c_void {
            let p = try_new(size, MALLOC_ALIGN);
            if p.is_null() {
                return new_nothrow_failed(
                    $name,
                    size,
                    tag,
                );
            }
            p
        }
    )*};
}

macro_rules! operator_new_align {
    ($($(#[$m:meta])* $sym:ident = $name:literal;)*) => {$(
        $(#[$m])*
        #[unsafe(no_mangle)]
        pub extern "C-unwind" fn $sym(size: usize, align: usize) -> *mut c_void {
            let p = if align.is_power_of_two() {
                try_new(size, align)
            } else {
                core::ptr::null_mut()
            };
            if p.is_null() {
                return new_align_failed(
                    $name,
                    size,
                    align,
                );
            }
            p
        }
    )*};
}

macro_rules! operator_new_align_nothrow {
    ($($(#[$m:meta])* $sym:ident = $name:literal;)*) => {$(
        $(#[$m])*
        #[unsafe(no_mangle)]
        pub extern "C-unwind" fn $sym(size: usize, align: usize, tag: *const c_void) -> *mut c_void {
            let p = if align.is_power_of_two() {
                try_new(size, align)
            } else {
                core::ptr::null_mut()
            };
            if p.is_null() {
                return new_align_nothrow_failed(
                    $name,
                    size,
                    align,
                    tag,
                );
            }
            p
        }
    )*};
}

operator_new! {
    /// `operator new(size_t)`.
    _Znwm = c"_Znwm";
    /// `operator new[](size_t)`.
    _Znam = c"_Znam";
}

operator_new_nothrow! {
    /// `operator new(size_t, const std::nothrow_t&)`.
    _ZnwmRKSt9nothrow_t = c"_ZnwmRKSt9nothrow_t";
    /// `operator new[](size_t, const std::nothrow_t&)`.
    _ZnamRKSt9nothrow_t = c"_ZnamRKSt9nothrow_t";
}

operator_new_align! {
    /// `operator new(size_t, std::align_val_t)`.
    _ZnwmSt11align_val_t = c"_ZnwmSt11align_val_t";
    /// `operator new[](size_t, std::align_val_t)`.
    _ZnamSt11align_val_t = c"_ZnamSt11align_val_t";
}

operator_new_align_nothrow! {
    /// `operator new(size_t, std::align_val_t, const std::nothrow_t&)`.
    _ZnwmSt11align_val_tRKSt9nothrow_t = c"_ZnwmSt11align_val_tRKSt9nothrow_t";
    /// `operator new[](size_t, std::align_val_t, const std::nothrow_t&)`.
    _ZnamSt11align_val_tRKSt9nothrow_t = c"_ZnamSt11align_val_tRKSt9nothrow_t";
}

/// `operator delete(void*)`.
///
/// # Safety
/// `p` is null or a live block of this allocator.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn _ZdlPv(p: *mut c_void) {
    // SAFETY: forwarded from the caller.
    unsafe { free(p) }
}

/// `operator delete[](void*)`.
///
/// # Safety
/// As for [`_ZdlPv`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn _ZdaPv(p: *mut c_void) {
    // SAFETY: forwarded from the caller.
    unsafe { free(p) }
}

/// `operator delete(void*, size_t)` (the size is not needed: the page knows it).
///
/// # Safety
/// As for [`_ZdlPv`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn _ZdlPvm(p: *mut c_void, _size: usize) {
    // SAFETY: forwarded from the caller.
    unsafe { free(p) }
}

/// `operator delete[](void*, size_t)`.
///
/// # Safety
/// As for [`_ZdlPv`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn _ZdaPvm(p: *mut c_void, _size: usize) {
    // SAFETY: forwarded from the caller.
    unsafe { free(p) }
}

/// `operator delete(void*, const std::nothrow_t&)`.
///
/// # Safety
/// As for [`_ZdlPv`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn _ZdlPvRKSt9nothrow_t(p: *mut c_void, _tag: *const c_void) {
    // SAFETY: forwarded from the caller.
    unsafe { free(p) }
}

/// `operator delete[](void*, const std::nothrow_t&)`.
///
/// # Safety
/// As for [`_ZdlPv`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn _ZdaPvRKSt9nothrow_t(p: *mut c_void, _tag: *const c_void) {
    // SAFETY: forwarded from the caller.
    unsafe { free(p) }
}

/// `operator delete(void*, std::align_val_t)`.
///
/// # Safety
/// As for [`_ZdlPv`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn _ZdlPvSt11align_val_t(p: *mut c_void, _align: usize) {
    // SAFETY: forwarded from the caller.
    unsafe { free(p) }
}

/// `operator delete[](void*, std::align_val_t)`.
///
/// # Safety
/// As for [`_ZdlPv`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn _ZdaPvSt11align_val_t(p: *mut c_void, _align: usize) {
    // SAFETY: forwarded from the caller.
    unsafe { free(p) }
}

/// `operator delete(void*, size_t, std::align_val_t)`.
///
/// # Safety
/// As for [`_ZdlPv`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn _ZdlPvmSt11align_val_t(p: *mut c_void, _size: usize, _align: usize) {
    // SAFETY: forwarded from the caller.
    unsafe { free(p) }
}

/// `operator delete[](void*, size_t, std::align_val_t)`.
///
/// # Safety
/// As for [`_ZdlPv`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn _ZdaPvmSt11align_val_t(p: *mut c_void, _size: usize, _align: usize) {
    // SAFETY: forwarded from the caller.
    unsafe { free(p) }
}

/// `operator delete(void*, std::align_val_t, const std::nothrow_t&)`.
///
/// # Safety
/// As for [`_ZdlPv`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn _ZdlPvSt11align_val_tRKSt9nothrow_t(
    p: *mut c_void,
    _align: usize,
    _tag: *const c_void,
) {
    // SAFETY: forwarded from the caller.
    unsafe { free(p) }
}

/// `operator delete[](void*, std::align_val_t, const std::nothrow_t&)`.
///
/// # Safety
/// As for [`_ZdlPv`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn _ZdaPvSt11align_val_tRKSt9nothrow_t(
    p: *mut c_void,
    _align: usize,
    _tag: *const c_void,
) {
    // SAFETY: forwarded from the caller.
    unsafe { free(p) }
}
