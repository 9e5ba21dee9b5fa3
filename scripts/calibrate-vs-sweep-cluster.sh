#!/usr/bin/env bash
# The simulator's prediction of a cluster's breaking point against the one
# strata sweep measures: `strata calibrate URL,URL,URL` (steps below the
# limit through every node, every node's /metrics around each, one step
# through the first node to split coordinator from replica costs, the
# model of the cluster, its breaking point and what-ifs), then
# `strata sweep URL,URL,URL` on the same fresh cluster, workload and SLO.
#
# A local cluster (`strata cluster up`, replication 3, ack=2) with nothing
# pinned: the three nodes and the generator share the machine's cores, as
# scripts/bench-cluster.sh runs them; the calibration sees that every node
# is on this machine and models one host's cores shared by the nodes and
# the generator (whose own CPU it measures).
#
# Knobs (environment): WORKLOAD (get), KEYS (100000), SLO (p99<=10ms),
# DURABILITY (sync), SWEEP_DURATION (5), STRATA_BIN, KEEP (a directory to
# keep the calibration's report, model and the sweep's JSON in).
set -euo pipefail

cd "$(dirname "$0")/.."
WORKLOAD=${WORKLOAD:-get}
KEYS=${KEYS:-100000}
SLO=${SLO:-p99<=10ms}
DURABILITY=${DURABILITY:-sync}
SWEEP_DURATION=${SWEEP_DURATION:-5}
# shellcheck source=scripts/lib/cluster.sh
. scripts/lib/cluster.sh
cluster_up "$TMP/cluster" -- --durability "$DURABILITY"

# The machine's CPU over a phase (user+nice+system+irq+softirq+steal, in
# cores), to tell afterwards whether something else was running.
busy() { awk '/^cpu /{print $2+$3+$4+$7+$8+$9, $2+$3+$4+$5+$6+$7+$8+$9}' /proc/stat; }
report_busy() { # name before after
    python3 -c "import sys; b0,t0,b1,t1=map(float,sys.argv[2:]); print(f'{sys.argv[1]}: the machine was {100*(b1-b0)/(t1-t0):.0f}% busy')" "$1" $2 $3
}

common=(--workload "$WORKLOAD" --keys "$KEYS" --slo "$SLO" --max-errors 0.1% --warmup 1 --quiet)
echo "== strata calibrate $URLS"
B0=$(busy)
"$STRATA_BIN" calibrate "$URLS" "${common[@]}" --preload --out "$TMP/cal"
B1=$(busy)
report_busy calibrate "$B0" "$B1"
echo
echo "== strata sweep $URLS"
"$STRATA_BIN" sweep "$URLS" "${common[@]}" --start-rate 2000 --duration "$SWEEP_DURATION" \
    --precision 0.03 --json --out "$TMP/sweep" >"$TMP/sweep.json"
B2=$(busy)
report_busy sweep "$B1" "$B2"
if [[ -n ${KEEP:-} ]]; then
    mkdir -p "$KEEP"
    cp -r "$TMP/cal" "$TMP/sweep.json" "$KEEP/"
fi
python3 scripts/lib/calibration-vs-sweep.py "$TMP/cal/calibration.json" "$TMP/sweep.json"
