#!/usr/bin/env bash
# The simulator's prediction of a node's breaking point against the
# breaking point strata sweep measures (issue 5's calibration check).
#
# One fresh node, pinned to core 1 with one runtime thread; the lab on core
# 0. First `strata calibrate` (short steps below the node's limit, each
# modelled by the simulator from the node's /metrics), then `strata sweep`
# on the same node, workload and SLO. Prints both figures and the gap.
#
# Knobs (environment): WORKLOAD (get), KEYS (100000), SLO (p99<=10ms),
# SWEEP_DURATION (5), STRATA_BIN.
set -euo pipefail

cd "$(dirname "$0")/.."
WORKLOAD=${WORKLOAD:-get}
KEYS=${KEYS:-100000}
SLO=${SLO:-p99<=10ms}
SWEEP_DURATION=${SWEEP_DURATION:-5}
ADDR=127.0.0.1:8094
# shellcheck source=scripts/lib/node.sh
. scripts/lib/node.sh
start_node --worker-threads 1

common=(--workload "$WORKLOAD" --keys "$KEYS" --quiet)
echo "== strata calibrate"
taskset -c 0 "$STRATA_BIN" calibrate "http://$ADDR" "${common[@]}" --preload --slo "$SLO" \
    --out "$TMP/cal"
echo
echo "== strata sweep"
taskset -c 0 "$STRATA_BIN" sweep "http://$ADDR" "${common[@]}" --slo "$SLO" \
    --start-rate 5000 --duration "$SWEEP_DURATION" --precision 0.03 --json \
    --out "$TMP/sweep" >"$TMP/sweep.json"
python3 scripts/lib/calibration-vs-sweep.py "$TMP/cal/calibration.json" "$TMP/sweep.json"
