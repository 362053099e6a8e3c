"""A stdio MCP server whose tools carry members no typed model knows, at
every level: a top-level `x-vendor`, `annotations.x-cost`, `execution`
(with an unknown member of its own), `icons`, `_meta`, unknown schema
keywords, and an annotation of an unexpected type (`readOnlyHint: "yes"`).

Written as raw JSON-RPC (standard library only) on purpose: the official
Python SDK (mcp 2.3.0) cannot serve these tools as given. Its `Tool`,
`ToolAnnotations`, `ToolExecution` and `Icon` models drop unknown members
(x-vendor, x-cost, execution.x-queue, icons[].x-theme) and coerce
`readOnlyHint: "yes"` to `true`, even when a low-level handler returns a
plain dict (the result is validated and re-serialized against the
protocol's types before it is sent).

`vendor.py --print-tools` prints the tools/list result it serves, so a test
can compare the lockfile with exactly what went over the wire.
"""

import json
import sys

TOOLS = [
    {
        "name": "vendor_search",
        "title": "Vendor search",
        "description": "Search the vendor catalogue.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "q": {"type": "string", "x-widget": "textarea", "x-examples": ["shoes", "hats"]},
                "limit": {"type": "integer", "default": 10, "x-range": {"min": 1, "max": 100}},
            },
            "required": ["limit", "q"],
            "x-schema-vendor": {"version": 2},
        },
        "outputSchema": {
            "type": "object",
            "properties": {"items": {"type": "array", "items": {"type": "string"}}},
            "x-out": True,
        },
        "x-vendor": {
            "tier": "gold",
            "required": ["zeta", "alpha"],
            "limits": [3, 2.5, -1, None, True, "x"],
            "nested": {"deeper": {"deepest": [{"k": None}]}},
        },
        "annotations": {
            "title": "Search",
            "readOnlyHint": "yes",
            "openWorldHint": 1,
            "destructiveHint": None,
            "x-cost": {"usd": 0.0025, "cap": 2.0, "tier": 3},
        },
        "execution": {"taskSupport": "optional", "x-queue": "slow"},
        "icons": [
            {"src": "https://example.com/search.png", "mimeType": "image/png", "sizes": ["48x48"], "x-theme": "dark"},
            {"src": "data:image/svg+xml;base64,PHN2Zy8+", "theme": "light"},
        ],
        "_meta": {
            "com.example/owner": "team-search",
            "com.example/rollout": {"percent": 50, "since": "2026-01-01"},
        },
        "x-text": "caf\u00e9 \u2028 \U0001f600 tab\there",
    },
    {
        "name": "vendor_plain",
        "description": "A tool with nothing unusual, beside the odd one.",
        "inputSchema": {"type": "object"},
        "annotations": {"readOnlyHint": True},
    },
]

RESULT = {"tools": TOOLS, "x-page-vendor": {"ignored": "by toolpin"}}


def send(message):
    sys.stdout.write(json.dumps(message, ensure_ascii=False, separators=(",", ":")) + "\n")
    sys.stdout.flush()


def main():
    if sys.argv[1:] == ["--print-tools"]:
        print(json.dumps(RESULT, ensure_ascii=False))
        return
    for line in sys.stdin:
        if not line.strip():
            continue
        msg = json.loads(line)
        method, msg_id = msg.get("method"), msg.get("id")
        if method is None or msg_id is None:
            continue
        if method == "initialize":
            send({"jsonrpc": "2.0", "id": msg_id, "result": {
                "protocolVersion": "2025-11-25",
                "capabilities": {"tools": {"listChanged": False}, "x-vendor-capability": {}},
                "serverInfo": {"name": "vendor", "version": "9.9.9", "x-build": "abc123"},
            }})
        elif method == "tools/list":
            send({"jsonrpc": "2.0", "id": msg_id, "result": RESULT})
        elif method == "ping":
            send({"jsonrpc": "2.0", "id": msg_id, "result": {}})
        else:
            send({"jsonrpc": "2.0", "id": msg_id, "error": {"code": -32601, "message": f"Method not found: {method}"}})


if __name__ == "__main__":
    main()
