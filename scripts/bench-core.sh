#!/usr/bin/env bash
# Core measurements of Tessera against direct MariaDB, side by side in one run on this machine:
#   - sysbench oltp_point_select and oltp_read_only (prepared statements on, sysbench default),
#     direct and through Tessera interleaved, qps ratio and Tessera CPU microseconds per query;
#   - 10,000 idle client connections: Tessera RSS;
#   - sysbench oltp_point_select with 1,000 threads through a pool of at most 64 connections.
# Usage: scripts/bench-core.sh [--threads N] [--time SECONDS] [--rounds N] [--workers N] [--unix]
#   --unix: Tessera reaches MariaDB over its unix socket (co-located deployment); clients still
#           use TCP to both MariaDB and Tessera.
# Prints a Markdown report on stdout. Needs a release build (cargo build --release); TESSERA_BIN
# names another tessera binary (TESSERA_BIN=target/pgo/release/tessera: the profile-guided one).
set -euo pipefail
cd "$(dirname "$0")/.."

THREADS=16 TIME=20 ROUNDS=2 WORKERS=1 UNIX=0
while [ $# -gt 0 ]; do
  case "$1" in
    --threads) THREADS=$2; shift 2 ;;
    --time) TIME=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --workers) WORKERS=$2; shift 2 ;;
    --unix) UNIX=1; shift ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
ulimit -n 20000

BIN=${TESSERA_BIN:-./target/release/tessera}
# The idle-connection measurement's client (crates/proxy/examples/idle_clients.rs).
cargo build --release --quiet -p tessera-proxy --example idle_clients
WORK=$(mktemp -d /tmp/tessera-bench.XXXXXX)
PIDS=()
# shellcheck source=scripts/lib/cluster.sh
source scripts/lib/cluster.sh
trap cleanup EXIT

start_one_server
BACKEND_ADDRESS="127.0.0.1:$BACKEND_PORT"
if [ "$UNIX" = 1 ]; then
  BACKEND_ADDRESS="unix:$BACKEND_DIR/mysql.sock"
fi
PROXY_PORT=$(free_port)
write_one_server_config "$WORK/tessera.toml" "$PROXY_PORT" "$BACKEND_ADDRESS" "$WORKERS"
"$BIN" --config "$WORK/tessera.toml" >"$WORK/tessera.log" 2>&1 &
TESSERA_PID=$!
PIDS+=($TESSERA_PID)
sleep 1

SB="--mysql-host=127.0.0.1 --mysql-db=sbtest --tables=4 --table-size=10000"
sysbench oltp_read_write $SB --mysql-port="$BACKEND_PORT" --mysql-user=tessera --mysql-password=tessera prepare >/dev/null

cpu_ticks() { awk '{print $14+$15}' "/proc/$TESSERA_PID/stat"; }
hz=$(getconf CLK_TCK)

# run_one WORKLOAD TARGET -> "qps p99 proxy_us_per_query"
run_one() {
  local workload=$1 target=$2 port user out before after queries
  if [ "$target" = direct ]; then port=$BACKEND_PORT user=tessera; else port=$PROXY_PORT user=app; fi
  before=$(cpu_ticks)
  out=$(sysbench "$workload" $SB --mysql-port="$port" --mysql-user="$user" --mysql-password="$user" \
        --threads="$THREADS" --time="$TIME" --percentile=99 run)
  after=$(cpu_ticks)
  queries=$(awk '/queries:/{print $2; exit}' <<<"$out")
  awk -v out="$out" -v q="$queries" -v t="$TIME" -v d=$((after - before)) -v hz="$hz" 'BEGIN {
      n = split(out, lines, "\n"); p99 = "";
      for (i = 1; i <= n; i++) if (lines[i] ~ /99th percentile/) { split(lines[i], f, ":"); p99 = f[2] + 0 }
      printf "%.0f %.2f %.2f\n", q / t, p99, (d / hz) * 1e6 / q }'
}

echo "# Tessera core benchmark"
echo
echo "- machine: $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB; $(uname -r); client, MariaDB and Tessera share these cores"
echo "- MariaDB $(mariadbd --version | awk '{print $3}'), $(sysbench --version), Tessera worker_threads=$WORKERS, pool.max_size=64"
echo "- Tessera reaches MariaDB at $BACKEND_ADDRESS"
echo "- command: $([ "$BIN" != ./target/release/tessera ] && echo "TESSERA_BIN=$BIN ")scripts/bench-core.sh --threads $THREADS --time $TIME --rounds $ROUNDS --workers $WORKERS$([ "$UNIX" = 1 ] && echo " --unix")"
echo
echo "| workload | threads | round | direct qps | Tessera qps | ratio | direct p99 ms | Tessera p99 ms | Tessera CPU us/query |"
echo "|---|---|---|---|---|---|---|---|---|"
for workload in oltp_point_select oltp_read_only; do
  for round in $(seq "$ROUNDS"); do
    read -r dq dp _ < <(run_one "$workload" direct)
    read -r pq pp pus < <(run_one "$workload" proxy)
    ratio=$(awk -v a="$pq" -v b="$dq" 'BEGIN{printf "%.2f", a/b}')
    echo "| $workload | $THREADS | $round | $dq | $pq | $ratio | $dp | $pp | $pus |"
  done
done

echo
echo "## 10,000 idle client connections"
echo
idle=$(./target/release/examples/idle_clients "$PROXY_PORT" 10000 "$TESSERA_PID")
echo "\`$idle\`"

echo
echo "## 1,000 sysbench threads through a pool of at most 64 backend connections"
echo
(sleep $((TIME / 2)); awk '/VmRSS/{print $2}' "/proc/$TESSERA_PID/status" >"$WORK/rss") &
PIDS+=($!)
out=$(sysbench oltp_point_select $SB --mysql-port="$PROXY_PORT" --mysql-user=app --mysql-password=app \
      --threads=1000 --time="$TIME" --percentile=99 run)
backends=$(mariadb -h127.0.0.1 -P"$BACKEND_PORT" -utessera -ptessera -N -e \
  "select count(*) - 1 from information_schema.processlist where user='tessera'")
echo "| threads | qps | errors | reconnects | p99 ms | Tessera RSS during run (kB) | backend connections |"
echo "|---|---|---|---|---|---|---|"
awk -v rss="$(cat "$WORK/rss")" -v be="$backends" -v t="$TIME" '
  /queries:/ && !q {q = $2}
  /ignored errors:/ {e = $3}
  /reconnects:/ {r = $2}
  /99th percentile/ {p = $3}
  END {printf "| 1000 | %.0f | %s | %s | %s | %s | %s |\n", q / t, e, r, p, rss, be}' <<<"$out"
