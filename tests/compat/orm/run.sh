#!/usr/bin/env bash
# shellcheck disable=SC2317 # prepare() is called indirectly, by compat_suite_start (lib.sh)
# ORM compat suite: SQLAlchemy 2.x (PyMySQL and mysqlclient) and Django's MySQL backend
# (mysqlclient) through Tessera, with pytest, in the database compat_orm (created afresh).
#
#   bash tests/compat/orm/run.sh [pytest args]   run the checks (exit 0 only if all pass)
#   bash tests/compat/orm/run.sh --prepare       only install the packages (scripts/install-deps.sh)
#
# Expects TESSERA_HOST TESSERA_PORT TESSERA_USER TESSERA_PASSWORD (exported by
# tests/compat/run.sh; with --direct, TESSERA_PORT is MariaDB's). Without TESSERA_PORT it starts
# its own `tessera demo` and stops it after. Uses the venv tests/compat/.venv, with the packages
# of ../python/requirements.txt and requirements.txt (scripts/install-deps.sh installs both;
# building mysqlclient needs the apt packages install-deps.sh installs).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cd "$HERE"
VENV=$HERE/../.venv
python=$VENV/bin/python

# Installs the pinned packages into the shared venv when one of them is missing.
prepare() {
    if "$python" -c 'import sqlalchemy, django, pymysql, MySQLdb, pytest' 2>/dev/null; then
        return 0
    fi
    [[ -x $python ]] || python3 -m venv "$VENV"
    "$python" -m pip install --disable-pip-version-check -q \
        -r "$HERE/../python/requirements.txt" -r "$HERE/requirements.txt"
}

# shellcheck source=SCRIPTDIR/../lib.sh
source "$HERE/../lib.sh"
compat_suite_start prepare "$@"

versions=$("$python" -c 'import sqlalchemy, django; print(f"SQLAlchemy {sqlalchemy.__version__}, Django {django.get_version()}")')
echo "== ORM compat suite: $versions via $(compat_target)"
export PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
# pytest's 5 (no tests collected) is a failure too.
orm_tests() {
    "$python" -m pytest -p no:cacheprovider -q -rfE --timeout=300 --durations=5 "$@"
}
compat_suite_run ORM orm_tests "$@"
