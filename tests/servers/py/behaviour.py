"""An order-search server for the contract tests (`toolpin contract record`
and `run`), written with the official MCP Python SDK's high-level server.
Its two read-only tools keep their declarations while their behaviour
switches on TOOLPIN_TEST_DRIFT:

- unset: search_orders answers 50 rows by default, newest first (`id` and
  `created` descending), statuses open / pending / closed, countries as
  English names; get_order answers one order, and a bad order id
  ("bad") is a validation error;
- page20: 20 rows when page_size is left out (the schema's default still
  says 50, and page_size = 50 passed explicitly still gives 50; the first
  20 rows hold every status and country);
- status: a fourth status value, refunded;
- iso: countries as ISO 3166-1 alpha-2 codes (Germany -> DE);
- reorder: the same rows, oldest first;
- slow: every search sleeps 300 ms;
- ratelimit: a bad order id answers "429 rate limit exceeded" instead of
  the validation error.
"""

import json
import os
import re
import time
from datetime import datetime, timedelta, timezone
from typing import Annotated, Optional

from pydantic import BaseModel, Field, WithJsonSchema

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations

DRIFT = os.environ.get("TOOLPIN_TEST_DRIFT", "")

server = MCPServer("behaviour", version="1.0.0")

COUNTRIES = [("Germany", "DE"), ("France", "FR"), ("Japan", "JP"), ("Brazil", "BR"), ("Canada", "CA")]
NEWEST = datetime(2026, 12, 2, 12, 0, 0, tzinfo=timezone.utc)


def statuses():
    s = ["open", "pending", "closed"]
    if DRIFT == "status":
        s.append("refunded")
    return s


def row(i):
    """The i-th newest order: ids and timestamps fall as i grows."""
    name, code = COUNTRIES[i % len(COUNTRIES)]
    s = statuses()
    return {
        "id": f"ord-{1000 - i:04d}",
        "status": s[i % len(s)],
        "country": code if DRIFT == "iso" else name,
        "created": (NEWEST - timedelta(minutes=17 * i)).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }


# page_size is declared exactly as `page_size: int = 50` would be
# ({"default": 50, "title": "Page Size", "type": "integer"}), but a call
# that leaves it out gets None here: the server can tell "left out" from
# "50 passed", which is what a moved server-side default looks like.
PageSize = Annotated[
    Optional[int],
    WithJsonSchema({"type": "integer"}),
    Field(json_schema_extra={"default": 50}),
]


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def search_orders(page_size: PageSize = None) -> str:
    """Search orders, newest first."""
    if DRIFT == "slow":
        time.sleep(0.3)
    if page_size is None:
        page_size = 20 if DRIFT == "page20" else 50
    rows = [row(i) for i in range(page_size)]
    if DRIFT == "reorder":
        rows.reverse()
    return json.dumps({"rows": rows, "total": 1000})


class Order(BaseModel):
    id: str
    status: str
    currency: str
    amount: int
    created: str


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def get_order(order_id: str) -> Order:
    """One order by its id (ord-NNNN)."""
    if not re.fullmatch(r"ord-[0-9]{4}", order_id):
        if DRIFT == "ratelimit":
            raise ToolError("429 rate limit exceeded")
        raise ToolError(f"invalid argument: order_id {order_id!r} is not an order id")
    i = max(0, 1000 - int(order_id[4:]))
    r = row(i)
    return Order(id=order_id, status=r["status"], currency="EUR", amount=100 + i, created=r["created"])


if __name__ == "__main__":
    server.run("stdio")
