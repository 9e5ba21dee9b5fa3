#!/usr/bin/env bash
# Goodput at 10x the breaking point (issue 14): for each target (one node,
# a 3-node cluster), workload (get, put) and admission mode (fixed,
# adaptive), on fresh data:
#
#   1. `strata sweep` finds the breaking point BP (SLO p99<=10ms);
#   2. `strata load` offers 10 x BP for DURATION seconds, open loop, with
#      up to 10,000 connections;
#   3. `strata load` offers BP / 2 for 5 s: the first second shows whether
#      the node is back to normal within 1 s.
#
# Prints a markdown table: BP; served (2xx) per second at 10x and as a share
# of BP; p99 of the served requests as the node measured them (from each
# request's arrival in its socket to its answer: strata_http_request_duration,
# 503s excluded) and as the lab measured them (from the intended send time,
# which includes the time a send waited for a connection the node had not
# accepted); 503s and connection errors per second; peak RSS; the first
# second at BP/2 (p99, errors).
#
# One node runs on core 1 with one runtime thread and the lab on core 0
# (taskset), as in the figures of issue 3. The cluster's three nodes and the
# lab share both cores.
#
# Knobs (environment): DURATION (60), TARGETS ("node cluster"), WORKLOADS
# ("get put"; a workload file works too, e.g.
# scripts/workloads/range-200.toml: costly to serve, cheap to send, so that
# 10x can be offered from this machine), MODES ("fixed adaptive"), KEYS
# (100000), MAX_WAIT_MS (the node's --max-wait-ms; empty: its default, 100,
# which its guard cuts to --overload-lag-ms while it turns work away),
# REPORTS (where the lab's report of each 10x run is kept, with its charts:
# strata-reports/admission-overload/TARGET-WORKLOAD-MODE/report.html),
# STRATA_BIN, NODE_ARGS (extra `strata serve` flags), CAPACITY (`sweep`,
# the default: BP is the sweep's breaking point; `closed`: BP is what 64
# closed-loop clients get served in 10 s, the capacity issue 28 measures
# goodput against, e.g. CAPACITY=closed TARGETS=node
# WORKLOADS=scripts/workloads/range-50.toml).
set -euo pipefail

cd "$(dirname "$0")/.."
DURATION=${DURATION:-60}
TARGETS=${TARGETS:-node cluster}
WORKLOADS=${WORKLOADS:-get put}
MODES=${MODES:-fixed adaptive}
KEYS=${KEYS:-100000}
NODE_ARGS=${NODE_ARGS:-}
MAX_WAIT_MS=${MAX_WAIT_MS:-}
CAPACITY=${CAPACITY:-sweep}
REPORTS=${REPORTS:-strata-reports/admission-overload}
SLO='p99<=10ms'
ADDR=127.0.0.1:8093
# shellcheck source=scripts/lib/node.sh
. scripts/lib/node.sh

CLUSTER=
cluster_start() { # admission flags...
    rm -rf "$TMP/cluster"
    # shellcheck disable=SC2086
    "$STRATA_BIN" cluster up --nodes 3 --data-dir "$TMP/cluster" --base-port 0 \
        -- $NODE_ARGS "$@" >"$TMP/cluster.out" 2>&1 &
    CLUSTER=$!
    for _ in $(seq 100); do
        URL=$(grep -E '^http://.*,http://' "$TMP/cluster.out" || true)
        [[ -n $URL ]] && return 0
        sleep 0.2
    done
    cat "$TMP/cluster.out" >&2
    exit 1
}
cluster_stop() {
    kill "$CLUSTER" 2>/dev/null || true
    wait "$CLUSTER" 2>/dev/null || true
    CLUSTER=
}

lab() { # name args...
    local name=$1
    shift
    if [[ $TARGET == node ]]; then
        taskset -c 0 "$STRATA_BIN" "$@" --quiet --json --out "$TMP/$name" >"$TMP/$name.json" 2>"$TMP/$name.err"
    else
        "$STRATA_BIN" "$@" --quiet --json --out "$TMP/$name" >"$TMP/$name.json" 2>"$TMP/$name.err"
    fi
}

