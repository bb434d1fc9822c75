#!/usr/bin/env bash
# sqlite3 and redis-server with libarena_alloc.so preloaded, against glibc's malloc: the
# same output, and each one's peak RSS (VmHWM) side by side.
#   sqlite3: an in-memory database of 100,000 rows (insert, index, group, delete, vacuum)
#   redis:   a server on 127.0.0.1 (a port of its own, no persistence, --maxmemory 42mb,
#            allkeys-lru) answers 100,000 requests of a short redis-benchmark, then loads
#            106,000 keys of 250 B: the dataset's digest, keys evicted by the load (none
#            expected) and the server's peak RSS are compared with glibc's. Then a churn
#            (4,000 B and 200 KB values, evicting, then a flush): its own peak RSS.
# Debian's redis-server links jemalloc, which its plain run uses: the glibc run preloads
# libc.so.6 so that glibc's malloc answers first, as libarena_alloc.so does in the other.
# Programs missing are installed with apt-get; when that cannot be done the program is
# skipped with the reason printed. Every run is bounded by `timeout`; the server is stopped
# by its PID. About 20 s on an idle 2-core machine.
# Usage: arena-alloc/ci/server_programs.sh [LIB]   (default: target/release/libarena_alloc.so)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
LIB="${1:-$ROOT/target/release/libarena_alloc.so}"
[ -f "$LIB" ] || { echo "missing $LIB (cargo build --release -p memlayout-arena-alloc --features capi)" >&2; exit 1; }
GLIBC="$(gcc -print-file-name=libc.so.6 2>/dev/null || true)"
[ -f "$GLIBC" ] || GLIBC=/lib/x86_64-linux-gnu/libc.so.6
WORK="$(mktemp -d)"
SERVER_PID=""
cleanup() {
    if [ -n "$SERVER_PID" ]; then kill -9 "$SERVER_PID" 2>/dev/null || true; fi
    rm -rf "$WORK"
}
trap cleanup EXIT
FAIL=0

# install COMMAND PACKAGE...: makes COMMAND available through apt-get, or says why not.
install() {
    local cmd="$1"; shift
    command -v "$cmd" >/dev/null && return 0
    local sudo=""
    if [ "$(id -u)" != 0 ]; then
        if sudo -n true 2>/dev/null; then sudo="sudo -n"; else
            echo "SKIPPED $cmd: not installed, and apt-get needs root (no passwordless sudo)"; return 1
        fi
    fi
    if ! command -v apt-get >/dev/null; then echo "SKIPPED $cmd: not installed and no apt-get"; return 1; fi
    echo "installing $* with apt-get"
    if ! DEBIAN_FRONTEND=noninteractive timeout 300 $sudo apt-get install -y -q "$@" >"$WORK/apt.log" 2>&1; then
        DEBIAN_FRONTEND=noninteractive timeout 300 $sudo apt-get update -q >>"$WORK/apt.log" 2>&1 || true
        DEBIAN_FRONTEND=noninteractive timeout 300 $sudo apt-get install -y -q "$@" >>"$WORK/apt.log" 2>&1 || true
    fi
    command -v "$cmd" >/dev/null && return 0
    echo "SKIPPED $cmd: apt-get could not install $*: $(tail -n 1 "$WORK/apt.log")"
    return 1
}

# The preloaded library answers the programs' allocations (a build without the `capi`
# feature exports no malloc, and the "arena-alloc" runs would measure the default one).
msg=$(ARENA_ALLOC_HEAP_COUNT=abc LD_PRELOAD="$LIB" bash -c 'echo' 2>&1 >/dev/null)
case "$msg" in
    *"arena-alloc: ignoring ARENA_ALLOC_HEAP_COUNT"*) ;;
    *) echo "FAIL: $LIB does not answer malloc under LD_PRELOAD (built without --features capi?)"; exit 1;;
esac

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2fx", a / b; else print "n/a" }'; }

# ---------------------------------------------------------------------------------------
# sqlite3
if install sqlite3 sqlite3; then
    cat >"$WORK/load.sql" <<'SQL'
CREATE TABLE t(id INTEGER PRIMARY KEY, k TEXT, v TEXT);
WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 100000)
INSERT INTO t SELECT i, printf('%08x', (i * 2654435761) % 4294967296),
    substr(printf('%.*c', 40 + i % 200, 'x') || i, 1, 40 + i % 200) FROM c;
