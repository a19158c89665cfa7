#!/usr/bin/env python3
"""A rummy plugin process (docs/src/plugins-at-run-time.md), Python standard library only.

It adds a tool the model calls, <word_count>text</word_count>; a section of the system
message, <house_rules>; an observer that keeps the hooks it is told of; a filter of
entry.recording that refuses <sh> commands matching a pattern; and a method clients call,
guard/hooks, answering the hooks observed so far.

Arguments (a RUMMY_PLUGIN_<NAME> line is split at whitespace):
  --refuse REGEX     refuse sh commands that match it (none: refuse nothing)
  --priority N       the filter's priority (lower runs first; default 100)
  --tag NAME         the tool's tag (default word_count)
"""
import json
import re
import sys

args = sys.argv[1:]


def option(name, default=None):
    return args[args.index(name) + 1] if name in args else default


REFUSE = option("--refuse")
PRIORITY = int(option("--priority", "100"))
TAG = option("--tag", "word_count")
hooks = []


class RpcError(Exception):
    def __init__(self, code, message):
        super().__init__(message)
        self.code, self.message = code, message


def manifest():
    return {
        "name": "guard",
        "version": "1.0.0",
        "tools": [{
            "name": TAG,
            "doc": f"## <{TAG}>[text]</{TAG}> - Count the words of a text\n"
                   f"Example: <{TAG}>one two</{TAG}>",
        }],
        "sections": [{"name": "house_rules", "chain": "system", "priority": 500}],
        "observes": ["run.created", "loop.started", "turn.started", "entry.created",
                     "turn.completed", "loop.completed"],
        "filters": [{"hook": "entry.recording", "priority": PRIORITY}],
        "methods": [{"name": "guard/hooks", "description": "The hooks observed so far.",
                     "role": "member", "params": {}}],
    }


def handle(method, params):
    if method == "initialize":
        return manifest()
    if method == "tool/call":
        return {"status": 200, "body": str(len(params["body"].split()))}
    if method == "section/render":
        return {"text": f"<house_rules>Count before turn {params['turn']}.</house_rules>"}
    if method == "filter/apply":
        command = params["value"]
        text = command.get("command") or command.get("body") or ""
        if command.get("name") == "sh" and REFUSE and re.search(REFUSE, text):
            return {"refuse": {"status": 403, "message": f"guard (priority {PRIORITY}) "
                                                        f"refuses: {text}"}}
        return {}
    if method == "method/call":
        if params["method"] == "guard/hooks":
            return hooks
    raise RpcError(-32601, f"no method {method}")


for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message:  # a notification: an event observed
        if message.get("method") == "event":
            hooks.append(message["params"]["hook"])
        continue
    try:
        reply = {"result": handle(message["method"], message.get("params") or {})}
    except RpcError as error:
        reply = {"error": {"code": error.code, "message": error.message}}
    reply.update(jsonrpc="2.0", id=message["id"])
    print(json.dumps(reply), flush=True)
