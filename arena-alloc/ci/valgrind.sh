#!/usr/bin/env bash
# Runs the stress binary (ArenaAlloc as global allocator) under valgrind memcheck;
# fails on any memcheck error or failed check. Usage: arena-alloc/ci/valgrind.sh [iters]
set -euo pipefail
cd "$(dirname "$0")/../.."
command -v valgrind >/dev/null || { echo "valgrind not installed: SKIPPED" >&2; exit 0; }
cargo build --release -q -p memlayout-arena-alloc --example stress
valgrind --tool=memcheck --error-exitcode=99 --track-origins=yes \
    --leak-check=full --errors-for-leak-kinds=definite \
    target/release/examples/stress "${1:-1000}"
