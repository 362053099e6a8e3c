#!/usr/bin/env python3
"""A stdio MCP server for benchmarks: N generated tools, an optional delay
before each answer (a stand-in for a server that is slow for reasons other
than CPU: a network hop, a cold cache), nothing else. Standard library only,
newline-delimited JSON-RPC, protocol 2025-11-25.

usage: bench_server.py [--tools N] [--delay SECONDS] [--page-size N] [--version V]
"""
import argparse
import json
import sys
import time


def tool(i):
    return {
        "name": f"tool_{i:04d}",
        "description": f"Tool number {i}: fetches records of kind {i % 7} and returns them "
        "as a list, newest first. Use the filters to narrow the result.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "Free-text filter."},
                "limit": {"type": "integer", "minimum": 1, "maximum": 100, "default": 20},
                "order": {"type": "string", "enum": ["asc", "desc"], "default": "desc"},
                "since": {"type": "string", "format": "date-time"},
            },
            "required": ["query"],
        },
        "annotations": {"readOnlyHint": i % 3 != 0, "openWorldHint": False},
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tools", type=int, default=100)
    ap.add_argument("--delay", type=float, default=0.0)
    ap.add_argument("--page-size", type=int, default=0)
    ap.add_argument("--version", default="1.0.0")
    args = ap.parse_args()
    tools = [tool(i) for i in range(args.tools)]
    page = args.page_size or len(tools) or 1
    out = sys.stdout
    for line in sys.stdin:
        if not line.strip():
            continue
        msg = json.loads(line)
        if "id" not in msg:
            continue
        method = msg.get("method")
        if args.delay:
            time.sleep(args.delay)
        if method == "initialize":
            result = {
                "protocolVersion": "2025-11-25",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "bench-server", "version": args.version},
            }
            reply = {"jsonrpc": "2.0", "id": msg["id"], "result": result}
        elif method == "tools/list":
            start = int((msg.get("params") or {}).get("cursor") or 0)
            result = {"tools": tools[start : start + page]}
            if start + page < len(tools):
                result["nextCursor"] = str(start + page)
            reply = {"jsonrpc": "2.0", "id": msg["id"], "result": result}
        else:
            reply = {"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": "Method not found"}}
        out.write(json.dumps(reply) + "\n")
        out.flush()


if __name__ == "__main__":
    main()
