#!/usr/bin/env bash
# lean-string as a drop-in for lean_string 0.8.0: runs upstream's own test suite against
# this crate. Cargo fetches the lean_string 0.8.0 package at run time (nothing of it is
# committed); its tests/ folder is copied into a temporary crate whose `lean_string`
# dependency is `{ package = "memlayout-lean-string", path = ... }`, with the features
# upstream's suite expects (serde, arbitrary). Each test file runs on its own:
#   - property.rs calls `String::from_utf16le/be`, unstable on our toolchain, so it runs on
#     nightly with `#![feature(str_from_utf16_endian)]` added to the temporary copy;
#   - loom.rs runs under `--cfg loom` (release, its own target dir).
# Prints `N/M upstream test files pass` and fails unless all of them pass.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
version=0.8.0
work=${COMPAT_DIR:-$root/target/compat}
rm -rf "$work/probe" "$work/suite"
mkdir -p "$work/suite/src" "$work/suite/tests"

# 1. Fetch the package.
source ci/fetch-crate.sh
upstream=$(fetch_crate lean_string "$version" "$work/probe")
[ -d "$upstream/tests" ] || { echo "compat: no tests/ in $upstream"; exit 1; }
echo "compat: lean_string $version tests from $upstream"

# 2. The suite crate: upstream's tests against our package.
cat > "$work/suite/Cargo.toml" <<EOF
[package]
name = "lean-string-compat-suite"
version = "0.0.0"
edition = "2024"
publish = false

[features]
# Upstream's feature-gated test files check the features of the crate they are built in.
default = ["serde", "arbitrary"]
serde = []
arbitrary = []

[dependencies]
lean_string = { package = "memlayout-lean-string", path = "$root/lean-string", features = ["serde", "arbitrary"] }

[dev-dependencies]
arbitrary = "1"
paste = "1.0.15"
proptest = { version = "1.12.0", features = ["attr-macro"] }
serde = { version = "1", features = ["derive"] }
serde_json = "1"

[target.'cfg(loom)'.dev-dependencies]
loom = "0.7.2"

[workspace]
EOF
: > "$work/suite/src/lib.rs"
cp "$upstream"/tests/*.rs "$work/suite/tests/"
# Start from the workspace's lock file so shared dependencies resolve to the same versions.
cp "$root/Cargo.lock" "$work/suite/Cargo.lock"
# property.rs on nightly needs the feature gate for `String::from_utf16le/be`.
prop="$work/suite/tests/property.rs"
{ echo '#![feature(str_from_utf16_endian)]'; cat "$prop"; } > "$prop.new" && mv "$prop.new" "$prop"

cd "$work/suite"
pass=0
total=0
failed=()
run() {
  local name=$1; shift
  total=$((total + 1))
  echo "== compat: $name"
  if "$@"; then
    pass=$((pass + 1))
  else
    failed+=("$name")
  fi
}
for f in tests/*.rs; do
  name=$(basename "$f" .rs)
  case "$name" in
    loom) ;;
    property) run "$name" cargo +nightly test --quiet --test "$name" ;;
    *) run "$name" cargo test --quiet --test "$name" ;;
  esac
done
[ -f tests/loom.rs ] && run loom env RUSTFLAGS="--cfg loom ${RUSTFLAGS:-}" \
  LOOM_MAX_PREEMPTIONS="${LOOM_MAX_PREEMPTIONS:-2}" CARGO_TARGET_DIR=target/loom \
  cargo test --quiet --release --test loom

echo "$pass/$total upstream test files pass"
if [ ${#failed[@]} -gt 0 ]; then
  echo "compat: failing: ${failed[*]}"
  exit 1
fi
