#!/usr/bin/env bash
# Runs the KILL / KILL QUERY checks of every driver suite N times in a row (COMPAT_FILTER=kill),
# each run of each suite bounded by a timeout, against one demo (read/write split on). Prints
# one line per run and a summary: runs, failures, hangs (timeouts). Exit 1 on any of them.
#
#   TESSERA_BIN=target/release/tessera bash tests/compat/kill-loop.sh [--direct] [N] [SUITE...]
#   (N defaults to 20, suites to: python java go node php cli; --direct: against MariaDB)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/compat/lib.sh
source "$here/lib.sh"
compat_install_traps
if [[ ${1:-} == --direct ]]; then
    export COMPAT_DIRECT=1
    shift
fi
runs=${1:-20}
shift || true
suites=("$@")
((${#suites[@]})) || suites=(python java go node php cli)
: "${KILL_LOOP_TIMEOUT:=300}"
start_tessera main --replicas 1
export COMPAT_FILTER=kill
failures=0
hangs=0
for ((i = 1; i <= runs; i++)); do
    for s in "${suites[@]}"; do
        use_tessera main
        t0=$SECONDS
        rc=0
        (cd "$here/$s" && timeout --kill-after=10 "$KILL_LOOP_TIMEOUT" bash ./run.sh </dev/null >"$COMPAT_TMP/$s.$i.log" 2>&1) || rc=$?
        case $rc in
            0) verdict=ok ;;
            124 | 137) verdict=HANG hangs=$((hangs + 1)) ;;
            *) verdict=FAIL failures=$((failures + 1)) ;;
        esac
        printf 'run %2d  %-7s %-4s %3ds\n' "$i" "$s" "$verdict" "$((SECONDS - t0))"
        if [[ $verdict != ok ]]; then
            tail -n 25 "$COMPAT_TMP/$s.$i.log"
        fi
    done
done
echo "kill loop: $runs runs x ${#suites[@]} suites (${suites[*]}): $failures failures, $hangs hangs"
((failures == 0 && hangs == 0))
