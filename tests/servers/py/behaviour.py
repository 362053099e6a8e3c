"""An order-search server for the contract tests (`toolpin contract record`
and `run`), written with the official MCP Python SDK's high-level server.
Its one read-only tool keeps its declaration while its behaviour switches
on TOOLPIN_TEST_DRIFT:

- unset: 50 rows by default, statuses open / pending / closed;
- page20: 20 rows by default (the schema's default still says 50);
- status: a fourth status value, refunded;
- slow: every call sleeps 300 ms.
"""

import json
import os
import time

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

DRIFT = os.environ.get("TOOLPIN_TEST_DRIFT", "")

server = MCPServer("behaviour", version="1.0.0")


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def search_orders(page_size: int = 50) -> str:
    """Search orders, newest first."""
    if DRIFT == "slow":
        time.sleep(0.3)
    if DRIFT == "page20" and page_size == 50:
        page_size = 20
    statuses = ["open", "pending", "closed"]
    if DRIFT == "status":
        statuses.append("refunded")
    rows = [
        {
            "id": f"ord-{i:04d}",
            "status": statuses[i % len(statuses)],
            "created": f"2026-12-{1 + i % 28:02d}T10:00:00Z",
        }
        for i in range(page_size)
    ]
    return json.dumps({"rows": rows, "total": 1000})


if __name__ == "__main__":
    server.run("stdio")
