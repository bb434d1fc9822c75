#!/usr/bin/env bash
# cob-tree against crossbeam-skiplist's own tests: runs crossbeam-skiplist 0.1.3's
# tests/map.rs and tests/set.rs, unchanged, against cob-tree/compat/ (SkipMap's and
# SkipSet's APIs over CobTree, built as a crate named `crossbeam_skiplist`). Cargo fetches
# the crossbeam-skiplist package at run time (nothing of it is committed). Its tests/base.rs
# tests the skip list's internal node API, which has no counterpart. Prints
# `N/M upstream tests pass` and fails unless all of them pass.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
version=0.1.3
work=${COMPAT_DIR:-$root/target/compat}/cob-tree
rm -rf "$work"
mkdir -p "$work/suite/tests"

# 1. Fetch the package.
source ci/fetch-crate.sh
upstream=$(fetch_crate crossbeam-skiplist "$version" "$work/probe")
for f in map set; do
  [ -f "$upstream/tests/$f.rs" ] || { echo "compat: no tests/$f.rs in $upstream"; exit 1; }
done
echo "compat: crossbeam-skiplist $version tests/{map,set}.rs from $upstream"

# 2. The suite crate: the shim as `crossbeam_skiplist`, upstream's tests against it.
cat > "$work/suite/Cargo.toml" <<TOML
[package]
name = "cob-tree-compat-suite"
version = "0.0.0"
edition = "2021"
publish = false

[lib]
name = "crossbeam_skiplist"
path = "$root/cob-tree/compat/lib.rs"

[dependencies]
cob_tree = { package = "memlayout-cob-tree", path = "$root/cob-tree" }

[dev-dependencies]
crossbeam-utils = "0.8"

[workspace]
TOML
cp "$upstream/tests/map.rs" "$upstream/tests/set.rs" "$work/suite/tests/"
cp "$root/Cargo.lock" "$work/suite/Cargo.lock"
cd "$work/suite"
cargo test --quiet --test map --test set --no-run
pass=0
total=0
rc=0
for f in map set; do
  n=$(grep -c '^fn ' "tests/$f.rs" || true)
  total=$((total + n))
  set +e
  out=$(cargo test --quiet --test "$f" -- --test-threads=2 2>&1)
  r=$?
  set -e
  echo "$out" | tail -n 30
  ok=$(echo "$out" | sed -n 's/^test result: .* \([0-9]*\) passed.*/\1/p' | head -n1)
  pass=$((pass + ${ok:-0}))
  [ $r -eq 0 ] || rc=$r
done
echo "$pass/$total upstream tests pass (tests/map.rs, tests/set.rs)"
exit $rc
