#!/usr/bin/env bash
# What `read_your_writes_wait_ms` changes for a session that writes and reads: scripts/read-split.sh
# with two `session` Tesseras, one without the wait and one with it (see that script).
# Usage: scripts/ryw-wait.sh [--time SECONDS] [--threads N] [--rounds N] [--wait-ms MS]
set -euo pipefail
cd "$(dirname "$0")/.."
ARGS=() WAIT_MS=200
while [ $# -gt 0 ]; do
  case "$1" in
    --wait-ms) WAIT_MS=$2; shift 2 ;;
    --time | --threads | --rounds) ARGS+=("$1" "$2"); shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
exec scripts/read-split.sh --variants "session:0,session:$WAIT_MS" "${ARGS[@]}"
