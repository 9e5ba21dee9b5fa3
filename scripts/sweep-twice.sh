#!/usr/bin/env bash
# Does the same sweep of the same target agree with itself? (issue 27)
# Sweeps a target twice, back to back, with the sweep's defaults (10 s
# trials sized for 100 tail samples, the deciding rates repeated to a
# majority of 3) and prints both breaking points, their ranges and the
# ratio, then the causes the verdicts named.
#
#   scripts/sweep-twice.sh node      # one node, sync durability (default)
#   scripts/sweep-twice.sh cluster   # three local nodes, through every node
#
# Extra arguments go to both sweeps (e.g. --duration 5).
#
# With PIN=1 (the default on a machine of 2 cores or more) the node runs on
# the last core and the generator on the others (taskset), so that neither
# waits for the other's CPU: on a shared 2-core machine those waits are
# tens of milliseconds at a time and decide a p99 (docs/benchmarks.md).
# PIN=0 shares the cores.
#
# FRESH=1 (node only) starts a new node with an empty store for each sweep;
# by default both sweeps run against the same node, the second on the store
# the first filled (its flushes and compactions included).
set -euo pipefail
cd "$(dirname "$0")/.."
kind=${1:-node}
shift || true
cargo build --release -p strata >/dev/null 2>&1
B=$PWD/target/release/strata
cores=$(nproc)
pin=${PIN:-$([ "$cores" -ge 2 ] && echo 1 || echo 0)}
node_cpus="" gen_cpus=""
if [ "$pin" = 1 ]; then
    node_cpus="taskset -c $((cores - 1))"
    gen_cpus="taskset -c 0-$((cores - 2))"
    echo "pinned: the node on CPU $((cores - 1)), the generator on CPUs 0-$((cores - 2))"
fi
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; [ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT

start() {
    case $kind in
    node)
        rm -rf "$work/data"
        $node_cpus "$B" serve --listen 127.0.0.1:0 --data-dir "$work/data" --log-level warn >"$work/serve.out" &
        node_pid=$!
        sleep 1
        url=$(head -1 "$work/serve.out" | awk '{print $NF}')
        ;;
    cluster)
        $node_cpus "$B" cluster up --nodes 3 --data-dir "$work/cluster" >"$work/up.out" 2>&1 &
        for _ in $(seq 60); do grep -q "http://" "$work/up.out" 2>/dev/null && break; sleep 0.5; done
        sleep 2
        url=$(grep -o 'http://127.0.0.1:[0-9]*' "$work/up.out" | sort -u | paste -sd, -)
        ;;
    *) echo "usage: $0 node|cluster [sweep args]" >&2; exit 2 ;;
    esac
}
start
echo "target: $url"
for run in 1 2; do
    if [ "$run" = 2 ] && [ "${FRESH:-0}" = 1 ] && [ "$kind" = node ]; then
        kill "$node_pid"; wait "$node_pid" 2>/dev/null || true
        start
        echo "a fresh node for the second sweep: $url"
    fi
    $gen_cpus "$B" sweep "$url" --slo 'p99<=10ms' --max-errors 0.1% --quiet --out "$work/sweep$run" "$@" |
        grep -E "^Breaking point|Verdict" | cut -c1-400
done
python3 - "$work" <<'PY'
import json, sys
a, b = (json.load(open(f"{sys.argv[1]}/sweep{i}/report.json")) for i in (1, 2))
bp = [r["breaking_point"] for r in (a, b)]
print(f"breaking points: {bp[0]:.0f} and {bp[1]:.0f} req/s; ratio {max(bp)/min(bp):.3f}")
for r in (a, b):
    print(f"  range {r.get('breaking_range')}, cause {r.get('cause')} {r.get('cause_node')}, trials {len(r['trials'])}")
PY
