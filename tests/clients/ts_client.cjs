// An MCP client driven line by line, written with the official MCP
// TypeScript SDK (@modelcontextprotocol/sdk, installed in tests/servers by
// scripts/setup), for the proxy tests. The same protocol as py_client.py.
//
// usage: node ts_client.cjs (--url URL | --cwd DIR -- COMMAND ARGS...)
//                           [--sampling-answer TEXT] [--elicit-json JSON]
//
// With --url it speaks Streamable HTTP (StreamableHTTPClientTransport);
// otherwise it starts COMMAND in DIR over stdio (StdioClientTransport). It
// connects (initialize), prints {"op": "ready", ...}, then reads one JSON
// command a line on standard input and answers each with one JSON line:
//
//   {"op": "list"}                      tools/list, every page
//   {"op": "call", "name", "args"}      the result or the JSON-RPC error
//   {"op": "progress", "name", "args"}  a call with onprogress: progress seen
//   {"op": "cancel", "name", "args", "after"}
//                                       a call aborted (AbortController)
//                                       after AFTER seconds
//   {"op": "resources"} / {"op": "read", "uri"}
//   {"op": "prompts"} / {"op": "prompt", "name", "args"}
//   {"op": "wait_notification", "method", "timeout"}
//   {"op": "notifications"} / {"op": "server_requests"} / {"op": "quit"}

"use strict";

const path = require("node:path");
const readline = require("node:readline");
const { createRequire } = require("node:module");

// The SDK lives in tests/servers/node_modules.
const sdk = createRequire(path.join(__dirname, "..", "servers", "package.json"));
const { Client } = sdk("@modelcontextprotocol/sdk/client/index.js");
const { StdioClientTransport } = sdk("@modelcontextprotocol/sdk/client/stdio.js");
const { StreamableHTTPClientTransport } = sdk("@modelcontextprotocol/sdk/client/streamableHttp.js");
const types = sdk("@modelcontextprotocol/sdk/types.js");

function out(record) {
  process.stdout.write(JSON.stringify(record) + "\n");
}

function errorOf(e) {
  if (e instanceof types.McpError) {
    const err = { code: e.code, message: e.message };
    if (e.data !== undefined) err.data = e.data;
    return err;
  }
  return { code: null, message: `${e && e.name}: ${e && e.message}` };
}

