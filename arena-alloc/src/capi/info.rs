//! What glibc's introspection calls report, from the allocator's statistics:
//! `mallinfo`/`mallinfo2`, `malloc_stats` (per-arena figures on stderr) and `malloc_info`
//! (XML). Nothing here allocates: text is built in a stack buffer and written out in
//! pieces.

use crate::config::MAX_HEAP_COUNT;
use crate::huge::{self, HugeUsage};
use crate::{ArenaStats, arena_stats, sys};
use core::ffi::{c_int, c_void};

/// glibc's `struct mallinfo` (`int` fields; figures above `INT_MAX` saturate).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MallInfo {
    /// Bytes obtained from the OS other than live direct mappings: small and large
    /// segments, and freed mappings kept for reuse.
    pub arena: c_int,
    /// Free chunks (no counterpart: 0).
    pub ordblks: c_int,
    /// Free fastbin blocks (no counterpart: 0).
    pub smblks: c_int,
    /// Live direct mappings (huge blocks with a mapping of their own).
    pub hblks: c_int,
    /// Bytes in them.
    pub hblkhd: c_int,
    /// Always 0 (as in glibc).
    pub usmblks: c_int,
    /// Bytes in fastbin blocks (no counterpart: 0).
    pub fsmblks: c_int,
    /// Bytes of live blocks outside direct mappings (thread-cached blocks count as live).
    pub uordblks: c_int,
    /// `arena - uordblks`.
    pub fordblks: c_int,
    /// Bytes `malloc_trim` could release at once: free resident extent units and freed
    /// mappings kept for reuse.
    pub keepcost: c_int,
}

/// glibc's `struct mallinfo2` (`size_t` fields, same meaning as [`MallInfo`]).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MallInfo2 {
    /// See [`MallInfo::arena`].
    pub arena: usize,
    /// See [`MallInfo::ordblks`].
    pub ordblks: usize,
    /// See [`MallInfo::smblks`].
    pub smblks: usize,
    /// See [`MallInfo::hblks`].
    pub hblks: usize,
    /// See [`MallInfo::hblkhd`].
    pub hblkhd: usize,
    /// See [`MallInfo::usmblks`].
    pub usmblks: usize,
    /// See [`MallInfo::fsmblks`].
    pub fsmblks: usize,
    /// See [`MallInfo::uordblks`].
    pub uordblks: usize,
    /// See [`MallInfo::fordblks`].
    pub fordblks: usize,
    /// See [`MallInfo::keepcost`].
    pub keepcost: usize,
}

/// Per-arena and total statistics at one moment.
struct Snapshot {
    arenas: [ArenaStats; MAX_HEAP_COUNT],
    total: ArenaStats,
    huge: HugeUsage,
}

fn snapshot() -> Snapshot {
    let mut s = Snapshot {
        arenas: [ArenaStats::default(); MAX_HEAP_COUNT],
        total: ArenaStats::default(),
        huge: huge::usage(),
    };
    for (i, a) in s.arenas.iter_mut().enumerate() {
        if let Some(st) = arena_stats(i) {
            *a = st;
            s.total.add(&st);
        }
    }
    s
}

fn info2(s: &Snapshot) -> MallInfo2 {
    let arena = s.total.segment_bytes + s.huge.segment_bytes + s.huge.cached_bytes;
    let uord = s.total.bytes_in_use.saturating_sub(s.huge.direct_bytes);
    MallInfo2 {
        arena,
        ordblks: 0,
        smblks: 0,
        hblks: s.huge.direct_count,
        hblkhd: s.huge.direct_bytes,
        usmblks: 0,
        fsmblks: 0,
        uordblks: uord,
        fordblks: arena.saturating_sub(uord),
        keepcost: s.huge.free_dirty,
    }
}

/// `mallinfo2`.
#[unsafe(no_mangle)]
pub extern "C" fn mallinfo2() -> MallInfo2 {
    info2(&snapshot())
}

/// `mallinfo` (deprecated in glibc for its `int` fields; they saturate here).
#[unsafe(no_mangle)]
pub extern "C" fn mallinfo() -> MallInfo {
    let m = mallinfo2();
    let c = |v: usize| c_int::try_from(v).unwrap_or(c_int::MAX);
    MallInfo {
        arena: c(m.arena),
        ordblks: c(m.ordblks),
        smblks: c(m.smblks),
        hblks: c(m.hblks),
        hblkhd: c(m.hblkhd),
        usmblks: c(m.usmblks),
        fsmblks: c(m.fsmblks),
        uordblks: c(m.uordblks),
        fordblks: c(m.fordblks),
        keepcost: c(m.keepcost),
    }
}

/// glibc's `__libc_mallinfo`.
#[unsafe(no_mangle)]
pub extern "C" fn __libc_mallinfo() -> MallInfo {
    mallinfo()
}

/// Text built in a stack buffer and handed to `sink` whenever it fills.
struct Out<F: FnMut(&[u8])> {
    buf: [u8; 512],
    len: usize,
    sink: F,
}

impl<F: FnMut(&[u8])> Out<F> {
    fn new(sink: F) -> Self {
        Self {
            buf: [0; 512],
            len: 0,
            sink,
        }
    }

    fn s(&mut self, text: &str) -> &mut Self {
        for &b in text.as_bytes() {
            if self.len == self.buf.len() {
                self.flush();
            }
            self.buf[self.len] = b;
            self.len += 1;
        }
        self
    }

