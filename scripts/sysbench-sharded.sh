#!/usr/bin/env bash
# sysbench 1.0.20 through a sharded Tessera: 2 groups (one sandbox MariaDB each) x 2 shards,
# sysbench's tables sbtest* sharded by id (hash: CRC32(id) % 4, shard i = database sbtest_i).
#   1. `sysbench oltp_common prepare` through Tessera (4 tables x 10,000 rows): Tessera creates the
#      tables and indexes on every shard and splits the multi-row INSERTs; then the shards are
#      checked directly: every table has all its rows, each on the shard CRC32(id) % 4 names.
#   2. oltp_read_only, oltp_read_write, oltp_write_only at 16 threads for 10 s each through
#      Tessera, with sysbench's defaults (server-side prepared statements).
# Prints qps, errors and reconnects per workload. Exits non-zero on a failed prepare or
# placement, a FATAL error, any reconnect, or errors beyond what MariaDB itself gives:
# oltp_read_only must have none; the write workloads hit InnoDB deadlocks (1213, retried by
# sysbench, its "ignored errors") against MariaDB itself too, so they also run directly against a
# third server holding all rows, and Tessera may have at most twice direct's count + 10 (as
# tests/compat/sysbench does). --strict: any error at all fails (no direct runs).
# sysbench keeps its defaults (--auto_inc=on): Tessera gives the AUTO_INCREMENT ids of rows that
# leave them out from its sequence (auto_increment = true on the sbtest* rule).
# Usage: TESSERA_BIN=target/release/tessera scripts/sysbench-sharded.sh [--time S] [--threads N]
#          [--tables N] [--table-size N] [--strict]          (about 70 s with the defaults)
set -euo pipefail
cd "$(dirname "$0")/.."

TIME=10 THREADS=16 TABLES=4 TABLE_SIZE=10000 STRICT=0
while [ $# -gt 0 ]; do
  case "$1" in
    --time) TIME=$2; shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    --tables) TABLES=$2; shift 2 ;;
    --table-size) TABLE_SIZE=$2; shift 2 ;;
    --strict) STRICT=1; shift ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
BIN=${TESSERA_BIN:-./target/release/tessera}
[ -x "$BIN" ] || { echo "TESSERA_BIN=$BIN is not executable (cargo build --release --bin tessera)" >&2; exit 2; }
command -v sysbench >/dev/null || { echo "sysbench not found (bash scripts/install-deps.sh)" >&2; exit 2; }

SHARDS=4 SHARDS_PER_GROUP=2 DB=sbtest
WORK=$(mktemp -d /tmp/tessera-sysbench-sharded.XXXXXX)
PIDS=()
# shellcheck source=scripts/lib/cluster.sh
source scripts/lib/cluster.sh
trap cleanup EXIT

# Three sandbox servers: s0 = group g0, s1 = group g1, s2 = direct (all rows, for the baseline).
"$BIN" sandbox --servers 3 >"$WORK/sandbox.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 300); do grep -q "^s2:" "$WORK/sandbox.log" && break; sleep 0.2; done
mapfile -t PORTS < <(sed -n 's/^s[0-9]: .* -P\([0-9]*\) .*/\1/p' "$WORK/sandbox.log")
[ "${#PORTS[@]}" = 3 ] || { echo "sandbox did not start" >&2; cat "$WORK/sandbox.log" >&2; exit 1; }
DIRECT_PORT=${PORTS[2]}

# on PORT SQL: runs SQL on a server directly, as the sandbox's admin account.
on() { MYSQL_PWD=tessera mariadb -h127.0.0.1 -P"$1" -utessera -N -B -e "$2"; }

# The shard databases, created directly; the sandbox's own `sbtest` goes from the groups, so
# that rows can only reach the shards through Tessera's placement.
for g in 0 1; do
  sql="DROP DATABASE IF EXISTS $DB;"
  for ((j = 0; j < SHARDS_PER_GROUP; j++)); do sql+=" CREATE DATABASE ${DB}_$((g * SHARDS_PER_GROUP + j));"; done
  on "${PORTS[$g]}" "$sql"
done

PROXY_PORT=$(free_port)
cat >"$WORK/tessera.toml" <<TOML
[server]
listen = "127.0.0.1:$PROXY_PORT"
[[users]]
name = "app"
password = "app"
[[groups]]
name = "g0"
user = "tessera"
password = "tessera"
primary = { address = "127.0.0.1:${PORTS[0]}" }
[[groups]]
name = "g1"
user = "tessera"
password = "tessera"
primary = { address = "127.0.0.1:${PORTS[1]}" }
[[schemas]]
name = "$DB"
shards = ["g0:${DB}_0", "g0:${DB}_1", "g1:${DB}_2", "g1:${DB}_3"]
default_shard = 0
[[schemas.tables]]
name = "sbtest*"
shard_key = "id"
function = "hash"
auto_increment = true
TOML
"$BIN" --config "$WORK/tessera.toml" >"$WORK/tessera.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 100); do grep -q "tessera listening" "$WORK/tessera.log" && break; sleep 0.1; done
grep -q "tessera listening" "$WORK/tessera.log" || { echo "Tessera did not start:" >&2; cat "$WORK/tessera.log" >&2; exit 1; }

