#!/usr/bin/env bash
# Turns per second and CPU per turn of rummy on each store: SQLite, PostgreSQL with one
# instance, PostgreSQL with two instances on one database (docs/src/several-instances.md
# figures). Release binaries, everything on loopback on this machine:
#
#   cargo build --release --bins --features testing
#   benches/instances.sh [SECONDS] [ASKERS]      # defaults: 20 s, 50 askers
#
# RUMMY_BENCH_BIN=DIR takes rummy and rummy-load from DIR instead (another build to compare).
#
# Each row starts fresh servers on a fresh store (PostgreSQL: a throwaway cluster from
# tests/pg/cluster.sh with PostgreSQL's default durability, one new database per row), a
# rummy-load fake LLM whose loops last
# three turns, and `rummy-load --asks ASKERS` (with two instances, the askers alternate
# between them). CPU is user + system time from /proc over the load: rummy's processes, and
# on PostgreSQL the cluster's (its postmaster, with its exited children, and every backend).
# Session notes are off (RUMMY_MEMORY_SESSION_TOKENS=0): their sidecar calls would count as
# turns at the fake LLM.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
SECONDS_LOADED=${1:-20}
ASKERS=${2:-50}
BIN=${RUMMY_BENCH_BIN:-target/release}
[ -x "$BIN/rummy" ] && [ -x "$BIN/rummy-load" ] || {
  echo "build first: cargo build --release --bins --features testing" >&2
  exit 1
}
WORK=$(mktemp -d)
# As root, the cluster runs as `postgres`, which must reach its directory in here.
chmod 755 "$WORK"
PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  [ -d "$WORK/pg" ] && bash tests/pg/cluster.sh stop "$WORK/pg" >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Clock ticks of user + system time of the processes given, children they waited for
# included.
ticks() {
  local total=0 pid fields
  for pid in "$@"; do
    [ -r "/proc/$pid/stat" ] || continue
    # Fields after the command's closing parenthesis: utime is the 12th, then stime,
    # cutime, cstime.
    read -ra fields <<<"$(sed 's/.*) //' "/proc/$pid/stat")"
    total=$((total + fields[11] + fields[12] + fields[13] + fields[14]))
  done
  echo "$total"
}

# The postmaster of the throwaway cluster and its live children.
cluster_pids() {
  local postmaster
  postmaster=$(head -n 1 "$WORK/pg/data/postmaster.pid")
  echo "$postmaster" $(pgrep -P "$postmaster" || true)
}

wait_healthy() {
  for _ in $(seq 1 100); do
    curl -sf "http://127.0.0.1:$1/readyz" >/dev/null && return 0
    sleep 0.1
  done
  echo "rummy on port $1 did not become ready" >&2
  return 1
}

LLM_PORT=$(free_port)
"$BIN/rummy-load" fake-llm --port "$LLM_PORT" --turns 3 >/dev/null 2>&1 &
PIDS+=($!)
HZ=$(getconf CLK_TCK)

# row NAME INSTANCES [DATABASE_URL]
row() {
  local name=$1 instances=$2 database_url=${3:-} urls=() servers=() i port
  for i in $(seq 1 "$instances"); do
    port=$(free_port)
    mkdir -p "$WORK/$name-$i"
    RUMMY_HOME="$WORK/$name-$i" PORT=$port RUMMY_LOG=warn RUMMY_DATABASE_URL=$database_url \
      OPENAI_BASE_URL="http://127.0.0.1:$LLM_PORT" RUMMY_MEMORY_SESSION_TOKENS=0 \
      "$BIN/rummy" >"$WORK/$name-$i.log" 2>&1 &
    servers+=($!)
    PIDS+=($!)
    wait_healthy "$port"
    urls+=(--url "ws://127.0.0.1:$port/")
  done
  local db_pids=() rummy_before db_before report rummy_after db_after
  [ -n "$database_url" ] && read -ra db_pids <<<"$(cluster_pids)"
  rummy_before=$(ticks "${servers[@]}")
  db_before=$(ticks "${db_pids[@]}")
  report=$("$BIN/rummy-load" "${urls[@]}" --connections 0 --asks "$ASKERS" \
    --seconds "$SECONDS_LOADED" --llm-url "http://127.0.0.1:$LLM_PORT")
  rummy_after=$(ticks "${servers[@]}")
  [ -n "$database_url" ] && read -ra db_pids <<<"$(cluster_pids)"
  db_after=$(ticks "${db_pids[@]}")
  local turns
  turns=$(grep -oE 'LLM completions: [0-9]+' <<<"$report" | grep -oE '[0-9]+$')
  python3 - "$name" "$turns" "$SECONDS_LOADED" "$HZ" "$((rummy_after - rummy_before))" \
    "$((db_after - db_before))" <<'EOF'
import sys
name, turns, seconds, hz, rummy, db = sys.argv[1:]
turns, seconds, hz, rummy, db = int(turns), float(seconds), int(hz), int(rummy), int(db)
per_turn = lambda ticks: f"{ticks / hz / turns * 1000:.2f} ms" if turns else "-"
print(f"| {name} | {turns / seconds:.0f} | {per_turn(rummy)} | {per_turn(db) if db else '-'} "
      f"| {per_turn(rummy + db)} |")
EOF
  echo "$report" >"$WORK/$name.report"
  # Anything that did not go as it should, after the table's row.
  grep -E '^[0-9]+ connections|failed to open|^  status' "$WORK/$name.report" | sed "s/^/  $name: /" >&2
  for pid in "${servers[@]}"; do kill "$pid"; done
  wait "${servers[@]}" 2>/dev/null || true
}

echo "| store | turns/s | rummy CPU per turn | PostgreSQL CPU per turn | total CPU per turn |"
echo "| --- | --- | --- | --- | --- |"
row sqlite 1
ADMIN_URL=$(bash tests/pg/cluster.sh start "$WORK/pg" durable 2>/dev/null)
database() {
  psql "$ADMIN_URL" -qc "CREATE DATABASE $1" >/dev/null
  python3 -c 'import sys, urllib.parse as u; p = u.urlparse(sys.argv[1]); print(p._replace(path="/" + sys.argv[2]).geturl())' "$ADMIN_URL" "$1"
}
row "postgresql-1" 1 "$(database bench_one)"
row "postgresql-2" 2 "$(database bench_two)"
