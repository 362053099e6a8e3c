//! Sources: where a server's tools come from. Each source yields a
//! [`RawCapture`]; transforms and normalization happen downstream.

use std::path::PathBuf;
use std::time::Duration;

use toolpin_manifest::json;

use crate::exec::{self, ExecError, ExecSpec};
use crate::format::{self, Format, ToolSink};

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
}

impl Source {
    /// Captures the source's tools into `sink`, one at a time, and says
    /// which format they were in; `forced` skips format detection.
    pub fn capture(
        &self,
        forced: Option<Format>,
        sink: &mut dyn ToolSink,
    ) -> Result<Format, CaptureError> {
        let (bytes, origin) = match self {
            Source::File { path } => (read_file(path)?, path.display().to_string()),
            Source::Exec { argv, cwd, timeout } => {
                let spec = ExecSpec {
                    argv: argv.clone(),
                    cwd: cwd.clone(),
                    timeout: *timeout,
                };
                (
                    exec::run(&spec)?,
                    format!("output of `{}`", exec::display_command(argv)),
                )
            }
        };
        parse_tools(&bytes, &origin, forced, sink)
    }
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
    format::stream(text, forced, sink).map_err(|e| json::from_serde(&e, origin).into())
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
