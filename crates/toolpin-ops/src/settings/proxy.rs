//! `[proxy]` and `[facade."server/tool"]` (toolpin-config's data) read into
//! the proxy's own types; `toolpin_proxy::Settings` is built from them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use toolpin_config::parse_timeout;
use toolpin_config::proxy::{FacadeFileConfig, ProxyFileConfig};
use toolpin_manifest::Severity;
use toolpin_proxy::http::Limits;
use toolpin_proxy::{DriftAction, FacadeEntry, Validation};

/// The resolved `[proxy]` and `[facade]` tables.
#[derive(Debug, Clone)]
pub struct ProxyConfig {
    pub validation: Validation,
    /// What to do on drift, by severity (most severe first).
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
    /// What an HTTP connection may hold and for how long: the connection
    /// cap, how long a client may take to send a request's headers and
    /// its body, how long a connection with no request in flight stays
    /// open.
    pub connections: Limits,
    pub facade: BTreeMap<String, FacadeEntry>,
}

/// Default deadline for a relayed request.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(60);
/// Default tools per `tools/list` page.
pub const DEFAULT_PAGE_SIZE: usize = 100;

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
            connections: toolpin_proxy::http::Options::default().connections,
            facade: BTreeMap::new(),
        }
    }
}

/// `[proxy]` and `[facade]` over the proxy's defaults; relative paths are
/// read below `dir`. Errors are one line naming the key.
pub fn resolve(
    file: &ProxyFileConfig,
    facade: &BTreeMap<String, FacadeFileConfig>,
    dir: &Path,
) -> Result<ProxyConfig, String> {
    let defaults = ProxyConfig::default();
    let validation = match file.validation.as_deref() {
        None => defaults.validation,
        Some(v) => Validation::parse(v)
            .ok_or_else(|| format!("proxy.validation: {v:?} is not one of enforce, warn, off"))?,
    };
    let on_drift = on_drift(&file.on_drift)?;
    let call_timeout = match &file.call_timeout {
        Some(t) => parse_timeout("proxy.call_timeout", t)?,
        None => defaults.call_timeout,
    };
    let page_size = match file.page_size {
        Some(0) => return Err("proxy.page_size must be at least 1".into()),
        Some(n) => n,
        None => defaults.page_size,
    };
    Ok(ProxyConfig {
        validation,
        on_drift,
        call_timeout,
        page_size,
        connections: connection_limits(file, defaults.connections)?,
        facade: facade_entries(facade)?,
        events: file.events.as_ref().map(|p| dir.join(p)),
        otlp_endpoint: file.otlp_endpoint.clone(),
        session_idle: match &file.session_idle {
            Some(t) => parse_timeout("proxy.session_idle", t)?,
            None => defaults.session_idle,
        },
        max_sessions: match file.max_sessions {
            Some(0) => return Err("proxy.max_sessions must be at least 1".into()),
            Some(n) => n,
            None => defaults.max_sessions,
        },
    })
}

/// `on_drift`: severity → action, each severity not named serving the
/// pinned tool.
fn on_drift(table: &BTreeMap<String, String>) -> Result<[DriftAction; 5], String> {
    let mut on_drift = [DriftAction::ServePinned; 5];
    for (severity, action) in table {
        let Some(i) = Severity::ALL.iter().position(|s| s.name() == severity) else {
            return Err(format!(
                "proxy.on_drift: {severity:?} is not a severity (critical, high, medium, low, info)"
            ));
        };
        on_drift[i] = DriftAction::parse(action).ok_or_else(|| {
            format!(
                "proxy.on_drift.{severity}: {action:?} is not one of serve-pinned, withdraw, fail"
            )
        })?;
    }
    Ok(on_drift)
}

/// `max_connections` and the three timeouts of `[proxy]`, over the
/// proxy's defaults.
fn connection_limits(file: &ProxyFileConfig, mut limits: Limits) -> Result<Limits, String> {
    match file.max_connections {
        Some(0) => return Err("proxy.max_connections must be at least 1".into()),
        Some(n) => limits.max_connections = n,
        None => {}
    }
    let timeouts = [
        (
            "proxy.header_read_timeout",
            &file.header_read_timeout,
            &mut limits.header_read_timeout,
        ),
        (
            "proxy.body_timeout",
            &file.body_timeout,
            &mut limits.body_timeout,
        ),
        (
            "proxy.connection_idle",
            &file.connection_idle,
            &mut limits.connection_idle,
        ),
    ];
    for (key, value, slot) in timeouts {
        if let Some(t) = value {
            *slot = parse_timeout(key, t)?;
        }
    }
    Ok(limits)
}

/// `[facade."server/tool"]`: how a pinned tool is shown to the model.
fn facade_entries(
    facade: &BTreeMap<String, FacadeFileConfig>,
) -> Result<BTreeMap<String, FacadeEntry>, String> {
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
            .iter()
            .map(|(k, v)| serde_json::to_value(v).map(|v| (k.clone(), v)))
            .collect::<Result<_, _>>()
            .map_err(|e| format!("facade.\"{address}\".fixed: {e}"))?;
        entries.insert(
            address.clone(),
            FacadeEntry {
                name: f.name.clone(),
                description: f.description.clone(),
                parameters: f.parameters.clone(),
                fixed,
                rename: f.rename.clone(),
            },
        );
    }
    Ok(entries)
}
