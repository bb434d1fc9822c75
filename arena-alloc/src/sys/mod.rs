//! The operating-system layer: the only module that calls `libc`.
//!
//! Nothing here allocates: it runs inside `malloc`.

pub(crate) mod cpu;

pub(crate) use cpu::{current_cpu, current_cpu_fast};

use crate::sync::unmodeled::{AtomicUsize, Ordering};
use core::ffi::CStr;
use core::ptr;

/// The OS page size, read once (`sysconf` does not allocate).
pub(crate) fn os_page_size() -> usize {
    static PAGE: AtomicUsize = AtomicUsize::new(0);
    let p = PAGE.load(Ordering::Relaxed);
    if p != 0 {
        return p;
    }
    // SAFETY: sysconf has no preconditions.
    let v = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    let v = if v > 0 { v as usize } else { 4096 };
    PAGE.store(v, Ordering::Relaxed);
    v
}

/// Number of configured CPUs (CPU ids are below it), at least 1.
pub(crate) fn cpu_count() -> usize {
    // SAFETY: sysconf has no preconditions; glibc reads /sys without malloc.
    let v = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_CONF) };
    if v > 0 { v as usize } else { 1 }
}

/// Fresh zeroed read-write anonymous memory, or null.
pub(crate) fn map(len: usize) -> *mut u8 {
    // SAFETY: an anonymous mapping at a kernel-chosen address touches no existing memory.
    let p = unsafe {
        libc::mmap(
            ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        ptr::null_mut()
    } else {
        p.cast()
    }
}

/// Unmaps `[p, p + len)`.
///
/// # Safety
/// The range must be mapped by this crate and no longer referenced.
pub(crate) unsafe fn unmap(p: *mut u8, len: usize) {
    if len == 0 {
        return;
    }
    // SAFETY: the caller owns the range and drops every reference to it.
    let rc = unsafe { libc::munmap(p.cast(), len) };
    debug_assert_eq!(rc, 0, "munmap failed");
}

/// Gives the pages of `[p, p + len)` back to the kernel, keeping the range mapped: it is
/// no longer resident and reads as zeros when touched again.
///
/// # Safety
/// The range must be mapped by this crate and hold nothing anyone still reads.
pub(crate) unsafe fn decommit(p: *mut u8, len: usize) {
    // SAFETY: the caller owns the range and needs none of its contents.
    let rc = unsafe { libc::madvise(p.cast(), len, libc::MADV_DONTNEED) };
    debug_assert_eq!(rc, 0, "madvise failed");
}

/// Maps `len` bytes at an address `h` with `(h + offset) % align == 0` (`align` a power of
/// two, multiple of the OS page; `offset` a multiple of the OS page below or equal `align`).
///
/// First asks for the aligned address just below the previous aligned mapping (the kernel
/// hands out addresses top-down, so that range is usually free): one syscall. Otherwise
/// maps `len + align` bytes and trims both ends (three syscalls).
pub(crate) fn map_aligned(len: usize, align: usize, offset: usize) -> *mut u8 {
    static NEXT_BELOW: AtomicUsize = AtomicUsize::new(0);
    let below = NEXT_BELOW.load(Ordering::Relaxed);
    // The highest `h <= below - len` with `(h + offset) % align == 0`.
    let want = below
        .checked_sub(len)
        .and_then(|top| top.checked_add(offset))
        .map(|t| t & !(align - 1))
        .and_then(|t| t.checked_sub(offset))
        .filter(|&h| h > 0);
    if let Some(want) = want {
        // SAFETY: without MAP_FIXED the address is only a hint; nothing existing is touched.
        let p = unsafe {
            libc::mmap(
                want as *mut libc::c_void,
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if p != libc::MAP_FAILED {
            let p = p.cast::<u8>();
            if p.addr() == want {
                NEXT_BELOW.store(want, Ordering::Relaxed);
                return p;
            }
            // SAFETY: a fresh mapping of `len` bytes we own and never handed out.
            unsafe { unmap(p, len) };
        }
    }
    let Some(total) = len.checked_add(align) else {
        return ptr::null_mut();
    };
    let raw = map(total);
    if raw.is_null() {
        return raw;
    }
    let h_addr = ((raw.addr() + offset + align - 1) & !(align - 1)) - offset;
    let lead = h_addr - raw.addr();
    let h = raw.wrapping_add(lead);
    // SAFETY: both trimmed ranges lie inside `raw`'s fresh mapping and outside [h, h+len).
    unsafe { unmap(raw, lead) };
    // SAFETY: as above.
    unsafe { unmap(h.wrapping_add(len), total - lead - len) };
    NEXT_BELOW.store(h_addr, Ordering::Relaxed);
    h
}

/// Grows or shrinks the mapping `[p, p + old)` to `new` bytes without moving it.
///
/// # Safety
/// `[p, p + old)` must be a whole mapping owned by the caller.
pub(crate) unsafe fn remap_in_place(p: *mut u8, old: usize, new: usize) -> bool {
    // SAFETY: flags 0 never moves the mapping; the caller owns it.
    let r = unsafe { libc::mremap(p.cast(), old, new, 0) };
    r != libc::MAP_FAILED
}

/// Moves the mapping `[p, p + old)` (page tables, no copy) to a new `new`-byte mapping at an
/// address `h` with `(h + offset) % align == 0`; returns null (old mapping intact) on failure.
///
/// # Safety
/// `[p, p + old)` must be a whole mapping owned by the caller; on success it is gone.
pub(crate) unsafe fn remap_aligned(
    p: *mut u8,
    old: usize,
    new: usize,
    align: usize,
    offset: usize,
) -> *mut u8 {
    let target = map_aligned(new, align, offset);
    if target.is_null() {
        return target;
    }
    // SAFETY: `target` is a mapping of `new` bytes we own, so MREMAP_FIXED may replace it;
    // the caller owns the source mapping.
    let r = unsafe {
        libc::mremap(
            p.cast(),
            old,
            new,
            libc::MREMAP_MAYMOVE | libc::MREMAP_FIXED,
            target.cast::<libc::c_void>(),
        )
    };
    if r == libc::MAP_FAILED {
        // SAFETY: the reservation is ours and unused.
        unsafe { unmap(target, new) };
        return ptr::null_mut();
    }
    target
}

/// Moves the pages of `[p, p + len)` (part or all of one mapping; page tables, no copy) to
/// `[to, to + len)`, which must be a mapping of the caller's (it is replaced); `false`
/// (nothing moved) on failure.
///
/// # Safety
/// Both ranges are the caller's, whole OS pages; nothing refers to `[p, p + len)` after.
pub(crate) unsafe fn remap_fixed(p: *mut u8, len: usize, to: *mut u8) -> bool {
    // SAFETY: forwarded from the caller.
    let r = unsafe {
        libc::mremap(
            p.cast(),
            len,
            len,
            libc::MREMAP_MAYMOVE | libc::MREMAP_FIXED,
            to.cast::<libc::c_void>(),
        )
    };
    r != libc::MAP_FAILED
}

/// Blocks while `*word == expected` (spurious wake-ups allowed).
pub(crate) fn futex_wait(word: *const u32, expected: u32) {
    // SAFETY: FUTEX_WAIT only reads the word; `word` points to a live AtomicU32.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word,
            libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
            expected,
            ptr::null::<libc::timespec>(),
        )
    };
}

/// Wakes one waiter on `word`.
pub(crate) fn futex_wake(word: *const u32) {
    // SAFETY: FUTEX_WAKE does not access memory; `word` is only used as a key.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word,
            libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
            1,
        )
    };
}

