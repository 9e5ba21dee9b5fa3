#!/usr/bin/env bash
# Admission control under overload (issue 3): the node's fixed and adaptive
# admission modes at 2x and 10x its capacity, offered open loop by the lab.
#
# The workload is range reads of 200 records (scripts/workloads/range-200.toml):
# CPU-bound to serve, nearly free to send, so 10x the node's capacity can be
# offered from the machine the node runs on. Capacity is measured first as the
# closed-loop rate of 64 clients. Each run gets a fresh node and data dir.
#
# Prints a markdown table: offered, answered 2xx per second, 503s per second,
# p50/p99 of the served requests, p99 of the 503s, the server's CPU, and the
# final adaptive limit.
#
# The node runs on core 1 with one runtime thread and the generator on core
# 0 (taskset), so that the generator's own work at 10x does not take the
# node's CPU: the node's capacity is then one core's, whatever is offered.
#
# Both modes share the waiting bounds in NODE_ARGS (128 places, 50 ms): the
# defaults (1024 places, 100 ms) hold a client's connection for up to 100 ms
# before a 503, which at 10x would need more connections than the lab opens.
#
# Knobs (environment): DURATION (15), WARMUP (3), CONNECTIONS (4096),
# TARGET_MS (adaptive target, 10), NODE_ARGS, STRATA_BIN.
set -euo pipefail

cd "$(dirname "$0")/.."
DURATION=${DURATION:-15}
WARMUP=${WARMUP:-3}
CONNECTIONS=${CONNECTIONS:-4096}
NODE_ARGS=${NODE_ARGS:---max-waiting 128 --max-wait-ms 50 --worker-threads 1}
TARGET_MS=${TARGET_MS:-10}
ADDR=127.0.0.1:8093
WORKLOAD=scripts/workloads/range-200.toml
# shellcheck source=scripts/lib/node.sh
. scripts/lib/node.sh

# Capacity: 64 closed-loop clients against default admission.
# shellcheck disable=SC2086 # NODE_ARGS is a list of flags
start_node $NODE_ARGS
taskset -c 0 "$STRATA_BIN" load "http://$ADDR" --workload "$WORKLOAD" --preload --clients 64 \
    --duration 10 --warmup 2 --quiet --json --out "$TMP/cap" >"$TMP/cap.json" 2>/dev/null
stop_node
CAP=$(python3 -c "import json; print(round(json.load(open('$TMP/cap.json'))['trials'][0]['achieved_rate']))")
echo "Capacity (64 closed-loop clients, default admission): $CAP req/s"
echo
echo "| admission | load | offered req/s | served 2xx/s | 503/s | served p50 | served p99 | 503 p99 | node CPU | limit at end |"
echo "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
for mode in fixed adaptive; do
    for x in 2 10; do
        extra=(--admission "$mode")
        [[ $mode == adaptive ]] && extra+=(--target-latency-ms "$TARGET_MS")
        # shellcheck disable=SC2086
        start_node $NODE_ARGS "${extra[@]}"
        rate=$((CAP * x))
        taskset -c 0 "$STRATA_BIN" load "http://$ADDR" --workload "$WORKLOAD" --preload --rate "$rate" \
            --connections "$CONNECTIONS" --duration "$DURATION" --warmup "$WARMUP" --quiet --json \
            --out "$TMP/r" >"$TMP/r.json" 2>/dev/null
        limit=$(curl -s "http://$ADDR/metrics" | awk '/^strata_admission_limit /{print $2}')
        stop_node
        python3 - "$TMP/r.json" "$mode" "$x" "$limit" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
t = r["trials"][0]
ops = {o["op"]: o for o in t["per_op"]}
served = ops.get("range", {"requests": 0, "errors": 0, "latency": {"p50_ms": 0, "p99_ms": 0}})
failed = ops.get("5xx", {"requests": 0, "latency": {"p99_ms": 0}})
secs = t["duration_s"]
ok = (served["requests"] - served["errors"]) / secs
refused = failed["requests"] / secs
cpu = t.get("server_cpu_cores") or 0
print(f"| {sys.argv[2]} | {sys.argv[3]}x | {t['offered_rate']:.0f} | {ok:.0f} | {refused:.0f} | "
      f"{served['latency']['p50_ms']:.1f} ms | {served['latency']['p99_ms']:.1f} ms | "
      f"{failed['latency']['p99_ms']:.1f} ms | {cpu:.2f} | {sys.argv[4]} |")
EOF
    done
done
