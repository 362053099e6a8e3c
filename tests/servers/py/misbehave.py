"""A stdio MCP server that misbehaves on purpose, one way per MODE.

Standard library only; newline-delimited JSON-RPC on stdin/stdout. It
answers `initialize` with protocolVersion 2025-11-25, refuses
`server/discover` with -32601 (an older server), answers `ping`, and
serves `tools/list` as MODE says:

  ok                 one well-behaved page with one tool
  endless-cursor     every page says nextCursor "same" (new tools each time)
  invalid-json       prints garbage on stdout instead of the tools/list answer
  hang               never answers tools/list, and ignores the end of stdin
  hang-init          never answers initialize
  exit-mid-list      page 1 has a nextCursor; exits with status 4 on page 2
  many-tools         10,000 tools in pages of 500
  dup-across-pages   tool "shared" on page 1 and on page 2
  stderr-then-exit   writes three lines to stderr (the third names the value
                     of SECRET_TOKEN) and exits 3 before answering anything
  print-env          one tool whose description holds the values of
                     SECRET_TOKEN and PROBE_VALUE
  slow-discover      a server of the stateless revision that is slow to
                     start: it answers the first server/discover after 6 s,
                     then refuses initialize on that connection (-32022, as
                     the Python SDK does) and serves the one tool of "ok"

Every mode first writes "misbehave: MODE ready" to stderr, so a test can
check that failures quote the server's stderr.
"""

import json
import os
import sys
import time

MODES = {
    "ok",
    "endless-cursor",
    "invalid-json",
    "hang",
    "hang-init",
    "exit-mid-list",
    "many-tools",
    "dup-across-pages",
    "stderr-then-exit",
    "print-env",
    "slow-discover",
}


def log(text):
    sys.stderr.write(text + "\n")
    sys.stderr.flush()


def send(message):
    # A client that stopped reading (toolpin does after invalid JSON) closes
    # the pipe: leave quietly rather than bury the stderr tail in a traceback.
    try:
        sys.stdout.write(json.dumps(message, separators=(",", ":")) + "\n")
        sys.stdout.flush()
    except BrokenPipeError:
        os._exit(0)


def result(msg_id, value):
    send({"jsonrpc": "2.0", "id": msg_id, "result": value})


def error(msg_id, code, message):
    send({"jsonrpc": "2.0", "id": msg_id, "error": {"code": code, "message": message}})


def tool(name, description=None):
    return {
        "name": name,
        "description": description or f"The {name} tool.",
        "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}},
    }


def stuck():
    """Never returns: a server that does not notice its stdin closed."""
    while True:
        time.sleep(3600)


def list_tools(mode, msg_id, cursor, state):
    state["pages"] += 1
    page = state["pages"]
    if mode == "ok":
        result(msg_id, {"tools": [tool("ok_tool")]})
    elif mode == "endless-cursor":
        result(msg_id, {"tools": [tool(f"page{page}_tool")], "nextCursor": "same"})
    elif mode == "invalid-json":
        sys.stdout.write("this is not JSON {oops\n")
        sys.stdout.flush()
        result(msg_id, {"tools": [tool("after_garbage")]})
    elif mode == "hang":
        log("misbehave: not answering tools/list")
        stuck()
    elif mode == "exit-mid-list":
        if cursor is None:
            result(msg_id, {"tools": [tool("first")], "nextCursor": "2"})
        else:
            log("misbehave: exiting in the middle of tools/list")
            sys.stdout.flush()
            os._exit(4)
    elif mode == "many-tools":
        start = int(cursor) if cursor is not None else 0
        end = min(start + 500, 10_000)
        answer = {"tools": [tool(f"tool_{i:05d}") for i in range(start, end)]}
        if end < 10_000:
            answer["nextCursor"] = str(end)
        result(msg_id, answer)
    elif mode == "dup-across-pages":
        if cursor is None:
            result(msg_id, {"tools": [tool("alpha"), tool("shared")], "nextCursor": "p2"})
        else:
            result(msg_id, {"tools": [tool("shared"), tool("omega")]})
    elif mode == "print-env":
        description = "SECRET_TOKEN={} PROBE_VALUE={}".format(
            os.environ.get("SECRET_TOKEN", "<unset>"), os.environ.get("PROBE_VALUE", "<unset>")
        )
        result(msg_id, {"tools": [tool("print_env", description)]})
    else:
        result(msg_id, {"tools": []})


def main():
    if len(sys.argv) != 2 or sys.argv[1] not in MODES:
        log("usage: misbehave.py MODE  (MODE: " + ", ".join(sorted(MODES)) + ")")
        sys.exit(2)
    mode = sys.argv[1]
    log(f"misbehave: {mode} ready")
    if mode == "stderr-then-exit":
        log("misbehave: loading configuration")
        log("misbehave: fatal: cannot start with token " + os.environ.get("SECRET_TOKEN", "<unset>"))
        sys.exit(3)
    state = {"pages": 0}
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            msg = json.loads(line)
        except ValueError:
            error(None, -32700, "parse error")
            continue
        method = msg.get("method")
        msg_id = msg.get("id")
        if method is None or msg_id is None:
            continue  # a response or a notification
        if mode == "slow-discover" and method == "server/discover":
            if not state.get("discovered"):
                time.sleep(6)
                state["discovered"] = True
            result(
                msg_id,
                {
                    "supportedVersions": ["2026-07-28"],
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "misbehave", "version": mode},
                },
            )
            continue
        if mode == "slow-discover" and method == "initialize" and state.get("discovered"):
            error(msg_id, -32022, "connection is serving the 2026-07-28 protocol")
            continue
        if mode == "slow-discover" and method == "tools/list":
            result(msg_id, {"tools": [tool("ok_tool")]})
            continue
        if method == "initialize":
            if mode == "hang-init":
                log("misbehave: not answering initialize")
                continue
            result(
                msg_id,
                {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "misbehave", "version": mode},
                },
            )
        elif method == "ping":
            result(msg_id, {})
        elif method == "tools/list":
            params = msg.get("params") or {}
            list_tools(mode, msg_id, params.get("cursor"), state)
        else:
            error(msg_id, -32601, f"Method not found: {method}")
    if mode == "hang":
        stuck()


if __name__ == "__main__":
    main()
