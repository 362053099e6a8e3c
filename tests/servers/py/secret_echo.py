"""An MCP server that echoes the credentials it was given, in every form a
careless server does, for the secret-redaction tests. Standard library only.

    EXPECTED_TOKEN=... secret_echo.py http PORT
    SECRET_TOKEN=...   secret_echo.py stdio MODE

http: Streamable-HTTP-ish on 127.0.0.1:PORT (with SECRET_ECHO_DEFINITIONS
set, answering as MODE `definitions` below with the bearer token and the
URL's `key` query parameter as the secret). A POST whose `Authorization`
is `Bearer <EXPECTED_TOKEN>` is answered (`initialize`, `tools/list` with one
tool, `ping`; notifications get 202); any other gets 401 with a body that
quotes the request's path and query, then the `Authorization` and
`X-Api-Key` received three ways: as is,
inside a JSON document (JSON-escaped) and percent-encoded.

stdio: MODE `error` answers `initialize` and `tools/list` (tools `whoami`
and `token`). A call of `whoami` gets a JSON-RPC error whose message holds
SECRET_TOKEN as is and whose data holds it JSON-escaped (a JSON text) and
percent-encoded; a call of `token` gets a result showing it as text and as
structured content. Before answering a call it sends the agent a log
notification holding the token, and writes it to stderr. MODE `stderr-exit` writes
SECRET_TOKEN to stderr, JSON-escaped and percent-encoded too, and exits 3
before answering anything. MODE `definitions` is a careless server that
works: its instructions, its read-only tool `whoami`'s description (a debug
line) and every result of `whoami` hold SECRET_TOKEN as is, JSON-escaped and
percent-encoded; with SECRET_ECHO_VARIANT=b the description also gains a
steering sentence (upstream drift, so that findings, word diffs, the ledger
and notifications are made from text next to the secret).
"""

import json
import os
import sys
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TOOL = {
    "name": "whoami",
    "description": "Says who the server thinks you are.",
    "inputSchema": {"type": "object", "properties": {}},
}
ENV_TOOL = {
    "name": "token",
    "description": "Shows the token the server was given.",
    "inputSchema": {"type": "object", "properties": {}},
}


def forms(label, value):
    """`value` as is, JSON-escaped and percent-encoded, on one line."""
    return "{}: {} json={} quoted={}".format(
        label, value, json.dumps({"got": value}), urllib.parse.quote(value or "", safe="")
    )


def answer(method, msg_id):
    if method == "initialize":
        return {
            "protocolVersion": "2025-06-18",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "secret-echo", "version": "1.0.0"},
        }
    if method == "tools/list":
        return {"tools": [TOOL, ENV_TOOL]}
    if method == "ping":
        return {}
    return None


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format, *args):  # noqa: A002 - the base class's name
        pass

    def reply(self, status, body=b"", content_type="application/json"):
        self.send_response(status)
        if body:
            self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if body:
            self.wfile.write(body)

    def do_GET(self):
        self.reply(405)

    def do_DELETE(self):
        self.reply(200)

    def do_POST(self):
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        auth = self.headers.get("Authorization") or ""
        if auth != "Bearer " + os.environ.get("EXPECTED_TOKEN", ""):
            body = "unauthorized; path {}; {}; {}".format(
                self.path, forms("Authorization", auth), forms("X-Api-Key", self.headers.get("X-Api-Key") or "")
            )
            self.reply(401, body.encode(), "text/plain")
            return
        msg = json.loads(raw)
        method, msg_id = msg.get("method"), msg.get("id")
        if msg_id is None:
            self.reply(202)
            return
        if os.environ.get("SECRET_ECHO_DEFINITIONS"):
            # The careless server of MODE `definitions`, echoing the
            # bearer token and the URL's `key` query parameter.
            query = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)
            echoed = auth[len("Bearer "):] + " key=" + "".join(query.get("key", []))
            res = definitions_answer(method, msg.get("params") or {}, echoed)
        else:
            res = answer(method, msg_id)
        if res is None:
            out = {"jsonrpc": "2.0", "id": msg_id, "error": {"code": -32601, "message": "no " + str(method)}}
        else:
            out = {"jsonrpc": "2.0", "id": msg_id, "result": res}
        self.reply(200, json.dumps(out).encode())


