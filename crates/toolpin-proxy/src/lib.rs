//! `toolpin proxy`: the facade between an agent and its tool servers.
//!
//! The agent is served the pinned catalog (reshaped by `[facade]`, without
//! withdrawn tools); its calls are checked against the pin and relayed to
//! the upstream servers, and everything else MCP carries (resources,
//! prompts, progress, cancellation, sampling, elicitation, roots) is relayed
//! both ways with ids mapped. Upstream drift is detected at start and on
//! `notifications/tools/list_changed`, and handled per severity; it never
//! changes what is served without a review.
//!
//! # The way of a `tools/call`
//!
//! ```text
//!  agent ──▶ front ──▶ session ──▶ admit/validate ──▶ upstream ──▶ server
//!  (stdio,   stdio.rs   session.rs   session.rs         upstream.rs
//!   HTTP)    http.rs    handle_text  admit(),           request_call
//!                                    validate.rs        (text) / request
//!                                                       (tree)
//!  agent ◀── front ◀── session ◀── relay/parse ◀──── upstream ◀── server
//!                      on_upstream   wire.rs Reply     reader task
//!                      check_result  (text; parsed
//!                      metrics.rs,   only in part)
//!                      telemetry.rs
//! ```
//!
//! 1. **Front** ([`stdio`], [`http`]): reads a message and hands its text
//!    to [`session::Session::handle_text`]. HTTP also owns session ids,
//!    the session cap, SSE and connection limits.
//! 2. **Session** ([`session`]): one agent connection. A `tools/call`
//!    whose envelope the scanner ([`scan`]) can read stays text
//!    ([`wire::Call`]); anything else is parsed and handled as a tree.
//! 3. **Admit and validate** (`Session::admit`): the tool must be served
//!    ([`served`]; else refused with the registry's `unknown-tool-called`
//!    or the refusal reason [`refusal::TOOL_WITHDRAWN`]), not blocked by
//!    drift (refused with the drift rule's id), and its arguments, in the
//!    upstream's shape, must pass the pinned inputSchema ([`validate`];
//!    else [`refusal::INVALID_ARGUMENTS`] under `enforce`). Enum argument
//!    values are counted ([`metrics`]).
//! 4. **Upstream** ([`upstream`]): one connection per server per session.
//!    Whether the call goes as text or is parsed and reprinted is decided
//!    in one place, `session::relay_path`: text unless the facade reshapes
//!    the arguments, the arguments are `null`, the stateless revision adds
//!    `_meta`, or the agent's `_meta` names a protocol version. Exporting
//!    traces does not parse the call: the span's `traceparent` is spliced
//!    into `_meta`. The call waits in the upstream's pending map; the
//!    session's ticker answers it with a timeout if the server does not.
//! 5. **Relay or parse** ([`wire::Reply`]): the answer is relayed as the
//!    text the server wrote, with the agent's id spliced in; only the
//!    parts a check reads (`error`, `isError`, `structuredContent` when an
//!    outputSchema is pinned) are parsed. Secrets are redacted.
//! 6. **Metrics and trace** ([`metrics`], [`telemetry`]): the call is
//!    counted by tool and outcome, its latency observed, result findings
//!    (`result-nonconformant`, `result-unknown-enum-value`) counted, and
//!    its span, if any, finished and queued for OTLP export.
//!
//! Every id the proxy reports as a `rule` is a drift registry id
//! ([`toolpin_drift::rules`]) except the two [`refusal`] reasons, which
//! name why the proxy itself refused a call and are kept out of the rule
//! namespace (no manifest comparison can produce them).
//!
//! - [`served`]: the served catalog and each tool's route upstream.
//! - [`session`]: one agent connection and the relay.
//! - [`upstream`]: one upstream server connection.
//! - [`stdio`] / [`http`]: the fronts.
//! - [`flags`]: the withdrawn-tools file; [`events`]: the JSON-lines log;
//!   [`metrics`]: Prometheus; [`validate`]: JSON Schema checks.
//! - [`wire`]: messages relayed as the text the other side sent;
//!   [`scan`]: the one-pass envelope scanner under it.
//! - [`jsonrpc`]: the JSON-RPC error codes the proxy answers with.

