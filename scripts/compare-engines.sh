#!/usr/bin/env bash
# Compare Strata's storage engine with RocksDB (db_bench from rocksdb-tools)
# and fjall on identical db_bench workloads, and print a table of ops/sec.
#
#   (a) NUM random 16-byte keys, 100-byte values, 1 thread, sync off:
#       fillrandom, then readrandom on the filled store (one invocation).
#   (b) fillrandom with sync on, SYNC_THREADS threads, SYNC_NUM writes in
#       total over a key space of SYNC_NUM keys.
#
# All three get the same --cache_size, --bloom_bits, --write_buffer_size,
# --compression_type (COMPRESSION: lz4 by default, none, or zstd, which
# fjall lacks: its runs are skipped), values made by db_bench's generator at
# --compression_ratio 0.5, and the WAL on. Each engine's directory is
# measured after run (a) ends with a full compaction (db_bench's `compact`
# benchmark; Strata's and fjall's bench compact at the end of every run):
# the space column. Strata runs through `strata bench engine`,
# fjall through `engine-bench --engine fjall` (built with the `fjall` feature); both
# binaries use mimalloc. Data directories live under one temporary directory
# that is removed at the end.
#
# Knobs (environment): NUM (1000000), READS (NUM: readrandom's operations),
# COMPRESSION (lz4), SYNC_NUM (200000), SYNC_THREADS (8),
# CACHE_SIZE (8388608), BLOOM_BITS (10), WRITE_BUFFER_SIZE (67108864),
# SEED (301), KEEP_LOGS=DIR (copy every run's full output there).
set -euo pipefail

cd "$(dirname "$0")/.."

NUM=${NUM:-1000000}
READS=${READS:-$NUM}
COMPRESSION=${COMPRESSION:-lz4}
case $COMPRESSION in
    none | lz4 | zstd) ;;
    *) echo "COMPRESSION must be none, lz4 or zstd, got $COMPRESSION" >&2; exit 2 ;;
esac
SYNC_NUM=${SYNC_NUM:-200000}
SYNC_THREADS=${SYNC_THREADS:-8}
KEY_SIZE=16
VALUE_SIZE=100
CACHE_SIZE=${CACHE_SIZE:-8388608}
BLOOM_BITS=${BLOOM_BITS:-10}
WRITE_BUFFER_SIZE=${WRITE_BUFFER_SIZE:-67108864}
SEED=${SEED:-301}

if (( SYNC_NUM % SYNC_THREADS != 0 )); then
    echo "SYNC_NUM ($SYNC_NUM) must be a multiple of SYNC_THREADS ($SYNC_THREADS)" >&2
    exit 2
fi

log() { printf '==> %s\n' "$*" >&2; }

# --- tools -------------------------------------------------------------------
if ! command -v db_bench >/dev/null 2>&1; then
    log "db_bench not found: installing rocksdb-tools"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq rocksdb-tools >/dev/null
fi
DB_BENCH=$(command -v db_bench)

WORK=$(mktemp -d "${TMPDIR:-/tmp}/compare-engines.XXXXXX")
cleanup() { rm -rf "$WORK"; }
trap cleanup EXIT

log "building release binaries"
cargo build --release -q -p strata
cargo build --release -q -p strata-enginebench --features fjall --bin engine-bench
TARGET_DIR=$(cargo metadata --format-version 1 --no-deps 2>/dev/null |
    sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
TARGET_DIR=${TARGET_DIR:-target}
# Copy the binaries: a later build without the feature would replace them.
cp "$TARGET_DIR/release/strata" "$WORK/strata"
cp "$TARGET_DIR/release/engine-bench" "$WORK/engine-bench"

STRATA_CMD=("$WORK/strata" bench engine)
STRATA_VIA="strata bench engine"
FJALL_CMD=("$WORK/engine-bench" --engine fjall)
FJALL_VERSION=$(sed -n '/^name = "fjall"$/{n;s/version = "\(.*\)"/\1/p;}' Cargo.lock | head -n1)
ROCKSDB_VERSION=$("$DB_BENCH" --version 2>&1 | head -n1 || true)

COMMON=(--key_size="$KEY_SIZE" --value_size="$VALUE_SIZE" --cache_size="$CACHE_SIZE"
    --bloom_bits="$BLOOM_BITS" --write_buffer_size="$WRITE_BUFFER_SIZE" --seed="$SEED"
    --compression_type="$COMPRESSION" --compression_ratio=0.5)
ROCKS_ONLY=(--disable_wal=0 --progress_reports=0)
# fjall has no zstd.
WITH_FJALL=1
[[ $COMPRESSION == zstd ]] && WITH_FJALL=0

# run NAME ENGINE -- ARGS...: run one engine, keep its output in $WORK/NAME.log.
run() {
    local name=$1 engine=$2
    shift 3
    local dir="$WORK/data-$name"
    local out="$WORK/$name.log"
    local -a cmd
    case $engine in
        strata) cmd=("${STRATA_CMD[@]}") ;;
        fjall) cmd=("${FJALL_CMD[@]}") ;;
        rocksdb) cmd=("$DB_BENCH" "${ROCKS_ONLY[@]}") ;;
    esac
    sync
    log "$name: ${cmd[*]##*/} $*"
    local start=$SECONDS
    if ! "${cmd[@]}" "${COMMON[@]}" --db="$dir" "$@" >"$out" 2>&1; then
        echo "---- $name failed; its output:" >&2
        cat "$out" >&2
        exit 1
    fi
    grep -E '^(fillrandom|readrandom|compact|write amp|space amp) +:|latency p50' "$out" |
        sed 's/^/    /' >&2 || true
    log "$name: done in $((SECONDS - start)) s"
    du -sb "$dir" | cut -f1 >"$WORK/$name.space"
    if [[ -n ${KEEP_LOGS:-} ]]; then
        mkdir -p "$KEEP_LOGS"
        cp "$out" "$KEEP_LOGS/"
    fi
    rm -rf "$dir"
}

