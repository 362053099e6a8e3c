"""Bounded tool-call traffic through an MCP endpoint, with the official MCP
Python SDK over Streamable HTTP, for the dashboard tests.

usage: traffic.py --url URL --plan JSON [--rounds N] [--per-second R]

PLAN is a JSON list of {"tool": NAME, "arguments": {...}, "times": N}. Each
round makes every entry's calls, interleaved; rounds are paced at R calls a
second overall (default 50). A refused call (a JSON-RPC error) counts as an
error and the traffic goes on. Prints {"calls": n, "errors": n}.
"""

import argparse
import json
import time

import anyio
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--plan", required=True)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--per-second", type=float, default=50.0)
    args = parser.parse_args()
    plan = json.loads(args.plan)
    calls = errors = 0
    start = time.monotonic()
    async with streamable_http_client(args.url) as (read, write, *_):
        async with ClientSession(read, write) as session:
            await session.initialize()
            for _ in range(args.rounds):
                left = {i: entry["times"] for i, entry in enumerate(plan)}
                while any(left.values()):
                    for i, entry in enumerate(plan):
                        if not left[i]:
                            continue
                        left[i] -= 1
                        try:
                            result = await session.call_tool(entry["tool"], entry.get("arguments", {}))
                            errors += int(bool(result.is_error))
                        except MCPError:
                            errors += 1
                        calls += 1
                        delay = start + calls / args.per_second - time.monotonic()
                        if delay > 0:
                            await anyio.sleep(delay)
    print(json.dumps({"calls": calls, "errors": errors}), flush=True)


if __name__ == "__main__":
    anyio.run(main)
