#!/usr/bin/env python3
"""A plugin that answers its handshake, then misbehaves at each tool call as its argument
says: `crash` (exits), `hang` (never answers) or `garbage` (writes what is not JSON-RPC).
It counts its starts in the file named by its second argument, one line per start."""
import json
import sys

mode, starts = sys.argv[1], sys.argv[2]
with open(starts, "a") as counted:
    counted.write("started\n")

for line in sys.stdin:
    message = json.loads(line)
    if message.get("method") == "initialize":
        tools = [{"name": "flaky", "doc": "## <flaky>[text]</flaky> - Misbehave"}]
        result = {"name": "flaky", "version": "0", "tools": tools}
        print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}), flush=True)
    elif mode == "crash":
        sys.exit(3)
    elif mode == "garbage":
        print("this is not json", flush=True)
    # hang: answer nothing
