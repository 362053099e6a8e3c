"""A stdio MCP server that gets stuck: standard library only, newline-
delimited JSON-RPC. It answers initialize, ping and tools/list (two tools,
"stall" and "echo"), answers "echo" calls at once with their arguments,
and on the first "stall" call stops reading its standard input for good
(like a server wedged in a blocking call): it never answers again and
whatever is written to it piles up in the pipe.

usage: stuck.py
"""

import json
import sys
import time

TOOLS = [
    {
        "name": "stall",
        "description": "Wedges the server.",
        "inputSchema": {"type": "object", "properties": {}},
    },
    {
        "name": "echo",
        "description": "Answers with its arguments.",
        "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
    },
]


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def main():
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        message = json.loads(line)
        method, mid = message.get("method"), message.get("id")
        if mid is None:
            continue
        if method == "initialize":
            send({"jsonrpc": "2.0", "id": mid, "result": {
                "protocolVersion": "2025-11-25",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "stuck", "version": "1.0.0"},
            }})
        elif method == "tools/list":
            send({"jsonrpc": "2.0", "id": mid, "result": {"tools": TOOLS}})
        elif method == "tools/call" and message["params"]["name"] == "stall":
            sys.stderr.write("stuck.py: no longer reading stdin\n")
            sys.stderr.flush()
            while True:
                time.sleep(3600)
        elif method == "tools/call":
            text = json.dumps(message["params"].get("arguments"))
            send({"jsonrpc": "2.0", "id": mid, "result": {"content": [{"type": "text", "text": text}]}})
        else:
            send({"jsonrpc": "2.0", "id": mid, "result": {}})


if __name__ == "__main__":
    main()
