#!/usr/bin/env bash
# Live reload under load (issue 44): sysbench oltp_read_write through Tessera (a sandbox primary
# and 2 GTID replicas) while the configuration file changes and is reloaded 10 times with
# `tessera reload` (a replica added and removed, weights changed, a user added), and once an
# invalid file is reloaded (it must be refused and change nothing).
# Prints each reload's outcome, then sysbench's reconnects and FATAL lines (both must be 0) and
# its errors (InnoDB deadlocks it retries; compared with the same workload run directly, which
# has them too), and the qps dip: the lowest 1-second qps within 2 s after a reload against
# the run's median.
# Usage: TESSERA_BIN=target/release/tessera scripts/reload-under-load.sh [--time S] [--threads N]
#        (defaults: 60 s, 64 threads; about 2.5 minutes in all, the direct run included)
set -euo pipefail
cd "$(dirname "$0")/.."

TIME=60 THREADS=64 TABLES=8 TABLE_SIZE=10000
while [ $# -gt 0 ]; do
  case "$1" in
    --time) TIME=$2; shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
BIN=${TESSERA_BIN:-./target/release/tessera}
[ -x "$BIN" ] || { echo "TESSERA_BIN=$BIN is not executable (cargo build --release --bin tessera)" >&2; exit 2; }
command -v sysbench >/dev/null || { echo "sysbench not found (bash scripts/install-deps.sh)" >&2; exit 2; }
WORK=$(mktemp -d /tmp/tessera-reload.XXXXXX)
PIDS=()
# shellcheck source=scripts/lib/cluster.sh
source scripts/lib/cluster.sh
trap cleanup EXIT
start_sandbox
PROXY_PORT=$(free_port) ADMIN_PORT=$(free_port)
ADMIN=127.0.0.1:$ADMIN_PORT

# write_config REPLICAS WEIGHTS USERS: the file Tessera serves from. REPLICAS: how many of the
# sandbox's replicas (1 or 2); WEIGHTS: "w1 w2"; USERS: extra [[users]] text.
write_config() {
  local replicas="{ address = \"127.0.0.1:${PORTS[1]}\", weight = ${2%% *} }"
  [ "$1" = 2 ] && replicas+=", { address = \"127.0.0.1:${PORTS[2]}\", weight = ${2##* } }"
  cat >"$WORK/tessera.toml" <<TOML
[server]
listen = "127.0.0.1:$PROXY_PORT"
[admin]
http_listen = "$ADMIN"
[pool]
max_size = 96
[[users]]
name = "app"
password = "app"
$3
[[groups]]
name = "main"
user = "tessera"
password = "tessera"
monitor_interval_ms = 200
primary = { address = "127.0.0.1:${PORTS[0]}" }
replicas = [$replicas]
TOML
}

write_config 1 "1 1" ""
"$BIN" --config "$WORK/tessera.toml" >"$WORK/tessera.log" 2>&1 &
PIDS+=($!)
TESSERA_PID=$!
for _ in $(seq 100); do grep -q "tessera listening" "$WORK/tessera.log" && break; sleep 0.1; done
grep -q "tessera listening" "$WORK/tessera.log" || { echo "Tessera did not start" >&2; cat "$WORK/tessera.log" >&2; exit 1; }
wait_serving "$ADMIN" 1

SB=(--mysql-host=127.0.0.1 --mysql-port="$PROXY_PORT" --mysql-user=app --mysql-password=app
  --mysql-db=sbtest --tables=$TABLES --table-size=$TABLE_SIZE)
MYSQL_PWD=tessera mariadb -h127.0.0.1 -P"${PORTS[0]}" -utessera -e "CREATE DATABASE IF NOT EXISTS sbtest"
sysbench oltp_common "${SB[@]}" --threads=8 prepare >"$WORK/prepare.log" 2>&1

sysbench oltp_read_write "${SB[@]}" --threads="$THREADS" --time="$TIME" --report-interval=1 run \
  >"$WORK/sysbench.log" 2>&1 &
SYSBENCH=$!
START=$SECONDS

