//! `toolpin proxy`, `toolpin withdraw`, `toolpin restore`: the CLI side of
//! the facade (crates/toolpin-proxy does the serving), and the `[proxy]`
//! and `[facade."server/tool"]` tables of toolpin.toml.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use toolpin_capture::Source;
use toolpin_manifest::Catalog;
use toolpin_proxy::flags::{self, Flags, Withdrawal};
use toolpin_proxy::{DriftAction, FacadeEntry, Proxy, Settings, UpstreamSpec, Validation};

use crate::config::{parse_timeout, Config, TimeoutValue};
use crate::error::CliError;

/// `[proxy]` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ProxyFileConfig {
    validation: Option<String>,
    call_timeout: Option<TimeoutValue>,
    page_size: Option<usize>,
    events: Option<String>,
    otlp_endpoint: Option<String>,
    session_idle: Option<TimeoutValue>,
    max_sessions: Option<usize>,
    header_read_timeout: Option<TimeoutValue>,
    connection_idle: Option<TimeoutValue>,
    #[serde(default)]
    on_drift: BTreeMap<String, String>,
}

/// `[facade."server/tool"]` as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FacadeFileConfig {
    name: Option<String>,
    description: Option<String>,
    parameters: Option<Vec<String>>,
    #[serde(default)]
    fixed: BTreeMap<String, toml::Value>,
    #[serde(default)]
    rename: BTreeMap<String, String>,
}

/// The resolved `[proxy]` and `[facade]` tables.
#[derive(Debug, Clone)]
pub struct ProxyConfig {
    pub validation: Validation,
    pub on_drift: [DriftAction; 5],
    pub call_timeout: Duration,
    pub page_size: usize,
    /// The JSON-lines event log; `None`: stderr.
    pub events: Option<PathBuf>,
    /// OTLP/HTTP base endpoint for traces (the OTEL_* variables win).
    pub otlp_endpoint: Option<String>,
    /// How long an idle HTTP session lives.
    pub session_idle: Duration,
    /// Most HTTP sessions open at once.
    pub max_sessions: usize,
    /// How long an HTTP client may take to send a request's headers.
    pub header_read_timeout: Duration,
    /// How long an HTTP connection with no request in flight stays open.
    pub connection_idle: Duration,
    pub facade: BTreeMap<String, FacadeEntry>,
}

/// Default deadline for a relayed request.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(60);
/// Default tools per `tools/list` page.
pub const DEFAULT_PAGE_SIZE: usize = 100;

const SEVERITIES: [&str; 5] = ["critical", "high", "medium", "low", "info"];

impl ProxyConfig {
    pub(crate) fn resolve(
        file: ProxyFileConfig,
        facade: BTreeMap<String, FacadeFileConfig>,
        dir: &Path,
    ) -> Result<Self, String> {
        let validation = match file.validation.as_deref() {
            None => Validation::Enforce,
            Some(v) => Validation::parse(v).ok_or_else(|| {
                format!("proxy.validation: {v:?} is not one of enforce, warn, off")
            })?,
        };
        let mut on_drift = [DriftAction::ServePinned; 5];
        for (severity, action) in &file.on_drift {
            let Some(i) = SEVERITIES.iter().position(|s| s == severity) else {
                return Err(format!(
                    "proxy.on_drift: {severity:?} is not a severity (critical, high, medium, low, info)"
                ));
            };
            on_drift[i] = DriftAction::parse(action).ok_or_else(|| {
                format!("proxy.on_drift.{severity}: {action:?} is not one of serve-pinned, withdraw, fail")
            })?;
        }
        let call_timeout = match &file.call_timeout {
            Some(t) => parse_timeout("proxy.call_timeout", t)?,
            None => DEFAULT_CALL_TIMEOUT,
        };
        let page_size = match file.page_size {
            Some(0) => return Err("proxy.page_size must be at least 1".into()),
            Some(n) => n,
            None => DEFAULT_PAGE_SIZE,
        };
        let mut entries = BTreeMap::new();
        for (address, f) in facade {
            if !address.contains('/') {
                return Err(format!(
                    "facade.\"{address}\": name a pinned tool as \"server/tool\""
                ));
            }
            if let Some(name) = &f.name {
                let ok = !name.is_empty()
                    && name.len() <= 128
                    && name
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
                if !ok {
                    return Err(format!(
                        "facade.\"{address}\".name: {name:?} is not a tool name (1-128 of A-Z a-z 0-9 _ - .)"
                    ));
                }
            }
            let fixed = f
                .fixed
                .into_iter()
                .map(|(k, v)| serde_json::to_value(v).map(|v| (k, v)))
                .collect::<Result<_, _>>()
                .map_err(|e| format!("facade.\"{address}\".fixed: {e}"))?;
            entries.insert(
                address,
                FacadeEntry {
                    name: f.name,
                    description: f.description,
                    parameters: f.parameters,
                    fixed,
                    rename: f.rename,
                },
            );
        }
        Ok(Self {
            validation,
            on_drift,
            call_timeout,
            page_size,
            events: file.events.map(|p| dir.join(p)),
            otlp_endpoint: file.otlp_endpoint,
            session_idle: match &file.session_idle {
                Some(t) => parse_timeout("proxy.session_idle", t)?,
                None => toolpin_proxy::http::DEFAULT_SESSION_IDLE,
            },
            max_sessions: match file.max_sessions {
                Some(0) => return Err("proxy.max_sessions must be at least 1".into()),
                Some(n) => n,
                None => toolpin_proxy::http::DEFAULT_MAX_SESSIONS,
            },
            header_read_timeout: match &file.header_read_timeout {
                Some(t) => parse_timeout("proxy.header_read_timeout", t)?,
                None => toolpin_proxy::http::DEFAULT_HEADER_READ_TIMEOUT,
            },
            connection_idle: match &file.connection_idle {
                Some(t) => parse_timeout("proxy.connection_idle", t)?,
                None => toolpin_proxy::http::DEFAULT_CONNECTION_IDLE,
            },
            facade: entries,
        })
    }
}

