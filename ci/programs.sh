#!/usr/bin/env bash
# arena-alloc under real conditions: memcheck on a stress program with ArenaAlloc as the
# global allocator, and unmodified programs (python3, git, gcc, a C test of every export)
# with libarena_alloc.so preloaded, compared with their plain runs; sqlite3 and a
# redis-server with redis-benchmark against glibc's malloc, peak RSS side by side (about
# 20 s; installed with apt-get when missing, skipped with the reason when that fails).
set -euo pipefail
cd "$(dirname "$0")/.."
bash arena-alloc/ci/valgrind.sh
bash arena-alloc/ci/real_programs.sh
bash arena-alloc/ci/server_programs.sh
