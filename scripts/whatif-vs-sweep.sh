#!/usr/bin/env bash
# The simulator's what-ifs for a cluster under writes, each against a sweep
# of the cluster it describes, in one run (issue 47): `strata calibrate`
# on a fresh local 3-node cluster (replication 3, ack=2, nothing pinned;
# the nodes and the generator share the machine) predicts the base's
# breaking point and its what-ifs; then `strata sweep` measures each one
# that can be built here:
#   base         the same cluster, ack=2
#   ack=1        the same cluster, --ack 1
#   node down    the same cluster with node 3 killed (SIGKILL), the sweep
#                through nodes 1 and 2
#   no fsync     a fresh cluster with --durability none (the what-if
#                "without the fsync on the write's path")
#   5 nodes      a fresh 5-node cluster on the same host
#   one node     a fresh single node (the what-if "on one node, without
#                replicas")
#   values       a fresh cluster written with 4096-byte values (the
#                what-if "with 4096-byte values", priced by the
#                calibration's value steps)
# Prints predicted, measured and the gap for each.
#
# Knobs (environment): WORKLOAD (put), KEYS (100000), SLO (p99<=10ms),
# SWEEP_DURATION (5), STRATA_BIN, KEEP (a directory to keep the reports).
set -euo pipefail

cd "$(dirname "$0")/.."
WORKLOAD=${WORKLOAD:-put}
KEYS=${KEYS:-100000}
SLO=${SLO:-p99<=10ms}
SWEEP_DURATION=${SWEEP_DURATION:-5}
# shellcheck source=scripts/lib/cluster.sh
. scripts/lib/cluster.sh

common=(--workload "$WORKLOAD" --keys "$KEYS" --slo "$SLO" --max-errors 0.1% --warmup 1 --quiet)
sweep() { # name urls [flags...]
    local name=$1 urls=$2
    shift 2
    echo "== sweep: $name ($(date -u +%H:%M))"
    "$STRATA_BIN" sweep "$urls" "${common[@]}" --preload --start-rate 2000 \
        --duration "$SWEEP_DURATION" --precision 0.03 --json "$@" \
        --out "$TMP/sweep-$name" >"$TMP/sweep-$name.json" || true
}

cluster_up "$TMP/c3" -- --durability sync
echo "== strata calibrate $URLS ($(date -u +%H:%M))"
"$STRATA_BIN" calibrate "$URLS" "${common[@]}" --preload --out "$TMP/cal"
sweep base "$URLS"
sweep ack1 "$URLS" --ack 1
# Node 3 down: kill the process listening on its port.
port=${URLS##*:}
pid=$(ss -ltnpH "sport = :$port" | grep -o 'pid=[0-9]*' | head -1 | cut -d= -f2)
kill -KILL "$pid"
sweep down "${URLS%,*}"
cluster_down

cluster_up "$TMP/none" -- --durability none
sweep nofsync "$URLS"
cluster_down

NODES=5 cluster_up "$TMP/c5" -- --durability sync
sweep nodes5 "$URLS"
cluster_down

echo "== one node ($(date -u +%H:%M))"
"$STRATA_BIN" serve --listen 127.0.0.1:0 --data-dir "$TMP/one" --log-level warn \
    --durability sync >"$TMP/one.out" 2>&1 &
ONE=$!
PIDS+=("$ONE")
URL=
for _ in $(seq 50); do
    URL=$(sed -n 's/.*listening on \(http[^ ]*\).*/\1/p' "$TMP/one.out")
    [[ -n $URL ]] && break
    sleep 0.1
done
sweep one "$URL"
kill "$ONE"
wait "$ONE" 2>/dev/null || true

cluster_up "$TMP/values" -- --durability sync
sweep values "$URLS" --value-size 4096
cluster_down

if [[ -n ${KEEP:-} ]]; then
    mkdir -p "$KEEP"
    cp -r "$TMP"/cal "$TMP"/sweep-*.json "$KEEP/"
fi
python3 - "$TMP" <<'PY'
import json, sys, os
d = sys.argv[1]
c = json.load(open(os.path.join(d, "cal", "calibration.json")))
w = c["cluster"]["what_if"]
def pred(prefix):
    for x in w:
        if x["label"].startswith(prefix):
            return x.get("breaking_point")
    return None
rows = [("base", "as given", "base"), ("ack=1", "at ack=1", "ack1"),
        ("one node down", "with one node down", "down"),
        ("no fsync", "without the fsync", "nofsync"),
        ("5 nodes, same host", "with 5 nodes (the same", "nodes5"),
        ("one node", "on one node", "one"),
        ("4096-byte values", "with 4096-byte values", "values")]
base = {}
print(f"{'what-if':<20} {'predicted':>10} {'measured':>10} {'gap':>8} {'vs base: predicted':>19} {'measured':>9}")
for name, label, f in rows:
    p = pred(label)
    try:
        m = json.load(open(os.path.join(d, f"sweep-{f}.json"))).get("breaking_point")
    except Exception:
        m = None
    gap = f"{100 * (p - m) / m:+.1f}%" if p and m else "-"
    ps = f"{p:,.0f}" if p else "none"
    ms = f"{m:,.0f}" if m else "none"
    if f == "base":
        base = {"p": p, "m": m}
    # The what-if's claim is its ratio to the base: beside the sweep's.
    rp = f"{p / base['p']:.2f}x" if p and base.get("p") else "-"
    rm = f"{m / base['m']:.2f}x" if m and base.get("m") else "-"
    print(f"{name:<20} {ps:>10} {ms:>10} {gap:>8} {rp:>19} {rm:>9}")
PY
