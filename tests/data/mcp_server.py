"""A small MCP server on stdio for rummy's tests: newline-delimited JSON-RPC by hand.

On stdio, or with `--http` on a loopback port it prints (streamable HTTP, stateless).
Tools: `lookup` (read-only), `create_issue` (changes things), `big` (read-only, 5000
bytes), `hang` (read-only, never answers), `crash` (read-only, exits), `fail` (read-only,
reports an error). Every start (with its pid), call
and cancellation is appended to the file named by MCP_LOG, so a test sees what reached it.
With MCP_RECORD_AS naming an environment variable (on stdio) or a request header (on HTTP),
each call's line ends with " as " and that variable's or header's value: who called.
"""

import json
import os
import sys
import threading

LOG = os.environ["MCP_LOG"]
RECORD_AS = os.environ.get("MCP_RECORD_AS")
# The header MCP_RECORD_AS names, of the HTTP request being answered on this thread.
REQUEST = threading.local()


def log(line):
    with open(LOG, "a") as file:
        file.write(line + "\n")


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


READ_ONLY = {"readOnlyHint": True}
OBJECT = {"type": "object"}
TOOLS = [
    {
        "name": "lookup",
        "description": "Look a word up in the glossary.",
        "inputSchema": {
            "type": "object",
            "properties": {"query": {"type": "string"}},
            "required": ["query"],
        },
        "annotations": READ_ONLY,
    },
    {
        "name": "create_issue",
        "description": "Open an issue in the tracker.",
        "inputSchema": {
            "type": "object",
            "properties": {"title": {"type": "string"}},
        },
    },
    {"name": "big", "description": "A long answer.", "inputSchema": OBJECT, "annotations": READ_ONLY},
    {"name": "hang", "description": "Never answers.", "inputSchema": OBJECT, "annotations": READ_ONLY},
    {"name": "crash", "description": "Exits.", "inputSchema": OBJECT, "annotations": READ_ONLY},
    {"name": "fail", "description": "Reports an error.", "inputSchema": OBJECT, "annotations": READ_ONLY},
]


def text(value):
    return {"content": [{"type": "text", "text": value}]}


def call(params):
    name = params.get("name")
    arguments = params.get("arguments") or {}
    caller = ""
    if RECORD_AS:
        caller = " as " + str(getattr(REQUEST, "caller", None) or os.environ.get(RECORD_AS))
    log("call " + name + " " + json.dumps(arguments, sort_keys=True) + caller)
    if name == "lookup":
        return text("glossary: " + str(arguments.get("query")) + " means a card game")
    if name == "create_issue":
        return text("created issue #7: " + str(arguments.get("title")))
    if name == "big":
        return text("x" * 5000)
    if name == "crash":
        sys.stdout.flush()
        os._exit(3)
    if name == "hang":
        return None
    return {"content": [{"type": "text", "text": "the tracker is closed"}], "isError": True}


def answer(message):
    """The reply to one message, or None (a notification, a call that hangs)."""
    method = message.get("method")
    ident = message.get("id")
    params = message.get("params") or {}
    if method == "notifications/cancelled":
        log("cancelled")
        return None
    if ident is None:
        return None
    if method == "initialize":
        result = {
            "protocolVersion": params.get("protocolVersion", "2025-06-18"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "rummy-test", "version": "1"},
        }
    elif method == "tools/list":
        result = {"tools": TOOLS}
    elif method == "tools/call":
        result = call(params)
        if result is None:
            return None
    elif method == "ping":
        result = {}
    else:
        return {"jsonrpc": "2.0", "id": ident, "error": {"code": -32601, "message": "no " + str(method)}}
    return {"jsonrpc": "2.0", "id": ident, "result": result}


def serve_stdio():
    for line in sys.stdin:
        line = line.strip()
        if line:
            reply = answer(json.loads(line))
            if reply is not None:
                send(reply)


def serve_http():
    """Streamable HTTP, stateless: each POST answered with JSON (202 for notifications).
    Prints its port, then logs the Authorization header of each request."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            log("authorization " + str(self.headers.get("Authorization")))
            REQUEST.caller = self.headers.get(RECORD_AS) if RECORD_AS else None
            length = int(self.headers.get("Content-Length") or 0)
            reply = answer(json.loads(self.rfile.read(length)))
            if reply is None:
                self.send_response(202)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            body = json.dumps(reply).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):
            self.send_response(405)
            self.send_header("Content-Length", "0")
            self.end_headers()

        do_DELETE = do_GET

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()


log("start pid " + str(os.getpid()))
if sys.argv[1:] == ["--http"]:
    serve_http()
else:
    serve_stdio()
