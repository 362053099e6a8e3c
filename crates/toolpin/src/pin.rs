//! Capture → transform → normalize → fingerprint: from configured servers
//! (or one file) to a [`Catalog`].

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::path::Path;
use std::sync::Arc;

use indicatif::{MultiProgress, ProgressBar, ProgressStyle};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use serde_json::json;
use toolpin_capture::{openapi, source, Format};
use toolpin_manifest::{lockfile, Catalog, PinBuilder, ServerPin, Transform};

use crate::config::{Config, Server};
use crate::error::CliError;
use crate::expand::redact;

/// How to run a capture of many servers.
#[derive(Clone, Copy, Debug)]
pub struct CaptureOptions {
    /// Servers captured at once.
    pub jobs: usize,
    /// Capture every server and report every failure, instead of stopping
    /// at the first.
    pub keep_going: bool,
    /// Show a progress display (on a terminal), and print the sources'
    /// warnings on stderr: off with `--quiet`.
    pub progress: bool,
}

/// Captures every configured server, concurrently and bounded by `jobs`.
/// Any failure fails the whole capture, so no lockfile is written from it.
pub fn capture_config(config: &Config, opts: CaptureOptions) -> Result<Catalog, CliError> {
    capture_servers(&config.servers, &config.environment, opts)
}

/// Captures `servers` (a subset of a configuration) into one catalog.
pub fn capture_servers(
    servers: &[Server],
    environment: &str,
    opts: CaptureOptions,
) -> Result<Catalog, CliError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::new(format!("cannot start the async runtime: {e}")))?;
    let results = runtime.block_on(capture_all(servers, opts));
    let mut pinned = BTreeMap::new();
    let mut failures = Vec::new();
    for (server, result) in servers.iter().zip(results) {
        match result {
            Some(Ok((pin, warnings))) => {
                if opts.progress {
                    let who = format!("server {:?}", server.name);
                    print_warnings(&who, &warnings, &server.secrets);
                }
                pinned.insert(server.name.clone(), pin);
            }
            Some(Err(e)) => failures.push(format!(
                "server {:?}: {}",
                server.name,
                redact(&e, &server.secrets)
            )),
            None => {}
        }
    }
    match failures.len() {
        0 => {
            Catalog::new(environment.to_string(), pinned).map_err(|e| CliError::new(e.to_string()))
        }
        1 => Err(CliError::new(failures.remove(0))),
        n => {
            for f in &failures[..n - 1] {
                eprintln!("error: {f}");
            }
            Err(CliError::new(format!(
                "{} ({n} servers failed)",
                failures[n - 1]
            )))
        }
    }
}

/// One result per server, in order; `None` for servers not finished because
/// another failed first (without `keep_going`).
/// Warnings printed per server; past this, a count.
const MAX_WARNINGS: usize = 20;

/// A source's warnings on stderr after `who` (`server "x"`, or a file),
/// secrets redacted, at most [`MAX_WARNINGS`] of them and then how many
/// more there were.
fn print_warnings(who: &str, warnings: &[String], secrets: &[(String, String)]) {
    for w in warnings.iter().take(MAX_WARNINGS) {
        eprintln!(
            "warning: {who}: {}",
            toolpin_report::style::printable(&redact(w, secrets), false)
        );
    }
    if warnings.len() > MAX_WARNINGS {
        eprintln!(
            "warning: {who}: {} more warnings not shown",
            warnings.len() - MAX_WARNINGS
        );
    }
}

/// A pinned server and its source's warnings.
type Pinned = (ServerPin, Vec<String>);

async fn capture_all(
    servers: &[Server],
    opts: CaptureOptions,
) -> Vec<Option<Result<Pinned, String>>> {
    let progress = Progress::new(servers, opts.progress);
    let semaphore = Arc::new(Semaphore::new(opts.jobs.max(1)));
    let mut tasks = JoinSet::new();
    for (index, server) in servers.iter().cloned().enumerate() {
        let semaphore = Arc::clone(&semaphore);
        let bar = progress.bar(index);
        tasks.spawn(async move {
            let _permit = semaphore.acquire_owned().await;
            if let Some(bar) = &bar {
                bar.set_message(format!("{}: capturing", server.name));
            }
            let result = capture_server(&server).await;
            if let Some(bar) = bar {
                bar.finish_with_message(match &result {
                    Ok((pin, _)) => format!("{}: {}", server.name, tool_count(pin.tools.len())),
                    Err(_) => format!("{}: failed", server.name),
                });
            }
            (index, result)
        });
    }
    let mut results: Vec<Option<Result<Pinned, String>>> = vec![None; servers.len()];
    while let Some(joined) = tasks.join_next().await {
        let (index, result) = match joined {
            Ok(done) => done,
            Err(e) => {
                // A panicking capture is a bug; report it as a failure of
                // the run rather than bringing the process down.
                results
                    .iter_mut()
                    .find(|r| r.is_none())
                    .into_iter()
                    .for_each(|r| {
                        *r = Some(Err(format!("internal error: capture task failed: {e}")));
                    });
                continue;
            }
        };
        let failed = result.is_err();
        results[index] = Some(result);
        if failed && !opts.keep_going {
            // Dropping the tasks kills their servers.
            tasks.abort_all();
            break;
        }
    }
    progress.clear();
    results
}

/// "1 tool", "2 tools".
fn tool_count(n: usize) -> String {
    format!("{n} tool{}", if n == 1 { "" } else { "s" })
}

