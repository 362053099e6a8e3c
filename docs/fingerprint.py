# Recomputes docs/fingerprint-vectors.json (pip install rfc8785==0.1.4). Numbers are read as doubles, as JCS requires.
import hashlib, json, pathlib, rfc8785
sha = lambda value: hashlib.sha256(rfc8785.dumps(value)).hexdigest()
cases, failed = json.loads(pathlib.Path(__file__).with_name("fingerprint-vectors.json").read_text("utf-8"), parse_int=float), 0
for case in cases:
    tools = {tool["name"]: sha(tool) for tool in case["normalized"]}
    pairs = [["", sha(case["instructions"])]] if "instructions" in case else []  # a live server's instructions first, then
    named = sha(pairs + [list(p) for p in sorted(tools.items())])  # [[name, tool hex], ...] in code-point order of name
    if tools != case["tool_fingerprints"] or not named == case["server_fingerprint"] == case["catalog_fingerprint"]:
        failed += 1; print("FAIL", case["name"])
print(f"{len(cases) - failed} passed, {failed} failed")
raise SystemExit(failed > 0)
