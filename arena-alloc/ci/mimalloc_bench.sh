#!/usr/bin/env bash
# Runs mimalloc-bench's original C/C++ programs under arena-alloc, glibc and mimalloc
# (and jemalloc if asked), interleaved (arena, glibc, mimalloc, arena, ...), REPS times,
# and prints a Markdown table of medians: the program's own metric or wall time, CPU time,
# peak RSS and minor page faults (from /usr/bin/time -v's fields). Not run by CI (about
# 15 minutes for 3 repetitions on 2 cores).
#
# The programs are not part of this repository: the script clones
# https://github.com/daanx/mimalloc-bench at run time (or uses MIMALLOC_BENCH_SRC, a
# checkout or export of it) and builds them with gcc/g++ under a temporary folder.
#   arena-alloc/ci/mimalloc_bench.sh [REPS] [ALLOCATORS]     e.g. 3 "ours sys mi"
# Allocators: ours (libarena_alloc.so, built here), sys (glibc), mi (MIMALLOC_SO, default
# Debian's libmimalloc.so.2), je (JEMALLOC_SO, default Debian's libjemalloc.so.2); the
# table compares ours, sys and mi. TESTS="mstress larson ..." runs a subset.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
REPS="${1:-3}"
ALLOCS="${2:-ours sys mi}"
MI="${MIMALLOC_SO:-/usr/lib/x86_64-linux-gnu/libmimalloc.so.2}"
JE="${JEMALLOC_SO:-/usr/lib/x86_64-linux-gnu/libjemalloc.so.2}"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
cd "$ROOT"
cargo build --release -q -p memlayout-arena-alloc --features capi
OURS="$ROOT/target/release/libarena_alloc.so"
if [ -n "${MIMALLOC_BENCH_SRC:-}" ]; then
    cp -r "$MIMALLOC_BENCH_SRC/bench" "$WORK/bench"
else
    git clone -q --depth 1 https://github.com/daanx/mimalloc-bench "$WORK/src"
    mv "$WORK/src/bench" "$WORK/bench"
fi
B="$WORK/bench"; O="$WORK/out"; mkdir -p "$O"
C="-O3 -w -Wno-implicit-function-declaration -Wno-implicit-int -Wno-int-conversion -Wno-incompatible-pointer-types"
X="-O3 -w -std=c++17"
(cd "$B/cfrac" && gcc $C -std=gnu89 -DNOMEMOPT=1 -o "$O/cfrac" cfrac.c pops.c pconst.c pio.c \
    pabs.c pneg.c pcmp.c podd.c phalf.c padd.c psub.c pmul.c pdivmod.c psqrt.c ppowmod.c \
    atop.c ptoa.c itop.c utop.c ptou.c errorp.c pfloat.c pidiv.c pimod.c picmp.c primes.c \
    pcfrac.c pgcd.c -lm)
