# shellcheck shell=bash
# Helpers for the compat suites: start/stop `tessera demo` environments and count results.
#
#   source tests/compat/lib.sh
#   compat_install_traps               # stop_all on exit
#   start_tessera main                 # default demo
#   start_tessera pool2 --pool-max 2   # a second, separate environment
#   use_tessera main                   # point the generic variables back at `main`
#   launch_tessera x ...; await_tessera x   # the same as start_tessera, in two steps (to
#                                           # start several demos in parallel)
#
# start_tessera NAME [demo flags...] starts `$TESSERA_BIN demo` in the background (its own
# sandbox MariaDB), waits up to $COMPAT_START_TIMEOUT (60) seconds for its env file, and exports
#   TESSERA_HOST=127.0.0.1 TESSERA_PORT MARIADB_PORT MARIADB_SOCKET TESSERA_USER=app TESSERA_PASSWORD=app
#   MARIADB_HOST=127.0.0.1 MARIADB_USER=tessera MARIADB_PASSWORD=tessera
#   TESSERA_USER2=app2 TESSERA_PASSWORD2=app2 (CHANGE USER checks), MARIADB_REPLICA_PORTS,
#   COMPAT_DIRECT (1: TESSERA_PORT is the demo's MariaDB itself, same accounts app and app2)
# plus the same values under per-environment names:
#   TESSERA_<NAME>_PORT TESSERA_<NAME>_MARIADB_PORT TESSERA_<NAME>_MARIADB_SOCKET
# (NAME upper-cased, e.g. TESSERA_POOL2_PORT). Every started demo is stopped by stop_all, which
# is installed as the EXIT trap (plus INT/TERM/HUP traps that exit, so the EXIT trap runs).
# Result counting for shell suites: compat_pass / compat_fail / compat_check, compat_report.
# A language suite's run.sh starts with `compat_suite_start PREPARE_FUNCTION "$@"`.

COMPAT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
COMPAT_ROOT=$(cd "$COMPAT_DIR/../.." && pwd)
: "${TESSERA_BIN:=$COMPAT_ROOT/target/release/tessera}"
: "${COMPAT_START_TIMEOUT:=60}"
export TESSERA_BIN COMPAT_DIR COMPAT_ROOT

COMPAT_PIDS=()
COMPAT_NAMES=()
COMPAT_TMP=""
COMPAT_PASSED=0
COMPAT_FAILED=0
COMPAT_FAILED_NAMES=()

compat_log() { printf '[compat] %s\n' "$*" >&2; }

# A private scratch directory, removed by stop_all.
compat_tmpdir() {
    if [[ -z $COMPAT_TMP ]]; then
        COMPAT_TMP=$(mktemp -d "${TMPDIR:-/tmp}/tessera-compat.XXXXXX")
    fi
    printf '%s\n' "$COMPAT_TMP"
}

# launch_tessera NAME [demo flags...]: starts the demo in the background, does not wait.
launch_tessera() {
    local name=${1:?launch_tessera NAME [flags...]}
    shift
    if [[ ! -x $TESSERA_BIN ]]; then
        compat_log "TESSERA_BIN=$TESSERA_BIN is not an executable (build it: cargo build --release --bin tessera)"
        return 1
    fi
    # Keep COMPAT_TMP in this shell (a $(...) subshell would lose it).
    compat_tmpdir >/dev/null
    local dir=$COMPAT_TMP/$name
    mkdir -p "$dir"
    rm -f "$dir/env"
    printf '%s\n' "$*" >"$dir/flags"
    # No replicas unless the flags ask for them (the main environment does: read/write split).
    local replicas=(--replicas 0)
    [[ " $* " == *" --replicas "* ]] && replicas=()
    "$TESSERA_BIN" demo --listen 127.0.0.1:0 --env-file "$dir/env" "${replicas[@]}" "$@" </dev/null >"$dir/tessera.log" 2>&1 &
    COMPAT_PIDS+=("$!")
    COMPAT_NAMES+=("$name")
}