SB=(--mysql-host=127.0.0.1 --mysql-db=$DB --tables="$TABLES" --table-size="$TABLE_SIZE")
PROXY=(--mysql-port="$PROXY_PORT" --mysql-user=app --mysql-password=app)
DIRECT=(--mysql-port="$DIRECT_PORT" --mysql-user=tessera --mysql-password=tessera)

# prepare WHAT ARGS...: sysbench prepare; sysbench 1.0 exits 0 when a prepare thread dies with
# FATAL, so its output is checked too.
prepare() {
  local what=$1 out
  shift
  if ! out=$(sysbench oltp_common "${SB[@]}" "$@" --threads="$((TABLES < 16 ? TABLES : 16))" prepare 2>&1) ||
    grep -q FATAL <<<"$out"; then
    echo "FAIL: sysbench prepare $what failed:" >&2
    grep FATAL <<<"$out" | awk '!seen[$0]++' >&2 || tail -n 20 <<<"$out" >&2
    if [ "$what" = "through Tessera" ]; then
      echo "Tessera's log ends with:" >&2
      tail -n 5 "$WORK/tessera.log" | sed 's/\x1b\[[0-9;]*m//g' >&2
    fi
    exit 1
  fi
}

# check_placement: on every shard, each row's CRC32(id) % 4 is the shard; each table has all rows.
check_placement() {
  local i t out count misplaced
  declare -A total
  for ((i = 0; i < SHARDS; i++)); do
    for ((t = 1; t <= TABLES; t++)); do
      out=$(on "${PORTS[$((i / SHARDS_PER_GROUP))]}" \
        "SELECT COUNT(*), COALESCE(SUM(CRC32(id) % $SHARDS <> $i), 0) FROM ${DB}_$i.sbtest$t" 2>&1) ||
        { echo "FAIL: ${DB}_$i.sbtest$t on its shard: $(grep ERROR <<<"$out" || echo "$out")" >&2; exit 1; }
      read -r count misplaced <<<"$out"
      [ "$misplaced" = 0 ] || { echo "FAIL: ${DB}_$i.sbtest$t has $misplaced rows of other shards" >&2; exit 1; }
      total[$t]=$((${total[$t]:-0} + count))
    done
  done
  for ((t = 1; t <= TABLES; t++)); do
    [ "${total[$t]}" = "$TABLE_SIZE" ] ||
      { echo "FAIL: sbtest$t has ${total[$t]} rows over the shards, not $TABLE_SIZE" >&2; exit 1; }
  done
}

echo "sysbench $(sysbench --version | awk '{print $2}') through Tessera on 127.0.0.1:$PROXY_PORT:" \
  "2 groups x $SHARDS_PER_GROUP shards (g0 127.0.0.1:${PORTS[0]}, g1 127.0.0.1:${PORTS[1]}), sbtest* by id (hash)"
prepare "through Tessera" "${PROXY[@]}"
check_placement
echo "prepare: $TABLES tables x $TABLE_SIZE rows through Tessera, every row on its shard"
[ "$STRICT" = 1 ] || prepare "directly (baseline server)" "${DIRECT[@]}"

# run WORKLOAD ARGS... -> "qps errors reconnects fatal"
run() {
  local workload=$1 out
  shift
  out=$(sysbench "$workload" "${SB[@]}" "$@" --threads="$THREADS" --time="$TIME" run 2>&1) || true
  echo "$out" >>"$WORK/sysbench.log"
  awk -v fatal="$(grep -c FATAL <<<"$out" || true)" '
    /queries:/ && !q {q = $3; gsub(/\(/, "", q)}  /ignored errors:/ {e = $3}  /reconnects:/ {r = $2}
    END {print (q == "" ? 0 : q), (e == "" ? "?" : e), (r == "" ? "?" : r), fatal}' <<<"$out"
}

failed=0
printf '%-16s %10s %7s %10s %s\n' workload qps errors reconnects verdict
for workload in oltp_read_only oltp_read_write oltp_write_only; do
  read -r qps errors reconnects fatal < <(run "$workload" "${PROXY[@]}")
  allowed=0 baseline=""
  if [ "$STRICT" = 0 ] && [ "$workload" != oltp_read_only ]; then
    read -r _ direct_errors _ _ < <(run "$workload" "${DIRECT[@]}")
    allowed=$(( ${direct_errors//\?/0} * 2 + 10 )) baseline=" (direct: $direct_errors errors, allowed $allowed)"
  fi
  why=()
  [ "$fatal" = 0 ] || why+=("$fatal FATAL lines")
  [ "$reconnects" = 0 ] || why+=("reconnects")
  [ "$errors" != "?" ] && [ "$errors" -le "$allowed" ] || why+=("errors above $allowed")
  [ "${qps%.*}" != 0 ] || why+=("no queries")
  verdict=PASS
  if [ "${#why[@]}" -gt 0 ]; then
    verdict="FAIL: $(IFS=,; echo "${why[*]}")" failed=$((failed + 1))
  fi
  printf '%-16s %10s %7s %10s %s\n' "$workload" "$qps" "$errors" "$reconnects" "$verdict$baseline"
done
if [ "$failed" -gt 0 ]; then
  echo "$failed workload(s) failed" >&2
  if grep -q FATAL "$WORK/sysbench.log"; then
    echo "sysbench's FATAL lines (count, line):" >&2
    grep FATAL "$WORK/sysbench.log" | sort | uniq -c | sort -rn | head -n 10 >&2
  fi
  exit 1
fi
echo "all workloads passed"