pub mod events;
pub mod flags;
pub mod http;
pub mod metrics;
pub mod record;
pub mod scan;
pub mod serve;
pub mod served;
pub mod session;
pub mod stdio;
pub mod telemetry;
pub mod upstream;
pub mod validate;
pub mod wire;

/// JSON-RPC error codes the proxy answers with.
pub mod jsonrpc {
    /// The message is not JSON.
    pub const PARSE_ERROR: i64 = -32700;
    /// Not a valid JSON-RPC request.
    pub const INVALID_REQUEST: i64 = -32600;
    pub const METHOD_NOT_FOUND: i64 = -32601;
    /// Refused arguments, or a tool that is not served.
    pub const INVALID_PARAMS: i64 = -32602;
    pub const INTERNAL_ERROR: i64 = -32603;
    /// Server error range: the HTTP front's session cap was reached.
    pub const SESSION_LIMIT: i64 = -32000;
    /// The MCP SDKs' code for a request that timed out.
    pub const REQUEST_TIMEOUT: i64 = -32001;
}

/// Why the proxy itself refused a call, where no drift rule applies: the
/// `rule` of the refusal's `data.toolpin` and of `toolpin_findings_total`.
/// Not drift rules (no comparison of two manifests produces them, and
/// policy cannot be written against them), so they are not in the
/// registry; a test keeps them from ever colliding with a rule id.
pub mod refusal {
    /// A tool withdrawn by the flags file or by drift policy.
    pub const TOOL_WITHDRAWN: &str = "tool-withdrawn";
    /// Arguments the facade or the pinned inputSchema refused.
    pub const INVALID_ARGUMENTS: &str = "invalid-arguments";
    /// Every refusal reason.
    pub const ALL: [&str; 2] = [TOOL_WITHDRAWN, INVALID_ARGUMENTS];
}

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use serde_json::json;
use tokio::sync::broadcast;
use toolpin_drift::{Kind, Severity};
use toolpin_manifest::wire::event;
use toolpin_manifest::{Catalog, ServerPin};

pub use served::{Blocked, FacadeEntry, Served};
pub use upstream::UpstreamSpec;

/// What to do about a drifted tool, per severity.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DriftAction {
    /// Keep serving the pinned definition; log and alert.
    ServePinned,
    /// Withdraw the drifted tool (only that tool).
    Withdraw,
    /// Refuse to start (at run time: withdraw, and log an error).
    Fail,
}

impl DriftAction {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "serve-pinned" => Some(Self::ServePinned),
            "withdraw" => Some(Self::Withdraw),
            "fail" => Some(Self::Fail),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::ServePinned => "serve-pinned",
            Self::Withdraw => "withdraw",
            Self::Fail => "fail",
        }
    }
}

/// Checking arguments against the pinned inputSchema.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Validation {
    /// Refuse invalid arguments with a JSON-RPC error.
    Enforce,
    /// Forward them, and log.
    Warn,
    Off,
}

impl Validation {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "enforce" => Some(Self::Enforce),
            "warn" => Some(Self::Warn),
            "off" => Some(Self::Off),
            _ => None,
        }
    }
}

/// Everything the proxy is configured with.
pub struct Settings {
    /// The pin (the lockfile).
    pub catalog: Catalog,
    pub upstreams: Vec<UpstreamSpec>,
    /// By `server/tool`.
    pub facade: BTreeMap<String, FacadeEntry>,
    /// The flags file (withdrawn tools), watched.
    pub flags_path: Option<PathBuf>,
    pub validation: Validation,
    /// By severity, most severe first (index = `Severity as usize`).
    pub on_drift: [DriftAction; 5],
    /// How long a relayed request may take.
    pub call_timeout: Duration,
    /// Tools per `tools/list` page.
    pub page_size: usize,
    /// Where the servers' answers are read and passed on to the agent, when
    /// not the main runtime: the stdio front runs them on a second thread,
    /// so that the two directions of a call use two cores.
    pub reply_runtime: Option<tokio::runtime::Handle>,
    /// Every secret the upstreams were configured with (expanded `${VAR}`
    /// values, literal credentials): redacted from everything the proxy
    /// sends the agent, logs or exports.
    pub redactor: toolpin_manifest::Redactor,
    /// The upstreams' credentials only: what `toolpin lock` replaced in the
    /// pinned tools, so that a tool list captured at run time is redacted
    /// the same way before it is compared with the pin.
    pub credentials: toolpin_manifest::Redactor,
    /// Where run-time drift and refusals are written down (the drift
    /// ledger, for `toolpin proxy`); `None`: only the event log has them.
    pub record: Option<Arc<dyn record::Record>>,
}

