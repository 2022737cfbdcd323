#!/usr/bin/env bash
# sysbench 1.0.20 through Tessera with its defaults (server-side prepared statements):
# oltp_read_write, oltp_point_select, oltp_write_only, oltp_insert at 16 threads. Each must
# finish with no fatal error and 0 reconnects. sysbench's write workloads produce InnoDB
# deadlocks (1213, retried by sysbench: "ignored errors") against MariaDB itself, so each
# workload also runs directly and the proxy may not produce more than twice direct's count + 10;
# read-only and insert workloads must have 0 errors.
#
# The workloads run through the main environment (worker threads: one per core) and, when
# tests/compat/run.sh started it (TESSERA_ONE_PORT), through the one-thread environment too
# (`--workers 1`, the benchmark setting, where the runtime's park submits the io_uring sends).
set -euo pipefail
: "${TESSERA_PORT:?}" "${MARIADB_PORT:?}" "${TESSERA_USER:=app}" "${TESSERA_PASSWORD:=app}"
TIME=${SYSBENCH_TIME:-6}
BASE=(--mysql-host=127.0.0.1 --mysql-db=sbtest --tables=4 --table-size=10000)

# run WORKLOAD TARGET_ARGS... -> "queries errors reconnects fatal"
run() {
  local workload=$1 out
  shift
  out=$(sysbench "$workload" "${BASE[@]}" "$@" --threads=16 --time="$TIME" run 2>&1) || true
  awk -v fatal="$(grep -c FATAL <<<"$out" || true)" '
    /queries:/ && !q {q = $2}  /ignored errors:/ {e = $3}  /reconnects:/ {r = $2}
    END {print (q ? q : 0), (e == "" ? "?" : e), (r == "" ? "?" : r), fatal}' <<<"$out"
}

passed=0 failed=0
# workloads LABEL TESSERA_PORT MARIADB_PORT: prepares sbtest, runs each workload both ways.
workloads() {
  local label=$1
  local proxy=(--mysql-port="$2" --mysql-user="$TESSERA_USER" --mysql-password="$TESSERA_PASSWORD")
  local direct=(--mysql-port="$3" --mysql-user=tessera --mysql-password=tessera)
  mariadb -h127.0.0.1 -P"$2" -u"$TESSERA_USER" -p"$TESSERA_PASSWORD" \
    -e "DROP DATABASE IF EXISTS sbtest; CREATE DATABASE sbtest"
  sysbench oltp_read_write "${BASE[@]}" "${proxy[@]}" --threads=4 prepare >/dev/null
  local workload dq de pq pe pr pf allowed line
  for workload in oltp_read_write oltp_point_select oltp_write_only oltp_insert; do
    read -r dq de _ _ < <(run "$workload" "${direct[@]}")
    read -r pq pe pr pf < <(run "$workload" "${proxy[@]}")
    case $workload in
      oltp_read_write|oltp_write_only) allowed=$((de * 2 + 10)) ;;
      *) allowed=0 ;;
    esac
    line="$label $workload: Tessera $pq queries, $pe errors (deadlocks), $pr reconnects; direct $dq queries, $de errors"
    if [ "$pq" -gt 0 ] && [ "$pf" = 0 ] && [ "$pr" = 0 ] && [ "$pe" != "?" ] && [ "$pe" -le "$allowed" ]; then
      echo "PASS $line"
      passed=$((passed + 1))
    else
      echo "FAIL $line (allowed errors: $allowed, fatal: $pf)"
      failed=$((failed + 1))
    fi
  done
}

workloads main "$TESSERA_PORT" "$MARIADB_PORT"
if [[ -n ${TESSERA_ONE_PORT:-} && ${COMPAT_DIRECT:-0} != 1 ]]; then
  workloads one-thread "$TESSERA_ONE_PORT" "${TESSERA_ONE_MARIADB_PORT:?}"
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
