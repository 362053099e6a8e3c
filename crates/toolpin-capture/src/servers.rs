//! Many servers captured into one catalog: concurrently, bounded by a job
//! count, failing as one (no catalog from a partial capture), with a
//! spinner per server on a terminal. `toolpin lock`, `check`, `pending`,
//! `evals` and the proxy's start-up check all capture through here.

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::sync::Arc;

use indicatif::{MultiProgress, ProgressBar, ProgressStyle};
use serde_json::Value;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use toolpin_manifest::{Catalog, PinBuilder, Redactor, ServerPin, Transform};

use crate::record::{self, RecordSpec};
use crate::{Format, Source};

/// A server ready to capture: where its tools come from and how they are
/// pinned.
#[derive(Debug, Clone)]
pub struct Server {
    pub name: String,
    pub source: Source,
    pub format: Option<Format>,
    pub transform: Transform,
    /// What the lockfile records about how the server was reached.
    pub record: Value,
    /// Values expanded from the environment, never to be printed:
    /// `(stand-in, value)` pairs.
    pub secrets: Vec<(String, String)>,
    /// The secrets that are credentials (toolpin-config says which), also
    /// replaced by their stand-ins in data: the tools pinned and the
    /// results of calls.
    pub credentials: Vec<(String, String)>,
}

/// How to run a capture of many servers.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// Servers captured at once.
    pub jobs: usize,
    /// Capture every server and report every failure, instead of stopping
    /// at the first.
    pub keep_going: bool,
    /// Show a spinner per server while capturing (only on a terminal).
    pub progress: bool,
}

/// A capture that succeeded, and what the sources warned about, per
/// server (`server "name"`), secrets already redacted.
#[derive(Debug)]
pub struct Capture {
    pub catalog: Catalog,
    pub warnings: Vec<(String, Vec<String>)>,
}

/// A capture that failed: one line per failed server (`server "x": why`),
/// secrets redacted, in configuration order.
#[derive(Debug)]
pub struct Failures(pub Vec<String>);

impl std::fmt::Display for Failures {
    /// The last failure, with how many servers failed when there were
    /// several (the others are in [`Failures::0`]).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0.as_slice() {
            [] => f.write_str("capture failed"),
            [one] => f.write_str(one),
            [.., last] => write!(f, "{last} ({} servers failed)", self.0.len()),
        }
    }
}

impl std::error::Error for Failures {}

/// Captures `servers` into one catalog for `environment`. Any failure fails
/// the whole capture.
pub fn capture_servers(
    servers: &[Server],
    environment: &str,
    opts: Options,
) -> Result<Capture, Failures> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Failures(vec![format!("cannot start the async runtime: {e}")]))?;
    let results = runtime.block_on(capture_all(servers, opts));
    let mut pinned = BTreeMap::new();
    let mut warnings = Vec::new();
    let mut failures = Vec::new();
    for (server, result) in servers.iter().zip(results) {
        let redactor = Redactor::new(&server.secrets);
        let credentials = Redactor::new(&server.credentials);
        match result {
            Some(Ok((pins, said))) => {
                if !said.is_empty() {
                    let said = said.iter().map(|w| redactor.redact(w)).collect();
                    warnings.push((format!("server {:?}", server.name), said));
                }
                for (name, mut pin) in pins {
                    // A secret the server echoed in a definition never
                    // reaches the catalog, so no lockfile, finding, ledger
                    // row or payload built from it holds one.
                    pin.redact(&credentials);
                    if pinned.contains_key(&name) {
                        failures.push(format!(
                            "server {:?}: its recording pins {name:?}, which is also a configured server; rename one",
                            server.name
                        ));
                        continue;
                    }
                    pinned.insert(name, pin);
                }
            }
            Some(Err(e)) => {
                failures.push(format!("server {:?}: {}", server.name, redactor.redact(&e)))
            }
            None => {}
        }
    }
    if !failures.is_empty() {
        return Err(Failures(failures));
    }
    let catalog =
        Catalog::new(environment.to_string(), pinned).map_err(|e| Failures(vec![e.to_string()]))?;
    Ok(Capture { catalog, warnings })
}

/// A source's pinned servers (one, or one per distinct array a recording
/// caught, by name) and its warnings.
type Pinned = (Vec<(String, ServerPin)>, Vec<String>);

/// One result per server, in order; `None` for servers not finished because
/// another failed first (without `keep_going`).
async fn capture_all(servers: &[Server], opts: Options) -> Vec<Option<Result<Pinned, String>>> {
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
                    Ok((pins, _)) => format!(
                        "{}: {}",
                        server.name,
                        tool_count(pins.iter().map(|(_, p)| p.tools.len()).sum())
                    ),
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
                if let Some(r) = results.iter_mut().find(|r| r.is_none()) {
                    *r = Some(Err(format!("internal error: capture task failed: {e}")));
                }
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
    if let Source::Record(spec) = &server.source {
        return capture_recorded(server, spec).await;
    }
    let builder = PinBuilder::new(server.transform.clone());
    let (builder, captured) = server
        .source
        .capture(server.format, builder)
        .await
        .map_err(|e| e.to_string())?;
    let pin = builder
        .finish(
            server.record.clone(),
            captured.format.name(),
            captured.session,
        )
        .with_instructions(captured.instructions);
    Ok((vec![(server.name.clone(), pin)], captured.warnings))
}

/// A `record` source: one pin per catalog the recording yields.
async fn capture_recorded(server: &Server, spec: &RecordSpec) -> Result<Pinned, String> {
    let recording = record::record(spec).await.map_err(|e| e.to_string())?;
    let catalogs = record::catalogs(&recording, spec.merge).map_err(|e| e.to_string())?;
    record::pins(&server.name, &server.transform, &server.record, catalogs)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_counts_are_singular_for_one() {
        assert_eq!(tool_count(0), "0 tools");
        assert_eq!(tool_count(1), "1 tool");
        assert_eq!(tool_count(2), "2 tools");
    }

    #[test]
    fn failures_name_the_last_and_count_them() {
        assert_eq!(Failures(vec!["a".into()]).to_string(), "a");
        assert_eq!(
            Failures(vec!["a".into(), "b".into()]).to_string(),
            "b (2 servers failed)"
        );
    }
}
