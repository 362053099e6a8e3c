"""An MCP client driven line by line, written with the official MCP Python
SDK (mcp 2.x ClientSession), for the proxy tests.

usage: py_client.py (--url URL | --cwd DIR -- COMMAND ARGS...)
                    [--sampling-answer TEXT] [--elicit-json JSON]

With --url it speaks Streamable HTTP to URL; otherwise it starts COMMAND
in DIR and speaks stdio to it (stdio_client). It initializes, then prints
one JSON line {"op": "ready", ...} and reads commands from standard input,
one JSON object a line, answering each with one JSON line on standard
output (the command's "op", plus what happened). Nothing else is printed on
standard output. Commands:

  {"op": "list"}                          the raw tools/list result, every page
  {"op": "list_typed"}                    the tool names as the SDK parsed them
  {"op": "call", "name", "args", "meta"}  the result (as the SDK parsed it) or
                                          the JSON-RPC error; META (optional) is
                                          sent as the request's _meta
  {"op": "call_raw", "name", "args", "meta"}
                                          the raw tools/call result, unparsed and
                                          unchecked (the SDK's call_tool checks
                                          structuredContent against the tool's
                                          outputSchema and raises on a mismatch)
  {"op": "progress", "name", "args"}      a call with a progress callback:
                                          the progress seen and the result
  {"op": "cancel", "name", "args", "after"}
                                          a call cancelled after AFTER seconds
  {"op": "concurrent", "calls": [{"name", "args"}...]}
                                          all at once; each one's outcome and
                                          how long it took, in order
  {"op": "echo_many", "name", "key", "n"} N calls at once, each with a unique
                                          message in argument KEY; counts how
                                          many came back with their own message
  {"op": "resources"} / {"op": "read", "uri"}
  {"op": "prompts"} / {"op": "prompt", "name", "args"}
  {"op": "wait_notification", "method", "timeout"}
                                          waits until a notification METHOD has
                                          arrived (since the last wait for it)
  {"op": "notifications"}                 the methods of every notification so far
  {"op": "quit"}

The sampling callback (declared only with --sampling-answer) answers with
TEXT; the elicitation callback (only with --elicit-json) accepts with the
JSON object given. Each server request is recorded and listed by
{"op": "server_requests"}.
"""

import argparse
import json
import sys
import time
from typing import Any

import anyio
import mcp.types as types
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from pydantic import TypeAdapter

RAW = TypeAdapter(dict[str, Any])


def out(record: dict) -> None:
    sys.stdout.write(json.dumps(record) + "\n")
    sys.stdout.flush()


def dump(model) -> Any:
    return model.model_dump(by_alias=True, mode="json", exclude_none=True)


def error_of(e: BaseException) -> dict:
    if isinstance(e, MCPError):
        err = {"code": e.code, "message": e.message}
        if e.data is not None:
            err["data"] = e.data
        return err
    return {"code": None, "message": f"{type(e).__name__}: {e}"}


