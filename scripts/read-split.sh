#!/usr/bin/env bash
# What a read consistency level (and read_your_writes_wait_ms) costs an application that writes
# and reads in autocommit: several Tesseras, one per VARIANT (level:wait_ms), in front of the
# same primary + 2 GTID replicas, run alternately with sysbench WORKLOAD (default oltp_read_write
# --skip-trx=on: each event's reads follow its writes, so reads may leave the primary). Reports
# qps, tps, p99, the share of reads served by the replicas and MASTER_GTID_WAIT calls. Duplicate
# keys (1062) and deadlocks (1213) between concurrent autocommit DELETE/INSERT are sysbench's own
# races with --skip-trx and are ignored, as they would be against MariaDB directly.
# Usage: scripts/read-split.sh [--variants global:0,session:0,eventual:0] [--workload W]
#                              [--time SECONDS] [--threads N] [--rounds N]   (needs a release build)
set -euo pipefail
cd "$(dirname "$0")/.."

TIME=20 THREADS=8 ROUNDS=2 VARIANTS=global:0,session:0,eventual:0 WORKLOAD=oltp_read_write
while [ $# -gt 0 ]; do
  case "$1" in
    --time) TIME=$2; shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --variants) VARIANTS=$2; shift 2 ;;
    --workload) WORKLOAD=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
IFS=, read -r -a VARIANT_LIST <<<"$VARIANTS"

BIN=./target/release/tessera
WORK=$(mktemp -d /tmp/tessera-read-split.XXXXXX)
PIDS=()
# shellcheck source=scripts/lib/cluster.sh
source scripts/lib/cluster.sh
trap cleanup EXIT

# start_variant LEVEL:WAIT: a Tessera with that consistency and wait; sets PROXY[v] and ADMIN[v].
declare -A PROXY ADMIN
start_variant() {
  local v=$1 level=${1%%:*} wait=${1##*:} port admin
  port=$(free_port) admin="127.0.0.1:$(free_port)"
  cat >"$WORK/tessera-$level-$wait.toml" <<TOML
[server]
listen = "127.0.0.1:$port"
[admin]
http_listen = "$admin"
[[users]]
name = "app"
password = "app"
read_consistency = "$level"
[[groups]]
name = "main"
user = "tessera"
password = "tessera"
read_your_writes_wait_ms = $wait
primary = { address = "127.0.0.1:${PORTS[0]}" }
replicas = [{ address = "127.0.0.1:${PORTS[1]}" }, { address = "127.0.0.1:${PORTS[2]}" }]
TOML
  "$BIN" --config "$WORK/tessera-$level-$wait.toml" >"$WORK/tessera-$level-$wait.log" 2>&1 &
  PIDS+=($!)
  PROXY[$v]=$port ADMIN[$v]=$admin
  wait_serving "$admin" 2
}

# metric ADMIN NAME: the values of a tessera_server_* series, primary first.
metric() { curl -s "http://$1/metrics" | awk -v n="$2" 'index($0, n "{") == 1 { printf "%s ", $2 }'; }

# run_once VARIANT: one sysbench run; prints a table row.
run_once() {
  local v=$1 before after waits out
  before=($(metric "${ADMIN[$v]}" tessera_server_reads_total))
  waits=($(metric "${ADMIN[$v]}" tessera_server_gtid_waits_applied_total))
  out=$(sysbench "$WORKLOAD" $SB --mysql-port="${PROXY[$v]}" --mysql-user=app --mysql-password=app \
        --skip-trx=on --mysql-ignore-errors=1062,1213 --threads="$THREADS" --time="$TIME" --percentile=99 run 2>&1) || true
  after=($(metric "${ADMIN[$v]}" tessera_server_reads_total))
  local waits_after=($(metric "${ADMIN[$v]}" tessera_server_gtid_waits_applied_total))
  local primary=$((after[0] - before[0])) replicas=$((after[1] + after[2] - before[1] - before[2]))
  local asked=$((waits_after[1] + waits_after[2] - waits[1] - waits[2]))
  local qps tps p99 fatal
  qps=$(sed -n 's/.*queries: .*(\(.*\) per sec.)/\1/p' <<<"$out")
  tps=$(sed -n 's/.*transactions: .*(\(.*\) per sec.)/\1/p' <<<"$out")
  p99=$(awk '/99th percentile/ { print $3 }' <<<"$out")
  fatal=$(grep -c FATAL <<<"$out" || true)
  grep -m1 FATAL <<<"$out" >>"$WORK/fatal.txt" || true
  echo "| ${v%%:*} | ${v##*:} | $qps | $tps | $p99 | $((100 * replicas / (primary + replicas + 1)))% | $asked | $fatal |"
}

echo "# read/write splitting: sysbench $WORKLOAD --skip-trx=on, variants $VARIANTS"
echo
echo "- command: scripts/read-split.sh --variants $VARIANTS --workload $WORKLOAD --time $TIME --threads $THREADS --rounds $ROUNDS"
echo "- $(nproc) cores shared by sysbench, three MariaDB servers and ${#VARIANT_LIST[@]} Tesseras; runs alternate"
echo
start_sandbox
SB="--mysql-host=127.0.0.1 --mysql-db=sbtest --tables=4 --table-size=10000"
sysbench oltp_read_write $SB --mysql-port="${PORTS[0]}" --mysql-user=tessera --mysql-password=tessera prepare >/dev/null
for v in "${VARIANT_LIST[@]}"; do start_variant "$v"; done
echo "| consistency | wait ms | qps | tps | p99 ms | reads on replicas | MASTER_GTID_WAIT calls | sysbench FATAL |"
echo "|---|---|---|---|---|---|---|---|"
for _ in $(seq "$ROUNDS"); do
  for v in "${VARIANT_LIST[@]}"; do run_once "$v"; done
done
if [ -s "$WORK/fatal.txt" ]; then
  echo
  echo "sysbench stopped early (its first FATAL line per run):"
  sed 's/^/    /' "$WORK/fatal.txt"
fi
