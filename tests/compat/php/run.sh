#!/usr/bin/env bash
# shellcheck disable=SC2317 # prepare() is called indirectly, by compat_suite_start (lib.sh)
# PHP compatibility suite: PDO with pdo_mysql (mysqlnd), Debian's php-cli + php-mysql, through
# Tessera (or MariaDB itself with tests/compat/run.sh --direct). The checks are in compat.php.
#
#   bash tests/compat/php/run.sh            run the checks (exit 0 only if all pass)
#   bash tests/compat/php/run.sh --prepare  only check that php and pdo_mysql are there
#                                           (scripts/install-deps.sh installs php-cli, php-mysql)
#   COMPAT_FILTER=kill bash tests/compat/php/run.sh   only the KILL checks
#
# Expects TESSERA_HOST TESSERA_PORT TESSERA_USER TESSERA_PASSWORD MARIADB_PORT MARIADB_REPLICA_PORTS
# COMPAT_DIRECT (exported by tests/compat/run.sh). Without TESSERA_PORT it starts its own
# `tessera demo` and stops it after.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cd "$HERE"

prepare() {
    command -v php >/dev/null || { echo "php: not found (scripts/install-deps.sh installs php-cli)" >&2; exit 1; }
    if ! php -r 'exit(extension_loaded("pdo_mysql") && function_exists("proc_open") ? 0 : 1);'; then
        echo "php: pdo_mysql (or proc_open) missing (scripts/install-deps.sh installs php-mysql)" >&2
        exit 1
    fi
}

# shellcheck source=SCRIPTDIR/../lib.sh
source "$HERE/../lib.sh"
compat_suite_start prepare "$@"

echo "== PHP compat suite: PHP $(php -r 'echo PHP_VERSION;') PDO pdo_mysql via $(compat_target)"
# Every read is bounded (a hang after a KILL fails a check instead of stopping the suite).
compat_suite_run PHP php -d mysqlnd.net_read_timeout=30 -d display_errors=stderr -d error_reporting=-1 compat.php
