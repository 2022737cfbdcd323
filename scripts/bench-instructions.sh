#!/usr/bin/env bash
# User-space instructions per statement of Tessera builds, counted by callgrind: a figure that
# does not move with the load of a shared machine (proxy CPU per query moves by 15% between
# rounds there). Each build runs under valgrind with one worker thread; after a warm-up the
# count is zeroed, sysbench runs EVENTS events, and the count is read.
#
#   scripts/bench-instructions.sh [--workload W] [--threads N] [--events N] [--cache] BIN [BIN...]
#   scripts/bench-instructions.sh --text [--classic] [--threads N] [--events N] BIN [BIN...]
#
# --text drives the builds with crates/proxy/examples/query_load (cargo build --release -p
# tessera-proxy --example query_load) instead of sysbench: sysbench's point select and a
# 100-row range read as text queries by turns, EVENTS rounds per client (default 150), from
# clients that ask for CLIENT_DEPRECATE_EOF (--classic: clients that do not).
#
# Needs a MariaDB with sysbench's tables (4 tables, the kit's layout) at MYSQL_HOST:MYSQL_PORT
# (default 127.0.0.1:33999), user MYSQL_USER / MYSQL_PASSWORD (default root, empty), database
# sbtest, TABLE_SIZE rows each (default 100000); valgrind (scripts/install-deps.sh). SB_EXTRA
# adds sysbench options (SB_EXTRA=--db-ps-mode=disable: text queries instead of prepared).
# KEEP_PROFILES=DIR keeps each build's callgrind profile there (for callgrind_annotate).
# Prints one line per build: statements, instructions, instructions per statement, and how
# many times a session's task was polled per statement. Counts under valgrind also depend on
# how its serialised threads interleave with the kernel's: compare builds by several runs.
#
# --cache adds callgrind's cache simulation (the host's L1 sizes): L1 instruction and data
# misses per statement, beside the instructions (docs/benchmarks.md, "Profile-guided build").
#
# --client counts the client's side instead: sysbench itself runs under callgrind (Tessera
# natively, one sysbench thread, 4000 events unless given) through each build, and BIN
# `direct` runs it against MariaDB itself. Prints sysbench's instructions per statement,
# start-up included (compare builds at equal EVENTS): what the answers cost the client.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/lib/cluster.sh
source scripts/lib/cluster.sh

WORKLOAD=point_select THREADS=16 EVENTS=20000 TEXT=0 EOF_MODE=deprecate CLIENT=0 CACHE_SIM=no
while (($#)); do
    case $1 in
        --text) TEXT=1; WORKLOAD=text; EVENTS=150; shift ;;
        --classic) EOF_MODE=classic; shift ;;
        --client) CLIENT=1; THREADS=1; EVENTS=4000; shift ;;
        --cache) CACHE_SIM=yes; shift ;;
        --workload) WORKLOAD=$2; shift 2 ;;
        --threads) THREADS=$2; shift 2 ;;
        --events) EVENTS=$2; shift 2 ;;
        -h|--help) sed -n '2,30p' "$0"; exit 0 ;;
        *) break ;;
    esac