    fn n(&mut self, mut v: u64) -> &mut Self {
        let mut d = [0u8; 20];
        let mut i = d.len();
        loop {
            i -= 1;
            d[i] = b'0' + (v % 10) as u8;
            v /= 10;
            if v == 0 {
                break;
            }
        }
        // Digits are ASCII.
        self.s(core::str::from_utf8(&d[i..]).unwrap_or("?"))
    }

    /// `name = value` with the value right-aligned in 12 columns, as glibc prints it.
    fn row(&mut self, name: &str, v: u64) -> &mut Self {
        self.s(name);
        for _ in name.len()..17 {
            self.s(" ");
        }
        self.s("= ");
        let mut digits = 1;
        let mut t = v;
        while t >= 10 {
            t /= 10;
            digits += 1;
        }
        for _ in digits..12 {
            self.s(" ");
        }
        self.n(v).s("\n")
    }

    fn flush(&mut self) {
        (self.sink)(&self.buf[..self.len]);
        self.len = 0;
    }
}

fn used(a: &ArenaStats) -> bool {
    a.allocations != 0 || a.segment_bytes != 0
}

/// `malloc_stats`: per-arena figures, then totals, on stderr.
#[unsafe(no_mangle)]
pub extern "C" fn malloc_stats() {
    let s = snapshot();
    let m = info2(&s);
    let mut o = Out::new(sys::write_stderr);
    for (i, a) in s.arenas.iter().enumerate().filter(|(_, a)| used(a)) {
        o.s("Arena ").n(i as u64).s(":\n");
        o.row("system bytes", a.segment_bytes as u64);
        o.row("in use bytes", a.bytes_in_use as u64);
        o.row("live blocks", a.live_allocations());
        o.row("allocations", a.allocations);
        o.row("remote frees", a.remote_frees);
        o.row("contended locks", a.contended_locks);
        o.row("huge blocks", a.huge_allocations);
        o.row("huge bytes", a.huge_bytes_in_use as u64);
    }
    o.s("Total (incl. mmap):\n");
    o.row("system bytes", (m.arena + m.hblkhd) as u64);
    o.row("in use bytes", (m.uordblks + m.hblkhd) as u64);
    o.row("mmap regions", m.hblks as u64);
    o.row("mmap bytes", m.hblkhd as u64);
    o.row("large segments", s.huge.segments as u64);
    o.row("free dirty bytes", s.huge.free_dirty as u64);
    o.flush();
}

/// `malloc_info`: the statistics as XML on `fp` (`options` must be 0: else `EINVAL`, as in
/// glibc); 0 on success.
///
/// # Safety
/// `fp` is an open `FILE *` stream.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn malloc_info(options: c_int, fp: *mut libc::FILE) -> c_int {
    if options != 0 {
        return libc::EINVAL;
    }
    let s = snapshot();
    let m = info2(&s);
    let mut o = Out::new(|b: &[u8]| {
        // SAFETY: the caller passes an open stream; `b` is a readable buffer.
        unsafe { libc::fwrite(b.as_ptr().cast::<c_void>(), 1, b.len(), fp) };
    });
    o.s("<malloc version=\"1\" allocator=\"arena-alloc\">\n");
    for (i, a) in s.arenas.iter().enumerate().filter(|(_, a)| used(a)) {
        let small_live = a.live_allocations();
        let h = huge::counters(i);
        let huge_live = h.allocs.wrapping_sub(h.frees);
        o.s("<heap nr=\"").n(i as u64).s("\">\n");
        o.s("<total type=\"small\" count=\"")
            .n(small_live.wrapping_sub(huge_live))
            .s("\" size=\"")
            .n((a.bytes_in_use - a.huge_bytes_in_use) as u64)
            .s("\"/>\n");
        o.s("<total type=\"huge\" count=\"")
            .n(huge_live)
            .s("\" size=\"")
            .n(a.huge_bytes_in_use as u64)
            .s("\"/>\n");
        o.s("<counters allocations=\"")
            .n(a.allocations)
            .s("\" frees=\"")
            .n(a.frees)
            .s("\" remote_frees=\"")
            .n(a.remote_frees)
            .s("\" contended_locks=\"")
            .n(a.contended_locks)
            .s("\"/>\n");
        o.s("<system type=\"current\" size=\"")
            .n(a.segment_bytes as u64)
            .s("\"/>\n");
        o.s("</heap>\n");
    }
    o.s("<total type=\"mmap\" count=\"")
        .n(m.hblks as u64)
        .s("\" size=\"")
        .n(m.hblkhd as u64)
        .s("\"/>\n");
    o.s("<total type=\"large\" size=\"")
        .n((s.huge.live_bytes - s.huge.direct_bytes) as u64)
        .s("\" free_dirty=\"")
        .n(s.huge.free_dirty as u64)
        .s("\"/>\n");
    o.s("<system type=\"current\" size=\"")
        .n((m.arena + m.hblkhd) as u64)
        .s("\"/>\n");
    o.s("<aspace type=\"total\" size=\"")
        .n((s.total.segment_bytes + s.huge.segment_bytes + s.huge.cached_bytes + m.hblkhd) as u64)
        .s("\"/>\n");
    o.s("</malloc>\n");
    o.flush();
    0
}
