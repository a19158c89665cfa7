#!/usr/bin/env bash
# Brings up a compose file of docker/ (rummy behind nginx) on a throwaway projects
# directory, token and database password, checks it from outside as an editor would, and
# takes it down again (volumes too).
#
#   docker/smoke.sh                          # compose.yaml, with `docker compose`
#   SMOKE_FILE=compose.postgres.yaml docker/smoke.sh   # PostgreSQL and two instances
#   COMPOSE=podman-compose docker/smoke.sh
#   SMOKE_OVERRIDE=my-override.yaml docker/smoke.sh   # the file merged with another one
#
# What it checks, through nginx on RUMMY_PUBLISH (default 18080):
#   - every rummy instance's health check passes (compose starts nginx only after they do)
#   - GET /healthz answers 200
#   - a WebSocket without the token gets 401; with it, `init` of /etc is refused (outside
#     RUMMY_PROJECTS_DIR), and on one connection per instance `init` of /projects/demo
#     binds and `getRuns` answers; a run made on the first connection (addModel, startRun,
#     set) is read back on the last one, which nginx sent to another instance when there
#     are several
#   - the image's health check (`rummy healthcheck --ready`) passes inside each instance
#   - each instance's log is JSON lines, and it logged a connection from this host
#     (nginx's X-Forwarded-For, trusted from nginx's address) rather than from nginx
# Needs python3 with the `websockets` package on the host. Exits non-zero on the first
# failed check, printing the services' logs.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")"
COMPOSE=${COMPOSE:-docker compose}
SMOKE_FILE=${SMOKE_FILE:-compose.yaml}
FILES=(-f "$SMOKE_FILE")
# The rummy services of the file: `rummy`, or `rummy-a` and `rummy-b`.
mapfile -t INSTANCES < <(grep -oE '^  rummy(-[a-z]+)?:' "$SMOKE_FILE" | tr -d ' :')
[ "${#INSTANCES[@]}" -gt 0 ] || { echo "smoke: no rummy service in $SMOKE_FILE" >&2; exit 1; }
# nginx's address on the compose network, which rummy trusts.
NGINX_ADDR=$(grep -oE 'RUMMY_TRUSTED_PROXIES: [0-9.]+' "$SMOKE_FILE" | cut -d' ' -f2)
if [ -n "${SMOKE_OVERRIDE:-}" ]; then
  FILES+=(-f "$(realpath "$SMOKE_OVERRIDE")")
fi
export RUMMY_PUBLISH=${RUMMY_PUBLISH:-18080}
RUMMY_AUTH_TOKEN=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
export RUMMY_AUTH_TOKEN
RUMMY_DB_PASSWORD=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
export RUMMY_DB_PASSWORD
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

python3 - "$RUMMY_PUBLISH" "$RUMMY_AUTH_TOKEN" "${#INSTANCES[@]}" <<'EOF' || fail "the WebSocket checks"
import asyncio, json, sys
import websockets

port, token, instances = sys.argv[1], sys.argv[2], int(sys.argv[3])
url = f"ws://127.0.0.1:{port}/"
headers = {"Authorization": f"Bearer {token}"}


async def call(ws, id, method, params):
    await ws.send(json.dumps({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
    while True:
        reply = json.loads(await ws.recv())
        if reply.get("id") == id:
            return reply


async def result(ws, id, method, params):
    reply = await call(ws, id, method, params)
    assert "result" in reply, (method, reply)
    return reply["result"]


async def main():
    try:
        async with websockets.connect(url):
            raise SystemExit("a connection without the token was accepted")
    except websockets.exceptions.InvalidStatus as refused:
        assert refused.response.status_code == 401, refused.response.status_code
    async with websockets.connect(url, additional_headers=headers) as ws:
        outside = await call(ws, 1, "init", {"name": "etc", "projectRoot": "/etc"})
        assert "error" in outside, outside
    # nginx hands consecutive connections to the instances in turn: one each.
    connections = [await websockets.connect(url, additional_headers=headers)
                   for _ in range(instances)]
    try:
        for ws in connections:
            await result(ws, 1, "init", {"name": "demo", "projectRoot": "/projects/demo"})
            await result(ws, 2, "getRuns", {})
        first, last = connections[0], connections[-1]
        await result(first, 3, "addModel", {"alias": "smoke", "actual": "openai/none"})
        run = (await result(first, 4, "startRun", {"model": "smoke"}))["run"]
        await result(first, 5, "set", {"run": run, "path": "known://smoke", "body": "seen"})
        entries = await result(last, 3, "getEntries", {"run": run, "pattern": "known://smoke"})
        assert [entry["path"] for entry in entries] == ["known://smoke"], entries
    finally:
        for ws in connections:
            await ws.close()
    print(f"smoke: WebSocket through nginx: 401 without the token; /etc is refused; "
          f"{instances} connection(s) bind /projects/demo; a run made on the first is read "
          f"on the last")


asyncio.run(main())
EOF

for instance in "${INSTANCES[@]}"; do
  $COMPOSE "${FILES[@]}" exec -T "$instance" rummy healthcheck --ready >/dev/null \
    || fail "$instance: the image's health check (rummy healthcheck --ready) inside the container"
  echo "smoke: $instance: the health check passes inside the container"

  logs=$($COMPOSE "${FILES[@]}" logs "$instance" 2>&1)
  connection=$(grep 'connection opened' <<<"$logs" | tail -n 1 || true)
  [ -n "$connection" ] || fail "$instance: no log line for an accepted connection"
  # Compose prefixes each line with the service's name (and colours): the line is the JSON in it.
  python3 - "$instance" "$connection" "$NGINX_ADDR" <<'EOF' || fail "$instance's connection log line: $connection"
import json, sys
instance, line, nginx = sys.argv[1], sys.argv[2], sys.argv[3]
record = json.loads(line[line.index("{"):line.rindex("}") + 1])
addr = record["span"]["client.addr"]
assert addr != nginx, "the connection is logged as nginx's address"
print(f"smoke: {instance} logs JSON lines; a connection is logged from {addr} (not nginx's)")
EOF
done
echo "smoke: OK"
