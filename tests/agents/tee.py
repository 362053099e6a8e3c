"""The tests' own copy of what an agent sends: run as
`python tee.py DIR -- CMD...` under `toolpin record`, it takes the base
URLs toolpin set, serves a forwarding endpoint of its own, points the
variables at it, runs CMD, and saves each request body it forwards, byte
for byte, as DIR/NNN.json (with DIR/NNN.path holding the request's path).
It is the reference the recorded tools are compared with; it uses only
the standard library."""

import http.server
import os
import subprocess
import sys
import threading
import urllib.parse
import urllib.request

VARIABLES = ("OPENAI_BASE_URL", "OPENAI_API_BASE", "ANTHROPIC_BASE_URL", "GOOGLE_GEMINI_BASE_URL")


def main():
    out, sep, *command = sys.argv[1:]
    assert sep == "--", "usage: tee.py DIR -- CMD..."
    os.makedirs(out, exist_ok=True)
    upstream = urllib.parse.urlsplit(os.environ["OPENAI_BASE_URL"])
    origin = f"{upstream.scheme}://{upstream.netloc}"
    count = [0]
    lock = threading.Lock()

    class Forward(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def _relay(self, body):
            request = urllib.request.Request(origin + self.path, data=body, method=self.command)
            for name in ("Content-Type",):
                if self.headers.get(name):
                    request.add_header(name, self.headers[name])
            try:
                with urllib.request.urlopen(request) as response:
                    status, content_type, payload = response.status, response.headers.get("Content-Type"), response.read()
            except urllib.error.HTTPError as e:
                status, content_type, payload = e.code, e.headers.get("Content-Type"), e.read()
            self.send_response(status)
            self.send_header("Content-Type", content_type or "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def do_POST(self):
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length)
            with lock:
                count[0] += 1
                n = count[0]
            with open(os.path.join(out, f"{n:03}.json"), "wb") as f:
                f.write(body)
            with open(os.path.join(out, f"{n:03}.path"), "w") as f:
                f.write(self.path)
            self._relay(body)

        def do_GET(self):
            self._relay(None)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Forward)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    mine = f"http://127.0.0.1:{server.server_address[1]}"
    env = dict(os.environ)
    for name in VARIABLES:
        if name in env:
            env[name] = env[name].replace(origin, mine)
    code = subprocess.call(command, env=env)
    server.shutdown()
    sys.exit(code)


if __name__ == "__main__":
    main()
