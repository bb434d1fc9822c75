#!/usr/bin/env bash
# Instructions per malloc + write (first and last byte) + free of one block above
# SMALL_MAX, with N other blocks of the same size live, under callgrind: arena-alloc
# (preloaded) and glibc side by side. Per pair = (Ir of 2,000 pairs - Ir of 1,000) / 1,000,
# so start-up and the live blocks' own cost drop out. A fifth column alternates the size
# with 1 MiB (each pair of another size than the last freed block).
# Usage: arena-alloc/ci/large_pair_cost.sh [sizes...]   (needs valgrind and cc)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$ROOT"
cargo build --release -q -p memlayout-arena-alloc --features capi
LIB="$ROOT/target/release/libarena_alloc.so"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cat > "$dir/pair.c" <<'C'
#include <stdlib.h>
/* pair SIZE PAIRS LIVE [SIZE2]: LIVE blocks of SIZE stay live while PAIRS blocks are
   allocated, written and freed (every other one of SIZE2 bytes if given). */
int main(int argc, char **argv) {
    size_t size = strtoull(argv[1], 0, 10), size2 = argc > 4 ? strtoull(argv[4], 0, 10) : size;
    long pairs = atol(argv[2]), live = atol(argv[3]);
    void **keep = malloc(sizeof(void *) * (live + 1));
    for (long i = 0; i < live; i++) { keep[i] = malloc(size); ((volatile char *)keep[i])[0] = 1; }
    for (long i = 0; i < pairs; i++) {
        size_t sz = (i & 1) ? size2 : size;
        volatile char *p = malloc(sz);
        p[0] = 1; p[sz - 1] = 2;
        free((void *)p);
    }
    for (long i = 0; i < live; i++) free(keep[i]);
    return 0;
}
C
cc -O2 -o "$dir/pair" "$dir/pair.c"
ir() { # preload size pairs live [size2]
  local pre=$1; shift
  env ${pre:+LD_PRELOAD=$pre} valgrind --tool=callgrind --dump-instr=no \
    --callgrind-out-file="$dir/cg" "$dir/pair" "$@" >/dev/null 2>&1
  grep '^summary:' "$dir/cg" | awk '{print $2}'
}
per_pair() { echo $(( ($(ir "$1" "$2" 2000 "${@:3}") - $(ir "$1" "$2" 1000 "${@:3}")) / 1000 )); }
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(131073 200000 524288 1048576 1310720 1310721 4194304 16777216 67108864)
printf '%10s %7s %7s %7s %7s %11s\n' size live=1 100 1000 glibc "alt 1 MiB"
for s in "${sizes[@]}"; do
  a1=$(per_pair "$LIB" "$s" 1); a100=$(per_pair "$LIB" "$s" 100)
  a1000=-
  [ "$s" -gt $((16 << 20)) ] || a1000=$(per_pair "$LIB" "$s" 1000)
  g=$(per_pair "" "$s" 1); alt=$(per_pair "$LIB" "$s" 1 1048576)
  printf '%10s %7s %7s %7s %7s %11s\n' "$s" "$a1" "$a100" "$a1000" "$g" "$alt"
done
