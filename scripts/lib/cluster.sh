# Shared by the scripts that measure local clusters (bench-cluster.sh,
# bench-etcd.sh, cpu-per-request.sh, calibrate-vs-sweep-cluster.sh). Source
# it from the repository root; it builds the strata binary unless STRATA_BIN
# is given, sets TMP (removed on exit, with every process in PIDS killed)
# and defines cluster_up and cluster_down.

if [[ -z ${STRATA_BIN:-} ]]; then
    cargo build --release -q -p strata
    STRATA_BIN=target/release/strata
fi
TMP=$(mktemp -d)
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$TMP"
}
trap cleanup EXIT

# cluster_up DIR [cluster-up flags...] [-- serve flags...]: `strata cluster
# up --nodes $NODES` (3 unless set) in the background (on the cores
# CLUSTER_CPUS lists, if set),
# its data and output under DIR; waits for its URL line. Sets CLUSTER (its
# pid, also in PIDS) and URLS (comma-separated); exits when it fails.
cluster_up() {
    local dir=$1
    shift
    local pin=()
    [[ -n ${CLUSTER_CPUS:-} ]] && pin=(taskset -c "$CLUSTER_CPUS")
    mkdir -p "$dir"
    "${pin[@]}" "$STRATA_BIN" cluster up --nodes "${NODES:-3}" --data-dir "$dir/data" --base-port 0 "$@" >"$dir/up.out" 2>&1 &
    CLUSTER=$!
    PIDS+=("$CLUSTER")
    URLS=
    for _ in $(seq 100); do
        URLS=$(grep -E '^http://.*,http://' "$dir/up.out" || true)
        [[ -n $URLS ]] && return 0
        sleep 0.2
    done
    cat "$dir/up.out" >&2
    exit 1
}

# cluster_down: stop the cluster cluster_up started last (its nodes too).
cluster_down() {
    kill "$CLUSTER" 2>/dev/null || true
    wait "$CLUSTER" 2>/dev/null || true
}
