//! What compact_str users expect on top of the lean_string API, and the 0.8 semantics that
//! upstream's own suite does not pin down.

use std::borrow::Cow;
use std::rc::Rc;
use std::sync::Arc;

use lean_string::{INLINE_CAPACITY, LeanStr, LeanString, ToLeanStr, ToLeanString, format_lean};

const LONG: &str = "a string that is longer than the inline limit";

#[test]
fn format_lean_writes_and_keeps_literals_static() {
    assert_eq!(format_lean!("{}+{}={}", 2, 2, 4), "2+2=4");
    let lit = format_lean!("a literal that is longer than sixteen bytes");
    assert!(lit.as_static_str().is_some());
    assert!(!format_lean!("short").is_heap_allocated());
    let long = format_lean!("{LONG}{LONG}");
    assert_eq!(long, format!("{LONG}{LONG}"));
}

#[test]
fn deref_mut_and_as_mut_str_unshare_first() {
    let original = LeanString::from(LONG);
    let mut s = original.clone();
    s.as_mut_str().make_ascii_uppercase();
    assert_eq!(s, LONG.to_ascii_uppercase());
    assert_eq!(original, LONG);
    let mut st = LeanString::from_static_str(LONG);
    (*st).make_ascii_uppercase();
    assert_eq!(st, LONG.to_ascii_uppercase());
    assert!(st.is_heap_allocated());
    // A full inline string: its last byte is also the tag.
    let full = &"sixteen bytes ok"[..INLINE_CAPACITY];
    let mut inline = LeanString::from(full);
    inline.as_mut_str().make_ascii_uppercase();
    assert_eq!(inline, full.to_ascii_uppercase());
    assert!(!inline.is_heap_allocated());
}

#[test]
fn drain_removes_the_range_and_yields_its_chars() {
    let mut s = LeanString::from("héllo wörld, a long string");
    let shared = s.clone();
    let d: String = s.drain(1..7).collect();
    assert_eq!(d, "éllo ");
    assert_eq!(s, "hwörld, a long string");
    assert_eq!(shared, "héllo wörld, a long string");
    let mut t = LeanString::from("abc");
    let mut it = t.drain(..);
    assert_eq!(
        (it.next(), it.next_back(), it.as_str()),
        (Some('a'), Some('c'), "b")
    );
    drop(it);
    assert_eq!(t, "");
}

#[test]
fn conversions_into_std_types_copy_the_contents() {
    let s = LeanString::from(LONG);
    assert_eq!(s.clone().into_bytes(), LONG.as_bytes());
    assert_eq!(s.clone().into_string(), LONG);
    assert_eq!(&*Box::<str>::from(s.clone()), LONG);
    assert_eq!(&*Arc::<str>::from(&s), LONG);
    assert_eq!(&*Rc::<str>::from(s.clone()), LONG);
    let f = LeanStr::from(LONG);
    assert_eq!(&*Arc::<str>::from(f.clone()), LONG);
    assert_eq!(f.into_string(), LONG);
    assert!(matches!(Cow::from(&s), Cow::Borrowed(_)));
    assert!(matches!(Cow::from(s), Cow::Owned(_)));
}

#[test]
fn to_lean_string_fast_paths_match_display() {
    assert_eq!(1.0f64.to_lean_string(), "1.0");
    assert_eq!(1e16f64.to_lean_string(), "1e+16");
    assert_eq!(0.1f32.to_lean_str(), "0.1");
    assert_eq!(u128::MAX.to_lean_string(), u128::MAX.to_string());
    assert_eq!(i64::MIN.to_lean_str(), i64::MIN.to_string());
    assert_eq!(std::num::NonZero::new(42u8).unwrap().to_lean_string(), "42");
    assert_eq!('é'.to_lean_string(), "é");
    assert_eq!(true.to_lean_str(), "true");
    let s = LeanString::from(LONG);
    assert_eq!(
        s.to_lean_string().as_ptr(),
        s.as_ptr(),
        "a LeanString shares"
    );
    let f = LeanStr::from(LONG);
    assert_eq!(f.to_lean_str().as_ptr(), f.as_ptr(), "a LeanStr shares");
    // A type with no fast path goes through Display.
    assert_eq!(std::net::Ipv4Addr::LOCALHOST.to_lean_string(), "127.0.0.1");
}

