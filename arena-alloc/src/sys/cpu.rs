//! Which CPU the calling thread is on, without a syscall on the fast path.
//!
//! 1. glibc >= 2.35 registers a restartable-sequence area per thread and exports
//!    `__rseq_offset` (its offset from the thread pointer) and `__rseq_size` (0 when not
//!    registered). The kernel keeps `cpu_id` (at byte 4 of `struct rseq`) current. The two
//!    symbols are referenced *weakly* from inline assembly, so the crate links and runs on
//!    older glibc (they read as absent there).
//! 2. `sched_getcpu` (vDSO), cached per thread and refreshed every
//!    [`FALLBACK_REFRESH`] calls: without rseq (old kernels, valgrind) a syscall-class
//!    call per allocation would dominate. A stale CPU only costs locality, never
//!    correctness: ownership is recorded in the memory.
//! 3. A hash of the thread id.

use crate::sync::unmodeled::{AtomicIsize, Ordering};
use core::cell::Cell;

/// Calls between two `sched_getcpu` on the fallback path.
pub const FALLBACK_REFRESH: u32 = 64;

std::thread_local! {
    /// (cpu, calls left before a refresh). Const-initialised and without `Drop`, so it
    /// never allocates and stays usable while the thread is being torn down.
    static FALLBACK: Cell<(u32, u32)> = const { Cell::new((0, 0)) };
}

const NOT_PROBED: isize = isize::MIN;
const NO_RSEQ: isize = isize::MIN + 1;
/// Offset of `cpu_id` in the kernel's `struct rseq`.
const RSEQ_CPU_ID: isize = 4;

/// Offset from the thread pointer of the rseq `cpu_id` field, or a sentinel.
static CPU_ID_OFFSET: AtomicIsize = AtomicIsize::new(NOT_PROBED);

/// The current CPU number (any value; callers reduce it modulo the heap count).
#[inline]
pub(crate) fn current_cpu() -> usize {
    let off = CPU_ID_OFFSET.load(Ordering::Relaxed);
    if off > NO_RSEQ {
        if let Some(cpu) = read_rseq_cpu(off) {
            return cpu;
        }
    } else if off == NOT_PROBED {
        probe();
        return current_cpu();
    }
    cached_fallback_cpu()
}

/// The current CPU when it is cheap to know (rseq, or a fresh cached fallback value);
/// `None` means: call [`current_cpu`]. Makes no call, so callers stay leaf functions.
#[inline]
pub(crate) fn current_cpu_fast() -> Option<usize> {
    let off = CPU_ID_OFFSET.load(Ordering::Relaxed);
    if off > NO_RSEQ {
        read_rseq_cpu(off)
    } else if off == NO_RSEQ {
        FALLBACK
            .try_with(|c| {
                let (cpu, left) = c.get();
                if left > 0 {
                    c.set((cpu, left - 1));
                    Some(cpu as usize)
                } else {
                    None
                }
            })
            .ok()
            .flatten()
    } else {
        None
    }
}

#[inline]
fn cached_fallback_cpu() -> usize {
    FALLBACK
        .try_with(|c| {
            let (cpu, left) = c.get();
            if left > 0 {
                c.set((cpu, left - 1));
                cpu as usize
            } else {
                let cpu = fallback_cpu();
                c.set((cpu as u32, FALLBACK_REFRESH - 1));
                cpu
            }
        })
        .unwrap_or_else(|_| fallback_cpu())
}

#[cold]
fn fallback_cpu() -> usize {
    // SAFETY: sched_getcpu has no preconditions.
    let c = unsafe { libc::sched_getcpu() };
    if c >= 0 {
        return c as usize;
    }
    // SAFETY: pthread_self has no preconditions.
    let t = unsafe { libc::pthread_self() } as u64;
    (t.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40) as usize & 0xFFFF
}

#[cold]
fn probe() {
    let off = match rseq_symbols() {
        Some((offset, size)) if size >= 8 => offset + RSEQ_CPU_ID,
        _ => NO_RSEQ,
    };
    CPU_ID_OFFSET.store(off, Ordering::Relaxed);
}

#[cfg(all(
    target_arch = "x86_64",
    target_os = "linux",
    target_env = "gnu",
    not(miri)
))]
fn rseq_symbols() -> Option<(isize, u32)> {
    let off_addr: *const isize;
    let size_addr: *const u32;
    // SAFETY: loads two GOT entries; a weak undefined symbol resolves to address 0. The
    // block reads memory (the GOT, fixed once relocated), so it is `readonly`, not `nomem`.
    unsafe {
        core::arch::asm!(
            ".weak __rseq_offset",
            ".weak __rseq_size",
            "mov {o}, qword ptr [rip + __rseq_offset@GOTPCREL]",
            "mov {s}, qword ptr [rip + __rseq_size@GOTPCREL]",
            o = out(reg) off_addr,
            s = out(reg) size_addr,
            options(nostack, pure, readonly, preserves_flags),
        );
    }
    if off_addr.is_null() || size_addr.is_null() {
        return None;
    }
    // SAFETY: non-null: glibc defines both as constants for the life of the process.
    let off = unsafe { off_addr.read() };
    // SAFETY: as above.
    let size = unsafe { size_addr.read() };
    Some((off, size))
}

#[cfg(not(all(
    target_arch = "x86_64",
    target_os = "linux",
    target_env = "gnu",
    not(miri)
)))]
fn rseq_symbols() -> Option<(isize, u32)> {
    None
}

#[cfg(all(
    target_arch = "x86_64",
    target_os = "linux",
    target_env = "gnu",
    not(miri)
))]
#[inline]
fn read_rseq_cpu(off: isize) -> Option<usize> {
    let tp: usize;
    // SAFETY: on x86_64 Linux, fs:0 holds the thread pointer (the TCB's self pointer).
    unsafe {
        core::arch::asm!(
            "mov {}, qword ptr fs:[0]",
            out(reg) tp,
            options(nostack, pure, readonly, preserves_flags),
        );
    }
    let p = tp.wrapping_add_signed(off) as *const u32;
    // SAFETY: glibc registered this thread's rseq area at tp + __rseq_offset (probe checked
    // __rseq_size > 0); the kernel updates cpu_id concurrently, hence the volatile read.
    let v = unsafe { core::ptr::read_volatile(p) } as i32;
    // Negative: this thread's registration failed (RSEQ_CPU_ID_REGISTRATION_FAILED).
    if v >= 0 { Some(v as usize) } else { None }
}

#[cfg(not(all(
    target_arch = "x86_64",
    target_os = "linux",
    target_env = "gnu",
    not(miri)
)))]
#[inline]
fn read_rseq_cpu(_off: isize) -> Option<usize> {
    None
}

/// Which source `current_cpu` uses: "rseq", "sched_getcpu" (probing first if needed).
pub(crate) fn cpu_source() -> &'static str {
    let _ = current_cpu();
    if CPU_ID_OFFSET.load(Ordering::Relaxed) > NO_RSEQ {
        "rseq"
    } else {
        "sched_getcpu"
    }
}
