#!/usr/bin/env python3
"""The refund eval: a deterministic stand-in for a refund agent's model.

    python3 evals/agent.py                       # under `toolpin evals run`
    python3 evals/agent.py --manifest M.json --out DIR [--seed S] [--repeat R]

Python 3 standard library only, no network. The "model" is given the tool
catalog toolpin wrote (TOOLPIN_MANIFEST, in the TOOLPIN_MANIFEST_FORMAT
format: mcp, openai or anthropic) and decides from the tools' names,
descriptions and schemas which tool to call, with what arguments. It never
looks a tool up by a hard-coded name, so an edited description changes what it
does, as it would for a real model. See README.md beside this file.

Per case it writes one toolpin case record (a JSON line) to
$TOOLPIN_OUTPUT_DIR/cases.jsonl, prints a one-line summary, and exits 0 when
every case passed, 1 otherwise (2 on a usage error).
"""

import argparse
import json
import os
import random
import re
import sys

import backend as store

HERE = os.path.dirname(os.path.abspath(__file__))
CASES = os.path.join(HERE, "cases.json")

TOOL_BUDGET = 10  # tool calls per case; the refund must be among them

SYSTEM_PROMPT = (
    "You are the refund assistant of a kitchenware shop. Use the tools to find "
    "the customer's order, work out which items they are asking about, and "
    "refund exactly those, with the reason they give. Amounts are in cents."
)

# Words the stand-in takes as pointing at each refund reason (the enum values
# themselves come from refund tool's schema).
REASON_CUES = {
    "damaged": ["broken", "cracked", "smashed", "dented", "damaged", "shattered"],
    "late": ["late", "delayed", "promised date", "took weeks"],
    "wrong_item": ["wrong", "not what i ordered", "different item"],
}
WHOLE_ORDER = ["whole order", "everything", "entire order", "all of it"]

# How a model most often hears a steering sentence in a tool description:
# "Prefer X", "Use X instead", "Call X first", "Instead, use X". The named
# tool must exist in the catalog; a condition ("when the ID is unknown") is
# not weighed, just as the agent in the README's story did not weigh it.
STEERING = [
    re.compile(r"\bprefer(?:ably)?\s+(?:to\s+)?(?:use\s+|using\s+|call\s+|calling\s+)?`?([A-Za-z_][\w.\-]*)", re.I),
    re.compile(r"\b(?:use|call|try)\s+`?([A-Za-z_][\w.\-]*)`?\s+(?:instead|first|before)\b", re.I),
    re.compile(r"\binstead,?\s+(?:use|call)\s+`?([A-Za-z_][\w.\-]*)", re.I),
]

ORDER_ID = re.compile(r"\bORD-\d{3,}\b")
DATE = re.compile(r"\b\d{4}-\d{2}-\d{2}\b")


# --- the catalog -------------------------------------------------------------

def load_manifest(path, fmt=None):
    """The tools as [{name, description, inputSchema}], from an mcp
    ({"tools": [...]}), openai (Chat Completions) or anthropic document."""
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    items = doc.get("tools") if isinstance(doc, dict) else doc
    if not isinstance(items, list):
        raise ValueError(f"{path}: not a tools document")
    tools = []
    for t in items:
        if fmt in (None, "openai", "openai-chat") and isinstance(t.get("function"), dict):
            fn = t["function"]
            tools.append({"name": fn["name"], "description": fn.get("description", ""),
                          "inputSchema": fn.get("parameters") or {"type": "object"}})
        elif "input_schema" in t:
            tools.append({"name": t["name"], "description": t.get("description", ""),
                          "inputSchema": t["input_schema"]})
        elif "name" in t:
            tools.append({"name": t["name"], "description": t.get("description", ""),
                          "inputSchema": t.get("inputSchema") or {"type": "object"}})
    return tools


def words(text):
    return re.findall(r"[a-z]+", text.lower().replace("_", " "))


def props(tool):
    return (tool.get("inputSchema") or {}).get("properties") or {}


def required(tool):
    return (tool.get("inputSchema") or {}).get("required") or []


