"""Loading the catalog `toolpin evals run` hands over, and writing case
records for `toolpin compare` (docs/compare.md, "Case records")."""

import json
import os

# What TOOLPIN_MANIFEST_FORMAT says, and the shapes `load_tools` writes.
_FORMATS = ("mcp", "openai", "anthropic")
SHAPES = ("mcp", "openai", "openai-responses", "anthropic", "gemini")


class HarnessError(Exception):
    """A catalog or a record toolpin cannot hand over or take; one line."""


def under_toolpin():
    """Whether this process runs under `toolpin evals run`."""
    return bool(os.environ.get("TOOLPIN_MANIFEST"))


def _read_manifest(path, fmt):
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except OSError as e:
        raise HarnessError(f"cannot read the catalog {path}: {e.strerror}") from None
    except ValueError as e:
        raise HarnessError(f"{path}: not JSON ({e})") from None
    if fmt == "mcp":
        tools = doc.get("tools") if isinstance(doc, dict) else None
    else:
        tools = doc
    if not isinstance(tools, list):
        expected = '{"tools": [...]}' if fmt == "mcp" else "an array"
        raise HarnessError(f"{path}: not a {fmt} catalog (expected {expected})")
    return tools


def _as_mcp(tool, fmt):
    """One tool of the catalog as an MCP tool (`name`, `description`,
    `inputSchema`, and whatever else it carries)."""
    if fmt == "mcp":
        return dict(tool)
    if fmt == "openai":
        fn = dict(tool.get("function") or {})
        if "parameters" in fn:
            fn["inputSchema"] = fn.pop("parameters")
        return fn
    out = dict(tool)
    if "input_schema" in out:
        out["inputSchema"] = out.pop("input_schema")
    return out


def _shape(tool, shape):
    schema = tool.get("inputSchema")
    described = {k: tool[k] for k in ("name", "description") if k in tool}
    if shape == "mcp":
        return tool
    if shape == "openai":
        fn = dict(described)
        if schema is not None:
            fn["parameters"] = schema
        if "strict" in tool:
            fn["strict"] = tool["strict"]
        return {"type": "function", "function": fn}
    if shape == "openai-responses":
        out = {"type": "function", **described}
        if schema is not None:
            out["parameters"] = schema
        if "strict" in tool:
            out["strict"] = tool["strict"]
        return out
    if shape == "anthropic":
        if isinstance(tool.get("type"), str) and schema is None:
            return tool  # an Anthropic server tool, as pinned
        return {**described, "input_schema": schema if schema is not None else {"type": "object"}}
    if shape == "gemini":
        out = dict(described)
        if schema is not None:
            out["parametersJsonSchema"] = schema
        return out
    raise HarnessError(f"unknown shape {shape!r}; use one of {', '.join(SHAPES)}")


def load_tools(shape="openai", path=None, fmt=None):
    """The catalog of this side (TOOLPIN_MANIFEST, in TOOLPIN_MANIFEST_FORMAT)
    in the shape an SDK takes:

    - ``"openai"``: a Chat Completions ``tools`` array;
    - ``"openai-responses"``: a Responses ``tools`` array;
    - ``"anthropic"``: a Messages ``tools`` array;
    - ``"gemini"``: ``[{"functionDeclarations": [...]}]`` (google-genai's
      ``tools``, JSON Schema under ``parametersJsonSchema``);
    - ``"mcp"``: the list of MCP tools.

    Tools keep the catalog's order (namespaced-name order) and names."""
    if shape not in SHAPES:
        raise HarnessError(f"unknown shape {shape!r}; use one of {', '.join(SHAPES)}")
    path = path or os.environ.get("TOOLPIN_MANIFEST")
    if not path:
        raise HarnessError("TOOLPIN_MANIFEST is not set: run the harness under `toolpin evals run`, or pass path=")
    fmt = fmt or os.environ.get("TOOLPIN_MANIFEST_FORMAT") or "mcp"
    if fmt == "openai-chat":
        fmt = "openai"
    if fmt not in _FORMATS:
        raise HarnessError(f"TOOLPIN_MANIFEST_FORMAT {fmt!r} is not one of {', '.join(_FORMATS)}")
    tools = [_shape(_as_mcp(t, fmt), shape) for t in _read_manifest(path, fmt)]
    if shape == "gemini":
        return [{"functionDeclarations": tools}] if tools else []
    return tools


