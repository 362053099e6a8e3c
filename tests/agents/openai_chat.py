"""Plain function calling with the openai SDK's Chat Completions: two
tools (one strict), a request without streaming and one with."""

from openai import OpenAI

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "lookup_order",
            "description": "Look up an order by ID.",
            "strict": True,
            "parameters": {
                "type": "object",
                "properties": {"order_id": {"type": "string", "description": "The order ID, e.g. ORD-1234."}},
                "required": ["order_id"],
                "additionalProperties": False,
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "refund",
            "description": "Refund an order, fully or in part.",
            "parameters": {
                "type": "object",
                "properties": {
                    "order_id": {"type": "string"},
                    "amount": {"type": "number", "minimum": 0},
                    "reason": {"type": "string", "enum": ["damaged", "late", "other"]},
                },
                "required": ["order_id"],
            },
        },
    },
]

client = OpenAI()
messages = [{"role": "system", "content": "You are a refund agent."}, {"role": "user", "content": "Refund ORD-1."}]
reply = client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=TOOLS)
assert reply.choices[0].message.tool_calls is None
stream = client.chat.completions.create(
    model="gpt-4o-mini", messages=messages, tools=TOOLS, stream=True, stream_options={"include_usage": True}
)
text = "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)
assert text, "the stream carried the final message"
