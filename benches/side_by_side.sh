#!/usr/bin/env bash
# The original rummy 0.3.1 (Node.js) and this rummy side by side (docs/src/load-and-memory.md,
# "Side by side with the original"): each server on a fresh store in turn, ASKERS rummy-load
# clients running 3-turn `ask` loops for SECONDS against rummy-load's fake LLM (which answers
# at once), everything on this machine's cores. Per server it prints the model requests served
# per second and the server process's user + system time per model request; ROUNDS rounds
# alternate the two. The load tool drives both alike: the original takes the same `init`,
# `ask` and model settings (`OPENAI_BASE_URL`, `RUMMY_MODEL_fake`, `RUMMY_CONTEXT_fake`).
#
#   cargo build --release --bins --features testing
#   benches/side_by_side.sh ORIGINAL_DIR NODE [ASKERS] [SECONDS] [ROUNDS]
#       # ORIGINAL_DIR: a checkout of possumtech/rummy at bf4f6e7 with its dependencies
#       #   installed (`npm ci --omit=dev`); NODE: a node of version 25 or later (it needs
#       #   node:sqlite); defaults: 50 askers, 20 s, 2 rounds
#
# The original names a run after its model and the millisecond it was made, so asks made in
# the same millisecond collide (-32603 "UNIQUE constraint failed: runs.alias") and fail at
# once: compare per model request, and count only the loops that ended 200.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ORIGINAL=${1:?ORIGINAL_DIR: a checkout of the original at bf4f6e7 with its dependencies}
NODE=${2:?NODE: a node binary of version 25 or later}
ASKERS=${3:-50}
SECONDS_LOADED=${4:-20}
ROUNDS=${5:-2}
SERVER=${RUMMY_SERVER:-target/release/rummy}
LOAD=${RUMMY_LOAD:-target/release/rummy-load}
[ -x "$SERVER" ] && [ -x "$LOAD" ] || {
  echo "build first: cargo build --release --bins --features testing" >&2
  exit 1
}
source benches/common.sh

# The model requests the fake has served so far.
served() {
  curl -sf "http://127.0.0.1:$LLM_PORT/stats" | python3 -c 'import json, sys; print(json.load(sys.stdin)["completions"])'
}

# The original gives its WebSocket server only a port, so it would listen on every
# interface: this preload makes a listen() given a bare port listen on loopback.
cat >"$WORK/loopback.mjs" <<'JS'
import net from "node:net";
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  if (typeof args[0] === "number" && (args[1] == null || typeof args[1] === "function")) {
    args.splice(1, args[1] == null ? 1 : 0, "127.0.0.1");
  }
  return listen.apply(this, args);
};
JS

LLM_PORT=$(free_port)
"$LOAD" fake-llm --port "$LLM_PORT" --turns 3 >/dev/null 2>&1 &
PIDS+=($!)
HZ=$(getconf CLK_TCK)
MODEL_ENV=(OPENAI_BASE_URL="http://127.0.0.1:$LLM_PORT" RUMMY_MODEL_fake=openai/fake RUMMY_CONTEXT_fake=32768)

# Starts WHO (original or rummy) on a fresh store and PORT; sets SERVER_PID.
start() {
  local who=$1 port=$2 home=$3
  if [ "$who" = original ]; then
    (cd "$ORIGINAL" && exec env RUMMY_HOME="$home" RUMMY_DB_PATH="$home/load.db" PORT="$port" \
      "${MODEL_ENV[@]}" "$NODE" --env-file=.env.example --import "$WORK/loopback.mjs" service.js) \
      >"$home/server.log" 2>&1 &
    SERVER_PID=$!
    for _ in $(seq 1 600); do grep -q 'Service Operational' "$home/server.log" && return 0; sleep 0.1; done
  else
    env RUMMY_HOME="$home" PORT="$port" RUMMY_LOG=warn "${MODEL_ENV[@]}" "$SERVER" >"$home/server.log" 2>&1 &
    SERVER_PID=$!
    wait_ready "$port" && return 0
  fi
  echo "$who did not start: $home/server.log" >&2
  return 1
}

measure() {
  local who=$1 port home
  port=$(free_port)
  home=$(mktemp -d -p "$WORK")
  start "$who" "$port" "$home"
  PIDS+=("$SERVER_PID")
  "$LOAD" --url "ws://127.0.0.1:$port/" --connections 0 --asks 1 --seconds 2 >/dev/null
  local before_requests before_ticks report
  before_requests=$(served)
  before_ticks=$(ticks "$SERVER_PID")
  report=$("$LOAD" --url "ws://127.0.0.1:$port/" --connections 0 --asks "$ASKERS" \
    --seconds "$SECONDS_LOADED" --ask-timeout-secs 600)
  local used=$(($(ticks "$SERVER_PID") - before_ticks)) requests=$(($(served) - before_requests))
  kill "$SERVER_PID"
  wait "$SERVER_PID" 2>/dev/null || true
  local ended failed
  ended=$(grep -oE 'status 200 +[0-9]+' <<<"$report" | grep -oE '[0-9]+$' || echo 0)
  failed=$(grep -oE 'status error -32603 +[0-9]+' <<<"$report" | grep -oE '[0-9]+$' || echo 0)
  python3 - "$who" "$requests" "$used" "$HZ" "$SECONDS_LOADED" "$ended" "$failed" <<'PY'
import sys
who, requests, used, hz, seconds, ended, failed = sys.argv[1], *map(int, sys.argv[2:])
cpu = used / hz * 1000
print(f"{who:8} {requests / seconds:7.1f} model requests/s, {cpu / max(requests, 1):.2f} ms CPU per request, "
      f"{ended} loops ended 200, {cpu / max(ended, 1):.2f} ms CPU per loop, {failed} asks failed -32603")
PY
}

for _ in $(seq 1 "$ROUNDS"); do
  measure original
  measure rummy
done
