#!/usr/bin/env bash
# Many generators (issue 47), side by side in one run:
#
#   1. The same percentiles: one `strata load` process against two
#      `strata worker`s driven by `strata load --workers` (worker 1 pinned to
#      core 0, worker 2 to core 1, "pinned apart"), at RATE req/s against a
#      node (PUT, durability none, unpinned), alternating which goes first,
#      ROUNDS rounds: p50, p99, p99.9 of each and their ratios.
#   2. A rate one worker cannot send: workers each held to QUOTA of a core
#      by a cgroup (v1 cpu controller, cfs quota; as root), against
#      `http-ceiling --raw` (a trivial server); at each of CAP_RATES, one such
#      worker, then WORKERS of them: achieved rate and the share of sends
#      more than 1 ms late (the generator keeping its schedule or not).
#
# Knobs (environment): RATE (2000), DURATION (10), ROUNDS (3), QUOTA (0.25),
# WORKERS (4), CAP_RATES ("2000 4000 8000 16000"), STRATA_BIN.
set -euo pipefail

cd "$(dirname "$0")/.."
RATE=${RATE:-2000}
DURATION=${DURATION:-10}
ROUNDS=${ROUNDS:-3}
QUOTA=${QUOTA:-0.25}
WORKERS=${WORKERS:-4}
CAP_RATES=${CAP_RATES:-2000 4000 8000 16000}
NODE=127.0.0.1:8096
CEILING=127.0.0.1:8097
cargo build --release -q -p strata -p strata-httpceiling
STRATA_BIN=${STRATA_BIN:-target/release/strata}
TMP=$(mktemp -d)
PIDS=()
CG=/sys/fs/cgroup/cpu
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    for d in "$CG"/strata-bench-w*; do [[ -d $d ]] && rmdir "$d" 2>/dev/null || true; done
    rm -rf "$TMP"
}
trap cleanup EXIT

# start_worker PORT [CPU] [CGROUP]: a worker on PORT, pinned to CPU, in CGROUP.
start_worker() {
    local port=$1 cpu=${2:-} cg=${3:-}
    local cmd=("$STRATA_BIN" worker --listen "127.0.0.1:$port" --quiet)
    [[ -n $cpu ]] && cmd=(taskset -c "$cpu" "${cmd[@]}")
    if [[ -n $cg ]]; then
        (echo "$BASHPID" >"$cg/cgroup.procs" && exec "${cmd[@]}") >/dev/null &
    else
        "${cmd[@]}" >/dev/null &
    fi
    PIDS+=($!)
}

pcts() { # report.json -> "p50 p99 p999 achieved late%"
    python3 - "$1" <<'EOF'
import json, sys
t = json.load(open(sys.argv[1]))["trials"][0]
l = t["latency"]
late = 100.0 * t["late_sends"] / max(t["requests"], 1)
print(f"{l['p50_ms']:.3f} {l['p99_ms']:.3f} {l['p999_ms']:.3f} {t['achieved_rate']:.0f} {late:.2f}")
EOF
}

echo "## 1. One generator against two workers pinned apart ($RATE req/s, PUT, ${DURATION}s)"
echo
"$STRATA_BIN" serve --listen "$NODE" --data-dir "$TMP/data" --durability none --log-level warn >/dev/null &
PIDS+=($!)
start_worker 7711 0
start_worker 7712 1
sleep 1
one() {
    "$STRATA_BIN" load "http://$NODE" --rate "$RATE" --duration "$DURATION" --warmup 1 \
        --json --quiet --out "$TMP/one" >"$TMP/one.json"
    pcts "$TMP/one.json"
}
two() {
    "$STRATA_BIN" load "http://$NODE" --rate "$RATE" --duration "$DURATION" --warmup 1 \
        --workers http://127.0.0.1:7711,http://127.0.0.1:7712 --json --quiet --out "$TMP/two" >"$TMP/two.json"
    pcts "$TMP/two.json"
}
echo "| round | one: p50 / p99 / p99.9 ms | two workers: p50 / p99 / p99.9 ms | ratio p50 / p99 / p99.9 |"
echo "| ---: | --- | --- | --- |"
for round in $(seq "$ROUNDS"); do
    if ((round % 2)); then a=$(one); b=$(two); else b=$(two); a=$(one); fi
    python3 - "$round" "$a" "$b" <<'EOF'
import sys
r, a, b = sys.argv[1], sys.argv[2].split(), sys.argv[3].split()
f = lambda v: " / ".join(v[:3])
q = " / ".join(f"{float(y) / float(x):.2f}" for x, y in zip(a[:3], b[:3]))
print(f"| {r} | {f(a)} | {f(b)} | {q} |")
EOF
done
kill "${PIDS[@]}" 2>/dev/null || true
wait 2>/dev/null || true
PIDS=()

echo
echo "## 2. Workers held to $QUOTA of a core each, against http-ceiling --raw"
echo
if [[ ! -w $CG ]]; then
    echo "no writable cgroup v1 cpu controller at $CG (run as root): part 2 skipped" >&2
    exit 1
fi
target/release/http-ceiling --listen "$CEILING" --threads 1 --raw 2>/dev/null &
PIDS+=($!)
period=100000
quota=$(python3 -c "print(int($QUOTA * $period))")
urls=()
for i in $(seq "$WORKERS"); do
    d="$CG/strata-bench-w$i"
    mkdir -p "$d"
    echo "$period" >"$d/cpu.cfs_period_us"
    echo "$quota" >"$d/cpu.cfs_quota_us"
    start_worker $((7720 + i)) "" "$d"
    urls+=("http://127.0.0.1:$((7720 + i))")
done
sleep 1
all=$(IFS=,; echo "${urls[*]}")
echo "| offered req/s | 1 worker: achieved, late | $WORKERS workers: achieved, late |"
echo "| ---: | --- | --- |"
for rate in $CAP_RATES; do
    row="| $rate |"
    for list in "${urls[0]}" "$all"; do
        "$STRATA_BIN" load "http://$CEILING" --workload get --keys 100000 --rate "$rate" \
            --duration "$DURATION" --warmup 1 --workers "$list" --json --quiet --out "$TMP/cap" >"$TMP/cap.json" ||
            true
        read -r _ _ _ achieved late <<<"$(pcts "$TMP/cap.json")"
        row+=" $achieved req/s, $late% late |"
    done
    echo "$row"
done
