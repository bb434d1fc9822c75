//! Size classes: pure arithmetic, no unsafe (runs under Miri).
//!
//! Classes 0-7 are 16..=128 in steps of 16; above 128 every power-of-two interval
//! `(2^k, 2^(k+1)]` is cut into four equal steps (`2^k * 5/4, 6/4, 7/4, 8/4`), up to
//! [`SMALL_MAX`]. Every class is a multiple of 16, and a class `m * 2^j` (odd `m`) holds
//! blocks aligned to `2^j` because pages are [`crate::tuning::PAGE_SIZE`]-aligned.

/// Largest size served from size classes; larger requests are mapped directly.
pub const SMALL_MAX: usize = 128 * 1024;
/// Number of size classes.
pub const NUM_CLASSES: usize = 48;
/// Smallest block (also the minimum alignment of every block).
pub const MIN_BLOCK: usize = 16;

const fn compute_class_size(i: usize) -> usize {
    if i < 8 {
        (i + 1) * 16
    } else {
        let k = 7 + (i - 8) / 4;
        let step = (i - 8) % 4;
        (1 << k) + (step + 1) * (1 << (k - 2))
    }
}

const fn build_table() -> [u32; NUM_CLASSES] {
    let mut t = [0u32; NUM_CLASSES];
    let mut i = 0;
    while i < NUM_CLASSES {
        t[i] = compute_class_size(i) as u32;
        i += 1;
    }
    t
}

/// Block size of every class.
pub const CLASS_SIZES: [u32; NUM_CLASSES] = build_table();

const _: () = {
    assert!(CLASS_SIZES[NUM_CLASSES - 1] as usize == SMALL_MAX);
    assert!(CLASS_SIZES[0] as usize == MIN_BLOCK);
    let mut i = 1;
    while i < NUM_CLASSES {
        assert!(CLASS_SIZES[i] > CLASS_SIZES[i - 1]);
        assert!(CLASS_SIZES[i].is_multiple_of(16));
        i += 1;
    }
};

/// Block size of class `class`.
#[inline]
pub const fn class_size(class: usize) -> usize {
    CLASS_SIZES[class] as usize
}

/// The smallest class holding `size` bytes (`size <= SMALL_MAX`; 0 is treated as 1).
#[inline]
pub const fn class_of(size: usize) -> usize {
    if size <= 128 {
        size.saturating_sub(1) >> 4
    } else {
        let s = size - 1;
        let k = (usize::BITS - 1 - s.leading_zeros()) as usize;
        8 + (k - 7) * 4 + ((s >> (k - 2)) & 3)
    }
}

/// The size class of a block of `size > SMALL_MAX` bytes in the huge heap's large
/// segments: as below `SMALL_MAX`, four classes per doubling (`size` rounded up to a
/// multiple of a quarter of the power of two below it), so at most 25% over the request.
pub const fn large_class_size(size: usize) -> usize {
    debug_assert!(size > SMALL_MAX);
    let k = usize::BITS - 1 - (size - 1).leading_zeros();
    let quarter = 1usize << (k - 2);
    (size + quarter - 1) & !(quarter - 1)
}

/// Largest size `class_of_lut` serves: sizes up to here take a table lookup instead of
/// the arithmetic of [`class_of`] (every class up to it is a multiple of 16).
pub const LUT_MAX: usize = 1024;

const fn build_lut() -> [u8; LUT_MAX / 16 + 1] {
    let mut t = [0u8; LUT_MAX / 16 + 1];
    let mut i = 0;
    while i < t.len() {
        // Index `i` stands for sizes `16 * (i - 1) + 1 ..= 16 * i`.
        t[i] = class_of(i * 16) as u8;
        i += 1;
    }
    t
}

const CLASS_LUT: [u8; LUT_MAX / 16 + 1] = build_lut();

const _: () = {
    assert!(class_of(LUT_MAX) < 256);
    // Every class boundary up to LUT_MAX is a multiple of 16, so one entry per 16 bytes
    // is exact.
    let mut c = 0;
    while class_size(c) <= LUT_MAX {
        assert!(class_size(c).is_multiple_of(16));
        c += 1;
    }
};

/// [`class_of`] for `size <= LUT_MAX`, by table (0 is treated as 1).
#[inline]
pub const fn class_of_lut(size: usize) -> usize {
    CLASS_LUT[size.div_ceil(16)] as usize
}

/// Requests above this many bytes, up to [`POW2_MAX`], are served by power-of-two classes
/// only (16 KiB and 32 KiB): see [`served_class`].
pub const POW2_MIN: usize = 8 * 1024;
/// Largest request served by a power-of-two class only (see [`POW2_MIN`]).
pub const POW2_MAX: usize = 32 * 1024;

const _: () = {
    assert!(POW2_MIN.is_power_of_two() && POW2_MAX.is_power_of_two());
    assert!(POW2_MIN < POW2_MAX && POW2_MAX <= SMALL_MAX);
    // Both bounds are class sizes, so each class lies wholly inside or outside the range.
    assert!(class_size(class_of(POW2_MIN)) == POW2_MIN);
    assert!(class_size(class_of(POW2_MAX)) == POW2_MAX);
    // The hit path's table (`class_of_lut`) skips `served_class`: it must stay below.
    assert!(LUT_MAX <= POW2_MIN);
};

