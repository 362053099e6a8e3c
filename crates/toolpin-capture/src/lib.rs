//! Where tools come from: tool-definition files in the formats agents use
//! (MCP, OpenAI Chat Completions and Responses, Anthropic, Gemini),
//! commands that print them, live MCP servers, OpenAPI documents
//! (converted by `toolpin-openapi`), and the requests an agent's framework
//! sends a model API (`record`). Each source yields raw
//! `serde_json::Value` tools; `toolpin-manifest` normalizes them.

pub mod call;
pub mod exec;
pub mod file;
pub mod format;
pub mod mcp;
pub mod openapi;
pub mod record;
pub mod servers;
pub mod source;

pub use file::{catalog_from_path, FileCatalog, FileError};
pub use format::{Format, ToolSink};
pub use openapi::{DocumentLocation, OpenApiSpec};
pub use servers::{capture_servers, Server};
pub use source::{CaptureError, Captured, Endpoint, Source};
