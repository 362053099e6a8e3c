// Types of toolpin's harness helpers (lib/harness.js; docs/harness.md).

export type Shape = "mcp" | "openai" | "openai-responses" | "anthropic" | "gemini";
export type ManifestFormat = "mcp" | "openai" | "openai-chat" | "anthropic";

export class HarnessError extends Error {}

export interface ToolCall {
  name: string;
  arguments?: unknown;
}

export interface CaseOptions {
  toolCalls?: ToolCall[] | unknown[];
  turns?: number;
  cost?: { input_tokens?: number; output_tokens?: number; usd?: number };
  score?: number;
  error?: unknown;
  repeat?: number;
  path?: string;
}

export interface CaseRecord {
  case: string;
  passed: boolean;
  repeat?: number;
  score?: number;
  tool_calls?: ToolCall[];
  turns?: number;
  cost?: { input_tokens?: number; output_tokens?: number; usd?: number };
  error?: unknown;
}

export const SHAPES: readonly Shape[];
export function underToolpin(): boolean;
export function loadTools(shape?: Shape, options?: { path?: string; format?: ManifestFormat }): unknown[];
export function toolCallsFrom(...objects: unknown[]): ToolCall[];
export function writeCase(caseId: string, passed: boolean, options?: CaseOptions): CaseRecord;
