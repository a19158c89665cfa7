#!/usr/bin/env python3
"""A plugin of guardrails (docs/src/plugins-at-run-time.md): run.config keeps temperatures at
or below 0.5 and refuses the model "forbidden" and a persona that asks to be reckless,
whichever call sets them; budget.enforce lowers the window a turn's
packet must fit to --window N tokens, when given; turn.proposing offers each proposal with
a note. Its tool <deploy>version</deploy> changes things: each call is proposed, and the
plugin is called only when a client accepts it. Standard library only."""
import json
import sys

args = sys.argv[1:]
WINDOW = int(args[args.index("--window") + 1]) if "--window" in args else None
calls = 0


def filtered(hook, value):
    if hook == "run.config":
        if value["model"] == "forbidden":
            return {"refuse": {"message": "the model forbidden is not allowed here"}}
        if "reckless" in (value.get("persona") or ""):
            return {"refuse": {"message": "no reckless persona here"}}
        if value.get("temperature") is not None and value["temperature"] > 0.5:
            return {"value": {"temperature": 0.5}}
        return {}
    if hook == "budget.enforce" and WINDOW is not None:
        return {"value": WINDOW if value is None else min(value, WINDOW)}
    if hook == "turn.proposing":
        for proposal in value:
            proposal["attributes"]["note"] = "reviewed by clamp"
        return {"value": value}
    return {}


for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message:
        continue
    method, params = message["method"], message.get("params") or {}
    if method == "initialize":
        hooks = ["run.config", "budget.enforce", "turn.proposing"]
        deploy = {"name": "deploy", "doc": "## <deploy>[version]</deploy> - Deploy a version",
                  "changes": True}
        result = {"name": "clamp", "version": "1.0.0", "tools": [deploy],
                  "filters": [{"hook": hook, "priority": 100} for hook in hooks]}
    elif method == "tool/call":
        calls += 1
        accepted = "accepted" if params["accepted"] else "unasked"
        result = {"body": f"deployed {params['body']} ({accepted}, call {calls})"}
    elif method == "filter/apply":
        result = filtered(params["hook"], params["value"])
    else:
        result = None
    print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}), flush=True)