/// Longest environment value [`getenv_copy`] keeps (a heap count needs 3 digits).
pub(crate) const ENV_VALUE_MAX: usize = 64;

/// A copy of an environment value, taken when it was read: no reference into `environ`
/// outlives the read (a C program may call `setenv` on another thread at any time).
pub(crate) struct EnvValue {
    buf: [u8; ENV_VALUE_MAX],
    len: usize,
    truncated: bool,
}

impl EnvValue {
    /// The value's first bytes (all of it unless [`EnvValue::truncated`]).
    pub(crate) fn bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }

    /// The value was longer than [`ENV_VALUE_MAX`] bytes; only its start was copied.
    pub(crate) fn truncated(&self) -> bool {
        self.truncated
    }
}

/// Copies the NUL-terminated string at `p` into an [`EnvValue`], reading at most
/// `ENV_VALUE_MAX + 1` bytes (the last only to see whether the value goes on).
///
/// # Safety
/// `p` points to a NUL-terminated string that stays readable during the call.
unsafe fn copy_c_value(p: *const libc::c_char) -> EnvValue {
    let mut v = EnvValue {
        buf: [0; ENV_VALUE_MAX],
        len: 0,
        truncated: false,
    };
    loop {
        // SAFETY: every byte before index `len` was not NUL, so index `len` is still
        // inside the string (at worst its terminator).
        let b = unsafe { p.cast::<u8>().wrapping_add(v.len).read() };
        if b == 0 {
            return v;
        }
        if v.len == ENV_VALUE_MAX {
            v.truncated = true;
            return v;
        }
        v.buf[v.len] = b;
        v.len += 1;
    }
}

