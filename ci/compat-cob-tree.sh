#!/usr/bin/env bash
# cob-tree against crossbeam-skiplist's own map tests: runs crossbeam-skiplist 0.1.3's
# tests/map.rs, unchanged, against cob-tree/compat/skipmap.rs (SkipMap's API over CobTree,
# built as a crate named `crossbeam_skiplist`). Cargo fetches the crossbeam-skiplist
# package at run time (nothing of it is committed). Prints `N/M upstream map tests pass`
# and fails unless all of them pass.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
version=0.1.3
work=${COMPAT_DIR:-$root/target/compat}/cob-tree
rm -rf "$work"
mkdir -p "$work/probe/src" "$work/suite/tests"

# 1. Fetch the package: a throwaway crate that depends on it, then ask cargo where it is.
cat > "$work/probe/Cargo.toml" <<TOML
[package]
name = "cob-tree-compat-probe"
version = "0.0.0"
edition = "2024"
publish = false

[dependencies]
crossbeam-skiplist = "=$version"

[workspace]
TOML
: > "$work/probe/src/lib.rs"
(cd "$work/probe" && cargo fetch --quiet)
manifest=$(cd "$work/probe" && cargo metadata --format-version 1 | python3 -c '
import json, sys
for p in json.load(sys.stdin)["packages"]:
    if p["name"] == "crossbeam-skiplist":
        print(p["manifest_path"])
')
upstream=$(dirname "$manifest")
[ -f "$upstream/tests/map.rs" ] || { echo "compat: no tests/map.rs in $upstream"; exit 1; }
echo "compat: crossbeam-skiplist $version tests/map.rs from $upstream"

# 2. The suite crate: the shim as `crossbeam_skiplist`, upstream's map tests against it.
cat > "$work/suite/Cargo.toml" <<TOML
[package]
name = "cob-tree-compat-suite"
version = "0.0.0"
edition = "2021"
publish = false

[lib]
name = "crossbeam_skiplist"
path = "$root/cob-tree/compat/skipmap.rs"

[dependencies]
cob_tree = { package = "memlayout-cob-tree", path = "$root/cob-tree" }

[dev-dependencies]
crossbeam-utils = "0.8"

[workspace]
TOML
cp "$upstream/tests/map.rs" "$work/suite/tests/"
cp "$root/Cargo.lock" "$work/suite/Cargo.lock"
cd "$work/suite"
cargo test --quiet --test map --no-run
set +e
out=$(cargo test --quiet --test map -- --test-threads=2 2>&1)
rc=$?
set -e
echo "$out" | tail -n 40
total=$(grep -c '^fn ' tests/map.rs || true)
failed=$(echo "$out" | sed -n 's/^test result: .* \([0-9]*\) failed.*/\1/p' | head -n1)
failed=${failed:-$total}
echo "$((total - failed))/$total upstream map tests pass"
exit $rc
