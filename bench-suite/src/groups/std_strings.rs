//! `std`: the standard library's owned string types at the documented string lengths.
//!
//! The floor every string layout is compared with: `String` (24-byte handle, exact-size
//! heap buffer), `Box<str>` (16-byte handle) and `Arc<str>` (16-byte handle, 16-byte
//! refcount header). Vectors of 16,384 strings, as in the lean-string seed's
//! `heap_layout` benchmark.

use std::sync::Arc;

use crate::measure::{BenchResult, Case, Ctx, Instrument};

use super::group::Group;

/// The group.
pub const GROUP: Group = Group {
    name: "std",
    about: "String, Box<str>, Arc<str>: construct and clone+drop 16,384 strings per length",
    run,
    claims: &[],
    ab_claims: &[],
};

/// Strings per vector (the seed's `heap_layout` size).
pub const VECTOR_LEN: usize = 16_384;

/// The lengths swept: both sides of a 16-byte inline capacity and of the allocator's
/// 16-byte size-class steps (design note `lean-string.md`).
pub const LENGTHS: [usize; 12] = [0, 8, 11, 12, 13, 15, 16, 17, 24, 32, 48, 64];

/// Extra lengths in full mode.
pub const FULL_LENGTHS: [usize; 2] = [128, 1024];

/// `n` distinct ASCII strings of length `len` (distinct where `len` allows it).
pub fn sources(len: usize, n: usize) -> Vec<String> {
    (0..n)
        .map(|i| {
            let mut s: String = (0..len)
                .map(|j| (b'a' + ((i * 7 + j) % 26) as u8) as char)
                .collect();
            if len >= 4 {
                let tag = format!("{:04x}", i % 0x10000);
                s.replace_range(len - 4.., &tag);
            }
            s
        })
        .collect()
}

/// Sum of the lengths of a vector of strings: the self-check of every case here.
fn total_len<S: AsRef<str>>(v: &[S]) -> usize {
    v.iter().map(|s| s.as_ref().len()).sum()
}

fn one<S: AsRef<str> + Clone>(
    ctx: &mut Ctx<'_>,
    name: &str,
    len: usize,
    src: &[String],
    make: impl Fn(&str) -> S + Copy,
) -> BenchResult {
    let n = src.len() as u64;
    let expect = len * src.len();
    let check = |v: &Vec<S>| {
        let got = total_len(v);
        if got == expect {
            Ok(())
        } else {
            Err(format!("total length {got}, expected {expect}"))
        }
    };
    if ctx.wants(Instrument::Time) {
        let case = Case::new("construct", name, "len", len as u64).baseline("String");
        ctx.time(
            &case,
            n,
            || Vec::with_capacity(src.len()),
            |mut v: Vec<S>| {
                v.extend(src.iter().map(|s| make(s)));
                v
            },
            check,
        )?;
        let case = Case::new("clone+drop", name, "len", len as u64).baseline("String");
        let built: Vec<S> = src.iter().map(|s| make(s)).collect();
        ctx.time(&case, n, || (), |()| built.to_vec(), check)?;
    }
    if ctx.wants(Instrument::Memory) {
        let case = Case::new("construct", name, "len", len as u64).baseline("String");
        // The vector's own buffer is allocated before counting starts; moving it into the
        // closure allocates nothing, so only the strings are counted.
        let v: Vec<S> = Vec::with_capacity(src.len());
        ctx.memory(
            &case,
            n,
            move || {
                let mut v = v;
                v.extend(src.iter().map(|s| make(s)));
                v
            },
            check,
        )?;
    }
    Ok(())
}

fn run(ctx: &mut Ctx<'_>) -> BenchResult {
    let mut lengths = LENGTHS.to_vec();
    if ctx.full() {
        lengths.extend(FULL_LENGTHS);
    }
    for len in lengths {
        let src = sources(len, VECTOR_LEN);
        one::<String>(ctx, "String", len, &src, |s| s.into())?;
        one::<Box<str>>(ctx, "Box<str>", len, &src, |s| s.into())?;
        one::<Arc<str>>(ctx, "Arc<str>", len, &src, |s| s.into())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_have_the_asked_length_and_are_mostly_distinct() {
        for len in LENGTHS {
            let s = sources(len, 100);
            assert!(s.iter().all(|x| x.len() == len));
            if len >= 4 {
                let mut d = s.clone();
                d.sort();
                d.dedup();
                assert_eq!(d.len(), 100, "len {len}");
            }
        }
    }
}
