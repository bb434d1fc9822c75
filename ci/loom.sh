#!/usr/bin/env bash
# Loom model checks. Every crate is built with `--cfg loom` (so its atomics go through
# loom's types via its `sync` facade) and the tests whose names start with `loom_` run.
# Release mode and a separate target dir, so the normal build's cache is not invalidated.
set -euo pipefail
cd "$(dirname "$0")/.."
# Warnings are errors here: clippy never builds the loom cfg, so this is where they show.
export RUSTFLAGS="--cfg loom -D warnings ${RUSTFLAGS:-}"
export LOOM_MAX_PREEMPTIONS="${LOOM_MAX_PREEMPTIONS:-2}"
export CARGO_TARGET_DIR="${LOOM_TARGET_DIR:-target/loom}"
crates=("$@")
[ ${#crates[@]} -gt 0 ] || crates=(memlayout-lean-string memlayout-cob-tree memlayout-gc-object memlayout-arena-alloc)
for c in "${crates[@]}"; do
  echo "== loom: $c"
  cargo test --release -p "$c" --lib --tests -- loom_
done
