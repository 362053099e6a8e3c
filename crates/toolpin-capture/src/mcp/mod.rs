//! An MCP client that keeps every value raw.
//!
//! It speaks JSON-RPC itself (stdio lines, Streamable HTTP with SSE, legacy
//! HTTP+SSE) rather than through a typed SDK, because a typed model drops the
//! unknown members toolpin exists to pin and loops on a cursor that never
//! advances. The same client is the upstream side of the proxy: it connects,
//! performs the session set-up for the negotiated protocol revision, sends
//! requests, hands over notifications and closes.

mod client;
pub(crate) mod http;
mod session;
mod sse;
mod stdio;

pub use client::{invalid_json, Client, Frame, Incoming, Relay, RequestError, SendError};
pub use http::{HttpMode, HttpSpec};
pub use session::{
    capture, list, open, stateless_meta, Capture, Opened, SessionOptions, Timeouts, VersionChoice,
    DEFAULT_MAX_PAGES,
};
pub use stdio::StdioSpec;

use std::fmt;

/// Protocol revisions negotiated with the `initialize` handshake, newest first.
pub const HANDSHAKE_VERSIONS: [&str; 4] = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];
/// The stateless revision: no handshake, `_meta` on every request,
/// `server/discover`.
pub const STATELESS_VERSION: &str = "2026-07-28";

/// Where a capture was when it failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Phase {
    Connect,
    Discover,
    Initialize,
    ListTools { page: usize },
    Close,
}

impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Phase::Connect => f.write_str("connect"),
            Phase::Discover => f.write_str("server/discover"),
            Phase::Initialize => f.write_str("initialize"),
            Phase::ListTools { page } => write!(f, "tools/list page {page}"),
            Phase::Close => f.write_str("close"),
        }
    }
}

/// Why talking to a server failed; `Display` is one line: the phase, what
/// happened, and what the server said (stderr tail or HTTP body excerpt).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct McpError {
    pub phase: Phase,
    pub message: String,
    /// The last lines the server wrote to stderr, or an HTTP body excerpt.
    pub server_said: Option<String>,
    /// The HTTP status the server refused with, if it did.
    pub http_status: Option<u16>,
    /// The JSON-RPC error code the server answered with, if it did.
    pub rpc_code: Option<i64>,
}

impl McpError {
    pub fn new(phase: Phase, message: impl Into<String>) -> Self {
        Self {
            phase,
            message: message.into(),
            server_said: None,
            http_status: None,
            rpc_code: None,
        }
    }
}

impl fmt::Display for McpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.phase, self.message)?;
        match &self.server_said {
            Some(said) if !said.is_empty() => write!(f, "; server said: {said}"),
            _ => Ok(()),
        }
    }
}

impl std::error::Error for McpError {}

/// Shortens text for one-line messages.
pub(crate) fn excerpt(text: &str, max: usize) -> String {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= max {
        flat
    } else {
        flat.chars().take(max).collect::<String>() + "…"
    }
}