function parseArgs(argv) {
  const args = { command: [] };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === "--") {
      args.command = argv.slice(i + 1);
      break;
    } else if (a === "--url") args.url = argv[++i];
    else if (a === "--cwd") args.cwd = argv[++i];
    else if (a === "--sampling-answer") args.samplingAnswer = argv[++i];
    else if (a === "--elicit-json") args.elicitJson = argv[++i];
    else throw new Error(`unknown argument ${a}`);
  }
  return args;
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const capabilities = {};
  if (args.samplingAnswer !== undefined) capabilities.sampling = {};
  if (args.elicitJson !== undefined) capabilities.elicitation = { form: {}, url: {} };
  const client = new Client({ name: "toolpin-test-ts-client", version: "1.0.0" }, { capabilities });
  const notifications = [];
  const seen = {};
  const serverRequests = [];
  client.fallbackNotificationHandler = async (n) => {
    notifications.push(n);
  };
  client.setNotificationHandler(types.ToolListChangedNotificationSchema, async (n) => {
    notifications.push(n);
  });
  if (args.samplingAnswer !== undefined) {
    client.setRequestHandler(types.CreateMessageRequestSchema, async (req) => {
      serverRequests.push({ method: req.method, params: req.params });
      return {
        role: "assistant",
        content: { type: "text", text: args.samplingAnswer },
        model: "toolpin-test-model",
        stopReason: "endTurn",
      };
    });
  }
  if (args.elicitJson !== undefined) {
    client.setRequestHandler(types.ElicitRequestSchema, async (req) => {
      serverRequests.push({ method: req.method, params: req.params });
      return { action: "accept", content: JSON.parse(args.elicitJson) };
    });
  }
  const transport = args.url
    ? new StreamableHTTPClientTransport(new URL(args.url))
    : new StdioClientTransport({
        command: args.command[0],
        args: args.command.slice(1),
        cwd: args.cwd,
        stderr: "inherit",
      });
  await client.connect(transport);
  out({
    op: "ready",
    protocol_version: transport.protocolVersion ?? null,
    server_info: client.getServerVersion(),
    capabilities: client.getServerCapabilities(),
  });

  const call = async (name, callArgs, options) => {
    const started = Date.now();
    try {
      const result = await client.callTool({ name, arguments: callArgs }, undefined, options);
      return { result, seconds: (Date.now() - started) / 1000 };
    } catch (e) {
      return { error: errorOf(e), seconds: (Date.now() - started) / 1000 };
    }
  };

  const run = async (cmd) => {
    switch (cmd.op) {
      case "list": {
        const tools = [];
        let cursor;
        let pages = 0;
        for (;;) {
          const r = await client.listTools(cursor ? { cursor } : undefined);
          pages++;
          tools.push(...r.tools);
          cursor = r.nextCursor;
          if (!cursor) return { tools, pages };
        }
      }
      case "call":
        return call(cmd.name, cmd.args);
      case "progress": {
        const progress = [];
        const r = await call(cmd.name, cmd.args, {
          onprogress: (p) => progress.push({ progress: p.progress, total: p.total }),
        });
        r.progress = progress;
        return r;
      }
      case "cancel": {
        const controller = new AbortController();
        const started = Date.now();
        const timer = setTimeout(() => controller.abort("the test cancelled"), cmd.after * 1000);
        const outcome = await call(cmd.name, cmd.args, { signal: controller.signal });
        clearTimeout(timer);
        return {
          cancelled: controller.signal.aborted,
          outcome,
          seconds: (Date.now() - started) / 1000,
        };
      }
      case "resources": {
        const resources = (await client.listResources()).resources;
        const templates = (await client.listResourceTemplates()).resourceTemplates;
        return { resources, templates };
      }
      case "read":
        return { result: await client.readResource({ uri: cmd.uri }) };
      case "prompts":
        return { prompts: (await client.listPrompts()).prompts };
      case "prompt":
        return { result: await client.getPrompt({ name: cmd.name, arguments: cmd.args }) };
      case "wait_notification": {
        const started = Date.now();
        const deadline = started + (cmd.timeout ?? 5) * 1000;
        while (Date.now() < deadline) {
          const count = notifications.filter((n) => n.method === cmd.method).length;
          if (count > (seen[cmd.method] ?? 0)) {
            seen[cmd.method] = count;
            return { arrived: true, seconds: (Date.now() - started) / 1000 };
          }
          await new Promise((r) => setTimeout(r, 20));
        }
        return { arrived: false, seconds: (Date.now() - started) / 1000 };
      }
      case "notifications":
        return { methods: notifications.map((n) => n.method) };
      case "server_requests":
        return { requests: serverRequests };
      case "ping":
        await client.ping();
        return {};
      default:
        throw new Error(`unknown op ${cmd.op}`);
    }
  };

  const lines = readline.createInterface({ input: process.stdin });
  for await (const line of lines) {
    if (!line.trim()) continue;
    const cmd = JSON.parse(line);
    if (cmd.op === "quit") break;
    let record;
    try {
      record = await run(cmd);
    } catch (e) {
      record = { error: errorOf(e) };
    }
    record.op = cmd.op;
    out(record);
  }
  out({ op: "quit" });
  if (transport.terminateSession) {
    try {
      await transport.terminateSession();
    } catch (e) {
      // The proxy may already be gone.
    }
  }
  await client.close();
  process.exit(0);
}

main().catch((e) => {
  out({ op: "fatal", error: errorOf(e) });
  process.exit(1);
});
