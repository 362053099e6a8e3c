// A fixture MCP server for the conformance suite's server scenarios.
//
// The suite's scenarios call tools, prompts and resources by fixed names
// (test_simple_text, test://static-text, test_prompt_with_arguments, ...),
// each described in the scenario's own requirements (`conformance list
// --server`, and the text each scenario carries). A general-purpose server
// such as server-everything has none of them, so most of its checks fail
// for that reason alone, directly and through the proxy alike, and a relay
// that dropped sampling, elicitation, logging or progress would go unseen.
// This server implements exactly those requirements, written for toolpin on
// the official TypeScript SDK's low-level Server class.
//
//   node fixture-server.mjs               stdio (what the proxy fronts)
//   node fixture-server.mjs --http PORT   Streamable HTTP on 127.0.0.1:PORT/mcp
//                                         (the direct run), with sessions and
//                                         Host/Origin checks (DNS rebinding)

import { randomUUID } from "node:crypto";
import { createServer } from "node:http";
import { deflateSync } from "node:zlib";

import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import {
  CallToolRequestSchema,
  CompleteRequestSchema,
  CreateMessageResultSchema,
  ElicitResultSchema,
  GetPromptRequestSchema,
  ListPromptsRequestSchema,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  McpError,
  ErrorCode,
  ReadResourceRequestSchema,
  SubscribeRequestSchema,
  UnsubscribeRequestSchema,
} from "@modelcontextprotocol/sdk/types.js";

// ---------------------------------------------------------------- media

function crc32(buf) {
  let c = ~0;
  for (const b of buf) {
    c ^= b;
    for (let k = 0; k < 8; k++) c = (c >>> 1) ^ (0xedb88320 & -(c & 1));
  }
  return ~c >>> 0;
}

function pngChunk(type, data) {
  const len = Buffer.alloc(4);
  len.writeUInt32BE(data.length);
  const body = Buffer.concat([Buffer.from(type, "ascii"), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(body));
  return Buffer.concat([len, body, crc]);
}

/** A 1x1 red pixel PNG, base64. */
function redPixelPng() {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(1, 0); // width
  ihdr.writeUInt32BE(1, 4); // height
  ihdr[8] = 8; // bit depth
  ihdr[9] = 2; // colour type: RGB
  const raw = Buffer.from([0, 255, 0, 0]); // filter byte, then R G B
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    pngChunk("IHDR", ihdr),
    pngChunk("IDAT", deflateSync(raw)),
    pngChunk("IEND", Buffer.alloc(0)),
  ]).toString("base64");
}

/** A tenth of a second of 8 kHz 8-bit mono silence, as WAV, base64. */
function silentWav() {
  const samples = 800;
  const h = Buffer.alloc(44);
  h.write("RIFF", 0, "ascii");
  h.writeUInt32LE(36 + samples, 4);
  h.write("WAVEfmt ", 8, "ascii");
  h.writeUInt32LE(16, 16); // fmt chunk size
  h.writeUInt16LE(1, 20); // PCM
  h.writeUInt16LE(1, 22); // mono
  h.writeUInt32LE(8000, 24); // sample rate
  h.writeUInt32LE(8000, 28); // byte rate
  h.writeUInt16LE(1, 32); // block align
  h.writeUInt16LE(8, 34); // bits per sample
  h.write("data", 36, "ascii");
  h.writeUInt32LE(samples, 40);
  return Buffer.concat([h, Buffer.alloc(samples, 128)]).toString("base64");
}

const PNG = redPixelPng();
const WAV = silentWav();

// ---------------------------------------------------------------- catalog

const NO_ARGS = { type: "object", properties: {} };

