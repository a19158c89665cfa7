#!/usr/bin/env bash
# Brings up docker/compose.yaml (rummy behind nginx) on a throwaway projects directory and
# token, checks it from outside as an editor would, and takes it down again (volumes too).
#
#   docker/smoke.sh            # with `docker compose`
#   COMPOSE=podman-compose docker/smoke.sh
#
# What it checks, through nginx on RUMMY_PUBLISH (default 18080):
#   - rummy's image health check passes (compose starts nginx only after it does)
#   - GET /healthz answers 200
#   - a WebSocket without the token gets 401; with it, `init` of /projects/demo binds,
#     `init` of /etc is refused (outside RUMMY_PROJECTS_DIR), and `getRuns` answers
#   - rummy's log is JSON lines, and the connection's line names this host (nginx's
#     X-Forwarded-For, trusted from nginx's address) rather than nginx
# Needs python3 with the `websockets` package on the host. Exits non-zero on the first
# failed check, printing the services' logs.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")"
COMPOSE=${COMPOSE:-docker compose}
export RUMMY_PUBLISH=${RUMMY_PUBLISH:-18080}
RUMMY_AUTH_TOKEN=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
export RUMMY_AUTH_TOKEN
RUMMY_PROJECTS=$(mktemp -d)
export RUMMY_PROJECTS
mkdir "$RUMMY_PROJECTS/demo"
echo 'print("hello")' > "$RUMMY_PROJECTS/demo/hello.py"
# rummy runs as uid 10001 in the container: the projects must be readable by it.
chmod -R a+rX "$RUMMY_PROJECTS"

down() {
  $COMPOSE -f compose.yaml down -v >/dev/null 2>&1 || true
  rm -rf "$RUMMY_PROJECTS"
}
fail() {
  echo "smoke: FAILED: $*" >&2
  $COMPOSE -f compose.yaml logs >&2 || true
  down
  exit 1
}
trap down EXIT

$COMPOSE -f compose.yaml up -d >/dev/null || fail "compose up"

for _ in $(seq 1 60); do
  if [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$RUMMY_PUBLISH/healthz")" = 200 ]; then
    break
  fi
  sleep 1
done
[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$RUMMY_PUBLISH/healthz")" = 200 ] \
  || fail "GET /healthz through nginx"

python3 - "$RUMMY_PUBLISH" "$RUMMY_AUTH_TOKEN" <<'EOF' || fail "the WebSocket checks"
import asyncio, json, sys
import websockets

port, token = sys.argv[1], sys.argv[2]
url = f"ws://127.0.0.1:{port}/"


async def call(ws, id, method, params):
    await ws.send(json.dumps({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
    while True:
        reply = json.loads(await ws.recv())
        if reply.get("id") == id:
            return reply


async def main():
    try:
        async with websockets.connect(url):
            raise SystemExit("a connection without the token was accepted")
    except websockets.exceptions.InvalidStatus as refused:
        assert refused.response.status_code == 401, refused.response.status_code
    headers = {"Authorization": f"Bearer {token}"}
    async with websockets.connect(url, additional_headers=headers) as ws:
        outside = await call(ws, 1, "init", {"name": "etc", "projectRoot": "/etc"})
        assert "error" in outside, outside
        bound = await call(ws, 2, "init", {"name": "demo", "projectRoot": "/projects/demo"})
        assert "result" in bound, bound
        runs = await call(ws, 3, "getRuns", {})
        assert "result" in runs, runs
    print("smoke: WebSocket through nginx: 401 without the token; init inside /projects "
          "binds, /etc is refused; getRuns answers")


asyncio.run(main())
EOF

logs=$($COMPOSE -f compose.yaml logs rummy 2>&1)
connection=$(grep 'connection opened' <<<"$logs" | tail -n 1 || true)
[ -n "$connection" ] || fail "no log line for the accepted connection"
python3 -c 'import json, sys; json.loads(sys.argv[1])' "${connection#*| }" 2>/dev/null \
  || python3 -c 'import json, sys; json.loads(sys.argv[1])' "$connection" \
  || fail "rummy's log line is not JSON: $connection"
grep -q '172.30.44.20' <<<"$connection" && fail "the connection is logged as nginx's: $connection"
echo "smoke: rummy logs JSON lines; the connection's line: $connection"
echo "smoke: OK"
