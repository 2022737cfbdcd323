#!/usr/bin/env bash
# N Tessera processes of one worker each sharing one port (server.reuse_port, SO_REUSEPORT)
# against one process of N workers, and one process of one worker, in front of one sandbox
# MariaDB, with direct MariaDB beside them: sysbench 1.0.20 oltp_point_select (prepared), at
# each --threads count, every configuration run once per round, interleaved, --rounds rounds.
# Prints qps per run and, per configuration and thread count, the median qps and its ratio to
# direct's median. N = the machine's cores (nproc) unless --processes N.
# Usage: TESSERA_BIN=target/release/tessera scripts/processes-vs-workers.sh [--time S]
#          [--threads "16 64"] [--rounds R] [--processes N]     (about 6 min with the defaults)
set -euo pipefail
cd "$(dirname "$0")/.."

TIME=20 THREADS="16 64" ROUNDS=2 N=$(nproc)
while [ $# -gt 0 ]; do
  case "$1" in
    --time) TIME=$2; shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --processes) N=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
BIN=${TESSERA_BIN:-./target/release/tessera}
[ -x "$BIN" ] || { echo "TESSERA_BIN=$BIN is not executable (cargo build --release --bin tessera)" >&2; exit 2; }
command -v sysbench >/dev/null || { echo "sysbench not found (bash scripts/install-deps.sh)" >&2; exit 2; }

WORK=$(mktemp -d /tmp/tessera-procs.XXXXXX)
PIDS=()
# shellcheck source=scripts/lib/cluster.sh
source scripts/lib/cluster.sh
trap cleanup EXIT
start_one_server
BACKEND="127.0.0.1:$BACKEND_PORT"
SB=(--db-driver=mysql --mysql-host=127.0.0.1 --mysql-db=test --tables=4 --table-size=10000)
sysbench oltp_point_select "${SB[@]}" --mysql-port="$BACKEND_PORT" --mysql-user=tessera \
  --mysql-password=tessera prepare >"$WORK/prepare.log" 2>&1

# config NAME WORKERS PORT: a config file sharing PORT (reuse_port), one worker count.
config() {
  write_one_server_config "$WORK/$1.toml" "$3" "$BACKEND" "$2"
  sed -i 's/^\[server\]$/[server]\nreuse_port = true/' "$WORK/$1.toml"
}

# start NAME COUNT WORKERS: COUNT processes of WORKERS workers on one fresh port; sets PORT, RUNNING.
start() {
  PORT=$(free_port) RUNNING=()
  for ((i = 0; i < $2; i++)); do
    config "$1-$i" "$3" "$PORT"
    "$BIN" --config "$WORK/$1-$i.toml" >"$WORK/$1-$i.log" 2>&1 &
    RUNNING+=($!)
    for _ in $(seq 100); do grep -q "tessera listening" "$WORK/$1-$i.log" && break; sleep 0.1; done
  done
}

stop() { for p in "${RUNNING[@]}"; do kill "$p"; done; for p in "${RUNNING[@]}"; do wait "$p" || true; done; }

# run PORT USER THREADS: qps of one oltp_point_select run.
run() {
  sysbench oltp_point_select "${SB[@]}" --mysql-port="$1" --mysql-user="$2" --mysql-password="$2" \
    --threads="$3" --time="$TIME" run | sed -n 's/^ *queries: *[0-9]* *(\([0-9.]*\) per sec.)/\1/p'
}

CONFIGS=("direct" "1x1" "1x$N" "${N}x1")
: >"$WORK/results"
for ((r = 1; r <= ROUNDS; r++)); do
  for t in $THREADS; do
    for c in "${CONFIGS[@]}"; do
      case "$c" in
        direct) q=$(run "$BACKEND_PORT" tessera "$t") ;;
        *) start "$c" "${c%x*}" "${c#*x}"; q=$(run "$PORT" app "$t"); stop ;;
      esac
      echo "round $r threads $t $c: $q qps"
      echo "$t $c $q" >>"$WORK/results"
    done
  done
done

echo
echo "median qps (ratio to direct) per configuration: processes x workers"
for t in $THREADS; do
  median() { awk -v t="$t" -v c="$1" '$1 == t && $2 == c { print $3 }' "$WORK/results" | sort -n |
    awk '{ v[NR] = $1 } END { print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }
  d=$(median direct)
  line="threads $t: direct $d"
  for c in "${CONFIGS[@]:1}"; do
    m=$(median "$c")
    line+=" | $c $m ($(awk -v m="$m" -v d="$d" 'BEGIN { printf "%.2f", m / d }'))"
  done
  echo "$line"
done
