#!/usr/bin/env bash
# Turns/s, server CPU per turn and the writer's units per transaction (group commit,
# docs/src/load-and-memory.md) with everything pinned to CORES by taskset: the server, the
# fake LLM and the load tool share them, as in the side-by-side method. ASKERS clients run
# 3-turn `ask` loops back to back against rummy-load's fake LLM (which answers at once).
#
#   cargo build --release --bins --features testing
#   benches/group_commit.sh [SERVER_BINARY] [CORES] [SECONDS] [ASKERS]
#       # defaults: target/release/rummy, 0, 20 s, 50 askers; CORES as taskset's -c (0,1)
#
# RUMMY_LOAD names another rummy-load binary (default target/release/rummy-load). The units
# and transactions are read from /metrics (`rummy_store_units_total`,
# `rummy_store_transactions_total`; a server without the second prints no ratio).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
SERVER=${1:-target/release/rummy}
CORES=${2:-0}
SECONDS_LOADED=${3:-20}
ASKERS=${4:-50}
LOAD=${RUMMY_LOAD:-target/release/rummy-load}
[ -x "$SERVER" ] && [ -x "$LOAD" ] || {
  echo "build first: cargo build --release --bins --features testing" >&2
  exit 1
}
source benches/common.sh

# A counter of the server's /metrics (0 when it has none).
metric() {
  curl -sf "http://127.0.0.1:$PORT/metrics" | awk -v name="$1" '$1 == name {print $2}' | grep . || echo 0
}

LLM_PORT=$(free_port)
taskset -c "$CORES" "$LOAD" fake-llm --port "$LLM_PORT" --turns 3 >/dev/null 2>&1 &
PIDS+=($!)
PORT=$(free_port)
mkdir -p "$WORK/home"
RUMMY_HOME="$WORK/home" PORT=$PORT RUMMY_LOG=warn RUMMY_METRICS_OPEN=true \
  OPENAI_BASE_URL="http://127.0.0.1:$LLM_PORT" RUMMY_MODEL_fake=openai/fake \
  RUMMY_CONTEXT_fake=32768 taskset -c "$CORES" "$SERVER" >"$WORK/server.log" 2>&1 &
SERVER_PID=$!
PIDS+=($SERVER_PID)
wait_ready "$PORT"
HZ=$(getconf CLK_TCK)
taskset -c "$CORES" "$LOAD" --url "ws://127.0.0.1:$PORT/" --connections 0 --asks 1 --seconds 2 >/dev/null
units_before=$(metric rummy_store_units_total)
transactions_before=$(metric rummy_store_transactions_total)
before=$(ticks "$SERVER_PID")
report=$(taskset -c "$CORES" "$LOAD" --url "ws://127.0.0.1:$PORT/" --connections 0 \
  --asks "$ASKERS" --seconds "$SECONDS_LOADED" --ask-timeout-secs 600 \
  --llm-url "http://127.0.0.1:$LLM_PORT")
after=$(ticks "$SERVER_PID")
units=$(($(metric rummy_store_units_total) - units_before))
transactions=$(($(metric rummy_store_transactions_total) - transactions_before))
turns=$(grep -oE 'LLM completions: [0-9]+' <<<"$report" | grep -oE '[0-9]+$')
rate=$(grep -oE '[0-9.]+ turns/s' <<<"$report" | grep -oE '^[0-9.]+')
python3 - "$SERVER" "$CORES" "$turns" "$rate" "$HZ" "$((after - before))" "$units" "$transactions" <<'PY'
import sys
server, cores, turns, rate, hz, ticks, units, transactions = sys.argv[1:]
turns, hz, ticks, units, transactions = int(turns), int(hz), int(ticks), int(units), int(transactions)
cpu = ticks / hz * 1000
line = f"{server} on cores {cores}: {turns} turns, {rate} turns/s, CPU {cpu / max(turns, 1):.2f} ms per turn"
line += f", {units} units"
if transactions:
    line += f" in {transactions} transactions ({units / transactions:.2f} per transaction)"
print(line)
PY
grep -E '^  status|failed to open' <<<"$report" | sed 's/^/  /' >&2 || true
