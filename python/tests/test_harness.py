"""The harness helpers with real pytest (its pytester, running a suite
under the plugin) and real SDK objects (openai, anthropic); every record
is checked against docs/case-record.schema.json."""

import json
import os
import pathlib

import jsonschema
import pytest
from anthropic.types import Message
from openai.types.chat import ChatCompletion
from openai.types.responses import Response

import toolpin

pytest_plugins = ["pytester"]

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "docs/case-record.schema.json").read_text())

MCP = {"tools": [
    {"name": "orders__lookup_order", "description": "Look up an order by ID.",
     "inputSchema": {"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]},
     "annotations": {"readOnlyHint": True}},
    {"name": "billing__refund", "strict": True, "inputSchema": {"type": "object"}},
    {"name": "ping"},
]}


def valid(record):
    jsonschema.Draft202012Validator(SCHEMA).validate(record)
    return record


def chat_completion():
    return ChatCompletion.model_validate({
        "id": "c1", "object": "chat.completion", "created": 0, "model": "gpt-4.1",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
            "role": "assistant", "content": None,
            "tool_calls": [
                {"id": "t1", "type": "function", "function": {"name": "orders__lookup_order", "arguments": "{\"order_id\": \"ORD-1\"}"}},
                {"id": "t2", "type": "function", "function": {"name": "billing__refund", "arguments": "{}"}},
            ]}}],
    })


def responses_response():
    return Response.model_validate({
        "id": "r1", "object": "response", "created_at": 0, "model": "gpt-5", "parallel_tool_calls": True,
        "tool_choice": "auto", "tools": [],
        "output": [
            {"type": "reasoning", "id": "rs1", "summary": []},
            {"type": "function_call", "id": "f1", "call_id": "c1", "name": "ping", "arguments": "{}"},
        ],
    })


def anthropic_message():
    return Message.model_validate({
        "id": "m1", "type": "message", "role": "assistant", "model": "claude", "stop_reason": "tool_use",
        "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1},
        "content": [{"type": "text", "text": "Looking."},
                    {"type": "tool_use", "id": "u1", "name": "orders__lookup_order", "input": {"order_id": "ORD-2"}}],
    })


@pytest.fixture
def catalog(tmp_path, monkeypatch):
    path = tmp_path / "pinned.mcp.json"
    path.write_text(json.dumps(MCP))
    monkeypatch.setenv("TOOLPIN_MANIFEST", str(path))
    monkeypatch.setenv("TOOLPIN_MANIFEST_FORMAT", "mcp")
    return path


def test_load_tools_in_each_sdk_shape(catalog):
    chat = toolpin.load_tools("openai")
    assert chat[0] == {"type": "function", "function": {
        "name": "orders__lookup_order", "description": "Look up an order by ID.",
        "parameters": MCP["tools"][0]["inputSchema"]}}
    assert chat[1]["function"]["strict"] is True
    assert chat[2] == {"type": "function", "function": {"name": "ping"}}
    responses = toolpin.load_tools("openai-responses")
    assert responses[1] == {"type": "function", "name": "billing__refund", "parameters": {"type": "object"}, "strict": True}
    anthropic = toolpin.load_tools("anthropic")
    assert anthropic[2] == {"name": "ping", "input_schema": {"type": "object"}}
    gemini = toolpin.load_tools("gemini")
    assert gemini[0]["functionDeclarations"][0]["parametersJsonSchema"]["required"] == ["order_id"]
    assert toolpin.load_tools("mcp") == MCP["tools"]


def test_each_manifest_format_reads_back_the_same(tmp_path, monkeypatch):
    openai = [{"type": "function", "function": {"name": "a", "parameters": {"type": "object"}, "strict": True}}]
    anthropic = [{"name": "a", "input_schema": {"type": "object"}}]
    for fmt, doc in (("openai", openai), ("anthropic", anthropic)):
        path = tmp_path / f"m.{fmt}.json"
        path.write_text(json.dumps(doc))
        monkeypatch.setenv("TOOLPIN_MANIFEST", str(path))
        monkeypatch.setenv("TOOLPIN_MANIFEST_FORMAT", fmt)
        assert toolpin.load_tools("anthropic") == [{"name": "a", "input_schema": {"type": "object"}}]


def test_load_tools_errors_are_one_line(tmp_path, monkeypatch):
    monkeypatch.delenv("TOOLPIN_MANIFEST", raising=False)
    with pytest.raises(toolpin.HarnessError, match="TOOLPIN_MANIFEST is not set"):
        toolpin.load_tools()
    bad = tmp_path / "bad.json"
    bad.write_text("[1,")
    with pytest.raises(toolpin.HarnessError, match="not JSON"):
        toolpin.load_tools(path=str(bad), fmt="openai")
    with pytest.raises(toolpin.HarnessError, match="unknown shape"):
        toolpin.load_tools("bedrock", path=str(bad))
    bad.write_text("[]")
    with pytest.raises(toolpin.HarnessError, match="not a mcp catalog"):
        toolpin.load_tools(path=str(bad), fmt="mcp")


