#!/usr/bin/env bash
# Server CPU per request at a steady rate, Strata against Redis in the same
# run (issues 28, 46). As users deploy, nothing is pinned: each server and
# each client run where the scheduler puts them (`unpinned`, the rows that
# count). `pinned` rows (PINNINGS, by default both) pin every server to core
# 1 (a cluster's three nodes share it) and every client to core 0. Each runs
# at RATE req/s over CONNECTIONS connections for DURATION seconds. The CPU of each server process
# (utime + stime from /proc/<pid>/stat, all its threads) is read just before
# and just after the load, and divided by the requests served.
#
#   PUT sync:   strata serve --durability sync   vs redis --appendfsync always
#   PUT none:   strata serve --durability none   vs redis --appendfsync no
#   GET:        strata (keys preloaded)          vs redis (keys filled), no fsync
#   PUT 3 nodes: strata cluster up --nodes 3, ack=2&from=3, sync, summed over
#               the three nodes, vs three fsynced Redis SETs (3 x PUT sync)
#   cluster-old: the same cluster with --versions-from-quorum=false (no
#               first phase: the write's version from the clock alone), to
#               price the first phase beside `cluster` (not in the default
#               CASES)
#
# Strata is driven by `strata load` (its smart client routes each key to a
# replica; open loop, one sending thread here), Redis by resp-load
# (crates/respload, open loop) with RESP_THREADS sending threads (default 1,
# as light as `strata load` at this rate; RESP_THREADS=$CONNECTIONS gives one
# thread per connection, the client of the figures before 2026-11-28). Keys: KEYS (default 1000000 for PUT; GET_KEYS, default
# 200000, are written first), values 100 bytes. ROUNDS (default 2) repeats
# the whole comparison; each round prints its ratios.
# Knobs: RATE (2000), CONNECTIONS (16), DURATION (15 s), ROUNDS, KEYS,
# GET_KEYS, CASES ("put-sync put-none get cluster"), PINNINGS ("unpinned
# pinned"), RESP_THREADS (1), RUNTIMES ("shared per-core": each Strata case
# runs once per `--runtime`, beside the same Redis figure), STRATA_BIN.
# Installs redis-server with apt-get when missing.
set -euo pipefail
shopt -s inherit_errexit

cd "$(dirname "$0")/.."
RATE=${RATE:-2000}
CONNECTIONS=${CONNECTIONS:-16}
DURATION=${DURATION:-15}
ROUNDS=${ROUNDS:-2}
KEYS=${KEYS:-1000000}
GET_KEYS=${GET_KEYS:-200000}
CASES=${CASES:-put-sync put-none get cluster}
PINNINGS=${PINNINGS:-unpinned pinned}
RUNTIMES=${RUNTIMES:-shared per-core}
RESP_THREADS=${RESP_THREADS:-1}
log() { printf '==> %s\n' "$*" >&2; }

if ! command -v redis-server >/dev/null; then
    log "installing redis-server"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null
fi
cargo build --release -q -p strata-respload
RESP=target/release/resp-load
# shellcheck source=scripts/lib/cluster.sh
. scripts/lib/cluster.sh
TCK=$(getconf CLK_TCK)
SERVER=()
CLIENT=()
pin() { # unpinned|pinned
    if [[ $1 == pinned ]]; then
        SERVER=(taskset -c 1)
        CLIENT=(taskset -c 0)
    else
        SERVER=()
        CLIENT=()
    fi
}

ticks() { # pid... -> summed utime+stime ticks
    local sum=0 p
    for p in "$@"; do
        sum=$((sum + $(awk '{print $14 + $15}' "/proc/$p/stat")))
    done
    echo "$sum"
}
us_per() { # ticks requests -> µs
    awk -v t="$1" -v n="$2" -v hz="$TCK" 'BEGIN { printf "%.1f", n ? t / hz * 1e6 / n : 0 }'
}

redis_start() { # appendfsync
    rm -rf "$TMP/redis" && mkdir -p "$TMP/redis"
    "${SERVER[@]}" redis-server --port 16379 --bind 127.0.0.1 --dir "$TMP/redis" --save "" \
        --appendonly yes --appendfsync "$1" --daemonize no --logfile "$TMP/redis.log" &
    REDIS=$!
    PIDS+=("$REDIS")
    for _ in $(seq 50); do redis-cli -p 16379 ping >/dev/null 2>&1 && return; sleep 0.1; done
    echo "redis did not start" >&2
    exit 1
}
redis_stop() { kill "$REDIS"; wait "$REDIS" 2>/dev/null || true; }

redis_run() { # op keys -> "µs"
    local before after sent
    before=$(ticks "$REDIS")
    sent=$("${CLIENT[@]}" "$RESP" --addr 127.0.0.1:16379 --op "$1" --rate "$RATE" \
        --connections "$CONNECTIONS" --threads "$RESP_THREADS" --seconds "$DURATION" --keys "$2" | sed -n 's/^sent=\([0-9]*\).*/\1/p')
    after=$(ticks "$REDIS")
    us_per $((after - before)) "$sent"
}

