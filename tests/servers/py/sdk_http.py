"""A Streamable HTTP server written with the official MCP Python SDK
(mcp 2.x MCPServer), which speaks the stateless 2026-07-28 revision (with
its routing headers) and the initialize handshake of earlier revisions.

usage: sdk_http.py PORT
"""

import sys

from mcp.server.mcpserver import MCPServer

server = MCPServer("sdk-http", version="3.1.4")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def shout(text: str, times: int = 1) -> str:
    """Repeat the text in capitals."""
    return (text.upper() + " ") * times


if __name__ == "__main__":
    server.run("streamable-http", port=int(sys.argv[1]), host="127.0.0.1")
