#!/usr/bin/env bash
# The README's test command: every crate's unit, integration and doc tests (`cargo test
# --workspace`), then the suites of the feature-gated "before" layouts and features.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --workspace
# gc-object's 256-byte "before" layout must pass the same suite.
cargo test -p memlayout-gc-object --features wide-object
# arena-alloc's scenarios also in release: optimisation must not change what they see.
cargo test --release -p memlayout-arena-alloc
# lean-string: the no_std + alloc build (feature `std` off), and the optional features'
# tests (bytes, proptest, zeroize, serde, arbitrary).
cargo build -p memlayout-lean-string --no-default-features
cargo build -p memlayout-lean-string --no-default-features --features serde,arbitrary,bytes,zeroize
cargo test -p memlayout-lean-string --features bytes,proptest,zeroize,serde,arbitrary
# cob-tree's serde support (feature `serde`): its round-trip test. The rest of cob-tree's
# suite does not change with the feature and ran above.
cargo test -p memlayout-cob-tree --features serde --test serde