const TOOLS = [
  { name: "test_simple_text", description: "Returns a simple text response", inputSchema: NO_ARGS },
  { name: "test_image_content", description: "Returns a 1x1 PNG image", inputSchema: NO_ARGS },
  { name: "test_audio_content", description: "Returns a short WAV clip", inputSchema: NO_ARGS },
  { name: "test_embedded_resource", description: "Returns an embedded text resource", inputSchema: NO_ARGS },
  { name: "test_multiple_content_types", description: "Returns text, image and resource content", inputSchema: NO_ARGS },
  { name: "test_tool_with_logging", description: "Sends three info log messages while it runs", inputSchema: NO_ARGS },
  { name: "test_error_handling", description: "Always returns a tool error", inputSchema: NO_ARGS },
  { name: "test_tool_with_progress", description: "Reports progress 0, 50 and 100 of 100", inputSchema: NO_ARGS },
  {
    name: "test_sampling",
    description: "Asks the client's LLM to answer a prompt (sampling/createMessage)",
    inputSchema: {
      type: "object",
      properties: { prompt: { type: "string", description: "The prompt to send to the LLM" } },
      required: ["prompt"],
    },
  },
  {
    name: "test_elicitation",
    description: "Asks the user for a username and an email (elicitation/create)",
    inputSchema: {
      type: "object",
      properties: { message: { type: "string", description: "The message to show the user" } },
      required: ["message"],
    },
  },
  {
    name: "test_elicitation_sep1034_defaults",
    description: "Elicits a form whose fields all have default values (SEP-1034)",
    inputSchema: NO_ARGS,
  },
  {
    name: "test_elicitation_sep1330_enums",
    description: "Elicits a form with the five enum variants of SEP-1330",
    inputSchema: NO_ARGS,
  },
  {
    name: "json_schema_2020_12_tool",
    description: "Tool with JSON Schema 2020-12 features",
    inputSchema: {
      $schema: "https://json-schema.org/draft/2020-12/schema",
      type: "object",
      $defs: {
        address: {
          $anchor: "addressDef",
          type: "object",
          properties: { street: { type: "string" }, city: { type: "string" } },
        },
      },
      properties: {
        name: { type: "string" },
        address: { $ref: "#/$defs/address" },
        contactMethod: { type: "string", enum: ["phone", "email"] },
        phone: { type: "string" },
        email: { type: "string" },
      },
      allOf: [{ anyOf: [{ required: ["phone"] }, { required: ["email"] }] }],
      if: { properties: { contactMethod: { const: "phone" } }, required: ["contactMethod"] },
      then: { required: ["phone"] },
      else: { required: ["email"] },
      additionalProperties: false,
    },
  },
];

const RESOURCES = [
  { uri: "test://static-text", name: "static-text", description: "A static text resource", mimeType: "text/plain" },
  { uri: "test://static-binary", name: "static-binary", description: "A static PNG resource", mimeType: "image/png" },
  { uri: "test://watched-resource", name: "watched-resource", description: "A resource to subscribe to", mimeType: "text/plain" },
];

const TEMPLATES = [
  {
    uriTemplate: "test://template/{id}/data",
    name: "template-data",
    description: "Data for an id",
    mimeType: "application/json",
  },
];

const PROMPTS = [
  { name: "test_simple_prompt", description: "A prompt without arguments" },
  {
    name: "test_prompt_with_arguments",
    description: "A prompt with two arguments",
    arguments: [
      { name: "arg1", description: "First test argument", required: true },
      { name: "arg2", description: "Second test argument", required: true },
    ],
  },
  {
    name: "test_prompt_with_embedded_resource",
    description: "A prompt that embeds a resource",
    arguments: [{ name: "resourceUri", description: "URI of the resource to embed", required: true }],
  },
  { name: "test_prompt_with_image", description: "A prompt with an image" },
];

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const text = (t) => ({ type: "text", text: t });

// ---------------------------------------------------------------- server

