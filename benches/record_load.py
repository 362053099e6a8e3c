"""Load for scripts/bench-record: N Chat Completions requests to the
endpoint `toolpin record` serves, over one keep-alive connection, each with
a 40-tool array and a 20-turn conversation (about 44 KB). Every 100th
request carries an array unlike the others (a sub-agent), every 10th asks
for a stream. Prints nothing (toolpin discards stdout); writes the mean
client-side time per request, in ms, to the file named by argv[2]."""

import http.client
import json
import os
import sys
import time
import urllib.parse


def tool(i, salt):
    return {"type": "function", "function": {
        "name": f"tool_{i:02}{salt}", "strict": True,
        "description": f"Look up record {i} by its ID and return its status, owner and history.",
        "parameters": {"type": "object", "additionalProperties": False,
                       "required": ["id", "limit", "status", "fields"],
                       "properties": {
                           "id": {"type": "string", "description": "The record's ID, e.g. REC-1234."},
                           "limit": {"type": ["integer", "null"]},
                           "status": {"type": "string", "enum": ["open", "closed", "pending", "archived"]},
                           "fields": {"type": "array", "items": {"type": "string"}}}}}}


def main():
    count, report = int(sys.argv[1]), sys.argv[2]
    base = urllib.parse.urlsplit(os.environ["OPENAI_BASE_URL"])
    conn = http.client.HTTPConnection(base.hostname, base.port)
    messages = [{"role": "user" if i % 2 == 0 else "assistant", "content": "A turn of the conversation so far. " * 30}
                for i in range(20)]
    same = [tool(i, "") for i in range(40)]
    spent = 0.0
    for n in range(count):
        tools = [tool(i, f"_v{n}") for i in range(40)] if n % 100 == 99 else same
        body = json.dumps({"model": "gpt-4.1-mini", "messages": messages, "tools": tools, "stream": n % 10 == 9})
        start = time.perf_counter()
        conn.request("POST", base.path + "/chat/completions", body, {"Content-Type": "application/json"})
        response = conn.getresponse()
        response.read()
        spent += time.perf_counter() - start
        assert response.status == 200, response.status
    with open(report, "w") as f:
        f.write(f"{spent / count * 1000:.3f}\n")


main()
