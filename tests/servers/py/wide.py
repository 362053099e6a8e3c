"""A stdio MCP server whose one read-only tool answers as wide or as deep a
result as it is told, for the bounds of a contract call's observation
(`toolpin contract record` and `run`) and scripts/bench-contract-bounds;
written with the official MCP Python SDK's low-level Server (mcp 2.x), so
that the result goes out exactly as built.

The tool `report` (readOnlyHint true, no arguments) answers
`structuredContent` of

- TOOLPIN_TEST_MEMBERS members (default 10): {"k0000000": "v0", …}, each
  value one of five strings, so every member is its own pointer with a
  value set of one;
- when TOOLPIN_TEST_DEPTH is set, besides them a member "deep" nested that
  many objects down ({"d": {"d": … "leaf"}});
- when TOOLPIN_TEST_PAD is set, besides them a member "pad" holding a
  string of that many bytes (a large result with few members).

plus one short text block naming the member count.

usage: wide.py             (stdio)
       wide.py PORT        (Streamable HTTP at http://127.0.0.1:PORT/mcp,
                            answers as event streams; with
                            TOOLPIN_TEST_JSON=1 as JSON bodies)
"""

import os
import sys

import anyio
import mcp.types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

MEMBERS = int(os.environ.get("TOOLPIN_TEST_MEMBERS", "10") or "10")
DEPTH = int(os.environ.get("TOOLPIN_TEST_DEPTH", "0") or "0")
PAD = int(os.environ.get("TOOLPIN_TEST_PAD", "0") or "0")

REPORT = types.Tool.model_validate(
    {
        "name": "report",
        "description": "Every counter, by name.",
        "inputSchema": {"type": "object", "properties": {}},
        "annotations": {"readOnlyHint": True},
    }
)


def result() -> dict:
    out = {f"k{i:07d}": f"v{i % 5}" for i in range(MEMBERS)}
    if DEPTH:
        deep: object = "leaf"
        for _ in range(DEPTH):
            deep = {"d": deep}
        out["deep"] = deep
    if PAD:
        out["pad"] = "x" * PAD
    return out


async def list_tools(ctx, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
    return types.ListToolsResult(tools=[REPORT])


async def call_tool(ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=f"{MEMBERS} members")],
        structured_content=result(),
    )


async def main() -> None:
    server = Server("wide", version="1.0.0", on_list_tools=list_tools, on_call_tool=call_tool)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    if len(sys.argv) > 1:
        import uvicorn

        server = Server("wide", version="1.0.0", on_list_tools=list_tools, on_call_tool=call_tool)
        app = server.streamable_http_app(json_response=os.environ.get("TOOLPIN_TEST_JSON") == "1")
        uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
    else:
        anyio.run(main)
