#!/usr/bin/env bash
# Reference benchmark: a highload-dht course server (polis-vk/2024-highload-dht,
# the student solution ru.vk.itmo.test.dariasupriadkina: a one-nio HTTP server
# on its own LSM DAO, the same `PUT/GET /v0/entity?id=KEY` API) side by side
# with the Strata node, on this machine, with wrk; print markdown tables.
#
#   REF_SRC=/path/to/2024-highload-dht scripts/bench-reference.sh
#
# REF_SRC is a checkout (work tree) or a bare git dir of that repository
# (`git clone https://github.com/polis-vk/2024-highload-dht`). Its Java code is
# never copied into this repository: every run extracts the sources the server
# needs (ru.vk.itmo.{Service,ServiceConfig}, ru.vk.itmo.dao.*,
# ru.vk.itmo.test.ServiceFactory and the solution's package) into
# target/reference/, fetches the jars of the course's build.gradle from Maven
# Central with mvn (one-nio 1.7.1, slf4j 2.0.11, logback 1.4.14, ...; upstream
# deleted build.gradle in May 2024, so when REF_SRC has none these versions,
# from its last build.gradle, are used), compiles them with javac and starts the
# service through our own launcher, scripts/reference/ReferenceMain.java
# (ServiceFactory.Factory.create with a single-node cluster, as the course's
# tests do). The code needs JDK 21+ (java.lang.foreign, preview in 21): the
# newest JDK 21+ in JAVA_HOME, on PATH or under /usr/lib/jvm is used.
#
# In one run, ROUNDS rounds; in each, both servers in turn (the first one
# alternating from round to round, so both see the same machine noise), each
# on a fresh data dir and a fresh process:
#   1. pre-fill keys 0..KEYS-1 with 100-byte values (curl, as bench-node.sh);
#   2. warm up (wrk GET for WARMUP seconds: the JVM's JIT), then wrk GET of
#      the pre-filled keys (scripts/wrk/get.lua), measured;
#   3. warm up with wrk PUT for WARMUP seconds, then wrk PUT of random keys in
#      0..PUT_KEYSPACE-1 with 100-byte values (scripts/wrk/put.lua), measured.
# For each measured run: requests/s, p99 (wrk --latency), non-2xx answers,
# socket errors, and the server's CPU time per request (utime + stime of all
# its threads, from /proc/PID/stat before and after the run; for the JVM this
# includes JIT and GC threads). Then the medians of the rounds per server and
# workload, and the ratios Strata / reference.
#
# Strata runs `strata serve` with its default durability `sync` (every PUT
# fsynced before its answer); the reference has no write-ahead log (a PUT goes
# to a memtable flushed to an SSTable every 1 MiB, never fsynced), so its PUTs
# promise less. STRATA_ARGS="--durability none" compares like with like.
#
# The servers and the clients share this machine's cores. The measuring runs
# in a private network namespace (unshare -n) holding only a loopback
# interface, as one-nio listens on 0.0.0.0; ISOLATE=0 runs on the host's
# loopback instead.
#
# Installs wrk with apt-get when missing; builds Strata (cargo build --release
# -p strata) only when no binary exists. Knobs (environment): REF_SRC
# (required), REF_REV (revision of a bare git dir, HEAD), REF_PACKAGE
# (ru.vk.itmo.test.dariasupriadkina), REF_FACTORY (its ServiceFactory.Factory
# class, found in the package), JAVA_HOME, JVM_OPTS ("-Xmx2g"), ROUNDS (3),
# CONNECTIONS (64), THREADS (wrk threads, 2), DURATION (seconds a measured
# run, 10), WARMUP (seconds of each warm-up run, 5), KEYS (pre-fill, 100000),
# PUT_KEYSPACE (1000000000), POOL (requests pre-drawn per wrk thread, 200000;
# see scripts/wrk/get.lua), REF_PORT (8092), STRATA_PORT (8093), STRATA_BIN (a
# strata binary), STRATA_ARGS (extra `strata serve` flags), ISOLATE (1).
set -euo pipefail

SELF=$(realpath "$0")
cd "$(dirname "$SELF")/.."
ROOT=$PWD

