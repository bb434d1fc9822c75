#!/usr/bin/env bash
# The libraries build with the rust-version the workspace declares (Cargo.toml), on that
# exact toolchain, installed with rustup if missing. Default features and every feature.
# A separate target dir, so the normal build's cache is not invalidated.
set -euo pipefail
cd "$(dirname "$0")/.."
ver=$(sed -n 's/^rust-version = "\(.*\)"/\1/p' Cargo.toml)
[ -n "$ver" ] || { echo "msrv: no rust-version in Cargo.toml" >&2; exit 1; }
rustup toolchain list | grep -q "^$ver-" || rustup toolchain install "$ver" --profile minimal
export CARGO_TARGET_DIR="${MSRV_TARGET_DIR:-target/msrv}"
libs=(memlayout-lean-string memlayout-cob-tree memlayout-gc-object memlayout-arena-alloc)
echo "== msrv: rustc $(rustc +"$ver" --version)"
for c in "${libs[@]}"; do
  echo "== msrv: $c"
  cargo +"$ver" build -p "$c" --lib
  cargo +"$ver" build -p "$c" --lib --all-features
done
