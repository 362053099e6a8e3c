//! Where tools come from: tool-definition files in the formats agents use
//! (MCP, OpenAI Chat Completions and Responses, Anthropic, Gemini) and
//! commands that print them. Each source yields raw `serde_json::Value`
//! tools exactly as given; `toolpin-manifest` normalizes them.

pub mod exec;
pub mod format;
pub mod mcp;
pub mod source;

pub use format::{Format, ToolSink};
pub use source::{CaptureError, Captured, Endpoint, Source};
