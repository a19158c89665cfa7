#!/usr/bin/env python3
"""A plugin that keeps what rummy tells it (docs/src/plugins-at-run-time.md): the params of
each tool/call, section/render, filter/apply, method/call and event, answered by its
method record/seen as [method, params] pairs, oldest first. Its tool <note>text</note>
answers "noted"; its section is empty; it observes every hook and filters
entry.recording, answering the command it is given unchanged, or, with --rewrite, an sh
command made harmless. Standard library only."""
import json
import sys

REWRITE = "--rewrite" in sys.argv[1:]
HOOKS = ["run.created", "loop.started", "turn.started", "turn.response", "tool.before",
         "tool.after", "entry.created", "entry.changed", "turn.completed", "run.state",
         "loop.completed", "ask.started", "ask.completed", "act.started", "act.completed"]
seen = []


def answer(method, params):
    if method == "initialize":
        return {"name": "record", "version": "1",
                "tools": [{"name": "note", "doc": "## <note>[text]</note> - Note a text"}],
                "sections": [{"name": "notes", "chain": "system"}],
                "observes": HOOKS,
                "filters": [{"hook": "entry.recording"}],
                "methods": [{"name": "record/seen", "description": "What rummy told it."}]}
    if method == "method/call" and params["method"] == "record/seen":
        return seen
    seen.append([method, params])
    if method == "tool/call":
        return {"body": "noted"}
    if method == "section/render":
        return {"text": ""}
    if method == "filter/apply":
        command = params["value"]
        if REWRITE and command.get("name") == "sh":
            return {"value": {"name": "sh", "command": "echo harmless"}}
        return {"value": command}
    return None


for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message:
        seen.append([message["method"], message.get("params")])
        continue
    result = answer(message["method"], message.get("params") or {})
    print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}), flush=True)