function newServer() {
  const server = new Server(
    { name: "toolpin-conformance-fixture", version: "1.0.0" },
    {
      capabilities: {
        tools: {},
        resources: { subscribe: true },
        prompts: {},
        logging: {},
        completions: {},
      },
    },
  );
  const subscriptions = new Set();

  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: TOOLS }));

  server.setRequestHandler(CallToolRequestSchema, async (req, extra) => {
    const args = req.params.arguments ?? {};
    switch (req.params.name) {
      case "test_simple_text":
        return { content: [text("This is a simple text response for testing.")] };
      case "test_image_content":
        return { content: [{ type: "image", data: PNG, mimeType: "image/png" }] };
      case "test_audio_content":
        return { content: [{ type: "audio", data: WAV, mimeType: "audio/wav" }] };
      case "test_embedded_resource":
        return {
          content: [
            {
              type: "resource",
              resource: {
                uri: "test://embedded-resource",
                mimeType: "text/plain",
                text: "This is an embedded resource content.",
              },
            },
          ],
        };
      case "test_multiple_content_types":
        return {
          content: [
            text("Multiple content types test:"),
            { type: "image", data: PNG, mimeType: "image/png" },
            {
              type: "resource",
              resource: {
                uri: "test://mixed-content-resource",
                mimeType: "application/json",
                text: JSON.stringify({ test: "data", value: 123 }),
              },
            },
          ],
        };
      case "test_tool_with_logging": {
        // On the request's own stream, so that an HTTP client gets them
        // before the response; the level set by logging/setLevel applies.
        const log = async (data) => {
          if (!server.isMessageIgnored("info", extra.sessionId)) {
            await extra.sendNotification({
              method: "notifications/message",
              params: { level: "info", logger: "fixture", data },
            });
          }
        };
        await log("Tool execution started");
        await sleep(50);
        await log("Tool processing data");
        await sleep(50);
        await log("Tool execution completed");
        return { content: [text("Tool with logging executed successfully")] };
      }
      case "test_error_handling":
        return { isError: true, content: [text("This tool intentionally returns an error for testing")] };
      case "test_tool_with_progress": {
        const token = req.params._meta?.progressToken;
        for (const progress of [0, 50, 100]) {
          if (token !== undefined) {
            await extra.sendNotification({
              method: "notifications/progress",
              params: { progressToken: token, progress, total: 100 },
            });
          }
          if (progress < 100) await sleep(50);
        }
        return { content: [text("Tool with progress executed successfully")] };
      }
      case "test_sampling": {
        if (!server.getClientCapabilities()?.sampling) {
          return { isError: true, content: [text("The client does not support sampling")] };
        }
        const result = await extra.sendRequest(
          {
            method: "sampling/createMessage",
            params: {
              messages: [{ role: "user", content: text(String(args.prompt ?? "")) }],
              maxTokens: 100,
            },
          },
          CreateMessageResultSchema,
        );
        const answer = result.content?.type === "text" ? result.content.text : JSON.stringify(result.content);
        return { content: [text(`LLM response: ${answer}`)] };
      }
      case "test_elicitation":
      case "test_elicitation_sep1034_defaults":
      case "test_elicitation_sep1330_enums": {
        if (!server.getClientCapabilities()?.elicitation) {
          return { isError: true, content: [text("The client does not support elicitation")] };
        }
        const params = elicitation(req.params.name, args);
        const result = await extra.sendRequest({ method: "elicitation/create", params }, ElicitResultSchema);
        const said = `action=${result.action}, content=${JSON.stringify(result.content ?? {})}`;
        return {
          content: [
            text(req.params.name === "test_elicitation" ? `User response: ${said}` : `Elicitation completed: ${said}`),
          ],
        };
      }
      case "json_schema_2020_12_tool":
        return { content: [text(`Received: ${JSON.stringify(args)}`)] };
      default:
        throw new McpError(ErrorCode.InvalidParams, `Tool ${req.params.name} not found`);
    }
  });

  server.setRequestHandler(ListResourcesRequestSchema, async () => ({ resources: RESOURCES }));
  server.setRequestHandler(ListResourceTemplatesRequestSchema, async () => ({ resourceTemplates: TEMPLATES }));
  server.setRequestHandler(ReadResourceRequestSchema, async (req) => {
    const uri = req.params.uri;
    if (uri === "test://static-text") {
      return { contents: [{ uri, mimeType: "text/plain", text: "This is the content of the static text resource." }] };
    }
    if (uri === "test://static-binary") {
      return { contents: [{ uri, mimeType: "image/png", blob: PNG }] };
    }
    if (uri === "test://watched-resource") {
      return { contents: [{ uri, mimeType: "text/plain", text: "A watched resource." }] };
    }
    const m = /^test:\/\/template\/([^/]+)\/data$/.exec(uri);
    if (m) {
      const id = decodeURIComponent(m[1]);
      return {
        contents: [
          {
            uri,
            mimeType: "application/json",
            text: JSON.stringify({ id, templateTest: true, data: `Data for ID: ${id}` }),
          },
        ],
      };
    }
    throw new McpError(-32002, `Resource ${uri} not found`, { uri });
  });
  server.setRequestHandler(SubscribeRequestSchema, async (req) => {
    subscriptions.add(req.params.uri);
    return {};
  });
  server.setRequestHandler(UnsubscribeRequestSchema, async (req) => {
    subscriptions.delete(req.params.uri);
    return {};
  });

  server.setRequestHandler(ListPromptsRequestSchema, async () => ({ prompts: PROMPTS }));
  server.setRequestHandler(GetPromptRequestSchema, async (req) => {
    const args = req.params.arguments ?? {};
    switch (req.params.name) {
      case "test_simple_prompt":
        return { messages: [{ role: "user", content: text("This is a simple prompt for testing.") }] };
      case "test_prompt_with_arguments":
        return {
          messages: [
            { role: "user", content: text(`Prompt with arguments: arg1='${args.arg1}', arg2='${args.arg2}'`) },
          ],
        };
      case "test_prompt_with_embedded_resource":
        return {
          messages: [
            {
              role: "user",
              content: {
                type: "resource",
                resource: {
                  uri: args.resourceUri ?? "test://example-resource",
                  mimeType: "text/plain",
                  text: "Embedded resource content for testing.",
                },
              },
            },
            { role: "user", content: text("Please process the embedded resource above.") },
          ],
        };
      case "test_prompt_with_image":
        return {
          messages: [
            { role: "user", content: { type: "image", data: PNG, mimeType: "image/png" } },
            { role: "user", content: text("Please analyze the image above.") },
          ],
        };
      default:
        throw new McpError(ErrorCode.InvalidParams, `Prompt ${req.params.name} not found`);
    }
  });

  server.setRequestHandler(CompleteRequestSchema, async (req) => {
    const prefix = String(req.params.argument?.value ?? "");
    const values = ["paris", "park", "party", "test", "testing"].filter((v) => v.startsWith(prefix));
    return { completion: { values, total: values.length, hasMore: false } };
  });

  return server;
}

