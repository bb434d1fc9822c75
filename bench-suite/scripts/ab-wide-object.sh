#!/usr/bin/env bash
# The gc-object layout A/B: the 128-byte object cell (A, default) against the "before"
# layout with side state inline in a 256-byte-class cell (B, `memlayout-gc-object/wide-object`).
# Builds the runner both ways and runs them alternately (see ab.sh), printing per row the
# medians over runs and the ratio B / A (> 1: the 128-byte layout is faster).
#
#   bench-suite/scripts/ab-wide-object.sh [SAMPLES] [-- RUNNER ARGS...]
#   bench-suite/scripts/ab-wide-object.sh 7 -- --threads 1,2,4,8,16
#
# Default runner arguments: --only objects --filter gc-object --threads 1,2,4,8
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
samples=5
if [ $# -gt 0 ] && [ "$1" != "--" ]; then samples=$1; shift; fi
[ "${1:-}" = "--" ] && shift
if [ $# -eq 0 ]; then
  set -- --filter gc-object --threads 1,2,4,8
fi
exec "$here/ab.sh" memlayout-gc-object/wide-object "$samples" -- --only objects "$@"
