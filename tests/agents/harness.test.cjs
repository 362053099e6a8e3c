// The JS/TS harness helpers (npm/toolpin/lib/harness.js) with real openai
// npm objects: the client is pointed at a local server that answers a
// Chat Completion and a Responses response with tool calls. Run with
// `node --test tests/agents/harness.test.cjs`; TOOLPIN_JS names the
// package to test (scripts/check-package: the installed one).
"use strict";

const assert = require("node:assert/strict");
const fs = require("node:fs");
const http = require("node:http");
const os = require("node:os");
const path = require("node:path");
const test = require("node:test");
const OpenAI = require("openai");

const toolpin = require(process.env.TOOLPIN_JS || path.join(__dirname, "../../npm/toolpin"));

const CATALOG = {
  tools: [
    { name: "orders__lookup_order", description: "Look up an order by ID.", inputSchema: { type: "object", required: ["order_id"] } },
    { name: "ping", strict: true },
  ],
};

function serve(answers) {
  const server = http.createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      const body = answers[req.url];
      res.writeHead(body ? 200 : 404, { "content-type": "application/json" });
      res.end(JSON.stringify(body || { error: { message: "no" } }));
    });
  });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(server)));
}

test("loadTools gives each SDK shape", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "toolpin-js-"));
  const file = path.join(dir, "pinned.mcp.json");
  fs.writeFileSync(file, JSON.stringify(CATALOG));
  process.env.TOOLPIN_MANIFEST = file;
  process.env.TOOLPIN_MANIFEST_FORMAT = "mcp";
  assert.deepEqual(toolpin.loadTools("openai")[0], {
    type: "function",
    function: { name: "orders__lookup_order", description: "Look up an order by ID.", parameters: CATALOG.tools[0].inputSchema },
  });
  assert.deepEqual(toolpin.loadTools("openai-responses")[1], { type: "function", name: "ping", strict: true });
  assert.deepEqual(toolpin.loadTools("anthropic")[1], { name: "ping", input_schema: { type: "object" } });
  assert.equal(toolpin.loadTools("gemini")[0].functionDeclarations[0].parametersJsonSchema.required[0], "order_id");
  assert.throws(() => toolpin.loadTools("bedrock"), /unknown shape/);
  delete process.env.TOOLPIN_MANIFEST;
  assert.throws(() => toolpin.loadTools(), /TOOLPIN_MANIFEST is not set/);
});

test("tool calls come out of the openai package's objects, and records are written", async () => {
  const server = await serve({
    "/v1/chat/completions": {
      id: "c1", object: "chat.completion", created: 0, model: "gpt-4.1",
      choices: [{ index: 0, finish_reason: "tool_calls", message: { role: "assistant", content: null, tool_calls: [
        { id: "t1", type: "function", function: { name: "orders__lookup_order", arguments: "{\"order_id\":\"ORD-1\"}" } },
      ] } }],
    },
    "/v1/responses": {
      id: "r1", object: "response", created_at: 0, model: "gpt-5", status: "completed",
      output: [{ type: "function_call", id: "f1", call_id: "c1", name: "ping", arguments: "{}", status: "completed" }],
    },
  });
  try {
    const client = new OpenAI({ apiKey: "test", baseURL: `http://127.0.0.1:${server.address().port}/v1` });
    const chat = await client.chat.completions.create({ model: "gpt-4.1", messages: [{ role: "user", content: "hi" }] });
    const response = await client.responses.create({ model: "gpt-5", input: "hi" });
    assert.deepEqual(toolpin.toolCallsFrom(chat, response), [
      { name: "orders__lookup_order", arguments: { order_id: "ORD-1" } },
      { name: "ping", arguments: {} },
    ]);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "toolpin-js-"));
    process.env.TOOLPIN_OUTPUT_DIR = dir;
    process.env.TOOLPIN_REPEAT = "1";
    toolpin.writeCase("refund-1", true, { toolCalls: [chat], turns: 1, cost: { input_tokens: 3 } });
    toolpin.writeCase("refund-2", false, { error: new Error("budget") });
    const records = fs.readFileSync(path.join(dir, "cases.jsonl"), "utf8").trim().split("\n").map(JSON.parse);
    assert.deepEqual(records[0], {
      case: "refund-1", passed: true, repeat: 1, turns: 1, cost: { input_tokens: 3 },
      tool_calls: [{ name: "orders__lookup_order", arguments: { order_id: "ORD-1" } }],
    });
    assert.deepEqual(records[1], { case: "refund-2", passed: false, repeat: 1, error: "Error: budget" });
    assert.throws(() => toolpin.writeCase("x", "yes"), /passed must be true or false/);
  } finally {
    server.close();
  }
});
