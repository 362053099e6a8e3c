"""A stdio MCP server whose tools come from a JSON file and whose tools'
behaviour is scripted, for the proxy tests; written with the official MCP
Python SDK's low-level Server (mcp 2.x).

usage: scripted.py TOOLS_JSON

TOOLS_JSON is read again on every tools/list, so a test can lock one
version and serve another. It holds:

  {"tools": [ ...tool definitions, served as written... ],
   "behaviors": {"tool name": "echo" | "hang" | "crash" | "sleep:SECONDS"
                 | "switch" | "tool_error", ...}}

Every call of a tool is answered (unless its behaviour says otherwise)
with one text block holding the JSON {"tool": NAME, "arguments": ARGS}: the
name and arguments exactly as received, so a test can prove what reached
the upstream. Behaviours:

  echo           (the default) answer at once
  sleep:SECONDS  answer after SECONDS
  hang           never answer
  crash          exit with status 3 while the call is in flight (after 0.2 s)
  switch         from now on serve TOOLS_JSON.next instead, then send
                 notifications/tools/list_changed, then answer
  tool_error     answer with the same text block and "isError": true

Each call also appends one JSON line {"pid", "tool", "arguments"} to
TOOLS_JSON.calls, so a test can prove what was (not) forwarded; a hanging
or sleeping call that is cancelled (notifications/cancelled) appends the
same line again with "cancelled": true.
"""

import json
import os
import sys

import anyio
import mcp.types as types
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

if len(sys.argv) != 2:
    print("usage: scripted.py TOOLS_JSON", file=sys.stderr)
    sys.exit(2)

BASE = sys.argv[1]
STATE = {"path": BASE}


def load() -> dict:
    with open(STATE["path"], encoding="utf-8") as f:
        return json.load(f)


def record(name: str, arguments, cancelled: bool = False) -> None:
    entry = {"pid": os.getpid(), "tool": name, "arguments": arguments}
    if cancelled:
        entry["cancelled"] = True
    line = json.dumps(entry)
    with open(BASE + ".calls", "a", encoding="utf-8") as f:
        f.write(line + "\n")


async def list_tools(ctx, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
    tools = [types.Tool.model_validate(t) for t in load()["tools"]]
    return types.ListToolsResult(tools=tools)


async def call_tool(ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
    spec = load()
    names = {t["name"] for t in spec["tools"]}
    if params.name not in names:
        raise MCPError(code=types.INVALID_PARAMS, message=f"scripted.py: no tool {params.name!r}")
    arguments = params.arguments
    record(params.name, arguments)
    behavior = spec.get("behaviors", {}).get(params.name, "echo")
    try:
        if behavior == "hang":
            await anyio.sleep_forever()
        elif behavior.startswith("sleep:"):
            await anyio.sleep(float(behavior[len("sleep:"):]))
    except anyio.get_cancelled_exc_class():
        record(params.name, arguments, cancelled=True)
        raise
    if behavior == "crash":
        await anyio.sleep(0.2)
        sys.stderr.write("scripted.py: crashing on purpose\n")
        sys.stderr.flush()
        os._exit(3)
    elif behavior == "switch":
        STATE["path"] = BASE + ".next"
        await ctx.session.send_tool_list_changed()
    text = json.dumps({"tool": params.name, "arguments": arguments}, sort_keys=True)
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)],
        is_error=behavior == "tool_error",
    )


async def main() -> None:
    server = Server("scripted", version="1.0.0", on_list_tools=list_tools, on_call_tool=call_tool)
    async with stdio_server() as (read, write):
        options = server.create_initialization_options(NotificationOptions(tools_changed=True))
        await server.run(read, write, options)


if __name__ == "__main__":
    anyio.run(main)