CREATE INDEX tk ON t(k);
SELECT count(*), sum(length(v)), min(k), max(k) FROM t;
SELECT substr(k, 1, 1) AS p, count(*), sum(length(v)) FROM t GROUP BY p ORDER BY p;
DELETE FROM t WHERE id % 3 = 0;
UPDATE t SET v = v || v WHERE id % 7 = 0;
SELECT count(*), sum(length(v)) FROM t;
SELECT k, length(v) FROM t ORDER BY k LIMIT 3;
VACUUM;
SELECT count(*) FROM t WHERE k > '80000000';
SQL
    for mode in glibc arena; do
        pre="$GLIBC"; [ "$mode" = arena ] && pre="$LIB"
        rc=0
        LD_PRELOAD="$pre" timeout 120 /usr/bin/time -f '%M %e' -o "$WORK/sqlite.$mode.time" \
            sqlite3 :memory: <"$WORK/load.sql" >"$WORK/sqlite.$mode.out" 2>"$WORK/sqlite.$mode.err" || rc=$?
        echo "exit $rc" >>"$WORK/sqlite.$mode.out"
    done
    read -r kb_g s_g <"$WORK/sqlite.glibc.time"
    read -r kb_a s_a <"$WORK/sqlite.arena.time"
    if cmp -s "$WORK/sqlite.glibc.out" "$WORK/sqlite.arena.out" && grep -qx 'exit 0' "$WORK/sqlite.glibc.out"; then
        same="same output"
    else
        same="DIFFERENT OUTPUT OR FAILURE"; FAIL=1
        diff "$WORK/sqlite.glibc.out" "$WORK/sqlite.arena.out" | head -10 || true
        tail -n 3 "$WORK/sqlite.arena.err" || true
    fi
    printf 'sqlite3   peak RSS glibc %7d KiB  arena-alloc %7d KiB  %s   (%s s / %s s)  %s\n' \
        "$kb_g" "$kb_a" "$(ratio "$kb_a" "$kb_g")" "$s_g" "$s_a" "$same"
fi

