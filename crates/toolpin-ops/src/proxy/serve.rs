//! `toolpin proxy`: the selected servers and the pin resolved into the
//! proxy's `Settings` and front, the drift check at start, and the serving
//! (`toolpin_proxy::serve`) until it ends.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::settings::ProxyConfig;
use crate::settings::{Config, Server};
use toolpin_capture::{servers, Source};
use toolpin_manifest::Catalog;
use toolpin_proxy::flags;
use toolpin_proxy::serve::{Front, Serve};
use toolpin_proxy::{Settings, UpstreamSpec};

use super::ProxyRecorder;
use crate::project::Project;
use crate::Error;

/// What `toolpin proxy` was asked, over the configuration's `[proxy]`.
pub struct Flags<'a> {
    /// The servers to front (none: every MCP server).
    pub servers: &'a [String],
    pub listen: Option<String>,
    pub metrics_listen: Option<String>,
    pub allow_hosts: &'a [String],
    pub allow_origins: &'a [String],
    /// The event log: a file, or `-` for stderr.
    pub events: Option<String>,
    /// `--max-sessions`, over `[proxy] max_sessions`.
    pub max_sessions: Option<usize>,
    /// `--max-connections`, over `[proxy] max_connections`.
    pub max_connections: Option<usize>,
    /// `--body-timeout`, over `[proxy] body_timeout`.
    pub body_timeout: Option<Duration>,
    pub start_check: bool,
    pub capture: servers::Options,
}

/// The configuration's `[proxy]`, resolved: the one place the proxy's
/// settings are read from the configuration.
fn configured(config: &Config) -> &ProxyConfig {
    &config.proxy
}

/// Serves the pinned catalog of the selected servers until the front
/// closes. With `start_check`, upstream is captured first and the policy
/// applied before the agent sees anything.
pub fn serve(project: &Project, flags: &Flags) -> Result<(), Error> {
    let config = &project.config;
    let servers = selected(config, flags.servers)?;
    let (catalog, upstreams) = pinned(&servers, &project.lockfile)?;
    let proxy_cfg = configured(config);
    let events = events(flags, proxy_cfg)?;
    let record = ledger_recorder(config, &catalog)?;
    let settings = Settings {
        catalog,
        upstreams,
        facade: proxy_cfg.facade.clone(),
        flags_path: Some(flags::path_for(&project.lockfile)),
        validation: proxy_cfg.validation,
        on_drift: proxy_cfg.on_drift,
        call_timeout: proxy_cfg.call_timeout,
        page_size: proxy_cfg.page_size,
        reply_runtime: match &flags.listen {
            None => Some(toolpin_proxy::serve::reply_runtime().map_err(Error::new)?),
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
    let serve = Serve {
        events,
        otlp_endpoint: proxy_cfg.otlp_endpoint.clone(),
        front: front(flags, proxy_cfg),
    };
    // Drift at start: capture what upstream serves now and apply the
    // policy before the agent sees anything.
    let mut start_error = None;
    let served = toolpin_proxy::serve::serve(settings, serve, |proxy| {
        if !flags.start_check {
            return Ok(());
        }
        let subset: Vec<Server> = servers.iter().map(|s| (*s).clone()).collect();
        let live =
            crate::capture::capture(&subset, &config.environment, flags.capture).map_err(|e| {
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
        (served, _) => served.map_err(Error::new),
    }
}

/// The pin of each selected server, as a catalog, and the upstream each
/// is relayed to.
fn pinned(servers: &[&Server], lockfile: &Path) -> Result<(Catalog, Vec<UpstreamSpec>), Error> {
    let pinned = toolpin_manifest::lockfile::read(lockfile)?;
    let mut pins = BTreeMap::new();
    let mut upstreams = Vec::new();
    for server in servers {
        let Some(pin) = pinned.servers.get(&server.name) else {
            return Err(Error::new(format!(
                "server {:?} is not in {}; run `toolpin lock` first",
                server.name,
                lockfile.display()
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
    let catalog = Catalog::new(pinned.environment.clone(), pins)?;
    Ok((catalog, upstreams))
}

/// Where drift events and refusals go: `--events`, else `[proxy] events`,
/// else stderr.
fn events(flags: &Flags, proxy_cfg: &ProxyConfig) -> Result<toolpin_proxy::events::Sink, Error> {
    let path = flags
        .events
        .as_deref()
        .map(PathBuf::from)
        .or_else(|| proxy_cfg.events.clone());
    Ok(match path {
        Some(p) if p.as_os_str() == "-" => toolpin_proxy::events::Sink::Stderr,
        Some(p) => toolpin_proxy::events::Sink::file(&p)
            .map_err(|e| Error::new(format!("cannot open the event log {}: {e}", p.display())))?,
        None => toolpin_proxy::events::Sink::Stderr,
    })
}

/// The front the agent talks to: HTTP at `--listen`, else stdio (with
/// `/metrics` at `--metrics-listen`). The flags given override `[proxy]`.
fn front(flags: &Flags, proxy_cfg: &ProxyConfig) -> Front {
    let mut connections = proxy_cfg.connections;
    connections.max_connections = flags.max_connections.unwrap_or(connections.max_connections);
    connections.body_timeout = flags.body_timeout.unwrap_or(connections.body_timeout);
    match &flags.listen {
        Some(addr) => Front::Http {
            addr: addr.clone(),
            options: toolpin_proxy::http::Options {
                allow_hosts: flags.allow_hosts.to_vec(),
                allow_origins: flags.allow_origins.to_vec(),
                session_idle: proxy_cfg.session_idle,
                max_sessions: flags.max_sessions.unwrap_or(proxy_cfg.max_sessions),
                connections,
            },
        },
        None => Front::Stdio {
            metrics: flags.metrics_listen.clone().map(|addr| {
                let options = toolpin_proxy::http::Options {
                    connections,
                    ..Default::default()
                };
                (addr, options)
            }),
        },
    }
}

/// The configured MCP servers to front, by name (all of them by default).
fn selected<'a>(config: &'a Config, names: &[String]) -> Result<Vec<&'a Server>, Error> {
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
                return Err(Error::new(format!(
                    "server {:?} is not an MCP server; only MCP servers can be proxied",
                    server.name
                )))
            }
        }
    }
    for n in names {
        if !config.servers.iter().any(|s| s.name == *n) {
            let known: Vec<&str> = config.servers.iter().map(|s| s.name.as_str()).collect();
            return Err(Error::new(format!(
                "--server {n}: no such server (configured: {})",
                known.join(", ")
            )));
        }
    }
    if out.is_empty() {
        return Err(Error::new(
            "no MCP server to proxy: configure one with `command` or `url` in toolpin.toml",
        ));
    }
    Ok(out)
}

/// The drift ledger's writer for the proxy's run-time drift and refusals;
/// `None` when `[ledger]` is off, or unavailable and not required (then a
/// warning says so).
fn ledger_recorder(cfg: &Config, pinned: &Catalog) -> Result<Option<Arc<ProxyRecorder>>, Error> {
    let warn = |why: &str| {
        // Standard error: standard output carries the protocol.
        eprintln!("warning: {why}");
    };
    match crate::open::open(&cfg.ledger) {
        Ok(None) => Ok(None),
        Ok(Some(ledger)) => Ok(Some(Arc::new(ProxyRecorder::start(
            ledger,
            pinned,
            &cfg.vendors,
            cfg.ledger.secrets.clone(),
            Arc::new(warn),
        )))),
        Err(e) if cfg.ledger.required => Err(Error::new(format!("ledger: {e}"))),
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
