#!/usr/bin/env bash
# The lab's own figures (issue 4), side by side in one run:
#
#   1. Generator speed: `strata load` with one thread on core 0 against
#      `http-ceiling --raw` (a trivial server that answers a fixed 100-byte
#      body, no hyper) on core 1, at rising constant rates. For each rate:
#      achieved / offered, the share of sends more than 1 ms late, and the
#      generator's CPU (user + system seconds per second). Before the rates,
#      the same core's closed-loop ceiling against the same server: `wrk -t1`
#      and `strata load --clients` (no schedule: as many requests as one
#      core can exchange), so that the rates can be read against what any
#      generator gets from this machine's loopback TCP that day.
#   2. Closed loop against wrk: the Strata node (GET of pre-filled keys),
#      `strata load --clients C` and `wrk -t1 -cC` (scripts/wrk/get.lua), same
#      connections and duration, run alternately, as a ratio. The node runs
#      on core 1 and the client on core 0, so that the cheaper client does not
#      hand the node more CPU than the other: both then measure the node.
#      ROUNDS rounds, alternating which tool goes first; the median ratio is
#      the figure (single rounds on this shared machine range over ±20%).
#
# Installs wrk with apt-get when missing. Knobs (environment): RATES
# ("100000 150000 200000"), DURATION (10), CONNECTIONS (64), KEYS (100000),
# ROUNDS (5), STRATA_BIN.
set -euo pipefail

cd "$(dirname "$0")/.."
RATES=${RATES:-100000 150000 200000}
DURATION=${DURATION:-10}
CONNECTIONS=${CONNECTIONS:-64}
KEYS=${KEYS:-100000}
ROUNDS=${ROUNDS:-5}
CEILING=127.0.0.1:8094
NODE=127.0.0.1:8095
if ! command -v wrk >/dev/null; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null
fi
cargo build --release -q -p strata -p strata-httpceiling
STRATA_BIN=${STRATA_BIN:-target/release/strata}
TMP=$(mktemp -d)
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$TMP"
}
trap cleanup EXIT

cpu_of() { # pid -> user+system seconds
    awk -v t="$(getconf CLK_TCK)" '{print ($14 + $15) / t}' "/proc/$1/stat"
}

echo "## Generator speed (one generator thread on core 0, http-ceiling --raw on core 1)"
echo
taskset -c 1 target/release/http-ceiling --listen "$CEILING" --threads 1 --raw 2>/dev/null &
PIDS+=($!)
sleep 0.5
wrk_ceiling=$(taskset -c 0 wrk -t1 -c"$CONNECTIONS" -d"${DURATION}s" "http://$CEILING/" | awk '/Requests\/sec/ {printf "%d", $2}')
taskset -c 0 "$STRATA_BIN" load "http://$CEILING" --workload get --keys 1000000 --clients "$CONNECTIONS" \
    --duration "$DURATION" --json --quiet --out "$TMP/gcl" >"$TMP/gcl.json"
ours_ceiling=$(python3 -c "import json; print(round(json.load(open('$TMP/gcl.json'))['trials'][0]['achieved_rate']))")
echo "Closed loop on core 0, $CONNECTIONS connections, no schedule: wrk -t1 $wrk_ceiling req/s, strata load --clients $ours_ceiling req/s"
echo
echo "| offered req/s | achieved req/s | achieved / offered | late sends (>1 ms) | worst lag | generator CPU |"
echo "| ---: | ---: | ---: | ---: | ---: | ---: |"
for rate in $RATES; do
    /usr/bin/time -f "%U %S %e" -o "$TMP/time" taskset -c 0 "$STRATA_BIN" load "http://$CEILING" \
        --workload get --keys 1000000 --rate "$rate" --duration "$DURATION" --warmup 1 \
        --connections "$CONNECTIONS" --json --quiet --out "$TMP/gen" >"$TMP/gen.json"
    read -r user sys wall <"$TMP/time"
    python3 - "$TMP/gen.json" "$user" "$sys" "$wall" <<'EOF'
import json, sys
t = json.load(open(sys.argv[1]))["trials"][0]
cpu = (float(sys.argv[2]) + float(sys.argv[3])) / float(sys.argv[4])
late = 100.0 * t["late_sends"] / max(t["requests"], 1)
print(f"| {t['offered_rate']:.0f} | {t['achieved_rate']:.0f} | {t['achieved_rate'] / t['offered_rate']:.4f} | "
      f"{late:.2f}% | {t['max_lag_ms']:.2f} ms | {cpu:.2f} cores |")
EOF
done

echo
echo "## Closed loop: strata load --clients $CONNECTIONS against wrk -t1 -c$CONNECTIONS (node GET)"
echo
taskset -c 1 "$STRATA_BIN" serve --listen "$NODE" --data-dir "$TMP/data" --log-level warn >/dev/null &
PIDS+=($!)
sleep 0.5
"$STRATA_BIN" load "http://$NODE" --workload get --keys "$KEYS" --preload --rate 1000 --duration 1 \
    --quiet --out "$TMP/pre" >/dev/null
echo "| round | strata load req/s | wrk req/s | strata / wrk |"
echo "| ---: | ---: | ---: | ---: |"
ours_run() {
    taskset -c 0 "$STRATA_BIN" load "http://$NODE" --workload get --keys "$KEYS" --clients "$CONNECTIONS" \
        --duration "$DURATION" --json --quiet --out "$TMP/cl" >"$TMP/cl.json"
    python3 -c "import json; print(round(json.load(open('$TMP/cl.json'))['trials'][0]['achieved_rate']))"
}
wrk_run() {
    taskset -c 0 wrk -t1 -c"$CONNECTIONS" -d"${DURATION}s" -s scripts/wrk/get.lua "http://$NODE" -- "$KEYS" |
        awk '/Requests\/sec/ {printf "%d", $2}'
}
ratios=()
for round in $(seq "$ROUNDS"); do
    if ((round % 2)); then
        ours=$(ours_run)
        theirs=$(wrk_run)
    else
        theirs=$(wrk_run)
        ours=$(ours_run)
    fi
    ratio=$(python3 -c "print(f'{$ours / $theirs:.3f}')")
    ratios+=("$ratio")
    echo "| $round | $ours | $theirs | $ratio |"
done
echo
echo "Median strata / wrk: $(printf '%s\n' "${ratios[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')"
