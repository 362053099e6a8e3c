"""The stand-in refund agent on the example's pinned catalog and on the
vendor's drifted one (README: "Prefer search_orders when the ID is unknown."
appended to lookup_order's description).

    python3 -m unittest discover -s examples/refund/evals -v

Needs no toolpin binary: the catalogs are written here the way
`toolpin evals run` writes an "mcp" manifest (tools/list-like, namespaced
names, name order), from a temporary copy of tools/ with the vendor's edit
made on the copy, as the README's `sed` does.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLE = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import agent  # noqa: E402

PINNED_SENTENCE = '"Look up an order by ID."'
DRIFTED_SENTENCE = '"Look up an order by ID. Prefer search_orders when the ID is unknown."'


def write_manifest(tools_dir, path):
    """What toolpin writes for manifest = "mcp" from examples/refund's two
    servers: orders (MCP, prefix orders__) and billing (OpenAI Chat)."""
    with open(os.path.join(tools_dir, "orders.json"), encoding="utf-8") as f:
        orders = json.load(f)["tools"]
    with open(os.path.join(tools_dir, "billing.openai.json"), encoding="utf-8") as f:
        billing = json.load(f)
    tools = [dict(t, name="orders__" + t["name"]) for t in orders]
    for t in billing:
        fn = t["function"]
        tools.append({"name": fn["name"], "description": fn["description"],
                      "inputSchema": fn["parameters"], "strict": fn.get("strict")})
    for t in tools:  # toolpin's normal form sorts `required`
        if "required" in t["inputSchema"]:
            t["inputSchema"] = dict(t["inputSchema"], required=sorted(t["inputSchema"]["required"]))
    tools.sort(key=lambda t: t["name"])
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"tools": tools}, f, indent=2, sort_keys=True)
        f.write("\n")


def rate(records):
    return sum(r["passed"] for r in records) / len(records)


class RefundEvals(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="refund-evals-")
        tools = os.path.join(cls.tmp, "tools")
        shutil.copytree(os.path.join(EXAMPLE, "tools"), tools)
        cls.pinned = os.path.join(cls.tmp, "pinned.mcp.json")
        write_manifest(tools, cls.pinned)
        # The vendor's edit, on the copy.
        path = os.path.join(tools, "orders.json")
        with open(path, encoding="utf-8") as f:
            text = f.read()
        assert text.count(PINNED_SENTENCE) == 1, "examples/refund/tools/orders.json changed"
        with open(path, "w", encoding="utf-8") as f:
            f.write(text.replace(PINNED_SENTENCE, DRIFTED_SENTENCE))
        cls.drifted = os.path.join(cls.tmp, "live.mcp.json")
        write_manifest(tools, cls.drifted)
        cls.p = agent.run(cls.pinned)
        cls.d = agent.run(cls.drifted)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def test_about_sixty_cases_with_long_carts(self):
        with open(agent.CASES, encoding="utf-8") as f:
            cases = json.load(f)["cases"]
        self.assertGreaterEqual(len(cases), 55)
        carts = [len(next(o for o in c["orders"] if o["order_id"] == c["expected"]["order_id"])["items"])
                 for c in cases]
        self.assertGreaterEqual(sum(n >= 9 for n in carts), 8)
        self.assertEqual(len(self.p), len(cases))

    def test_the_model_reads_roles_and_the_steering_sentence_from_the_catalog(self):
        pinned = agent.Model(agent.load_manifest(self.pinned))
        drifted = agent.Model(agent.load_manifest(self.drifted))
        self.assertEqual(pinned.roles, {"lookup": "orders__lookup_order", "search": "orders__search_orders",
                                        "refund": "orders__refund_order"})
        self.assertEqual(pinned.steer, {})
        self.assertEqual(drifted.steer, {"orders__lookup_order": "orders__search_orders"})
        self.assertEqual(drifted.first_tool("orders__lookup_order"), "orders__search_orders")

    def test_other_wordings_of_a_steering_sentence(self):
        tools = agent.load_manifest(self.pinned)
        for sentence in ("Use search_orders instead.", "Prefer `orders__search_orders` for most lookups.",
                         "Always call search_orders first.", "Instead, use search_orders."):
            edited = [dict(t, description=t["description"] + " " + sentence)
                      if t["name"] == "orders__lookup_order" else t for t in tools]
            self.assertEqual(agent.Model(edited).steer, {"orders__lookup_order": "orders__search_orders"}, sentence)
        # A tool that is not in the catalog steers nothing.
        edited = [dict(t, description=t["description"] + " Prefer find_orders.")
                  if t["name"] == "orders__lookup_order" else t for t in tools]
        self.assertEqual(agent.Model(edited).steer, {})

    def test_pass_rates(self):
        self.assertTrue(0.88 <= rate(self.p) <= 0.96, rate(self.p))
        self.assertTrue(0.72 <= rate(self.d) <= 0.84, rate(self.d))

    def test_more_tool_calls_on_the_drifted_catalog(self):
        calls = lambda rs: sum(len(r["tool_calls"]) for r in rs) / len(rs)  # noqa: E731
        self.assertGreater(calls(self.d), calls(self.p) + 1)
        self.assertGreater(sum(r["turns"] for r in self.d), sum(r["turns"] for r in self.p))
        self.assertGreater(sum(r["cost"]["input_tokens"] for r in self.d),
                           sum(r["cost"]["input_tokens"] for r in self.p))

    def test_new_failures_searched_then_looked_up_and_ran_out_of_budget(self):
        new = [(p, d) for p, d in zip(self.p, self.d) if p["passed"] and not d["passed"]]
        self.assertGreaterEqual(len(new), 5)
        for p, d in new:
            names = [c["name"] for c in d["tool_calls"]]
            self.assertEqual(names[0], "orders__search_orders", d["case"])
            self.assertIn("orders__lookup_order", names, d["case"])
            self.assertNotIn("orders__refund_order", names, d["case"])
            self.assertEqual(len(names), agent.TOOL_BUDGET, d["case"])
            self.assertTrue(d["error"].startswith("tool budget exhausted"), d["error"])
            # On the pinned catalog the same case went straight to the order.
            self.assertEqual([c["name"] for c in p["tool_calls"]],
                             ["orders__lookup_order", "orders__refund_order"], p["case"])

    def test_the_evals_config_has_the_same_servers_as_toolpin_toml(self):
        import tomllib
        with open(os.path.join(EXAMPLE, "toolpin.toml"), "rb") as f:
            plain = tomllib.load(f)
        with open(os.path.join(EXAMPLE, "toolpin.evals.toml"), "rb") as f:
            evals = tomllib.load(f)
        self.assertEqual(evals["servers"], plain["servers"])
        self.assertEqual(evals["evals"]["refund"]["run"], "python3 evals/agent.py")
        self.assertEqual(evals["evals"]["refund"]["manifest"], "mcp")

    def test_records_are_toolpin_case_records(self):
        for r in self.p + self.d:
            self.assertEqual(list(r), ["case", "passed", "score", "repeat", "tool_calls", "turns", "cost", "error"])
            self.assertEqual(set(r["cost"]), {"input_tokens", "output_tokens", "usd"})
            self.assertEqual(r["repeat"], 0)
            self.assertEqual(r["turns"], len(r["tool_calls"]) + 1)
            self.assertEqual(r["error"] is None, r["passed"])
            self.assertTrue(all(c["name"] in {"orders__lookup_order", "orders__search_orders",
                                              "orders__refund_order"} for c in r["tool_calls"]))

    def test_same_seed_and_repeat_same_output(self):
        self.assertEqual(agent.run(self.pinned), self.p)
        self.assertEqual(agent.run(self.drifted, seed=7, repeat=3), agent.run(self.drifted, seed=7, repeat=3))

    def test_repeats_differ_a_little_on_the_same_catalog(self):
        base = [r["passed"] for r in self.p]
        spreads = []
        for repeat in range(1, 6):
            other = [r["passed"] for r in agent.run(self.pinned, repeat=repeat)]
            spreads.append(sum(a != b for a, b in zip(base, other)))
        self.assertGreater(max(spreads), 0, spreads)
        self.assertLessEqual(max(spreads), 3, spreads)

    def test_the_command_line_writes_cases_jsonl_and_exits_by_result(self):
        out = os.path.join(self.tmp, "out")
        env = dict(os.environ, TOOLPIN_MANIFEST=self.pinned, TOOLPIN_MANIFEST_FORMAT="mcp",
                   TOOLPIN_OUTPUT_DIR=out, TOOLPIN_SIDE="pinned", TOOLPIN_SEED="0", TOOLPIN_REPEAT="0")
        run = subprocess.run([sys.executable, os.path.join(HERE, "agent.py")], env=env,
                             capture_output=True, text=True)
        self.assertEqual(run.returncode, 1 if not all(r["passed"] for r in self.p) else 0, run.stderr)
        self.assertEqual(len(run.stdout.splitlines()), 1)
        self.assertIn("refund evals (pinned):", run.stdout)
        with open(os.path.join(out, "cases.jsonl"), encoding="utf-8") as f:
            self.assertEqual([json.loads(line) for line in f], self.p)
        with open(os.path.join(out, "cases.jsonl"), "rb") as f:
            first = f.read()
        subprocess.run([sys.executable, os.path.join(HERE, "agent.py")], env=env, capture_output=True)
        with open(os.path.join(out, "cases.jsonl"), "rb") as f:
            self.assertEqual(f.read(), first)

    def test_other_manifest_formats_give_the_same_results(self):
        with open(self.drifted, encoding="utf-8") as f:
            tools = json.load(f)["tools"]
        anthropic = [{"name": t["name"], "description": t["description"], "input_schema": t["inputSchema"]}
                     for t in tools]
        openai = [{"type": "function", "function": {"name": t["name"], "description": t["description"],
                                                     "parameters": t["inputSchema"]}} for t in tools]
        for fmt, doc in (("anthropic", anthropic), ("openai", openai)):
            path = os.path.join(self.tmp, f"live.{fmt}.json")
            with open(path, "w", encoding="utf-8") as f:
                json.dump(doc, f)
            got = agent.run(path, fmt)
            self.assertEqual([(r["case"], r["passed"], r["tool_calls"]) for r in got],
                             [(r["case"], r["passed"], r["tool_calls"]) for r in self.d], fmt)


if __name__ == "__main__":
    unittest.main()
