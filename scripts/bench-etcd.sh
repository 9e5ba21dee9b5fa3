#!/usr/bin/env bash
# A 3-node Strata cluster against a 3-member etcd cluster (issue 28), side by
# side in one run on this machine: PUT of random keys with 100-byte values,
# CLIENTS closed-loop clients each, for DURATION seconds, ROUNDS times
# alternating; prints PUT/s of each and the ratio.
#
#   Strata: `strata cluster up --nodes 3` (replication 3, ack=2 of 3,
#           --durability sync: each replica's WAL fsynced before it
#           answers), driven by `strata load --clients CLIENTS` through the
#           client library (each key sent to one of its replicas, failover,
#           hedging; `CLIENT=direct` for each connection to its own node).
#   etcd:   Debian's etcd-server (3.4), three members on loopback (Raft: a
#           write is fsynced by a majority), driven by wrk with CLIENTS
#           connections, each sent to one member (followers forward to the
#           leader) through the v3 JSON gateway (scripts/wrk/etcd-put.lua).
#
# Every process shares the machine's cores. The generators differ (wrk is C
# and lighter; the lab records every request's latency and runs the client
# library) and each takes its share of the CPU from its servers.
# Knobs: CLIENTS (64), DURATION (20), ROUNDS (2), CLIENT (smart), STRATA_BIN.
# Installs etcd-server and wrk with apt-get when missing.
set -euo pipefail
shopt -s inherit_errexit

cd "$(dirname "$0")/.."
CLIENTS=${CLIENTS:-64}
DURATION=${DURATION:-20}
ROUNDS=${ROUNDS:-2}
CLIENT=${CLIENT:-smart}
log() { printf '==> %s\n' "$*" >&2; }

missing=()
command -v etcd >/dev/null || missing+=(etcd-server)
command -v wrk >/dev/null || missing+=(wrk)
if ((${#missing[@]})); then
    log "installing ${missing[*]}"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi
# shellcheck source=scripts/lib/cluster.sh
. scripts/lib/cluster.sh

etcd_up() {
    local cluster="" i
    for i in 1 2 3; do cluster+="${cluster:+,}m$i=http://127.0.0.1:2380$i"; done
    for i in 1 2 3; do
        etcd --name "m$i" --data-dir "$TMP/etcd-$i" \
            --listen-client-urls "http://127.0.0.1:2379$i" --advertise-client-urls "http://127.0.0.1:2379$i" \
            --listen-peer-urls "http://127.0.0.1:2380$i" --initial-advertise-peer-urls "http://127.0.0.1:2380$i" \
            --initial-cluster "$cluster" --initial-cluster-state new --initial-cluster-token strata-bench \
            --logger zap --log-level error >"$TMP/etcd-$i.log" 2>&1 &
        PIDS+=($!)
        ETCD+=($!)
    done
    for _ in $(seq 100); do
        etcdctl --endpoints http://127.0.0.1:23791 put probe x >/dev/null 2>&1 && return
        sleep 0.2
    done
    echo "etcd did not start" >&2
    exit 1
}

etcd_run() { # -> PUT/s
    # Each member gets a third of the connections, from its own wrk.
    local per=$(((CLIENTS + 2) / 3)) i
    local wrks=()
    for i in 1 2 3; do
        wrk -t1 -c"$per" -d"${DURATION}s" -s scripts/wrk/etcd-put.lua "http://127.0.0.1:2379$i" >"$TMP/wrk.$i" &
        wrks+=($!)
    done
    wait "${wrks[@]}"
    for i in 1 2 3; do
        if grep -q "Non-2xx" "$TMP/wrk.$i"; then
            echo "etcd answered errors: $(grep Non-2xx "$TMP/wrk.$i")" >&2
        fi
    done
    awk '/^Requests\/sec:/ {s += $2} END {printf "%.0f", s}' "$TMP"/wrk.[123]
}

strata_run() { # -> PUT/s
    rm -rf "$TMP/strata"
    cluster_up "$TMP/strata" -- --durability sync
    "$STRATA_BIN" load "$URLS" --workload put --keys 1000000000 --clients "$CLIENTS" \
        --duration "$DURATION" --client "$CLIENT" --quiet --json >"$TMP/load.json"
    cluster_down
    python3 -c 'import json,sys; t=json.load(open(sys.argv[1]))["trials"][0]; print(round((t["requests"]-t["errors"])/t["duration_s"]))' "$TMP/load.json"
}

printf '| round | Strata PUT/s | etcd PUT/s | ratio |\n| ---: | ---: | ---: | ---: |\n' >"$TMP/table"
for round in $(seq "$ROUNDS"); do
    log "round $round: Strata, 3 nodes, $CLIENTS clients ($CLIENT)"
    s=$(strata_run)
    log "round $round: etcd, 3 members, $CLIENTS connections"
    ETCD=()
    rm -rf "$TMP"/etcd-*
    etcd_up
    e=$(etcd_run)
    for p in "${ETCD[@]}"; do kill "$p" 2>/dev/null || true; done
    wait "${ETCD[@]}" 2>/dev/null || true
    awk -v r="$round" -v s="$s" -v e="$e" 'BEGIN { printf "| %s | %d | %d | %.2f× |\n", r, s, e, e ? s / e : 0 }' |
        tee -a "$TMP/table" >&2
done
echo
echo "PUT/s, 3 nodes against 3 etcd members, $CLIENTS closed-loop clients, ${DURATION}s ($(date -u +%Y-%m-%d))"
echo
cat "$TMP/table"
