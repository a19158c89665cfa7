"""A small MCP server on stdio for rummy's tests: newline-delimited JSON-RPC by hand.

Tools: `lookup` (read-only), `create_issue` (changes things), `big` (read-only, 5000
bytes), `hang` (read-only, never answers), `crash` (read-only, exits). Every start, call
and cancellation is appended to the file named by MCP_LOG, so a test sees what reached it.
"""

import json
import os
import sys

LOG = os.environ["MCP_LOG"]


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
]


def text(value):
    return {"content": [{"type": "text", "text": value}]}


def call(params):
    name = params.get("name")
    arguments = params.get("arguments") or {}
    log("call " + name + " " + json.dumps(arguments, sort_keys=True))
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
    return {"content": [{"type": "text", "text": "no such tool"}], "isError": True}


def main():
    log("start")
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        message = json.loads(line)
        method = message.get("method")
        ident = message.get("id")
        params = message.get("params") or {}
        if method == "notifications/cancelled":
            log("cancelled")
            continue
        if ident is None:
            continue
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
                continue
        elif method == "ping":
            result = {}
        else:
            send({"jsonrpc": "2.0", "id": ident, "error": {"code": -32601, "message": "no " + str(method)}})
            continue
        send({"jsonrpc": "2.0", "id": ident, "result": result})


main()
