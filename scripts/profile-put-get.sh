#!/usr/bin/env bash
# Where a PUT's and a GET's microseconds go (issue 14): one node on a fresh
# data dir under wrk, PUT of random new keys (scripts/wrk/put.lua) and then
# GET of existing keys (scripts/wrk/get.lua), each profiled with
# `perf record` for PROFILE seconds in the middle of a wrk run; prints, in
# µs a request (samples x sample period / requests served), the node's time
# per thread and its top symbols side by side.
#
#   scripts/profile-put-get.sh [NODE_ARGS...]     # e.g. --durability none
#
# perf's own cost inflates every figure (by about a third here); compare
# figures of one run, or of two binaries run one after the other
# (STRATA_BIN). Installs linux-perf and wrk with apt-get when missing.
# Knobs (environment): STRATA_BIN, CONNECTIONS (64), PROFILE (6), FREQ
# (4000 Hz), TOP (25 symbols), KEYS (100000, pre-filled for GET).
# RATE (e.g. 2000): instead of wrk at saturation, `strata load` at that
# steady rate (open loop, CONNECTIONS connections; the node on core 1, the
# load on core 0), the rate the CPU comparison with Redis runs at
# (scripts/cpu-per-request.sh); figures are then µs per request at RATE.
set -euo pipefail

cd "$(dirname "$0")/.."
CONNECTIONS=${CONNECTIONS:-64}
PROFILE=${PROFILE:-6}
FREQ=${FREQ:-4000}
TOP=${TOP:-25}
KEYS=${KEYS:-100000}
ADDR=127.0.0.1:18191
log() { printf '==> %s\n' "$*" >&2; }

missing=()
command -v perf >/dev/null || missing+=(linux-perf)
command -v wrk >/dev/null || missing+=(wrk)
if ((${#missing[@]})); then
    sudo=()
    ((EUID == 0)) || sudo=(sudo)
    log "installing ${missing[*]}"
    "${sudo[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq "${missing[@]}" >/dev/null
fi
# The node may use both cores, as under bench-node.sh (at a steady RATE:
# core 1, the load on core 0).
NODE_CPUS=0-1
[[ -n ${RATE:-} ]] && NODE_CPUS=1
# shellcheck source=scripts/lib/node.sh
. scripts/lib/node.sh
start_node "$@"

profile() { # name script keyspace
    local dur=$((PROFILE + 4))
    if [[ -n ${RATE:-} ]]; then
        local workload=${2%.lua}
        taskset -c 0 "$STRATA_BIN" load "http://$ADDR" --workload "$workload" --keys "$3" --rate "$RATE" \
            --connections "$CONNECTIONS" --duration "$dur" --quiet >"$TMP/load.$1" 2>&1 &
        local l=$!
        sleep 2
        perf record -F "$FREQ" -p "$NODE" -o "$TMP/$1.data" -- sleep "$PROFILE" >/dev/null 2>&1
        wait "$l"
        echo "$RATE"
        return
    fi
    wrk --latency -t2 -c"$CONNECTIONS" -d"${dur}s" -s "scripts/wrk/$2" "http://$ADDR" -- "$3" 200000 >"$TMP/wrk.$1" &
    local w=$!
    sleep 2
    perf record -F "$FREQ" -p "$NODE" -o "$TMP/$1.data" -- sleep "$PROFILE" >/dev/null 2>&1
    wait "$w"
    awk '/^Requests\/sec:/ {print $2}' "$TMP/wrk.$1"
}
log "PUT"
put_rps=$(profile put put.lua 1000000)
log "pre-fill $KEYS keys, then GET"
wrk -t2 -c"$CONNECTIONS" -d4s -s scripts/wrk/put.lua "http://$ADDR" -- "$KEYS" 200000 >/dev/null
get_rps=$(profile get get.lua "$KEYS")

for op in put get; do
    rps=$put_rps
    [[ $op == get ]] && rps=$get_rps
    perf report -i "$TMP/$op.data" --no-children --sort comm -n --stdio -g none 2>/dev/null |
        awk -v r="$rps" -v p="$PROFILE" -v f="$FREQ" '!/^#/ && NF {printf "%.3f\t%s\n", $2 * 1e6 / f / (r * p), $3}' >"$TMP/$op.comm"
    perf report -i "$TMP/$op.data" --no-children --sort sym -n --stdio -g none 2>/dev/null |
        awk -v r="$rps" -v p="$PROFILE" -v f="$FREQ" '!/^#/ && NF {n = $2; $1 = ""; $2 = ""; sub(/^ +/, ""); printf "%.3f\t%s\n", n * 1e6 / f / (r * p), $0}' >"$TMP/$op.sym"
done
python3 - "$TMP" "$put_rps" "$get_rps" "$TOP" <<'PY'
import sys
tmp, put_rps, get_rps, top = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
def load(f):
    d = {}
    for line in open(f):
        v, name = line.rstrip("\n").split("\t", 1)
        d[name] = d.get(name, 0) + float(v)
    return d
pc, gc = load(f"{tmp}/put.comm"), load(f"{tmp}/get.comm")
ps, gs = load(f"{tmp}/put.sym"), load(f"{tmp}/get.sym")
print(f"load under perf: PUT {float(put_rps):,.0f} req/s, GET {float(get_rps):,.0f} req/s\n")
print("| thread | PUT µs | GET µs |\n| --- | ---: | ---: |")
print(f"| all of the node | {sum(pc.values()):.2f} | {sum(gc.values()):.2f} |")
for t in sorted(set(pc) | set(gc), key=lambda t: -(pc.get(t, 0) + gc.get(t, 0))):
    print(f"| {t} | {pc.get(t, 0):.2f} | {gc.get(t, 0):.2f} |")
print("\n| symbol | PUT µs | GET µs |\n| --- | ---: | ---: |")
for s in sorted(set(ps) | set(gs), key=lambda s: -max(ps.get(s, 0), gs.get(s, 0)))[:top]:
    print(f"| `{s[:90]}` | {ps.get(s, 0):.2f} | {gs.get(s, 0):.2f} |")
PY
