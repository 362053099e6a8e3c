# Recomputes docs/fingerprint-vectors.json (pip install rfc8785==0.1.4). Numbers are read as doubles, as JCS requires.
import hashlib, json, pathlib, rfc8785
sha = lambda value: hashlib.sha256(rfc8785.dumps(value)).hexdigest()
cases = json.loads(pathlib.Path(__file__).with_name("fingerprint-vectors.json").read_text("utf-8"), parse_int=float)
failed = 0
for case in cases:
    tools = {tool["name"]: sha(tool) for tool in case["normalized"]}
    named = sha(sorted(tools.items()))  # [[name, tool hex], ...] in code-point order of name
    if tools != case["tool_fingerprints"] or not named == case["server_fingerprint"] == case["catalog_fingerprint"]:
        failed += 1; print("FAIL", case["name"])
print(f"{len(cases) - failed} passed, {failed} failed")
raise SystemExit(failed > 0)
