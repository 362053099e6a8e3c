"""A router and a sub-agent, each its own tool array and model, with the
openai SDK: the router's request, the sub-agent's, the router's again.
With --conflict the sub-agent's `lookup_order` has another description;
with --reversed the sub-agent goes first."""

import sys

from openai import OpenAI


def function(name, description):
    return {"type": "function", "function": {"name": name, "description": description, "parameters": {"type": "object", "properties": {}}}}


ROUTER = [function("route_to_refunds", "Hand the case to the refunds agent."), function("lookup_order", "Look up an order by ID.")]
lookup = "Look up an order by ID." if "--conflict" not in sys.argv else "Look up an order by ID or email."
REFUNDS = [function("lookup_order", lookup), function("refund", "Refund an order.")]

client = OpenAI()
messages = [{"role": "user", "content": "Refund ORD-1"}]
turns = [("gpt-4.1", ROUTER), ("gpt-4.1-mini", REFUNDS), ("gpt-4.1", ROUTER)]
if "--reversed" in sys.argv:
    turns.reverse()
    turns = turns[1:]
for model, tools in turns:
    client.chat.completions.create(model=model, messages=messages, tools=tools)
