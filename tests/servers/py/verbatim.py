"""A stdio MCP server that writes its answers byte by byte as given, for
the proxy's fidelity tests. Standard library only; newline-delimited
JSON-RPC.

usage: verbatim.py LOG

It serves two tools:

  shape    answers with a fixed line laid out the way no JSON library
           prints it (members out of order, spaces, 1.50, escapes, an extra
           top-level member), with the request's id spliced in as text
  garbage  answers with a line that is not JSON

Every line it reads is appended to LOG as it arrived, so a test can
compare what reached the server with what the agent sent.
"""

import json
import sys

if len(sys.argv) != 2:
    print("usage: verbatim.py LOG", file=sys.stderr)
    sys.exit(2)

LOG = sys.argv[1]

TOOLS = [
    {
        "name": "shape",
        "description": "Answers with an oddly laid out line.",
        "inputSchema": {
            "type": "object",
            "properties": {"message": {"type": "string"}, "n": {"type": "number"}},
        },
    },
    {
        "name": "garbage",
        "description": "Answers with a line that is not JSON.",
        "inputSchema": {"type": "object", "properties": {}},
    },
]

# {ID} is replaced by the request's id, as it was written.
SHAPE = (
    '{"result" : {"content":[{"type":"text","text":"caf\\u00e9 \\"q\\""}],'
    '"structuredContent":{"z":1.50,"a":[3,2,1],"big":12345678901234567890}},'
    '  "jsonrpc":"2.0", "id":{ID}, "x-extra":{"kept":true}}'
)


def write(line):
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def raw_id(line, message):
    # The id as the proxy wrote it: reprinted from the parsed value (the
    # proxy's ids are integers).
    return json.dumps(message["id"])


for line in sys.stdin:
    line = line.rstrip("\n")
    if not line.strip():
        continue
    with open(LOG, "a", encoding="utf-8") as f:
        f.write(line + "\n")
    message = json.loads(line)
    method = message.get("method")
    if "id" not in message or method is None:
        continue
    mid = message["id"]
    if method == "initialize":
        result = {
            "protocolVersion": message["params"].get("protocolVersion", "2025-06-18"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "verbatim", "version": "1.0.0"},
        }
        write(json.dumps({"jsonrpc": "2.0", "id": mid, "result": result}))
    elif method == "tools/list":
        write(json.dumps({"jsonrpc": "2.0", "id": mid, "result": {"tools": TOOLS}}))
    elif method == "tools/call":
        name = message["params"].get("name")
        if name == "shape":
            write(SHAPE.replace("{ID}", raw_id(line, message)))
        elif name == "garbage":
            write('{"jsonrpc":"2.0","id":' + raw_id(line, message) + ',"result":{oops')
        else:
            write(json.dumps({"jsonrpc": "2.0", "id": mid, "error": {"code": -32602, "message": "no such tool"}}))
    elif method == "ping":
        write(json.dumps({"jsonrpc": "2.0", "id": mid, "result": {}}))
    else:
        write(json.dumps({"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": "unknown method"}}))
