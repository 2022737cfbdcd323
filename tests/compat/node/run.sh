#!/usr/bin/env bash
# Node compatibility suite: mysql2 (execute() = server-side prepared, query() = text) through Tessera.
#
#   bash tests/compat/node/run.sh            run the checks (exit 0 only if all pass)
#   bash tests/compat/node/run.sh --prepare  only install node_modules (used by scripts/install-deps.sh)
#
# Expects TESSERA_HOST TESSERA_PORT TESSERA_USER TESSERA_PASSWORD MARIADB_PORT (exported by
# tests/compat/run.sh). Without TESSERA_PORT it starts its own `tessera demo` and stops it after.
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

# --- standalone mode: without the shared runner, start the demos it would start ----------------
start_demo_if_needed() {
    [[ -n ${TESSERA_PORT:-} ]] && return 0
    # shellcheck source=SCRIPTDIR/../lib.sh
    source "$HERE/../lib.sh"
    compat_install_traps
    # The runner's "main" uses the demo defaults; TESSERA_POOL_MAX=N adds --pool-max N.
    # shellcheck disable=SC2086 # deliberate word splitting
    launch_tessera main ${TESSERA_POOL_MAX:+--pool-max $TESSERA_POOL_MAX}
    launch_tessera sha2 --auth-plugin caching_sha2_password
    await_tessera main && await_tessera sha2 || exit 1
    use_tessera main
}

if [[ ${1:-} == --prepare ]]; then
    prepare
    exit 0
fi
prepare
start_demo_if_needed

echo "== Node compat suite: node $(node --version), mysql2 $(node -p "require('./node_modules/mysql2/package.json').version") via Tessera ${TESSERA_HOST:-127.0.0.1}:$TESSERA_PORT"
set +e
node --test --test-reporter=spec compat.test.js
rc=$?
set -e
if [[ $rc -eq 0 ]]; then
    echo "== Node compat suite: PASS"
else
    echo "== Node compat suite: FAIL"
fi
exit "$rc"