function elicitation(tool, args) {
  if (tool === "test_elicitation") {
    return {
      message: String(args.message ?? ""),
      requestedSchema: {
        type: "object",
        properties: {
          username: { type: "string", description: "User's response" },
          email: { type: "string", description: "User's email address" },
        },
        required: ["username", "email"],
      },
    };
  }
  if (tool === "test_elicitation_sep1034_defaults") {
    return {
      message: "Please review your profile",
      requestedSchema: {
        type: "object",
        properties: {
          name: { type: "string", description: "Name", default: "John Doe" },
          age: { type: "integer", description: "Age", default: 30 },
          score: { type: "number", description: "Score", default: 95.5 },
          status: { type: "string", description: "Status", enum: ["active", "inactive", "pending"], default: "active" },
          verified: { type: "boolean", description: "Verified", default: true },
        },
      },
    };
  }
  return {
    message: "Please choose",
    requestedSchema: {
      type: "object",
      properties: {
        untitledSingle: { type: "string", enum: ["option1", "option2", "option3"] },
        titledSingle: {
          type: "string",
          oneOf: [
            { const: "value1", title: "First Option" },
            { const: "value2", title: "Second Option" },
            { const: "value3", title: "Third Option" },
          ],
        },
        legacyEnum: {
          type: "string",
          enum: ["opt1", "opt2", "opt3"],
          enumNames: ["Option One", "Option Two", "Option Three"],
        },
        untitledMulti: { type: "array", items: { type: "string", enum: ["option1", "option2", "option3"] } },
        titledMulti: {
          type: "array",
          items: {
            anyOf: [
              { const: "value1", title: "First Choice" },
              { const: "value2", title: "Second Choice" },
              { const: "value3", title: "Third Choice" },
            ],
          },
        },
      },
    },
  };
}

