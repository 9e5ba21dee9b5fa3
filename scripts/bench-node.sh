#!/usr/bin/env bash
# Node benchmark (issue 3): what the Strata node serves over HTTP, next to this
# machine's HTTP ceiling and Redis, and print a markdown table.
#
#   1. http-ceiling (crates/httpceiling: hyper answering a fixed 100-byte body)
#      under wrk GET: the most any hyper-based server can do here.
#   2. redis-server (no persistence, then with appendfsync always: every
#      SET fsynced before its answer) under redis-benchmark SET/GET with
#      100-byte values, with 1 and with 2 client threads.
#   3. If `strata serve` exists: the node on a fresh data dir, pre-filled with
#      KEYS keys (curl), then wrk GET of existing keys (scripts/wrk/get.lua) and
#      wrk PUT of random new keys with 100-byte values (scripts/wrk/put.lua);
#      then both again at rising load (more connections a step: the LADDER)
#      until p99 passes P99_MS.
#
# The wrk scripts send POOL pre-drawn random requests per thread round and
# round (see scripts/wrk/get.lua): drawing and formatting a key in Lua for
# every request cost about 10% of the machine at 100k req/s, CPU the client
# took from the server beside it. POOL=0 draws a key per request.
#
# wrk runs closed-loop (CONNECTIONS connections, each sending its next request
# when the previous one is answered), so its p99 is that of a saturated server.
# If wrk2 is installed (as `wrk2`, or a `wrk` that takes --rate) the node is
# also measured open-loop at fixed rates rising to 90% of its closed-loop rate.
# Clients and servers share this machine's cores: the figures are for
# comparing with each other, not absolute capacities.
#
# Installs wrk, redis-server and redis-tools with apt-get when missing.
# Knobs (environment): CONNECTIONS (64), DURATION seconds (10), THREADS (wrk
# threads, 2), SERVER_THREADS (http-ceiling worker threads, 2), KEYS (node
# pre-fill, 100000), PUT_KEYSPACE (1000000000), POOL (requests pre-drawn per
# wrk thread, 200000), LADDER (connection counts of the node's rising-load
# steps, "16 32 64 128 256"; empty to skip), LADDER_DURATION (seconds a
# step, 5), P99_MS (the latency bound the ladder reports against, 5),
# REDIS_REQUESTS (1000000),
# NODE_ARGS (extra `strata serve` flags, e.g. "--durability none"), STRATA_BIN
# (a strata binary to use instead of building target/release/strata).
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD

CONNECTIONS=${CONNECTIONS:-64}
DURATION=${DURATION:-10}
THREADS=${THREADS:-2}
SERVER_THREADS=${SERVER_THREADS:-2}
KEYS=${KEYS:-100000}
PUT_KEYSPACE=${PUT_KEYSPACE:-1000000000}
POOL=${POOL:-200000}
LADDER=${LADDER-16 32 64 128 256}
LADDER_DURATION=${LADDER_DURATION:-5}
P99_MS=${P99_MS:-5}
REDIS_REQUESTS=${REDIS_REQUESTS:-1000000}
NODE_ARGS=${NODE_ARGS:-}
CEILING_ADDR=127.0.0.1:8090
NODE_ADDR=127.0.0.1:8091
REDIS_PORT=6390

log() { printf '==> %s\n' "$*" >&2; }
die() { printf 'bench-node: %s\n' "$*" >&2; exit 1; }

