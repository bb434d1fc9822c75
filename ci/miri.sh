#!/usr/bin/env bash
# Miri with strict provenance on the crates that hold unsafe layout code; lean-string also
# on a 32-bit (i686) and a big-endian (s390x) target. Installs Miri on the nightly
# toolchain if needed; if that is impossible, says so loudly and exits 0.
#
# Miri interprets on one core, so the passes run in two lanes at once (CI has 2 cores):
# cob-tree with lean-string on i686, and everything else. Each lane has its own target dir
# (cargo locks a target dir per build) and its own log, printed when the lane ends.
# `MIRI_LANES=1` runs them one after the other instead.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! out=$(rustup +nightly component add miri rust-src 2>&1); then
  echo "miri: skipped: could not install miri on nightly: $(echo "$out" | tail -n 1)"
  exit 0
fi
export MIRIFLAGS="-Zmiri-strict-provenance ${MIRIFLAGS:-}"
base="${MIRI_TARGET_DIR:-target/miri}"
run() { echo "== miri: $*"; cargo +nightly miri test "$@"; }
if [ $# -gt 0 ]; then CARGO_TARGET_DIR="$base" run "$@"; exit 0; fi

# The sysroots first, one at a time: two lanes must not build the same one together.
for t in "" i686-unknown-linux-gnu s390x-unknown-linux-gnu; do
  cargo +nightly miri setup ${t:+--target "$t"}
done

lane_a() {
  export CARGO_TARGET_DIR="$base/a"
  run -p memlayout-cob-tree
  # Here, not in lane b: it evens the lanes out (about 75 s of Miri's clock).
  run -p memlayout-lean-string --target i686-unknown-linux-gnu
}
lane_b() {
  export CARGO_TARGET_DIR="$base/b"
  run -p memlayout-lean-string
  run -p memlayout-lean-string --target s390x-unknown-linux-gnu
  run -p memlayout-gc-object
  # Only arena-alloc's pure parts run under Miri (size classes, heap-count parsing); the
  # allocator itself needs mmap, mremap and inline assembly, which Miri does not model.
  run -p memlayout-arena-alloc
}

if [ "${MIRI_LANES:-2}" = 1 ]; then
  lane_a
  lane_b
  exit 0
fi
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
t0=$SECONDS
timed() { local l=$1; shift; "$@"; echo "$((SECONDS - t0))" >"$logs/$l.s"; }
(timed a lane_a) >"$logs/a" 2>&1 & pa=$!
(timed b lane_b) >"$logs/b" 2>&1 & pb=$!
rc=0
wait "$pa" || rc_a=$?
wait "$pb" || rc_b=$?
took() { cat "$logs/$1.s" 2>/dev/null || echo "?"; }
echo "::: miri lane a (cob-tree, lean-string on i686): exit ${rc_a:-0}, ended after $(took a)s"
echo "::: miri lane b (lean-string x2, gc-object, arena-alloc): exit ${rc_b:-0}, ended after $(took b)s"
for l in a b; do
  echo "::: miri lane $l log"
  cat "$logs/$l"
done
[ "${rc_a:-0}" = 0 ] && [ "${rc_b:-0}" = 0 ] || rc=1
exit "$rc"
