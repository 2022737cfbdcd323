#!/usr/bin/env bash
# shellcheck disable=SC2317 # prepare() is called indirectly, by compat_suite_start (lib.sh)
# Node compatibility suite: mysql2 (execute() = server-side prepared, query() = text) through Tessera.
#
#   bash tests/compat/node/run.sh            run the checks (exit 0 only if all pass)
#   bash tests/compat/node/run.sh --prepare  only install node_modules (used by scripts/install-deps.sh)
#
# Expects TESSERA_HOST TESSERA_PORT TESSERA_USER TESSERA_PASSWORD MARIADB_PORT (exported by
# tests/compat/run.sh). Without TESSERA_PORT it starts its own `tessera demo` and stops it after.
# compat.test.js: types, BLOBs, transactions, errors, CALL, insert ids, concurrent sessions;
# session.test.js: session state, warnings, identity, changeUser, KILL, LOAD DATA LOCAL,
# session_track_*, read-after-write. COMPAT_FILTER=kill runs only the KILL checks.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cd "$HERE"

# npm ci only when node_modules is missing or older than package-lock.json.
prepare() {
    command -v node >/dev/null || { echo "node: not found (see scripts/install-deps.sh)" >&2; exit 1; }
    if [[ ! -f node_modules/mysql2/package.json || package-lock.json -nt node_modules/.package-lock.json ]]; then
        command -v npm >/dev/null || { echo "npm: not found (see scripts/install-deps.sh)" >&2; exit 1; }
        npm ci --no-audit --no-fund --loglevel=error 2>&1 | grep -v 'Unknown user config' || true
        [[ -f node_modules/mysql2/package.json ]] || { echo "npm ci failed" >&2; exit 1; }
    fi
}

# shellcheck source=SCRIPTDIR/../lib.sh
source "$HERE/../lib.sh"
compat_suite_start prepare "$@"

echo "== Node compat suite: node $(node --version), mysql2 $(node -p "require('./node_modules/mysql2/package.json').version") via $(compat_target)"
files=(compat.test.js session.test.js)
opts=()
case ${COMPAT_FILTER:-} in
    "") ;;
    kill) files=(session.test.js) opts=(--test-name-pattern='^KILL') ;;
    *) echo "COMPAT_FILTER=$COMPAT_FILTER: unknown (known: kill)" >&2; exit 2 ;;
esac
# One file at a time; --test-force-exit: a connection left open by a failed check cannot keep
# the process alive (every statement is bounded anyway, see support.js). Both flags only where
# this node has them (Debian 12's node 18 has neither).
node_help=$(node --help)
for flag in --test-concurrency=1 --test-force-exit; do
    if grep -q -- "${flag%=*}" <<<"$node_help"; then
        opts+=("$flag")
    fi
done
compat_suite_run Node node --test --test-reporter=spec "${opts[@]}" "${files[@]}"
