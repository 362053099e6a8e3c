"""A server whose tools/list spreads 25 tools over 3 pages (10, 10, 5),
written with the official MCP Python SDK's low-level Server (mcp 2.x: the
high-level MCPServer, formerly FastMCP, always answers in one page).

The cursor is opaque to clients: here it is "page-N". An unknown cursor is
refused with -32602, as the specification asks.
"""

import anyio
import mcp.types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

TOTAL = 25
PAGE = 10


def tool(i: int) -> types.Tool:
    return types.Tool(
        name=f"tool_{i:02d}",
        description=f"Tool number {i}.",
        input_schema={
            "type": "object",
            "properties": {"n": {"type": "integer", "default": i}},
        },
    )


async def list_tools(ctx, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
    cursor = params.cursor if params is not None else None
    start = 0
    if cursor is not None:
        if not cursor.startswith("page-") or not cursor[5:].isdigit():
            raise MCPError(code=types.INVALID_PARAMS, message=f"unknown cursor {cursor!r}")
        start = int(cursor[5:]) * PAGE
    end = min(start + PAGE, TOTAL)
    next_cursor = f"page-{end // PAGE}" if end < TOTAL else None
    return types.ListToolsResult(tools=[tool(i) for i in range(start, end)], next_cursor=next_cursor)


async def main() -> None:
    server = Server("paginated", version="1.0.0", on_list_tools=list_tools)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
