#!/usr/bin/env python3
"""A plugin whose tool answers after a second (docs/src/plugins-at-run-time.md): its tag is
--tag NAME, it answers "slow <body>", and with --timeout-ms N its manifest asks for calls
to wait N ms. Standard library only."""
import json
import sys
import time

args = sys.argv[1:]
TAG = args[args.index("--tag") + 1]
TIMEOUT = int(args[args.index("--timeout-ms") + 1]) if "--timeout-ms" in args else None

for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message:
        continue
    method, params = message["method"], message.get("params") or {}
    if method == "initialize":
        tool = {"name": TAG, "doc": f"## <{TAG}>[text]</{TAG}> - Answer slowly"}
        result = {"name": TAG, "version": "1", "tools": [tool]}
        if TIMEOUT is not None:
            result["timeoutMs"] = TIMEOUT
    elif method == "tool/call":
        time.sleep(1)
        result = {"body": f"slow {params['body']}"}
    else:
        result = None
    print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}), flush=True)