/// Shared by every session: settings, the served catalog, the logs.
pub struct Proxy {
    pub settings: Settings,
    /// The catalog fingerprint in hex, for events and metrics.
    pub catalog_hex: String,
    served: RwLock<Arc<Served>>,
    /// Withdrawn through the flags file.
    flagged: Mutex<BTreeMap<String, String>>,
    /// Withdrawn because of drift.
    drift_withdrawn: Mutex<BTreeMap<String, String>>,
    /// Listed, but calls are refused because of drift.
    blocked: Mutex<BTreeMap<String, Blocked>>,
    pub events: Arc<events::Log>,
    pub metrics: metrics::Metrics,
    pub telemetry: telemetry::Telemetry,
    list_changed: broadcast::Sender<()>,
    /// Process groups of running stdio upstreams, killed on SIGTERM.
    upstream_pids: Mutex<std::collections::BTreeSet<u32>>,
}

impl Proxy {
    /// Spawns a task of the answer path (see [`Settings::reply_runtime`]).
    pub fn spawn_reply<F>(&self, task: F) -> tokio::task::JoinHandle<F::Output>
    where
        F: std::future::Future + Send + 'static,
        F::Output: Send + 'static,
    {
        match &self.settings.reply_runtime {
            Some(runtime) => runtime.spawn(task),
            None => tokio::spawn(task),
        }
    }

    /// Builds the served catalog; an invalid facade or flags file is an
    /// error naming it.
    pub fn new(
        settings: Settings,
        events: events::Sink,
        telemetry: telemetry::Telemetry,
    ) -> Result<Arc<Self>, String> {
        let flagged = match &settings.flags_path {
            Some(path) => flags::Flags::read(path)?.reasons(),
            None => BTreeMap::new(),
        };
        let (list_changed, _) = broadcast::channel(16);
        let events = Arc::new(events::Log::new(events, settings.redactor.clone()));
        telemetry.log_failures_to(Arc::clone(&events));
        let proxy = Self {
            served: RwLock::new(Arc::new(Served::default())),
            flagged: Mutex::new(flagged),
            drift_withdrawn: Mutex::new(BTreeMap::new()),
            blocked: Mutex::new(BTreeMap::new()),
            metrics: metrics::Metrics::with_export_health(Arc::clone(telemetry.health())),
            telemetry,
            events,
            list_changed,
            upstream_pids: Mutex::new(std::collections::BTreeSet::new()),
            catalog_hex: settings.catalog.fingerprint().to_hex(),
            settings,
        };
        proxy.rebuild()?;
        Ok(Arc::new(proxy))
    }

    /// Records a running stdio upstream's process group.
    pub fn track(&self, pid: u32) {
        if let Ok(mut p) = self.upstream_pids.lock() {
            p.insert(pid);
        }
    }

    /// Forgets one that was closed.
    pub fn untrack(&self, pid: u32) {
        if let Ok(mut p) = self.upstream_pids.lock() {
            p.remove(&pid);
        }
    }

    /// Kills every running stdio upstream's process group (on SIGTERM or
    /// SIGINT, when there is no time for a polite close).
    pub fn kill_upstreams(&self) {
        let pids: Vec<u32> = self
            .upstream_pids
            .lock()
            .map(|p| p.iter().copied().collect())
            .unwrap_or_default();
        for pid in pids.into_iter().filter_map(|p| i32::try_from(p).ok()) {
            // SAFETY: kill(2) has no memory effects; -pid is the group the
            // server leads.
            unsafe {
                libc::kill(-pid, libc::SIGKILL);
            }
        }
    }

    /// The served catalog now.
    pub fn served(&self) -> Arc<Served> {
        self.served
            .read()
            .map(|s| Arc::clone(&s))
            .unwrap_or_default()
    }

