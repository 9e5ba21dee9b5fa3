#!/usr/bin/env bash
# The cluster against a single node (issue 12), side by side in one run:
# `strata sweep` finds the breaking point at p99<=10ms of PUT (random keys,
# 100-byte values) and of GET (pre-loaded keys) against
#
#   1. one node (a cluster of one),
#   2. a local 3-node cluster at the default ack=2&from=3 (replication 3),
#      the connections spread over the three nodes,
#   3. the same at replication 1 (ack=1&from=1: routing only, each request
#      forwarded to the key's one replica unless the receiving node owns it).
#
# Every process (nodes and generator) shares the machine's cores: no
# pinning, so the cluster's three nodes get the same CPU the single node
# had. Knobs (environment): DURATION (5 s per trial), KEYS (100000),
# CONNECTIONS (64), DURABILITY (the nodes' --durability, default sync),
# WORKLOADS ("put get"), STRATA_BIN, SETUPS ("single r3 r1", in that
# order; a setup may repeat, each run its own row). One more setup:
#
#   r3old: the 3-node cluster at ack=2&from=3 with
#          --versions-from-quorum=false (writes stamped from the clock
#          alone, no first phase), to price the first phase side by side
#          with r3: SETUPS="r3 r3old r3 r3old" WORKLOADS=put.
set -euo pipefail

cd "$(dirname "$0")/.."
DURATION=${DURATION:-5}
KEYS=${KEYS:-100000}
CONNECTIONS=${CONNECTIONS:-64}
DURABILITY=${DURABILITY:-sync}
WORKLOADS=${WORKLOADS:-put get}
# shellcheck source=scripts/lib/cluster.sh
. scripts/lib/cluster.sh

sweep() { # name urls workload -> prints "name workload rate"
    local extra=()
    if [ "$3" = get ]; then extra=(--preload); fi
    "$STRATA_BIN" sweep "$2" --workload "$3" --keys "$KEYS" --connections "$CONNECTIONS" \
        --slo 'p99<=10ms' --max-errors 0.1% --start-rate 4000 --duration "$DURATION" \
        --warmup 1 --precision 0.05 --quiet "${extra[@]}" --out "$TMP/$1-$3" >"$TMP/$1-$3.txt" 2>&1 || true
    local bp
    bp=$(sed -n 's/^Breaking point: \([0-9,]*\) req\/s.*/\1/p' "$TMP/$1-$3.txt" | tr -d ,)
    echo "$1 $3 ${bp:-0}" | tee -a "$TMP/results"
    grep -E "^At |Verdict" "$TMP/$1-$3.txt" | head -2 | sed 's/^/    /' >&2 || true
}

SETUPS=${SETUPS:-single r3 r1}
run=0
for setup in $SETUPS; do
    run=$((run + 1))
    case $setup in
    single)
        echo "## Single node (--durability $DURABILITY)"
        "$STRATA_BIN" serve --listen 127.0.0.1:0 --data-dir "$TMP/single$run" --log-level warn \
            --durability "$DURABILITY" >"$TMP/single$run.out" 2>&1 &
        SINGLE_PID=$!
        PIDS+=($SINGLE_PID)
        for _ in $(seq 50); do
            URL=$(sed -n 's/.*listening on \(http[^ ]*\).*/\1/p' "$TMP/single$run.out")
            [ -n "$URL" ] && break
            sleep 0.1
        done
        for w in $WORKLOADS; do sweep "single:$run" "$URL" "$w"; done
        kill "$SINGLE_PID"; wait "$SINGLE_PID" 2>/dev/null || true
        ;;
    r3 | r3old)
        extra=()
        [[ $setup == r3old ]] && extra=(--versions-from-quorum=false)
        echo "## 3 nodes, ack=2&from=3 ${extra[*]}"
        cluster_up "$TMP/$setup$run" --replication 3 -- --durability "$DURABILITY" "${extra[@]}"
        for w in $WORKLOADS; do sweep "$setup:$run" "$URLS" "$w"; done
        cluster_down
        ;;
    r1)
        echo "## 3 nodes, ack=1&from=1"
        cluster_up "$TMP/r1$run" --replication 1 -- --durability "$DURABILITY"
        for w in $WORKLOADS; do sweep "r1:$run" "$URLS" "$w"; done
        cluster_down
        ;;
    *) echo "unknown setup $setup (single, r3, r3old, r1)" >&2; exit 2 ;;
    esac
done

echo
echo "| setup | PUT breaking point req/s | ratio | GET breaking point req/s | ratio |"
echo "| --- | ---: | ---: | ---: | ---: |"
python3 - "$TMP/results" <<'PY'
import sys
r, order = {}, []
for line in open(sys.argv[1]):
    n, w, v = line.split()
    r[(n, w)] = int(v)
    if n not in order:
        order.append(n)
names = {
    "single": "one node",
    "r3": "3 nodes, ack=2&from=3",
    "r3old": "3 nodes, ack=2&from=3, --versions-from-quorum=false",
    "r1": "3 nodes, ack=1&from=1",
}
# Ratios against the first single node's run, if any; else against the
# first row.
base_name = next((n for n in order if n.startswith("single:")), order[0] if order else None)
for n in order:
    cells = []
    for w in ["put", "get"]:
        v, base = r.get((n, w), 0), r.get((base_name, w), 0)
        cells += [f"{v:,}", f"{v / base:.2f}x" if base else "-"]
    setup, run = n.split(":")
    print(f"| {names[setup]} (run {run}) | " + " | ".join(cells) + " |")
PY