# --- tools -------------------------------------------------------------------
missing=()
command -v wrk >/dev/null || missing+=(wrk)
command -v redis-server >/dev/null || missing+=(redis-server)
command -v redis-benchmark >/dev/null || missing+=(redis-tools)
if ((${#missing[@]})); then
    sudo=()
    ((EUID == 0)) || sudo=(sudo)
    log "installing ${missing[*]}"
    "${sudo[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq "${missing[@]}" >/dev/null
fi
command -v curl >/dev/null || die "curl is needed for the node pre-fill"

WRK2=
if command -v wrk2 >/dev/null; then
    WRK2=wrk2
elif wrk --help 2>&1 | grep -q -- '--rate'; then
    WRK2=wrk
fi

# --- binaries ------------------------------------------------------------------
TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
log "cargo build --release -p strata-httpceiling"
cargo build --release -q -p strata-httpceiling
STRATA=${STRATA_BIN:-}
if [[ -z $STRATA && -f crates/strata/Cargo.toml ]]; then
    log "cargo build --release -p strata"
    if cargo build --release -q -p strata; then
        STRATA=$TARGET_DIR/release/strata
    else
        log "building strata failed: skipping the node"
    fi
fi

# --- servers and cleanup -------------------------------------------------------
SCRIPT=bench-node
# shellcheck source=scripts/lib/servers.sh
. scripts/lib/servers.sh

# --- measurement helpers -------------------------------------------------------
ROWS=()   # "target|workload|rps|p99 ms"
NOTES=()


# wrk_run TARGET WORKLOAD WRK-ARGS...: run wrk (or wrk2 when WRK-ARGS has -R),
# add a table row, note non-2xx responses and socket errors.
wrk_run() {
    local target=$1 workload=$2 out rps p99 bad errs
    shift 2
    local cmd=(wrk --latency -t"$THREADS" -c"${WRK_CONNECTIONS:-$CONNECTIONS}"
        -d"${WRK_DURATION:-$DURATION}s" "$@")
    [[ " $* " == *" -R "* ]] && cmd[0]=$WRK2
    show "${cmd[@]}"
    out=$("${cmd[@]}")
    printf '%s\n' "$out" >>"$TMP/wrk.log"
    rps=$(awk '/^Requests\/sec:/ {printf "%.0f", $2}' <<<"$out")
    p99=$(awk '$1 ~ /^99(\.0+)?%$/ {print $2; exit}' <<<"$out")
    [[ -n $rps && -n $p99 ]] || { printf '%s\n' "$out" >&2; die "cannot parse wrk output"; }
    ROWS+=("$target|$workload|$rps|$(to_ms "$p99")")
    bad=$(awk '/Non-2xx or 3xx responses:/ {print $NF}' <<<"$out")
    [[ -z $bad ]] || NOTES+=("$target $workload: $bad non-2xx responses")
    errs=$(grep 'Socket errors:' <<<"$out" || true)
    [[ -z $errs ]] || NOTES+=("$target $workload: ${errs#"${errs%%[![:space:]]*}"}")
}

# redis_run CLIENT-THREADS: redis-benchmark SET and GET, one row each.
redis_run() {
    local cmd=(redis-benchmark -p "$REDIS_PORT" -t "set,get" -d 100 -r 1000000
        -n "$REDIS_REQUESTS" -c "$CONNECTIONS" -P 1 --csv)
    (($1 > 1)) && cmd+=(--threads "$1")
    show "${cmd[@]}"
    local out test
    out=$("${cmd[@]}")
    printf '%s\n' "$out" >>"$TMP/redis.log"
    # "test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms"
    for test in SET GET; do
        local row
        row=$(awk -F, -v t="\"$test\"" '$1 == t {gsub(/"/, ""); printf "%.0f|%.2f", $2, $7}' <<<"$out")
        [[ -n $row ]] || { printf '%s\n' "$out" >&2; die "cannot parse redis-benchmark output"; }
        ROWS+=("redis-server${REDIS_LABEL:-}|$test, $1 client thread(s)|$row")
    done
}

# wrk_script GET|PUT ADDR TARGET WORKLOAD [WRK-ARGS...]: wrk_run with the
# method's script (get.lua over the pre-filled keys, put.lua over
# PUT_KEYSPACE) against ADDR.
wrk_script() {
    local method=$1 addr=$2 target=$3 workload=$4
    shift 4
    case $method in
        GET) wrk_run "$target" "$workload" "$@" -s scripts/wrk/get.lua "http://$addr" -- "$KEYS" "$POOL" ;;
        PUT) wrk_run "$target" "$workload" "$@" -s scripts/wrk/put.lua "http://$addr" -- "$PUT_KEYSPACE" "$POOL" ;;
    esac
}

# --- 1. HTTP ceiling -------------------------------------------------------------
start http-ceiling "$CEILING_ADDR" \
    "$TARGET_DIR/release/http-ceiling" --listen "$CEILING_ADDR" --threads "$SERVER_THREADS"
wrk_run http-ceiling "GET, 100-byte body" "http://$CEILING_ADDR/"
CEILING_RPS=$(cut -d'|' -f3 <<<"${ROWS[-1]}")
# The same server driven by the node runs' wrk scripts: generating a random
# key in Lua for every request costs the client CPU it shares with the
# server, so the node is compared with the ceiling under the same client.
wrk_script GET "$CEILING_ADDR" http-ceiling "get.lua requests"
CEIL_GET=$(cut -d'|' -f3 <<<"${ROWS[-1]}")
wrk_script PUT "$CEILING_ADDR" http-ceiling "put.lua requests"
CEIL_PUT=$(cut -d'|' -f3 <<<"${ROWS[-1]}")
stop

# --- 2. Redis ----------------------------------------------------------------------
start redis-server "127.0.0.1:$REDIS_PORT" \
    redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --dir "$TMP" --save '' --appendonly no
redis_run 1
redis_run 2
stop

# Redis with the durability of the node's `sync`: every write appended to
# its AOF and fsynced before the answer (issue 14's PUT bar).
start redis-server "127.0.0.1:$REDIS_PORT" \
    redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --dir "$TMP" --save '' \
    --appendonly yes --appendfsync always
REDIS_LABEL=" (appendfsync always)" redis_run 1
stop

# --- 3. the node ---------------------------------------------------------------------
if [[ -n $STRATA ]] && "$STRATA" serve --help >/dev/null 2>&1; then
    mkdir -p "$TMP/node"
    # shellcheck disable=SC2086 # NODE_ARGS is a list of flags
    start node "$NODE_ADDR" "$STRATA" serve --listen "$NODE_ADDR" --data-dir "$TMP/node" $NODE_ARGS

    log "pre-filling keys 0..$((KEYS - 1)) with 100-byte values"
    head -c 100 /dev/zero | tr '\0' v >"$TMP/value"
    fill_cmd=(curl -s --no-progress-meter -Z --parallel-max 16 -o /dev/null -w '%{http_code}\n'
        -X PUT --data-binary @"$TMP/value"
        "http://$NODE_ADDR/v0/entity?id=[0000000000000000-$(printf '%016d' $((KEYS - 1)))]")
    show "${fill_cmd[@]}"
    fill_start=$(date +%s.%N)
    codes=$("${fill_cmd[@]}" | sort | uniq -c | awk '{printf "%s%s x%s", sep, $2, $1; sep = ", "}')
    log "pre-fill: $codes in $(awk -v s="$fill_start" -v e="$(date +%s.%N)" 'BEGIN {printf "%.1f", e - s}') s"
    [[ $codes == "201 x$KEYS" ]] || NOTES+=("node pre-fill answered: $codes (expected 201 x$KEYS)")

    declare -A node_rps
    wrk_script GET "$NODE_ADDR" "strata node" "GET existing key"
    node_rps[GET]=$(cut -d'|' -f3 <<<"${ROWS[-1]}")
    wrk_script PUT "$NODE_ADDR" "strata node" "PUT random key, 100 B"
    node_rps[PUT]=$(cut -d'|' -f3 <<<"${ROWS[-1]}")

    if [[ -n $WRK2 ]]; then
        for pct in 25 50 75 90; do
            for m in GET PUT; do
                wrk_script "$m" "$NODE_ADDR" "strata node" "$m @ ${pct}% (open loop)" \
                    -R $((node_rps[$m] * pct / 100))
            done
        done
    else
        NOTES+=("no wrk2 here: no fixed-rate runs; the ladder below raises the load by connections instead")
    fi

    # Rising load until latency breaks: closed loop, more connections each
    # step; the best rate whose p99 stays within P99_MS is reported.
    declare -A best=([GET]=0 [PUT]=0) best_at=([GET]=- [PUT]=-)
    for c in $LADDER; do
        for m in GET PUT; do
            WRK_CONNECTIONS=$c WRK_DURATION=$LADDER_DURATION \
                wrk_script "$m" "$NODE_ADDR" "strata node" "$m, $c connections (ladder)"
            IFS='|' read -r _ _ rps p99 <<<"${ROWS[-1]}"
            if awk -v p="$p99" -v b="$P99_MS" -v r="$rps" -v m="${best[$m]}" \
                'BEGIN {exit !(p < b && r > m)}'; then
                best[$m]=$rps best_at[$m]=$c
            fi
        done
    done
    if [[ -n $LADDER ]]; then
        NOTES+=("ladder: best rate with p99 < $P99_MS ms: GET ${best[GET]} req/s (${best_at[GET]} connections), PUT ${best[PUT]} req/s (${best_at[PUT]} connections)")
    fi
    stop
else
    NOTES+=("node skipped: \`strata serve\` is not available in ${STRATA:-target/release/strata}")
fi

# --- report ------------------------------------------------------------------------------
echo
echo "| target | workload | requests/s | p99 ms | ratio to http-ceiling GET | ratio to http-ceiling, same wrk script |"
echo "| --- | --- | ---: | ---: | ---: | ---: |"
for row in "${ROWS[@]}"; do
    IFS='|' read -r target workload rps p99 <<<"$row"
    ratio=$(awk -v a="$rps" -v b="$CEILING_RPS" 'BEGIN {printf "%.2f", a / b}')
    same=""
    if [[ $target == "strata node" && $workload == GET* ]]; then
        same=$(awk -v a="$rps" -v b="$CEIL_GET" 'BEGIN {printf "%.2f", a / b}')
    elif [[ $target == "strata node" && $workload == PUT* ]]; then
        same=$(awk -v a="$rps" -v b="$CEIL_PUT" 'BEGIN {printf "%.2f", a / b}')
    fi
    echo "| $target | $workload | $rps | $p99 | $ratio | $same |"
done
echo
echo "wrk: closed loop, $CONNECTIONS connections, $THREADS threads, ${DURATION} s per run;" \
    "http-ceiling with $SERVER_THREADS worker threads; $(nproc) cores shared by clients and servers."
for note in "${NOTES[@]}"; do echo "- $note"; done
echo
echo "Commands:"
for c in "${COMMANDS[@]}"; do echo "    $c"; done
