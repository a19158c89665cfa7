#!/usr/bin/env bash
# CPU per turn of a rummy server with default settings (docs/src/load-and-memory.md): the
# server's user + system time, and with CALLGRIND=1 its instructions counted by valgrind,
# divided by the model calls it made while ASKERS clients ran 3-turn `ask` loops back to
# back against rummy-load's fake LLM (which answers at once). Release binaries, everything
# on loopback:
#
#   cargo build --release --bins --features testing
#   benches/cpu_per_turn.sh [SERVER_BINARY] [SECONDS] [ASKERS]
#       # defaults: target/release/rummy, 20 s, 5 askers
#   CALLGRIND=1 benches/cpu_per_turn.sh target/release/rummy 20 5
#   PERF_OUT=perf.data benches/cpu_per_turn.sh target/release/rummy 20 5
#       # also samples the server's stacks with `perf record -g` while it is loaded
#
# RUMMY_LOAD names another rummy-load binary (default target/release/rummy-load).
# SERVER_BINARY may be another build (a checkout of an older commit): the load tool and the
# fake LLM are always this checkout's. A "turn" is one chat completion the fake served (with
# default settings that includes the session notes' sidecar calls); "per loop" divides by
# the `ask` loops that ended. Instruction counts do not depend on the machine's other load;
# CPU time does (state the conditions with a figure).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
SERVER=${1:-target/release/rummy}
SECONDS_LOADED=${2:-20}
ASKERS=${3:-5}
LOAD=${RUMMY_LOAD:-target/release/rummy-load}
[ -x "$SERVER" ] && [ -x "$LOAD" ] || {
  echo "build first: cargo build --release --bins --features testing" >&2
  exit 1
}
source benches/common.sh

LLM_PORT=$(free_port)
"$LOAD" fake-llm --port "$LLM_PORT" --turns 3 >/dev/null 2>&1 &
PIDS+=($!)
PORT=$(free_port)
mkdir -p "$WORK/home"
RUNNER=()
if [ "${CALLGRIND:-0}" = 1 ]; then
  RUNNER=(valgrind --tool=callgrind --callgrind-out-file="$WORK/callgrind.out" --dump-instr=no)
fi
RUMMY_HOME="$WORK/home" PORT=$PORT RUMMY_LOG=warn OPENAI_BASE_URL="http://127.0.0.1:$LLM_PORT" \
  RUMMY_MODEL_fake=openai/fake RUMMY_CONTEXT_fake=32768 \
  "${RUNNER[@]}" "$SERVER" >"$WORK/server.log" 2>&1 &
SERVER_PID=$!
PIDS+=($SERVER_PID)
wait_ready "$PORT"
# Under valgrind the server is valgrind's process: its pid is the one started.
HZ=$(getconf CLK_TCK)
# A short warm-up, then counting starts from zero.
"$LOAD" --url "ws://127.0.0.1:$PORT/" --connections 0 --asks 1 --seconds 2 >/dev/null
[ "${CALLGRIND:-0}" = 1 ] && callgrind_control --zero "$SERVER_PID" >/dev/null
before=$(ticks "$SERVER_PID")
if [ -n "${PERF_OUT:-}" ]; then
  perf record -q -F 999 -g -p "$SERVER_PID" -o "$PERF_OUT" >/dev/null 2>&1 &
  PERF_PID=$!
fi
report=$("$LOAD" --url "ws://127.0.0.1:$PORT/" --connections 0 --asks "$ASKERS" \
  --seconds "$SECONDS_LOADED" --ask-timeout-secs 600 --llm-url "http://127.0.0.1:$LLM_PORT")
after=$(ticks "$SERVER_PID")
if [ -n "${PERF_OUT:-}" ]; then
  kill -INT "$PERF_PID"
  wait "$PERF_PID" || true
fi
instructions=0
if [ "${CALLGRIND:-0}" = 1 ]; then
  callgrind_control --dump "$SERVER_PID" >/dev/null
  sleep 1
  dump=$(ls -t "$WORK"/callgrind.out.* | head -n 1)
  instructions=$(grep -E '^(summary|totals):' "$dump" | head -n 1 | awk '{print $2}')
fi
turns=$(grep -oE 'LLM completions: [0-9]+' <<<"$report" | grep -oE '[0-9]+$')
loops=$(grep -oE 'ask loops: [0-9]+' <<<"$report" | grep -oE '[0-9]+$')
python3 - "$SERVER" "$turns" "$loops" "$HZ" "$((after - before))" "$instructions" <<'EOF'
import sys
server, turns, loops, hz, ticks, instructions = sys.argv[1:]
turns, loops, hz, ticks, instructions = int(turns), int(loops), int(hz), int(ticks), int(instructions)
cpu = ticks / hz * 1000
print(f"server {server}: {turns} turns, {loops} loops")
print(f"  CPU {cpu:.0f} ms: {cpu / max(turns, 1):.2f} ms per turn, {cpu / max(loops, 1):.2f} ms per loop")
if instructions:
    print(f"  instructions {instructions / 1e6:.1f} M: {instructions / max(turns, 1) / 1e6:.2f} M per turn, "
          f"{instructions / max(loops, 1) / 1e6:.2f} M per loop")
EOF
grep -E '^  status|failed to open' <<<"$report" | sed 's/^/  /' >&2 || true
