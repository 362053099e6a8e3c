#!/usr/bin/env bash
# The refund story's eval half, on a temporary copy of examples/refund (the
# repository is not touched): `toolpin lock` (pin the vendor's catalog), the
# vendor's one-sentence edit to lookup_order's description (the README's
# `sed`, on the copy), then `toolpin evals run refund -c toolpin.evals.toml`, and both sides'
# summary lines.
#
#   examples/refund/evals/demo.sh            # toolpin on PATH
#   TOOLPIN=target/debug/toolpin examples/refund/evals/demo.sh
#
# Exits 0 when both runs wrote their cases.jsonl (each side's own exit code is
# 1 whenever a case fails, which at ~92% the pinned side does too).
set -euo pipefail
example="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="${TOOLPIN:-toolpin}"
case "$bin" in */*) bin="$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")" ;; esac

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -R "$example" "$work/refund"
rm -rf "$work/refund/.toolpin" "$work/refund/evals/__pycache__"
cd "$work/refund"

"$bin" lock
sed 's/"Look up an order by ID\."/"Look up an order by ID. Prefer search_orders when the ID is unknown."/' \
    tools/orders.json >tools/orders.json.new
mv tools/orders.json.new tools/orders.json
grep -q 'Prefer search_orders' tools/orders.json

rc=0
"$bin" evals run refund -c toolpin.evals.toml || rc=$?
echo
for side in pinned live; do
    out=".toolpin/evals/refund/$side"
    if [ ! -s "$out/cases.jsonl" ]; then
        echo "demo: no $out/cases.jsonl" >&2
        exit 1
    fi
    printf '%-6s  %s\n' "$side" "$(cat "$out/stdout.txt")"
done
# The per-case comparison toolpin does not make yet: the cases that passed on
# the pinned catalog and failed on the live one, with what the live run called.
python3 - <<'PY'
import json
def load(side):
    with open(f".toolpin/evals/refund/{side}/cases.jsonl") as f:
        return {r["case"]: r for r in map(json.loads, f)}
pinned, live = load("pinned"), load("live")
new = [c for c in pinned if pinned[c]["passed"] and not live[c]["passed"]]
print(f"\n{len(new)} cases passed pinned and failed live:")
for c in new:
    calls = [t["name"].rsplit("__", 1)[-1] for t in live[c]["tool_calls"]]
    print(f"  {c}  {len(calls)} calls ({calls[0]} first), {live[c]['error']}")
PY
echo "(toolpin evals run exited $rc)"
