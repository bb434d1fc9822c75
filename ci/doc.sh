#!/usr/bin/env bash
# API docs of every workspace crate with rustdoc warnings (broken links, unclosed HTML
# such as a bare `Arc<str>` in Markdown) as errors.
set -euo pipefail
cd "$(dirname "$0")/.."
RUSTDOCFLAGS="-D warnings ${RUSTDOCFLAGS:-}" cargo doc --workspace --no-deps
