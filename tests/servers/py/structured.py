"""A stdio MCP server with one tool that declares an outputSchema and
returns whatever structured content the caller asks for, for the proxy
tests of result checks; written with the official MCP Python SDK's
low-level Server (mcp 2.x).

usage: structured.py

The tool `forecast` declares

  outputSchema {"type": "object",
                "properties": {"condition": {"type": "string", "enum": ["sunny", "rain"]},
                               "temp": {"type": "number"}},
                "required": ["condition", "temp"]}

and answers every call with `structuredContent` set to the call's `reply`
argument, exactly as received, conformant or not, plus one text block
holding the JSON {"arguments": ARGS, "meta": META}: the arguments and the
request's `_meta` as they reached the server (so a test can prove what was
forwarded, including a `traceparent`).

The server never checks its output against the schema: the low-level
Server passes a CallToolResult through as returned (only the high-level
FastMCP validates structured output), so a test can make it break its own
contract.
"""

import json

import anyio
import mcp.types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

FORECAST = types.Tool.model_validate(
    {
        "name": "forecast",
        "description": "Tomorrow's weather; answers with the reply it is given.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "unit": {"type": "string", "enum": ["C", "F"]},
                "reply": {"type": "object"},
            },
            "required": ["reply"],
        },
        "outputSchema": {
            "type": "object",
            "properties": {
                "condition": {"type": "string", "enum": ["sunny", "rain"]},
                "temp": {"type": "number"},
            },
            "required": ["condition", "temp"],
        },
    }
)


async def list_tools(ctx, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
    return types.ListToolsResult(tools=[FORECAST])


async def call_tool(ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
    arguments = params.arguments or {}
    # The SDK parses _meta into a dict (known keys snake_cased; others,
    # such as traceparent, as sent).
    meta = dict(params.meta) if params.meta else None
    text = json.dumps({"arguments": arguments, "meta": meta}, sort_keys=True, default=str)
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)],
        structured_content=arguments.get("reply"),
    )


async def main() -> None:
    server = Server("structured", version="1.0.0", on_list_tools=list_tools, on_call_tool=call_tool)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
