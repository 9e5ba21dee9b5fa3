#!/usr/bin/env bash
# The simulator's prediction of a node's breaking point against the
# breaking point strata sweep measures (issue 5's calibration check).
#
# One fresh node, pinned to core 1 with one runtime thread; the lab on core
# 0. First `strata calibrate` (short steps below the node's limit, each
# modelled by the simulator from the node's /metrics), then `strata sweep`
# on the same node, workload and SLO. Prints both figures and the gap.
# UNPINNED=1 runs them as users do: the node on every core with its
# default runtime threads, the lab beside it, nothing pinned.
#
# Knobs (environment): WORKLOAD (get), KEYS (100000), SLO (p99<=10ms),
# DURABILITY (the node's default), UNPINNED (0), SWEEP_START (5000),
# SWEEP_DURATION (5), STRATA_BIN.
set -euo pipefail

cd "$(dirname "$0")/.."
WORKLOAD=${WORKLOAD:-get}
KEYS=${KEYS:-100000}
SLO=${SLO:-p99<=10ms}
SWEEP_DURATION=${SWEEP_DURATION:-5}
SWEEP_START=${SWEEP_START:-5000}
UNPINNED=${UNPINNED:-0}
ADDR=127.0.0.1:8094
node_args=()
[[ -n ${DURABILITY:-} ]] && node_args+=(--durability "$DURABILITY")
lab=(taskset -c 0)
if [[ $UNPINNED == 1 ]]; then
    NODE_CPUS=0-$(($(nproc --all) - 1))
    lab=()
else
    node_args+=(--worker-threads 1)
fi
# shellcheck source=scripts/lib/node.sh
. scripts/lib/node.sh
start_node "${node_args[@]}"

common=(--workload "$WORKLOAD" --keys "$KEYS" --quiet)
echo "== strata calibrate"
"${lab[@]}" "$STRATA_BIN" calibrate "http://$ADDR" "${common[@]}" --preload --slo "$SLO" \
    --out "$TMP/cal"
echo
echo "== strata sweep"
"${lab[@]}" "$STRATA_BIN" sweep "http://$ADDR" "${common[@]}" --slo "$SLO" \
    --start-rate "$SWEEP_START" --duration "$SWEEP_DURATION" --precision 0.03 --json \
    --out "$TMP/sweep" >"$TMP/sweep.json"
python3 scripts/lib/calibration-vs-sweep.py "$TMP/cal/calibration.json" "$TMP/sweep.json"