echo "| target | workload | admission | BP req/s | served at 10x /s | share of BP | node p99 ms | lab p99 ms | 503/s | conn errors/s | peak RSS MiB | BP/2 first second: p99 ms, errors |"
echo "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"
for TARGET in $TARGETS; do
    for w in $WORKLOADS; do
        for mode in $MODES; do
            flags=(--admission "$mode")
            [[ -n $MAX_WAIT_MS ]] && flags+=(--max-wait-ms "$MAX_WAIT_MS")
            if [[ $TARGET == node ]]; then
                # shellcheck disable=SC2086
                start_node --worker-threads 1 $NODE_ARGS "${flags[@]}"
                URL="http://$ADDR"
            else
                cluster_start "${flags[@]}"
            fi
            wl=(--workload "$w" --keys "$KEYS")
            [[ $w == get || $w == *.toml ]] && wl+=(--preload)
            if [[ $CAPACITY == closed ]]; then
                # Capacity: what 64 closed-loop clients get served.
                lab capacity load "$URL" "${wl[@]}" --clients 64 --duration 10 --warmup 2 || true
                bp=$(python3 -c "import json; t=json.load(open('$TMP/capacity.json'))['trials'][0]; print(round((t['requests'] - t['errors']) / t['duration_s']))")
            else
                lab sweep sweep "$URL" "${wl[@]}" --slo "$SLO" --duration 5 --warmup 1 --precision 0.05 || true
                bp=$(python3 -c "import json; print(round(json.load(open('$TMP/sweep.json')).get('breaking_point') or 0))")
            fi
            if ((bp == 0)); then
                echo "| $TARGET | $w | $mode | no breaking point: $(tail -1 "$TMP/sweep.err") | | | | | | | | |"
            else
                wl=(--workload "$w" --keys "$KEYS")
                lab over load "$URL" "${wl[@]}" --rate $((bp * 10)) --duration "$DURATION" --warmup 2 \
                    --connections 64 --max-connections 10000 || true
                lab after load "$URL" "${wl[@]}" --rate $((bp / 2)) --duration 5 --warmup 0 || true
                python3 - "$TMP" "$TARGET" "$w" "$mode" "$bp" "$SLO" <<'EOF'
import glob, json, os, re, sys
tmp, target, w, mode, bp = sys.argv[1:6]
bp = int(bp)
over = json.load(open(f"{tmp}/over.json"))["trials"][0]
after = json.load(open(f"{tmp}/after.json"))["trials"][0]
secs = over["duration_s"]
op = {o["op"]: o for o in over["per_op"]}
# The workload's operation: the busiest row that is not the 5xx one.
name = max((o for o in op if o != "5xx"), key=lambda o: op[o]["requests"], default="-")
served_op = op.get(name, {"requests": 0, "errors": 0, "latency": {"p99_ms": 0}})
ok = served_op["requests"] - served_op["errors"]
refused = op.get("5xx", {"requests": 0})["requests"]
conn_err = over["errors"] - refused - over.get("dropped_sends", 0)

def hist(path, method):
    """Cumulative buckets of strata_http_request_duration_seconds{method}, summed over files."""
    b = {}
    for f in sorted(glob.glob(path)):
        for line in open(f):
            m = re.match(r'strata_http_request_duration_seconds_bucket\{(.*)\} (\S+)', line)
            if not m or f'method="{method}"' not in m.group(1):
                continue
            le = re.search(r'le="([^"]+)"', m.group(1)).group(1)
            b[le] = b.get(le, 0) + float(m.group(2))
    return b

method = "PUT" if name in ("put", "insert", "update") else "GET"
# One metrics file per node: report/metrics-*.txt (a cluster: one per node).
start = hist(f"{tmp}/over/metrics-start*.txt", method)
end = hist(f"{tmp}/over/metrics-end*.txt", method)
delta = sorted(((float("inf") if le == "+Inf" else float(le)), end[le] - start.get(le, 0)) for le in end)
node_p99 = "-"
if delta and delta[-1][1] > 0:
    total = delta[-1][1]
    node_p99 = next(f"{le * 1e3:.1f}" if le != float("inf") else "inf" for le, c in delta if c >= 0.99 * total)
rss = max((s.get("rss_bytes") or 0 for s in over["server"]), default=0) / 2**20
first = after["timeline"][0] if after["timeline"] else {"p99_ms": 0, "errors": 0}
print(f"| {target} | {w} | {mode} | {bp:,} | {ok / secs:,.0f} | {ok / secs / bp:.2f} | {node_p99} | "
      f"{served_op['latency']['p99_ms']:.1f} | {refused / secs:,.0f} | {max(conn_err, 0) / secs:,.0f} | {rss:.0f} | "
      f"{first['p99_ms']:.1f}, {first['errors']} |")
EOF
            fi
            if [[ -d $TMP/over ]]; then
                # The lab's report of the 10x run (its charts: throughput,
                # latency, errors and availability per second).
                keep="$REPORTS/$TARGET-$(basename "$w" .toml)-$mode"
                rm -rf "$keep"
                mkdir -p "$REPORTS"
                cp -r "$TMP/over" "$keep"
            fi
            if [[ $TARGET == node ]]; then stop_node; else cluster_stop; fi
        done
    done
done
