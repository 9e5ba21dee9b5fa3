#!/usr/bin/env bash
# Requests failed while one node of three is killed and restarted (issue
# 28): a local cluster, 30 s of PUTs at 1,000 req/s with node 3 killed at
# 8 s and restarted at 18 s, under the consistency checker, through the
# client library (--client smart) and then each connection straight to
# its node (--client direct). Prints each run's errors, the client's
# counters and the checker's verdict.
#
#   scripts/kill-failover.sh [extra strata load arguments]
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -p strata >/dev/null 2>&1
B=$PWD/target/release/strata
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT
"$B" cluster up --nodes 3 --base-port 0 --data-dir "$work/cluster" >"$work/up.out" 2>&1 &
for _ in $(seq 60); do grep -q "Faults during a run" "$work/up.out" 2>/dev/null && break; sleep 0.5; done
urls=$(grep -oE 'node-[0-9]+ +http://[0-9.:]+' "$work/up.out" | awk '{print $2}' | paste -sd, -)
echo "cluster: $urls"
for mode in smart direct; do
    echo "--client $mode:"
    "$B" load "$urls" --rate 1000 --duration 30 --fault kill:3@8s+10s --check \
        --cluster-dir "$work/cluster" --client "$mode" --quiet --out "$work/$mode" "$@" |
        grep -E "Status codes|Client:|Check:|Linearizability:|Fault "
done
