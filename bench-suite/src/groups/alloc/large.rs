//! `malloc-large`: a port of mimalloc-bench's malloc-large (a fixed number of live buffers,
//! each iteration replaces a random one with a new buffer of random size and writes it)
//! with blocks of [`LARGE_MIN`] to [`LARGE_MAX`], arena-alloc's large-block range (its
//! span heap starts above `SMALL_MAX`, 128 KiB). The original uses 5-25 MiB buffers and
//! writes every byte; this port writes one byte per 4 KiB page (and the last byte), so it
//! measures the allocator and its page faults rather than `memset`.

use std::alloc::{GlobalAlloc, Layout};

use super::kernels::{KResult, Outcome, Rng};

/// Smallest block of the port.
pub const LARGE_MIN: usize = 64 << 10;
/// Largest block of the port.
pub const LARGE_MAX: usize = 4 << 20;
/// Bytes between two written bytes of a block (the OS page).
const STRIDE: usize = 4096;

/// Parameters of [`malloc_large`].
#[derive(Clone, Copy, Debug)]
pub struct Large {
    /// Live buffers per thread (the original: 20).
    pub slots: usize,
    /// Replacements per thread (the original: 2,000).
    pub iterations: u64,
}

/// One thread's sequence: for each iteration, (slot, size, stamp).
fn plan(t: usize, p: &Large) -> impl Iterator<Item = (usize, usize, u8)> {
    let mut r = Rng::new(7000 + t as u64);
    (0..p.iterations).map(move |i| {
        let slot = (r.draw() % p.slots as u64) as usize;
        let size = LARGE_MIN + (r.draw() % (LARGE_MAX - LARGE_MIN + 1) as u64) as usize;
        (slot, size, (i as u8) ^ (t as u8).wrapping_mul(31) | 1)
    })
}

/// Bytes written into a block of `size` bytes.
fn written(size: usize) -> u64 {
    (size.div_ceil(STRIDE) + 1) as u64
}

/// Checks a block's stamps, frees it; the checksum part: stamp x bytes written.
fn check_free<A: GlobalAlloc>(a: &A, (p, size, stamp): (*mut u8, usize, u8)) -> KResult<u64> {
    let mut off = 0;
    while off < size {
        // SAFETY: `p` holds `size` bytes, written below at every STRIDE.
        if unsafe { p.wrapping_add(off).read_volatile() } != stamp {
            return Err(format!(
                "malloc-large: block of {size} bytes lost its stamp at {off}"
            ));
        }
        off += STRIDE;
    }
    // SAFETY: as above.
    if unsafe { p.wrapping_add(size - 1).read_volatile() } != stamp {
        return Err(format!(
            "malloc-large: block of {size} bytes lost its last byte"
        ));
    }
    let l = Layout::from_size_align(size, 16).map_err(|e| e.to_string())?;
    // SAFETY: allocated by `a` with this layout in `large_thread`.
    unsafe { a.dealloc(p, l) };
    Ok(u64::from(stamp) * written(size))
}

fn large_thread<A: GlobalAlloc>(a: &A, t: usize, p: &Large) -> KResult<u64> {
    let mut slots: Vec<Option<(*mut u8, usize, u8)>> = vec![None; p.slots];
    let mut sum = 0u64;
    for (slot, size, stamp) in plan(t, p) {
        let l = Layout::from_size_align(size, 16).map_err(|e| e.to_string())?;
        // SAFETY: non-zero size.
        let q = unsafe { a.alloc(l) };
        if q.is_null() {
            return Err(format!("malloc-large: allocation of {size} bytes failed"));
        }
        let mut off = 0;
        while off < size {
            // SAFETY: `q` holds `size` bytes.
            unsafe { q.wrapping_add(off).write_volatile(stamp) };
            off += STRIDE;
        }
        // SAFETY: as above.
        unsafe { q.wrapping_add(size - 1).write_volatile(stamp) };
        // As `buffers[i] = make_unique(...)`: the new block exists before the old is freed.
        if let Some(old) = slots[slot].replace((q, size, stamp)) {
            sum = sum.wrapping_add(check_free(a, old)?);
        }
    }
    for old in slots.into_iter().flatten() {
        sum = sum.wrapping_add(check_free(a, old)?);
    }
    Ok(sum)
}

/// Runs the port on `threads` threads (each its own buffers). Operations: replacements.
pub fn malloc_large<A: GlobalAlloc + Sync>(a: &A, threads: usize, p: Large) -> KResult {
    if p.slots == 0 {
        return Err("malloc-large needs at least one slot".into());
    }
    let sums: Vec<KResult<u64>> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..threads)
            .map(|t| s.spawn(move || large_thread(a, t, &p)))
            .collect();
        hs.into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err("a thread panicked".into())))
            .collect()
    });
    let mut checksum = 0u64;
    for s in sums {
        checksum = checksum.wrapping_add(s?);
    }
    Ok(Outcome {
        ops: threads as u64 * p.iterations,
        checksum,
    })
}

/// The checksum [`malloc_large`] must give: every block is freed once, with its stamp.
pub fn malloc_large_expected(threads: usize, p: &Large) -> u64 {
    (0..threads)
        .flat_map(|t| plan(t, p).map(|(_, size, stamp)| u64::from(stamp) * written(size)))
        .fold(0, u64::wrapping_add)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::alloc::System;

    #[test]
    fn port_checks_its_answer() {
        let p = Large {
            slots: 4,
            iterations: 30,
        };
        let o = malloc_large(&System, 2, p).unwrap();
        assert_eq!(o.ops, 60);
        assert_eq!(o.checksum, malloc_large_expected(2, &p));
        assert!(
            plan(0, &p).all(|(s, n, st)| s < 4 && (LARGE_MIN..=LARGE_MAX).contains(&n) && st != 0)
        );
    }
}
