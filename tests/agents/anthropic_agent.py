"""The anthropic SDK's Messages API: a tool with cache_control, without
streaming and with."""

import anthropic

TOOLS = [
    {
        "name": "get_shipment",
        "description": "Where a shipment is now.",
        "input_schema": {
            "type": "object",
            "properties": {"tracking_id": {"type": "string"}},
            "required": ["tracking_id"],
        },
    },
    {
        "name": "open_ticket",
        "description": "Open a support ticket.",
        "input_schema": {
            "type": "object",
            "properties": {"summary": {"type": "string"}, "priority": {"type": "string", "enum": ["low", "high"]}},
            "required": ["summary"],
        },
        "cache_control": {"type": "ephemeral"},
    },
]

client = anthropic.Anthropic()
messages = [{"role": "user", "content": "Where is my parcel?"}]
message = client.messages.create(model="claude-sonnet-4-5", max_tokens=256, messages=messages, tools=TOOLS)
assert message.stop_reason == "end_turn"
with client.messages.stream(model="claude-sonnet-4-5", max_tokens=256, messages=messages, tools=TOOLS) as stream:
    assert stream.get_final_text()
