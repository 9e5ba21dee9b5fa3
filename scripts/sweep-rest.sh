#!/usr/bin/env bash
# Does a PUT sweep's breaking point depend on the flush and compaction
# work its earlier trials leave behind? The same sweep on a fresh node for
# each rest between trials (PAUSES, seconds); prints each breaking point
# and every trial's rate, result and p99. Nothing pinned.
#
# Knobs (environment): PAUSES ("1 20"), DUR (none), START (8000),
# STRATA_BIN (target/release/strata, built if missing).
set -uo pipefail
cd "$(dirname "$0")/.."
B=${STRATA_BIN:-target/release/strata}
[[ -x $B ]] || cargo build --release -q -p strata
ADDR=127.0.0.1:8097
for P in ${PAUSES:-1 20}; do
    D=$(mktemp -d)
    "$B" serve --listen $ADDR --data-dir "$D/data" --log-level warn --durability "${DUR:-none}" >/dev/null 2>&1 &
    N=$!
    for _ in $(seq 50); do curl -sf "http://$ADDR/v0/status" >/dev/null && break; sleep 0.1; done
    "$B" sweep "http://$ADDR" --workload put --keys 100000 --slo 'p99<=10ms' \
        --start-rate "${START:-8000}" --duration 5 --precision 0.03 --pause "$P" \
        --quiet --json --out "$D/sweep" >"$D/s.json" 2>/dev/null
    python3 - "$D/s.json" "$P" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print("rest", sys.argv[2], "s: breaking point", r.get("breaking_point"), "cause", r.get("cause"))
print("  " + "; ".join("%.0f %s p99 %.1f" % (t["offered_rate"], "ok" if t["meets_slo"] else "FAIL", t["latency"]["p99_ms"]) for t in r["trials"]))
PY
    kill $N
    wait $N 2>/dev/null
    rm -rf "$D"
done