    /// Sessions subscribe to learn that the served list changed.
    pub fn subscribe(&self) -> broadcast::Receiver<()> {
        self.list_changed.subscribe()
    }

    fn prefixes(&self) -> BTreeMap<String, String> {
        self.settings
            .upstreams
            .iter()
            .map(|u| (u.name.clone(), u.transform.prefix.clone()))
            .collect()
    }

    /// Rebuilds the served catalog; tells sessions when the list changed.
    fn rebuild(&self) -> Result<(), String> {
        let mut withdrawn = self.flagged.lock().map(|f| f.clone()).unwrap_or_default();
        if let Ok(d) = self.drift_withdrawn.lock() {
            for (k, v) in d.iter() {
                withdrawn.entry(k.clone()).or_insert_with(|| v.clone());
            }
        }
        let blocked = self.blocked.lock().map(|b| b.clone()).unwrap_or_default();
        let next = Served::build(
            &self.settings.catalog,
            &self.prefixes(),
            &self.settings.facade,
            &withdrawn,
            &blocked,
        )?;
        let changed = {
            let current = self.served();
            current.tools.len() != next.tools.len()
                || current
                    .tools
                    .iter()
                    .zip(next.tools.iter())
                    .any(|(a, b)| a.0 != b.0 || a.1.tool != b.1.tool)
        };
        if let Ok(mut s) = self.served.write() {
            *s = Arc::new(next);
        }
        if changed {
            let _ = self.list_changed.send(());
        }
        Ok(())
    }

    /// Re-reads the flags file (on change, or SIGHUP). A broken file keeps
    /// the last good one and logs why.
    pub fn reload_flags(&self) {
        let Some(path) = &self.settings.flags_path else {
            return;
        };
        match flags::Flags::read(path) {
            Ok(flags) => {
                let reasons = flags.reasons();
                let before = self.flagged.lock().map(|f| f.clone()).unwrap_or_default();
                if reasons == before {
                    return;
                }
                for (tool, reason) in &reasons {
                    if !before.contains_key(tool) {
                        self.events.emit(
                            event::TOOL_WITHDRAWN,
                            json!({"tool": tool, "reason": reason}),
                        );
                    }
                }
                for tool in before.keys() {
                    if !reasons.contains_key(tool) {
                        self.events
                            .emit(event::TOOL_RESTORED, json!({"tool": tool}));
                    }
                }
                if let Ok(mut f) = self.flagged.lock() {
                    *f = reasons;
                }
                if let Err(e) = self.rebuild() {
                    self.events.emit(event::FLAGS_ERROR, json!({"message": e}));
                }
            }
            Err(e) => self.events.emit(event::FLAGS_ERROR, json!({"message": e})),
        }
    }

