//! Session set-up for every protocol revision, then `tools/list` to the end.
//!
//! - 2024-11-05 … 2025-11-25: `initialize`, then `notifications/initialized`.
//! - 2026-07-28: no handshake; `server/discover`, and `_meta` carrying the
//!   protocol version, client capabilities and client info on every request.
//! - Auto (the default): probe with `server/discover`; a server that does
//!   not know it (or does not answer within the probe time) gets the
//!   `initialize` handshake instead, as the stateless revision prescribes for
//!   stdio's backward compatibility.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use serde_json::{json, Map, Value};

use super::client::{Client, RequestError};
use super::{excerpt, McpError, Phase, HANDSHAKE_VERSIONS, STATELESS_VERSION};
use crate::format::ToolSink;

/// Which protocol revision to speak.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub enum VersionChoice {
    /// The newest both sides support.
    #[default]
    Auto,
    /// Exactly this revision, or fail.
    Pinned(String),
    /// The handshake, offering this revision and accepting any the server
    /// answers that toolpin speaks (the proxy offers what its agent offered).
    Prefer(String),
}

/// Deadlines per phase.
#[derive(Clone, Copy, Debug)]
pub struct Timeouts {
    /// Starting the process, or reaching the URL.
    pub connect: Duration,
    /// `initialize` or `server/discover`.
    pub initialize: Duration,
    /// Each `tools/list` page.
    pub page: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Self {
            connect: Duration::from_secs(10),
            initialize: Duration::from_secs(30),
            page: Duration::from_secs(30),
        }
    }
}

/// Longest wait for an answer to the `server/discover` probe before falling
/// back to the handshake (a server of an older revision may stay silent).
pub const DISCOVER_PROBE: Duration = Duration::from_secs(5);

/// What toolpin says about itself, and the guards.
#[derive(Clone, Debug)]
pub struct SessionOptions {
    pub version: VersionChoice,
    /// Declared client capabilities: servers may offer other tools to a
    /// client that declares sampling, elicitation or roots.
    pub client_capabilities: Value,
    pub client_info: Value,
    pub timeouts: Timeouts,
    /// Page cap for `tools/list`.
    pub max_pages: usize,
}

/// Default page cap.
pub const DEFAULT_MAX_PAGES: usize = 1000;

impl Default for SessionOptions {
    fn default() -> Self {
        Self {
            version: VersionChoice::Auto,
            client_capabilities: json!({}),
            client_info: json!({"name": "toolpin", "version": env!("CARGO_PKG_VERSION")}),
            timeouts: Timeouts::default(),
            max_pages: DEFAULT_MAX_PAGES,
        }
    }
}

/// Everything a capture learned: the tools as served and the session that
/// served them.
#[derive(Clone, Debug, PartialEq)]
pub struct Capture {
    /// Tools handed to the sink.
    pub tools: usize,
    pub protocol_version: String,
    pub server_info: Value,
    /// The server's `instructions`, when it sent a string.
    pub instructions: Option<String>,
    pub pages: usize,
}

enum Mode {
    Handshake,
    Stateless,
}

/// An open session, as the server described it.
#[derive(Clone, Debug)]
pub struct Opened {
    /// The 2026-07-28 revision: no handshake; every request carries
    /// [`stateless_meta`].
    pub stateless: bool,
    pub protocol_version: String,
    pub server_info: Value,
    pub capabilities: Option<Value>,
    /// The whole `initialize` or `server/discover` result.
    pub result: Value,
}

/// Sets a session up (the handshake, or `server/discover`) without listing
/// anything: for the proxy, which relays the session afterwards.
pub async fn open(client: &mut Client, opts: &SessionOptions) -> Result<Opened, McpError> {
    let (mode, protocol_version, server_info, capabilities, result) =
        open_session(client, opts).await?;
    Ok(Opened {
        stateless: matches!(mode, Mode::Stateless),
        protocol_version,
        server_info,
        capabilities,
        result,
    })
}

/// Sets the session up and lists every tool.
pub async fn capture(
    client: &mut Client,
    opts: &SessionOptions,
    sink: &mut (dyn ToolSink + Send),
) -> Result<Capture, McpError> {
    let opened = open(client, opts).await?;
    let instructions = opened
        .result
        .get("instructions")
        .and_then(Value::as_str)
        .map(str::to_string);
    let (tools, pages) = list(client, opts, &opened, sink).await?;
    Ok(Capture {
        tools,
        protocol_version: opened.protocol_version,
        server_info: opened.server_info,
        instructions,
        pages,
    })
}

