#!/usr/bin/env bash
# Does the generator stall by itself at a trial's start? (issue 44)
# Runs N short open-loop loads (2 s, 16,000 req/s unless RATE is set)
# against one local node, then against a trivial HTTP server
# (http-ceiling --raw, with --max-connections 2000), nothing pinned, and
# counts the runs whose worst second had a p99 over 10 ms, with each
# run's connections opened and its seconds' p99.
#
#   scripts/generator-bursts.sh          # 10 runs against each
#   N=20 RATE=12000 scripts/generator-bursts.sh
#   BIN=/path/to/other/strata scripts/generator-bursts.sh   # another build's generator
set -euo pipefail
cd "$(dirname "$0")/.."
n=${N:-10}
rate=${RATE:-16000}
cargo build --release -p strata -p strata-httpceiling >/dev/null 2>&1
B=${BIN:-$PWD/target/release/strata}
S=$PWD/target/release/strata
C=$PWD/target/release/http-ceiling
dir=$(mktemp -d)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    rm -rf "$dir"
}
trap cleanup EXIT
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
np=$(port)
"$S" serve --data-dir "$dir/data" --listen "127.0.0.1:$np" >"$dir/node.log" 2>&1 &
pids+=($!)
cp=$(port)
"$C" --raw --listen "127.0.0.1:$cp" >/dev/null 2>&1 &
pids+=($!)
sleep 1
runs() {
    local name=$1 url=$2
    shift 2
    local bad=0
    for i in $(seq "$n"); do
        "$B" load "$url" --rate "$rate" --duration 2 --quiet --json --out "$dir/r" "$@" >/dev/null 2>&1
        line=$(python3 - "$dir/r/report.json" <<'EOF'
import json, sys
t = json.load(open(sys.argv[1]))["trials"][0]
worst = max(x["p99_ms"] for x in t["timeline"])
secs = " ".join(f'{x["p99_ms"]:.1f}' for x in t["timeline"])
print(f'{int(worst > 10)} p99 {t["latency"]["p99_ms"]:.1f} ms, seconds\' p99 {secs} ms, {t["connections_opened"]} connections opened')
EOF
)
        bad=$((bad + ${line%% *}))
        echo "  $name run $i: ${line#* }"
        sleep 0.3
    done
    echo "$name: $bad of $n runs had a second with p99 over 10 ms"
}
echo "generator: $B; $rate req/s, 2 s runs"
runs "one node" "http://127.0.0.1:$np"
runs "trivial server, cap 2000" "http://127.0.0.1:$cp" --max-connections 2000
