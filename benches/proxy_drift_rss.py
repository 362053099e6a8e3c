"""Peak and current RSS of `toolpin proxy` when its upstream drops the
`required` list of one N-parameter tool at run time (issue 12, point 3).

usage: .venv/bin/python benches/proxy_drift_rss.py TOOLPIN_BINARY [N]

The upstream is tests/servers/py/scripted.py: it serves tool `t` with N
required string parameters and a tool `switch`; calling `switch` makes it
serve the same tool with `required` emptied and send
notifications/tools/list_changed, on which the proxy runs the drift engine.
The agent side is plain JSON-RPC over the proxy's stdio. Prints the proxy's
RSS after tools/list (before the drift) and its VmHWM and VmRSS once the
events log has the drift (or after 60 s). Loopback only; everything runs in
a temporary directory, and the proxy (with its upstream) is ended at exit.
"""

import json
import os
import select
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PYTHON = os.path.join(ROOT, ".venv", "bin", "python")
SCRIPTED = os.path.join(ROOT, "tests", "servers", "py", "scripted.py")


def status(pid: int) -> dict:
    out = {}
    with open(f"/proc/{pid}/status", encoding="utf-8") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmHWM", "VmRSS"):
                out[key] = int(value.split()[0]) // 1024
    return out


def main() -> None:
    binary = os.path.abspath(sys.argv[1])
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 6000
    with tempfile.TemporaryDirectory() as work:
        props = {f"p{i}": {"type": "string"} for i in range(n)}

        def tools(required):
            return {
                "tools": [
                    {"name": "t", "description": "d",
                     "inputSchema": {"type": "object", "properties": props,
                                     "required": required}},
                    {"name": "switch", "description": "switch",
                     "inputSchema": {"type": "object"}},
                ],
                "behaviors": {"switch": "switch"},
            }

        path = os.path.join(work, "tools.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(tools(list(props)), f)
        with open(path + ".next", "w", encoding="utf-8") as f:
            json.dump(tools([]), f)
        with open(os.path.join(work, "toolpin.toml"), "w", encoding="utf-8") as f:
            f.write(f"[servers.s]\ncommand = {json.dumps([PYTHON, SCRIPTED, path])}\n")
        subprocess.run([binary, "lock"], cwd=work, check=True,
                       stdout=subprocess.DEVNULL, timeout=120)
        events = os.path.join(work, "events.jsonl")
        proxy = subprocess.Popen(
            [binary, "proxy", "--events", events], cwd=work,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            start_new_session=True)
        try:
            run(proxy, events, n)
        finally:
            try:
                proxy.stdin.close()
                proxy.wait(timeout=10)
            except Exception:
                os.killpg(proxy.pid, 9)
                proxy.wait()


def run(proxy, events: str, n: int) -> None:
    buf = b""

    def send(msg):
        proxy.stdin.write((json.dumps(msg) + "\n").encode())
        proxy.stdin.flush()

    def answer(id_, deadline=60):
        nonlocal buf
        end = time.time() + deadline
        while time.time() < end:
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                msg = json.loads(line)
                if msg.get("id") == id_:
                    return msg
            ready, _, _ = select.select([proxy.stdout], [], [], 1)
            if ready:
                chunk = os.read(proxy.stdout.fileno(), 1 << 20)
                if not chunk:
                    raise SystemExit("proxy closed its stdout")
                buf += chunk
        raise SystemExit(f"no answer to request {id_}")

    send({"jsonrpc": "2.0", "id": 1, "method": "initialize",
          "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                     "clientInfo": {"name": "rss", "version": "0"}}})
    answer(1)
    send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    answer(2)
    before = status(proxy.pid)
    send({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
          "params": {"name": "switch", "arguments": {}}})
    answer(3)
    t0 = time.time()
    seen = False
    while time.time() - t0 < 60 and not seen:
        time.sleep(0.2)
        if os.path.exists(events):
            with open(events, encoding="utf-8") as f:
                seen = any('"t"' in line and "drift" in line for line in f)
    after = status(proxy.pid)
    print(f"N={n} rss_before_drift_mib={before['VmRSS']} "
          f"drift_logged={seen} after_s={time.time() - t0:.1f} "
          f"peak_rss_mib={after['VmHWM']} rss_after_mib={after['VmRSS']}")


if __name__ == "__main__":
    main()
