#!/usr/bin/env bash
# Runs unmodified programs with and without libarena_alloc.so preloaded, checks that their
# output is identical, and prints the wall time of each run.
#   python3: a thread pool building and sorting lists of strings and dicts
#   git:     init, add and commit 400 files, log
#   gcc:     compile and run a small C program
#   misuse:  double and interior frees must abort with a message (ci/misuse.c), a double
#            free at every size class in three ways
#   capi_test: every exported function (glibc's __libc_* names, mallinfo2, mallopt,
#              malloc_trim, malloc_stats, malloc_info, C23 free_sized), alignment and
#              errno cases, threads, fork
#   cxx_test:  C++ operator new/delete in every form, new_handler and bad_alloc
# Usage: arena-alloc/ci/real_programs.sh   (from anywhere; builds the library first)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$ROOT"
cargo build --release -q -p memlayout-arena-alloc --features capi
LIB="$ROOT/target/release/libarena_alloc.so"
[ -f "$LIB" ] || { echo "missing $LIB" >&2; exit 1; }
# The arena table is all zeros, so it lies in .bss (no file-backed pages to fault in under
# LD_PRELOAD); a non-zero initial field would move its 80 KiB into .data.
DATA=$(size -A "$LIB" | awk '$1 == ".data" { print $2 }')
if [ "${DATA:-0}" -gt 16384 ]; then
    echo "FAIL: .data of libarena_alloc.so is $DATA bytes (a static table left .bss?)" >&2
    exit 1
fi
echo ".data of libarena_alloc.so: ${DATA:-0} bytes"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
FAIL=0

now_ms() { date +%s%3N; }

# compare NAME CMD...: runs CMD in $WORK/plain and $WORK/preload (fresh dirs), compares
# stdout+exit status, prints times.
compare() {
    local name="$1"; shift
    local out
    for mode in plain preload; do
        rm -rf "$WORK/$mode"; mkdir -p "$WORK/$mode"
        local t0 t1 rc=0
        t0=$(now_ms)
        if [ "$mode" = preload ]; then
            (cd "$WORK/$mode" && LD_PRELOAD="$LIB" "$@") >"$WORK/$name.$mode.out" 2>"$WORK/$name.$mode.err" || rc=$?
        else
            (cd "$WORK/$mode" && "$@") >"$WORK/$name.$mode.out" 2>"$WORK/$name.$mode.err" || rc=$?
        fi
        t1=$(now_ms)
        echo "$rc" >>"$WORK/$name.$mode.out"
        eval "ms_$mode=$((t1 - t0))"
    done
    if cmp -s "$WORK/$name.plain.out" "$WORK/$name.preload.out" && [ "$(tail -n1 "$WORK/$name.plain.out")" = 0 ]; then
        out="same output"
    else
        out="DIFFERENT OUTPUT OR FAILURE"; FAIL=1
        diff "$WORK/$name.plain.out" "$WORK/$name.preload.out" | head -20 || true
        tail -n 5 "$WORK/$name.preload.err" "$WORK/$name.plain.err" || true
    fi
    # shellcheck disable=SC2154
    printf '%-10s glibc %6d ms   arena-alloc %6d ms   %s\n' "$name" "$ms_plain" "$ms_preload" "$out"
}

cat >"$WORK/workload.py" <<'PY'
import hashlib
from concurrent.futures import ThreadPoolExecutor

def job(seed):
    words = [hashlib.sha1(f"{seed}-{i}".encode()).hexdigest() * (1 + i % 5) for i in range(30000)]
    words.sort()
    recs = [{"k": w[:12], "n": i, "tags": [w[j:j + 3] for j in range(0, 15, 3)]} for i, w in enumerate(words)]
    recs.sort(key=lambda r: (r["tags"][2], r["n"]))
    joined = "".join(r["k"] for r in recs[::97])
    return hashlib.sha256(joined.encode()).hexdigest()

with ThreadPoolExecutor(max_workers=8) as pool:
    for h in pool.map(job, range(16)):
        print(h)
PY

cat >"$WORK/git.sh" <<'SH'
set -e
export GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@example.invalid GIT_COMMITTER_NAME=t
export GIT_COMMITTER_EMAIL=t@example.invalid GIT_AUTHOR_DATE="2026-01-01T00:00:00Z"
export GIT_COMMITTER_DATE="2026-01-01T00:00:00Z" GIT_CONFIG_NOSYSTEM=1 HOME="$PWD"
git init -q -b main repo && cd repo
for i in $(seq 1 400); do
    mkdir -p "d$((i % 20))"
    seq 1 $((i * 7 % 300 + 1)) | sed "s/^/file $i line /" > "d$((i % 20))/f$i.txt"
done
git add . && git commit -q -m "four hundred files"
for i in $(seq 1 400 | awk 'NR % 7 == 0'); do echo "change $i" >> "d$((i % 20))/f$i.txt"; done
git commit -q -am "changes"
git log --stat --format='%H %s' | head -c 100000
git gc -q && git fsck --no-progress && git rev-parse HEAD
SH

