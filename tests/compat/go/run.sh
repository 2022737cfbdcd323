#!/usr/bin/env bash
# shellcheck disable=SC2317 # prepare() is called indirectly, by compat_suite_start (lib.sh)
# Go compatibility suite: github.com/go-sql-driver/mysql through Tessera.
#
#   bash tests/compat/go/run.sh            run the checks (exit 0 only if all pass)
#   bash tests/compat/go/run.sh --prepare  only fetch the modules (used by scripts/install-deps.sh)
#
# Expects TESSERA_HOST TESSERA_PORT TESSERA_USER TESSERA_PASSWORD MARIADB_PORT (exported by
# tests/compat/run.sh). Without TESSERA_PORT it starts its own `tessera demo` and stops it after.
# COMPAT_FILTER=kill runs only the KILL checks (TestKill).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cd "$HERE"
export GOTOOLCHAIN=${GOTOOLCHAIN:-local}

# Modules come from the module cache once downloaded; the network is used only when missing.
prepare() {
    command -v go >/dev/null || { echo "go: not found (see scripts/install-deps.sh)" >&2; exit 1; }
    go mod download
}

# shellcheck source=SCRIPTDIR/../lib.sh
source "$HERE/../lib.sh"
compat_suite_start prepare "$@"

echo "== Go compat suite: $(grep -o 'go-sql-driver/mysql v[0-9.]*' go.mod) via $(compat_target)"
cat <<'EOF'
   checks: every column type incl. NULL (prepared binary + text, params in WHERE, parseTime),
   1 MB BLOB (inline param, COM_STMT_SEND_LONG_DATA, text X''), transactions, wrong password,
   1062/23000 + 1064/42000 (text, COM_STMT_PREPARE) + 1146/42S02, CALL with two result sets,
   LastInsertId/RowsAffected vs MariaDB, per-session LAST_INSERT_ID, 20 concurrent sessions;
   session state across statements, warnings of the previous statement, USER()/CURRENT_USER()/
   CONNECTION_ID(), KILL [QUERY] (interpolateParams false/true), LOAD DATA LOCAL, SET
   session_track_*, read-after-write (pool and two connections)
EOF
run=()
case ${COMPAT_FILTER:-} in
    "") ;;
    kill) run=(-run '^TestKill$') ;;
    *) echo "COMPAT_FILTER=$COMPAT_FILTER: unknown (known: kill)" >&2; exit 2 ;;
esac
# go test's status, not grep's.
go_tests() {
    go test -count=1 -v -timeout 300s "${run[@]}" . 2>&1 | grep -vE '^=== (RUN|PAUSE|CONT)'
    return "${PIPESTATUS[0]}"
}
compat_suite_run Go go_tests