    /// Compares a live capture of `server` with its pin and applies the
    /// drift policy. Returns the failures of a `fail` action (for refusing
    /// to start).
    pub fn apply_drift(&self, server: &str, live: &ServerPin) -> Vec<String> {
        let Some(pinned) = self.settings.catalog.servers.get(server) else {
            return Vec::new();
        };
        let one = |pin: &ServerPin| {
            Catalog::new(
                self.settings.catalog.environment.clone(),
                BTreeMap::from([(server.to_string(), pin.clone())]),
            )
        };
        let (Ok(old), Ok(new)) = (one(pinned), one(live)) else {
            return Vec::new();
        };
        let mut comparison = toolpin_drift::compare(&old, &new);
        // What is recorded leaves the process: no upstream's secret in it.
        for f in &mut comparison.findings {
            f.message = self.settings.redactor.redact(&f.message);
            for v in [&mut f.before, &mut f.after].into_iter().flatten() {
                self.settings.redactor.redact_value(v);
            }
        }
        if let Some(record) = &self.settings.record {
            record_drift(
                record.as_ref(),
                &self.settings.catalog.environment,
                (server, pinned, live),
                &comparison,
            );
        }
        let mut worst: BTreeMap<String, Severity> = BTreeMap::new();
        let mut incompatible: BTreeMap<String, Blocked> = BTreeMap::new();
        for f in &comparison.findings {
            self.events.emit(
                event::DRIFT,
                json!({
                    "server": server,
                    "tool": f.tool,
                    "rule": f.rule,
                    "severity": f.severity.name(),
                    "kind": f.kind.name(),
                    "pointer": f.pointer,
                    "message": f.message,
                    "catalog": self.settings.catalog.fingerprint().to_hex(),
                }),
            );
            self.metrics.drift_event(server, f.rule, f.severity.name());
            if f.tool.is_empty() || !pinned.tools.contains_key(&f.tool) {
                continue;
            }
            let address = format!("{server}/{}", f.tool);
            let entry = worst.entry(address.clone()).or_insert(f.severity);
            *entry = (*entry).min(f.severity);
            if f.kind == Kind::Structural && !incompatible.contains_key(&address) {
                incompatible.insert(
                    address,
                    Blocked {
                        rule: f.rule.to_string(),
                        message: f.message.clone(),
                        severity: f.severity,
                        live: live.tools.get(&f.tool).map(|t| t.fingerprint.to_string()),
                    },
                );
            }
        }
        let mut failures = Vec::new();
        let mut withdrawn = BTreeMap::new();
        for (address, severity) in &worst {
            let action = self.settings.on_drift[severity_index(*severity)];
            match action {
                DriftAction::ServePinned => {}
                DriftAction::Withdraw | DriftAction::Fail => {
                    withdrawn.insert(
                        address.clone(),
                        format!("withdrawn: upstream drift ({})", severity.name()),
                    );
                    if action == DriftAction::Fail {
                        failures.push(format!("{address}: {} drift upstream", severity.name()));
                    }
                }
            }
        }
        // This server's entries are replaced; other servers' stay.
        let prefix = format!("{server}/");
        if let Ok(mut d) = self.drift_withdrawn.lock() {
            d.retain(|k, _| !k.starts_with(&prefix));
            d.extend(withdrawn);
        }
        if let Ok(mut b) = self.blocked.lock() {
            b.retain(|k, _| !k.starts_with(&prefix));
            b.extend(incompatible);
        }
        if let Err(e) = self.rebuild() {
            self.events.emit(event::FACADE_ERROR, json!({"message": e}));
        }
        failures
    }
}

/// Index of a severity in [`Settings::on_drift`].
pub fn severity_index(s: Severity) -> usize {
    match s {
        Severity::Critical => 0,
        Severity::High => 1,
        Severity::Medium => 2,
        Severity::Low => 3,
        Severity::Info => 4,
    }
}

/// Hands `record` the run-time drift of one server, one call per tool.
fn record_drift(
    record: &dyn record::Record,
    environment: &str,
    (server, pinned, live): (&str, &ServerPin, &ServerPin),
    comparison: &toolpin_drift::Comparison,
) {
    // The session record spells it `server_info` (older ones `serverInfo`).
    let version = |pin: &ServerPin| {
        let session = pin.session.as_ref()?;
        session
            .get("server_info")
            .or_else(|| session.get("serverInfo"))?
            .get("version")?
            .as_str()
            .map(str::to_string)
    };
    let (server_version, pinned_version) = (version(live), version(pinned));
    let mut by_tool: BTreeMap<&str, Vec<&toolpin_drift::Finding>> = BTreeMap::new();
    for f in &comparison.findings {
        by_tool.entry(f.tool.as_str()).or_default().push(f);
    }
    for (tool, findings) in by_tool {
        let (before, after) = if tool.is_empty() {
            (
                Some(pinned.fingerprint().to_string()),
                Some(live.fingerprint().to_string()),
            )
        } else {
            match comparison.tools.iter().find(|c| c.tool == tool) {
                Some(c) => (c.before.clone(), c.after.clone()),
                None => (
                    pinned.tools.get(tool).map(|t| t.fingerprint.to_string()),
                    live.tools.get(tool).map(|t| t.fingerprint.to_string()),
                ),
            }
        };
        record.drift(&record::RuntimeDrift {
            environment,
            server,
            tool,
            pinned: before.as_deref(),
            live: after.as_deref(),
            findings,
            server_version: server_version.as_deref(),
            pinned_version: pinned_version.as_deref(),
        });
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn refusal_reasons_are_not_rule_ids() {
        for reason in crate::refusal::ALL {
            assert!(toolpin_drift::rule::by_id(reason).is_none(), "{reason}");
        }
    }
}
