//! Sources: where a server's tools come from. Each source hands its tools,
//! one at a time and exactly as given, to a [`ToolSink`]; transforms and
//! normalization happen there.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::{json, Value};
use toolpin_manifest::json;

use crate::exec::{self, ExecError, ExecSpec};
use crate::format::{self, Format, ToolSink};
use crate::mcp::{self, Client, HttpMode, HttpSpec, McpError, SessionOptions, StdioSpec};
use crate::openapi::{self, DocumentLocation, OpenApiSpec};
use crate::record::{self, RecordError, RecordSpec};

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
        /// Added to the inherited environment (values already expanded).
        env: BTreeMap<String, String>,
        cwd: Option<PathBuf>,
        timeout: Duration,
    },
    /// A live MCP server.
    Mcp {
        endpoint: Endpoint,
        session: SessionOptions,
    },
    /// An OpenAPI document, converted into one tool per operation.
    OpenApi(OpenApiSpec),
    /// A command whose model requests are recorded at a loopback model
    /// API endpoint; see [`crate::record`]. Captured by
    /// [`crate::capture_servers`], since one recording can pin several
    /// catalogs.
    Record(RecordSpec),
}

/// How to reach a live MCP server.
#[derive(Clone, Debug)]
pub enum Endpoint {
    Stdio(StdioSpec),
    Http(HttpSpec),
}