# await_tessera NAME: waits (up to COMPAT_START_TIMEOUT s) for a launched demo, exports its variables.
await_tessera() {
    local name=${1:?await_tessera NAME} i pid=""
    for i in "${!COMPAT_NAMES[@]}"; do
        [[ ${COMPAT_NAMES[$i]} == "$name" ]] && pid=${COMPAT_PIDS[$i]}
    done
    if [[ -z $pid ]]; then
        compat_log "await_tessera: '$name' was not launched"
        return 1
    fi
    local dir=$COMPAT_TMP/$name
    local env_file=$dir/env log=$dir/tessera.log
    local deadline=$((SECONDS + COMPAT_START_TIMEOUT))
    # The file is written in one go, but wait for its last line anyway.
    until [[ -f $env_file ]] && grep -q '^MARIADB_SOCKET=' "$env_file"; do
        if ! kill -0 "$pid" 2>/dev/null; then
            compat_log "tessera demo '$name' exited before it was ready; its log:"
            tail -n 30 "$log" >&2 || true
            return 1
        fi
        if ((SECONDS >= deadline)); then
            compat_log "tessera demo '$name' not ready after ${COMPAT_START_TIMEOUT}s; its log:"
            tail -n 30 "$log" >&2 || true
            return 1
        fi
        sleep 0.1
    done

    local key value upper
    upper=$(printf '%s' "$name" | tr '[:lower:]-' '[:upper:]_')
    while IFS='=' read -r key value; do
        case $key in
            TESSERA_PORT) export "TESSERA_${upper}_PORT=$value" ;;
            MARIADB_PORT) export "TESSERA_${upper}_MARIADB_PORT=$value" ;;
            MARIADB_SOCKET) export "TESSERA_${upper}_MARIADB_SOCKET=$value" ;;
            REPLICA_PORTS) export "TESSERA_${upper}_REPLICA_PORTS=$value" ;;
        esac
    done <"$env_file"
    export "TESSERA_${upper}_PID=$pid" "TESSERA_${upper}_LOG=$log"
    use_tessera "$name"
    compat_log "'$name' ready (pid $pid): tessera 127.0.0.1:$TESSERA_PORT, mariadb 127.0.0.1:$MARIADB_PORT [$(cat "$dir/flags")]"
}

# start_tessera NAME [demo flags...]: launch_tessera + await_tessera.
start_tessera() {
    launch_tessera "$@" && await_tessera "$1"
}

# use_tessera NAME: export the generic variables for an environment started earlier.
use_tessera() {
    local upper port mport sock
    upper=$(printf '%s' "${1:?use_tessera NAME}" | tr '[:lower:]-' '[:upper:]_')
    port=TESSERA_${upper}_PORT mport=TESSERA_${upper}_MARIADB_PORT sock=TESSERA_${upper}_MARIADB_SOCKET
    local rports=TESSERA_${upper}_REPLICA_PORTS
    if [[ -z ${!port:-} ]]; then
        compat_log "use_tessera: no environment '$1'"
        return 1
    fi
    # app/app and app2/app2 exist both in Tessera's demo config and on the demo's MariaDB, so
    # the same checks run through Tessera and, with COMPAT_DIRECT=1, against MariaDB itself.
    export TESSERA_HOST=127.0.0.1 TESSERA_USER=app TESSERA_PASSWORD=app
    export TESSERA_USER2=app2 TESSERA_PASSWORD2=app2
    export MARIADB_HOST=127.0.0.1 MARIADB_USER=tessera MARIADB_PASSWORD=tessera
    export TESSERA_PORT=${!port} MARIADB_PORT=${!mport} MARIADB_SOCKET=${!sock}
    # The demo's replicas (comma-separated ports, may be empty): tests that watch the servers
    # (e.g. wait until a statement runs before KILL QUERY) look at all of them.
    export MARIADB_REPLICA_PORTS=${!rports:-}
    if [[ ${COMPAT_DIRECT:-0} == 1 ]]; then
        export TESSERA_PORT=${!mport}
    fi
    export COMPAT_DIRECT=${COMPAT_DIRECT:-0}
}

# Child pids of a pid (the demo's mariadbd), to clean up if the demo itself had to be killed.
compat_children() {
    ps -o pid= --ppid "$1" 2>/dev/null | tr -d ' ' || true
}