/// Lists every tool on a session [`open`] set up, `tools/list` page by
/// page to the end with the guards of a capture (a cursor followed twice,
/// more than `max_pages` pages, a tool name on two pages), handing each
/// tool to `sink` as served: (tools, pages). A server whose capabilities
/// do not offer tools lists none.
pub async fn list(
    client: &mut Client,
    opts: &SessionOptions,
    opened: &Opened,
    sink: &mut (dyn ToolSink + Send),
) -> Result<(usize, usize), McpError> {
    let offers_tools = opened
        .capabilities
        .as_ref()
        .is_none_or(|c| c.get("tools").is_some());
    if !offers_tools {
        return Ok((0, 0));
    }
    let mode = if opened.stateless {
        Mode::Stateless
    } else {
        Mode::Handshake
    };
    list_tools(client, opts, &mode, sink).await
}

type Session = (Mode, String, Value, Option<Value>, Value);

async fn open_session(client: &mut Client, opts: &SessionOptions) -> Result<Session, McpError> {
    match &opts.version {
        VersionChoice::Pinned(v) if v == STATELESS_VERSION => {
            match discover(client, opts, opts.timeouts.initialize).await? {
                Probe::Opened(opened) => Ok(opened),
                Probe::Declined | Probe::Silent => Err(client.error(
                    Phase::Discover,
                    format!("the server does not support protocol {STATELESS_VERSION}"),
                )),
            }
        }
        VersionChoice::Pinned(v) => initialize(client, opts, v, true).await,
        VersionChoice::Prefer(v) => initialize(client, opts, v, false).await,
        VersionChoice::Auto => {
            let probe = opts.timeouts.initialize.min(DISCOVER_PROBE);
            match discover(client, opts, probe).await {
                Ok(Probe::Opened(opened)) => Ok(opened),
                Ok(Probe::Silent) => {
                    // A slow server of the stateless revision (a Python
                    // server starting on a loaded machine) may have taken
                    // the probe after all, and then refuses the handshake
                    // on that connection: ask once more, waiting as long as
                    // the handshake would have.
                    let handshake = initialize(client, opts, HANDSHAKE_VERSIONS[0], false).await;
                    match handshake {
                        Err(refused) if refused.rpc_code.is_some() => {
                            match discover(client, opts, opts.timeouts.initialize).await {
                                Ok(Probe::Opened(opened)) => Ok(opened),
                                _ => Err(refused),
                            }
                        }
                        other => other,
                    }
                }
                // Closed transports and other hard failures end here too:
                // the handshake attempt reports them with its own phase.
                Ok(Probe::Declined) | Err(_) => {
                    initialize(client, opts, HANDSHAKE_VERSIONS[0], false).await
                }
            }
        }
    }
}

/// The `_meta` every request of a stateless session carries.
pub fn stateless_meta(opts: &SessionOptions) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": STATELESS_VERSION,
        "io.modelcontextprotocol/clientCapabilities": opts.client_capabilities,
        "io.modelcontextprotocol/clientInfo": opts.client_info,
    })
}

/// What the `server/discover` probe found.
enum Probe {
    Opened(Session),
    /// The server answered, and does not speak the stateless revision.
    Declined,
    /// No answer within the probe time.
    Silent,
}

async fn discover(
    client: &mut Client,
    opts: &SessionOptions,
    timeout: Duration,
) -> Result<Probe, McpError> {
    let params = json!({"_meta": stateless_meta(opts)});
    let result = match client
        .request("server/discover", Some(params), timeout)
        .await
    {
        Ok(r) => r,
        Err(RequestError::Rpc { .. }) => return Ok(Probe::Declined),
        Err(RequestError::Timeout(_)) => return Ok(Probe::Silent),
        Err(e) => return Err(client.request_error(Phase::Discover, &e)),
    };
    let supported = result.get("supportedVersions").and_then(Value::as_array);
    if !supported.is_some_and(|s| s.iter().any(|v| v == STATELESS_VERSION)) {
        return Ok(Probe::Declined);
    }
    let server_info = result
        .get("serverInfo")
        .or_else(|| result.pointer("/_meta/io.modelcontextprotocol~1serverInfo"))
        .cloned()
        .unwrap_or(Value::Null);
    let capabilities = result.get("capabilities").cloned();
    Ok(Probe::Opened((
        Mode::Stateless,
        STATELESS_VERSION.to_string(),
        server_info,
        capabilities,
        result,
    )))
}

