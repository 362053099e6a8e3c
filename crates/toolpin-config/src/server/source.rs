//! A server's source as data: the program, URL or document, with `${VAR}`
//! expanded for use and recorded as written, and every setting checked
//! that needs nothing but the configuration to check.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Map, Value};

use super::{ServerConfig, SourceKind};
use crate::expand::{expand, expand_url};
use crate::secrets::{record_value, secret_looking, Secrets};
use crate::timeout::{parse_timeout, TimeoutValue};
use crate::{Lookup, DEFAULT_EXEC_TIMEOUT, DEFAULT_RECORD_TIMEOUT};

/// How a server's tools are read.
#[derive(Debug, Clone, PartialEq)]
pub enum Source {
    /// A file of tool definitions.
    File { path: PathBuf },
    /// A program that prints tool definitions.
    Exec {
        argv: Vec<String>,
        env: BTreeMap<String, String>,
        cwd: Option<PathBuf>,
        timeout: Duration,
    },
    /// An MCP server, over stdio or HTTP.
    Mcp {
        endpoint: Endpoint,
        session: Session,
    },
    /// An OpenAPI document, a file or a URL.
    OpenApi {
        location: Location,
        /// `None`: the capture crate's default.
        timeout: Option<Duration>,
        conversion: Conversion,
    },
    /// An agent's smoke run, recorded.
    Record {
        argv: Vec<String>,
        env: BTreeMap<String, String>,
        cwd: Option<PathBuf>,
        timeout: Duration,
        /// `merge` as written.
        merge: Option<String>,
    },
}

/// Where an MCP server is.
#[derive(Debug, Clone, PartialEq)]
pub enum Endpoint {
    /// A program started for the session (`command`).
    Stdio {
        command: Vec<String>,
        env: BTreeMap<String, String>,
        cwd: Option<PathBuf>,
    },
    /// A URL (`url`), with the headers sent.
    Http {
        url: String,
        headers: Vec<(String, String)>,
        transport: Transport,
    },
}

/// `transport` of a `url` source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Transport {
    /// Streamable HTTP, then legacy SSE (the key left out).
    #[default]
    Auto,
    /// `"http"` or `"streamable-http"`.
    Streamable,
    /// `"sse"`.
    Sse,
}

/// The MCP session settings of a `command` or `url` source; `None`: the
/// capture crate's default.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Session {
    /// As written: the protocol revisions are the capture crate's.
    pub protocol_version: Option<String>,
    /// A table.
    pub client_capabilities: Option<Value>,
    /// A table with string `name` and `version`.
    pub client_info: Option<Value>,
    pub connect_timeout: Option<Duration>,
    pub init_timeout: Option<Duration>,
    pub page_timeout: Option<Duration>,
    /// At least 1.
    pub max_pages: Option<usize>,
}

/// Where an OpenAPI document is.
#[derive(Debug, Clone, PartialEq)]
pub enum Location {
    File(PathBuf),
    Url {
        url: String,
        headers: Vec<(String, String)>,
    },
}

/// How an OpenAPI document's operations become tools, as written.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Conversion {
    pub body: Option<String>,
    pub output_schema: Option<bool>,
    pub allow_remote_refs: Option<bool>,
    pub include_operations: Vec<String>,
    pub exclude_operations: Vec<String>,
    pub include_tags: Vec<String>,
    pub exclude_tags: Vec<String>,
    pub include_paths: Vec<String>,
    pub exclude_paths: Vec<String>,
}