(cd "$B/espresso" && gcc $C -std=gnu89 -o "$O/espresso" *.c -lm)
(cd "$B/barnes" && gcc $C -std=gnu89 -o "$O/barnes" code.c code_io.c load.c grav.c getparam.c util.c -lm 2>/dev/null)
g++ $X -DCPP=1 -o "$O/larson" "$B/larson/larson.cpp" -pthread
g++ $X -DBENCH=4 -o "$O/alloc-test" "$B/alloc-test/test_common.cpp" "$B/alloc-test/allocator_tester.cpp" -pthread
g++ $X -o "$O/cache-scratch" "$B/cache-scratch/cache-scratch.cpp" -pthread
g++ $X -o "$O/cache-thrash" "$B/cache-thrash/cache-thrash.cpp" -pthread
gcc $C -o "$O/xmalloc-test" "$B/xmalloc-test/xmalloc-test.c" -pthread
g++ $X -o "$O/malloc-large" "$B/malloc-large/malloc-large.cpp" -pthread
gcc $C -o "$O/mstress" "$B/mstress/mstress.c" -pthread
gcc $C -o "$O/mleak" "$B/mleak/mleak.c" -pthread
g++ $X -fpermissive -I"$B/rptest" -o "$O/rptest" "$B/rptest/rptest.c" "$B/rptest/thread.c" "$B/rptest/timer.c" -pthread -lm
gcc $C -o "$O/glibc-simple" "$B/glibc-bench/bench-malloc-simple.c" -pthread
gcc $C -o "$O/glibc-thread" "$B/glibc-bench/bench-malloc-thread.c" -pthread
P=$(nproc)
lib() { case $1 in sys) echo "";; ours) echo "$OURS";; mi) echo "$MI";; je) echo "$JE";; esac; }
cmd() { case $1 in
    cfrac) echo "$O/cfrac 17545186520507317056371138836327483792789528";;
    espresso) echo "$O/espresso $B/espresso/largest.espresso";;
    barnes) echo "$O/barnes";;
    larson) echo "$O/larson 5 8 1000 5000 100 4141 $P";;
    alloc-test1) echo "$O/alloc-test 1";;
    alloc-testN) echo "$O/alloc-test $P";;
    xmalloc-test) echo "$O/xmalloc-test -w $P -t 5 -s 64";;
    cache-thrash1) echo "$O/cache-thrash 1 1000 1 2000000 $P";;
    cache-thrashN) echo "$O/cache-thrash $P 1000 1 2000000 $P";;
    cache-scratch1) echo "$O/cache-scratch 1 1000 1 2000000 $P";;
    cache-scratchN) echo "$O/cache-scratch $P 1000 1 2000000 $P";;
    malloc-large) echo "$O/malloc-large";;
    mstress) echo "$O/mstress $P 50 25";;
    mleak10) echo "$O/mleak 5";;
    mleak100) echo "$O/mleak 50";;
    rptest) echo "$O/rptest $P 0 1 2 500 1000 100 8 16000";;
    glibc-simple) echo "$O/glibc-simple";;
    glibc-thread) echo "$O/glibc-thread $P";;
    rbstress1) echo "ruby $B/rbstress/stress_mem.rb 1";;
    rbstressN) echo "ruby $B/rbstress/stress_mem.rb $P";;
esac; }
metric() { case $1 in
    larson) sed -n 's/.*Throughput = *\([0-9.]*\).*/\1/p' "$2" | head -1;;
    rptest) sed -n 's/.*\.\.\.\([0-9]*\) memory ops.*/\1/p' "$2" | head -1;;
    xmalloc-test) sed -n 's/rtime: \([0-9.]*\).*/\1/p' "$2" | head -1;;
    glibc-thread) sed -n 's/^\([0-9.]*\).*/\1/p' "$2" | head -1;;
    *) echo "-";;
esac; }
if [ -z "${TESTS:-}" ]; then
    TESTS="cfrac espresso barnes larson alloc-test1 alloc-testN xmalloc-test cache-thrash1 cache-thrashN cache-scratch1 cache-scratchN malloc-large mstress mleak10 mleak100 rptest glibc-simple glibc-thread"
    command -v ruby >/dev/null && TESTS="$TESTS rbstress1 rbstressN"
fi
TSV="$WORK/results.tsv"
for r in $(seq 1 "$REPS"); do
  # Each repetition moves the programs' stack by a different amount (an environment
  # variable of 0-4 KiB, the same for every allocator in that repetition): cache-thrash's
  # CPU time moves by up to 1.5x with the stack's address alone, for every allocator, so a
  # median over one layout would compare layouts, not allocators.
  pad=$(( (r - 1) * 1237 % 4096 ))
  PADV=$(printf '%*s' "$pad" '')
  for t in $TESTS; do
    for a in $ALLOCS; do
      L=$(lib "$a"); out="$WORK/out.txt"; inf=/dev/null
      [ "$t" = barnes ] && inf="$B/barnes/input"
      rc=0
      t0=$(date +%s%N)
      (cd "$WORK" && /usr/bin/time -o "$WORK/time" -f "%M %U %S %R" env MB_LAYOUT_PAD="$PADV" ${L:+LD_PRELOAD=$L} $(cmd "$t") <"$inf" >"$out" 2>&1) || rc=$?
      t1=$(date +%s%N)
      # Wall time from the shell's clock (ms resolution; /usr/bin/time's %e has 10 ms).
      wall=$(awk -v n=$((t1 - t0)) 'BEGIN { printf "%.3f", n / 1e9 }')
      m=$(metric "$t" "$out")
      printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$t" "$a" "$r" "$wall" "$(tail -1 "$WORK/time" | tr ' ' '\t')" "${m:--}" "$rc" >>"$TSV"
      echo "$t $a rep $r (pad $pad): $wall $(tail -1 "$WORK/time") ${m:-} (exit $rc)" >&2
    done
  done
done
python3 "$ROOT/arena-alloc/ci/mimalloc_bench_table.py" "$TSV"
