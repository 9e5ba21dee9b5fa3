# Shared by the scripts that measure one Strata node pinned to core 1 while
# the lab runs on core 0. Source it from the repository root after setting
# ADDR (host:port); it sets STRATA_BIN (building target/release/strata
# unless given), TMP (removed on exit) and defines start_node / stop_node.
# The node is stopped on exit too. NODE_CPUS (1) is the cores the node may
# run on (taskset's list: 0-1 for both).

if [[ -z ${STRATA_BIN:-} ]]; then
    cargo build --release -q -p strata
    STRATA_BIN=target/release/strata
fi
NODE_CPUS=${NODE_CPUS:-1}
TMP=$(mktemp -d)
NODE=
cleanup() {
    [[ -n $NODE ]] && kill "$NODE" 2>/dev/null && wait "$NODE" 2>/dev/null
    rm -rf "$TMP"
}
trap cleanup EXIT

# start_node [serve flags...]: a fresh data dir under $TMP, on NODE_CPUS,
# ready when /v0/status answers.
start_node() {
    rm -rf "$TMP/data"
    taskset -c "$NODE_CPUS" "$STRATA_BIN" serve --listen "$ADDR" --data-dir "$TMP/data" --log-level warn "$@" >/dev/null &
    NODE=$!
    for _ in $(seq 50); do curl -sf "http://$ADDR/v0/status" >/dev/null && return; sleep 0.1; done
    echo "node did not start" >&2
    exit 1
}

stop_node() {
    kill "$NODE"
    wait "$NODE" 2>/dev/null || true
    NODE=
}
