#!/usr/bin/env bash
# What `read_your_writes_wait_ms` changes for a session that writes and reads: sysbench
# oltp_read_write (--skip-trx=on: autocommit statements, so reads may leave the primary) in
# `session` consistency through two Tesseras in front of the same primary + 2 GTID replicas,
# one without the wait and one with it, run alternately. Reports qps, tps, p99, the share of
# reads served by the replicas and the MASTER_GTID_WAIT calls. Duplicate keys (1062) and
# deadlocks (1213) between concurrent autocommit DELETE/INSERT are sysbench's own races with
# --skip-trx and are ignored, as they would be against MariaDB directly.
# Usage: scripts/ryw-wait.sh [--time SECONDS] [--threads N] [--rounds N] [--wait-ms MS]
#        (needs a release build)
set -euo pipefail
cd "$(dirname "$0")/.."

TIME=20 THREADS=8 ROUNDS=2 WAIT_MS=200
while [ $# -gt 0 ]; do
  case "$1" in
    --time) TIME=$2; shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --wait-ms) WAIT_MS=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done

BIN=./target/release/tessera
WORK=$(mktemp -d /tmp/tessera-ryw-wait.XXXXXX)
PIDS=()
# shellcheck source=scripts/lib/cluster.sh
source scripts/lib/cluster.sh
trap cleanup EXIT

# start_tessera WAIT_MS: a Tessera with that wait; sets PROXY[WAIT_MS] and ADMIN[WAIT_MS].
declare -A PROXY ADMIN
start_tessera() {
  local wait=$1 port admin
  port=$(free_port) admin="127.0.0.1:$(free_port)"
  cat >"$WORK/tessera-$wait.toml" <<TOML
[server]
listen = "127.0.0.1:$port"
[admin]
http_listen = "$admin"
[[users]]
name = "app"
password = "app"
read_consistency = "session"
[[groups]]
name = "main"
user = "tessera"
password = "tessera"
read_your_writes_wait_ms = $wait
primary = { address = "127.0.0.1:${PORTS[0]}" }
replicas = [{ address = "127.0.0.1:${PORTS[1]}" }, { address = "127.0.0.1:${PORTS[2]}" }]
TOML
  "$BIN" --config "$WORK/tessera-$wait.toml" >"$WORK/tessera-$wait.log" 2>&1 &
  PIDS+=($!)
  PROXY[$wait]=$port ADMIN[$wait]=$admin
  wait_serving "$admin" 2
}

# metric ADMIN NAME: the values of a tessera_server_* series, primary first.
metric() { curl -s "http://$1/metrics" | awk -v n="$2" 'index($0, n "{") == 1 { printf "%s ", $2 }'; }

# run_once WAIT_MS: one sysbench run; prints a table row.
run_once() {
  local wait=$1 before after waits out
  before=($(metric "${ADMIN[$wait]}" tessera_server_reads_total))
  waits=($(metric "${ADMIN[$wait]}" tessera_server_gtid_waits_applied_total))
  out=$(sysbench oltp_read_write $SB --mysql-port="${PROXY[$wait]}" --mysql-user=app --mysql-password=app \
        --skip-trx=on --mysql-ignore-errors=1062,1213 --threads="$THREADS" --time="$TIME" --percentile=99 run 2>&1) || true
  after=($(metric "${ADMIN[$wait]}" tessera_server_reads_total))
  local waits_after=($(metric "${ADMIN[$wait]}" tessera_server_gtid_waits_applied_total))
  local primary=$((after[0] - before[0])) replicas=$((after[1] + after[2] - before[1] - before[2]))
  local asked=$((waits_after[1] + waits_after[2] - waits[1] - waits[2]))
  local qps tps p99 fatal
  qps=$(sed -n 's/.*queries: .*(\(.*\) per sec.)/\1/p' <<<"$out")
  tps=$(sed -n 's/.*transactions: .*(\(.*\) per sec.)/\1/p' <<<"$out")
  p99=$(awk '/99th percentile/ { print $3 }' <<<"$out")
  fatal=$(grep -c FATAL <<<"$out" || true)
  grep -m1 FATAL <<<"$out" >>"$WORK/fatal.txt" || true
  echo "| $wait | $qps | $tps | $p99 | $((100 * replicas / (primary + replicas + 1)))% | $asked | $fatal |"
}

echo "# read_your_writes_wait_ms: sysbench oltp_read_write --skip-trx=on in session consistency"
echo
echo "- command: scripts/ryw-wait.sh --time $TIME --threads $THREADS --rounds $ROUNDS --wait-ms $WAIT_MS"
echo "- $(nproc) cores shared by sysbench, three MariaDB servers and two Tesseras; runs alternate"
echo
start_sandbox
SB="--mysql-host=127.0.0.1 --mysql-db=sbtest --tables=4 --table-size=10000"
sysbench oltp_read_write $SB --mysql-port="${PORTS[0]}" --mysql-user=tessera --mysql-password=tessera prepare >/dev/null
start_tessera 0
start_tessera "$WAIT_MS"
echo "| wait ms | qps | tps | p99 ms | reads on replicas | MASTER_GTID_WAIT calls | sysbench FATAL |"
echo "|---|---|---|---|---|---|---|"
for _ in $(seq "$ROUNDS"); do
  run_once 0
  run_once "$WAIT_MS"
done
if [ -s "$WORK/fatal.txt" ]; then
  echo
  echo "sysbench stopped early (its first FATAL line per run):"
  sed 's/^/    /' "$WORK/fatal.txt"
fi
