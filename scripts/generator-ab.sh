#!/usr/bin/env bash
# Two builds of the generator side by side: `strata load --clients 64
# --workload get` (closed loop, one generator thread) on core 0 against
# `http-ceiling --raw` on core 1, ROUNDS rounds of DURATION seconds, the two
# binaries alternating which goes first; prints each round's req/s and the
# ratio new / old. For a change on the generator's path (its connection,
# its decoder): build the old commit in a worktree, then
#
#   git worktree add /tmp/old <commit>
#   (cd /tmp/old && CARGO_TARGET_DIR=/tmp/old-target cargo build --release -p strata)
#   OLD_BIN=/tmp/old-target/release/strata scripts/generator-ab.sh
#
# Knobs: OLD_BIN (required), NEW_BIN (target/release/strata), ROUNDS (4),
# DURATION (10), CONNECTIONS (64).
set -euo pipefail
cd "$(dirname "$0")/.."
: "${OLD_BIN:?give OLD_BIN, the strata binary of the other build}"
NEW_BIN=${NEW_BIN:-target/release/strata}
ROUNDS=${ROUNDS:-4}
DURATION=${DURATION:-10}
CONNECTIONS=${CONNECTIONS:-64}
CEILING=127.0.0.1:8094
cargo build --release -q -p strata -p strata-httpceiling
TMP=$(mktemp -d)
taskset -c 1 target/release/http-ceiling --listen "$CEILING" --threads 1 --raw >/dev/null 2>&1 &
HP=$!
trap 'kill $HP 2>/dev/null; rm -rf "$TMP"' EXIT
sleep 1
run() { # binary name
    taskset -c 0 "$1" load "http://$CEILING" --workload get --keys 1000000 \
        --clients "$CONNECTIONS" --duration "$DURATION" --json --quiet \
        --out "$TMP/$2" >"$TMP/$2.json" 2>/dev/null
    python3 -c "import json; print(round(json.load(open('$TMP/$2.json'))['trials'][0]['achieved_rate']))"
}
echo "| round | old req/s | new req/s | new / old |"
echo "| ---: | ---: | ---: | ---: |"
for r in $(seq 1 "$ROUNDS"); do
    if [ $((r % 2)) = 1 ]; then
        o=$(run "$OLD_BIN" "old$r"); n=$(run "$NEW_BIN" "new$r")
    else
        n=$(run "$NEW_BIN" "new$r"); o=$(run "$OLD_BIN" "old$r")
    fi
    ratio=$(awk -v a="$n" -v b="$o" 'BEGIN { printf "%.3f", a / b }')
    echo "| $r | $o | $n | $ratio |"
done
