//! `[servers.NAME]` and `[env.NAME.servers.NAME]`: which servers to pin,
//! how each is reached, and what the lockfile's `source` records.
//!
//! A server is resolved here into plain data ([`Server`], its [`Source`]):
//! `${VAR}` expanded, secrets known, the record written. Turning it into
//! the capture crate's types (protocol revisions, OpenAPI conversion
//! options, output formats) is the operations layer's
//! (`toolpin_ops::settings::server`).

mod source;

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;
use serde_json::{json, Map, Value};
use toolpin_manifest::{Glob, Pointer, Transform};

pub use source::{is_http_url, Conversion, Endpoint, Location, Session, Source, Transport};

use source::may_be_url;

use crate::diagnostic::Document;
use crate::secrets::Secrets;
use crate::timeout::TimeoutValue;
use crate::{Error, Lookup};

/// A configured server: its source, expanded for use, and what the
/// lockfile records about it.
#[derive(Debug, Clone)]
pub struct Server {
    pub name: String,
    pub source: Source,
    /// `format` as written (`file` and `exec` sources).
    pub format: Option<String>,
    pub transform: Transform,
    /// What the lockfile records about how the server was reached; the
    /// operations layer adds what only the capture crate can spell (a
    /// `record` source's merge, an `openapi` source's conversion).
    pub record: Map<String, Value>,
    /// Values expanded from the environment, never to be printed:
    /// `(stand-in, value)` pairs.
    pub secrets: Vec<(String, String)>,
    /// The secrets that are credentials, also replaced in data.
    pub credentials: Vec<(String, String)>,
}

/// `[env.NAME]`: an environment's overrides.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EnvConfig {
    #[serde(default)]
    servers: BTreeMap<String, ServerConfig>,
}

/// One `[servers.NAME]` table (or an `[env.E.servers.NAME]` override, where
/// every key is optional and replaces the base value).
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerConfig {
    // Sources: exactly one.
    file: Option<String>,
    exec: Option<Vec<String>>,
    command: Option<Vec<String>>,
    url: Option<String>,
    openapi: Option<String>,
    record: Option<Vec<String>>,
    // Per source kind.
    format: Option<String>,
    timeout: Option<TimeoutValue>,
    env: Option<BTreeMap<String, String>>,
    cwd: Option<String>,
    headers: Option<BTreeMap<String, String>>,
    transport: Option<String>,
    bearer_token_env: Option<String>,
    protocol_version: Option<String>,
    client_capabilities: Option<Value>,
    client_info: Option<Value>,
    connect_timeout: Option<TimeoutValue>,
    init_timeout: Option<TimeoutValue>,
    page_timeout: Option<TimeoutValue>,
    max_pages: Option<usize>,
    /// How a `record` source pins several distinct tool arrays.
    merge: Option<String>,
    // How an OpenAPI document becomes tools.
    body: Option<String>,
    output_schema: Option<bool>,
    allow_remote_refs: Option<bool>,
    include_operations: Option<Vec<String>>,
    exclude_operations: Option<Vec<String>>,
    include_tags: Option<Vec<String>>,
    exclude_tags: Option<Vec<String>>,
    include_paths: Option<Vec<String>>,
    exclude_paths: Option<Vec<String>>,
    // What the runtime does to the tools.
    prefix: Option<String>,
    include: Option<Vec<String>>,
    exclude: Option<Vec<String>>,
    ignore: Option<Vec<String>>,
    enabled: Option<bool>,
    /// Who makes the server, for `toolpin history` (not part of any
    /// fingerprint).
    vendor: Option<String>,
}

/// The kinds of source, and which keys belong to each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SourceKind {
    File,
    Exec,
    Command,
    Url,
    OpenApi,
    Record,
}

/// Keys that only an `openapi` source reads: how its operations become
/// tools.
const OPENAPI_KEYS: [&str; 9] = [
    "body",
    "output_schema",
    "allow_remote_refs",
    "include_operations",
    "exclude_operations",
    "include_tags",
    "exclude_tags",
    "include_paths",
    "exclude_paths",
];

const MCP_KEYS: [&str; 7] = [
    "protocol_version",
    "client_capabilities",
    "client_info",
    "connect_timeout",
    "init_timeout",
    "page_timeout",
    "max_pages",
];