// ---------------------------------------------------------------- transports

const LOOPBACK = new Set(["localhost", "127.0.0.1", "[::1]"]);

/** The host part of a Host header or an origin's authority, port dropped. */
function hostOnly(authority) {
  if (authority.startsWith("[")) return authority.slice(0, authority.indexOf("]") + 1);
  return authority.split(":")[0];
}

function loopbackRequest(req) {
  if (!LOOPBACK.has(hostOnly(req.headers.host ?? ""))) return false;
  const origin = req.headers.origin;
  if (origin === undefined) return true;
  try {
    return LOOPBACK.has(hostOnly(new URL(origin).host));
  } catch {
    return false;
  }
}

function jsonError(res, status, message) {
  res.writeHead(status, { "Content-Type": "application/json" });
  res.end(JSON.stringify({ jsonrpc: "2.0", id: null, error: { code: -32000, message } }));
}

async function serveHttp(port) {
  const sessions = new Map();
  const http = createServer(async (req, res) => {
    try {
      const url = new URL(req.url ?? "/", "http://localhost");
      if (url.pathname !== "/mcp") return jsonError(res, 404, "Not found");
      // DNS rebinding: only loopback Host and Origin values are served.
      if (!loopbackRequest(req)) return jsonError(res, 403, "Forbidden: non-loopback Host or Origin");
      let body;
      if (req.method === "POST") {
        const chunks = [];
        for await (const c of req) chunks.push(c);
        try {
          body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
        } catch {
          return jsonError(res, 400, "Parse error");
        }
      }
      const id = req.headers["mcp-session-id"];
      if (id !== undefined) {
        const transport = sessions.get(id);
        if (!transport) return jsonError(res, 404, "Session not found");
        return await transport.handleRequest(req, res, body);
      }
      const initialize = [body].flat().some((m) => m?.method === "initialize");
      if (req.method !== "POST" || !initialize) return jsonError(res, 400, "Bad Request: no session id");
      const transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (sid) => sessions.set(sid, transport),
      });
      transport.onclose = () => {
        if (transport.sessionId) sessions.delete(transport.sessionId);
      };
      await newServer().connect(transport);
      await transport.handleRequest(req, res, body);
    } catch (e) {
      if (!res.headersSent) jsonError(res, 500, String(e?.message ?? e));
    }
  });
  await new Promise((resolve) => http.listen(port, "127.0.0.1", resolve));
  process.stderr.write(`fixture listening on http://127.0.0.1:${port}/mcp\n`);
  const stop = () => {
    for (const t of sessions.values()) t.close().catch(() => {});
    http.close(() => process.exit(0));
    setTimeout(() => process.exit(0), 500).unref();
  };
  process.on("SIGTERM", stop);
  process.on("SIGINT", stop);
}

const i = process.argv.indexOf("--http");
if (i >= 0) {
  await serveHttp(Number(process.argv[i + 1]));
} else {
  await newServer().connect(new StdioServerTransport());
}