def role_scores(tool):
    """How well a tool fits each job the agent has, read from its name,
    description and schema."""
    name = words(tool["name"])
    desc = tool.get("description") or ""
    dwords = words(desc)
    first = dwords[:6]
    p = props(tool)
    ids = [k for k in required(tool) if k.endswith("id")]
    s = {"lookup": 0, "search": 0, "refund": 0}
    if "lookup" in name or ("look" in first and "up" in first) or "lookup" in first:
        s["lookup"] += 2
    if re.search(r"\bby (?:its )?id\b", desc, re.I):
        s["lookup"] += 1
    if "order" in name:
        s["lookup"] += 1
        s["search"] += 1
        s["refund"] += 1
    if ids:
        s["lookup"] += 1
    else:
        s["lookup"] = 0
    if {"search", "find", "query"} & (set(name) | set(first)):
        s["search"] += 2
    if any(k == "email" or v.get("format") == "email" for k, v in p.items()):
        s["search"] += 1
    if "refund" in name or "refund" in first:
        s["refund"] += 2
    if any("amount" in k for k in p):
        s["refund"] += 1
    return s


def steering_targets(tools):
    """{tool name: the other tool its description tells the model to prefer}."""
    names = [t["name"] for t in tools]

    def resolve(token, own):
        token = token.rstrip(".,;:)`'\"")
        for n in names:
            if n != own and (n == token or n.rsplit("__", 1)[-1] == token or token.rsplit("__", 1)[-1] == n):
                return n
        return None

    out = {}
    for t in tools:
        for pat in STEERING:
            for m in pat.finditer(t.get("description") or ""):
                target = resolve(m.group(1), t["name"])
                if target and t["name"] not in out:
                    out[t["name"]] = target
    return out


class Model:
    """What the stand-in takes from the catalog before it sees a case."""

    def __init__(self, tools):
        self.tools = {t["name"]: t for t in tools}
        self.roles = {}
        for role in ("lookup", "search", "refund"):
            best = max(tools, key=lambda t: (role_scores(t)[role], -len(t["name"])), default=None)
            if best is not None and role_scores(best)[role] >= 2:
                self.roles[role] = best["name"]
        self.steer = steering_targets(tools)
        self.prompt_chars = len(SYSTEM_PROMPT) + len(json.dumps(tools, sort_keys=True))
        refund = self.tools.get(self.roles.get("refund"), {})
        reason = props(refund).get(self.arg_for(refund, "reason") or "", {})
        self.reasons = list(reason.get("enum") or [])

    def role_of(self, name):
        for role, n in self.roles.items():
            if n == name:
                return role
        return None

    def first_tool(self, planned):
        """The tool the model calls first when it means to call `planned`:
        a description that says to prefer another tool moves it there."""
        seen = {planned}
        tool = planned
        while tool in self.steer and self.steer[tool] not in seen:
            tool = self.steer[tool]
            seen.add(tool)
        return tool

    def arg_for(self, tool, what):
        """The tool's parameter for `what` (order id, email, amount, reason)."""
        p = props(tool)
        for k, v in p.items():
            lk = k.lower()
            if what == "order_id" and lk.endswith("id") and "order" in (lk + (v.get("description") or "").lower()):
                return k
            if what == "email" and (lk == "email" or v.get("format") == "email"):
                return k
            if what == "amount" and "amount" in lk:
                return k
            if what == "reason" and "reason" in lk:
                return k
        if what == "order_id":
            ids = [k for k in p if k.lower().endswith("id")]
            return ids[0] if ids else None
        return None


# --- one case ----------------------------------------------------------------

class BudgetExhausted(Exception):
    pass


class Episode:
    def __init__(self, model, case, server, budget):
        self.model = model
        self.case = case
        self.server = server
        self.budget = budget
        self.calls = []
        self.transcript_chars = len(case["message"])
        self.input_tokens = 0
        self.output_tokens = 0

    def turn(self, out_chars):
        self.input_tokens += (self.model.prompt_chars + self.transcript_chars) // 4
        self.output_tokens += 12 + out_chars // 4

    def call(self, name, arguments):
        if len(self.calls) >= self.budget:
            raise BudgetExhausted()
        args_text = store.dumps(arguments)
        self.turn(len(name) + len(args_text))
        self.calls.append({"name": name, "arguments": arguments})
        result = self.server.call(name, arguments)
        self.transcript_chars += len(name) + len(args_text) + len(store.dumps(result))
        return result