/// The source of kind `kind`, its record written and its secrets noted.
pub(super) fn resolve(
    kind: SourceKind,
    cfg: &ServerConfig,
    dir: &Path,
    lookup: Lookup,
    record: &mut Map<String, Value>,
    secrets: &mut Secrets,
) -> Result<Source, String> {
    let cwd = cfg
        .cwd
        .as_ref()
        .map(|c| dir.join(c))
        .or_else(|| Some(dir.to_path_buf()).filter(|d| !d.as_os_str().is_empty()));
    Ok(match kind {
        SourceKind::File => {
            let file = cfg.file.clone().unwrap_or_default();
            record.insert("file".into(), json!(file));
            Source::File {
                path: dir.join(file),
            }
        }
        SourceKind::Exec => {
            let example = "[\"program\", \"arg\", …]";
            let argv = command_line("exec", cfg.exec.as_ref(), example, record)?;
            Source::Exec {
                timeout: recorded_timeout(cfg.timeout.as_ref(), record)?
                    .unwrap_or(DEFAULT_EXEC_TIMEOUT),
                argv,
                env: process_env(cfg, lookup, record, secrets)?,
                cwd,
            }
        }
        SourceKind::Command => stdio(cfg, cwd, lookup, record, secrets)?,
        SourceKind::Url => http(cfg, lookup, record, secrets)?,
        SourceKind::OpenApi => openapi(cfg, dir, lookup, record, secrets)?,
        SourceKind::Record => {
            let example = "[\"python\", \"agent.py\", \"--smoke\"]";
            let argv = command_line("record", cfg.record.as_ref(), example, record)?;
            Source::Record {
                timeout: recorded_timeout(cfg.timeout.as_ref(), record)?
                    .unwrap_or(DEFAULT_RECORD_TIMEOUT),
                argv,
                env: process_env(cfg, lookup, record, secrets)?,
                cwd,
                merge: cfg.merge.clone(),
            }
        }
    })
}

/// A `command` source: an MCP server over stdio.
fn stdio(
    cfg: &ServerConfig,
    cwd: Option<PathBuf>,
    lookup: Lookup,
    record: &mut Map<String, Value>,
    secrets: &mut Secrets,
) -> Result<Source, String> {
    let command = cfg.command.clone().unwrap_or_default();
    if command.first().is_none_or(|p| p.is_empty()) {
        return Err(
            "`command` must name a program: command = [\"npx\", \"-y\", \"server\"]".into(),
        );
    }
    record.insert("command".into(), json!(command));
    let env = process_env(cfg, lookup, record, secrets)?;
    Ok(Source::Mcp {
        endpoint: Endpoint::Stdio { command, env, cwd },
        session: session(cfg, record)?,
    })
}

/// A `url` source: an MCP server over HTTP.
fn http(
    cfg: &ServerConfig,
    lookup: Lookup,
    record: &mut Map<String, Value>,
    secrets: &mut Secrets,
) -> Result<Source, String> {
    let written = cfg.url.clone().unwrap_or_default();
    let url = expand_url(&written, lookup).map_err(|m| format!("`url`: {m}"))?;
    secrets.expanded(&url, false);
    record.insert("url".into(), json!(written));
    let headers = http_headers(cfg, lookup, record, secrets)?;
    let transport = match cfg.transport.as_deref() {
        None => Transport::Auto,
        Some("http") | Some("streamable-http") => Transport::Streamable,
        Some("sse") => Transport::Sse,
        Some(other) => {
            return Err(format!(
                "`transport`: {other:?} is not a transport; use \"http\" (Streamable HTTP only) or \"sse\" (legacy HTTP+SSE only), or leave it out to try Streamable HTTP, then legacy SSE"
            ))
        }
    };
    if let Some(t) = &cfg.transport {
        record.insert("transport".into(), json!(t));
    }
    Ok(Source::Mcp {
        endpoint: Endpoint::Http {
            url: url.value,
            headers,
            transport,
        },
        session: session(cfg, record)?,
    })
}

