#!/usr/bin/env bash
# Kills one replica with SIGKILL in the middle of a sysbench oltp_read_only run through Tessera
# (primary + 2 GTID replicas, reads by weight 1:1 to the replicas) and reports how many reads
# failed. Two runs: sysbench's defaults (each event is a BEGIN ... COMMIT transaction, which
# Tessera keeps on the primary) and --skip-trx=on (autocommit reads, which go to the replicas).
# Usage: scripts/replica-kill.sh [--time SECONDS] [--threads N]   (needs a release build)
set -euo pipefail
cd "$(dirname "$0")/.."

TIME=30 THREADS=16
while [ $# -gt 0 ]; do
  case "$1" in
    --time) TIME=$2; shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done

BIN=./target/release/tessera
WORK=$(mktemp -d /tmp/tessera-replica-kill.XXXXXX)
PIDS=()
# shellcheck source=scripts/lib/cluster.sh
source scripts/lib/cluster.sh
trap cleanup EXIT

# start_cluster: sandbox primary + 2 replicas, Tessera in front; sets PORTS[], DIRS[], PROXY_PORT, ADMIN
start_cluster() {
  start_sandbox
  PROXY_PORT=$(free_port) ADMIN="127.0.0.1:$(free_port)"
  cat >"$WORK/tessera.toml" <<TOML
[server]
listen = "127.0.0.1:$PROXY_PORT"
worker_threads = 1
[pool]
max_size = 64
[admin]
http_listen = "$ADMIN"
[[users]]
name = "app"
password = "app"
read_consistency = "eventual"
[[groups]]
name = "main"
user = "tessera"
password = "tessera"
monitor_interval_ms = 500
primary = { address = "127.0.0.1:${PORTS[0]}", weight = 0 }
replicas = [{ address = "127.0.0.1:${PORTS[1]}" }, { address = "127.0.0.1:${PORTS[2]}" }]
TOML
  "$BIN" --config "$WORK/tessera.toml" >"$WORK/tessera.log" 2>&1 &
  PIDS+=($!)
  SB="--mysql-host=127.0.0.1 --mysql-db=sbtest --tables=4 --table-size=10000"
  sysbench oltp_read_only $SB --mysql-port="${PORTS[0]}" --mysql-user=tessera --mysql-password=tessera prepare >/dev/null
  wait_serving "$ADMIN" 2
}

# run_with_kill LABEL [sysbench args...]: kills s1's mariadbd a third of the way in.
run_with_kill() {
  local label=$1; shift
  local victim
  victim=$(pgrep -f "datadir=${DIRS[1]}" | head -1)
  ( sleep $((TIME / 3)); kill -9 "$victim" ) &
  local out
  out=$(sysbench oltp_read_only $SB --mysql-port="$PROXY_PORT" --mysql-user=app --mysql-password=app \
        --threads="$THREADS" --time="$TIME" --percentile=99 --mysql-ignore-errors=all "$@" run 2>&1) || true
  echo "### $label"
  echo
  echo '```'
  grep -E "queries:|transactions:|ignored errors:|reconnects:|99th percentile|FATAL" <<<"$out"
  echo '```'
  echo
  echo '```'
  "$BIN" status --admin "$ADMIN"
  echo '```'
  echo
}

echo "# Replica killed during sysbench oltp_read_only through Tessera"
echo
echo "- command: scripts/replica-kill.sh --time $TIME --threads $THREADS; replica s1 gets SIGKILL after $((TIME / 3)) s"
echo "- $(nproc) cores shared by sysbench, three MariaDB servers and Tessera (worker_threads = 1)"
echo
start_cluster
run_with_kill "autocommit reads (--skip-trx=on): reads go to the replicas" --skip-trx=on
cleanup; PIDS=(); WORK=$(mktemp -d /tmp/tessera-replica-kill.XXXXXX)
start_cluster
run_with_kill "sysbench defaults (BEGIN ... COMMIT per event: Tessera keeps transactions on the primary)"