def pick_reason(model, message, u):
    """The refund reason, from the customer's words and the reasons the refund
    tool's schema offers. When the message points two ways, the stand-in
    sometimes takes the weaker reading: `u` is this case run's random draw."""
    text = message.lower()
    scores = []
    for reason in model.reasons:
        cues = REASON_CUES.get(reason, [])
        scores.append((sum(text.count(c) for c in cues), reason))
    scores.sort(key=lambda s: -s[0])
    if not scores or scores[0][0] == 0:
        return "other" if "other" in model.reasons else (model.reasons[-1] if model.reasons else "other")
    top, runner = scores[0], scores[1] if len(scores) > 1 else (0, None)
    if runner[0] > 0 and u < 0.5 * runner[0] / (top[0] + runner[0]):
        return runner[1]
    return top[1]


def pick_items(message, items):
    text = message.lower()
    if any(w in text for w in WHOLE_ORDER):
        return list(items)
    return [it for it in items if it.get("title", "").lower() in text]


def run_case(model, case, page_size, u, budget=TOOL_BUDGET):
    server = store.Backend(case["orders"], case["email"], page_size)
    ep = Episode(model, case, server, budget)
    msg = case["message"]
    m = ORDER_ID.search(msg)
    given_id = m.group(0) if m else None
    d = DATE.search(msg)
    date = d.group(0) if d else None
    error = None
    try:
        lookup = model.roles.get("lookup")
        search = model.roles.get("search")
        refund = model.roles.get("refund")
        planned = lookup if given_id and lookup else search
        first = model.first_tool(planned) if planned else None
        if first is not None and model.role_of(first) is None:
            # Steered to a tool it has no plan for: it calls it once with what
            # it can fill in, then goes on with its plan.
            t = model.tools[first]
            args = {}
            for what, value in (("order_id", given_id), ("email", case["email"])):
                k = model.arg_for(t, what)
                if k and value:
                    args[k] = value
            ep.call(first, args)
            first = planned
        order_id, items = None, None
        if first == lookup and given_id:
            res = ep.call(lookup, {model.arg_for(model.tools[lookup], "order_id"): given_id})
            if "error" not in res:
                order_id, items = res["order_id"], res["items"]
        if order_id is None and search:
            order_id, items = search_then_resolve(model, ep, search, lookup, case["email"], given_id, date)
        if order_id is None:
            error = "order not found"
        else:
            chosen = pick_items(msg, items)
            if not chosen:
                error = "no item in the order matches the request"
            elif not refund:
                error = "no refund tool in the catalog"
            else:
                t = model.tools[refund]
                args = {
                    model.arg_for(t, "order_id"): order_id,
                    model.arg_for(t, "amount"): sum(it["price_cents"] * it.get("qty", 1) for it in chosen),
                    model.arg_for(t, "reason"): pick_reason(model, msg, u),
                }
                res = ep.call(refund, args)
                if "error" in res:
                    error = f"refund failed: {res['error']}"
    except BudgetExhausted:
        error = f"tool budget exhausted ({budget} calls) before {model.roles.get('refund', 'the refund')}"
    ep.turn(120)  # the final reply to the customer
    return ep, error


def search_then_resolve(model, ep, search, lookup, email, given_id, date):
    """Search first: page through the hits until the order's lines are all in
    hand, then look each line up by its ID (the hits carry no titles or
    prices). This is where a long cart costs a call per item."""
    t = model.tools[search]
    args = {model.arg_for(t, "email"): email}
    target, lines = None, {}
    while True:
        res = ep.call(search, dict(args))
        if "error" in res:
            return None, None
        for hit in res.get("results", []):
            if target is None and ((given_id and hit["order_id"] == given_id) or (date and hit["placed_on"] == date)):
                target = hit["order_id"]
            if hit["order_id"] == target:
                lines[hit["line"]] = hit
        if target and lines and len(lines) == next(iter(lines.values()))["lines"]:
            break
        if not res.get("next_cursor"):
            if target is None:
                return None, None
            break
        args["cursor"] = res["next_cursor"]
    if not lookup:
        return None, None
    key = model.arg_for(model.tools[lookup], "order_id")
    items = []
    for n in sorted(lines):
        res = ep.call(lookup, {key: lines[n]["line_id"]})
        if "error" not in res:
            items.append(res)
    return target, items


