#!/usr/bin/env bash
# Run Strata's fuzz targets (fuzz/fuzz_targets/, all feeding
# fuzz/src/dispatch.rs: WAL, table, block and manifest decoding, the
# cluster's internal protocol, the workload and scenario TOML parsers, the
# node's request line and query) with cargo-fuzz (libFuzzer), each for a
# fixed time, and print what each did.
#
#   scripts/fuzz.sh [DURATION] [TARGET...]     # DURATION: 60s (default), 5m, 1h
#
# Each target starts from its kept inputs (fuzz/regressions/TARGET/) and
# its corpus (fuzz/corpus/TARGET/, kept in the repository: commit what a
# run added), and every target run appends a line to fuzz/ledger.tsv
# (date, target, seconds, executions, corpus inputs, crashes). A crash is copied
# into fuzz/regressions/TARGET/ at once, where
# crates/strata/tests/fuzz_regressions.rs replays it in the normal suite
# (it fails there until the bug is fixed); the script then goes on with the
# next target and exits 1 at the end.
#
# Needs the nightly toolchain (`rustup toolchain install nightly`) and
# installs cargo-fuzz with `cargo install` when missing.
set -euo pipefail

cd "$(dirname "$0")/.."
DURATION=${1:-60s}
shift || true
log() { printf '==> %s\n' "$*" >&2; }
die() { printf 'fuzz: %s\n' "$*" >&2; exit 1; }

case $DURATION in
*h) secs=$((${DURATION%h} * 3600)) ;;
*m) secs=$((${DURATION%m} * 60)) ;;
*s) secs=${DURATION%s} ;;
*) secs=$DURATION ;;
esac
[[ $secs =~ ^[0-9]+$ ]] || die "bad duration $DURATION (e.g. 60s, 5m, 1h)"

targets=("$@")
if ((${#targets[@]} == 0)); then
    for f in fuzz/fuzz_targets/*.rs; do targets+=("$(basename "$f" .rs)"); done
fi
cargo +nightly --version >/dev/null 2>&1 || die "needs the nightly toolchain: rustup toolchain install nightly"
if ! cargo fuzz --version >/dev/null 2>&1; then
    log "installing cargo-fuzz"
    cargo install cargo-fuzz --locked
fi

log "building ${#targets[@]} targets"
(cd fuzz && cargo +nightly fuzz build -O) >&2

found=0
echo "| target | seconds | executions | corpus inputs | crashes kept |"
echo "| --- | ---: | ---: | ---: | ---: |"
for t in "${targets[@]}"; do
    mkdir -p "fuzz/corpus/$t" "fuzz/regressions/$t"
    out=$(mktemp)
    log "$t for ${secs}s"
    started=$SECONDS
    set +e
    (cd fuzz && cargo +nightly fuzz run -O "$t" "corpus/$t" "regressions/$t" -- \
        -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1) >"$out" 2>&1
    status=$?
    set -e
    execs=$(grep -Eo 'stat::number_of_executed_units: *[0-9]+' "$out" | grep -Eo '[0-9]+$' | tail -1)
    corpus=$(find "fuzz/corpus/$t" -type f | wc -l)
    crashes=0
    for a in fuzz/artifacts/"$t"/*; do
        [[ -f $a ]] || continue
        cp "$a" "fuzz/regressions/$t/"
        log "$t: kept $(basename "$a") in fuzz/regressions/$t/"
        rm -f "$a"
        crashes=$((crashes + 1))
    done
    if ((status != 0 && crashes == 0)); then
        tail -20 "$out" >&2
        crashes="? (exit $status)"
    fi
    [[ $crashes == 0 ]] || found=1
    ran=$((SECONDS - started))
    # Each target's row as soon as it is done (a run stopped early keeps
    # what it did), and a line in the ledger of every fuzzing hour.
    echo "| $t | $ran | ${execs:-?} | $corpus | $crashes |"
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$(date -u +%F)" "$t" "$ran" "${execs:-?}" "$corpus" "$crashes" >>fuzz/ledger.tsv
    rm -f "$out"
done
exit "$found"
