"""A tiny Streamable-HTTP-ish MCP server for header and secret tests.

    EXPECTED_TOKEN=... [EXPECTED_API_KEY=...] http_echo.py PORT

Standard library only. Every POST must carry `Authorization: Bearer
<EXPECTED_TOKEN>` (and, when EXPECTED_API_KEY is set, `X-Api-Key:
<EXPECTED_API_KEY>`); otherwise the answer is 401 with a plain-text body
that echoes the credentials received, the way careless servers do, so a
test can prove the client keeps them out of its messages. Requests are
answered with JSON (`initialize`, `tools/list` with one tool, `ping`);
notifications get 202; `server/discover` gets a -32601 error. GET is 405
(no server-initiated stream), DELETE ends the (fake) session.
"""

import json
import os
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TOKEN = os.environ.get("EXPECTED_TOKEN", "")
API_KEY = os.environ.get("EXPECTED_API_KEY")
SESSION = "echo-session-1"

TOOL = {
    "name": "echo",
    "description": "Echo the text back.",
    "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format, *args):  # noqa: A002 - the base class's name
        pass

    def reply(self, status, body=b"", content_type="application/json", headers=()):
        self.send_response(status)
        if body:
            self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        if body:
            self.wfile.write(body)

    def authorized(self):
        auth = self.headers.get("Authorization")
        key = self.headers.get("X-Api-Key")
        ok = bool(TOKEN) and auth == f"Bearer {TOKEN}" and (API_KEY is None or key == API_KEY)
        if not ok:
            body = f"unauthorized: got Authorization {auth!r} and X-Api-Key {key!r}".encode()
            self.reply(401, body, "text/plain", [("WWW-Authenticate", 'Bearer realm="echo"')])
        return ok

    def do_GET(self):
        if self.authorized():
            self.reply(405, b"no server-initiated stream here", "text/plain", [("Allow", "POST, DELETE")])

    def do_DELETE(self):
        if self.authorized():
            self.reply(200)

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        if not self.authorized():
            return
        try:
            msg = json.loads(raw)
        except ValueError:
            self.reply(400, b'{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}')
            return
        method, msg_id = msg.get("method"), msg.get("id")
        if method is None or msg_id is None:
            self.reply(202)
            return
        if method == "initialize":
            res = {
                "protocolVersion": "2025-11-25",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "http-echo", "version": "1.0.0"},
            }
        elif method == "tools/list":
            res = {"tools": [TOOL]}
        elif method == "ping":
            res = {}
        else:
            body = {"jsonrpc": "2.0", "id": msg_id, "error": {"code": -32601, "message": f"Method not found: {method}"}}
            self.reply(200, json.dumps(body).encode())
            return
        body = json.dumps({"jsonrpc": "2.0", "id": msg_id, "result": res}).encode()
        self.reply(200, body, headers=[("Mcp-Session-Id", SESSION)])


def main():
    if len(sys.argv) != 2:
        sys.stderr.write("usage: http_echo.py PORT\n")
        sys.exit(2)
    server = ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler)
    sys.stderr.write(f"http_echo: listening on 127.0.0.1:{server.server_port}\n")
    sys.stderr.flush()
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