impl Default for ProxyConfig {
    fn default() -> Self {
        Self {
            validation: Validation::Enforce,
            on_drift: [DriftAction::ServePinned; 5],
            call_timeout: DEFAULT_CALL_TIMEOUT,
            page_size: DEFAULT_PAGE_SIZE,
            events: None,
            otlp_endpoint: None,
            session_idle: toolpin_proxy::http::DEFAULT_SESSION_IDLE,
            max_sessions: toolpin_proxy::http::DEFAULT_MAX_SESSIONS,
            header_read_timeout: toolpin_proxy::http::DEFAULT_HEADER_READ_TIMEOUT,
            connection_idle: toolpin_proxy::http::DEFAULT_CONNECTION_IDLE,
            facade: BTreeMap::new(),
        }
    }
}

/// What `toolpin proxy` was asked.
pub struct ProxyRun<'a> {
    pub config: &'a Config,
    pub lockfile: PathBuf,
    pub servers: &'a [String],
    pub listen: Option<String>,
    pub metrics_listen: Option<String>,
    pub allow_hosts: &'a [String],
    pub allow_origins: &'a [String],
    pub events: Option<String>,
    /// `--max-sessions`, over `[proxy] max_sessions`.
    pub max_sessions: Option<usize>,
    pub start_check: bool,
    pub capture: crate::pin::CaptureOptions,
}

/// The configured MCP servers to front, by name (all of them by default).
fn selected<'a>(
    config: &'a Config,
    names: &[String],
) -> Result<Vec<&'a crate::config::Server>, CliError> {
    let mut out = Vec::new();
    for server in &config.servers {
        let chosen = names.is_empty() || names.contains(&server.name);
        if !chosen {
            continue;
        }
        match &server.source {
            Source::Mcp { .. } => out.push(server),
            _ if names.is_empty() => {}
            _ => {
                return Err(CliError::new(format!(
                    "server {:?} is not an MCP server; only MCP servers can be proxied",
                    server.name
                )))
            }
        }
    }
    for n in names {
        if !config.servers.iter().any(|s| s.name == *n) {
            let known: Vec<&str> = config.servers.iter().map(|s| s.name.as_str()).collect();
            return Err(CliError::new(format!(
                "--server {n}: no such server (configured: {})",
                known.join(", ")
            )));
        }
    }
    if out.is_empty() {
        return Err(CliError::new(
            "no MCP server to proxy: configure one with `command` or `url` in toolpin.toml",
        ));
    }
    Ok(out)
}