class Driver:
    def __init__(self, args):
        self.args = args
        self.notifications: list[dict] = []
        self.seen: dict[str, int] = {}
        self.server_requests: list[dict] = []
        self.session: ClientSession | None = None

    # ---- callbacks -------------------------------------------------------

    async def on_message(self, message) -> None:
        if isinstance(message, Exception):
            self.notifications.append({"method": "exception", "message": str(message)})
            return
        self.notifications.append(dump(message))

    async def sampling(self, context, params: types.CreateMessageRequestParams):
        self.server_requests.append({"method": "sampling/createMessage", "params": dump(params)})
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text=self.args.sampling_answer),
            model="toolpin-test-model",
            stop_reason="endTurn",
        )

    async def elicitation(self, context, params: types.ElicitRequestParams):
        self.server_requests.append({"method": "elicitation/create", "params": dump(params)})
        return types.ElicitResult(action="accept", content=json.loads(self.args.elicit_json))

    # ---- commands ----------------------------------------------------------

    async def call(self, name: str, arguments: Any, **kw) -> dict:
        started = time.monotonic()
        try:
            result = await self.session.call_tool(name, arguments, **kw)
            return {"result": dump(result), "seconds": time.monotonic() - started}
        except Exception as e:  # noqa: BLE001 - reported to the test
            return {"error": error_of(e), "seconds": time.monotonic() - started}

    async def run(self, cmd: dict) -> dict:
        op = cmd["op"]
        s = self.session
        if op == "list":
            tools, cursor, pages = [], None, 0
            while True:
                params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
                raw = await s.send_request(types.ListToolsRequest(params=params), RAW)
                pages += 1
                tools.extend(raw.get("tools", []))
                cursor = raw.get("nextCursor")
                if not cursor:
                    return {"tools": tools, "pages": pages}
        if op == "list_typed":
            result = await s.list_tools()
            return {"names": [t.name for t in result.tools]}
        if op == "call":
            return await self.call(cmd["name"], cmd.get("args"), meta=cmd.get("meta"))
        if op == "call_raw":
            params = types.CallToolRequestParams(name=cmd["name"], arguments=cmd.get("args"), _meta=cmd.get("meta"))
            try:
                return {"result": await s.send_request(types.CallToolRequest(params=params), RAW)}
            except Exception as e:  # noqa: BLE001 - reported to the test
                return {"error": error_of(e)}
        if op == "progress":
            seen = []

            async def on_progress(progress, total, message):
                seen.append({"progress": progress, "total": total})

            r = await self.call(cmd["name"], cmd.get("args"), progress_callback=on_progress)
            r["progress"] = seen
            return r
        if op == "cancel":
            started = time.monotonic()
            outcome: dict = {}
            with anyio.move_on_after(cmd["after"]) as scope:
                outcome = await self.call(cmd["name"], cmd.get("args"))
            return {
                "cancelled": scope.cancelled_caught,
                "outcome": outcome,
                "seconds": time.monotonic() - started,
            }
        if op == "concurrent":
            calls = cmd["calls"]
            results: list = [None] * len(calls)

            async def one(i, c):
                results[i] = await self.call(c["name"], c.get("args"))

            async with anyio.create_task_group() as tg:
                for i, c in enumerate(calls):
                    tg.start_soon(one, i, c)
            return {"results": results}
        if op == "echo_many":
            n, key, name = cmd["n"], cmd["key"], cmd["name"]
            results: list = [None] * n

            async def one(i):
                results[i] = await self.call(name, {key: f"message-{i}-{i * 7919 % 1000003}"})

            started = time.monotonic()
            async with anyio.create_task_group() as tg:
                for i in range(n):
                    tg.start_soon(one, i)
            correct, wrong = 0, []
            for i, r in enumerate(results):
                want = f"message-{i}-{i * 7919 % 1000003}"
                texts = [c.get("text", "") for c in (r or {}).get("result", {}).get("content", [])]
                # Exactly this call's message, not another's.
                if any(extract(t, key) == want for t in texts):
                    correct += 1
                elif len(wrong) < 5:
                    wrong.append({"i": i, "got": r})
            return {
                "n": n,
                "answered": sum(1 for r in results if r is not None),
                "correct": correct,
                "wrong": wrong,
                "seconds": time.monotonic() - started,
            }
        if op == "resources":
            result = await s.list_resources()
            templates = await s.list_resource_templates()
            return {"resources": dump(result)["resources"], "templates": dump(templates)["resourceTemplates"]}
        if op == "read":
            return {"result": dump(await s.read_resource(cmd["uri"]))}
        if op == "prompts":
            return {"prompts": dump(await s.list_prompts())["prompts"]}
        if op == "prompt":
            return {"result": dump(await s.get_prompt(cmd["name"], cmd.get("args")))}
        if op == "wait_notification":
            method, deadline = cmd["method"], time.monotonic() + cmd.get("timeout", 5)
            started = time.monotonic()
            while time.monotonic() < deadline:
                count = sum(1 for n in self.notifications if n.get("method") == method)
                if count > self.seen.get(method, 0):
                    self.seen[method] = count
                    return {"arrived": True, "seconds": time.monotonic() - started}
                await anyio.sleep(0.02)
            return {"arrived": False, "seconds": time.monotonic() - started}
        if op == "notifications":
            return {"methods": [n.get("method") for n in self.notifications]}
        if op == "server_requests":
            return {"requests": self.server_requests}
        if op == "ping":
            await s.send_ping()
            return {}
        raise ValueError(f"unknown op {op!r}")

    async def serve(self, read, write) -> None:
        kwargs = {}
        if self.args.sampling_answer is not None:
            kwargs["sampling_callback"] = self.sampling
        if self.args.elicit_json is not None:
            kwargs["elicitation_callback"] = self.elicitation
        async with ClientSession(
            read,
            write,
            message_handler=self.on_message,
            client_info=types.Implementation(name="toolpin-test-py-client", version="1.0.0"),
            **kwargs,
        ) as session:
            self.session = session
            init = await session.initialize()
            out(
                {
                    "op": "ready",
                    "protocol_version": init.protocol_version,
                    "server_info": dump(init.server_info),
                    "capabilities": dump(init.capabilities),
                    "instructions": init.instructions,
                }
            )
            stdin = anyio.wrap_file(sys.stdin)
            while True:
                line = await stdin.readline()
                if not line:
                    return
                line = line.strip()
                if not line:
                    continue
                cmd = json.loads(line)
                if cmd["op"] == "quit":
                    out({"op": "quit"})
                    return
                try:
                    record = await self.run(cmd)
                except Exception as e:  # noqa: BLE001 - reported to the test
                    record = {"error": error_of(e)}
                record["op"] = cmd["op"]
                out(record)


def extract(text: str, key: str) -> str | None:
    """The argument KEY in an echo result: server-everything's "Echo: M", or
    scripted.py's JSON {"tool", "arguments"}."""
    if text.startswith("Echo: "):
        return text[len("Echo: "):]
    try:
        return json.loads(text)["arguments"][key]
    except (ValueError, KeyError, TypeError):
        return None


async def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--url")
    p.add_argument("--cwd")
    p.add_argument("--sampling-answer")
    p.add_argument("--elicit-json")
    p.add_argument("command", nargs="*")
    args = p.parse_args()
    driver = Driver(args)
    try:
        if args.url:
            async with streamable_http_client(args.url) as (read, write):
                await driver.serve(read, write)
        else:
            params = StdioServerParameters(command=args.command[0], args=args.command[1:], cwd=args.cwd)
            async with stdio_client(params) as (read, write):
                await driver.serve(read, write)
    except Exception as e:  # noqa: BLE001 - reported to the test
        out({"op": "fatal", "error": error_of(e)})
        sys.exit(1)


if __name__ == "__main__":
    anyio.run(main)