/// `headers` and `bearer_token_env` of an HTTP source (`url`, or an
/// `openapi` URL): expanded for the request, recorded as written.
fn http_headers(
    cfg: &ServerConfig,
    lookup: Lookup,
    record: &mut Map<String, Value>,
    secrets: &mut Secrets,
) -> Result<Vec<(String, String)>, String> {
    let mut headers: Vec<(String, String)> =
        expanded_table("headers", cfg.headers.as_ref(), lookup, record, secrets)?;
    if let Some(var) = &cfg.bearer_token_env {
        let token = lookup(var)
            .filter(|t| !t.is_empty())
            .ok_or_else(|| format!("`bearer_token_env`: environment variable {var} is not set"))?;
        secrets.credential(format!("${{{var}}}"), token.clone());
        headers.push(("Authorization".into(), format!("Bearer {token}")));
        record.insert("bearer_token_env".into(), json!(var));
    }
    Ok(headers)
}

/// Whether an `openapi` value as written may be a URL: it starts with
/// `http://` or `https://`, or holds a `${…}` reference that may expand to
/// one.
pub(crate) fn may_be_url(written: &str) -> bool {
    is_http_url(written) || written.contains("${")
}

/// Whether `text` is an `http://` or `https://` URL (the scheme in any
/// case, something after it).
pub fn is_http_url(text: &str) -> bool {
    ["http://", "https://"].iter().any(|p| {
        text.len() > p.len()
            && text
                .get(..p.len())
                .is_some_and(|s| s.eq_ignore_ascii_case(p))
    })
}

/// The argv of an `exec` or `record` source (`key`), recorded; `example`
/// shows a valid argv.
fn command_line(
    key: &str,
    argv: Option<&Vec<String>>,
    example: &str,
    record: &mut Map<String, Value>,
) -> Result<Vec<String>, String> {
    let argv = argv.cloned().unwrap_or_default();
    if argv.first().is_none_or(|p| p.is_empty()) {
        return Err(format!("`{key}` must name a program: {key} = {example}"));
    }
    record.insert(key.into(), json!(argv));
    Ok(argv)
}

/// The `env` and `cwd` of a process (`exec`, `command` or `record`): `env`
/// values are expanded for the process and recorded as written (literal
/// secrets redacted, and kept out of messages); `cwd` is recorded as
/// written.
fn process_env(
    cfg: &ServerConfig,
    lookup: Lookup,
    record: &mut Map<String, Value>,
    secrets: &mut Secrets,
) -> Result<BTreeMap<String, String>, String> {
    let env = expanded_table("env", cfg.env.as_ref(), lookup, record, secrets)?;
    if let Some(c) = &cfg.cwd {
        record.insert("cwd".into(), json!(c));
    }
    Ok(env)
}

/// A table of `${VAR}` values (`env`, `headers`): each value expanded for
/// use and recorded as written (a literal secret redacted), the secrets
/// noted so that no message shows them.
fn expanded_table<T: FromIterator<(String, String)>>(
    key: &str,
    table: Option<&BTreeMap<String, String>>,
    lookup: Lookup,
    record: &mut Map<String, Value>,
    secrets: &mut Secrets,
) -> Result<T, String> {
    let Some(table) = table else {
        return Ok(T::from_iter([]));
    };
    let mut recorded = Map::new();
    let mut expanded = Vec::with_capacity(table.len());
    for (name, value) in table {
        let e = expand(value, lookup).map_err(|m| format!("`{key}.{name}`: {m}"))?;
        recorded.insert(name.clone(), json!(record_value(name, value)));
        secrets.literal(name, value);
        secrets.expanded(&e, secret_looking(name));
        expanded.push((name.clone(), e.value));
    }
    record.insert(key.into(), Value::Object(recorded));
    Ok(expanded.into_iter().collect())
}

/// `timeout` parsed and recorded (as `timeout_ms`) when set.
fn recorded_timeout(
    timeout: Option<&TimeoutValue>,
    record: &mut Map<String, Value>,
) -> Result<Option<Duration>, String> {
    let Some(t) = timeout else { return Ok(None) };
    let d = parse_timeout("timeout", t)?;
    record.insert("timeout_ms".into(), json!(d.as_millis() as u64));
    Ok(Some(d))
}

