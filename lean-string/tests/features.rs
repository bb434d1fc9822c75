//! The optional integrations, each compiled and checked only with its feature on
//! (`cargo test -p memlayout-lean-string --features bytes,proptest,zeroize`).

#[cfg(feature = "bytes")]
#[test]
fn bytes_from_buf_and_into_bytes() {
    use bytes::{Buf, Bytes};
    use lean_string::{LeanStr, LeanString};
    let mut one = Bytes::from_static("héllo, a string longer than sixteen".as_bytes());
    let s = LeanString::from_utf8_buf(&mut one).unwrap();
    assert_eq!(s, "héllo, a string longer than sixteen");
    assert!(!one.has_remaining());
    // A char split across two chunks.
    let mut two =
        Bytes::from_static("h\u{e9}".as_bytes()).chain(Bytes::from_static(" ok".as_bytes()));
    let mut split = Bytes::from_static(&[b'h', 0xC3]).chain(Bytes::from_static(&[0xA9, b'!']));
    assert_eq!(LeanStr::from_utf8_buf(&mut two).unwrap(), "hé ok");
    assert_eq!(LeanString::from_utf8_buf(&mut split).unwrap(), "hé!");
    let mut bad = Bytes::from_static(&[0xFF]);
    assert!(LeanString::from_utf8_buf(&mut bad).is_err());
    let long = LeanString::from("a string longer than sixteen bytes");
    let ptr = long.as_ptr();
    let b = Bytes::from(long);
    assert_eq!(
        (&b[..], b.as_ptr()),
        (&b"a string longer than sixteen bytes"[..], ptr)
    );
    assert_eq!(&Bytes::from(LeanString::from("inline"))[..], b"inline");
}

#[cfg(feature = "proptest")]
mod strategy {
    use lean_string::{LeanStr, LeanString};
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(if cfg!(miri) { 4 } else { 64 }))]
        #[test]
        fn any_lean_string_is_a_valid_string(s in any::<LeanString>(), t in any::<LeanStr>()) {
            prop_assert_eq!(s.len(), s.as_str().len());
            prop_assert_eq!(s.is_heap_allocated(), s.len() > lean_string::INLINE_CAPACITY);
            prop_assert_eq!(LeanStr::from(t.as_str()), t);
        }
    }
}

#[cfg(feature = "zeroize")]
#[test]
fn zeroize_empties_and_keeps_shared_buffers_intact() {
    use lean_string::LeanString;
    use zeroize::Zeroize;
    let mut inline = LeanString::from("secret");
    inline.zeroize();
    assert_eq!(inline, "");
    let mut heap = LeanString::from("a secret longer than the inline limit");
    heap.zeroize();
    assert_eq!(heap, "");
    assert!(heap.is_heap_allocated(), "the buffer is kept, zeroed");
    heap.push_str("reused");
    assert_eq!(heap, "reused");
    let mut shared = LeanString::from("a shared secret longer than sixteen");
    let other = shared.clone();
    shared.zeroize();
    assert_eq!(
        (shared.as_str(), other.as_str()),
        ("", "a shared secret longer than sixteen")
    );
    let mut st = LeanString::from_static_str("a static secret longer than sixteen");
    st.zeroize();
    assert_eq!(st, "");
}

#[cfg(feature = "zeroize")]
#[test]
fn zeroize_c_string_empties_and_keeps_shared_buffers_intact() {
    use lean_string::LeanCString;
    use zeroize::Zeroize;
    let mut full_inline = LeanCString::from_str_checked("fifteen bytes!!").unwrap();
    assert!(!full_inline.is_heap_allocated());
    full_inline.zeroize();
    assert_eq!(
        (full_inline.as_str(), full_inline.as_c_str().to_bytes()),
        ("", &b""[..])
    );
    full_inline.push_str("again").unwrap();
    assert_eq!(full_inline.as_c_str().to_bytes_with_nul(), b"again\0");
    let mut heap = LeanCString::from_str_checked("a secret longer than the inline limit").unwrap();
    heap.zeroize();
    assert_eq!(heap.as_c_str().to_bytes_with_nul(), b"\0");
    assert!(heap.is_heap_allocated(), "the buffer is kept, zeroed");
    heap.push_str("reused").unwrap();
    assert_eq!(heap.as_c_str().to_bytes_with_nul(), b"reused\0");
    let mut shared = LeanCString::from_str_checked("a shared secret longer than sixteen").unwrap();
    let other = shared.clone();
    shared.zeroize();
    assert_eq!(
        (shared.as_str(), other.as_str()),
        ("", "a shared secret longer than sixteen")
    );
    assert_eq!(other.as_c_str().to_bytes().len(), 35);
    let mut st = LeanCString::from_static_c_str(c"a static secret longer than sixteen").unwrap();
    st.zeroize();
    assert_eq!(st.as_str(), "");
}
