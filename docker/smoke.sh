#!/usr/bin/env bash
# Brings up docker/compose.yaml (rummy behind nginx) on a throwaway projects directory and
# token, checks it from outside as an editor would, and takes it down again (volumes too).
#
#   docker/smoke.sh            # with `docker compose`
#   COMPOSE=podman-compose docker/smoke.sh
#   SMOKE_OVERRIDE=my-override.yaml docker/smoke.sh   # compose.yaml merged with another file
#
# What it checks, through nginx on RUMMY_PUBLISH (default 18080):
#   - rummy's image health check passes (compose starts nginx only after it does)
#   - GET /healthz answers 200
#   - a WebSocket without the token gets 401; with it, `init` of /projects/demo binds,
#     `init` of /etc is refused (outside RUMMY_PROJECTS_DIR), and `getRuns` answers
#   - the image's health check (`rummy healthcheck`) passes inside the container
#   - rummy's log is JSON lines, and the connection's line names this host (nginx's
#     X-Forwarded-For, trusted from nginx's address) rather than nginx
# Needs python3 with the `websockets` package on the host. Exits non-zero on the first
# failed check, printing the services' logs.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")"
COMPOSE=${COMPOSE:-docker compose}
FILES=(-f compose.yaml)
if [ -n "${SMOKE_OVERRIDE:-}" ]; then
  FILES+=(-f "$(realpath "$SMOKE_OVERRIDE")")
fi
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
  $COMPOSE "${FILES[@]}" down -v >/dev/null 2>&1 || true
  rm -rf "$RUMMY_PROJECTS"
}
fail() {
  echo "smoke: FAILED: $*" >&2
  $COMPOSE "${FILES[@]}" logs >&2 || true
  down
  exit 1
}
trap down EXIT

$COMPOSE "${FILES[@]}" up -d >/dev/null || fail "compose up"

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

$COMPOSE "${FILES[@]}" exec -T rummy rummy healthcheck >/dev/null \
  || fail "the image's health check (rummy healthcheck) inside the container"
echo "smoke: the image's health check passes inside the container"

logs=$($COMPOSE "${FILES[@]}" logs rummy 2>&1)
connection=$(grep 'connection opened' <<<"$logs" | tail -n 1 || true)
[ -n "$connection" ] || fail "no log line for the accepted connection"
# Compose prefixes each line with the service's name (and colours): the line is the JSON in it.
python3 - "$connection" <<'EOF' || fail "rummy's connection log line: $connection"
import json, sys
line = sys.argv[1]
record = json.loads(line[line.index("{"):line.rindex("}") + 1])
addr = record["span"]["client.addr"]
assert addr != "172.30.44.20", "the connection is logged as nginx's address"
print(f"smoke: rummy logs JSON lines; the connection is logged from {addr} (not nginx's)")
EOF
echo "smoke: OK"