pub fn run(args: ProxyRun) -> Result<(), CliError> {
    let servers = selected(args.config, args.servers)?;
    let pinned = crate::pin::read_lockfile(&args.lockfile)?;
    let mut pins = BTreeMap::new();
    let mut upstreams = Vec::new();
    for server in &servers {
        let Some(pin) = pinned.servers.get(&server.name) else {
            return Err(CliError::new(format!(
                "server {:?} is not in {}; run `toolpin lock` first",
                server.name,
                args.lockfile.display()
            )));
        };
        pins.insert(server.name.clone(), pin.clone());
        if let Source::Mcp { endpoint, session } = &server.source {
            upstreams.push(UpstreamSpec {
                name: server.name.clone(),
                endpoint: endpoint.clone(),
                options: session.clone(),
                transform: server.transform.clone(),
            });
        }
    }
    let catalog =
        Catalog::new(pinned.environment.clone(), pins).map_err(|e| CliError::new(e.to_string()))?;
    let proxy_cfg = &args.config.proxy;
    let events = match args
        .events
        .as_deref()
        .map(PathBuf::from)
        .or_else(|| proxy_cfg.events.clone())
    {
        Some(p) if p.as_os_str() == "-" => toolpin_proxy::events::Sink::Stderr,
        Some(p) => toolpin_proxy::events::Sink::file(&p).map_err(|e| {
            CliError::new(format!("cannot open the event log {}: {e}", p.display()))
        })?,
        None => toolpin_proxy::events::Sink::Stderr,
    };
    let settings = Settings {
        catalog,
        upstreams,
        facade: proxy_cfg.facade.clone(),
        flags_path: Some(flags::path_for(&args.lockfile)),
        validation: proxy_cfg.validation,
        on_drift: proxy_cfg.on_drift,
        call_timeout: proxy_cfg.call_timeout,
        page_size: proxy_cfg.page_size,
        reply_runtime: match &args.listen {
            None => Some(reply_runtime()?),
            Some(_) => None,
        },
        // Every server's secrets, not only its own: no upstream's text may
        // carry another's credentials either.
        redactor: toolpin_manifest::Redactor::new(servers.iter().flat_map(|s| s.secrets.iter())),
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::new(format!("cannot start the async runtime: {e}")))?;
    let endpoint = toolpin_proxy::telemetry::endpoint_from_env(proxy_cfg.otlp_endpoint.as_deref());
    let telemetry = match endpoint {
        Some(endpoint) => {
            // The exporter's task is spawned here and runs with the proxy.
            let _context = runtime.enter();
            toolpin_proxy::telemetry::Telemetry::otlp(endpoint, otlp_headers())
                .map_err(CliError::new)?
        }
        None => toolpin_proxy::telemetry::Telemetry::disabled(),
    };
    let proxy = Proxy::new(settings, events, telemetry).map_err(CliError::new)?;

    // Drift at start: capture what upstream serves now and apply the
    // policy before the agent sees anything.
    if args.start_check {
        let subset: Vec<crate::config::Server> = servers.iter().map(|s| (*s).clone()).collect();
        let live = crate::pin::capture_servers(&subset, &args.config.environment, args.capture)?;
        let mut failures = Vec::new();
        for (name, pin) in &live.servers {
            failures.extend(proxy.apply_drift(name, pin));
        }
        if !failures.is_empty() {
            return Err(CliError::new(format!(
                "refusing to start: {} (proxy.on_drift says fail)",
                failures.join("; ")
            )));
        }
    }

    runtime.block_on(async move {
        watch_flags(Arc::clone(&proxy));
        on_termination(Arc::clone(&proxy));
        match &args.listen {
            Some(addr) => {
                let options = toolpin_proxy::http::Options {
                    allow_hosts: args.allow_hosts.to_vec(),
                    allow_origins: args.allow_origins.to_vec(),
                    session_idle: proxy_cfg.session_idle,
                    max_sessions: args.max_sessions.unwrap_or(proxy_cfg.max_sessions),
                    header_read_timeout: proxy_cfg.header_read_timeout,
                    connection_idle: proxy_cfg.connection_idle,
                };
                toolpin_proxy::http::serve(proxy, addr, options)
                    .await
                    .map_err(|e| CliError::new(format!("--listen {addr}: {e}")))
            }
            None => {
                if let Some(addr) = &args.metrics_listen {
                    let options = toolpin_proxy::http::Options {
                        header_read_timeout: proxy_cfg.header_read_timeout,
                        connection_idle: proxy_cfg.connection_idle,
                        ..Default::default()
                    };
                    toolpin_proxy::http::serve_metrics(Arc::clone(&proxy), addr, options)
                        .await
                        .map_err(|e| CliError::new(format!("--metrics-listen {addr}: {e}")))?;
                }
                let served = toolpin_proxy::stdio::serve(Arc::clone(&proxy))
                    .await
                    .map_err(|e| CliError::new(format!("stdio: {e}")));
                proxy.telemetry.flush().await;
                served
            }
        }
    })
}

