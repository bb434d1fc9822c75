#!/usr/bin/env bash
# A/B runs of two builds of the runner: without and with a cargo feature.
#
#   bench-suite/scripts/ab.sh FEATURE [SAMPLES] [-- RUNNER ARGS...]
#   bench-suite/scripts/ab.sh memlayout-gc-object/wide-object 7 -- --only objects --threads 1,2,4,8
#
# Builds the runner twice (A: default features, B: with FEATURE), runs A and B
# alternately SAMPLES times (default 5) so that machine noise hits both alike, and prints,
# for every row both measured, the median over runs of A and of B and the ratio B / A.
# Results stay in target/ab/ (override with AB_DIR).
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 FEATURE [SAMPLES] [-- RUNNER ARGS...]" >&2; exit 2; }
feature=$1; shift
samples=5
if [ $# -gt 0 ] && [ "$1" != "--" ]; then samples=$1; shift; fi
[ "${1:-}" = "--" ] && shift
[[ $samples =~ ^[1-9][0-9]*$ ]] || { echo "SAMPLES must be a positive number, got '$samples'" >&2; exit 2; }
root=$(cd "$(dirname "$0")/../.." && pwd)
work=${AB_DIR:-$root/target/ab}
label_b=with-${feature//\//-}
rm -rf "$work/default" "$work/$label_b"
mkdir -p "$work/default" "$work/$label_b" "$work/bin"
target=${CARGO_TARGET_DIR:-$root/target}
echo "building A (default features) and B (--features $feature)..." >&2
cargo build --release -q -p bench-suite --manifest-path "$root/Cargo.toml"
cp "$target/release/bench-suite" "$work/bin/A"
cargo build --release -q -p bench-suite --manifest-path "$root/Cargo.toml" --features "$feature"
cp "$target/release/bench-suite" "$work/bin/B"
for i in $(seq 1 "$samples"); do
  for v in A B; do
    dir=$work/default; [ $v = B ] && dir=$work/$label_b
    echo "sample $i/$samples: $v" >&2
    "$work/bin/$v" "$@" --instrument time --json --out "$work/out-$v" > "$dir/run-$(printf %03d "$i").json"
  done
done
echo "A = default features, B = --features $feature; $samples alternating samples each"
echo
"$work/bin/A" --ab-compare "$work/default" "$work/$label_b"
