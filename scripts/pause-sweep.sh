#!/usr/bin/env bash
# The breaking point of three local nodes with one of them stopped for
# 150 ms every second (SIGSTOP/SIGCONT, as a long GC pause or a stalled VM
# does), against the same cluster without pauses (issue 28): one sweep
# each, PUT, p99 <= 10 ms, through the client library (--client smart),
# then the pausing run again with each connection straight to its node
# (--client direct). Extra arguments go to every sweep.
#
#   scripts/pause-sweep.sh [--duration 5 --max-trials 14 ...]
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -p strata >/dev/null 2>&1
B=$PWD/target/release/strata
work=$(mktemp -d)
pauser=
cleanup() {
    [ -n "$pauser" ] && kill "$pauser" 2>/dev/null || true
    [ -n "${pid3:-}" ] && kill -CONT "$pid3" 2>/dev/null || true
    kill $(jobs -p) 2>/dev/null || true
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
"$B" cluster up --nodes 3 --base-port 0 --data-dir "$work/cluster" >"$work/up.out" 2>&1 &
for _ in $(seq 60); do grep -q "Faults during a run" "$work/up.out" 2>/dev/null && break; sleep 0.5; done
urls=$(grep -oE 'node-[0-9]+ +http://[0-9.:]+' "$work/up.out" | awk '{print $2}' | paste -sd, -)
pid3=$(grep -E 'node-3 ' "$work/up.out" | grep -oE 'pid [0-9]+' | awk '{print $2}')
echo "cluster: $urls (node 3: pid $pid3)"
sweep() {
    "$B" sweep "$urls" --slo 'p99<=10ms' --max-errors 0.1% --quiet --out "$work/$1" "${@:2}" |
        grep -E "^Breaking point" | sed "s/^/  $1: /"
}
sweep no-pause --client smart "$@"
( while true; do kill -STOP "$pid3"; sleep 0.15; kill -CONT "$pid3"; sleep 0.85; done ) &
pauser=$!
sweep pausing --client smart "$@"
sweep pausing-direct --client direct "$@"