impl SourceKind {
    fn key(self) -> &'static str {
        match self {
            SourceKind::File => "file",
            SourceKind::Exec => "exec",
            SourceKind::Command => "command",
            SourceKind::Url => "url",
            SourceKind::OpenApi => "openapi",
            SourceKind::Record => "record",
        }
    }

    const ALL: [SourceKind; 6] = [
        SourceKind::File,
        SourceKind::Exec,
        SourceKind::Command,
        SourceKind::Url,
        SourceKind::OpenApi,
        SourceKind::Record,
    ];

    fn allows(self, key: &str) -> bool {
        match key {
            "format" => matches!(self, SourceKind::File | SourceKind::Exec),
            "timeout" => matches!(
                self,
                SourceKind::Exec | SourceKind::OpenApi | SourceKind::Record
            ),
            "env" | "cwd" => matches!(
                self,
                SourceKind::Exec | SourceKind::Command | SourceKind::Record
            ),
            "merge" => self == SourceKind::Record,
            "headers" | "bearer_token_env" => matches!(self, SourceKind::Url | SourceKind::OpenApi),
            "transport" => self == SourceKind::Url,
            k if MCP_KEYS.contains(&k) => matches!(self, SourceKind::Command | SourceKind::Url),
            k if OPENAPI_KEYS.contains(&k) => self == SourceKind::OpenApi,
            _ => true,
        }
    }
}

macro_rules! source_settings {
    ($m:ident) => {
        $m!(
            format,
            timeout,
            env,
            cwd,
            headers,
            transport,
            bearer_token_env,
            protocol_version,
            client_capabilities,
            client_info,
            connect_timeout,
            init_timeout,
            page_timeout,
            max_pages,
            merge,
            body,
            output_schema,
            allow_remote_refs,
            include_operations,
            exclude_operations,
            include_tags,
            exclude_tags,
            include_paths,
            exclude_paths
        )
    };
}

impl ServerConfig {
    /// The source kinds named in this table.
    fn kinds(&self) -> Vec<SourceKind> {
        let mut kinds = Vec::new();
        if self.file.is_some() {
            kinds.push(SourceKind::File);
        }
        if self.exec.is_some() {
            kinds.push(SourceKind::Exec);
        }
        if self.command.is_some() {
            kinds.push(SourceKind::Command);
        }
        if self.url.is_some() {
            kinds.push(SourceKind::Url);
        }
        if self.openapi.is_some() {
            kinds.push(SourceKind::OpenApi);
        }
        if self.record.is_some() {
            kinds.push(SourceKind::Record);
        }
        kinds
    }

    /// Names of the source settings present.
    fn settings(&self) -> Vec<&'static str> {
        let mut keys = Vec::new();
        macro_rules! present {
            ($($f:ident),*) => { $(if self.$f.is_some() { keys.push(stringify!($f)); })* };
        }
        source_settings!(present);
        keys
    }

    fn overlay(mut self, over: &ServerConfig) -> ServerConfig {
        // Naming a source in an override replaces the base's source, and
        // drops base settings that do not apply to the new kind of source.
        if let [kind] = over.kinds().as_slice() {
            self.file = over.file.clone();
            self.exec = over.exec.clone();
            self.command = over.command.clone();
            self.url = over.url.clone();
            self.openapi = over.openapi.clone();
            self.record = over.record.clone();
            macro_rules! drop_inapplicable {
                ($($f:ident),*) => { $(if !kind.allows(stringify!($f)) { self.$f = None; })* };
            }
            source_settings!(drop_inapplicable);
            // The base's format described the base's source.
            self.format = None;
            // An openapi file reads none of an openapi URL's settings.
            if over.openapi.as_deref().is_some_and(|v| !may_be_url(v)) {
                self.headers = None;
                self.bearer_token_env = None;
                self.timeout = None;
            }
        }
        macro_rules! take {
            ($($f:ident),*) => { $(if over.$f.is_some() { self.$f = over.$f.clone(); })* };
        }
        take!(
            file, exec, command, url, openapi, record, prefix, include, exclude, ignore, enabled,
            vendor
        );
        source_settings!(take);
        self
    }
}

/// The servers of one environment, and their `vendor` keys.
#[derive(Debug)]
pub(crate) struct Resolved {
    pub environment: String,
    pub servers: Vec<Server>,
    pub vendors: BTreeMap<String, String>,
}