ROUNDS=${ROUNDS:-3}
CONNECTIONS=${CONNECTIONS:-64}
THREADS=${THREADS:-2}
DURATION=${DURATION:-10}
WARMUP=${WARMUP:-5}
KEYS=${KEYS:-100000}
PUT_KEYSPACE=${PUT_KEYSPACE:-1000000000}
POOL=${POOL:-200000}
REF_PORT=${REF_PORT:-8092}
STRATA_PORT=${STRATA_PORT:-8093}
STRATA_ARGS=${STRATA_ARGS:-}
JVM_OPTS=${JVM_OPTS:--Xmx2g}
ISOLATE=${ISOLATE:-1}
REF_REV=${REF_REV:-HEAD}
REF_PACKAGE=${REF_PACKAGE:-ru.vk.itmo.test.dariasupriadkina}
TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
BUILD=$TARGET_DIR/reference

log() { printf '==> %s\n' "$*" >&2; }
die() { printf 'bench-reference: %s\n' "$*" >&2; exit 1; }

# ============================================================================
# Phase 1 (on the host's network): tools, Strata, the reference's build.
# ============================================================================
if [[ -z ${BENCH_REF_PHASE:-} ]]; then
    [[ -n ${REF_SRC:-} ]] || die "set REF_SRC to a checkout (or bare git dir) of the reference:
    git clone https://github.com/polis-vk/2024-highload-dht /somewhere/2024-highload-dht
    REF_SRC=/somewhere/2024-highload-dht $0
