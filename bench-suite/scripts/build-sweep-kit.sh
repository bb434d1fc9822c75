#!/usr/bin/env bash
# Builds the release binaries for the thread sweeps and puts them, with run-sweep.sh, in
# one folder (default target/sweep-kit) that can be copied to a bigger machine that has no
# Rust toolchain:
#
#   bench-suite/scripts/build-sweep-kit.sh [KIT_DIR]
#   scp -r target/sweep-kit big-machine: && ssh big-machine sweep-kit/run-sweep.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
kit=${1:-$root/target/sweep-kit}
target=${CARGO_TARGET_DIR:-$root/target}
cargo build --release -q -p bench-suite --bins --manifest-path "$root/Cargo.toml"
mkdir -p "$kit"
# Every runner binary of bench-suite: the main one and any per-allocator variants.
for bin in $(cargo metadata --no-deps --format-version 1 --manifest-path "$root/Cargo.toml" \
    | python3 -c 'import json,sys; m=json.load(sys.stdin); print(" ".join(t["name"] for p in m["packages"] if p["name"]=="bench-suite" for t in p["targets"] if "bin" in t["kind"]))'); do
  cp "$target/release/$bin" "$kit/"
  # Line tables make the binary ~50 MB; the kit only needs to run.
  if command -v strip >/dev/null; then strip "$kit/$bin"; fi
done
cp "$root/bench-suite/scripts/run-sweep.sh" "$kit/"
echo "sweep kit: $kit ($(ls "$kit" | tr '\n' ' '))"