async fn initialize(
    client: &mut Client,
    opts: &SessionOptions,
    version: &str,
    pinned: bool,
) -> Result<Session, McpError> {
    let params = json!({
        "protocolVersion": version,
        "capabilities": opts.client_capabilities,
        "clientInfo": opts.client_info,
    });
    let result = client
        .request("initialize", Some(params), opts.timeouts.initialize)
        .await
        .map_err(|e| client.request_error(Phase::Initialize, &e))?;
    let Some(chosen) = result.get("protocolVersion").and_then(Value::as_str) else {
        return Err(client.error(
            Phase::Initialize,
            "the initialize result has no protocolVersion",
        ));
    };
    if pinned && chosen != version {
        return Err(client.error(
            Phase::Initialize,
            format!("protocol_version pins {version} but the server answered {chosen}"),
        ));
    }
    if !HANDSHAKE_VERSIONS.contains(&chosen) {
        return Err(client.error(
            Phase::Initialize,
            format!(
                "the server chose protocol {chosen}, which toolpin does not speak (it speaks {})",
                HANDSHAKE_VERSIONS.join(", ")
            ),
        ));
    }
    let chosen = chosen.to_string();
    client.set_protocol_version(&chosen);
    client
        .notify("notifications/initialized", None)
        .await
        .map_err(|e| client.error(Phase::Initialize, e.message))?;
    let server_info = result.get("serverInfo").cloned().unwrap_or(Value::Null);
    let capabilities = result.get("capabilities").cloned();
    Ok((Mode::Handshake, chosen, server_info, capabilities, result))
}

async fn list_tools(
    client: &mut Client,
    opts: &SessionOptions,
    mode: &Mode,
    sink: &mut (dyn ToolSink + Send),
) -> Result<(usize, usize), McpError> {
    let mut tools = 0;
    let mut first_page_of: HashMap<String, usize> = HashMap::new();
    let mut seen_cursors: HashSet<String> = HashSet::new();
    let mut cursor: Option<Value> = None;
    let mut page = 0;
    loop {
        page += 1;
        let phase = Phase::ListTools { page };
        let mut params = Map::new();
        if let Some(c) = &cursor {
            params.insert("cursor".into(), c.clone());
        }
        if let Mode::Stateless = mode {
            params.insert("_meta".into(), stateless_meta(opts));
        }
        let params = (!params.is_empty()).then_some(Value::Object(params));
        let result = client
            .request("tools/list", params, opts.timeouts.page)
            .await
            .map_err(|e| client.request_error(phase.clone(), &e))?;
        let Value::Object(mut result) = result else {
            return Err(client.error(phase, "the result is not an object"));
        };
        match result.remove("tools") {
            Some(Value::Array(page_tools)) => {
                for tool in page_tools {
                    if let Some(name) = tool.get("name").and_then(Value::as_str) {
                        if let Some(first) = first_page_of.insert(name.to_string(), page) {
                            return Err(client.error(
                                phase,
                                format!("duplicate tool name {name:?} (also on page {first})"),
                            ));
                        }
                    }
                    sink.push(tool)
                        .map_err(|e| client.error(phase.clone(), e))?;
                    tools += 1;
                }
            }
            Some(other) => {
                return Err(client.error(
                    phase,
                    format!(
                        "\"tools\" is {}, expected an array",
                        excerpt(&other.to_string(), 60)
                    ),
                ))
            }
            None => return Err(client.error(phase, "the result has no \"tools\" array")),
        }
        match result.remove("nextCursor") {
            None | Some(Value::Null) => return Ok((tools, page)),
            Some(next) => {
                let key = next.to_string();
                if !seen_cursors.insert(key) {
                    return Err(client.error(
                        phase,
                        format!("pagination guard: cursor {} was already followed; the server's pagination does not advance", excerpt(&next.to_string(), 80)),
                    ));
                }
                if page >= opts.max_pages {
                    return Err(client.error(
                        phase,
                        format!(
                            "pagination guard: more than {} pages (max_pages)",
                            opts.max_pages
                        ),
                    ));
                }
                cursor = Some(next);
            }
        }
    }
}
