"""The simulated orders server: in-process, deterministic, no network.

It answers the orders server's tools (lookup_order, search_orders,
refund_order) from one case's order history. Calls arrive under the names the
agent was given (orders__lookup_order, ...); the runtime's namespace prefix
is stripped as a real proxy would.

Like a server whose code and schema agree, search_orders pages by the
`page_size` default its advertised input schema declares (the manifest the
agent was given), so a change to that default changes how many pages a search
takes.
"""

import json

DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 100


class ToolError(Exception):
    pass


def server_name(name):
    """`orders__lookup_order` -> `lookup_order`."""
    return name.rsplit("__", 1)[-1]


def advertised_page_size(tools):
    for tool in tools:
        if server_name(tool.get("name", "")) == "search_orders":
            schema = tool.get("inputSchema") or {}
            prop = (schema.get("properties") or {}).get("page_size") or {}
            default = prop.get("default")
            if isinstance(default, int) and not isinstance(default, bool) and default >= 1:
                return min(default, MAX_PAGE_SIZE)
    return DEFAULT_PAGE_SIZE


class Backend:
    def __init__(self, orders, email, page_size=DEFAULT_PAGE_SIZE):
        self.orders = orders  # newest first
        self.email = email
        self.page_size = page_size
        self.by_id = {o["order_id"]: o for o in orders}
        self.lines = {}
        for o in orders:
            for it in o["items"]:
                self.lines[it["line_id"]] = (o, it)
        self.refunds = []

    def call(self, name, arguments):
        handler = {
            "lookup_order": self.lookup_order,
            "search_orders": self.search_orders,
            "refund_order": self.refund_order,
        }.get(server_name(name))
        if handler is None:
            return {"error": f"unknown tool: {name}"}
        try:
            return handler(dict(arguments))
        except ToolError as e:
            return {"error": str(e)}

    # lookup_order(order_id): an order ID gives the order with its items; a
    # line ID (as search results carry) gives that one line.
    def lookup_order(self, args):
        oid = args.get("order_id")
        if not isinstance(oid, str):
            raise ToolError("order_id is required")
        if oid in self.by_id:
            o = self.by_id[oid]
            return {
                "order_id": o["order_id"],
                "email": self.email,
                "placed_on": o["placed_on"],
                "status": o["status"],
                "items": [dict(it) for it in o["items"]],
            }
        if oid in self.lines:
            o, it = self.lines[oid]
            return dict(it, order_id=o["order_id"])
        raise ToolError(f"order not found: {oid}")

    # search_orders(email, status, page_size, cursor): one hit per order line,
    # newest order first, without titles or prices (the search index holds
    # SKUs, dates and statuses).
    def search_orders(self, args):
        email = args.get("email")
        status = args.get("status")
        size = args.get("page_size", self.page_size)
        if not isinstance(size, int) or size < 1 or size > MAX_PAGE_SIZE:
            raise ToolError("page_size must be 1..100")
        hits = []
        if email is None or email == self.email:
            for o in self.orders:
                if status is not None and o["status"] != status:
                    continue
                for i, it in enumerate(o["items"], 1):
                    hits.append({
                        "order_id": o["order_id"],
                        "line_id": it["line_id"],
                        "line": i,
                        "lines": len(o["items"]),
                        "sku": it["sku"],
                        "placed_on": o["placed_on"],
                        "status": o["status"],
                    })
        start = 0
        cursor = args.get("cursor")
        if cursor is not None:
            try:
                start = int(str(cursor).removeprefix("c"))
            except ValueError:
                raise ToolError(f"bad cursor: {cursor}")
        page = hits[start:start + size]
        nxt = start + size
        return {
            "results": page,
            "total": len(hits),
            "next_cursor": f"c{nxt}" if nxt < len(hits) else None,
        }

    def refund_order(self, args):
        oid = args.get("order_id")
        amount = args.get("amount_cents")
        reason = args.get("reason")
        if oid not in self.by_id:
            raise ToolError(f"order not found: {oid}")
        if not isinstance(amount, int) or amount < 1:
            raise ToolError("amount_cents must be a positive integer")
        if reason not in ("damaged", "late", "wrong_item", "other"):
            raise ToolError(f"bad reason: {reason}")
        total = sum(it["price_cents"] * it["qty"] for it in self.by_id[oid]["items"])
        if amount > total:
            raise ToolError(f"amount {amount} exceeds the order total {total}")
        self.refunds.append({"order_id": oid, "amount_cents": amount, "reason": reason})
        return {"refund_id": f"RF-{oid[4:]}-{len(self.refunds)}", "status": "refunded",
                "order_id": oid, "amount_cents": amount}


def dumps(value):
    return json.dumps(value, sort_keys=True, separators=(",", ":"))
