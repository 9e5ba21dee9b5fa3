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

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wrk_rps_p99() {
    local rps p99
    rps=$(awk '/Requests\/sec/ {print $2}' <<<"$1")
    p99=$(awk '$1=="99%" {v=$2; if (v ~ /us$/) {sub(/us/,"",v); v/=1000} else if (v ~ /ms$/) {sub(/ms/,"",v)} else if (v ~ /s$/) {sub(/s/,"",v); v*=1000}; print v}' <<<"$1")
    echo "$rps $p99"
}

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

python3 - "$results" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    v, *nums = line.split()
    rows.setdefault(v, []).append([float(x) for x in nums])
cols = ["PUT req/s", "PUT p99 ms", "GET req/s", "GET p99 ms"]
med = {v: [statistics.median(c) for c in zip(*r)] for v, r in rows.items()}
base = med["plain"]
print("| node | " + " | ".join(cols) + " |")
print("| --- |" + " ---: |" * len(cols))
for v, m in med.items():
    cells = []
    for i, x in enumerate(m[:4]):
        cell = f"{x:,.0f}" if x >= 100 else f"{x:.2f}"
        if v != "plain":
            cell += f" ({x / base[i]:.3f}×)"
        cells.append(cell)
    print(f"| {v} | " + " | ".join(cells) + " |")
print(f"\nFull TLS handshakes a second (openssl s_time -new, one client): {med['tls'][4]:,.0f}")
print(f"(medians of {len(rows['plain'])} rounds each, alternating)")
PY
