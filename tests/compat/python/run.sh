#!/usr/bin/env bash
# Python compat suite: PyMySQL (text protocol), mysql-connector-python (text and server-side
# prepared statements) and mysqlclient (MySQLdb, MariaDB Connector/C) through Tessera, with
# pytest. Run by tests/compat/run.sh, which exports the environments (see ../lib.sh); run
# alone, it starts the ones it needs itself.
#
#   bash tests/compat/python/run.sh [pytest args, e.g. -k counters -x]
#   COMPAT_FILTER=kill bash tests/compat/python/run.sh   only the KILL checks (pytest -m kill;
#                                                        standalone, only the main environment)
#
# Needs the venv tests/compat/.venv (scripts/install-deps.sh creates it from requirements.txt).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/compat/lib.sh
source "$here/../lib.sh"
compat_install_traps

python=$COMPAT_DIR/.venv/bin/python
if [[ ! -x $python ]] || ! "$python" -c 'import pymysql, mysql.connector, MySQLdb, pytest' 2>/dev/null; then
    echo "python suite: $COMPAT_DIR/.venv is missing or incomplete: run scripts/install-deps.sh" >&2
    exit 1
fi

# Standalone: start the environments that tests/compat/run.sh would have exported.
main_port=${TESSERA_MAIN_PORT:-${TESSERA_PORT:-}}
started=()
filter=()
if [[ ${COMPAT_FILTER:-} == kill ]]; then
    filter=(-m kill)
fi
[[ -n $main_port ]] || { launch_tessera main --replicas 1; started+=(main); }
if ((${#filter[@]} == 0)); then
    [[ -n ${TESSERA_POOL2_PORT:-} ]] || { launch_tessera pool2 --pool-max 2; started+=(pool2); }
    [[ -n ${TESSERA_STATE_PORT:-} ]] || { launch_tessera state --pool-max 2; started+=(state); }
    [[ -n ${TESSERA_PS_PORT:-} ]] || { launch_tessera ps --pool-max 4 --prepared-cache 64; started+=(ps); }
    [[ -n ${TESSERA_SHA2_PORT:-} ]] || { launch_tessera sha2 --auth-plugin caching_sha2_password; started+=(sha2); }
fi
for name in "${started[@]}"; do
    await_tessera "$name"
done
if [[ " ${started[*]} " == *" main "* ]]; then
    use_tessera main
fi

cd "$here"
export PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
rc=0
"$python" -m pytest -p no:cacheprovider -q -rfE --timeout=600 --durations=5 "${filter[@]}" "$@" || rc=$?
if ((rc == 5)); then
    echo "python suite: pytest collected no tests" >&2
    exit 1
fi
exit "$rc"
