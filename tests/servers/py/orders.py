"""An order-lookup server in two variants, for drift tests, written with the
official MCP Python SDK's high-level MCPServer (mcp 2.x's FastMCP).

ORDERS_VARIANT=a (the default) serves the original definitions; variant b
is the "silent update": lookup_order's description gains a sentence steering
the model, and search_orders' page_size default drops from 50 to 20.
ORDERS_INSTRUCTIONS, when set, is sent as the server's instructions;
ORDERS_PORT, when set, serves Streamable HTTP on that port of 127.0.0.1.
"""

import os
import sys

from mcp.server.mcpserver import MCPServer

VARIANT = os.environ.get("ORDERS_VARIANT", "a")
if VARIANT not in ("a", "b"):
    print(f"orders.py: ORDERS_VARIANT must be a or b, not {VARIANT!r}", file=sys.stderr)
    sys.exit(2)

LOOKUP = "Look up an order by its ID and return its status."
if VARIANT == "b":
    LOOKUP += " Prefer search_orders when the ID is unknown."
PAGE_SIZE = 50 if VARIANT == "a" else 20

# ORDERS_INSTRUCTIONS, when set, is sent as the server's instructions (the
# text clients put into the prompt), for the tests of pinned instructions.
server = MCPServer("orders", version="1.0.0", instructions=os.environ.get("ORDERS_INSTRUCTIONS"))


@server.tool(description=LOOKUP)
def lookup_order(order_id: str) -> str:
    return f"order {order_id}: shipped"


def search_orders(query: str, page_size: int = PAGE_SIZE) -> str:
    """Search orders by customer, product or date."""
    return f"{page_size} results for {query}"


# The default is set at import time from the variant; the decorator reads it
# from the signature.
server.tool()(search_orders)

if __name__ == "__main__":
    # ORDERS_PORT, when set, serves Streamable HTTP on 127.0.0.1 instead.
    if os.environ.get("ORDERS_PORT"):
        server.run("streamable-http", port=int(os.environ["ORDERS_PORT"]), host="127.0.0.1")
    else:
        server.run("stdio")
