# Shared by the benchmark scripts that start servers of their own
# (bench-node.sh, bench-reference.sh). Source it after defining log and die
# and setting SCRIPT (a name for the temp dir); it sets TMP (removed on
# exit, with every server started here stopped) and defines start / stop,
# show, port_open, cpu_ticks and to_ms.

TMP=$(mktemp -d -t "$SCRIPT.XXXXXX")
PIDS=()
COMMANDS=()
cleanup() {
    local pid
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
    rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

port_open() { (exec 3<>"/dev/tcp/${1%:*}/${1##*:}") 2>/dev/null; }

# show COMMAND...: log COMMAND, shell-quoted, and keep it (once) in COMMANDS
# for the report.
show() {
    local arg line=
    for arg in "$@"; do
        [[ $arg =~ ^[][A-Za-z0-9_./:=@,%+-]+$ ]] || arg="'${arg//\'/\'\\\'\'}'"
        line+="${line:+ }$arg"
    done
    log "$line"
    [[ " ${COMMANDS[*]:-} " == *" $line "* ]] || COMMANDS+=("$line")
}

# start NAME ADDR COMMAND...: run COMMAND in the background (its pid in
# SERVER_PID, its output appended to $TMP/NAME.log), wait until ADDR accepts
# connections (at most 30 s: a JVM is slow to start).
start() {
    local name=$1 addr=$2
    shift 2
    port_open "$addr" && die "$addr is already in use (before starting $name)"
    show "$@"
    "$@" >>"$TMP/$name.log" 2>&1 &
    SERVER_PID=$!
    PIDS+=("$SERVER_PID")
    local i
    for ((i = 0; i < 600; i++)); do
        port_open "$addr" && return 0
        kill -0 "$SERVER_PID" 2>/dev/null || { cat "$TMP/$name.log" >&2; die "$name exited"; }
        sleep 0.05
    done
    die "$name does not listen on $addr after 30 s"
}

# stop: end the most recently started server.
stop() {
    local pid=${PIDS[-1]}
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    unset 'PIDS[-1]'
}

# cpu_ticks PID: user + system clock ticks of all of PID's threads so far.
cpu_ticks() { awk '{sub(/^.*\) /, ""); print $12 + $13}' "/proc/$1/stat"; }

# to_ms VALUE: wrk latency (e.g. 812.00us, 1.53ms, 2.01s, 1.2m) in ms.
to_ms() {
    awk -v v="$1" 'BEGIN {
        n = v + 0; u = v; sub(/^[0-9.]+/, "", u)
        if (u == "us") n /= 1000; else if (u == "s") n *= 1000; else if (u == "m") n *= 60000
        printf "%.2f", n }'
}