cat >"$WORK/prog.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static int cmp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }
int main(void) {
    enum { N = 20000 };
    char **v = malloc(N * sizeof *v);
    for (int i = 0; i < N; i++) { v[i] = malloc(24); snprintf(v[i], 24, "s%07d", (i * 7919) % N); }
    qsort(v, N, sizeof *v, cmp);
    unsigned long h = 5381;
    for (int i = 0; i < N; i++) { for (char *c = v[i]; *c; c++) h = h * 33 + (unsigned char)*c; free(v[i]); }
    free(v);
    printf("%lu\n", h);
    return 0;
}
C

gcc -O2 -pthread -Wall -Wno-deprecated-declarations -Wno-alloc-size-larger-than \
    -o "$WORK/capi_test" "$ROOT/arena-alloc/ci/capi_test.c" -ldl

g++ -O2 -std=c++17 -Wall -o "$WORK/cxx_test" "$ROOT/arena-alloc/ci/cxx_test.cpp" -ldl

echo "LD_PRELOAD=$LIB"
compare python3 python3 "$WORK/workload.py"
compare git bash "$WORK/git.sh"
compare gcc bash -c "gcc -O2 -Wall -o prog '$WORK/prog.c' && ./prog"
compare capi_test "$WORK/capi_test"
compare cxx_test "$WORK/cxx_test"

# The preloaded runs really used arena-alloc: its own checks, and its stderr message.
EXPECT_ARENA=1 MALLOC_INFO_OUT="$WORK/malloc_info.xml" LD_PRELOAD="$LIB" "$WORK/capi_test" >/dev/null \
    || { echo "capi_test under arena-alloc failed"; FAIL=1; }
EXPECT_ARENA=1 LD_PRELOAD="$LIB" "$WORK/cxx_test" >/dev/null \
    || { echo "cxx_test under arena-alloc failed"; FAIL=1; }
# malloc_info's XML, read by a real XML parser.
python3 -c 'import sys, xml.dom.minidom as m; d = m.parse(sys.argv[1]); assert d.documentElement.getAttribute("allocator") == "arena-alloc"' \
    "$WORK/malloc_info.xml" && echo "malloc_info: well-formed XML" || { echo "malloc_info XML FAILED"; FAIL=1; }
msg=$(ARENA_ALLOC_HEAP_COUNT=abc LD_PRELOAD="$LIB" python3 -c 'print(1)' 2>&1 >/dev/null)
case "$msg" in
    *"arena-alloc: ignoring ARENA_ALLOC_HEAP_COUNT"*) echo "preload check: arena-alloc answered python3's allocations";;
    *) echo "preload check FAILED: $msg"; FAIL=1;;
esac
# Misuse of free: each case must abort (SIGABRT, exit status 134) with arena-alloc's line.
gcc -O0 -Wno-free-nonheap-object -o "$WORK/misuse" "$ROOT/arena-alloc/ci/misuse.c"
misuse() { # HARDENED CASE
    local rc=0 err
    err=$(ARENA_ALLOC_HARDENED=$1 LD_PRELOAD="$LIB" "$WORK/misuse" "$2" 2>&1 >/dev/null) || rc=$?
    if [ "$rc" = 134 ] && [[ "$err" == *"arena-alloc: free(): "* ]]; then
        echo "misuse $2 (hardened=$1): aborted: ${err%%$'\n'*}"
    else
        echo "misuse $2 (hardened=$1): NOT CAUGHT (exit $rc): $err"; FAIL=1
    fi
}
for c in huge-double huge-interior direct-double small-interior-64 small-interior-48 small-interior-2k medium-interior-10k small-double medium-double unmapped-double; do
    misuse 0 "$c"
    misuse 1 "$c"
done
# A double free at every size class (16 B to 128 KiB: 16-byte steps to 128, then four
# classes per doubling), and of large extents and mappings, in three ways; each must abort
# with "double free detected" and the address.
sizes=""
for s in 16 32 48 64 80 96 112 128; do sizes="$sizes $s"; done
for k in $(seq 7 16); do for q in 5 6 7 8; do sizes="$sizes $(( (1 << k) * q / 4 ))"; done; done
sizes="$sizes 131073 1310720 1310721"
caught=0 total=0
for s in $sizes; do
    for how in now later flushed; do
        total=$((total + 1))
        rc=0
        err=$(ARENA_ALLOC_HARDENED=0 LD_PRELOAD="$LIB" "$WORK/misuse" "double-$how-$s" 2>&1 >/dev/null) || rc=$?
        if [ "$rc" = 134 ] && [[ "$err" == *"arena-alloc: free(): double free detected (0x"* ]]; then
            caught=$((caught + 1))
        else
            echo "double free of $s bytes ($how): NOT CAUGHT (exit $rc): $err"; FAIL=1
        fi
    done
done
echo "double free at every class ($(echo $sizes | wc -w) sizes x 3 ways): $caught of $total aborted"
for h in 0 1; do
    ARENA_ALLOC_HARDENED=$h LD_PRELOAD="$LIB" "$WORK/misuse" valid >/dev/null \
        || { echo "misuse valid (hardened=$h) FAILED"; FAIL=1; }
done
[ "$FAIL" = 0 ] && echo "real programs: all same output" || { echo "real programs: FAILED"; exit 1; }
