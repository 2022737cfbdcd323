# Shared by the measurement scripts: a sandbox primary + 2 GTID replicas on free ports, and
# cleanup of everything started. Source it after setting BIN (the tessera binary) and WORK.
# Usage: PIDS=(); trap cleanup EXIT; start_sandbox   -> PORTS[0..2], DIRS[0..2]

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$WORK"
}

# start_sandbox: `tessera sandbox --servers 3 --replicas` in the background; sets PORTS and DIRS.
start_sandbox() {
  "$BIN" sandbox --servers 3 --replicas >"$WORK/sandbox.log" 2>&1 &
  PIDS+=($!)
  for _ in $(seq 300); do grep -q "^s2:" "$WORK/sandbox.log" && break; sleep 0.2; done
  mapfile -t PORTS < <(sed -n 's/^s[0-9]: .* -P\([0-9]*\) .*/\1/p' "$WORK/sandbox.log")
  mapfile -t DIRS < <(sed -n 's/^s[0-9]: .*(data dir \(.*\))$/\1/p' "$WORK/sandbox.log")
  [ "${#PORTS[@]}" = 3 ] || { echo "sandbox did not start" >&2; cat "$WORK/sandbox.log" >&2; exit 1; }
}

# wait_serving ADMIN N: until N servers of the Tessera with admin endpoint ADMIN serve reads.
wait_serving() {
  for _ in $(seq 100); do
    [ "$("$BIN" status --admin "$1" 2>/dev/null | grep -c "serving reads")" = "$2" ] && return 0
    sleep 0.2
  done
  echo "Tessera at $1: fewer than $2 servers serving reads" >&2
  return 1
}

# start_one_server [env NAME=VALUE...]: `tessera sandbox --servers 1` in the background (with
# that environment); sets BACKEND_PORT and BACKEND_DIR.
start_one_server() {
  "$@" "$BIN" sandbox --servers 1 >"$WORK/sandbox.log" 2>&1 &
  PIDS+=($!)
  for _ in $(seq 300); do grep -q "^s0:" "$WORK/sandbox.log" && break; sleep 0.2; done
  BACKEND_PORT=$(sed -n 's/^s0: .* -P\([0-9]*\) .*/\1/p' "$WORK/sandbox.log")
  BACKEND_DIR=$(sed -n 's/^s0: .*(data dir \(.*\))$/\1/p' "$WORK/sandbox.log")
  [ -n "$BACKEND_PORT" ] || { echo "sandbox did not start" >&2; cat "$WORK/sandbox.log" >&2; exit 1; }
}

# write_one_server_config FILE PORT BACKEND_ADDRESS WORKERS: a Tessera on PORT in front of one
# sandbox server (its account tessera/tessera), clients app/app, a pool of at most 64.
write_one_server_config() {
  cat >"$1" <<CONF
[server]
listen = "127.0.0.1:$2"
worker_threads = $4
[pool]
max_size = 64
[[users]]
name = "app"
password = "app"
[[groups]]
name = "main"
user = "tessera"
password = "tessera"
primary = { address = "$3" }
CONF
}