/// What a capture learned besides the tools.
#[derive(Clone, Debug, PartialEq)]
pub struct Captured {
    pub format: Format,
    /// Protocol version, serverInfo and what toolpin declared (MCP only).
    pub session: Option<Value>,
    /// The server's `instructions` (MCP only, when it sent them).
    pub instructions: Option<String>,
    /// Things worth telling the user, one line each (an OpenAPI
    /// conversion's renamed duplicates, for instance).
    pub warnings: Vec<String>,
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
    #[error("{0}")]
    Record(#[from] RecordError),
}

/// How long a stdio server gets to exit after its stdin closes.
const CLOSE_GRACE: Duration = Duration::from_secs(2);

impl Captured {
    /// What a source without a session learned: its format only.
    fn format(format: Format) -> Self {
        Captured {
            format,
            session: None,
            instructions: None,
            warnings: Vec::new(),
        }
    }
}

impl Source {
    /// Captures the source's tools into `sink` and gives the sink back with
    /// what was learned; `forced` skips format detection for files and
    /// commands, which run on tokio's blocking pool.
    pub async fn capture<S>(
        &self,
        forced: Option<Format>,
        mut sink: S,
    ) -> Result<(S, Captured), CaptureError>
    where
        S: ToolSink + Send + 'static,
    {
        match self {
            Source::File { path } => {
                let path = path.clone();
                let read = move || Ok((read_file(&path)?, path.display().to_string()));
                capture_bytes(read, forced, sink).await
            }
            Source::Exec {
                argv,
                env,
                cwd,
                timeout,
            } => {
                let spec = ExecSpec {
                    argv: argv.clone(),
                    env: env.clone(),
                    cwd: cwd.clone(),
                    timeout: *timeout,
                };
                let read = move || {
                    let bytes = exec::run(&spec)?;
                    let origin = format!("output of `{}`", exec::display_command(&spec.argv));
                    Ok((bytes, origin))
                };
                capture_bytes(read, forced, sink).await
            }
            Source::Mcp { endpoint, session } => {
                let (session_record, instructions) =
                    capture_mcp(endpoint, session, &mut sink).await?;
                Ok((
                    sink,
                    Captured {
                        session: Some(session_record),
                        instructions,
                        ..Captured::format(Format::Mcp)
                    },
                ))
            }
            Source::Record(spec) => capture_record(spec, sink).await,
            Source::OpenApi(spec) => capture_openapi(spec, sink).await,
        }
    }
}

/// Tools in the bytes `read` returns with their origin (a file, a command's
/// output), on the blocking pool; their format detected unless `forced`.
async fn capture_bytes<S, R>(
    read: R,
    forced: Option<Format>,
    mut sink: S,
) -> Result<(S, Captured), CaptureError>
where
    S: ToolSink + Send + 'static,
    R: FnOnce() -> Result<(Vec<u8>, String), CaptureError> + Send + 'static,
{
    run_blocking(move || {
        let (bytes, origin) = read()?;
        let format = parse_tools(&bytes, &origin, forced, &mut sink)?;
        Ok((sink, Captured::format(format)))
    })
    .await
}

/// One catalog from a recording: its only tool array, or the union.
async fn capture_record<S: ToolSink>(
    spec: &RecordSpec,
    mut sink: S,
) -> Result<(S, Captured), CaptureError> {
    let recording = record::record(spec).await?;
    let mut catalogs = record::catalogs(&recording, spec.merge)?;
    let origin = || format!("requests of `{}`", exec::display_command(&spec.argv));
    if catalogs.len() != 1 {
        return Err(CaptureError::Format {
            origin: origin(),
            reason: format!(
                "{} distinct tool arrays; capture the server with capture_servers, or set merge = \"union\"",
                catalogs.len()
            ),
        });
    }
    let catalog = catalogs.remove(0);
    for tool in catalog.tools {
        sink.push(tool.value())
            .map_err(|reason| CaptureError::Format {
                origin: origin(),
                reason,
            })?;
    }
    Ok((
        sink,
        Captured {
            format: catalog.format,
            session: Some(catalog.session),
            instructions: None,
            warnings: catalog.warnings,
        },
    ))
}

/// An OpenAPI document, read or fetched, converted on the blocking pool.
async fn capture_openapi<S>(spec: &OpenApiSpec, mut sink: S) -> Result<(S, Captured), CaptureError>
where
    S: ToolSink + Send + 'static,
{
    let (bytes, origin) = match &spec.location {
        DocumentLocation::File(path) => {
            let path = path.clone();
            run_blocking(move || {
                let origin = path.display().to_string();
                openapi::read_document(&path).map(|b| (b, origin))
            })
            .await?
        }
        DocumentLocation::Url { url, headers } => (
            openapi::fetch(url, headers, spec.timeout).await?,
            url.clone(),
        ),
    };
    let options = spec.options.clone();
    run_blocking(move || {
        let doc = openapi::parse_document(&bytes, &origin)?;
        drop(bytes);
        let warnings = openapi::convert_into(&doc, &options, &origin, &mut sink)?;
        // The document's tree is several times its text: free it before
        // the lockfile is written.
        drop(doc);
        Ok((
            sink,
            Captured {
                warnings,
                ..Captured::format(Format::OpenApi)
            },
        ))
    })
    .await
}

async fn run_blocking<T, F>(f: F) -> Result<T, CaptureError>
where
    T: Send + 'static,
    F: FnOnce() -> Result<T, CaptureError> + Send + 'static,
{
    match tokio::task::spawn_blocking(f).await {
        Ok(result) => result,
        Err(e) => Err(CaptureError::Read {
            path: "source".into(),
            reason: format!("capture task failed: {e}"),
        }),
    }
}

async fn capture_mcp(
    endpoint: &Endpoint,
    session: &SessionOptions,
    sink: &mut (dyn ToolSink + Send),
) -> Result<(Value, Option<String>), CaptureError> {
    let captured = match endpoint {
        Endpoint::Stdio(spec) => {
            let client =
                tokio::time::timeout(session.timeouts.connect, Client::connect_stdio(spec))
                    .await
                    .map_err(|_| {
                        McpError::new(mcp::Phase::Connect, "timed out starting the server")
                    })??;
            run_session(client, session, sink).await?
        }
        Endpoint::Http(spec) => {
            let client = Client::connect_http(spec, session.timeouts.connect).await?;
            match run_session(client, session, sink).await {
                // A server that refuses the POST of the handshake may speak
                // only the legacy HTTP+SSE transport: try that, as the
                // transport's backward-compatibility rules say, unless a
                // transport was chosen. Nothing was listed yet, so the sink
                // is untouched.
                Err(first) if spec.mode == HttpMode::Auto && is_legacy_hint(&first) => {
                    let legacy = HttpSpec {
                        mode: HttpMode::Sse,
                        ..spec.clone()
                    };
                    let retry = async {
                        let client =
                            Client::connect_http(&legacy, session.timeouts.connect).await?;
                        run_session(client, session, sink).await
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
    let record = json!({
        "client_capabilities": session.client_capabilities,
        "client_info": session.client_info,
        "protocol_version": captured.protocol_version,
        "server_info": captured.server_info,
    });
    Ok((record, captured.instructions))
}

fn is_legacy_hint(e: &McpError) -> bool {
    e.phase == mcp::Phase::Initialize && matches!(e.http_status, Some(400 | 404 | 405))
}

async fn run_session(
    mut client: Client,
    session: &SessionOptions,
    sink: &mut (dyn ToolSink + Send),
) -> Result<mcp::Capture, McpError> {
    let outcome = mcp::capture(&mut client, session, sink).await;
    client.close(CLOSE_GRACE).await;
    outcome
}

/// Reads a document of tool definitions into `sink`, streaming: errors,
/// including a tool the sink refuses, carry the document's line and column.
pub fn parse_tools(
    bytes: &[u8],
    origin: &str,
    forced: Option<Format>,
    sink: &mut dyn ToolSink,
) -> Result<Format, CaptureError> {
    let text = json::as_text(bytes, origin)?;
    if text.trim().is_empty() {
        return Err(json::JsonError {
            origin: origin.to_string(),
            line: 1,
            column: 1,
            message: "empty document, expected JSON".into(),
        }
        .into());
    }
    let format = format::stream(text, forced, sink).map_err(|e| json::from_serde(&e, origin))?;
    // A member given twice (two `inputSchema`s, a property defined twice)
    // would be read as the last one without a word.
    json::reject_duplicate_keys(text, origin)?;
    Ok(format)
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

pub(crate) fn io_reason(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => "no such file".into(),
        std::io::ErrorKind::PermissionDenied => "permission denied".into(),
        _ => e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stdio server that dies at once races toolpin's first write: the
    /// write may fail (EPIPE) or its stdout may be seen to close first.
    /// Either way the message names the exit status and quotes stderr.
    #[tokio::test]
    async fn a_stdio_server_that_exits_at_once_is_explained_every_time() {
        let source = Source::Mcp {
            endpoint: Endpoint::Stdio(StdioSpec {
                command: vec!["sh".into(), "-c".into(), "echo boom >&2; exit 3".into()],
                ..StdioSpec::default()
            }),
            session: SessionOptions::default(),
        };
        let mut messages = Vec::new();
        for _ in 0..10 {
            let err = source
                .capture(None, Vec::new())
                .await
                .expect_err("the server exits");
            messages.push(err.to_string());
        }
        let unexplained: Vec<&String> = messages
            .iter()
            .filter(|m| !(m.contains("exited with status 3") && m.contains("boom")))
            .collect();
        assert!(
            unexplained.is_empty(),
            "{} of {} messages lack the exit status or stderr: {unexplained:#?}",
            unexplained.len(),
            messages.len()
        );
    }
}
