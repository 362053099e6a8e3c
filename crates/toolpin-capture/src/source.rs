//! Sources: where a server's tools come from. Each source yields a
//! [`RawCapture`]; transforms and normalization happen downstream.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{json, Value};
use toolpin_manifest::json;

use crate::exec::{self, ExecError, ExecSpec};
use crate::format::{self, Format};
use crate::mcp::{self, Client, HttpMode, HttpSpec, McpError, SessionOptions, StdioSpec};

/// Largest tool file read.
pub const MAX_FILE_BYTES: u64 = 512 << 20;

/// How to reach a server's tool definitions.
#[derive(Clone, Debug)]
pub enum Source {
    /// A file holding tool definitions in any supported format.
    File { path: PathBuf },
    /// A command that prints tool definitions on stdout.
    Exec {
        argv: Vec<String>,
        cwd: Option<PathBuf>,
        timeout: Duration,
    },
    /// A live MCP server.
    Mcp {
        endpoint: Endpoint,
        session: SessionOptions,
    },
}

/// How to reach a live MCP server.
#[derive(Clone, Debug)]
pub enum Endpoint {
    Stdio(StdioSpec),
    Http(HttpSpec),
}

/// What a source returned: its tools as given, their format, and for a live
/// server the session that served them.
#[derive(Clone, Debug, PartialEq)]
pub struct RawCapture {
    pub format: Format,
    pub tools: Vec<Value>,
    /// Protocol version, serverInfo and what toolpin declared (MCP only).
    pub session: Option<Value>,
}

/// Why a source could not be captured; `Display` is one line.
#[derive(Debug, thiserror::Error)]
pub enum CaptureError {
    #[error("cannot read {path}: {reason}")]
    Read { path: String, reason: String },
    #[error("{0}")]
    Json(#[from] json::JsonError),
    #[error("{origin}: {reason}")]
    Format { origin: String, reason: String },
    #[error("{0}")]
    Exec(#[from] ExecError),
    #[error("{0}")]
    Mcp(#[from] McpError),
}

/// How long a stdio server gets to exit after its stdin closes.
const CLOSE_GRACE: Duration = Duration::from_secs(2);

impl Source {
    /// Captures the source's tools; `forced` skips format detection for
    /// files and commands. Blocking sources run on tokio's blocking pool.
    pub async fn capture(&self, forced: Option<Format>) -> Result<RawCapture, CaptureError> {
        match self {
            Source::File { path } => {
                let path = path.clone();
                run_blocking(move || {
                    let bytes = read_file(&path)?;
                    parse_tools(&bytes, &path.display().to_string(), forced)
                })
                .await
            }
            Source::Exec { argv, cwd, timeout } => {
                let spec = ExecSpec {
                    argv: argv.clone(),
                    cwd: cwd.clone(),
                    timeout: *timeout,
                };
                run_blocking(move || {
                    let bytes = exec::run(&spec)?;
                    let origin = format!("output of `{}`", exec::display_command(&spec.argv));
                    parse_tools(&bytes, &origin, forced)
                })
                .await
            }
            Source::Mcp { endpoint, session } => capture_mcp(endpoint, session).await,
        }
    }

    /// Captures synchronously, for callers without a runtime.
    pub fn capture_blocking(&self, forced: Option<Format>) -> Result<RawCapture, CaptureError> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| CaptureError::Read {
                path: "runtime".into(),
                reason: e.to_string(),
            })?;
        rt.block_on(self.capture(forced))
    }
}

async fn run_blocking<F>(f: F) -> Result<RawCapture, CaptureError>
where
    F: FnOnce() -> Result<RawCapture, CaptureError> + Send + 'static,
{
    match tokio::task::spawn_blocking(f).await {
        Ok(result) => result,
        Err(e) => Err(CaptureError::Read {
            path: "source".into(),
            reason: format!("capture task failed: {e}"),
        }),
    }
}

async fn capture_mcp(endpoint: &Endpoint, session: &SessionOptions) -> Result<RawCapture, CaptureError> {
    let captured = match endpoint {
        Endpoint::Stdio(spec) => {
            let client = tokio::time::timeout(session.timeouts.connect, Client::connect_stdio(spec))
                .await
                .map_err(|_| McpError::new(mcp::Phase::Connect, "timed out starting the server"))??;
            run_session(client, session).await?
        }
        Endpoint::Http(spec) => {
            let client = Client::connect_http(spec, session.timeouts.connect).await?;
            match run_session(client, session).await {
                // A server that refuses the POST of the handshake may speak
                // only the legacy HTTP+SSE transport: try that, as the
                // transport's backward-compatibility rules say.
                Err(first) if spec.mode == HttpMode::Auto && is_legacy_hint(&first) => {
                    let legacy = HttpSpec { mode: HttpMode::Sse, ..spec.clone() };
                    let retry = async {
                        let client = Client::connect_http(&legacy, session.timeouts.connect).await?;
                        run_session(client, session).await
                    };
                    retry.await.map_err(|second| McpError {
                        message: format!("Streamable HTTP: {first}; legacy SSE: {second}"),
                        ..second
                    })?
                }
                other => other?,
            }
        }
    };
    Ok(RawCapture {
        format: Format::Mcp,
        tools: captured.tools,
        session: Some(json!({
            "client_capabilities": session.client_capabilities,
            "client_info": session.client_info,
            "protocol_version": captured.protocol_version,
            "server_info": captured.server_info,
        })),
    })
}

fn is_legacy_hint(e: &McpError) -> bool {
    e.phase == mcp::Phase::Initialize && matches!(e.http_status, Some(400 | 404 | 405))
}

async fn run_session(mut client: Client, session: &SessionOptions) -> Result<mcp::Capture, McpError> {
    let outcome = mcp::capture(&mut client, session).await;
    client.close(CLOSE_GRACE).await;
    outcome
}

/// Parses a document of tool definitions.
pub fn parse_tools(
    bytes: &[u8],
    origin: &str,
    forced: Option<Format>,
) -> Result<RawCapture, CaptureError> {
    tools_from_document(json::parse(bytes, origin)?, origin, forced)
}

/// Extracts tools from an already parsed document.
pub fn tools_from_document(
    doc: Value,
    origin: &str,
    forced: Option<Format>,
) -> Result<RawCapture, CaptureError> {
    let extracted = format::extract(doc, forced).map_err(|reason| CaptureError::Format {
        origin: origin.to_string(),
        reason,
    })?;
    Ok(RawCapture {
        format: extracted.format,
        tools: extracted.tools,
        session: None,
    })
}

/// Reads a file, refusing directories and anything over [`MAX_FILE_BYTES`].
pub fn read_file(path: &std::path::Path) -> Result<Vec<u8>, CaptureError> {
    let err = |reason: String| CaptureError::Read {
        path: path.display().to_string(),
        reason,
    };
    let meta = std::fs::metadata(path).map_err(|e| err(io_reason(&e)))?;
    if meta.is_dir() {
        return Err(err("it is a directory".into()));
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(err(format!(
            "it is {} bytes; the limit is {MAX_FILE_BYTES}",
            meta.len()
        )));
    }
    std::fs::read(path).map_err(|e| err(io_reason(&e)))
}

fn io_reason(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => "no such file".into(),
        std::io::ErrorKind::PermissionDenied => "permission denied".into(),
        _ => e.to_string(),
    }
}
