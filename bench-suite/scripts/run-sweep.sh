#!/usr/bin/env bash
# Runs every thread sweep of every group for threads 1,2,4,8,16,32 (or $1... see usage) on
# this machine, from the binaries next to this script. Needs no Rust toolchain.
#
#   run-sweep.sh [OUT_DIR] [THREADS] [RUNNER ARGS...]
#   defaults: sweep-results, 1,2,4,8,16,32; e.g. run-sweep.sh out 1,2,4,8,16,32 --full
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-sweep-results}
threads=${2:-1,2,4,8,16,32}
shift $(( $# < 2 ? $# : 2 ))
mkdir -p "$out"
{
  echo "cores: $(nproc)"
  echo "model: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')"
  echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "threads: $threads"
} | tee "$out/machine.txt"
for bin in "$here"/bench-suite*; do
  [ -x "$bin" ] && [ -f "$bin" ] || continue
  name=$(basename "$bin")
  echo "== $name" | tee -a "$out/machine.txt"
  "$bin" --sweeps-only --threads "$threads" --instrument time --out "$out/$name" "$@" | tee "$out/$name.md"
done
echo "results: $out"
