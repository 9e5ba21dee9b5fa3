#!/usr/bin/env bash
# What TLS costs the node (issue 17): the same node binary plain and with
# --tls-cert (certificates from deploy/tls/make-certs.sh), alternating,
# ROUNDS times each, as a markdown table with ratios:
#   - wrk PUT (put.lua) and GET (get.lua), CONNECTIONS keep-alive
#     connections, DURATION seconds each: req/s and p99 (the record layer's
#     cost; wrk speaks https itself);
#   - full handshakes a second, new connection each (`openssl s_time -new`,
#     one client): what a client that does not keep its connections costs.
# Knobs (environment): ROUNDS (3), DURATION (10), CONNECTIONS (32),
# KEYSPACE (1000000), STRATA_BIN (default target/release/strata, built).
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-10}
CONNECTIONS=${CONNECTIONS:-32}
KEYSPACE=${KEYSPACE:-1000000}
command -v wrk >/dev/null || { echo "needs wrk (apt-get install wrk)" >&2; exit 1; }
if [[ -z ${STRATA_BIN:-} ]]; then
    cargo build --release -p strata -q
    STRATA_BIN=target/release/strata
fi

work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
deploy/tls/make-certs.sh "$work/certs" 127.0.0.1 >/dev/null

# shellcheck source=lib/ab.sh
source scripts/lib/ab.sh

results=$work/results
: >"$results"
for round in $(seq 1 "$ROUNDS"); do
    for v in plain tls; do
        echo "round $round: $v" >&2
        port=$(free_port)
        args=(serve --listen "127.0.0.1:$port" --data-dir "$work/node-$round-$v" --durability none --log-level warn)
        scheme=http
        if [[ $v == tls ]]; then
            args+=(--tls-cert "$work/certs/node.pem" --tls-key "$work/certs/node.key")
            scheme=https
        fi
        "$STRATA_BIN" "${args[@]}" >/dev/null 2>&1 &
        pid=$!
        for _ in $(seq 100); do curl -sf --cacert "$work/certs/ca.pem" "$scheme://127.0.0.1:$port/v0/status" >/dev/null && break; sleep 0.1; done
        put=$(wrk_rps_p99 "$(wrk --latency -t2 -c"$CONNECTIONS" -d"${DURATION}s" -s scripts/wrk/put.lua "$scheme://127.0.0.1:$port" -- "$KEYSPACE" 200000)")
        get=$(wrk_rps_p99 "$(wrk --latency -t2 -c"$CONNECTIONS" -d"${DURATION}s" -s scripts/wrk/get.lua "$scheme://127.0.0.1:$port" -- "$KEYSPACE" 200000)")
        if [[ $v == tls ]]; then
            hs=$(openssl s_time -connect "127.0.0.1:$port" -new -time "$DURATION" -CAfile "$work/certs/ca.pem" 2>/dev/null |
                awk '/connections in .* real seconds/ {print $1 / $4; exit}')
        else
            hs=0
        fi
        kill "$pid"; wait "$pid" 2>/dev/null || true
        rm -rf "$work/node-$round-$v"
        echo "$v $put $get $hs" | tee -a "$results" >&2
    done
done

ab_table "$results" "PUT req/s" "PUT p99 ms" "GET req/s" "GET p99 ms"
hs=$(awk '$1 == "tls" {print $6}' "$results" | sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}')
echo "Full TLS handshakes a second (openssl s_time -new, one client): $hs"
