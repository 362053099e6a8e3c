"""The openai SDK's Responses API: function tools (strict and not) and a
hosted tool, without streaming and with."""

from openai import OpenAI

TOOLS = [
    {
        "type": "function",
        "name": "search_orders",
        "description": "Search orders by customer email.",
        "strict": True,
        "parameters": {
            "type": "object",
            "properties": {"email": {"type": "string"}, "limit": {"type": ["integer", "null"]}},
            "required": ["email", "limit"],
            "additionalProperties": False,
        },
    },
    {
        "type": "function",
        "name": "cancel_order",
        "description": "Cancel an order that has not shipped.",
        "strict": False,
        "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}},
    },
    # A hosted tool: no function to pin (toolpin warns and leaves it out).
    {"type": "web_search"},
]

client = OpenAI()
response = client.responses.create(model="gpt-5", input="Cancel my last order.", tools=TOOLS)
assert response.output_text
with client.responses.stream(model="gpt-5", input="Cancel my last order.", tools=TOOLS) as stream:
    for _ in stream:
        pass
    assert stream.get_final_response().output_text
