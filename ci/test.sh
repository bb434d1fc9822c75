#!/usr/bin/env bash
# The README's test command: every crate's unit, integration and doc tests.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --workspace