/// An `openapi` source: a file, or a URL fetched with `headers`; the
/// conversion settings are kept as written.
fn openapi(
    cfg: &ServerConfig,
    dir: &Path,
    lookup: Lookup,
    record: &mut Map<String, Value>,
    secrets: &mut Secrets,
) -> Result<Source, String> {
    let written = cfg.openapi.clone().unwrap_or_default();
    if written.trim().is_empty() {
        return Err("`openapi` must name a file or an http(s) URL".into());
    }
    let mut expanded = expand(&written, lookup).map_err(|m| format!("`openapi`: {m}"))?;
    if is_http_url(&expanded.value) {
        // A URL: each value percent-encoded into its component.
        expanded = expand_url(&written, lookup).map_err(|m| format!("`openapi`: {m}"))?;
    }
    secrets.expanded(&expanded, false);
    record.insert("openapi".into(), json!(written));
    let (location, timeout) = if is_http_url(&expanded.value) {
        let headers = http_headers(cfg, lookup, record, secrets)?;
        let timeout = recorded_timeout(cfg.timeout.as_ref(), record)?;
        let location = Location::Url {
            url: expanded.value,
            headers,
        };
        (location, timeout)
    } else {
        for (key, set) in [
            ("headers", cfg.headers.is_some()),
            ("bearer_token_env", cfg.bearer_token_env.is_some()),
            ("timeout", cfg.timeout.is_some()),
        ] {
            if set {
                return Err(format!(
                    "`{key}` applies to an `openapi` URL (http:// or https://), not a file"
                ));
            }
        }
        (Location::File(dir.join(expanded.value)), None)
    };
    let list = |v: &Option<Vec<String>>| v.clone().unwrap_or_default();
    let conversion = Conversion {
        body: cfg.body.clone(),
        output_schema: cfg.output_schema,
        allow_remote_refs: cfg.allow_remote_refs,
        include_operations: list(&cfg.include_operations),
        exclude_operations: list(&cfg.exclude_operations),
        include_tags: list(&cfg.include_tags),
        exclude_tags: list(&cfg.exclude_tags),
        include_paths: list(&cfg.include_paths),
        exclude_paths: list(&cfg.exclude_paths),
    };
    Ok(Source::OpenApi {
        location,
        timeout,
        conversion,
    })
}

/// The session settings of an MCP source; `protocol_version` is recorded
/// as written (the operations layer checks it against the revisions the
/// capture crate speaks).
fn session(cfg: &ServerConfig, record: &mut Map<String, Value>) -> Result<Session, String> {
    let mut session = Session::default();
    if let Some(v) = &cfg.protocol_version {
        record.insert("protocol_version".into(), json!(v));
        session.protocol_version = Some(v.clone());
    }
    if let Some(caps) = &cfg.client_capabilities {
        if !caps.is_object() {
            return Err("`client_capabilities` must be a table".into());
        }
        session.client_capabilities = Some(caps.clone());
    }
    if let Some(info) = &cfg.client_info {
        if !info.get("name").is_some_and(Value::is_string)
            || !info.get("version").is_some_and(Value::is_string)
        {
            return Err("`client_info` must be a table with string `name` and `version`".into());
        }
        session.client_info = Some(info.clone());
    }
    let timeout =
        |key: &str, t: &Option<TimeoutValue>| t.as_ref().map(|t| parse_timeout(key, t)).transpose();
    session.connect_timeout = timeout("connect_timeout", &cfg.connect_timeout)?;
    session.init_timeout = timeout("init_timeout", &cfg.init_timeout)?;
    session.page_timeout = timeout("page_timeout", &cfg.page_timeout)?;
    if cfg.max_pages == Some(0) {
        return Err("`max_pages` must be at least 1".into());
    }
    session.max_pages = cfg.max_pages;
    Ok(session)
}
