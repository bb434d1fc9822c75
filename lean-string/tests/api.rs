//! Public API behaviour beyond the model tests: representations, conversions, traits.

use std::collections::HashMap;
use std::ffi::CStr;

use lean_string::{
    INLINE_CAPACITY, LeanCString, LeanStr, LeanString, ToLeanStr, ToLeanString, WideLeanString,
};

#[test]
fn sizes() {
    use std::mem::size_of;
    assert_eq!(size_of::<LeanString>(), 2 * size_of::<usize>());
    assert_eq!(size_of::<Option<LeanString>>(), 2 * size_of::<usize>());
    assert_eq!(size_of::<LeanStr>(), 2 * size_of::<usize>());
    assert_eq!(size_of::<Option<LeanCString>>(), 2 * size_of::<usize>());
}

#[test]
fn every_inline_length_round_trips() {
    let src = "abcdefghijklmnopqrstuvwxyz";
    for n in 0..=src.len() {
        let s = LeanString::from(&src[..n]);
        assert_eq!(s.as_str(), &src[..n]);
        assert_eq!(s.len(), n);
        assert_eq!(s.is_heap_allocated(), n > INLINE_CAPACITY, "len {n}");
        let t = LeanStr::from(&src[..n]);
        assert_eq!(t.as_str(), &src[..n]);
        if n < INLINE_CAPACITY {
            let c = LeanCString::try_from(&src[..n]).unwrap();
            assert_eq!(c.as_str(), &src[..n]);
            assert_eq!(c.as_c_str().to_bytes(), &src.as_bytes()[..n]);
        }
    }
}

#[test]
fn full_inline_string_with_multibyte_tail() {
    // The last inline byte is data: a continuation byte must decode as a full string.
    let s = "abcdefghijklmn\u{e9}"; // 14 + 2 = 16 bytes on 64-bit
    let l = LeanString::from(s);
    assert_eq!(l, s);
    let mut m = l.clone();
    m.push('x');
    assert_eq!(m, format!("{s}x"));
    assert_eq!(l, s);
}

#[test]
fn static_strings() {
    static S: LeanString = LeanString::from_static_str("a static string longer than sixteen");
    const LEN: usize = S.len();
    const STR: &str = S.as_str();
    assert_eq!(STR.len(), LEN);
    assert_eq!(LEN, 35);
    assert_eq!(
        S.as_static_str(),
        Some("a static string longer than sixteen")
    );
    assert!(!S.is_heap_allocated());
    let mut m = S.clone();
    m.push('!');
    assert!(m.is_heap_allocated());
    assert_eq!(S, "a static string longer than sixteen");
    assert_eq!(m, "a static string longer than sixteen!");
    // Short static strings are stored inline, as in lean_string.
    let st = LeanStr::from_static_str("x");
    assert_eq!((st.as_static_str(), st.as_str()), (None, "x"));
    let full: &'static str = &"sixteen bytes ok"[..lean_string::INLINE_CAPACITY];
    let short = LeanString::from_static_str(full);
    assert_eq!(short.as_static_str(), None);
    assert_eq!(short.capacity(), lean_string::INLINE_CAPACITY);
}

#[test]
fn clone_shares_heap_buffer_and_cow_unshares() {
    let a = LeanString::from("this string is stored on the heap");
    let mut b = a.clone();
    assert_eq!(a.as_ptr(), b.as_ptr());
    b.push_str("!");
    assert_ne!(a.as_ptr(), b.as_ptr());
    assert_eq!(a, "this string is stored on the heap");
    assert_eq!(b, "this string is stored on the heap!");
}

#[test]
fn wide_policy_and_conversions() {
    let w = WideLeanString::from("forced wide heap string, thirty+");
    assert!(w.uses_wide_header());
    let c = LeanString::from("compact heap string, thirty bytes+");
    assert!(!c.uses_wide_header());
    let ls: LeanStr = c.clone().into_lean_str();
    assert_eq!(ls, c);
    let back = ls.into_lean_string();
    assert_eq!(back, c);
    let inline = LeanString::from("short");
    assert_eq!(inline.clone().into_lean_str(), "short");
}