strata_start() { # durability
    rm -rf "$TMP/node"
    "${SERVER[@]}" "$STRATA_BIN" serve --listen 127.0.0.1:0 --data-dir "$TMP/node" --log-level warn \
        --durability "$1" --runtime "$runtime" >"$TMP/node.out" 2>&1 &
    NODE=$!
    PIDS+=("$NODE")
    for _ in $(seq 50); do
        URL=$(sed -n 's/.*listening on \(http[^ ]*\).*/\1/p' "$TMP/node.out")
        [[ -n $URL ]] && return
        sleep 0.1
    done
    echo "node did not start" >&2
    exit 1
}
strata_stop() { kill "$NODE"; wait "$NODE" 2>/dev/null || true; }

strata_run() { # urls workload keys pids... -> "µs"
    local urls=$1 workload=$2 keys=$3 before after n
    shift 3
    before=$(ticks "$@")
    "${CLIENT[@]}" "$STRATA_BIN" load "$urls" --workload "$workload" --keys "$keys" --rate "$RATE" \
        --connections "$CONNECTIONS" --duration "$DURATION" --quiet --json >"$TMP/load.json"
    after=$(ticks "$@")
    n=$(python3 -c 'import json,sys; t=json.load(open(sys.argv[1]))["trials"][0]; print(t["requests"] - t["errors"])' "$TMP/load.json")
    us_per $((after - before)) "$n"
}

printf '| round | pinning | runtime | request | Strata µs | Redis µs | ratio |\n| ---: | --- | --- | --- | ---: | ---: | ---: |\n' >"$TMP/table"
row() { # round name strata redis
    awk -v r="$1" -v p="$pinning" -v t="$runtime" -v n="$2" -v s="$3" -v d="$4" 'BEGIN { printf "| %s | %s | %s | %s | %.0f | %.0f | %.2f× |\n", r, p, t, n, s, d, s / d }' |
        tee -a "$TMP/table" >&2
}

for round in $(seq "$ROUNDS"); do
  for pinning in $PINNINGS; do
    pin "$pinning"
    runtime=
    redis_sync=
    for c in $CASES; do
        case $c in
        put-sync | cluster | cluster-old)
            if [[ -z $redis_sync ]]; then
                log "round $round ($pinning): Redis SET, appendfsync always"
                redis_start always
                redis_sync=$(redis_run set "$KEYS")
                redis_stop
            fi
            for runtime in $RUNTIMES; do
            if [[ $c == put-sync ]]; then
                log "round $round ($pinning, $runtime): Strata PUT, sync"
                strata_start sync
                s=$(strata_run "$URL" put "$KEYS" "$NODE")
                strata_stop
                row "$round" "PUT, sync" "$s" "$redis_sync"
            else
                extra=()
                [[ $c == cluster-old ]] && extra=(--versions-from-quorum=false)
                log "round $round ($pinning, $runtime): Strata PUT, 3 nodes, ack=2&from=3, sync ${extra[*]}"
                rm -rf "$TMP/cluster"
                CLUSTER_CPUS=${SERVER[2]:-} cluster_up "$TMP/cluster" -- --durability sync --runtime "$runtime" "${extra[@]}"
                mapfile -t nodes < <(pgrep -f "serve .*$TMP/cluster/data")
                ((${#nodes[@]} == 3)) || { echo "expected 3 node processes, found ${#nodes[@]}" >&2; exit 1; }
                s=$(strata_run "$URLS" put "$KEYS" "${nodes[@]}")
                cluster_down
                three=$(awk -v r="$redis_sync" 'BEGIN { print 3 * r }')
                row "$round" "PUT, 3 nodes ack=2 from=3, sync${extra[*]:+, ${extra[*]}}, summed (Redis: 3 fsynced SETs)" "$s" "$three"
            fi
            done
            ;;
        put-none)
            log "round $round ($pinning): Redis SET, appendfsync no"
            redis_start no
            d=$(redis_run set "$KEYS")
            redis_stop
            for runtime in $RUNTIMES; do
                log "round $round ($pinning, $runtime): Strata PUT, none"
                strata_start none
                s=$(strata_run "$URL" put "$KEYS" "$NODE")
                strata_stop
                row "$round" "PUT, none" "$s" "$d"
            done
            ;;
        get)
            log "round $round ($pinning): Redis GET over $GET_KEYS filled keys"
            redis_start no
            "${CLIENT[@]}" "$RESP" --addr 127.0.0.1:16379 --op fill --keys "$GET_KEYS" >/dev/null
            d=$(redis_run get "$GET_KEYS")
            redis_stop
            for runtime in $RUNTIMES; do
                log "round $round ($pinning, $runtime): Strata GET over $GET_KEYS preloaded keys"
                strata_start none
                "${CLIENT[@]}" "$STRATA_BIN" load "$URL" --workload get --keys "$GET_KEYS" --preload \
                    --rate 1 --duration 0.1 --quiet --out "$TMP/preload" >/dev/null
                s=$(strata_run "$URL" get "$GET_KEYS" "$NODE")
                strata_stop
                row "$round" "GET" "$s" "$d"
            done
            ;;
        *) echo "unknown case $c" >&2; exit 2 ;;
        esac
    done
  done
done
echo
echo "Server CPU per request at $RATE req/s over $CONNECTIONS connections, ${DURATION}s each ($(date -u +%Y-%m-%d)); resp-load with $RESP_THREADS thread(s)"
echo
cat "$TMP/table"