# ---------------------------------------------------------------------------------------
# redis-server
if install redis-server redis-server && install redis-benchmark redis-tools && install redis-cli redis-tools; then
    # 106,000 SETs of 250-byte values, in the protocol that `redis-cli --pipe` sends.
    awk 'BEGIN {
        v = ""; for (j = 0; j < 250; j++) v = v sprintf("%c", 97 + j % 26);
        for (i = 0; i < 106000; i++) {
            k = sprintf("key:%07d", i);
            printf "*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$250\r\n%s\r\n", length(k), k, v
        }
    }' >"$WORK/load.resp"
    port=$(( 20000 + $$ % 20000 ))
    for mode in glibc arena; do
        pre="$GLIBC"; [ "$mode" = arena ] && pre="$LIB"
        mkdir -p "$WORK/redis.$mode"
        LD_PRELOAD="$pre" timeout 300 redis-server --port "$port" --bind 127.0.0.1 --save '' \
            --appendonly no --maxmemory 42mb --maxmemory-policy allkeys-lru \
            --enable-debug-command local --dir "$WORK/redis.$mode" \
            --logfile "$WORK/redis.$mode/log" >/dev/null 2>&1 &
        SERVER_PID=$!
        cli() { timeout 60 redis-cli -h 127.0.0.1 -p "$port" "$@"; }
        up=0
        for _ in $(seq 1 100); do
            if cli ping 2>/dev/null | grep -q PONG; then up=1; break; fi
            sleep 0.1
        done
        if [ "$up" = 0 ]; then
            echo "redis ($mode): the server did not answer"; tail -n 5 "$WORK/redis.$mode/log" || true
            FAIL=1; kill -9 "$SERVER_PID" 2>/dev/null || true; SERVER_PID=""; continue
        fi
        # 100,000 earlier requests (redis-benchmark's defaults: 3-byte values; the load's
        # peak used to grow with them), then the load, then its figures.
        timeout 120 redis-benchmark -h 127.0.0.1 -p "$port" -q -n 25000 -c 8 -P 16 \
            -t set,get,lpush,lpop >"$WORK/bench.$mode" 2>&1 || { echo "redis-benchmark ($mode) failed"; FAIL=1; }
        cli del key:__rand_int__ counter:__rand_int__ mylist >/dev/null
        cli config resetstat >/dev/null
        timeout 120 redis-cli -h 127.0.0.1 -p "$port" --pipe <"$WORK/load.resp" >"$WORK/pipe.$mode" 2>&1 \
            || { echo "redis load ($mode) failed: $(tail -n 2 "$WORK/pipe.$mode")"; FAIL=1; }
        {
            echo "dbsize $(cli dbsize)"
            echo "digest $(cli debug digest)"
            echo "get $(cli get key:0105999 | cksum)"
        } >"$WORK/redis.$mode.out"
        info=$(cli info)
        field() { echo "$info" | tr -d '\r' | awk -F: -v f="$1" '$1 == f { print $2 }'; }
        # The server's own PID (SERVER_PID is `timeout`'s, which forwards signals to it).
        pid=$(field process_id)
        eval "evicted_$mode=$(field evicted_keys)"
        eval "used_$mode=$(( $(field used_memory) / 1024 ))"
        eval "hwm_$mode=$(awk '/^VmHWM:/ { print $2 }' "/proc/$pid/status")"
        eval "rps_$mode=\"$(tr '\r' '\n' <"$WORK/bench.$mode" | awk '/requests per second/ { printf "%s %s ", $1, $2 }')\""
        # Churn: values of 4,000 B (sets and lists, evicting under the limit) and 200 KB,
        # then a flush; its own peak (VmHWM starts again from the current RSS: clear_refs,
        # proc(5)), and what is left resident after it.
        cli flushall >/dev/null
        echo 5 >"/proc/$pid/clear_refs"
        timeout 120 redis-benchmark -h 127.0.0.1 -p "$port" -q -n 20000 -c 8 -P 16 -r 5000 \
            -d 4000 -t set,get,lpush,lpop >/dev/null 2>&1 || { echo "redis-benchmark ($mode) failed"; FAIL=1; }
        timeout 120 redis-benchmark -h 127.0.0.1 -p "$port" -q -n 1000 -c 4 -r 100 \
            -d 200000 -t set >/dev/null 2>&1 || { echo "redis-benchmark ($mode) failed"; FAIL=1; }
        cli flushall >/dev/null
        eval "churn_hwm_$mode=$(awk '/^VmHWM:/ { print $2 }' "/proc/$pid/status")"
        eval "churn_rss_$mode=$(awk '/^VmRSS:/ { print $2 }' "/proc/$pid/status")"
        kill "$SERVER_PID" 2>/dev/null || true
        for _ in $(seq 1 50); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$SERVER_PID" 2>/dev/null || true
        wait "$SERVER_PID" 2>/dev/null || true
        SERVER_PID=""
    done
    # shellcheck disable=SC2154
    if cmp -s "$WORK/redis.glibc.out" "$WORK/redis.arena.out" && grep -q '^dbsize 106000$' "$WORK/redis.arena.out"; then
        same="same dataset"
    else
        same="DIFFERENT DATASET"; FAIL=1
        diff "$WORK/redis.glibc.out" "$WORK/redis.arena.out" || true
    fi
    # shellcheck disable=SC2154
    printf 'redis     load peak RSS glibc %7d KiB  arena-alloc %7d KiB  %s   used_memory %d / %d KiB  evicted %s / %s   %s\n' \
        "$hwm_glibc" "$hwm_arena" "$(ratio "$hwm_arena" "$hwm_glibc")" "$used_glibc" "$used_arena" \
        "$evicted_glibc" "$evicted_arena" "$same"
    # shellcheck disable=SC2154
    printf 'redis     churn peak RSS glibc %7d KiB  arena-alloc %7d KiB  %s   resident after its flush %d / %d KiB\n' \
        "$churn_hwm_glibc" "$churn_hwm_arena" "$(ratio "$churn_hwm_arena" "$churn_hwm_glibc")" \
        "$churn_rss_glibc" "$churn_rss_arena"
    # shellcheck disable=SC2154
    echo "redis-benchmark glibc: $rps_glibc"
    # shellcheck disable=SC2154
    echo "redis-benchmark arena-alloc: $rps_arena"
    # shellcheck disable=SC2154
    if [ "$evicted_glibc" = 0 ] && [ "$evicted_arena" != 0 ]; then
        echo "redis: arena-alloc evicted $evicted_arena keys where glibc evicted none"; FAIL=1
    fi
fi
[ "$FAIL" = 0 ] && echo "server programs: same output" || { echo "server programs: FAILED"; exit 1; }
