// toolpin's helpers for eval harnesses in TypeScript and JavaScript, the
// counterpart of the Python package (docs/harness.md): the catalog of the
// side being run in an SDK's shape, the tool calls out of SDK responses,
// and case records for `toolpin compare`.
"use strict";

const fs = require("node:fs");
const path = require("node:path");

const FORMATS = ["mcp", "openai", "anthropic"];
const SHAPES = ["mcp", "openai", "openai-responses", "anthropic", "gemini"];

class HarnessError extends Error {}

function underToolpin() {
  return Boolean(process.env.TOOLPIN_MANIFEST);
}

function readManifest(file, fmt) {
  let doc;
  try {
    doc = JSON.parse(fs.readFileSync(file, "utf8"));
  } catch (e) {
    throw new HarnessError(e.code ? `cannot read the catalog ${file}: ${e.code}` : `${file}: not JSON (${e.message})`);
  }
  const tools = fmt === "mcp" ? doc && doc.tools : doc;
  if (!Array.isArray(tools)) {
    throw new HarnessError(`${file}: not a ${fmt} catalog (expected ${fmt === "mcp" ? '{"tools": [...]}' : "an array"})`);
  }
  return tools;
}

function asMcp(tool, fmt) {
  if (fmt === "mcp") return { ...tool };
  if (fmt === "openai") {
    const { parameters, ...fn } = tool.function || {};
    return parameters === undefined ? fn : { ...fn, inputSchema: parameters };
  }
  const { input_schema, ...rest } = tool;
  return input_schema === undefined ? rest : { ...rest, inputSchema: input_schema };
}

function shape(tool, to) {
  const schema = tool.inputSchema;
  const described = {};
  for (const k of ["name", "description"]) if (k in tool) described[k] = tool[k];
  const extras = (out) => {
    if (schema !== undefined) out.parameters = schema;
    if ("strict" in tool) out.strict = tool.strict;
    return out;
  };
  switch (to) {
    case "mcp":
      return tool;
    case "openai":
      return { type: "function", function: extras({ ...described }) };
    case "openai-responses":
      return extras({ type: "function", ...described });
    case "anthropic":
      if (typeof tool.type === "string" && schema === undefined) return tool;
      return { ...described, input_schema: schema === undefined ? { type: "object" } : schema };
    case "gemini":
      return schema === undefined ? described : { ...described, parametersJsonSchema: schema };
    default:
      throw new HarnessError(`unknown shape ${JSON.stringify(to)}; use one of ${SHAPES.join(", ")}`);
  }
}

/** The catalog of this side (TOOLPIN_MANIFEST) in an SDK's shape. */
function loadTools(to = "openai", options = {}) {
  if (!SHAPES.includes(to)) throw new HarnessError(`unknown shape ${JSON.stringify(to)}; use one of ${SHAPES.join(", ")}`);
  const file = options.path || process.env.TOOLPIN_MANIFEST;
  if (!file) throw new HarnessError("TOOLPIN_MANIFEST is not set: run the harness under `toolpin evals run`, or pass { path }");
  let fmt = options.format || process.env.TOOLPIN_MANIFEST_FORMAT || "mcp";
  if (fmt === "openai-chat") fmt = "openai";
  if (!FORMATS.includes(fmt)) throw new HarnessError(`TOOLPIN_MANIFEST_FORMAT ${JSON.stringify(fmt)} is not one of ${FORMATS.join(", ")}`);
  const tools = readManifest(file, fmt).map((t) => shape(asMcp(t, fmt), to));
  if (to === "gemini") return tools.length ? [{ functionDeclarations: tools }] : [];
  return tools;
}

function parseArguments(raw) {
  if (typeof raw !== "string") return raw;
  try {
    return JSON.parse(raw);
  } catch {
    return raw;
  }
}

/** The tool calls in SDK objects, in order, as `{name, arguments}`: openai
 * Chat Completions, their messages and tool calls; Responses responses and
 * `function_call` items; Anthropic messages and `tool_use` blocks; the
 * Vercel AI SDK's results and `toolCalls`; arrays of these. */
function toolCallsFrom(...objects) {
  const calls = [];
  const visit = (obj) => {
    if (obj == null || typeof obj !== "object") return;
    if (Array.isArray(obj)) return obj.forEach(visit);
    if (Array.isArray(obj.choices)) return obj.choices.forEach((c) => visit(c.message));
    if (obj.function && obj.function.name != null) {
      calls.push({ name: obj.function.name, arguments: parseArguments(obj.function.arguments) });
      return;
    }
    if (obj.type === "function_call") return void calls.push({ name: obj.name, arguments: parseArguments(obj.arguments) });
    if (obj.type === "tool_use") return void calls.push({ name: obj.name, arguments: obj.input });
    if (obj.type === "tool-call" && obj.toolName != null) return void calls.push({ name: obj.toolName, arguments: obj.input });
    for (const member of ["tool_calls", "toolCalls", "output", "content"]) {
      if (Array.isArray(obj[member])) return visit(obj[member]);
    }
  };
  objects.forEach(visit);
  return calls;
}

function count(name, value) {
  if (value === undefined || value === null) return undefined;
  if (!Number.isInteger(value) || value < 0) throw new HarnessError(`${name} must be a non-negative integer, not ${JSON.stringify(value)}`);
  return value;
}

/** Appends one case record to $TOOLPIN_OUTPUT_DIR/cases.jsonl (or
 * `options.path`) with one write of one line; returns the record. */
function writeCase(caseId, passed, options = {}) {
  if (typeof caseId !== "string" || !caseId) throw new HarnessError(`case must be a non-empty string, not ${JSON.stringify(caseId)}`);
  if (typeof passed !== "boolean") throw new HarnessError(`passed must be true or false, not ${JSON.stringify(passed)}`);
  const record = { case: caseId, passed };
  let repeat = options.repeat;
  if (repeat === undefined && /^\d+$/.test(process.env.TOOLPIN_REPEAT || "")) repeat = Number(process.env.TOOLPIN_REPEAT);
  if (repeat !== undefined) record.repeat = count("repeat", repeat);
  if (options.score !== undefined) record.score = Number(options.score);
  if (options.toolCalls !== undefined) {
    const plain = options.toolCalls.every((c) => c && typeof c.name === "string" && Object.keys(c).every((k) => k === "name" || k === "arguments"));
    record.tool_calls = plain ? options.toolCalls : toolCallsFrom(options.toolCalls);
  }
  if (options.turns !== undefined) record.turns = count("turns", options.turns);
  if (options.cost !== undefined) {
    const unknown = Object.keys(options.cost).filter((k) => !["input_tokens", "output_tokens", "usd"].includes(k));
    if (unknown.length) throw new HarnessError(`cost takes input_tokens, output_tokens and usd, not ${unknown.join(", ")}`);
    record.cost = options.cost;
  }
  if (options.error !== undefined) record.error = options.error instanceof Error ? String(options.error) : options.error;
  const file = options.path || path.join(process.env.TOOLPIN_OUTPUT_DIR || ".", "cases.jsonl");
  fs.appendFileSync(file, JSON.stringify(record) + "\n");
  return record;
}

module.exports = { HarnessError, loadTools, toolCallsFrom, underToolpin, writeCase, SHAPES };
