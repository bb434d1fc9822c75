//! The heap count: from the constructor, or `ARENA_ALLOC_HEAP_COUNT`, or the CPU count.
//! Safe code; the parser runs under Miri.

use crate::sync::unmodeled::{AtomicBool, AtomicUsize, Ordering};
use crate::sys;
use core::fmt;

/// Most arenas (heaps) a process can use.
pub const MAX_HEAP_COUNT: usize = 128;

/// The environment variable that sets the heap count (1 = a single heap).
pub const HEAP_COUNT_ENV: &str = "ARENA_ALLOC_HEAP_COUNT";
/// The environment variable that turns on the hardened mode (`1`; `0` or unset: off), read
/// once when the allocator starts (before it hands out its first block).
pub const HARDENED_ENV: &str = "ARENA_ALLOC_HARDENED";
/// The default heap count is the CPU count, but never below this.
pub const MIN_DEFAULT_HEAP_COUNT: usize = 2;

/// Why a heap count was rejected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HeapCountError {
    /// Not a decimal number.
    NotANumber,
    /// A number outside `1..=MAX_HEAP_COUNT`.
    OutOfRange,
}

impl fmt::Display for HeapCountError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotANumber => write!(f, "heap count is not a decimal number"),
            Self::OutOfRange => write!(f, "heap count is outside 1..={MAX_HEAP_COUNT}"),
        }
    }
}

/// Checks an explicit heap count.
pub const fn check_heap_count(n: usize) -> Result<usize, HeapCountError> {
    if n >= 1 && n <= MAX_HEAP_COUNT {
        Ok(n)
    } else {
        Err(HeapCountError::OutOfRange)
    }
}

/// Parses the value of [`HEAP_COUNT_ENV`]: ASCII digits only, value in `1..=MAX_HEAP_COUNT`.
pub fn parse_heap_count(value: &[u8]) -> Result<usize, HeapCountError> {
    if value.is_empty() || !value.iter().all(u8::is_ascii_digit) {
        return Err(HeapCountError::NotANumber);
    }
    let mut n: usize = 0;
    for &d in value {
        n = n.saturating_mul(10).saturating_add(usize::from(d - b'0'));
    }
    check_heap_count(n)
}

/// Parses the copied value of [`HEAP_COUNT_ENV`]; `truncated` means it was longer than
/// the copy (more than 64 bytes), which no valid heap count needs: rejected.
fn parse_env_value(copied: &[u8], truncated: bool) -> Result<usize, HeapCountError> {
    match parse_heap_count(copied) {
        Ok(_) if truncated => Err(HeapCountError::OutOfRange),
        r => r,
    }
}

/// The heap count used when neither the constructor nor the environment sets one: the
/// number of configured CPUs, clamped to `MIN_DEFAULT_HEAP_COUNT..=MAX_HEAP_COUNT`.
pub fn default_heap_count() -> usize {
    sys::cpu_count().clamp(MIN_DEFAULT_HEAP_COUNT, MAX_HEAP_COUNT)
}

static ENV_HEAP_COUNT: AtomicUsize = AtomicUsize::new(0);

/// The heap count from the environment (or the default), read once.
#[inline]
pub(crate) fn env_heap_count() -> usize {
    let n = ENV_HEAP_COUNT.load(Ordering::Relaxed);
    if n != 0 { n } else { init_env_heap_count() }
}

/// The heap count from the environment if already read.
#[inline]
pub(crate) fn env_heap_count_fast() -> Option<usize> {
    let n = ENV_HEAP_COUNT.load(Ordering::Relaxed);
    if n != 0 { Some(n) } else { None }
}

/// Replaces the heap count of allocators built with [`crate::ArenaAlloc::new`] (`mallopt`'s
/// `M_ARENA_MAX`): later allocations spread over `n` arenas; blocks keep their owner.
#[cfg(feature = "capi")]
pub(crate) fn set_env_heap_count(n: usize) {
    if check_heap_count(n).is_ok() {
        ENV_HEAP_COUNT.store(n, Ordering::Relaxed);
    }
}

static HARDENED: AtomicBool = AtomicBool::new(false);

/// Whether the hardened mode is on: no thread caches (every block goes through its
/// arena's lock), a per-page bitmap of live blocks that catches double frees of small
/// blocks, and small segments are never unmapped (a late double free reads a mapped
/// header). Costs nothing on the cached fast path when off.
#[inline]
pub fn hardened() -> bool {
    HARDENED.load(Ordering::Relaxed)
}

/// What a value of [`HARDENED_ENV`] means: `Some(on)`, or `None` for a value that is not
/// `0`, `1` or empty (off, with a line on stderr).
pub fn parse_hardened(value: &[u8]) -> Option<bool> {
    match value {
        b"1" => Some(true),
        b"0" | b"" => Some(false),
        _ => None,
    }
}

