# What the load scripts of benches/ share; each sources it after `cd`-ing to the checkout.
# WORK is a scratch directory and PIDS the processes started, both gone when the script exits.
WORK=$(mktemp -d)
PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Clock ticks of user + system time of a process.
ticks() {
  local fields
  read -ra fields <<<"$(sed 's/.*) //' "/proc/$1/stat")"
  echo $((fields[11] + fields[12]))
}

# Waits for a rummy on port $1 to be ready, for at most $2 tenths of a second (default 600).
wait_ready() {
  for _ in $(seq 1 "${2:-600}"); do
    curl -sf "http://127.0.0.1:$1/readyz" >/dev/null && return 0
    sleep 0.1
  done
  echo "rummy on port $1 did not become ready" >&2
  return 1
}
