#!/usr/bin/env bash
# Measures issue 8's point 6 with the default configuration of `make demo` (a primary and one
# replica, read/write split on): connection A inserts a row, connection B reads it at once,
# ROUNDS times, through Tessera with the default consistency (global), then for comparison with
# `session` consistency, then directly against the MariaDB primary. Exits non-zero when a
# default-level read missed its row.
#
#   bash scripts/cross-connection-reads.sh [ROUNDS]      (default 10000)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
rounds=${1:-10000}
# shellcheck source=tests/compat/lib.sh
source "$root/tests/compat/lib.sh"
compat_install_traps
python=$COMPAT_DIR/.venv/bin/python
[[ -x $python ]] || { echo "run scripts/install-deps.sh first (needs tests/compat/.venv)" >&2; exit 1; }
start_tessera probe --replicas 1
probe=$root/scripts/probes/cross_connection_reads.py
echo "through Tessera (127.0.0.1:$TESSERA_PORT), make demo's configuration:"
rc=0
"$python" "$probe" --port "$TESSERA_PORT" --rounds "$rounds" --level default --level session || rc=$?
echo "directly against the MariaDB primary (127.0.0.1:$MARIADB_PORT):"
"$python" "$probe" --port "$MARIADB_PORT" --rounds "$rounds" --level default || rc=$?
exit "$rc"