done
(($#)) || { echo "usage: $0 [--workload W] [--threads N] [--events N] [--cache] BIN [BIN...]" >&2; exit 2; }
command -v valgrind >/dev/null || { echo "valgrind not found (scripts/install-deps.sh installs it)" >&2; exit 1; }

HOST=${MYSQL_HOST:-127.0.0.1} PORT=${MYSQL_PORT:-33999}
WORK=$(mktemp -d /tmp/tessera-instructions.XXXXXX)
PIDS=()
trap cleanup EXIT

read -ra EXTRA <<<"${SB_EXTRA:-}"
QUERY_LOAD=target/release/examples/query_load
((TEXT == 0)) || [[ -x $QUERY_LOAD ]] || {
    echo "$QUERY_LOAD not found: cargo build --release -p tessera-proxy --example query_load" >&2
    exit 1
}

# Runs the load against PORT: warm-up (EVENTS = 0) or EVENTS counted; prints "queries: N".
load() { # PORT EVENTS
    local port=$1 events=$2
    if ((TEXT)); then
        "$QUERY_LOAD" "$port" bench bench "$THREADS" "$((events > 0 ? events : 50))" "$EOF_MODE" |
            awk '{print "queries: " $2}'
    elif ((events > 0)); then
        sysbench_run "$port" --time=0 --events="$events"
    else
        sysbench_run "$port" --time=3
    fi
}

sysbench_run() { # PORT ARGS...
    local port=$1 wrap=()
    shift
    [[ -n ${SB_WRAP:-} ]] && read -ra wrap <<<"$SB_WRAP"
    "${wrap[@]}" sysbench "oltp_$WORKLOAD" --mysql-host="${SB_HOST:-127.0.0.1}" --mysql-port="$port" \
        --mysql-user="${SB_USER:-bench}" --mysql-password="${SB_PASSWORD-bench}" --mysql-db=sbtest --tables=4 \
        --table-size="${TABLE_SIZE:-100000}" --threads="$THREADS" "${EXTRA[@]}" "$@" run
}

# Writes the configuration of a one-worker Tessera on PORT (admin on ADMIN) in front of MariaDB.
write_config() { # PORT ADMIN
    local port=$1 admin=$2
    cat >"$WORK/tessera.toml" <<EOF
[server]
listen = "127.0.0.1:$port"
worker_threads = 1
[admin]
http_listen = "127.0.0.1:$admin"
[[users]]
name = "bench"
password = "bench"
[[groups]]
name = "main"
user = "${MYSQL_USER:-root}"
password = "${MYSQL_PASSWORD:-}"
primary = { address = "$HOST:$PORT" }
EOF
}

# Waits until Tessera answers on PORT (at most a minute).
wait_for() { # PORT
    for _ in $(seq 300); do
        MYSQL_PWD=bench mariadb -h127.0.0.1 -P"$1" -ubench -e 'SELECT 1' >/dev/null 2>&1 && return
        sleep 0.2
    done
}

# sysbench's own instructions through BIN (or against MariaDB directly for `direct`).
count_client() { # BIN
    local bin=$1 port pid out instructions
    local wrap="valgrind --tool=callgrind --callgrind-out-file=$WORK/sb.out"
    if [[ $bin == direct ]]; then
        out=$(SB_HOST=$HOST SB_USER=${MYSQL_USER:-root} SB_PASSWORD=${MYSQL_PASSWORD:-} SB_WRAP=$wrap \
            sysbench_run "$PORT" --time=0 --events="$EVENTS" 2>"$WORK/valgrind.log")
    else
        port=$(free_port)
        write_config "$port" "$(free_port)"
        "$bin" --config "$WORK/tessera.toml" >"$WORK/tessera.log" 2>&1 &
        pid=$!
        PIDS+=("$pid")
        wait_for "$port"
        out=$(SB_WRAP=$wrap sysbench_run "$port" --time=0 --events="$EVENTS" 2>"$WORK/valgrind.log")
        kill "$pid"
        wait "$pid" 2>/dev/null || true
    fi
    instructions=$(awk '/^summary:/ {print $2; exit}' "$WORK/sb.out")
    awk -v b="$bin" -v s="$(awk '/queries:/ {print $2}' <<<"$out")" -v i="$instructions" 'BEGIN {
        printf "%s: sysbench %d statements, %d instructions, %.0f per statement\n", b, s, i, i / s }'
    rm -f "$WORK/sb.out"
}

count() { # BIN
    local bin=$1 port admin pid out file
    port=$(free_port)
    admin=$(free_port)
    write_config "$port" "$admin"
    valgrind --tool=callgrind --cache-sim="$CACHE_SIM" --instr-atstart=no --callgrind-out-file="$WORK/cg.%p" \
        "$bin" --config "$WORK/tessera.toml" >"$WORK/valgrind.log" 2>&1 &
    pid=$!
    PIDS+=("$pid")
    wait_for "$port"
    load "$port" 0 >/dev/null
    callgrind_control -i on "$pid" >/dev/null 2>&1
    callgrind_control -z "$pid" >/dev/null 2>&1
    out=$(load "$port" "$EVENTS")
    callgrind_control -d "$pid" >/dev/null 2>&1
    kill "$pid"
    wait "$pid" 2>/dev/null || true
    local statements instructions polls
    statements=$(awk '/queries:/ {print $2}' <<<"$out")
    file=$(ls "$WORK"/cg."$pid".1)
    instructions=$(awk '/^summary:/ {print $2; exit}' "$file")
    callgrind_annotate --inclusive=yes "$file" >"$WORK/annotated" 2>/dev/null || true
    polls=$(grep -m1 'accept_loop::{{closure}}::{{closure}} (' "$WORK/annotated" | grep -o '([0-9,]*x)' | tr -d '(),x' || true)
    awk -v b="$bin" -v s="$statements" -v i="$instructions" -v p="${polls:-}" 'BEGIN {
        printf "%s: %d statements, %d instructions, %.0f per statement", b, s, i, i / s
        if (p != "") printf ", %.2f session polls per statement", p / s
        printf "\n" }'
    # With --cache: the summary's L1 misses (events I1mr, D1mr, D1mw) per statement.
    awk -v s="$statements" '/^events:/ { for (i = 2; i <= NF; i++) col[$i] = i }
        /^summary:/ && ("I1mr" in col) {
            printf "  L1 misses per statement: %.1f instruction, %.1f data read, %.1f data write\n",
                $col["I1mr"] / s, $col["D1mr"] / s, $col["D1mw"] / s }' "$file"
    if [[ -n ${KEEP_PROFILES:-} ]]; then
        mkdir -p "$KEEP_PROFILES"
        cp "$file" "$KEEP_PROFILES/$(basename "$bin").$pid.callgrind"
        echo "  profile: $KEEP_PROFILES/$(basename "$bin").$pid.callgrind"
    fi
    rm -f "$WORK"/cg.*
}

if ((CLIENT)); then
    echo "oltp_$WORKLOAD, $THREADS threads, $EVENTS events, sysbench's own user-space instructions (callgrind):"
    for bin in "$@"; do
        count_client "$bin"
    done
    exit 0
fi
if ((TEXT)); then
    echo "text point select + range ($EOF_MODE EOF clients), $THREADS clients, $EVENTS rounds each, user-space instructions (callgrind):"
else
    echo "oltp_$WORKLOAD, $THREADS threads, $EVENTS events, user-space instructions (callgrind):"
fi
for bin in "$@"; do
    count "$bin"
done