def _get(obj, name, default=None):
    if isinstance(obj, dict):
        return obj.get(name, default)
    return getattr(obj, name, default)


def _arguments(raw):
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except ValueError:
            return raw
    return raw


def tool_calls_from(*objects):
    """The tool calls in SDK objects, in order, as case-record entries
    ``{"name", "arguments"}``. Each object may be an openai Chat Completion,
    one of its messages or tool calls; a Responses response or one of its
    output items; an Anthropic message or ``tool_use`` block; a list of any
    of these; or the same as plain dicts. Names are kept exactly as the
    model emitted them."""
    calls = []

    def visit(obj):
        if obj is None:
            return
        if isinstance(obj, (list, tuple)):
            for o in obj:
                visit(o)
            return
        choices = _get(obj, "choices")
        if choices is not None:  # a Chat Completion
            for c in choices:
                visit(_get(c, "message"))
            return
        function = _get(obj, "function")
        if function is not None and _get(function, "name") is not None:  # a chat tool call
            calls.append({"name": _get(function, "name"), "arguments": _arguments(_get(function, "arguments"))})
            return
        kind = _get(obj, "type")
        if kind == "function_call":  # a Responses output item
            calls.append({"name": _get(obj, "name"), "arguments": _arguments(_get(obj, "arguments"))})
            return
        if kind == "tool_use":  # an Anthropic block
            calls.append({"name": _get(obj, "name"), "arguments": _get(obj, "input")})
            return
        for member in ("tool_calls", "output", "content"):
            inner = _get(obj, member)
            if isinstance(inner, (list, tuple)):
                visit(inner)

    for obj in objects:
        visit(obj)
    return calls


def _count(name, value):
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise HarnessError(f"{name} must be a non-negative integer, not {value!r}")
    return value


def write_case(case, passed, tool_calls=None, turns=None, cost=None, score=None, error=None, path=None, repeat=None):
    """Appends one case record (docs/case-record.schema.json) to
    ``$TOOLPIN_OUTPUT_DIR/cases.jsonl`` (or ``path``), as one write of one
    line so that parallel workers do not interleave. ``tool_calls`` may be
    entries or SDK objects (see ``tool_calls_from``); ``repeat`` defaults to
    TOOLPIN_REPEAT. Returns the record."""
    if not isinstance(case, str) or not case:
        raise HarnessError(f"case must be a non-empty string, not {case!r}")
    if not isinstance(passed, bool):
        raise HarnessError(f"passed must be True or False, not {passed!r}")
    record = {"case": case, "passed": passed}
    if repeat is None and os.environ.get("TOOLPIN_REPEAT", "").isdigit():
        repeat = int(os.environ["TOOLPIN_REPEAT"])
    if repeat is not None:
        record["repeat"] = _count("repeat", repeat)
    if score is not None:
        record["score"] = float(score)
    if tool_calls is not None:
        entries = [c for c in tool_calls if isinstance(c, dict) and "name" in c and set(c) <= {"name", "arguments"}]
        record["tool_calls"] = entries if len(entries) == len(tool_calls) else tool_calls_from(tool_calls)
    if turns is not None:
        record["turns"] = _count("turns", turns)
    if cost is not None:
        unknown = set(cost) - {"input_tokens", "output_tokens", "usd"}
        if unknown:
            raise HarnessError(f"cost takes input_tokens, output_tokens and usd, not {sorted(unknown)}")
        record["cost"] = cost
    if error is not None:
        record["error"] = error if isinstance(error, (str, int, float, bool, list, dict)) else repr(error)
    line = json.dumps(record, ensure_ascii=False, default=str) + "\n"
    if path is None:
        path = os.path.join(os.environ.get("TOOLPIN_OUTPUT_DIR") or ".", "cases.jsonl")
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode("utf-8"))
    finally:
        os.close(fd)
    return record