# The 10 reloads (replicas used, their weights, the user `ops` added or not), one every TIME/12
# seconds, and the invalid file between the fifth and the sixth.
STEPS=(
  '2|1 1|'
  '2|3 1|'
  '2|3 1|ops'
  '1|1 1|ops'
  '2|1 2|ops'
  '2|1 1|'
  '1|1 1|'
  '2|1 1|'
  '2|2 1|'
  '1|1 1|'
)
GAP=$((TIME / 12))
reloaded=0 refused_ok=0 AT=()
for i in "${!STEPS[@]}"; do
  sleep "$GAP"
  IFS='|' read -r replicas weights user <<<"${STEPS[$i]}"
  users=""
  [ "$user" = ops ] && users=$'[[users]]\nname = "ops"\npassword = "ops"'
  write_config "$replicas" "$weights" "$users"
  AT+=($((SECONDS - START)))
  if out=$("$BIN" reload --admin "$ADMIN" 2>&1); then
    reloaded=$((reloaded + 1))
    echo "reload $((i + 1)) at $((SECONDS - START)) s: $out"
  else
    echo "reload $((i + 1)) at $((SECONDS - START)) s: REFUSED: $out"
  fi
  if [ "$i" = 4 ]; then
    before=$("$BIN" status --admin "$ADMIN" | awk 'NR == 2 {print $NF}')
    printf '[server\nlisten = \n' >"$WORK/tessera.toml"
    if out=$("$BIN" reload --admin "$ADMIN" 2>&1); then
      echo "the invalid file was NOT refused: $out"
    else
      after=$("$BIN" status --admin "$ADMIN" | awk 'NR == 2 {print $NF}')
      [ "$before" = "$after" ] && refused_ok=1
      echo "invalid file at $((SECONDS - START)) s: refused, generation $before -> $after: ${out##*: }"
    fi
    write_config "$replicas" "$weights" "$users"
  fi
done
wait "$SYSBENCH" || true
kill -0 "$TESSERA_PID" 2>/dev/null || { echo "Tessera died" >&2; exit 1; }

# The same workload directly on the primary: InnoDB deadlocks (1213, which sysbench retries and
# counts as ignored errors) happen there too, so Tessera's errors are compared with them.
sysbench oltp_read_write "${SB[@]/--mysql-port=$PROXY_PORT/--mysql-port=${PORTS[0]}}" --mysql-user=tessera \
  --mysql-password=tessera --threads="$THREADS" --time="$TIME" run >"$WORK/direct.log" 2>&1 || true
direct_errors=$(awk '/ignored errors:/ {print $3}' "$WORK/direct.log")
errors=$(awk '/ignored errors:/ {print $3}' "$WORK/sysbench.log")
reconnects=$(awk '/reconnects:/ {print $2}' "$WORK/sysbench.log")
fatal=$(grep -c FATAL "$WORK/sysbench.log" || true)
qps=$(awk '/queries:/ && !q {q = $3; gsub(/\(/, "", q)} END {print q}' "$WORK/sysbench.log")
# Per-second qps, then the median and the lowest second within 2 s after each reload.
mapfile -t SERIES < <(sed -n 's/^\[ *\([0-9]*\)s \].* qps: \([0-9.]*\) .*/\1 \2/p' "$WORK/sysbench.log")
median=$(printf '%s\n' "${SERIES[@]}" | awk '{print $2}' | sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}')
dip=$(printf '%s\n' "${SERIES[@]}" | awk -v at="${AT[*]}" '
  BEGIN {n = split(at, t, " ")}
  {for (i = 1; i <= n; i++) if ($1 > t[i] && $1 <= t[i] + 2 && (low == "" || $2 < low)) low = $2}
  END {print (low == "" ? "-" : low)}')
echo
echo "sysbench oltp_read_write, $THREADS threads, $TIME s, $TABLES tables x $TABLE_SIZE rows: $qps qps"
echo "reloads: $reloaded of ${#STEPS[@]} applied; invalid file refused without a change: $([ $refused_ok = 1 ] && echo yes || echo NO)"
echo "errors (deadlocks retried by sysbench): $errors through Tessera, $direct_errors directly in the same workload; reconnects: $reconnects, FATAL lines: $fatal"
echo "qps per second: median $median, lowest within 2 s after a reload $dip"
generation=$("$BIN" status --admin "$ADMIN" | awk 'NR == 2 {print $NF}')
echo "generation at the end: $generation"
allowed=$((${direct_errors:-0} * 2 + 10))
[ "$reloaded" = "${#STEPS[@]}" ] && [ "$refused_ok" = 1 ] && [ "$errors" -le "$allowed" ] && [ "$reconnects" = 0 ] && [ "$fatal" = 0 ] ||
  { echo "FAIL" >&2; grep -i "warn\|error" "$WORK/tessera.log" | sed 's/\x1b\[[0-9;]*m//g' | tail -n 20 >&2; exit 1; }
echo PASS