/// `OTEL_EXPORTER_OTLP_HEADERS` (`k=v,k2=v2`, values percent-decoded).
fn otlp_headers() -> Vec<(String, String)> {
    let Ok(text) = std::env::var("OTEL_EXPORTER_OTLP_HEADERS")
        .or_else(|_| std::env::var("OTEL_EXPORTER_OTLP_TRACES_HEADERS"))
    else {
        return Vec::new();
    };
    text.split(',')
        .filter_map(|pair| pair.split_once('='))
        .map(|(k, v)| (k.trim().to_string(), percent_decode(v.trim())))
        .filter(|(k, _)| !k.is_empty())
        .collect()
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (
            bytes[i],
            bytes.get(i + 1).copied().and_then(hex),
            bytes.get(i + 2).copied().and_then(hex),
        ) {
            (b'%', Some(h), Some(l)) => {
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// On SIGTERM or SIGINT (an agent stopping its server), the upstream
/// servers go down with the proxy instead of being orphaned.
fn on_termination(proxy: Arc<Proxy>) {
    use tokio::signal::unix::{signal, SignalKind};
    for (kind, code) in [
        (SignalKind::terminate(), 143),
        (SignalKind::interrupt(), 130),
    ] {
        let proxy = Arc::clone(&proxy);
        tokio::spawn(async move {
            let Ok(mut s) = signal(kind) else { return };
            if s.recv().await.is_some() {
                proxy.kill_upstreams();
                // Spans still waiting for export go out first (bounded).
                let _ = tokio::time::timeout(Duration::from_secs(2), proxy.telemetry.flush()).await;
                std::process::exit(code);
            }
        });
    }
}

/// Reloads the flags file when it changes on disk (checked twice a
/// second) and on SIGHUP.
/// The stdio front reads the servers' answers and writes them to the agent
/// on a thread of its own (a second current-thread runtime), while the
/// main thread reads the agent's requests and writes them upstream: the
/// two directions of a call run on two cores, with no hand-off between
/// threads on the way (measured in docs/performance.md).
fn reply_runtime() -> Result<tokio::runtime::Handle, CliError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::new(format!("cannot start the async runtime: {e}")))?;
    let handle = runtime.handle().clone();
    std::thread::Builder::new()
        .name("toolpin-answers".into())
        .spawn(move || runtime.block_on(std::future::pending::<()>()))
        .map_err(|e| CliError::new(format!("cannot start a thread: {e}")))?;
    Ok(handle)
}

fn watch_flags(proxy: Arc<Proxy>) {
    let Some(path) = proxy.settings.flags_path.clone() else {
        return;
    };
    let stamp = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    let polling = Arc::clone(&proxy);
    tokio::spawn(async move {
        let mut last = stamp(&path);
        loop {
            tokio::time::sleep(Duration::from_millis(500)).await;
            let now = stamp(&path);
            if now != last {
                last = now;
                polling.reload_flags();
            }
        }
    });
    tokio::spawn(async move {
        let Ok(mut hup) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())
        else {
            return;
        };
        while hup.recv().await.is_some() {
            proxy.reload_flags();
        }
    });
}

/// `toolpin withdraw` and `toolpin restore`.
pub fn set_withdrawn(
    lockfile: &Path,
    tool: &str,
    reason: Option<&str>,
    author: String,
) -> Result<String, CliError> {
    let pinned = crate::pin::read_lockfile(lockfile)?;
    let known = tool
        .split_once('/')
        .and_then(|(s, t)| pinned.servers.get(s)?.tools.get(t))
        .is_some();
    let path = flags::path_for(lockfile);
    let mut flags = Flags::read(&path).map_err(CliError::new)?;
    match reason {
        Some(reason) => {
            if !known {
                return Err(CliError::new(format!(
                    "{tool}: no such pinned tool in {} (name it as server/tool)",
                    lockfile.display()
                )));
            }
            let reason = reason.trim();
            if reason.is_empty() {
                return Err(CliError::new("--reason must say why the tool is withdrawn"));
            }
            flags.withdrawn.insert(
                tool.to_string(),
                Withdrawal {
                    reason: reason.to_string(),
                    by: Some(author),
                    at: Some(toolpin_manifest::time::now_utc()),
                },
            );
        }
        None => {
            if flags.withdrawn.remove(tool).is_none() {
                return Err(CliError::new(format!(
                    "{tool} is not withdrawn in {}",
                    path.display()
                )));
            }
        }
    }
    flags.write(&path).map_err(CliError::new)?;
    Ok(path.display().to_string())
}
