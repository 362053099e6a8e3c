#!/usr/bin/env python3
"""A stdio MCP server for the `toolpin contract run` benchmark
(scripts/bench-contract): ten read-only list tools whose results are
realistic JSON, deterministic so that a recorded snapshot matches every run.
Standard library only, newline-delimited JSON-RPC, protocol 2025-11-25.

Each `tools/call` answers a page of rows (id, status, created newest first,
amount, currency, country, email, customer UUID, tags) as `structuredContent`
and the same JSON as one text content item, as the SDKs do. Arguments:
`page` (default 1), `page_size` (default 20), `status` (optional filter).

The server measures its own CPU time: getrusage(RUSAGE_SELF) user + sys
(plus RUSAGE_CHILDREN, for a launcher's processes reaped before exec), from exec (interpreter start included) to exit, appended as one JSON line to
the file named by $BENCH_CPU_FILE when stdin reaches EOF (then it exits at
once, with os._exit, so that no interpreter teardown goes uncounted), at
any other exit (atexit) and on SIGTERM. The line also counts the requests
received by method, so the harness can see what a client sent, and the
wall-clock times of the first request and of EOF (`t_first`, `t_eof`), so
the harness can split a client's wall time into before, during and after
the session.

usage: BENCH_CPU_FILE=/path/cpu.jsonl contract_server.py
"""
import atexit
import json
import os
import resource
import signal
import sys
import time
from datetime import datetime, timedelta, timezone

TOOLS = ["orders", "invoices", "payments", "refunds", "shipments",
         "tickets", "customers", "subscriptions", "disputes", "payouts"]
STATUSES = ["open", "pending", "closed", "cancelled"]
COUNTRIES = ["Germany", "France", "Japan", "Brazil", "Canada", "Spain", "Italy"]
CURRENCIES = ["EUR", "USD", "JPY", "BRL", "CAD"]
NEWEST = datetime(2026, 12, 2, 12, 0, 0, tzinfo=timezone.utc)

methods = {}
written = False
clock = {}  # wall-clock times (time.time()) of the first request and of EOF


def write_cpu():
    global written
    if written:
        return
    written = True
    path = os.environ.get("BENCH_CPU_FILE")
    if not path:
        return
    ru = resource.getrusage(resource.RUSAGE_SELF)
    # Children reaped before exec (a launcher script's) count as the server's.
    rc = resource.getrusage(resource.RUSAGE_CHILDREN)
    user, sys_ = ru.ru_utime + rc.ru_utime, ru.ru_stime + rc.ru_stime
    line = json.dumps({"pid": os.getpid(), "cpu_ms": (user + sys_) * 1000.0,
                       "user_ms": user * 1000.0, "sys_ms": sys_ * 1000.0,
                       "methods": methods, **clock})
    with open(path, "a") as f:
        f.write(line + "\n")


def on_term(signum, frame):
    write_cpu()
    os._exit(0)


def row_schema():
    return {
        "type": "object",
        "properties": {
            "id": {"type": "string"},
            "status": {"type": "string", "enum": STATUSES},
            "created": {"type": "string", "format": "date-time"},
            "amount": {"type": "integer"},
            "currency": {"type": "string"},
            "country": {"type": "string"},
            "email": {"type": "string"},
            "customer": {"type": "string", "format": "uuid"},
            "tags": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["id", "status", "created", "amount", "currency"],
    }


def tool(name):
    return {
        "name": f"list_{name}",
        "title": f"List {name}",
        "description": f"List {name}, newest first, one page at a time. Filter by status.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "page": {"type": "integer", "minimum": 1, "default": 1},
                "page_size": {"type": "integer", "minimum": 1, "maximum": 100, "default": 20},
                "status": {"type": "string", "enum": STATUSES},
            },
        },
        "outputSchema": {
            "type": "object",
            "properties": {
                "rows": {"type": "array", "items": row_schema()},
                "total": {"type": "integer"},
                "page": {"type": "integer"},
                "next_page": {"type": ["integer", "null"]},
            },
            "required": ["rows", "total", "page"],
        },
        "annotations": {"readOnlyHint": True, "openWorldHint": False},
    }


def row(t, i, status):
    """The i-th newest row of tool t: ids and timestamps fall as i grows."""
    k = t * 7919 + i
    return {
        "id": f"{TOOLS[t][:3]}-{9999 - i:04d}",
        "status": status or STATUSES[k % len(STATUSES)],
        "created": (NEWEST - timedelta(minutes=13 * i + t)).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "amount": 100 + (k * 37) % 9000,
        "currency": CURRENCIES[k % len(CURRENCIES)],
        "country": COUNTRIES[k % len(COUNTRIES)],
        "email": f"customer{k % 500}@example.com",
        "customer": "%08x-%04x-4%03x-8%03x-%012x" % (k * 2654435761 % (1 << 32), t, i % 4096, k % 4096, k * 40503),
        "tags": ["priority"] if k % 5 == 0 else [],
    }


def call(name, args):
    t = TOOLS.index(name[len("list_"):])
    page = int(args.get("page", 1))
    size = int(args.get("page_size", 20))
    status = args.get("status")
    start = (page - 1) * size
    rows = [row(t, start + j, status) for j in range(size)]
    data = {"rows": rows, "total": 2000, "page": page, "next_page": page + 1}
    return {"content": [{"type": "text", "text": json.dumps(data)}], "structuredContent": data}


def main():
    atexit.register(write_cpu)
    signal.signal(signal.SIGTERM, on_term)
    tools = [tool(n) for n in TOOLS]
    names = {t["name"] for t in tools}
    out = sys.stdout
    for line in sys.stdin:
        if not line.strip():
            continue
        clock.setdefault("t_first", time.time())
        msg = json.loads(line)
        method = msg.get("method", "")
        methods[method] = methods.get(method, 0) + 1
        if "id" not in msg:
            continue
        if method == "initialize":
            reply = {"result": {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                                "serverInfo": {"name": "contract-bench", "version": "1.0.0"}}}
        elif method == "tools/list":
            reply = {"result": {"tools": tools}}
        elif method == "tools/call":
            params = msg.get("params") or {}
            if params.get("name") in names:
                reply = {"result": call(params["name"], params.get("arguments") or {})}
            else:
                reply = {"error": {"code": -32602, "message": f"unknown tool {params.get('name')!r}"}}
        elif method == "ping":
            reply = {"result": {}}
        else:
            reply = {"error": {"code": -32601, "message": "Method not found"}}
        reply = {"jsonrpc": "2.0", "id": msg["id"], **reply}
        out.write(json.dumps(reply) + "\n")
        out.flush()
    # stdin EOF: the client is done.
    clock["t_eof"] = time.time()
    write_cpu()
    out.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
