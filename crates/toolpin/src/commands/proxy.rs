//! `toolpin proxy`: serve the pinned catalog to an agent. The CLI side of
//! the facade: the selected servers and the pin become `Settings`, the drift
//! check at start runs before the front opens; crates/toolpin-proxy does the
//! serving (`toolpin_proxy::serve`), toolpin-config reads `[proxy]` and
//! `[facade."server/tool"]`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use toolpin_capture::Source;
use toolpin_manifest::Catalog;
use toolpin_ops::proxy::ProxyRecorder;
use toolpin_proxy::flags;
use toolpin_proxy::serve::{Front, Serve};
use toolpin_proxy::{Settings, UpstreamSpec};

use super::Outcome;
use crate::cli::ProxyArgs;
use crate::config::{self, Config};
use crate::error::CliError;

pub fn run(args: &ProxyArgs) -> Result<Outcome, CliError> {
    let cfg = config::load(&args.config.config, args.config.env.as_deref())?;
    let lockfile = args
        .config
        .lockfile
        .clone()
        .unwrap_or_else(|| cfg.default_lockfile());
    serve(ProxyRun {
        config: &cfg,
        lockfile,
        servers: &args.servers,
        listen: args.listen.clone(),
        metrics_listen: args.metrics_listen.clone(),
        allow_hosts: &args.allow_hosts,
        allow_origins: &args.allow_origins,
        events: args.events.clone(),
        max_sessions: args
            .max_sessions
            .map(|n| usize::try_from(n).unwrap_or(usize::MAX)),
        max_connections: args.max_connections,
        body_timeout: args.body_timeout,
        start_check: !args.no_start_check,
        // Progress spinners would draw on the agent's terminal.
        capture: args.config.capture_options(true),
    })
    .map(|()| Outcome::Clean)
}

/// What `toolpin proxy` was asked.
struct ProxyRun<'a> {
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
    /// `--max-connections`, over `[proxy] max_connections`.
    pub max_connections: Option<usize>,
    /// `--body-timeout`, over `[proxy] body_timeout`.
    pub body_timeout: Option<std::time::Duration>,
    pub start_check: bool,
    pub capture: toolpin_capture::servers::Options,
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

/// Resolves the selected servers and the pin into `Settings` and serves.
fn serve(args: ProxyRun) -> Result<(), CliError> {
    let servers = selected(args.config, args.servers)?;
    let pinned = super::read_lockfile(&args.lockfile)?;
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
    let record = ledger_recorder(args.config, &catalog)?;
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
            None => Some(toolpin_proxy::serve::reply_runtime().map_err(CliError::new)?),
            Some(_) => None,
        },
        // Every server's secrets, not only its own: no upstream's text may
        // carry another's credentials either.
        redactor: toolpin_manifest::Redactor::new(servers.iter().flat_map(|s| s.secrets.iter())),
        credentials: toolpin_manifest::Redactor::new(
            servers.iter().flat_map(|s| s.credentials.iter()),
        ),
        record: record
            .clone()
            .map(|r| r as Arc<dyn toolpin_proxy::record::Record>),
    };
    // The flags given override `[proxy]`.
    let mut connections = proxy_cfg.connections;
    connections.max_connections = args.max_connections.unwrap_or(connections.max_connections);
    connections.body_timeout = args.body_timeout.unwrap_or(connections.body_timeout);
    let front = match &args.listen {
        Some(addr) => Front::Http {
            addr: addr.clone(),
            options: toolpin_proxy::http::Options {
                allow_hosts: args.allow_hosts.to_vec(),
                allow_origins: args.allow_origins.to_vec(),
                session_idle: proxy_cfg.session_idle,
                max_sessions: args.max_sessions.unwrap_or(proxy_cfg.max_sessions),
                connections,
            },
        },
        None => Front::Stdio {
            metrics: args.metrics_listen.clone().map(|addr| {
                let options = toolpin_proxy::http::Options {
                    connections,
                    ..Default::default()
                };
                (addr, options)
            }),
        },
    };
    let serve = Serve {
        events,
        otlp_endpoint: proxy_cfg.otlp_endpoint.clone(),
        front,
    };
    // Drift at start: capture what upstream serves now and apply the
    // policy before the agent sees anything.
    let mut start_error = None;
    let served = toolpin_proxy::serve::serve(settings, serve, |proxy| {
        if !args.start_check {
            return Ok(());
        }
        let subset: Vec<crate::config::Server> = servers.iter().map(|s| (*s).clone()).collect();
        let live =
            super::capture(&subset, &args.config.environment, args.capture).map_err(|e| {
                let message = e.to_string();
                start_error = Some(e);
                message
            })?;
        let mut failures = Vec::new();
        for (name, pin) in &live.servers {
            failures.extend(proxy.apply_drift(name, pin));
        }
        if !failures.is_empty() {
            return Err(format!(
                "refusing to start: {} (proxy.on_drift says fail)",
                failures.join("; ")
            ));
        }
        Ok(())
    });
    if let Some(record) = &record {
        // What the last refusals queued is written before the exit.
        record.finish();
    }
    match (served, start_error) {
        (Err(_), Some(e)) => Err(e),
        (served, _) => served.map_err(CliError::new),
    }
}

/// The drift ledger's writer for the proxy's run-time drift and refusals;
/// `None` when `[ledger]` is off, or unavailable and not required (then a
/// warning says so).
fn ledger_recorder(cfg: &Config, pinned: &Catalog) -> Result<Option<Arc<ProxyRecorder>>, CliError> {
    let warn = |why: &str| {
        // Standard error: standard output carries the protocol.
        eprintln!("warning: {why}");
    };
    match toolpin_ops::open::open(&cfg.ledger) {
        Ok(None) => Ok(None),
        Ok(Some(ledger)) => Ok(Some(Arc::new(ProxyRecorder::start(
            ledger,
            pinned,
            &cfg.vendors,
            cfg.ledger.secrets.clone(),
            Arc::new(warn),
        )))),
        Err(e) if cfg.ledger.required => Err(CliError::new(format!("ledger: {e}"))),
        // The embedded default is best effort: silent when nobody asked.
        Err(_) if !cfg.ledger.configured => Ok(None),
        Err(e) => {
            warn(&format!(
                "ledger: {e}; run-time drift is not recorded ([ledger] required = true makes this an error)"
            ));
            Ok(None)
        }
    }
}