/// `getenv` without allocating: the value is copied out of the environment block at
/// once, so nothing refers into `environ` afterwards.
pub(crate) fn getenv_copy(name: &CStr) -> Option<EnvValue> {
    // SAFETY: `name` is NUL-terminated; getenv does not allocate.
    let p = unsafe { libc::getenv(name.as_ptr()) };
    if p.is_null() {
        return None;
    }
    // SAFETY: getenv returned a NUL-terminated string. It stays valid for this short
    // copy unless another thread calls setenv/putenv for the same name at this very
    // moment, which POSIX leaves undefined for every getenv caller (glibc never frees
    // values set with setenv, so even then the bytes stay readable).
    Some(unsafe { copy_c_value(p) })
}

/// Writes `msg` to stderr (best effort, no allocation).
pub(crate) fn write_stderr(msg: &[u8]) {
    // SAFETY: `msg` is a valid readable buffer of its length.
    unsafe { libc::write(2, msg.as_ptr().cast(), msg.len()) };
}

/// Writes `arena-alloc: MSG (0xADDR)` to stderr and aborts the process (no allocation, no
/// unwinding: this runs inside `free`).
pub(crate) fn abort_with(msg: &str, addr: usize) -> ! {
    let mut buf = [0u8; 160];
    let mut n = 0;
    let mut push = |bytes: &[u8]| {
        for &b in bytes {
            if n < buf.len() {
                buf[n] = b;
                n += 1;
            }
        }
    };
    push(b"arena-alloc: ");
    push(msg.as_bytes());
    push(b" (0x");
    let mut digits = [0u8; 16];
    for (i, d) in digits.iter_mut().enumerate() {
        let nib = (addr >> (60 - 4 * i)) & 0xf;
        *d = b"0123456789abcdef"[nib];
    }
    let first = digits.iter().position(|&d| d != b'0').unwrap_or(15);
    push(&digits[first..]);
    push(b")\n");
    write_stderr(&buf[..n]);
    // SAFETY: abort has no preconditions; it does not return.
    unsafe { libc::abort() }
}

/// The next definition of symbol `name` after this library in the lookup order
/// (`dlsym(RTLD_NEXT, name)`), or null. For the C++ operators' out-of-memory path only:
/// `dlsym` may allocate.
#[cfg(feature = "capi")]
pub(crate) fn next_symbol(name: &CStr) -> *mut libc::c_void {
    // SAFETY: `name` is NUL-terminated; RTLD_NEXT is a valid pseudo-handle.
    unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr()) }
}

/// Sets the calling thread's `errno`.
#[cfg(feature = "capi")]
pub(crate) fn set_errno(e: i32) {
    // SAFETY: __errno_location has no preconditions.
    let slot = unsafe { libc::__errno_location() };
    // SAFETY: it returns the calling thread's errno slot.
    unsafe { *slot = e };
}

/// Registers fork handlers.
pub(crate) fn atfork(prepare: extern "C" fn(), parent: extern "C" fn(), child: extern "C" fn()) {
    // SAFETY: the handlers are plain functions valid for the life of the process.
    unsafe { libc::pthread_atfork(Some(prepare), Some(parent), Some(child)) };
}

/// Creates a pthread key whose destructor runs at thread exit; `None` on failure.
pub(crate) fn create_thread_key(dtor: unsafe extern "C" fn(*mut libc::c_void)) -> Option<u32> {
    let mut key: libc::pthread_key_t = 0;
    // SAFETY: `key` is writable; the destructor is a plain function.
    let rc = unsafe { libc::pthread_key_create(&mut key, Some(dtor)) };
    (rc == 0).then_some(key)
}

/// Sets the calling thread's value for `key` (non-null, so the destructor runs).
pub(crate) fn set_thread_value(key: u32, value: *mut libc::c_void) -> bool {
    // SAFETY: `key` was created by `create_thread_key`.
    unsafe { libc::pthread_setspecific(key, value) == 0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copy_c_value_copies_and_truncates() {
        let copy = |c: &CStr| {
            // SAFETY: a NUL-terminated string that outlives the call.
            unsafe { copy_c_value(c.as_ptr()) }
        };
        let v = copy(c"128");
        assert_eq!((v.bytes(), v.truncated()), (&b"128"[..], false));
        let v = copy(c"");
        assert_eq!((v.bytes(), v.truncated()), (&b""[..], false));
        let mut exact = [b'7'; ENV_VALUE_MAX + 1];
        exact[ENV_VALUE_MAX] = 0;
        let v = copy(CStr::from_bytes_with_nul(&exact).unwrap());
        assert_eq!(v.bytes(), &exact[..ENV_VALUE_MAX]);
        assert!(!v.truncated());
        let mut long = [b'9'; 300];
        long[299] = 0;
        let v = copy(CStr::from_bytes_with_nul(&long).unwrap());
        assert_eq!(v.bytes(), &long[..ENV_VALUE_MAX]);
        assert!(v.truncated());
    }
}