async fn capture_server(server: &Server) -> Result<Pinned, String> {
    let builder = PinBuilder::new(server.transform.clone());
    let (builder, captured) = server
        .source
        .capture(server.format, builder)
        .await
        .map_err(|e| e.to_string())?;
    let pin = builder.finish(
        server.record.clone(),
        captured.format.name(),
        captured.session,
    );
    Ok((pin, captured.warnings))
}

/// Spinners on stderr, one per server; absent when not wanted.
struct Progress {
    multi: Option<MultiProgress>,
    names: Vec<String>,
}

impl Progress {
    fn new(servers: &[Server], wanted: bool) -> Self {
        let multi = (wanted && std::io::stderr().is_terminal()).then(MultiProgress::new);
        Self {
            multi,
            names: servers.iter().map(|s| s.name.clone()).collect(),
        }
    }

    fn bar(&self, index: usize) -> Option<ProgressBar> {
        let multi = self.multi.as_ref()?;
        let bar = multi.add(ProgressBar::new_spinner());
        bar.set_style(
            ProgressStyle::with_template("{spinner} {msg} {elapsed}")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        );
        bar.set_message(format!("{}: waiting", self.names[index]));
        bar.enable_steady_tick(std::time::Duration::from_millis(100));
        Some(bar)
    }

    fn clear(&self) {
        if let Some(multi) = &self.multi {
            let _ = multi.clear();
        }
    }
}

/// Reads a lockfile, a tool-definition file or an OpenAPI document
/// (detected by content) as a catalog. A tool file or OpenAPI document
/// becomes one server named after the file's stem; a document is
/// converted with the default settings.
pub fn catalog_from_path(path: &Path, forced: Option<Format>) -> Result<Catalog, CliError> {
    let origin = path.display().to_string();
    let bytes = source::read_file(path).map_err(|e| CliError::new(e.to_string()))?;
    if forced.is_none() && lockfile::looks_like_lockfile(&bytes) {
        return lockfile::parse(&bytes, &origin).map_err(|e| CliError::new(e.to_string()));
    }
    let name = path
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("file")
        .replace('/', "_");
    let mut builder = PinBuilder::new(Transform::default());
    let format = match source::parse_tools(&bytes, &origin, forced, &mut builder) {
        Ok(format) => format,
        // Not tool definitions: perhaps an OpenAPI document. Tool files
        // pay nothing for the check.
        Err(e) if forced.is_none() => {
            return match openapi_catalog(path, &bytes, &origin, name)? {
                Some(catalog) => Ok(catalog),
                None => Err(CliError::new(e.to_string())),
            }
        }
        Err(e) => return Err(CliError::new(e.to_string())),
    };
    let pin = builder.finish(json!({ "file": origin }), format.name(), None);
    Catalog::new("default", BTreeMap::from([(name, pin)])).map_err(|e| CliError::new(e.to_string()))
}

/// The catalog of an OpenAPI document (JSON with an `openapi` or
/// `swagger` member, or YAML with one at the start of a line), converted
/// with the default settings; `None` if the file is not one.
fn openapi_catalog(
    path: &Path,
    bytes: &[u8],
    origin: &str,
    name: String,
) -> Result<Option<Catalog>, CliError> {
    let err = |e: toolpin_capture::CaptureError| CliError::new(e.to_string());
    let text = String::from_utf8_lossy(bytes);
    let doc = match text
        .trim_start_matches('\u{feff}')
        .trim_start()
        .chars()
        .next()
    {
        Some('{') => match toolpin_manifest::json::parse(bytes, origin) {
            Ok(doc) if toolpin_openapi::is_openapi(&doc) => doc,
            _ => return Ok(None),
        },
        Some('[') | None => return Ok(None),
        Some(_) => {
            let yaml_openapi = text.lines().any(|l| {
                let l = l.trim_start_matches('\u{feff}');
                [
                    "openapi:",
                    "swagger:",
                    "\"openapi\":",
                    "\"swagger\":",
                    "'openapi':",
                    "'swagger':",
                ]
                .iter()
                .any(|p| l.starts_with(p))
            });
            if !yaml_openapi {
                return Ok(None);
            }
            openapi::parse_document(bytes, origin).map_err(err)?
        }
    };
    if bytes.len() as u64 > openapi::MAX_DOCUMENT_BYTES {
        // The document reader's message states the limit.
        openapi::read_document(path).map_err(err)?;
    }
    let options = toolpin_openapi::Options::default();
    let mut builder = PinBuilder::new(Transform::default());
    let warnings = openapi::convert_into(&doc, &options, origin, &mut builder).map_err(err)?;
    drop(doc);
    print_warnings(origin, &warnings, &[]);
    let source = json!({ "openapi": origin, "conversion": options.record() });
    let pin = builder.finish(source, Format::OpenApi.name(), None);
    Catalog::new("default", BTreeMap::from([(name, pin)]))
        .map(Some)
        .map_err(|e| CliError::new(e.to_string()))
}

/// Reads the lockfile at `path`, with a pointer to `toolpin lock` when absent.
pub fn read_lockfile(path: &Path) -> Result<Catalog, CliError> {
    let origin = path.display().to_string();
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(CliError::new(format!(
                "{origin} not found; run `toolpin lock` to create it"
            )))
        }
        Err(e) => return Err(CliError::new(format!("cannot read {origin}: {e}"))),
    };
    lockfile::parse(&bytes, &origin).map_err(|e| CliError::new(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_counts_are_singular_for_one() {
        assert_eq!(tool_count(0), "0 tools");
        assert_eq!(tool_count(1), "1 tool");
        assert_eq!(tool_count(2), "2 tools");
    }
}