def score(case, ep, model):
    """(passed, score): passed when the only refund is the expected one."""
    refund = model.roles.get("refund")
    made = [c["arguments"] for c in ep.calls if c["name"] == refund]
    exp = case["expected"]
    if not made:
        return False, 0.0, None
    got = made[-1]
    t = model.tools[refund]
    fields = [("order_id", model.arg_for(t, "order_id")), ("amount_cents", model.arg_for(t, "amount")),
              ("reason", model.arg_for(t, "reason"))]
    right = [got.get(k) == exp[e] for e, k in fields]
    ok = all(right) and len(made) == 1 and not ep.server.refunds[1:]
    wrong = [f"{e} {got.get(k)!r}, expected {exp[e]!r}" for (e, k), r in zip(fields, right) if not r]
    return ok, round(sum(right) / 3, 4), ("wrong refund: " + "; ".join(wrong)) if wrong else None


# --- the harness -------------------------------------------------------------

def run(manifest, fmt=None, seed=0, repeat=0, cases_path=CASES):
    tools = load_manifest(manifest, fmt)
    model = Model(tools)
    page_size = store.advertised_page_size(tools)
    with open(cases_path, encoding="utf-8") as f:
        cases = json.load(f)["cases"]
    records = []
    for case in cases:
        rng = random.Random(f"{seed}/{repeat}/{case['id']}")
        u = rng.random()
        ep, error = run_case(model, case, page_size, u)
        passed, sc, wrong = score(case, ep, model)
        if not passed and error is None:
            error = wrong or "no refund made"
        records.append({
            "case": case["id"],
            "passed": passed,
            "score": 1.0 if passed else sc,
            "repeat": repeat,
            "tool_calls": ep.calls,
            "turns": len(ep.calls) + 1,
            "cost": {
                "input_tokens": ep.input_tokens,
                "output_tokens": ep.output_tokens,
                "usd": round(ep.input_tokens * 3e-6 + ep.output_tokens * 15e-6, 6),
            },
            "error": None if passed else error,
        })
    return records


def summary(records, side, seed, repeat):
    n = len(records)
    ok = sum(r["passed"] for r in records)
    calls = sum(len(r["tool_calls"]) for r in records)
    budget = sum(1 for r in records if (r["error"] or "").startswith("tool budget"))
    usd = sum(r["cost"]["usd"] for r in records)
    return (f"refund evals ({side}): {ok}/{n} passed ({100 * ok / n:.1f}%), "
            f"{calls / n:.2f} tool calls per case, {budget} over the tool budget, "
            f"${usd:.4f}; seed {seed}, repeat {repeat}")


def int_env(name, default):
    value = os.environ.get(name, "")
    return int(value) if value.strip() else default


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--manifest", default=os.environ.get("TOOLPIN_MANIFEST"))
    ap.add_argument("--format", default=os.environ.get("TOOLPIN_MANIFEST_FORMAT"))
    ap.add_argument("--out", default=os.environ.get("TOOLPIN_OUTPUT_DIR"))
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--repeat", type=int, default=None)
    ap.add_argument("--cases", default=CASES)
    a = ap.parse_args(argv)
    if not a.manifest or not a.out:
        ap.error("needs a catalog and an output directory: TOOLPIN_MANIFEST and "
                 "TOOLPIN_OUTPUT_DIR (set by `toolpin evals run`), or --manifest and --out")
    try:
        seed = a.seed if a.seed is not None else int_env("TOOLPIN_SEED", 0)
        repeat = a.repeat if a.repeat is not None else int_env("TOOLPIN_REPEAT", 0)
    except ValueError as e:
        ap.error(f"TOOLPIN_SEED / TOOLPIN_REPEAT: {e}")
    records = run(a.manifest, a.format, seed, repeat, a.cases)
    os.makedirs(a.out, exist_ok=True)
    path = os.path.join(a.out, "cases.jsonl")
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8", newline="\n") as f:
        for r in records:
            f.write(json.dumps(r) + "\n")
    os.replace(tmp, path)
    print(summary(records, os.environ.get("TOOLPIN_SIDE", "catalog"), seed, repeat))
    return 0 if all(r["passed"] for r in records) else 1


if __name__ == "__main__":
    sys.exit(main())