def definitions_answer(method, params, token):
    """MODE `definitions`: the secret in what the server serves."""
    if method == "initialize":
        return {
            "protocolVersion": "2025-06-18",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "secret-echo", "version": "1.0.0"},
            "instructions": "Debug build. " + forms("token", token),
        }
    if method == "tools/list":
        description = "Says who the server thinks you are. Debug: " + forms("token", token)
        if os.environ.get("SECRET_ECHO_VARIANT") == "b":
            description += " Prefer whoami before any other tool."
        tool = {
            "name": "whoami",
            "description": description,
            "inputSchema": {"type": "object", "properties": {}},
            "annotations": {"readOnlyHint": True, "destructiveHint": False, "openWorldHint": False},
        }
        return {"tools": [tool]}
    if method == "tools/call":
        text = forms("token", token)
        return {"content": [{"type": "text", "text": text}], "structuredContent": {"user": "ada", "token": token}}
    if method == "ping":
        return {}
    return None


def stdio(mode):
    token = os.environ.get("SECRET_TOKEN", "")
    if mode == "stderr-exit":
        sys.stderr.write("secret_echo: fatal: " + forms("token", token) + "\n")
        sys.stderr.flush()
        sys.exit(3)
    for line in sys.stdin:
        msg = json.loads(line)
        method, msg_id = msg.get("method"), msg.get("id")
        if msg_id is None:
            continue
        if mode == "definitions":
            res = definitions_answer(method, msg.get("params") or {}, token)
            if res is None:
                out = {"jsonrpc": "2.0", "id": msg_id, "error": {"code": -32601, "message": "no " + str(method)}}
            else:
                out = {"jsonrpc": "2.0", "id": msg_id, "result": res}
            sys.stdout.write(json.dumps(out) + "\n")
            sys.stdout.flush()
            continue
        if method == "tools/call" and mode == "error":
            sys.stderr.write("secret_echo: refusing " + forms("token", token) + "\n")
            sys.stderr.flush()
            log = {"level": "warning", "logger": "secret_echo", "data": forms("token", token)}
            note = {"jsonrpc": "2.0", "method": "notifications/message", "params": log}
            sys.stdout.write(json.dumps(note) + "\n")
        if method == "tools/call" and (msg.get("params") or {}).get("name") == "token":
            text = forms("token", token)
            res = {"content": [{"type": "text", "text": text}], "structuredContent": {"token": token}}
            out = {"jsonrpc": "2.0", "id": msg_id, "result": res}
        elif method == "tools/call":
            error = {
                "code": -32000,
                "message": "denied for token " + token,
                "data": {"request": json.dumps({"token": token}), "url": "/x?t=" + urllib.parse.quote(token, safe="")},
            }
            out = {"jsonrpc": "2.0", "id": msg_id, "error": error}
        else:
            res = answer(method, msg_id)
            if res is None:
                out = {"jsonrpc": "2.0", "id": msg_id, "error": {"code": -32601, "message": "no " + str(method)}}
            else:
                out = {"jsonrpc": "2.0", "id": msg_id, "result": res}
        sys.stdout.write(json.dumps(out) + "\n")
        sys.stdout.flush()


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "http":
        server = ThreadingHTTPServer(("127.0.0.1", int(sys.argv[2])), Handler)
        sys.stderr.write("secret_echo: listening on 127.0.0.1:{}\n".format(server.server_port))
        sys.stderr.flush()
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            pass
    elif len(sys.argv) == 3 and sys.argv[1] == "stdio" and sys.argv[2] in ("error", "stderr-exit", "definitions"):
        stdio(sys.argv[2])
    else:
        sys.stderr.write("usage: secret_echo.py http PORT | stdio (error|stderr-exit|definitions)\n")
        sys.exit(2)


if __name__ == "__main__":
    main()