/// Reads [`HARDENED_ENV`] (once, from `ensure_ready`, before the first block exists).
#[cold]
pub(crate) fn read_hardened() {
    let Some(v) = sys::getenv_copy(c"ARENA_ALLOC_HARDENED") else {
        return;
    };
    match parse_hardened(v.bytes()) {
        Some(on) if !v.truncated() => HARDENED.store(on, Ordering::Relaxed),
        _ => {
            let mut l = Line {
                buf: [0; 192],
                len: 0,
            };
            l.push(b"arena-alloc: ignoring ");
            l.push(HARDENED_ENV.as_bytes());
            l.push(b"=\"");
            l.push(v.bytes());
            l.push(b"\": expected 0 or 1; hardened mode off\n");
            sys::write_stderr(&l.buf[..l.len]);
        }
    }
}

#[cold]
fn init_env_heap_count() -> usize {
    let default = default_heap_count();
    // Copied out of the environment as it is read (no reference into `environ` is kept).
    let (n, bad) = match sys::getenv_copy(c"ARENA_ALLOC_HEAP_COUNT") {
        None => (default, None),
        Some(v) => match parse_env_value(v.bytes(), v.truncated()) {
            Ok(n) => (n, None),
            Err(_) => (default, Some(v)),
        },
    };
    // Racing first callers compute the same value; only the winner reports.
    match ENV_HEAP_COUNT.compare_exchange(0, n, Ordering::Relaxed, Ordering::Relaxed) {
        Ok(_) => {
            if let Some(v) = bad {
                report_invalid(v.bytes(), default);
            }
            n
        }
        Err(current) => current,
    }
}

/// A fixed-capacity byte buffer (no allocation: this runs inside `malloc`).
struct Line {
    buf: [u8; 192],
    len: usize,
}

impl Line {
    fn push(&mut self, bytes: &[u8]) {
        for &b in bytes {
            if self.len < self.buf.len() {
                self.buf[self.len] = b;
                self.len += 1;
            }
        }
    }
    fn push_num(&mut self, mut n: usize) {
        let mut digits = [0u8; 20];
        let mut i = digits.len();
        loop {
            i -= 1;
            digits[i] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        self.push(&digits[i..]);
    }
}

/// The stderr line for an invalid value (value truncated to 64 bytes).
pub(crate) fn invalid_line(value: &[u8], default: usize, out: &mut [u8; 192]) -> usize {
    let mut l = Line {
        buf: [0; 192],
        len: 0,
    };
    l.push(b"arena-alloc: ignoring ");
    l.push(HEAP_COUNT_ENV.as_bytes());
    l.push(b"=\"");
    l.push(&value[..value.len().min(64)]);
    l.push(b"\": not a number in 1..=");
    l.push_num(MAX_HEAP_COUNT);
    l.push(b"; using the default of ");
    l.push_num(default);
    l.push(b" heaps\n");
    *out = l.buf;
    l.len
}

fn report_invalid(value: &[u8], default: usize) {
    let mut buf = [0u8; 192];
    let len = invalid_line(value, default, &mut buf);
    sys::write_stderr(&buf[..len]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_valid_and_rejects_invalid() {
        assert_eq!(parse_heap_count(b"1"), Ok(1));
        assert_eq!(parse_heap_count(b"128"), Ok(128));
        assert_eq!(parse_heap_count(b"007"), Ok(7));
        assert_eq!(parse_heap_count(b"0"), Err(HeapCountError::OutOfRange));
        assert_eq!(parse_heap_count(b"129"), Err(HeapCountError::OutOfRange));
        assert_eq!(
            parse_heap_count(b"99999999999999999999999"),
            Err(HeapCountError::OutOfRange)
        );
        for bad in [&b""[..], b"abc", b"-1", b" 4", b"4 ", b"1e2", b"+3"] {
            assert_eq!(parse_heap_count(bad), Err(HeapCountError::NotANumber));
        }
    }

    #[test]
    fn truncated_values_are_rejected() {
        assert_eq!(parse_env_value(b"12", false), Ok(12));
        // 64 zeros followed by more bytes: only the zeros were copied.
        let zeros = [b'0'; 64];
        assert_eq!(
            parse_env_value(&zeros, true),
            Err(HeapCountError::OutOfRange)
        );
        assert_eq!(
            parse_env_value(b"abc", true),
            Err(HeapCountError::NotANumber)
        );
    }

    #[test]
    fn hardened_values() {
        assert_eq!(parse_hardened(b"1"), Some(true));
        assert_eq!(parse_hardened(b"0"), Some(false));
        assert_eq!(parse_hardened(b""), Some(false));
        assert_eq!(parse_hardened(b"yes"), None);
        assert_eq!(parse_hardened(b"11"), None);
    }

    #[test]
    fn invalid_line_text() {
        let mut buf = [0u8; 192];
        let n = invalid_line(b"abc", 2, &mut buf);
        assert_eq!(
            core::str::from_utf8(&buf[..n]).unwrap(),
            "arena-alloc: ignoring ARENA_ALLOC_HEAP_COUNT=\"abc\": not a number in 1..=128; \
             using the default of 2 heaps\n"
        );
        let long = [b'9'; 300];
        let n = invalid_line(&long, 16, &mut buf);
        assert!(n <= 192 && buf[n - 1] == b'\n');
    }
}
