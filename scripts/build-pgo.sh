#!/usr/bin/env bash
# A profile-guided release build of Tessera (PGO): the hot path's code laid out together.
#
#   scripts/build-pgo.sh            -> target/pgo/release/tessera
#
# Why: Tessera's user-space cost per statement is mostly instruction-cache misses, not
# instructions. Its per-statement path runs through more code than the 32 KiB L1 instruction
# cache holds (callgrind's cache simulation, read_only: 387 L1i misses per statement against
# 0.1 for the zero-logic relay; docs/benchmarks.md, "Profile-guided build"). PGO tells LLVM
# which functions and branches are hot, so it inlines and lays out code by use.
#
# Steps: an instrumented build (target/pgo-gen), a training run through it (a sandbox MariaDB
# of 4 x 10k sysbench rows; point_select, read_only and read_write with prepared statements,
# point_select and read_only as text, at 16 and 64 threads; then scripts/sysbench-sharded.sh's
# sharded workloads through a second Tessera), the profiles merged with the toolchain's
# llvm-profdata (rustup component llvm-tools, installed here when missing), then the
# optimised build (target/pgo). Two release builds of every crate and two minutes of training:
# about 8 minutes on 2 cores with the crates downloaded.
# TRAIN_TIME=SECONDS sets each training run's length (default 8); SINGLE_WEIGHT (default 16) how
# much the single-server training weighs against the sharded one in the merged profile.
set -euo pipefail
cd "$(dirname "$0")/.."

TRAIN_TIME=${TRAIN_TIME:-8}
WORK=$(mktemp -d /tmp/tessera-pgo.XXXXXX)
PIDS=()
BIN=target/pgo-gen/release/tessera
# shellcheck source=scripts/lib/cluster.sh
source scripts/lib/cluster.sh
trap cleanup EXIT

profdata() {
  local sysroot tool
  sysroot=$(rustc --print sysroot)
  tool=$(find "$sysroot/lib/rustlib" -name llvm-profdata -type f 2>/dev/null | head -1)
  if [ -z "$tool" ]; then
    rustup component add llvm-tools >&2
    tool=$(find "$sysroot/lib/rustlib" -name llvm-profdata -type f | head -1)
  fi
  [ -n "$tool" ] || { echo "llvm-profdata not found (rustup component add llvm-tools)" >&2; exit 1; }
  echo "$tool"
}
PROFDATA=$(profdata)

echo "== instrumented build (target/pgo-gen)" >&2
# A fixed profile directory keeps the flags, and so the build, the same from run to run.
RAW=$PWD/target/pgo-gen/profiles
rm -rf "$RAW"
RUSTFLAGS="-Cprofile-generate=$RAW" CARGO_TARGET_DIR=target/pgo-gen \
  cargo build --release -p tessera-proxy --bin tessera

echo "== training run" >&2
# Each stage writes its own profiles (LLVM_PROFILE_FILE); this sandbox's own are left out.
start_one_server env LLVM_PROFILE_FILE="$WORK/sandbox-%p.profraw"
PROXY_PORT=$(free_port)
write_one_server_config "$WORK/tessera.toml" "$PROXY_PORT" "127.0.0.1:$BACKEND_PORT" 1
LLVM_PROFILE_FILE=$RAW/single-%p.profraw "$BIN" --config "$WORK/tessera.toml" >"$WORK/tessera.log" 2>&1 &
TESSERA_PID=$!
for _ in $(seq 300); do
  MYSQL_PWD=app mariadb -h127.0.0.1 -P"$PROXY_PORT" -uapp -e 'SELECT 1' >/dev/null 2>&1 && break
  sleep 0.2
done

SB=(--mysql-host=127.0.0.1 --mysql-db=sbtest --tables=4 --table-size=10000)
sysbench oltp_read_write "${SB[@]}" --mysql-port="$BACKEND_PORT" --mysql-user=tessera \
  --mysql-password=tessera prepare >/dev/null
train() { # WORKLOAD THREADS [sysbench options]
  local workload=$1 threads=$2
  shift 2
  sysbench "$workload" "${SB[@]}" --mysql-port="$PROXY_PORT" --mysql-user=app --mysql-password=app \
    --threads="$threads" --time="$TRAIN_TIME" "$@" run | awk -v w="$workload" -v t="$threads" \
    '/queries:/ {print "   " w " at " t " threads: " $2 " statements"}' >&2
}
train oltp_point_select 16
train oltp_point_select 64
train oltp_read_only 16
train oltp_read_only 64
train oltp_read_write 16
train oltp_point_select 16 --db-ps-mode=disable
train oltp_read_only 16 --db-ps-mode=disable
# Sharded statements (routing, scatter and merge, the sequence) through a second Tessera.
LLVM_PROFILE_FILE=$RAW/sharded-%p.profraw TESSERA_BIN=$BIN bash scripts/sysbench-sharded.sh --time "$TRAIN_TIME" |
  sed 's/^/   sharded: /' >&2

# The profile is written when the process exits: stop it the way an operator does.
kill -TERM "$TESSERA_PID"
wait "$TESSERA_PID" || true
# The single-server statements weigh SINGLE_WEIGHT times the sharded ones: how hot a block is
# counts relative to the whole profile, and the sharded merges' loops, unweighted, made the
# common path merely warm. read_only instructions (L1i misses) per statement: unweighted 8,159
# (134), weight 4 7,469 (131), weight 16 7,133 (114), the single-server profile alone 6,845.
weighted=()
for f in "$RAW"/single-*.profraw; do weighted+=("--weighted-input=${SINGLE_WEIGHT:-16},$f"); done
for f in "$RAW"/sharded-*.profraw; do weighted+=("--weighted-input=1,$f"); done
"$PROFDATA" merge -o "$WORK/tessera.profdata" "${weighted[@]}"
# Named by its content: cargo does not fingerprint the file a flag names, so a new profile
# must change the flags to rebuild every crate with it.
mkdir -p target/pgo
rm -f target/pgo/tessera-*.profdata
PROFILE=$PWD/target/pgo/tessera-$(sha256sum "$WORK/tessera.profdata" | cut -c1-12).profdata
cp "$WORK/tessera.profdata" "$PROFILE"

echo "== optimised build (target/pgo)" >&2
RUSTFLAGS="-Cprofile-use=$PROFILE" \
  CARGO_TARGET_DIR=target/pgo cargo build --release -p tessera-proxy --bin tessera
echo "target/pgo/release/tessera"
