#!/usr/bin/env bash
# Runs every client-compatibility suite (tests/compat/*/run.sh) against `tessera demo`.
#
#   TESSERA_BIN=target/release/tessera bash tests/compat/run.sh [--direct] [SUITE...]
#
# --direct (or COMPAT_DIRECT=1) runs the same suites with TESSERA_PORT pointing at the demo's
# MariaDB itself (same accounts app/app and app2/app2): a check that fails there has a wrong
# expectation. Checks of Tessera-only behaviour skip themselves when COMPAT_DIRECT=1.
#
# Starts the environments the suites need, runs each suite with them in its environment
# (see lib.sh for the variables), prints PASS/FAIL per suite and, last, one line
# "N passed, N failed" (N = suites). Exits non-zero when any suite failed.
#
# Environments (each its own sandbox MariaDB; variables exported to every suite):
#   main   default demo              TESSERA_PORT, MARIADB_PORT, MARIADB_SOCKET, TESSERA_USER, ...
#                                    (also as TESSERA_MAIN_PORT, TESSERA_MAIN_MARIADB_PORT, ...)
#   pool2  --pool-max 2              TESSERA_POOL2_PORT, TESSERA_POOL2_MARIADB_PORT, ..._SOCKET
#   state  --pool-max 2              TESSERA_STATE_PORT, ... (python session-state tests only)
#   ps     --pool-max 4 --prepared-cache 64         TESSERA_PS_PORT, TESSERA_PS_MARIADB_PORT, ...
#   sha2   --auth-plugin caching_sha2_password      TESSERA_SHA2_PORT, TESSERA_SHA2_MARIADB_PORT, ...
#   one    --workers 1 --pool-max 64                TESSERA_ONE_PORT, ... (one worker thread, the
#                                    benchmark setting; the sysbench suite runs through it too)
# MariaDB directly: user tessera / password tessera (MARIADB_USER, MARIADB_PASSWORD).
# pool2, state and ps belong to the python suite, which changes session state there on
# purpose; other suites use main and sha2, or start a private demo with lib.sh.
# Optional: COMPAT_SUITE_TIMEOUT (seconds per suite, default 900).
set -euo pipefail

# shellcheck source=tests/compat/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
compat_install_traps

# A suite runs in the background under `timeout` (its own process group, killed as a whole on
# timeout); on INT/TERM we stop the running suite first, then the EXIT trap stops the demos.
suite_pid=""
on_signal() {
    if [[ -n $suite_pid ]] && kill -0 "$suite_pid" 2>/dev/null; then
        kill -TERM "$suite_pid" 2>/dev/null || true
        wait "$suite_pid" 2>/dev/null || true
    fi
    exit "$1"
}
trap 'on_signal 130' INT
trap 'on_signal 143' TERM
trap 'on_signal 129' HUP

: "${COMPAT_SUITE_TIMEOUT:=900}"
export CI=${CI:-}

if [[ ${1:-} == --direct ]]; then
    export COMPAT_DIRECT=1
    shift
fi
export COMPAT_DIRECT=${COMPAT_DIRECT:-0}

suites=()
if (($# > 0)); then
    for s in "$@"; do
        if [[ ! -f $COMPAT_DIR/$s/run.sh ]]; then
            echo "no such suite: $s (no $COMPAT_DIR/$s/run.sh)" >&2
            exit 2
        fi
        suites+=("$s")
    done
else
    # Python and the CLI first (they are the reference suites), then the others by name.
    for s in python cli; do
        [[ -f $COMPAT_DIR/$s/run.sh ]] && suites+=("$s")
    done
    for f in "$COMPAT_DIR"/*/run.sh; do
        [[ -f $f ]] || continue
        s=$(basename "$(dirname "$f")")
        [[ $s == python || $s == cli ]] && continue
        suites+=("$s")
    done
fi
if ((${#suites[@]} == 0)); then
    echo "no compat suites found under $COMPAT_DIR/*/run.sh" >&2
    echo "0 passed, 1 failed"
    exit 1
fi

started_at=$SECONDS
# name + demo flags; all start in parallel (each its own sandbox MariaDB).
envs=(
    "main --replicas 1"
    "pool2 --pool-max 2"
    "state --pool-max 2"
    "ps --pool-max 4 --prepared-cache 64"
    "sha2 --auth-plugin caching_sha2_password"
    "one --workers 1 --pool-max 64"
)
setup_failed=0
for spec in "${envs[@]}"; do
    # shellcheck disable=SC2086 # deliberate word splitting of the spec
    launch_tessera $spec || setup_failed=1
done
for spec in "${envs[@]}"; do
    ((setup_failed)) && break
    await_tessera "${spec%% *}" || setup_failed=1
done
if ((setup_failed)); then
    stop_all
    echo "compat: could not start the test environments" >&2
    echo "0 passed, ${#suites[@]} failed"
    exit 1
fi
use_tessera main
echo "compat: environments up in $((SECONDS - started_at))s; suites: ${suites[*]}"

passed=0
failed=0
results=()
for s in "${suites[@]}"; do
    echo
    echo "=== suite $s ==="
    t0=$SECONDS
    rc=0
    use_tessera main
    (cd "$COMPAT_DIR/$s" && exec timeout --kill-after=15 "$COMPAT_SUITE_TIMEOUT" bash ./run.sh </dev/null) &
    suite_pid=$!
    wait "$suite_pid" || rc=$?
    suite_pid=""
    dt=$((SECONDS - t0))
    if ((rc == 0)); then
        passed=$((passed + 1))
        results+=("PASS  $s (${dt}s)")
        echo "=== PASS $s (${dt}s) ==="
    else
        failed=$((failed + 1))
        why="exit $rc"
        ((rc == 124)) && why="timed out after ${COMPAT_SUITE_TIMEOUT}s"
        results+=("FAIL  $s (${dt}s, $why)")
        echo "=== FAIL $s (${dt}s, $why) ==="
    fi
done

stop_all
echo
echo "compat summary (total $((SECONDS - started_at))s):"
printf '  %s\n' "${results[@]}"
echo "$passed passed, $failed failed"
((failed == 0))
