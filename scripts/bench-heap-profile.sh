#!/usr/bin/env bash
# What the heap-profile build costs (issue 17). The same workloads on three
# allocators, alternating, ROUNDS times each, medians and ratios as a
# markdown table:
#   mimalloc      the default build (target/release/strata)
#   jemalloc+prof a build with --features heap-profile: jemalloc, its
#                 profiler active, one sample per 512 KiB allocated
#   jemalloc      the same binary with MALLOC_CONF=prof_active:false (the
#                 profiler compiled in but not sampling: jemalloc's own cost)
# Workloads:
#   engine  `strata bench engine --benchmarks=fillrandom,readrandom` (in
#           process, no fsync): ops/s of each
#   node    `strata serve --durability none` under wrk PUT (put.lua over a
#           KEYSPACE) then GET (get.lua over the same), CONNECTIONS
#           closed-loop connections, DURATION seconds each: req/s and p99
# wrk and the node share this machine's cores; compare the ratios.
#
# Knobs (environment): ROUNDS (3), NUM (engine keys, 1000000), DURATION
# (10), CONNECTIONS (32), KEYSPACE (1000000), MIMALLOC_BIN and JEMALLOC_BIN
# (binaries to use instead of building both).
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS=${ROUNDS:-3}
NUM=${NUM:-1000000}
DURATION=${DURATION:-10}
CONNECTIONS=${CONNECTIONS:-32}
KEYSPACE=${KEYSPACE:-1000000}
command -v wrk >/dev/null || { echo "needs wrk (apt-get install wrk)" >&2; exit 1; }

work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
if [[ -z ${MIMALLOC_BIN:-} || -z ${JEMALLOC_BIN:-} ]]; then
    cargo build --release -p strata -q
    cp target/release/strata "$work/strata-mimalloc"
    cargo build --release -p strata --features heap-profile -q
    cp target/release/strata "$work/strata-jemalloc"
    # Leave the default binary in place.
    cargo build --release -p strata -q
    MIMALLOC_BIN=$work/strata-mimalloc JEMALLOC_BIN=$work/strata-jemalloc
fi

# run VARIANT CMD...: the command under VARIANT's binary and MALLOC_CONF,
# in place of the (sub)shell that calls it, so that `run ... &` leaves the
# binary's own pid in $!.
run() {
    local v=$1
    shift
    case $v in
        mimalloc) exec "$MIMALLOC_BIN" "$@" ;;
        jemalloc+prof) exec "$JEMALLOC_BIN" "$@" ;;
        jemalloc) MALLOC_CONF=prof_active:false exec "$JEMALLOC_BIN" "$@" ;;
    esac
}

# shellcheck source=lib/ab.sh
source scripts/lib/ab.sh

results=$work/results
: >"$results"
variants=(mimalloc jemalloc+prof jemalloc)
for round in $(seq 1 "$ROUNDS"); do
    for v in "${variants[@]}"; do
        echo "round $round: $v" >&2
        out=$(run "$v" bench engine --benchmarks=fillrandom,readrandom --num="$NUM" --durability none --db "$work/db-$round-$v" 2>&1)
        fill=$(awk '/^fillrandom/ {for (i=1;i<=NF;i++) if ($(i+1)=="ops/sec;") print $i}' <<<"$out")
        read=$(awk '/^readrandom/ {for (i=1;i<=NF;i++) if ($(i+1)=="ops/sec;") print $i}' <<<"$out")
        rm -rf "$work/db-$round-$v"
        port=$(free_port)
        run "$v" serve --listen "127.0.0.1:$port" --data-dir "$work/node-$round-$v" --durability none --log-level warn >/dev/null 2>&1 &
        pid=$!
        for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/v0/status" >/dev/null && break; sleep 0.1; done
        put=$(wrk_rps_p99 "$(wrk --latency -t2 -c"$CONNECTIONS" -d"${DURATION}s" -s scripts/wrk/put.lua "http://127.0.0.1:$port" -- "$KEYSPACE" 200000)")
        get=$(wrk_rps_p99 "$(wrk --latency -t2 -c"$CONNECTIONS" -d"${DURATION}s" -s scripts/wrk/get.lua "http://127.0.0.1:$port" -- "$KEYSPACE" 200000)")
        rss=$(awk '/VmHWM/ {print $2}' "/proc/$pid/status")
        kill "$pid"; wait "$pid" 2>/dev/null || true
        rm -rf "$work/node-$round-$v"
        echo "$v $fill $read $put $get $rss" | tee -a "$results" >&2
    done
done

# RSS in MiB, then the medians and ratios.
awk '{$8 = $8 / 1024; print}' "$results" >"$results.mib"
ab_table "$results.mib" "engine fillrandom ops/s" "engine readrandom ops/s" "node PUT req/s" \
    "node PUT p99 ms" "node GET req/s" "node GET p99 ms" "node peak RSS MiB"
