#!/usr/bin/env bash
# arena-alloc under real conditions: memcheck on a stress program with ArenaAlloc as the
# global allocator, and unmodified programs (python3, git, gcc, a C test of every export)
# with libarena_alloc.so preloaded, compared with their plain runs.
set -euo pipefail
cd "$(dirname "$0")/.."
bash arena-alloc/ci/valgrind.sh
bash arena-alloc/ci/real_programs.sh
