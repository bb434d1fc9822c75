#!/usr/bin/env bash
set -euo pipefail
cd "$(dirname "$0")/.."
cargo clippy --workspace --all-targets -- -D warnings
cargo clippy -p memlayout-gc-object --all-targets --features wide-object -- -D warnings
cargo clippy -p memlayout-arena-alloc --all-targets --features capi -- -D warnings
cargo clippy -p memlayout-lean-string --all-targets --all-features -- -D warnings
cargo clippy -p memlayout-lean-string --no-default-features -- -D warnings
cargo clippy -p memlayout-cob-tree --all-targets --features serde -- -D warnings