# ops NAME BENCHMARK: the ops/sec of BENCHMARK in run NAME's output (both the
# db_bench and the Strata report spell it "N ops/sec").
ops() {
    awk -v b="$2" '$1 == b && $2 == ":" {
        for (i = 3; i <= NF; i++) if ($i ~ /^ops\/sec/) { print $(i - 1); exit }
    }' "$WORK/$1.log"
}

# --- (a) 1 thread, no sync: fillrandom then readrandom ------------------------
A_ARGS=(--benchmarks=fillrandom,readrandom --num="$NUM" --reads="$READS" --threads=1 --sync=0)
run a-strata strata -- "${A_ARGS[@]}"
# db_bench compacts only when asked; the others compact when their run ends.
run a-rocksdb rocksdb -- "${A_ARGS[@]}" --benchmarks=fillrandom,readrandom,compact
((WITH_FJALL)) && run a-fjall fjall -- "${A_ARGS[@]}"
# Strata again with RocksDB's sync=false durability: every write handed to the
# OS (plus an fsync a second), where sync=0 (`none`) buffers 64 KiB in the
# process as fjall's journal buffers 8 KiB.
run a2-strata strata -- "${A_ARGS[@]}" --durability='interval(1000)'

# --- (b) SYNC_THREADS threads, sync: fillrandom -------------------------------
# db_bench gives every thread --writes operations over a key space of --num;
# Strata's benchmark splits --num operations among the threads.
B_COMMON=(--benchmarks=fillrandom --num="$SYNC_NUM" --threads="$SYNC_THREADS" --sync=1)
run b-strata strata -- "${B_COMMON[@]}"
run b-rocksdb rocksdb -- "${B_COMMON[@]}" --writes=$((SYNC_NUM / SYNC_THREADS))
((WITH_FJALL)) && run b-fjall fjall -- "${B_COMMON[@]}"

# --- table ----------------------------------------------------------------------
row() {
    local label=$1 run=$2 bench=$3 strata_run=${4:-$2}
    local s r f
    s=$(ops "$strata_run-strata" "$bench")
    r=$(ops "$run-rocksdb" "$bench")
    f=$( ((WITH_FJALL)) && ops "$run-fjall" "$bench" || true)
    awk -v l="$label" -v s="${s:-0}" -v r="${r:-0}" -v f="${f:-0}" 'BEGIN {
        best = (r > f) ? r : f
        ratio = (best > 0) ? sprintf("%.2f", s / best) : "n/a"
        fj = (f > 0) ? sprintf("%d", f) : "n/a"
        printf "| %-40s | %12d | %13d | %11s | %17s |\n", l, s, r, fj, ratio
    }'
}

echo
echo "Strata:  $STRATA_VIA"
echo "RocksDB: $ROCKSDB_VERSION ($DB_BENCH)"
echo "fjall:   ${FJALL_VERSION:-?} (engine-bench --engine fjall)"
if grep -q "Assertions are enabled" "$WORK/a-rocksdb.log"; then
    echo "note:    this db_bench build has assertions enabled (it says so), which slows RocksDB"
fi
echo "keys $KEY_SIZE B, values $VALUE_SIZE B, cache $CACHE_SIZE B, bloom $BLOOM_BITS bits/key," \
    "write buffer $WRITE_BUFFER_SIZE B, compression $COMPRESSION (values half random), WAL on, seed $SEED"
echo "durability at sync=0: strata 'none' buffers WAL records in the process (64 KiB), fjall"
echo "buffers its journal (8 KiB), RocksDB writes each record to the OS; the interval(1000)"
echo "rows give strata RocksDB's guarantee (each write in the OS) plus an fsync a second."
echo
printf "| %-40s | %12s | %13s | %11s | %17s |\n" workload "strata ops/s" "rocksdb ops/s" \
    "fjall ops/s" "strata/best-other"
printf "|%s|%s|%s|%s|%s|\n" "$(printf -- '-%.0s' {1..42})" "$(printf -- '-%.0s' {1..14})" \
    "$(printf -- '-%.0s' {1..15})" "$(printf -- '-%.0s' {1..13})" "$(printf -- '-%.0s' {1..19})"
row "fillrandom $NUM, 1 thread, sync=0" a fillrandom
row "readrandom $NUM after it, 1 thread" a readrandom
row "  same, strata durability interval(1000)" a fillrandom a2
row "  readrandom after that" a readrandom a2
row "fillrandom $SYNC_NUM, $SYNC_THREADS threads, sync=1" b fillrandom

# --- space ------------------------------------------------------------------------
space() { cat "$WORK/$1.space" 2>/dev/null || echo 0; }
echo
echo "space after run (a), compacted ($NUM keys; du -sb of each directory, logs included):"
awk -v s="$(space a-strata)" -v r="$(space a-rocksdb)" -v f="$(space a-fjall)" 'BEGIN {
    printf "| strata %.1f MB | rocksdb %.1f MB | fjall %s | strata/rocksdb %.2f |\n",
        s / 1e6, r / 1e6, (f > 0 ? sprintf("%.1f MB", f / 1e6) : "n/a"), (r > 0 ? s / r : 0)
}'
