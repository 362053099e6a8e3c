//! `toolpin proxy`, `toolpin withdraw`, `toolpin restore`: the CLI side of
//! the facade (crates/toolpin-proxy does the serving; the `[proxy]` and
//! `[facade."server/tool"]` tables are read by toolpin-config).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use toolpin_capture::Source;
use toolpin_manifest::Catalog;
use toolpin_proxy::flags::{self, Flags, Withdrawal};
use toolpin_proxy::{Proxy, Settings, UpstreamSpec};

use crate::config::Config;
use crate::error::CliError;

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
