#!/usr/bin/env bash
# Memory of a streaming merge: `SELECT * FROM t ORDER BY x` over 4 shards of ROWS rows each
# (default 1,000,000), read by a client through Tessera. Prints Tessera's RSS before and its peak
# (VmHWM) after, and the shard SQL of the LIMIT 10 form (EXPLAIN ROUTE: each shard sends 10 rows).
# Exits non-zero when the peak grew by 64 MB or more.
# Usage: TESSERA_BIN=target/release/tessera scripts/merge-memory.sh [ROWS]
set -euo pipefail
cd "$(dirname "$0")/.."
ROWS=${1:-1000000}
BIN=${TESSERA_BIN:-./target/release/tessera}
WORK=$(mktemp -d /tmp/tessera-merge-memory.XXXXXX)
PIDS=()
# shellcheck source=scripts/lib/cluster.sh
source scripts/lib/cluster.sh
trap cleanup EXIT

"$BIN" sandbox --servers 2 >"$WORK/sandbox.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 300); do grep -q "^s1:" "$WORK/sandbox.log" && break; sleep 0.2; done
mapfile -t PORTS < <(sed -n 's/^s[0-9]: .* -P\([0-9]*\) .*/\1/p' "$WORK/sandbox.log")
on() { MYSQL_PWD=tessera mariadb -h127.0.0.1 -P"$1" -utessera -N -B -e "$2"; }

echo "loading 4 shards x $ROWS rows ..."
for s in 0 1 2 3; do
  port=${PORTS[$((s / 2))]}
  on "$port" "CREATE DATABASE big_$s; CREATE TABLE big_$s.t (id BIGINT PRIMARY KEY, x VARCHAR(32), pad CHAR(60)) ENGINE=InnoDB;
    INSERT INTO big_$s.t SELECT seq * 4 + $s, CONCAT('v', (seq * 7919 + $s) % 1000003), REPEAT('p', 60) FROM big_$s.seq_1_to_$ROWS;"
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
name = "big"
shards = ["g0:big_0", "g0:big_1", "g1:big_2", "g1:big_3"]
[[schemas.tables]]
name = "t"
shard_key = "id"
TOML
"$BIN" --config "$WORK/tessera.toml" >"$WORK/tessera.log" 2>&1 &
TPID=$!
PIDS+=($TPID)
for _ in $(seq 100); do grep -q "tessera listening" "$WORK/tessera.log" && break; sleep 0.1; done
grep -q "tessera listening" "$WORK/tessera.log" || { echo "Tessera did not start" >&2; cat "$WORK/tessera.log" >&2; exit 1; }
PORT=$PROXY_PORT
rss() { awk "/^$1:/ {print \$2}" "/proc/$TPID/status"; }

MYSQL_PWD=app mariadb -h127.0.0.1 -P"$PORT" -uapp big -N -B -e "SELECT 1" >/dev/null
before=$(rss VmRSS)
start=$(date +%s.%N)
rows=$(MYSQL_PWD=app mariadb --quick -h127.0.0.1 -P"$PORT" -uapp big -N -B -e "SELECT * FROM t ORDER BY x" | wc -l)
secs=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
peak=$(rss VmHWM)
grown=$(( (peak - before) / 1024 ))
echo "rows read by the client: $rows (expected $((ROWS * 4))) in ${secs}s"
echo "Tessera RSS before: $((before / 1024)) MB, peak after: $((peak / 1024)) MB, grown: ${grown} MB"
echo "EXPLAIN ROUTE SELECT * FROM t ORDER BY x LIMIT 10:"
MYSQL_PWD=app mariadb -h127.0.0.1 -P"$PORT" -uapp big -N -B -e "EXPLAIN ROUTE SELECT * FROM t ORDER BY x LIMIT 10"
[ "$rows" = $((ROWS * 4)) ] || { echo "FAIL: wrong row count" >&2; exit 1; }
[ "$grown" -lt 64 ] || { echo "FAIL: RSS grew by ${grown} MB" >&2; exit 1; }
echo PASS