(this machine may not reach GitHub: clone it elsewhere and copy it here)"
    [[ -e $REF_SRC ]] || die "REF_SRC=$REF_SRC does not exist"
    REF_SRC=$(realpath "$REF_SRC")

    # --- tools ---------------------------------------------------------------
    if ! command -v wrk >/dev/null; then
        sudo=()
        ((EUID == 0)) || sudo=(sudo)
        log "installing wrk"
        "${sudo[@]}" apt-get update -qq
        DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq wrk >/dev/null
    fi
    for tool in curl mvn git; do
        command -v "$tool" >/dev/null || die "$tool is needed"
    done

    # --- Strata ----------------------------------------------------------------
    STRATA=${STRATA_BIN:-$TARGET_DIR/release/strata}
    if [[ ! -x $STRATA ]]; then
        [[ -z ${STRATA_BIN:-} ]] || die "STRATA_BIN=$STRATA_BIN is not an executable"
        log "cargo build --release -p strata"
        cargo build --release -q -p strata
    fi
    "$STRATA" serve --help >/dev/null 2>&1 || die "$STRATA has no \`serve\` command"

    # --- a JDK 21+ ---------------------------------------------------------------
    jdk_major() { "$1/bin/javac" -version 2>&1 | awk '/^javac/ {split($2, v, "."); print v[1] + 0}'; }
    JDK= JDK_MAJOR=0
    if [[ -n ${JAVA_HOME:-} ]]; then
        JDK=$JAVA_HOME JDK_MAJOR=$(jdk_major "$JAVA_HOME")
        ((JDK_MAJOR >= 21)) || die "JAVA_HOME=$JAVA_HOME is JDK $JDK_MAJOR; the reference needs JDK 21+"
    else
        candidates=(/usr/lib/jvm/*/)
        if command -v javac >/dev/null; then
            candidates+=("$(dirname "$(dirname "$(readlink -f "$(command -v javac)")")")")
        fi
        for home in "${candidates[@]}"; do
            home=${home%/}
            [[ -x $home/bin/javac && -x $home/bin/java ]] || continue
            major=$(jdk_major "$home")
            if ((major > JDK_MAJOR)); then JDK=$home JDK_MAJOR=$major; fi
        done
        ((JDK_MAJOR >= 21)) || die "no JDK 21+ found (JAVA_HOME, PATH, /usr/lib/jvm): the reference uses java.lang.foreign; set JAVA_HOME to a JDK 21 or newer"
    fi
    JAVAC_FLAGS=(-nowarn -proc:none -encoding UTF-8)
    JVM_FLAGS="$JVM_OPTS --enable-native-access=ALL-UNNAMED"
    if ((JDK_MAJOR == 21)); then
        JAVAC_FLAGS+=(--release 21 --enable-preview)
        JVM_FLAGS+=" --enable-preview"
    fi
    # one-nio 1.7.1 reads arrays through sun.misc.Unsafe: allowed, without the
    # JDK 24+ warning.
    ((JDK_MAJOR < 23)) || JVM_FLAGS+=" --sun-misc-unsafe-memory-access=allow"
    log "JDK $JDK_MAJOR: $JDK"

    # --- the reference's sources -------------------------------------------------
    pkg_dir=src/main/java/${REF_PACKAGE//.//}
    shared=(src/main/java/ru/vk/itmo/Service.java src/main/java/ru/vk/itmo/ServiceConfig.java
        src/main/java/ru/vk/itmo/dao src/main/java/ru/vk/itmo/test/ServiceFactory.java)
    rm -rf "$BUILD/src" "$BUILD/classes"
    mkdir -p "$BUILD/src" "$BUILD/classes"
    gradle_file=
    if [[ -d $REF_SRC/src/main/java ]]; then
        log "reference sources: work tree $REF_SRC"
        [[ -d $REF_SRC/$pkg_dir ]] || die "$REF_SRC has no $pkg_dir"
        (cd "$REF_SRC" && find "${shared[@]}" "$pkg_dir" -name '*.java' -print0 |
            xargs -0 cp --parents -t "$BUILD/src")
        REF_DESC="work tree $REF_SRC"
        rev=$(git -C "$REF_SRC" rev-parse --short HEAD 2>/dev/null || true)
        [[ -z $rev ]] || REF_DESC+=" (HEAD $rev)"
        if [[ -f $REF_SRC/build.gradle ]]; then
            cp "$REF_SRC/build.gradle" "$BUILD/build.gradle"
            gradle_file=$BUILD/build.gradle
        fi
    elif rev=$(git --git-dir="$REF_SRC" rev-parse --verify -q "$REF_REV^{commit}" 2>/dev/null); then
        log "reference sources: git dir $REF_SRC at $REF_REV ($rev)"
        git --git-dir="$REF_SRC" cat-file -e "$rev:$pkg_dir" 2>/dev/null || die "$REF_REV has no $pkg_dir"
        # File by file, only the .java files needed (not `git archive`, which
        # reads the whole tree and stumbles on a partial mirror's missing blobs).
        git --git-dir="$REF_SRC" ls-tree -r --name-only "$rev" -- "${shared[@]}" "$pkg_dir" |
            grep '\.java$' | while read -r f; do
                mkdir -p "$BUILD/src/$(dirname "$f")"
                git --git-dir="$REF_SRC" cat-file blob "$rev:$f" >"$BUILD/src/$f"
            done
        REF_DESC="git $rev ($(git --git-dir="$REF_SRC" log -1 --format=%cs "$rev"))"
        if git --git-dir="$REF_SRC" show "$rev:build.gradle" >"$BUILD/build.gradle" 2>/dev/null; then
            gradle_file=$BUILD/build.gradle
        fi
    else
        die "REF_SRC=$REF_SRC is neither a work tree with src/main/java nor a git dir with $REF_REV"
    fi
    REF_FACTORY=${REF_FACTORY:-}
    if [[ -z $REF_FACTORY ]]; then
        f=$(grep -l 'implements ServiceFactory.Factory' "$BUILD/src/$pkg_dir"/*.java | head -1) ||
            die "no ServiceFactory.Factory in $REF_PACKAGE: set REF_FACTORY"
        REF_FACTORY=$REF_PACKAGE.$(basename "$f" .java)
    fi

    # --- its jars: the build.gradle `implementation` dependencies ------------------
    deps=(ru.odnoklassniki:one-nio:1.7.1 org.slf4j:slf4j-api:2.0.11
        ch.qos.logback:logback-classic:1.4.14 org.slf4j:log4j-over-slf4j:2.0.11
        com.google.code.findbugs:jsr305:3.0.2 com.google.errorprone:error_prone_annotations:2.15.0)
    if [[ -n $gradle_file ]]; then
        mapfile -t parsed < <(sed -nE \
            -e "s/^[[:space:]]*implementation[[:space:]]*'([^:']+):([^:']+):([^:']+)'.*/\1:\2:\3/p" \
            -e "s/^[[:space:]]*implementation[[:space:]]+group:[[:space:]]*'([^']+)',[[:space:]]*name:[[:space:]]*'([^']+)',[[:space:]]*version:[[:space:]]*'([^']+)'.*/\1:\2:\3/p" \
            "$gradle_file")
        if ((${#parsed[@]})); then deps=("${parsed[@]}"); fi
        log "dependencies from build.gradle: ${deps[*]}"
    else
        log "no build.gradle at the reference's revision: dependencies of its last one: ${deps[*]}"
    fi
    stamp=$(printf '%s\n' "${deps[@]}" | sort)
    if [[ ! -f $BUILD/lib/.deps || $(<"$BUILD/lib/.deps") != "$stamp" ]]; then
        {
            echo '<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>'
            echo '<groupId>local.bench</groupId><artifactId>reference-deps</artifactId><version>1</version><dependencies>'
            for d in "${deps[@]}"; do
                IFS=: read -r g a v <<<"$d"
                echo "<dependency><groupId>$g</groupId><artifactId>$a</artifactId><version>$v</version></dependency>"
            done
            echo '</dependencies></project>'
        } >"$BUILD/pom.xml"
        rm -rf "$BUILD/lib"
        log "mvn dependency:copy-dependencies (Maven Central)"
        mvn -q -B -f "$BUILD/pom.xml" dependency:copy-dependencies \
            -DoutputDirectory="$BUILD/lib" -DincludeScope=runtime >"$BUILD/mvn.log" 2>&1 ||
            { cat "$BUILD/mvn.log" >&2; die "mvn could not fetch ${deps[*]}"; }
        printf '%s' "$stamp" >"$BUILD/lib/.deps"
    fi
    ONE_NIO_JAR=$(cd "$BUILD/lib" && ls one-nio-*.jar 2>/dev/null | head -1) || true
    [[ -n $ONE_NIO_JAR ]] || die "no one-nio jar in $BUILD/lib"

    # --- compile --------------------------------------------------------------------
    mapfile -t sources < <(find "$BUILD/src" -name '*.java' | sort)
    log "javac: ${#sources[@]} sources of $REF_PACKAGE and the course's interfaces, and ReferenceMain"
    "$JDK/bin/javac" "${JAVAC_FLAGS[@]}" -d "$BUILD/classes" -cp "$BUILD/lib/*" \
        "${sources[@]}" scripts/reference/ReferenceMain.java
    cat >"$BUILD/logback.xml" <<'EOF'
<configuration>
  <appender name="out" class="ch.qos.logback.core.ConsoleAppender">
    <encoder><pattern>%d{HH:mm:ss.SSS} %-5level %logger{20} - %msg%n</pattern></encoder>
  </appender>
  <root level="INFO"><appender-ref ref="out"/></root>
</configuration>
EOF

    export BENCH_REF_PHASE=measure STRATA REF_FACTORY REF_DESC JVM_FLAGS
    export JAVA_BIN=$JDK/bin/java
    export REF_CP="$BUILD/classes:$BUILD/lib/*"
    export JDK_DESC
    JDK_DESC=$("$JAVA_BIN" -version 2>&1 | sed -n 2p)
    export ONE_NIO_DESC=${ONE_NIO_JAR%.jar}
    export SOURCES_DESC="${#sources[@]} files: ${shared[*]#src/main/java/} and ${pkg_dir#src/main/java/}/**/*.java"

    if [[ $ISOLATE == 1 ]]; then
        if command -v ip >/dev/null && unshare -n true 2>/dev/null; then
            log "measuring in a private network namespace (loopback only)"
            export BENCH_REF_PHASE=netns
            exec unshare -n -- "$BASH" "$SELF"
        fi
        log "cannot make a network namespace (unshare -n, ip): measuring on the host's loopback"
    fi
fi

# ============================================================================
# Phase 2: measure.
# ============================================================================
if [[ $BENCH_REF_PHASE == netns ]]; then
    ip link set lo up
fi
REF_ADDR=127.0.0.1:$REF_PORT
STRATA_ADDR=127.0.0.1:$STRATA_PORT
CLK_TCK=$(getconf CLK_TCK)

SCRIPT=bench-reference
# shellcheck source=scripts/lib/servers.sh
. scripts/lib/servers.sh

# wrk_cmd GET|PUT ADDR SECONDS: the wrk command line, in WRK.
wrk_cmd() {
    local lua=get.lua arg=$KEYS
    [[ $1 == PUT ]] && lua=put.lua arg=$PUT_KEYSPACE
    WRK=(wrk --latency -t"$THREADS" -c"$CONNECTIONS" -d"$3s" -s "scripts/wrk/$lua" "http://$2" -- "$arg" "$POOL")
}

ROWS=()   # "round|server|op|rps|p99 ms|non-2xx|socket errors|cpu us/req"
NOTES=()

# measure ROUND SERVER OP ADDR PID: one wrk run, a row of ROWS.
measure() {
    local round=$1 server=$2 op=$3 addr=$4 pid=$5 out t0 t1 reqs rps p99 bad errs cpu
    wrk_cmd "$op" "$addr" "$DURATION"
    show "${WRK[@]}"
    t0=$(cpu_ticks "$pid")
    out=$("${WRK[@]}")
    t1=$(cpu_ticks "$pid")
    printf '### round %s %s %s\n%s\n' "$round" "$server" "$op" "$out" >>"$TMP/wrk.log"
    reqs=$(awk '$2 == "requests" && $3 == "in" {print $1; exit}' <<<"$out")
    rps=$(awk '/^Requests\/sec:/ {printf "%.0f", $2}' <<<"$out")
    p99=$(awk '$1 ~ /^99(\.0+)?%$/ {print $2; exit}' <<<"$out")
    [[ -n $reqs && -n $rps && -n $p99 ]] || { printf '%s\n' "$out" >&2; die "cannot parse wrk output"; }
    bad=$(awk '/Non-2xx or 3xx responses:/ {print $NF}' <<<"$out")
    errs=$(awk '/Socket errors:/ {gsub(/,/, ""); print $4 + $6 + $8 + $10}' <<<"$out")
    cpu=$(awk -v d=$((t1 - t0)) -v hz="$CLK_TCK" -v n="$reqs" 'BEGIN {printf "%.1f", n ? d * 1e6 / hz / n : 0}')
    ROWS+=("$round|$server|$op|$rps|$(to_ms "$p99")|${bad:-0}|${errs:-0}|$cpu")
    log "round $round $server $op: $rps req/s, p99 $(to_ms "$p99") ms, ${bad:-0} non-2xx, $cpu us CPU/request"
}

# warm ADDR OP: an unmeasured wrk run of WARMUP seconds.
warm() {
    ((WARMUP > 0)) || return 0
    wrk_cmd "$2" "$1" "$WARMUP"
    show "${WRK[@]}"
    "${WRK[@]}" >>"$TMP/warmup.log"
}

# prefill SERVER ADDR: keys 0..KEYS-1 with 100-byte values, 201 expected.
prefill() {
    local server=$1 addr=$2 begin codes
    head -c 100 /dev/zero | tr '\0' v >"$TMP/value"
    local cmd=(curl -s --no-progress-meter -Z --parallel-max 16 -o /dev/null -w '%{http_code}\n'
        -X PUT --data-binary @"$TMP/value"
        "http://$addr/v0/entity?id=[0000000000000000-$(printf '%016d' $((KEYS - 1)))]")
    show "${cmd[@]}"
    begin=$(date +%s.%N)
    codes=$("${cmd[@]}" | sort | uniq -c | awk '{printf "%s%s x%s", sep, $2, $1; sep = ", "}')
    log "$server pre-fill: $codes in $(awk -v s="$begin" -v e="$(date +%s.%N)" 'BEGIN {printf "%.1f", e - s}') s"
    [[ $codes == "201 x$KEYS" ]] || NOTES+=("$server pre-fill answered: $codes (expected 201 x$KEYS)")
}

# run_server ROUND SERVER: fresh data dir and process, pre-fill, GET, PUT.
run_server() {
    local round=$1 server=$2 addr data=$TMP/data-$1-$2
    mkdir -p "$data"
    if [[ $server == reference ]]; then
        addr=$REF_ADDR
        # shellcheck disable=SC2086 # JVM_FLAGS is a list of flags
        start reference "$addr" "$JAVA_BIN" $JVM_FLAGS -Dlogback.configurationFile="$BUILD/logback.xml" \
            -cp "$REF_CP" ReferenceMain "$REF_FACTORY" "$REF_PORT" "$data"
    else
        addr=$STRATA_ADDR
        # shellcheck disable=SC2086 # STRATA_ARGS is a list of flags
        start strata "$addr" "$STRATA" serve --listen "$addr" --data-dir "$data" $STRATA_ARGS
    fi
    local pid=$SERVER_PID
    prefill "$server" "$addr"
    warm "$addr" GET
    measure "$round" "$server" GET "$addr" "$pid"
    warm "$addr" PUT
    measure "$round" "$server" PUT "$addr" "$pid"
    stop
    rm -rf "$data"
    if [[ $server == reference ]] && grep -q ' ERROR ' "$TMP/reference.log"; then
        NOTES+=("round $round reference logged $(grep -c ' ERROR ' "$TMP/reference.log") ERROR lines, the first: $(grep -m1 ' ERROR ' "$TMP/reference.log" | cut -c1-200)")
        : >"$TMP/reference.log"
    fi
}

log "reference: $REF_FACTORY ($REF_DESC), $JDK_DESC, $ONE_NIO_DESC; strata: $STRATA"
for ((round = 1; round <= ROUNDS; round++)); do
    if ((round % 2)); then order=(reference strata); else order=(strata reference); fi
    for server in "${order[@]}"; do run_server "$round" "$server"; done
done

# --- report --------------------------------------------------------------------------
median() { sort -g | awk '{v[NR] = $1} END {if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
# column SERVER OP FIELD: the FIELD (4 rps, 5 p99, 8 cpu) of every round.
column() { printf '%s\n' "${ROWS[@]}" | awk -F'|' -v s="$1" -v o="$2" -v f="$3" '$2 == s && $3 == o {print $f}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", b ? a / b : 0}'; }

for ((round = 1; round <= ROUNDS; round++)); do
    echo
    echo "Round $round"
    echo
    echo "| server | workload | requests/s | p99 ms | non-2xx | socket errors | server CPU us/request |"
    echo "| --- | --- | ---: | ---: | ---: | ---: | ---: |"
    for row in "${ROWS[@]}"; do
        IFS='|' read -r r server op rps p99 bad errs cpu <<<"$row"
        ((r == round)) || continue
        echo "| $server | $op | $rps | $p99 | $bad | $errs | $cpu |"
    done
done

echo
echo "Summary: medians of $ROUNDS rounds"
echo
echo "| workload | reference req/s | strata req/s | strata / reference req/s | reference p99 ms | strata p99 ms | reference CPU us/req | strata CPU us/req | strata / reference CPU/req |"
echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
for op in PUT GET; do
    rr=$(column reference "$op" 4 | median) sr=$(column strata "$op" 4 | median)
    rp=$(column reference "$op" 5 | median) sp=$(column strata "$op" 5 | median)
    rc=$(column reference "$op" 8 | median) sc=$(column strata "$op" 8 | median)
    printf '| %s | %.0f | %.0f | %s | %.2f | %.2f | %.1f | %.1f | %s |\n' "$op" "$rr" "$sr" \
        "$(ratio "$sr" "$rr")" "$rp" "$sp" "$rc" "$sc" "$(ratio "$sc" "$rc")"
done
echo
echo "wrk: closed loop, $CONNECTIONS connections, $THREADS threads, ${DURATION} s per measured run after" \
    "${WARMUP} s of warm-up; $KEYS pre-filled keys for GET, PUT keyspace $PUT_KEYSPACE, 100-byte values;" \
    "$(nproc) cores shared by clients and servers$([[ $BENCH_REF_PHASE == netns ]] && echo ", in a private network namespace")."
echo "- reference: $REF_FACTORY from polis-vk/2024-highload-dht, $REF_DESC; $JDK_DESC; $ONE_NIO_DESC;" \
    "JVM flags: $JVM_FLAGS; no write-ahead log, nothing fsynced."
echo "- reference sources compiled: $SOURCES_DESC, with scripts/reference/ReferenceMain.java."
echo "- strata: $STRATA serve${STRATA_ARGS:+ $STRATA_ARGS} (durability: $([[ $STRATA_ARGS == *--durability* ]] && echo "as set" || echo "sync, every PUT fsynced"))."
for note in "${NOTES[@]}"; do echo "- $note"; done
echo
echo "Commands:"
for c in "${COMMANDS[@]}"; do echo "    $c"; done
