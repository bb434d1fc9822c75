#!/usr/bin/env bash
set -euo pipefail
cd "$(dirname "$0")/.."
cargo fmt --all --check
# cob-tree's SkipMap shim is built only by ci/compat-cob-tree.sh, outside the workspace.
rustfmt --check --edition 2021 cob-tree/compat/lib.rs