# stop_all: SIGTERM every demo started by this shell, wait for it to exit (SIGKILL after 30 s,
# together with its children), then remove the scratch directory. Safe to call twice.
stop_all() {
    local i pid name waited children
    for i in "${!COMPAT_PIDS[@]}"; do
        pid=${COMPAT_PIDS[$i]}
        name=${COMPAT_NAMES[$i]}
        kill -0 "$pid" 2>/dev/null || continue
        children=$(compat_children "$pid")
        kill -TERM "$pid" 2>/dev/null || true
        waited=0
        while kill -0 "$pid" 2>/dev/null && ((waited < 300)); do
            sleep 0.1
            waited=$((waited + 1))
        done
        if kill -0 "$pid" 2>/dev/null; then
            compat_log "demo '$name' (pid $pid) did not stop in 30 s: killing it and its children"
            kill -KILL "$pid" 2>/dev/null || true
            local child
            for child in $children; do
                kill -KILL "$child" 2>/dev/null || true
            done
        fi
        wait "$pid" 2>/dev/null || true
    done
    COMPAT_PIDS=()
    COMPAT_NAMES=()
    if [[ -n $COMPAT_TMP && -d $COMPAT_TMP && -z ${COMPAT_KEEP_TMP:-} ]]; then
        rm -rf "$COMPAT_TMP"
    fi
    COMPAT_TMP=""
}

# Installs stop_all as the EXIT trap; INT/TERM/HUP exit so that the EXIT trap runs.
compat_install_traps() {
    trap stop_all EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
    trap 'exit 129' HUP
}

# Result counting. compat_check NAME CMD... runs CMD and records ok / not ok.
compat_pass() {
    COMPAT_PASSED=$((COMPAT_PASSED + 1))
    printf 'ok     %s\n' "$1"
}

compat_fail() {
    COMPAT_FAILED=$((COMPAT_FAILED + 1))
    COMPAT_FAILED_NAMES+=("$1")
    printf 'NOT OK %s%s\n' "$1" "${2:+: $2}"
}

compat_check() {
    local name=$1
    shift
    if "$@"; then
        compat_pass "$name"
    else
        compat_fail "$name"
    fi
}

# Prints "LABEL: P ok, F not ok" (plus the failed names); returns 1 when something failed.
compat_report() {
    local label=${1:-checks}
    printf '%s: %d ok, %d not ok\n' "$label" "$COMPAT_PASSED" "$COMPAT_FAILED"
    if ((COMPAT_FAILED > 0)); then
        printf '  failed: %s\n' "${COMPAT_FAILED_NAMES[@]}"
        return 1
    fi
}

# compat_target: what a suite talks to, for its header line ("Tessera 127.0.0.1:P" or
# "MariaDB directly 127.0.0.1:P", plus the COMPAT_FILTER in force).
compat_target() {
    local via=Tessera
    [[ ${COMPAT_DIRECT:-0} == 1 ]] && via="MariaDB directly"
    printf '%s %s:%s%s\n' "$via" "${TESSERA_HOST:-127.0.0.1}" "$TESSERA_PORT" "${COMPAT_FILTER:+ (COMPAT_FILTER=$COMPAT_FILTER)}"
}

# compat_suite_run LABEL CMD...: runs a suite's checks, prints "== LABEL compat suite: PASS" or
# "FAIL" and exits with the command's status.
compat_suite_run() {
    local label=$1 rc=0
    shift
    "$@" || rc=$?
    if ((rc == 0)); then
        echo "== $label compat suite: PASS"
    else
        echo "== $label compat suite: FAIL"
    fi
    exit "$rc"
}

# compat_suite_start PREPARE_FUNCTION [--prepare]: the common entry of a language suite.
# With --prepare it only runs PREPARE_FUNCTION (install-deps.sh uses that) and exits. Otherwise
# it prepares and, when run without the shared runner (no TESSERA_PORT), starts the demos the
# runner would start: "main" (demo defaults; TESSERA_POOL_MAX=N adds --pool-max N) and "sha2".
compat_suite_start() {
    local prepare=$1
    shift
    if [[ ${1:-} == --prepare ]]; then
        "$prepare"
        exit 0
    fi
    "$prepare"
    [[ -n ${TESSERA_PORT:-} ]] && return 0
    compat_install_traps
    # shellcheck disable=SC2086 # deliberate word splitting
    launch_tessera main --replicas 1 ${TESSERA_POOL_MAX:+--pool-max $TESSERA_POOL_MAX}
    launch_tessera sha2 --auth-plugin caching_sha2_password
    await_tessera main && await_tessera sha2 || exit 1
    use_tessera main
}