#[test]
fn empty_repeat_is_o1_and_repeat_one_shares() {
    let empty = LeanString::new();
    let r = empty.repeat(usize::MAX);
    assert!(r.is_empty() && !r.is_heap_allocated());
    let s = LeanString::from(LONG);
    assert_eq!(s.repeat(1).as_ptr(), s.as_ptr());
    let f = LeanStr::from(LONG);
    assert_eq!(f.repeat(3), LONG.repeat(3));
}

#[test]
fn extend_with_empty_items_keeps_sharing() {
    let mut s = LeanString::from(LONG);
    let shared = s.clone();
    s.extend(["", "", ""]);
    s.extend([String::new()]);
    s.extend(std::iter::empty::<char>());
    assert_eq!(s.as_ptr(), shared.as_ptr());
}

#[test]
fn collect_ignores_a_size_hint_that_cannot_be_reserved() {
    struct Liar(u8);
    impl Iterator for Liar {
        type Item = char;
        fn next(&mut self) -> Option<char> {
            self.0 = self.0.checked_sub(1)?;
            Some('x')
        }
        fn size_hint(&self) -> (usize, Option<usize>) {
            (usize::MAX, None)
        }
    }
    let s: LeanString = Liar(3).collect();
    assert_eq!(s, "xxx");
    let mut t = LeanString::from("a");
    t.extend(Liar(2));
    assert_eq!(t, "axx");
}

#[test]
fn clear_keeps_a_static_string_static() {
    let mut st = LeanString::from_static_str(LONG);
    st.clear();
    assert_eq!(st, "");
    assert_eq!(st.as_static_str(), Some(""));
    let mut shared = LeanString::from(LONG);
    let _other = shared.clone();
    shared.clear();
    assert!(!shared.is_heap_allocated());
    assert_eq!(shared.capacity(), INLINE_CAPACITY);
}

#[test]
fn shortening_a_shared_buffer_keeps_sharing_until_written() {
    let a = LeanString::from(LONG);
    let mut b = a.clone();
    b.truncate(3);
    assert_eq!((b.as_str(), b.as_ptr()), ("a s", a.as_ptr()));
    b.push('!');
    assert_ne!(b.as_ptr(), a.as_ptr());
    assert!(!b.is_heap_allocated(), "the copy fits inline");
    assert_eq!((a.as_str(), b.as_str()), (LONG, "a s!"));
}

#[test]
fn retain_with_a_panicking_predicate_leaves_what_string_leaves() {
    for n in 0..6 {
        for start in ["0è0x", LONG] {
            let mut ours = LeanString::from(start);
            let _shared = ours.clone();
            let mut std_s = String::from(start);
            for s in [&mut ours as &mut dyn Retain, &mut std_s] {
                let mut calls = 0;
                let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    s.retain_dyn(&mut |c| {
                        calls += 1;
                        assert!(calls <= n, "boom");
                        c != '0' && c != 'a'
                    })
                }));
                let _ = r;
            }
            assert_eq!(ours, std_s, "start {start:?}, panic at call {}", n + 1);
        }
    }
}

trait Retain {
    fn retain_dyn(&mut self, f: &mut dyn FnMut(char) -> bool);
}
impl Retain for LeanString {
    fn retain_dyn(&mut self, f: &mut dyn FnMut(char) -> bool) {
        self.retain(f)
    }
}
impl Retain for String {
    fn retain_dyn(&mut self, f: &mut dyn FnMut(char) -> bool) {
        self.retain(f)
    }
}

#[test]
fn capacity_follows_lean_strings_growth() {
    let mut s = LeanString::from("a".repeat(100));
    s.reserve(50);
    assert_eq!(s.capacity(), 150, "max(needed, len + len / 2)");
    let mut t = LeanString::from("abc");
    t.reserve_exact(INLINE_CAPACITY);
    assert_eq!(t.capacity(), 3 + INLINE_CAPACITY);
    let mut sh = LeanString::with_capacity(100);
    sh.push_str(LONG);
    let other = sh.clone();
    sh.shrink_to(60);
    assert_eq!((sh.capacity(), other.capacity()), (60, 100));
}
