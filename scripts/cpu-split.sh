#!/usr/bin/env bash
# Where the CPU of one sysbench run goes, per statement: sysbench, the proxy, mariadbd, and the
# whole machine (busy and idle), read from /proc before and after. For comparing two proxies
# (or builds) in front of one server: interleave runs, the machine's load moves between them.
#
#   scripts/cpu-split.sh LABEL PORT PROXY_PID [WORKLOAD] [THREADS] [SECONDS]
#
# WORKLOAD is a sysbench oltp_* name (default oltp_read_only), THREADS 16, SECONDS 10. The
# tables are sysbench's (4 x TABLE_SIZE rows, default 100000) in database sbtest; the account
# is SB_USER / SB_PASSWORD (default bench / bench). One line per run, times in microseconds
# per statement as user/system. SB_EXTRA adds sysbench options (e.g. --db-ps-mode=disable).
set -euo pipefail
(($# >= 3)) || { sed -n '2,11p' "$0"; exit 2; }
LABEL=$1 PORT=$2 PROXY=$3 WORKLOAD=${4:-oltp_read_only} THREADS=${5:-16} SECONDS_=${6:-10}
SERVER=$(pgrep -x mariadbd | head -1) || { echo "no mariadbd running" >&2; exit 1; }
TICK=$(getconf CLK_TCK)
OUT=$(mktemp)
read -ra EXTRA <<<"${SB_EXTRA:-}"
trap 'rm -f "$OUT"' EXIT

times_of() { awk '{print $14, $15}' "/proc/$1/stat"; }
machine() { head -1 /proc/stat; }

read -r pu0 ps0 < <(times_of "$PROXY")
read -r mu0 ms0 < <(times_of "$SERVER")
read -ra c0 < <(machine)
sysbench "$WORKLOAD" --mysql-host=127.0.0.1 --mysql-port="$PORT" --mysql-user="${SB_USER:-bench}" \
    --mysql-password="${SB_PASSWORD:-bench}" --mysql-db=sbtest --tables=4 \
    --table-size="${TABLE_SIZE:-100000}" --threads="$THREADS" --time="$SECONDS_" "${EXTRA[@]}" run >"$OUT" 2>&1 &
bench=$!
read -r su0 ss0 < <(times_of "$bench")
su1=$su0 ss1=$ss0
# sysbench's own times, read until it exits (its /proc entry goes with it).
while read -r u s < <(times_of "$bench" 2>/dev/null); do
    su1=$u ss1=$s
    sleep 0.2
done
wait "$bench" || { cat "$OUT" >&2; exit 1; }
read -r pu1 ps1 < <(times_of "$PROXY")
read -r mu1 ms1 < <(times_of "$SERVER")
read -ra c1 < <(machine)

queries=$(awk '/queries:/ {print $2; exit}' "$OUT")
qps=$(awk -F'[()]' '/queries:/ {split($2, a, " "); print a[1]; exit}' "$OUT")
busy=$(((c1[1] - c0[1]) + (c1[2] - c0[2]) + (c1[3] - c0[3]) + (c1[6] - c0[6]) + (c1[7] - c0[7])))
idle=$(((c1[4] - c0[4]) + (c1[5] - c0[5])))
per() { awk -v t="$1" -v k="$TICK" -v q="$queries" 'BEGIN {printf "%.2f", t * 1e6 / k / q}'; }
echo "$LABEL $WORKLOAD threads=$THREADS qps=$qps |" \
    "sysbench $(per $((su1 - su0)))/$(per $((ss1 - ss0)))" \
    "proxy $(per $((pu1 - pu0)))/$(per $((ps1 - ps0)))" \
    "mariadbd $(per $((mu1 - mu0)))/$(per $((ms1 - ms0)))" \
    "machine busy $(per "$busy") idle $(per "$idle")"
