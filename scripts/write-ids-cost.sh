#!/usr/bin/env bash
# What naming writes costs (issue 45): a local cluster of three (every node
# a replica of every key), PUTs at a steady rate through the client library
# (--client smart: every write carries a strata-write-id, stored as a mark
# in its record and looked up by the first phase) and straight to the nodes
# (--client direct: unnamed writes), alternated, each RUNS times. Prints
# the nodes' CPU per PUT (µs, summed over the three) for each.
#
#   RATE=2000 DURATION=15 RUNS=2 scripts/write-ids-cost.sh
set -euo pipefail
cd "$(dirname "$0")/.."
rate=${RATE:-2000} duration=${DURATION:-15} runs=${RUNS:-2}
source scripts/lib/cluster.sh
cluster_up "$TMP/c"
echo "cluster: $URLS; PUT at $rate req/s for ${duration}s, nothing pinned"
for i in $(seq "$runs"); do
    for mode in smart direct; do
        "$STRATA_BIN" load "$URLS" --rate "$rate" --duration "$duration" --workload put \
            --client "$mode" --quiet --out "$TMP/$mode$i" >/dev/null
        python3 - "$TMP/$mode$i/report.json" "$mode" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))["trials"][0]
us = t["server_cpu_cores"] / t["achieved_rate"] * 1e6
print(f"  {sys.argv[2]:<7} achieved {t['achieved_rate']:.0f} req/s, p99 {t['latency']['p99_ms']:.2f} ms, "
      f"errors {t['errors']}, nodes' CPU {t['server_cpu_cores']:.3f} cores = {us:.0f} µs per PUT")
PY
    done
done
