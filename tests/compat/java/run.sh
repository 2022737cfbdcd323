#!/usr/bin/env bash
# shellcheck disable=SC2317 # prepare() is called indirectly, by compat_suite_start (lib.sh)
# Java compatibility suite: the same checks with MySQL Connector/J (useServerPrepStmts,
# useCursorFetch) and MariaDB Connector/J 3.x (useServerPrepStmts), HikariCP for the pooled
# read-after-write check, through Tessera (or MariaDB itself with tests/compat/run.sh --direct).
#
#   bash tests/compat/java/run.sh            run the checks (exit 0 only if all pass)
#   bash tests/compat/java/run.sh --prepare  only build (used by scripts/install-deps.sh)
#   COMPAT_FILTER=kill bash tests/compat/java/run.sh   only the KILL checks (both drivers)
#
# Expects TESSERA_HOST TESSERA_PORT TESSERA_USER TESSERA_PASSWORD TESSERA_USER2 TESSERA_PASSWORD2
# MARIADB_PORT MARIADB_REPLICA_PORTS COMPAT_DIRECT (exported by tests/compat/run.sh). Without
# TESSERA_PORT it starts its own `tessera demo` and stops it after.
#
# Maven only compiles and resolves the classpath (offline first, ~/.m2 is the cache); the checks
# run with plain `java`. Nothing is rebuilt when pom.xml and src/ are older than the last build.
# Debugging: JAVA_COMPAT_OPTS='-Donly=cursor -Ddrivers=mariadb -Dtrace=true' runs the checks whose
# name contains "cursor" with MariaDB Connector/J only and prints stack traces;
# TESSERA_JDBC_EXTRA='&prop=value' is appended to every URL.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cd "$HERE"

STAMP=target/.built
classpath_ok() {
    [[ -f target/classpath.txt && -f $STAMP ]] || return 1
    local jar
    IFS=: read -r -a jars <target/classpath.txt
    for jar in "${jars[@]}"; do [[ -f $jar ]] || return 1; done
}
prepare() {
    command -v java >/dev/null || { echo "java: not found (see scripts/install-deps.sh)" >&2; exit 1; }
    if classpath_ok && [[ -z $(find pom.xml src -newer "$STAMP" -print -quit) ]]; then
        return 0
    fi
    command -v mvn >/dev/null || { echo "mvn: not found (see scripts/install-deps.sh)" >&2; exit 1; }
    mkdir -p target
    local goals=(-q -B -Dstyle.color=never compile dependency:build-classpath)
    if ! mvn -o "${goals[@]}" >target/mvn.log 2>&1; then
        # Not everything is in ~/.m2 yet: resolve from Maven Central once.
        if ! mvn "${goals[@]}" >target/mvn.log 2>&1; then
            cat target/mvn.log >&2
            echo "maven build failed" >&2
            exit 1
        fi
    fi
    touch "$STAMP"
}

# shellcheck source=SCRIPTDIR/../lib.sh
source "$HERE/../lib.sh"
compat_suite_start prepare "$@"

echo "== Java compat suite: $(java -version 2>&1 | head -1) via $(compat_target)"
# shellcheck disable=SC2086 # JAVA_COMPAT_OPTS is a list of options
compat_suite_run Java java -Duser.timezone=UTC -Dfile.encoding=UTF-8 ${JAVA_COMPAT_OPTS:-} -cp "target/classes:$(cat target/classpath.txt)" tessera.compat.CompatMain
