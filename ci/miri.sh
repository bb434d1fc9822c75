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
run -p lean-string
run -p lean-string --target i686-unknown-linux-gnu
run -p lean-string --target s390x-unknown-linux-gnu
run -p cob-tree
run -p gc-object