/// The servers of environment `env` (`[servers]` with `[env.NAME]`'s
/// overrides laid over), each resolved; errors name the server and key.
pub(crate) fn resolve(
    mut merged: BTreeMap<String, ServerConfig>,
    environments: &BTreeMap<String, EnvConfig>,
    env: Option<&str>,
    doc: &Document,
    dir: &Path,
    lookup: Lookup,
) -> Result<Resolved, Error> {
    let environment = match env {
        None => "default".to_string(),
        Some(name) => {
            if name.is_empty() {
                return Err(Error::new("--env needs a name"));
            }
            let Some(overrides) = environments.get(name) else {
                let known: Vec<&str> = environments.keys().map(String::as_str).collect();
                return Err(doc.error(format!(
                    "no [env.{name}] table (defined: {})",
                    if known.is_empty() {
                        "none".to_string()
                    } else {
                        known.join(", ")
                    }
                )));
            };
            for (server, over) in &overrides.servers {
                let base = merged.remove(server).unwrap_or_default();
                merged.insert(server.clone(), base.overlay(over));
            }
            name.to_string()
        }
    };
    if !environment
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err(Error::new(format!(
            "environment name {environment:?} may hold only letters, digits, '-' and '_'"
        )));
    }
    let mut servers = Vec::new();
    let mut vendors = BTreeMap::new();
    for (name, cfg) in merged {
        if cfg.enabled == Some(false) {
            continue;
        }
        if let Some(vendor) = &cfg.vendor {
            if vendor.trim().is_empty() || vendor.contains(['\n', '\r']) {
                return Err(doc.error(format!(
                    "servers.{name}: `vendor` must be one non-empty line"
                )));
            }
            vendors.insert(name.clone(), vendor.clone());
        }
        servers.push(
            server(&name, cfg, dir, lookup)
                .map_err(|m| doc.error(format!("servers.{name}: {m}")))?,
        );
    }
    if servers.is_empty() {
        return Err(Error::new(format!(
            "{} defines no servers; add a [servers.NAME] table",
            doc.origin
        )));
    }
    Ok(Resolved {
        environment,
        servers,
        vendors,
    })
}

/// One server resolved: its source, format, transform, record and
/// secrets.
fn server(name: &str, cfg: ServerConfig, dir: &Path, lookup: Lookup) -> Result<Server, String> {
    if name.is_empty() || name.contains('/') {
        return Err("a server name must be non-empty and hold no '/'".into());
    }
    let kind = source_kind(&cfg)?;
    let mut record = Map::new();
    let mut secrets = Secrets::default();
    let source = source::resolve(kind, &cfg, dir, lookup, &mut record, &mut secrets)?;
    if let Some(f) = &cfg.format {
        record.insert("format".into(), json!(f));
    }
    let transform = transform(&cfg, &mut record)?;
    Ok(Server {
        secrets: secrets.all,
        credentials: secrets.credentials,
        name: name.to_string(),
        source,
        format: cfg.format,
        transform,
        record,
    })
}

/// The one kind of source a table names; every source setting present
/// must apply to it.
fn source_kind(cfg: &ServerConfig) -> Result<SourceKind, String> {
    let kind = match cfg.kinds().as_slice() {
        [kind] => *kind,
        [] => {
            return Err(
                "no source: set `file`, `exec`, `command`, `url`, `openapi` or `record`".into(),
            )
        }
        many => {
            let names: Vec<String> = many.iter().map(|k| format!("`{}`", k.key())).collect();
            return Err(format!(
                "set exactly one of `file`, `exec`, `command`, `url`, `openapi` or `record` (found {})",
                names.join(" and ")
            ));
        }
    };
    if let Some(key) = cfg.settings().into_iter().find(|k| !kind.allows(k)) {
        let owners: Vec<String> = SourceKind::ALL
            .into_iter()
            .filter(|k| k.allows(key))
            .map(|k| format!("`{}`", k.key()))
            .collect();
        let owners = match owners.split_last() {
            Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
            _ => owners.concat(),
        };
        return Err(format!("`{key}` applies to {owners} sources only"));
    }
    Ok(kind)
}

/// What the runtime does to the server's tools (`prefix`, `include`,
/// `exclude`, `ignore`), recorded as written.
fn transform(cfg: &ServerConfig, record: &mut Map<String, Value>) -> Result<Transform, String> {
    let globs = |key: &str, list: &Option<Vec<String>>, record: &mut Map<String, Value>| {
        let list = list.clone().unwrap_or_default();
        if !list.is_empty() {
            record.insert(key.into(), json!(list));
        }
        list.iter()
            .map(|g| Glob::new(g).map_err(|e| format!("`{key}`: {e}")))
            .collect::<Result<Vec<_>, _>>()
    };
    let include = globs("include", &cfg.include, record)?;
    let exclude = globs("exclude", &cfg.exclude, record)?;
    let ignore_list = cfg.ignore.clone().unwrap_or_default();
    let mut ignore = Vec::new();
    for text in &ignore_list {
        let p = Pointer::parse(text).map_err(|e| format!("`ignore`: {e}"))?;
        if p.tokens().len() == 1 && p.tokens()[0] == "name" {
            return Err("`ignore`: the tool name cannot be ignored".into());
        }
        ignore.push(p);
    }
    if !ignore_list.is_empty() {
        record.insert("ignore".into(), json!(ignore_list));
    }
    let prefix = cfg.prefix.clone().unwrap_or_default();
    if !prefix.is_empty() {
        record.insert("prefix".into(), json!(prefix));
    }
    Ok(Transform {
        prefix,
        include,
        exclude,
        ignore,
    })
}
