#!/usr/bin/env bash
# Miri with strict provenance on the crates that hold unsafe layout code; lean-string also
# on a 32-bit (i686) and a big-endian (s390x) target. Installs Miri on the nightly
# toolchain if needed; if that is impossible, says so loudly and exits 0.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! out=$(rustup +nightly component add miri rust-src 2>&1); then
  echo "miri: skipped: could not install miri on nightly: $(echo "$out" | tail -n 1)"
  exit 0
fi
export MIRIFLAGS="-Zmiri-strict-provenance ${MIRIFLAGS:-}"
export CARGO_TARGET_DIR="${MIRI_TARGET_DIR:-target/miri}"
run() { echo "== miri: $*"; cargo +nightly miri test "$@"; }
if [ $# -gt 0 ]; then run "$@"; exit 0; fi
run -p memlayout-lean-string
run -p memlayout-lean-string --target i686-unknown-linux-gnu
run -p memlayout-lean-string --target s390x-unknown-linux-gnu
run -p memlayout-cob-tree
run -p memlayout-gc-object
# Only arena-alloc's pure parts run under Miri (size classes, heap-count parsing); the
# allocator itself needs mmap, mremap and inline assembly, which Miri does not model.
run -p memlayout-arena-alloc
