//! Links the C ABI library (the cdylib) on Linux with `link/hot-text.ld`, which groups the
//! code a program runs at the start of the text (fewer resident pages of the library).
//! The rlib is not affected. The script needs GNU ld or lld (gold and mold cannot read
//! it): with `-fuse-ld=` naming another linker in the flags, or with
//! `ARENA_ALLOC_LINK_SCRIPT=0`, the library is linked without it. With that setting the
//! unwinder is also linked as usual (`libgcc_s.so.1`); otherwise it is linked statically
//! (see `static_unwinder`).

use std::env;
use std::path::PathBuf;
use std::process::Command;

/// Which linker `-fuse-ld=` in the flags names, if any.
fn fuse_ld(flags: &str) -> Option<&str> {
    let at = flags.rfind("fuse-ld=")? + "fuse-ld=".len();
    flags[at..].split(['\x1f', ' ']).next()
}

/// Whether rustc links with its own lld: the default for x86_64-unknown-linux-gnu from
/// Rust 1.90 on, unless the flags choose a linker. Only then may the script move the PLT
/// (GNU ld refuses: its PLT unwind entries would overlap). A wrong `false` only leaves
/// the PLT where it is.
fn links_with_lld() -> bool {
    if env::var("TARGET").as_deref() != Ok("x86_64-unknown-linux-gnu") {
        return false;
    }
    let flags = env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    if ["fuse-ld", "linker-features", "linker-flavor"]
        .iter()
        .any(|f| flags.contains(f))
    {
        return false;
    }
    let rustc = env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let Ok(out) = Command::new(rustc).arg("--version").output() else {
        return false;
    };
    let text = String::from_utf8_lossy(&out.stdout);
    // "rustc 1.91.0 (...)": the minor version.
    let minor = text
        .split_whitespace()
        .nth(1)
        .and_then(|v| v.split('.').nth(1))
        .and_then(|m| m.parse::<u32>().ok());
    matches!(minor, Some(m) if m >= 90) && text.contains("rustc 1.")
}

/// Links the cdylib's unwinder statically (libgcc_eh) instead of loading `libgcc_s.so.1`:
/// std's unwinder is never run by the allocator, but loading the library cost every
/// preloaded program about 100 KiB of resident pages. `-lgcc_s`, which std's `unwind`
/// crate passes, then finds `OUT_DIR/gcc_eh/libgcc_s.so`, a linker script naming
/// libgcc_eh.a (the `-L` of a link argument is searched before the compiler's own
/// directories). Skipped when the C compiler does not know libgcc_eh.a.
fn static_unwinder() {
    if env::var("CARGO_CFG_TARGET_ENV").as_deref() != Ok("gnu") {
        return;
    }
    let cc = env::var("CC").unwrap_or_else(|_| "cc".into());
    let Ok(out) = Command::new(cc)
        .arg("-print-file-name=libgcc_eh.a")
        .output()
    else {
        return;
    };
    let path = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if !path.starts_with('/') || !std::path::Path::new(&path).is_file() {
        return;
    }
    let dir = PathBuf::from(env::var("OUT_DIR").expect("cargo sets it")).join("gcc_eh");
    std::fs::create_dir_all(&dir).expect("OUT_DIR is writable");
    std::fs::write(dir.join("libgcc_s.so"), format!("INPUT({path})\n"))
        .expect("OUT_DIR is writable");
    println!("cargo:rustc-cdylib-link-arg=-L{}", dir.display());
}

fn main() {
    println!("cargo:rerun-if-changed=link/hot-text.ld");
    println!("cargo:rerun-if-env-changed=CARGO_ENCODED_RUSTFLAGS");
    println!("cargo:rerun-if-env-changed=ARENA_ALLOC_LINK_SCRIPT");
    if env::var("CARGO_CFG_TARGET_OS").as_deref() != Ok("linux")
        || env::var("ARENA_ALLOC_LINK_SCRIPT").as_deref() == Ok("0")
    {
        return;
    }
    let flags = env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    if let Some(ld) = fuse_ld(&flags)
        && !matches!(ld, "bfd" | "lld")
    {
        return;
    }
    let dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let script = std::fs::read_to_string(dir.join("link/hot-text.ld"))
        .expect("arena-alloc/link/hot-text.ld is readable");
    static_unwinder();
    let plt = if links_with_lld() { "*(.plt)" } else { "" };
    let out = PathBuf::from(env::var("OUT_DIR").expect("cargo sets it")).join("hot-text.ld");
    std::fs::write(&out, script.replace("/* PLT */", plt)).expect("OUT_DIR is writable");
    println!("cargo:rustc-cdylib-link-arg=-Wl,-T,{}", out.display());
}