/// The class that serves requests which fit class `c`: `c` itself, except for the classes
/// in `(POW2_MIN, POW2_MAX]`, whose requests go to the next power-of-two class (10, 12 and
/// 14 KiB to 16 KiB; 20-28 KiB to 32 KiB). Memory a class frees is reused only by that
/// class until its page empties, so few classes in this range let a freed block serve
/// requests of other sizes (espresso makes 44,600 requests of 8-32 KiB); the pages of a
/// block a request does not reach are never touched. A power-of-two class is a multiple of
/// every alignment the classes it replaces are multiples of.
#[inline]
pub const fn served_class(c: usize) -> usize {
    let size = class_size(c);
    if size > POW2_MIN && size <= POW2_MAX {
        class_of(size.next_power_of_two())
    } else {
        c
    }
}

/// The class for a request of `size` bytes aligned to `align` (a power of two), or `None`
/// when it must be mapped directly (too big, or aligned beyond every class).
#[inline]
pub const fn class_for(size: usize, align: usize) -> Option<usize> {
    if align <= MIN_BLOCK {
        if size <= SMALL_MAX {
            Some(served_class(class_of(size)))
        } else {
            None
        }
    } else {
        match class_for_aligned(size, align) {
            Some(c) => Some(served_class(c)),
            None => None,
        }
    }
}

const fn class_for_aligned(size: usize, align: usize) -> Option<usize> {
    let need = if size > align { size } else { align };
    if need > SMALL_MAX {
        return None;
    }
    let mut c = class_of(need);
    while c < NUM_CLASSES {
        if class_size(c).is_multiple_of(align) {
            return Some(c);
        }
        c += 1;
    }
    None
}

/// Worst-case internal waste of class `class`, in per mille of its block size: the
/// smallest request that lands in it is one byte more than the previous class.
pub const fn worst_case_waste_permille(class: usize) -> usize {
    let smallest = if class == 0 {
        1
    } else {
        class_size(class - 1) + 1
    };
    (class_size(class) - smallest) * 1000 / class_size(class)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn class_of_is_smallest_fitting_class() {
        let step = if cfg!(miri) { 61 } else { 1 };
        let mut size = 1;
        while size <= SMALL_MAX {
            let c = class_of(size);
            assert!(class_size(c) >= size, "size {size}");
            if c > 0 {
                assert!(class_size(c - 1) < size, "size {size}");
            }
            size += step;
        }
        assert_eq!(class_of(0), 0);
    }

    #[test]
    fn lut_matches_class_of() {
        for size in 0..=LUT_MAX {
            assert_eq!(class_of_lut(size), class_of(size), "size {size}");
        }
    }

    #[test]
    fn aligned_classes_are_multiples() {
        let mut align = 1;
        while align <= 2 * SMALL_MAX {
            for size in [1, 7, 16, 100, 1000, 5000, 40_000, SMALL_MAX] {
                match class_for(size, align) {
                    Some(c) => {
                        assert!(class_size(c) >= size);
                        assert_eq!(class_size(c) % align.max(1), 0);
                    }
                    None => assert!(size.max(align) > SMALL_MAX),
                }
            }
            align *= 2;
        }
    }

    #[test]
    fn served_classes() {
        let mut size = 1;
        while size <= SMALL_MAX {
            let plain = class_of(size);
            let c = class_for(size, 1).unwrap();
            assert!(class_size(c) >= size, "size {size}");
            if size > POW2_MIN && size <= POW2_MAX {
                assert!(class_size(c).is_power_of_two(), "size {size}");
                assert!(class_size(c) < 2 * size, "size {size}");
            } else {
                assert_eq!(c, plain, "size {size}");
            }
            size += if cfg!(miri) { 97 } else { 1 };
        }
        // The classes the range replaces serve no request.
        assert_eq!(class_for(POW2_MIN + 1, 1), Some(class_of(16 * 1024)));
        assert_eq!(class_for(12 * 1024, 4096), Some(class_of(16 * 1024)));
        assert_eq!(class_for(20 * 1024, 16), Some(class_of(POW2_MAX)));
        assert_eq!(class_for(POW2_MIN, 1), Some(class_of(POW2_MIN)));
        assert_eq!(class_for(POW2_MAX + 1, 1), Some(class_of(POW2_MAX + 1)));
    }

    #[test]
    fn large_classes_continue_the_small_ones() {
        assert_eq!(large_class_size(SMALL_MAX + 1), 160 << 10);
        assert_eq!(large_class_size(200_000), 224 << 10);
        assert_eq!(large_class_size(1 << 20), 1 << 20);
        assert_eq!(large_class_size((1 << 20) + 1), 1280 << 10);
        let mut size = SMALL_MAX + 1;
        while size < 64 << 20 {
            let c = large_class_size(size);
            assert!(c >= size && c - size < size / 4, "size {size}");
            size += if cfg!(miri) { 99_991 } else { 997 };
        }
    }

    #[test]
    fn waste_bounded() {
        for c in 8..NUM_CLASSES {
            assert!(worst_case_waste_permille(c) < 250, "class {c}");
        }
    }
}
