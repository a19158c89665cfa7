#!/usr/bin/env bash
# Sustained hostile load (docs/src/load-and-memory.md): a rummy server with default settings,
# rummy-load's fuzzing model behind it, CLIENTS hostile clients for SECONDS, a fresh client
# probing every second, and the server's memory sampled. Release binaries, on loopback:
#
#   cargo build --release --bins --features testing
#   benches/hostile.sh [SERVER_BINARY] [SECONDS] [CLIENTS] [SEED]
#       # defaults: target/release/rummy, 300 s, 6 clients, seed 1
#
# Extra arguments for the server's environment go in HOSTILE_ENV ("KEY=value KEY=value");
# HOSTILE_JSON=1 prints the report as JSON.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
SERVER=${1:-target/release/rummy}
SECONDS_LOADED=${2:-300}
CLIENTS=${3:-6}
SEED=${4:-1}
LOAD=target/release/rummy-load
[ -x "$SERVER" ] && [ -x "$LOAD" ] || {
  echo "build first: cargo build --release --bins --features testing" >&2
  exit 1
}
WORK=$(mktemp -d)
SERVER_PID=
cleanup() {
  [ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

LLM_PORT=$(free_port)
PORT=$(free_port)
mkdir -p "$WORK/home" "$WORK/projects"
# shellcheck disable=SC2086
env RUMMY_HOME="$WORK/home" PORT="$PORT" RUMMY_LOG=warn RUMMY_PROJECTS_DIR="$WORK/projects" \
  OPENAI_BASE_URL="http://127.0.0.1:$LLM_PORT" ${HOSTILE_ENV:-} \
  "$SERVER" >"$WORK/server.log" 2>&1 &
SERVER_PID=$!
for _ in $(seq 1 300); do
  curl -sf "http://127.0.0.1:$PORT/readyz" >/dev/null && break
  sleep 0.1
done
JSON=()
[ "${HOSTILE_JSON:-0}" = 1 ] && JSON=(--json)
"$LOAD" hostile --url "ws://127.0.0.1:$PORT/" --llm-port "$LLM_PORT" --clients "$CLIENTS" \
  --seconds "$SECONDS_LOADED" --seed "$SEED" --server-pid "$SERVER_PID" \
  --projects-dir "$WORK/projects" "${JSON[@]}"
if grep -qiE 'panicked|panic' "$WORK/server.log"; then
  echo "the server's log mentions a panic:" >&2
  grep -iE 'panicked|panic' "$WORK/server.log" | head -n 5 >&2
fi
