"""An agent stand-in whose tool choice a description can steer, for the
production-detection test (crates/toolpin/tests/production.rs). Written with
the official MCP Python SDK (mcp 2.x ClientSession over Streamable HTTP).

usage: steered_agent.py --url URL --tasks N --seed S [--per-second R]

Before each task it lists the tools, as an agent does each turn, and reads
lookup_order's description. It then picks lookup_order or search_orders the
way a model nudged by that text would: search_orders for 4 tasks in 20, or 7
in 20 once the description says "Prefer search_orders". Picks are dealt from
shuffled decks of 20, so the shares are exact over every 20 tasks and only
the order is seeded: a run with no steering shows no shift by construction,
not by luck. It calls the tool it picked and prints one JSON line:
{"tasks": N, "picks": {tool: n}, "errors": n, "steered_tasks": n}.
"""

import argparse
import json
import random
import time

import anyio
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

STEER = "Prefer search_orders"
DECK = 20


def deal(rng: random.Random, steered: bool) -> list[str]:
    searches = 7 if steered else 4
    deck = ["search"] * searches + ["lookup"] * (DECK - searches)
    rng.shuffle(deck)
    return deck


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--tasks", type=int, required=True)
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--per-second", type=float, default=25.0)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    picks: dict[str, int] = {}
    errors = 0
    steered_tasks = 0
    deck: list[str] = []
    deck_steered = None
    async with streamable_http_client(args.url) as (read, write, *_):
        async with ClientSession(read, write) as session:
            await session.initialize()
            start = time.monotonic()
            for task in range(args.tasks):
                listed = await session.list_tools()
                by_suffix = {}
                for tool in listed.tools:
                    for suffix in ("lookup_order", "search_orders"):
                        if tool.name.endswith(suffix):
                            by_suffix[suffix] = tool
                lookup = by_suffix["lookup_order"]
                search = by_suffix["search_orders"]
                steered = STEER in (lookup.description or "")
                steered_tasks += int(steered)
                # A new deck when the text the agent reads changes.
                if not deck or steered != deck_steered:
                    deck = deal(rng, steered)
                    deck_steered = steered
                choice = deck.pop()
                if choice == "search":
                    name, arguments = search.name, {"query": f"customer {task % 37}"}
                else:
                    name, arguments = lookup.name, {"order_id": f"A-{task}"}
                result = await session.call_tool(name, arguments)
                picks[name] = picks.get(name, 0) + 1
                errors += int(bool(result.is_error))
                # Paced: the next task starts at its slot, not before.
                slot = start + (task + 1) / args.per_second
                delay = slot - time.monotonic()
                if delay > 0:
                    await anyio.sleep(delay)
    print(
        json.dumps(
            {
                "tasks": args.tasks,
                "picks": dict(sorted(picks.items())),
                "errors": errors,
                "steered_tasks": steered_tasks,
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    anyio.run(main)