#[test]
fn traits_and_to_lean_string() {
    let mut m = HashMap::new();
    m.insert(LeanString::from("key"), 1);
    assert_eq!(m.get("key"), Some(&1));
    assert_eq!(42.to_lean_string(), "42");
    assert_eq!("abc".to_lean_string(), "abc");
    assert_eq!(3.5f64.to_lean_str(), "3.5");
    let s: LeanString = "a".parse().unwrap();
    assert_eq!(s + "b", "ab");
    let mut t = LeanString::from("x");
    t += "y";
    use std::fmt::Write;
    write!(t, "{}", 7).unwrap();
    assert_eq!(t, "xy7");
    let col: LeanString = ["ab", "cd"].into_iter().collect();
    assert_eq!(col, "abcd");
    let (a, b) = (LeanString::from("a"), LeanString::from("b"));
    assert!(a < b);
    assert_eq!(format!("{:?}", LeanString::from("q")), "\"q\"");
    assert_eq!(LeanString::from_utf16(&[0x68, 0x69]).unwrap(), "hi");
    assert!(LeanString::from_utf16(&[0xD800]).is_err());
    assert_eq!(LeanString::from_utf8_lossy(b"a\xffb"), "a\u{fffd}b");
    assert_eq!(LeanString::from("abc").repeat(3), "abcabcabc");
}

#[test]
fn cstring_nul_handling() {
    let full = LeanCString::try_from("123456789012345").unwrap(); // 15 on 64-bit
    assert_eq!(full.as_bytes_with_nul().last(), Some(&0));
    // SAFETY: as_ptr points at a NUL-terminated string owned by `full`.
    let back = unsafe { CStr::from_ptr(full.as_ptr()) };
    assert_eq!(back.to_bytes(), b"123456789012345");
    let err = LeanCString::try_from("ab\0cd").unwrap_err();
    assert_eq!(err.nul_position(), 2);
    assert!(err.to_string().contains("position: 2"), "{err}");
    let mut s = LeanCString::try_from("abc").unwrap();
    assert_eq!(s.push_str("d\0e").unwrap_err().nul_position(), 1);
    assert_eq!(s, "abc");
    assert!(s.push('\0').is_err());
    s.push_str("defghijklmnopqrstuvwxyz").unwrap();
    assert!(s.is_heap_allocated());
    assert_eq!(s.as_c_str().to_str().unwrap(), "abcdefghijklmnopqrstuvwxyz");
    let st = LeanCString::from_static_c_str(c"static c string").unwrap();
    assert_eq!(st.as_c_str(), c"static c string");
    assert!(LeanCString::from_c_str(c"\xff").is_err());
}

#[test]
fn cstring_mutators() {
    let mut s = LeanCString::with_capacity(40);
    assert!(s.is_heap_allocated() && s.capacity() >= 40 && s.is_empty());
    s.push_str("h\u{e9}llo").unwrap();
    s.shrink_to(4);
    assert!(!s.is_heap_allocated(), "a short string moves inline");
    // insert / insert_str: a NUL is rejected with its position in the input, unchanged.
    assert_eq!(s.insert(1, '\0').unwrap_err().nul_position(), 0);
    assert_eq!(s.insert_str(3, "xy\0z").unwrap_err().nul_position(), 2);
    assert_eq!(s, "h\u{e9}llo");
    s.insert(0, '>').unwrap();
    s.insert_str(s.len(), ", world and more").unwrap(); // crosses inline -> heap
    assert_eq!(s, ">h\u{e9}llo, world and more");
    assert!(s.is_heap_allocated());
    let shared = s.clone();
    assert_eq!(s.remove(2), '\u{e9}');
    s.retain(|c| c != 'o');
    assert_eq!(s, ">hll, wrld and mre");
    assert_eq!(shared, ">h\u{e9}llo, world and more", "clone-on-write");
    let tail = s.split_off(4);
    assert_eq!(
        (s.as_c_str(), tail.as_c_str()),
        (c">hll", c", wrld and mre")
    );
    assert_eq!(tail.repeat(2).as_c_str(), c", wrld and mre, wrld and mre");
    // A heap string shrinking inline by `retain` keeps the inline zero invariant.
    let mut t = LeanCString::try_from("abcdefghijklmnopqrstuvwxyz").unwrap();
    t.retain(|c| c < 'f');
    t.shrink_to_fit();
    assert_eq!(t.as_bytes_with_nul(), b"abcde\0");
    t.remove(0);
    t.insert_str(4, "0123456789").unwrap();
    assert_eq!(t.as_c_str(), c"bcde0123456789");
    // Static strings are copied before mutation.
    let mut st = LeanCString::from_static_c_str(c"static c string!").unwrap();
    st.insert(0, '[').unwrap();
    assert_eq!(st.as_c_str(), c"[static c string!");
}

