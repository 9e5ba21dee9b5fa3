#!/usr/bin/env bash
# The dashboard's screenshot in docs/operations.md (docs/img/dashboard.png),
# drawn from real data: a local cluster of three nodes (`strata cluster up`,
# 4 MiB memtables so that flushes and compactions show), a real Prometheus
# (Debian's `prometheus`) scraping them every 2 s with the alert rules
# loaded, and a `strata load` of a mixed workload with a node killed for a
# while in the middle (hints pile up and drain, repairs follow). Then
# `strata report dashboard` draws the panels from Prometheus, and headless
# Chromium turns the SVG into the PNG.
# Knobs (environment): RATE (2000), DURATION (240, seconds), KILL_AT (90),
# KILL_FOR (45), OUT (docs/img/dashboard.png), STRATA_BIN (default
# target/release/strata, built).
set -euo pipefail
cd "$(dirname "$0")/.."

RATE=${RATE:-2000}
DURATION=${DURATION:-240}
KILL_AT=${KILL_AT:-90}
KILL_FOR=${KILL_FOR:-45}
OUT=${OUT:-docs/img/dashboard.png}
[[ $OUT == /* ]] || OUT=$PWD/$OUT
for tool in prometheus chromium; do
    command -v "$tool" >/dev/null || { echo "needs $tool (apt-get install $tool)" >&2; exit 1; }
done
if [[ -z ${STRATA_BIN:-} ]]; then
    cargo build --release -p strata -q
    STRATA_BIN=target/release/strata
fi

work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT

# shellcheck source=lib/ab.sh
source scripts/lib/ab.sh

STRATA_MEMTABLE_BYTES=$((4 << 20)) "$STRATA_BIN" cluster up --data-dir "$work/cluster" --base-port 0 >"$work/up.out" 2>&1 &
for _ in $(seq 300); do grep -q '^Ctrl-C' "$work/up.out" && break; sleep 0.1; done
urls=$(grep -E '^http://[^,]+,' "$work/up.out")
[[ -n $urls ]] || { cat "$work/up.out" >&2; exit 1; }
echo "cluster: $urls" >&2

prom=127.0.0.1:$(free_port)
targets=$(sed -e 's#http://##g' -e "s#\([^,]*\)#'\1'#g" <<<"$urls")
cat >"$work/prometheus.yml" <<EOF
global:
  scrape_interval: 2s
  evaluation_interval: 2s
rule_files:
  - $PWD/deploy/prometheus/alerts.yml
scrape_configs:
  - job_name: strata
    static_configs:
      - targets: [$targets]
EOF
prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/tsdb" \
    --web.listen-address="$prom" >/dev/null 2>"$work/prometheus.log" &
for _ in $(seq 100); do curl -sf "http://$prom/-/ready" >/dev/null && break; sleep 0.1; done
echo "prometheus: http://$prom" >&2

sleep 10
"$STRATA_BIN" load "$urls" --workload mixed --rate "$RATE" --duration "${DURATION}s" \
    --value-size 1000 --keys 50000 \
    --fault "kill:2@${KILL_AT}s+${KILL_FOR}s" --cluster-dir "$work/cluster" \
    --out "$work/load" --quiet >&2
# The tail: the hints drained, anti-entropy caught up.
sleep 20

window=$((DURATION + 40))
"$STRATA_BIN" report dashboard --prometheus "http://$prom" --last "${window}s" \
    --out "$work/dashboard.svg" >&2
size=$(sed -n 's/.*<svg[^>]* width="\([0-9]*\)" height="\([0-9]*\)".*/\1,\2/p' "$work/dashboard.svg" | head -1)
chromium --headless --no-sandbox --disable-gpu --hide-scrollbars \
    --window-size="${size:-1260,2000}" --screenshot="$OUT" "file://$work/dashboard.svg" 2>/dev/null
echo "$OUT (${size/,/x})" >&2
