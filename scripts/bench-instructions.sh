#!/usr/bin/env bash
# User-space instructions per statement of Tessera builds, counted by callgrind: a figure that
# does not move with the load of a shared machine (proxy CPU per query moves by 15% between
# rounds there). Each build runs under valgrind with one worker thread; after a warm-up the
# count is zeroed, sysbench runs EVENTS events, and the count is read.
#
#   scripts/bench-instructions.sh [--workload W] [--threads N] [--events N] BIN [BIN...]
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
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/lib/cluster.sh
source scripts/lib/cluster.sh

WORKLOAD=point_select THREADS=16 EVENTS=20000 TEXT=0 EOF_MODE=deprecate
while (($#)); do
    case $1 in
        --text) TEXT=1; WORKLOAD=text; EVENTS=150; shift ;;
        --classic) EOF_MODE=classic; shift ;;
        --workload) WORKLOAD=$2; shift 2 ;;
        --threads) THREADS=$2; shift 2 ;;
        --events) EVENTS=$2; shift 2 ;;
        -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
        *) break ;;
    esac
done
(($#)) || { echo "usage: $0 [--workload W] [--threads N] [--events N] BIN [BIN...]" >&2; exit 2; }
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
    local port=$1
    shift
    sysbench "oltp_$WORKLOAD" --mysql-host=127.0.0.1 --mysql-port="$port" --mysql-user=bench \
        --mysql-password=bench --mysql-db=sbtest --tables=4 --table-size="${TABLE_SIZE:-100000}" \
        --threads="$THREADS" "${EXTRA[@]}" "$@" run
}

count() { # BIN
    local bin=$1 port admin pid out file
    port=$(free_port)
    admin=$(free_port)
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
    valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$WORK/cg.%p" \
        "$bin" --config "$WORK/tessera.toml" >"$WORK/valgrind.log" 2>&1 &
    pid=$!
    PIDS+=("$pid")
    for _ in $(seq 300); do
        MYSQL_PWD=bench mariadb -h127.0.0.1 -P"$port" -ubench -e 'SELECT 1' >/dev/null 2>&1 && break
        sleep 0.2
    done
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
    awk -v b="$bin" -v s="$statements" -v i="$instructions" -v p="${polls:-0}" 'BEGIN {
        printf "%s: %d statements, %d instructions, %.0f per statement, %.2f session polls per statement\n",
            b, s, i, i / s, p / s }'
    if [[ -n ${KEEP_PROFILES:-} ]]; then
        mkdir -p "$KEEP_PROFILES"
        cp "$file" "$KEEP_PROFILES/$(basename "$bin").$pid.callgrind"
        echo "  profile: $KEEP_PROFILES/$(basename "$bin").$pid.callgrind"
    fi
    rm -f "$WORK"/cg.*
}

if ((TEXT)); then
    echo "text point select + range ($EOF_MODE EOF clients), $THREADS clients, $EVENTS rounds each, user-space instructions (callgrind):"
else
    echo "oltp_$WORKLOAD, $THREADS threads, $EVENTS events, user-space instructions (callgrind):"
fi
for bin in "$@"; do
    count "$bin"
done
