#!/usr/bin/env bash
# Instructions per turn of a rummy server with default settings (docs/src/load-and-memory.md, "Work per turn"):
# the server runs under `valgrind --tool=callgrind` uninstrumented, one client asks
# WARMUP 3-turn `ask` loops against rummy-load's fake LLM (which answers at once), then
# instrumentation is switched on for LOOPS more loops, one after the other, and the instructions
# the server ran meanwhile are divided by the model requests the fake served (the turns, and
# memory's session notes' refreshes) and by the loops. A fixed workload, unlike
# benches/cpu_per_turn.sh's timed one, so two builds compare turn for turn; the figure is
# recorded in docs/src/load-and-memory.md, never asserted. Release binaries, everything on loopback:
#
#   cargo build --release --bins --features testing
#   benches/callgrind-turn.sh [SERVER_BINARY] [LOOPS] [WARMUP] [LOOPS_PER_RUN]
#       # defaults: target/release/rummy, 50 loops, 5 warm-up loops, 1 loop a run
#
# LOOPS_PER_RUN above 1 asks that many loops in each run before starting a new one (the
# measured loops in runs of their own, apart from the warm-up's): a longer run's turns read,
# tell and keep more of its log.
#
# RUMMY_LOAD names another rummy-load binary (default target/release/rummy-load);
# CALLGRIND_OUT=FILE keeps the profile of the measured loops (callgrind_annotate FILE).
# SERVER_BINARY may be another build (a checkout of an older commit): the load tool and the
# fake LLM are always this checkout's. Instruction counts hardly depend on the machine's
# other load (threads' timers and wake-ups move them by a fraction of a percent).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
SERVER=${1:-target/release/rummy}
LOOPS=${2:-50}
WARMUP=${3:-5}
LOOPS_PER_RUN=${4:-1}
LOAD=${RUMMY_LOAD:-target/release/rummy-load}
[ -x "$SERVER" ] && [ -x "$LOAD" ] || {
  echo "build first: cargo build --release --bins --features testing" >&2
  exit 1
}
command -v valgrind >/dev/null && command -v callgrind_control >/dev/null || {
  echo "valgrind (with callgrind_control) is needed: apt-get install valgrind" >&2
  exit 1
}
source benches/common.sh

# The model requests the fake has served so far.
served() {
  curl -sf "http://127.0.0.1:$LLM_PORT/stats" | python3 -c 'import json, sys; print(json.load(sys.stdin)["completions"])'
}

# $1 ask loops, one after the other, LOOPS_PER_RUN to a run.
loops() {
  "$LOAD" --url "ws://127.0.0.1:$PORT/" --connections 0 --asks 1 --requests "$1" \
    --loops-per-run "$LOOPS_PER_RUN" \
    --seconds 3600 --ask-timeout-secs 600 --llm-url "http://127.0.0.1:$LLM_PORT" >/dev/null
}

LLM_PORT=$(free_port)
"$LOAD" fake-llm --port "$LLM_PORT" --turns 3 >/dev/null 2>&1 &
PIDS+=($!)
PORT=$(free_port)
mkdir -p "$WORK/home"
RUMMY_HOME="$WORK/home" PORT=$PORT RUMMY_LOG=warn OPENAI_BASE_URL="http://127.0.0.1:$LLM_PORT" \
  RUMMY_MODEL_fake=openai/fake RUMMY_CONTEXT_fake=32768 \
  valgrind --tool=callgrind --instr-atstart=no --dump-instr=no \
  --callgrind-out-file="$WORK/callgrind.out" "$SERVER" >"$WORK/server.log" 2>&1 &
SERVER_PID=$!
PIDS+=($SERVER_PID)
wait_ready "$PORT" 1200
loops "$WARMUP"
before=$(served)
callgrind_control --instr=on "$SERVER_PID" >/dev/null 2>&1
loops "$LOOPS"
callgrind_control --dump "$SERVER_PID" >/dev/null 2>&1
callgrind_control --instr=off "$SERVER_PID" >/dev/null 2>&1
after=$(served)
for _ in $(seq 1 100); do
  dump=$(ls -t "$WORK"/callgrind.out.* 2>/dev/null | head -n 1 || true)
  [ -n "$dump" ] && grep -qE '^(summary|totals):' "$dump" && break
  sleep 0.1
done
instructions=$(grep -E '^(summary|totals):' "$dump" | head -n 1 | awk '{print $2}')
[ -n "${CALLGRIND_OUT:-}" ] && cp "$dump" "$CALLGRIND_OUT"
python3 - "$SERVER" "$((after - before))" "$LOOPS" "$instructions" "$LOOPS_PER_RUN" <<'EOF'
import sys
server, requests, loops, instructions, per_run = sys.argv[1], *map(int, sys.argv[2:])
print(f"server {server}: {loops} loops of 3 turns, {per_run} a run, {requests} model requests")
print(f"  instructions {instructions / 1e6:.1f} M: {instructions / max(requests, 1) / 1e6:.2f} M per "
      f"model request, {instructions / max(loops, 1) / 1e6:.2f} M per loop")
EOF
