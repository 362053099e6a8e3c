// The openai npm package: Chat Completions with a strict tool.
import OpenAI from "openai";

const client = new OpenAI();
const reply = await client.chat.completions.create({
  model: "gpt-4o-mini",
  messages: [{ role: "user", content: "Refund ORD-1" }],
  tools: [{ type: "function", function: { name: "refund", description: "Refund an order.", strict: true,
    parameters: { type: "object", properties: { order_id: { type: "string" } }, required: ["order_id"], additionalProperties: false } } }],
});
if (reply.choices[0].message.tool_calls?.length) throw new Error("unexpected tool call");