def test_tool_calls_from_the_sdks_objects():
    assert toolpin.tool_calls_from(chat_completion()) == [
        {"name": "orders__lookup_order", "arguments": {"order_id": "ORD-1"}},
        {"name": "billing__refund", "arguments": {}},
    ]
    message = chat_completion().choices[0].message
    assert [c["name"] for c in toolpin.tool_calls_from(message.tool_calls[1], message)] == [
        "billing__refund", "orders__lookup_order", "billing__refund"]
    assert toolpin.tool_calls_from(responses_response()) == [{"name": "ping", "arguments": {}}]
    assert toolpin.tool_calls_from([anthropic_message()]) == [
        {"name": "orders__lookup_order", "arguments": {"order_id": "ORD-2"}}]
    # The same as plain dicts (a response logged as JSON).
    assert toolpin.tool_calls_from(chat_completion().model_dump()) == toolpin.tool_calls_from(chat_completion())


def test_write_case_appends_valid_records(tmp_path, monkeypatch):
    monkeypatch.setenv("TOOLPIN_OUTPUT_DIR", str(tmp_path))
    monkeypatch.setenv("TOOLPIN_REPEAT", "2")
    toolpin.write_case("refund-1", True, tool_calls=[chat_completion()], turns=2,
                       cost={"input_tokens": 10, "output_tokens": 3, "usd": 0.001}, score=1)
    toolpin.write_case("refund-2", False, tool_calls=[], error=ValueError("budget"))
    lines = (tmp_path / "cases.jsonl").read_text().splitlines()
    records = [valid(json.loads(line)) for line in lines]
    assert records[0]["repeat"] == 2 and records[0]["tool_calls"][0]["name"] == "orders__lookup_order"
    assert records[1] == {"case": "refund-2", "passed": False, "repeat": 2, "tool_calls": [], "error": "ValueError('budget')"}
    with pytest.raises(toolpin.HarnessError, match="passed must be True or False"):
        toolpin.write_case("x", "yes")
    with pytest.raises(toolpin.HarnessError, match="cost takes"):
        toolpin.write_case("x", True, cost={"dollars": 1})


SUITE = '''
import pytest

def test_passes(toolpin_case):
    toolpin_case.record(COMPLETION)
    toolpin_case.turn()
    toolpin_case.add_cost(input_tokens=5, output_tokens=2)

def test_fails(toolpin_case):
    toolpin_case.call("orders__lookup_order", {"order_id": "ORD-9"})
    assert 1 == 2, "refund refused"

def test_without_the_fixture():
    pass

@pytest.mark.skip(reason="not today")
def test_skipped():
    pass

@pytest.fixture
def broken():
    raise RuntimeError("no backend")

def test_setup_error(broken):
    pass
'''


def test_the_plugin_writes_one_record_per_test(pytester, tmp_path):
    # The suite's tests get a real openai ChatCompletion object.
    completion = json.dumps(chat_completion().model_dump())
    header = (
        "from openai.types.chat import ChatCompletion\n"
        f"COMPLETION = ChatCompletion.model_validate_json({completion!r})\n"
    )
    pytester.makepyfile(test_suite=header + SUITE)
    out = tmp_path / "cases.jsonl"
    result = pytester.runpytest("-p", "toolpin.pytest_plugin", f"--toolpin-cases={out}")
    result.assert_outcomes(passed=2, failed=1, skipped=1, errors=1)
    records = {r["case"]: valid(r) for r in map(json.loads, out.read_text().splitlines())}
    assert set(records) == {"test_suite.py::test_passes", "test_suite.py::test_fails",
                            "test_suite.py::test_without_the_fixture", "test_suite.py::test_setup_error"}
    passes = records["test_suite.py::test_passes"]
    assert passes["passed"] is True and passes["turns"] == 1
    assert [c["name"] for c in passes["tool_calls"]] == ["orders__lookup_order", "billing__refund"]
    assert passes["cost"] == {"input_tokens": 5, "output_tokens": 2}
    fails = records["test_suite.py::test_fails"]
    assert fails["passed"] is False and "refund refused" in fails["error"]
    assert fails["tool_calls"] == [{"name": "orders__lookup_order", "arguments": {"order_id": "ORD-9"}}]
    assert "tool_calls" not in records["test_suite.py::test_without_the_fixture"]
    assert records["test_suite.py::test_setup_error"]["passed"] is False
    assert "no backend" in records["test_suite.py::test_setup_error"]["error"]


def test_the_plugin_is_idle_outside_toolpin(pytester, monkeypatch):
    monkeypatch.delenv("TOOLPIN_OUTPUT_DIR", raising=False)
    pytester.makepyfile(test_x="def test_a(toolpin_case):\n    toolpin_case.call('a')\n")
    result = pytester.runpytest("-p", "toolpin.pytest_plugin")
    result.assert_outcomes(passed=1)
    assert not any(p.name == "cases.jsonl" for p in pytester.path.rglob("*"))