#[test]
#[should_panic(expected = "index is not a char boundary or out of bounds (index: 1)")]
fn cstring_insert_inside_a_char_panics() {
    let mut s = LeanCString::try_from("\u{e9}\u{e9}").unwrap();
    let _ = s.insert_str(1, "x");
}

#[test]
#[should_panic(expected = "index out of bounds (index: 3, len: 3)")]
fn cstring_remove_past_the_end_panics() {
    LeanCString::try_from("abc").unwrap().remove(3);
}

#[test]
#[should_panic(expected = "index is not a char boundary or out of bounds (index: 9)")]
fn cstring_split_off_past_the_end_panics() {
    LeanCString::try_from("abc").unwrap().split_off(9);
}

#[test]
#[should_panic(expected = "not a char boundary")]
fn bad_index_panics_with_message() {
    let mut s = LeanString::from("\u{e9}");
    s.insert(1, 'x');
}

#[cfg(feature = "serde")]
#[test]
fn serde_round_trip() {
    let s = LeanString::from("a string long enough for the heap");
    let j = serde_json::to_string(&s).unwrap();
    assert_eq!(serde_json::from_str::<LeanString>(&j).unwrap(), s);
    assert!(serde_json::from_str::<LeanCString>("\"a\\u0000b\"").is_err());
}

#[test]
fn capacity_limits_are_errors_or_clear_panics() {
    use lean_string::MAX_LEN;
    assert!(LeanString::try_with_capacity(MAX_LEN + 1).is_err());
    let mut s = LeanString::from("abc");
    let e = s.try_reserve(usize::MAX).unwrap_err();
    assert_eq!(e, lean_string::ReserveError);
    assert_eq!(e.to_string(), "Cannot allocate memory to hold LeanString");
    assert_eq!(s, "abc");
    assert!(LeanString::from("ab").try_repeat(usize::MAX).is_err());
    // LeanCString: the NUL counts, so its longest string is `MAX_LEN - 1` bytes.
    assert!(LeanCString::try_with_capacity(MAX_LEN).is_err());
    let mut c = LeanCString::try_from("abc").unwrap();
    assert!(c.try_reserve(MAX_LEN).is_err());
    assert!(c.try_repeat(MAX_LEN / 2).is_err());
    assert_eq!(c.as_c_str(), c"abc");
}

/// `with_capacity` gives exactly the asked capacity on the heap (the NUL on top for
/// `LeanCString`) and the inline capacity below it; both types share this code.
#[test]
fn with_capacity_is_exact_on_the_heap() {
    use lean_string::{C_INLINE_CAPACITY, INLINE_CAPACITY};
    for c in 0..=3 * INLINE_CAPACITY {
        let s = LeanString::with_capacity(c);
        assert_eq!(s.capacity(), c.max(INLINE_CAPACITY), "LeanString {c}");
        assert_eq!(s.is_heap_allocated(), c > INLINE_CAPACITY);
        let z = LeanCString::with_capacity(c);
        assert_eq!(z.capacity(), c.max(C_INLINE_CAPACITY), "LeanCString {c}");
        assert_eq!(z.is_heap_allocated(), c > C_INLINE_CAPACITY);
        assert_eq!(z.as_c_str(), c"");
    }
    let e = LeanCString::try_with_capacity(usize::MAX).unwrap_err();
    assert_eq!(e, lean_string::ReserveError);
}

#[test]
#[should_panic(expected = "Cannot allocate memory to hold LeanString")]
fn reserve_overflow_panics_with_a_message() {
    LeanString::from("abc").reserve(usize::MAX);
}
