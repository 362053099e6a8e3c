//! `toolpin.toml`: which servers to pin and how the runtime sees them
//! (servers, `[env.NAME]` overrides, `[policy]`, `[evals]` and `[routing]`,
//! `[proxy]` and `[facade]`, `[release]`), and what the lockfile's `source`
//! records. Unknown keys and wrong types are errors with the file, line and
//! key.

pub mod expand;
pub mod ledger;
pub mod notify;
pub mod proxy;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use serde_json::{json, Map, Value};
use toml::Spanned;
use toolpin_capture::mcp::{self, HttpMode, HttpSpec, SessionOptions, StdioSpec, VersionChoice};
use toolpin_capture::openapi::DEFAULT_FETCH_TIMEOUT;
use toolpin_capture::record::{Merge, RecordSpec};
use toolpin_capture::{DocumentLocation, Endpoint, Format, OpenApiSpec, Source};
use toolpin_drift::policy::{check_rule_id, parse_severity, IgnoreEntry, Level, Policy, Preset};
use toolpin_manifest::diagnostic::{Diagnostic, Kind, Location, Message};
use toolpin_manifest::{Glob, Pointer, ToolFormat, Transform};

use crate::expand::{expand, expand_url, Expanded};

/// A configuration error: one line for the user, naming the file (and,
/// where it can, the line, column and key).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// At a line and column of the file: `origin:line:column: message`.
    #[error(transparent)]
    At(#[from] Diagnostic),
    /// About the file as a whole or what it names, as written.
    #[error(transparent)]
    Other(#[from] Message),
}

impl Error {
    pub fn new(message: impl Into<String>) -> Self {
        Error::Other(Message::new(message))
    }

    /// The message as shown.
    pub fn message(&self) -> String {
        self.to_string()
    }
}

/// Default deadline for an `exec` source.
pub const DEFAULT_EXEC_TIMEOUT: Duration = Duration::from_secs(30);
/// Default deadline for a `record` source: an agent's smoke run makes real
/// MCP connections and imports a framework before its first request.
pub const DEFAULT_RECORD_TIMEOUT: Duration = Duration::from_secs(120);

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ConfigFile {
    #[serde(default)]
    servers: BTreeMap<String, ServerConfig>,
    #[serde(default)]
    env: BTreeMap<String, EnvConfig>,
    #[serde(default)]
    policy: PolicyConfig,
    #[serde(default)]
    release: ReleaseConfig,
    #[serde(default)]
    evals: BTreeMap<Spanned<String>, EvalConfig>,
    routing: Option<RoutingConfig>,
    #[serde(default)]
    proxy: proxy::ProxyFileConfig,
    #[serde(default)]
    facade: BTreeMap<String, proxy::FacadeFileConfig>,
    ledger: Option<ledger::LedgerFileConfig>,
    #[serde(default)]
    notify: BTreeMap<String, notify::NotifyFileSink>,
    #[serde(default)]
    usage: UsageFileConfig,
}

/// `[usage]`: `toolpin usage`'s settings; `[usage.report]` holds the
/// report's thresholds (docs/usage.md).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct UsageFileConfig {
    report: Option<toml::Spanned<toolpin_usage::report::Thresholds>>,
}

/// `[release]`: the other two legs of (model, prompt, tools), for the
/// release record `toolpin stamp` prints.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReleaseConfig {
    pub model: Option<String>,
    pub prompt: Option<String>,
}

/// `[routing]` as written: re-run tag → eval names, with their places.
type RoutingConfig = BTreeMap<Spanned<String>, Spanned<Vec<Spanned<String>>>>;

/// One `[evals.NAME]` table: an eval suite `toolpin evals run` can run
/// against the pinned and the live catalog (docs/evals.md).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct EvalConfig {
    run: Spanned<String>,
    manifest: Option<ToolFormat>,
    cwd: Option<String>,
    timeout: Option<Spanned<TimeoutValue>>,
    #[serde(default)]
    env: BTreeMap<Spanned<String>, Spanned<String>>,
}

/// Variables `toolpin evals run` sets for each run; an eval's `env` may not
/// set them.
pub const EVAL_VARS: [&str; 6] = [
    "TOOLPIN_MANIFEST",
    "TOOLPIN_MANIFEST_FORMAT",
    "TOOLPIN_SIDE",
    "TOOLPIN_CATALOG_FINGERPRINT",
    "TOOLPIN_OUTPUT_DIR",
    "TOOLPIN_EVAL",
];

/// A configured eval.
#[derive(Debug, Clone)]
pub struct Eval {
    pub name: String,
    /// A shell command, run with `sh -c`.
    pub run: String,
    /// The format TOOLPIN_MANIFEST is written in.
    pub manifest: ToolFormat,
    /// Where `run` runs: the config file's directory, or `cwd` below it.
    pub cwd: PathBuf,
    /// `None`: no limit.
    pub timeout: Option<Duration>,
    /// Added to the environment, as written: `${VAR}` references are
    /// expanded only when the eval runs.
    pub env: BTreeMap<String, String>,
}

/// `[evals]` and `[routing]`.
#[derive(Debug, Clone, Default)]
pub struct Evals {
    pub evals: BTreeMap<String, Eval>,
    /// `[routing]` as written: re-run tag → eval names.
    pub routing: BTreeMap<String, Vec<String>>,
}

/// Where one re-run tag goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route<'a> {
    /// Listed in `[routing]` (possibly as an empty list).
    Listed(&'a [String]),
    /// Not in `[routing]`, and an eval of the same name exists.
    SameName(&'a str),
    /// Not in `[routing]`, and no eval has its name.
    Unrouted,
}

impl<'a> Route<'a> {
    /// The eval names the tag routes to.
    pub fn evals(self) -> Vec<&'a str> {
        match self {
            Route::Listed(names) => names.iter().map(String::as_str).collect(),
            Route::SameName(name) => vec![name],
            Route::Unrouted => Vec::new(),
        }
    }
}

impl Evals {
    /// Where `tag` routes: its `[routing]` entry, else the eval of the same
    /// name, else nowhere.
    pub fn route(&self, tag: &str) -> Route<'_> {
        if let Some(names) = self.routing.get(tag) {
            Route::Listed(names)
        } else if let Some((name, _)) = self.evals.get_key_value(tag) {
            Route::SameName(name)
        } else {
            Route::Unrouted
        }
    }

    /// The configured eval names, for messages.
    pub fn names(&self) -> String {
        if self.evals.is_empty() {
            "none".to_string()
        } else {
            self.evals.keys().cloned().collect::<Vec<_>>().join(", ")
        }
    }
}

/// Validates `[evals]` and `[routing]`; errors give `origin:line:column`.
fn resolve_evals(
    evals: BTreeMap<Spanned<String>, EvalConfig>,
    routing: Option<RoutingConfig>,
    origin: &str,
    text: &str,
    dir: &Path,
) -> Result<Evals, Error> {
    let at = |span: std::ops::Range<usize>, message: String| {
        Error::At(Diagnostic::schema(origin, text, span.start, message))
    };
    let mut out = Evals::default();
    for (name, cfg) in evals {
        let span = name.span();
        let name = name.into_inner();
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            return Err(at(
                span,
                format!("evals.{name:?}: an eval name may hold only letters, digits, '-' and '_'"),
            ));
        }
        if name == "manifests" {
            return Err(at(
                span,
                "evals.manifests: the name `manifests` is taken by the directory that holds the catalogs `toolpin evals run` writes".into(),
            ));
        }
        let run_span = cfg.run.span();
        let run = cfg.run.into_inner();
        if run.trim().is_empty() {
            return Err(at(
                run_span,
                format!(
                    "evals.{name}: `run` must be a shell command, e.g. run = \"pytest evals -q\""
                ),
            ));
        }
        let timeout = match cfg.timeout {
            None => None,
            Some(t) => {
                let span = t.span();
                Some(
                    parse_timeout("timeout", t.get_ref())
                        .map_err(|m| at(span, format!("evals.{name}: {m}")))?,
                )
            }
        };
        let mut env = BTreeMap::new();
        for (key, value) in cfg.env {
            let key_span = key.span();
            let key = key.into_inner();
            if EVAL_VARS.contains(&key.as_str()) {
                return Err(at(
                    key_span,
                    format!("evals.{name}: `env.{key}` is set by toolpin for each run and cannot be configured"),
                ));
            }
            let value_span = value.span();
            let value = value.into_inner();
            // Only the syntax is checked here: the variables are read when
            // the eval runs, so `check` does not need them.
            expand(&value, &|_| Some(String::new()))
                .map_err(|m| at(value_span, format!("evals.{name}: `env.{key}`: {m}")))?;
            env.insert(key, value);
        }
        let cwd = match &cfg.cwd {
            Some(c) => dir.join(c),
            None if dir.as_os_str().is_empty() => PathBuf::from("."),
            None => dir.to_path_buf(),
        };
        out.evals.insert(
            name.clone(),
            Eval {
                name,
                run,
                manifest: cfg.manifest.unwrap_or(ToolFormat::Mcp),
                cwd,
                timeout,
                env,
            },
        );
    }
    let known = toolpin_drift::policy::known_tags();
    for (tag, names) in routing.unwrap_or_default() {
        if !known.contains(tag.get_ref().as_str()) {
            return Err(at(
                tag.span(),
                format!(
                    "routing: unknown re-run tag {:?} (known: {})",
                    tag.get_ref(),
                    known.iter().copied().collect::<Vec<_>>().join(", ")
                ),
            ));
        }
        let mut list: Vec<String> = Vec::new();
        for name in names.into_inner() {
            if !out.evals.contains_key(name.get_ref()) {
                return Err(at(
                    name.span(),
                    format!(
                        "routing.{}: no eval named {:?}; define [evals.{}] (defined: {})",
                        tag.get_ref(),
                        name.get_ref(),
                        name.get_ref(),
                        out.names()
                    ),
                ));
            }
            if !list.contains(name.get_ref()) {
                list.push(name.into_inner());
            }
        }
        list.sort();
        out.routing.insert(tag.into_inner(), list);
    }
    Ok(out)
}

/// `[policy]`: which findings fail the check.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct PolicyConfig {
    preset: Option<String>,
    #[serde(rename = "fail-on")]
    fail_on: Option<String>,
    #[serde(default)]
    rules: BTreeMap<String, String>,
    #[serde(default)]
    ignore: Vec<IgnoreConfig>,
    #[serde(default)]
    watch: Vec<String>,
    /// Tool members this runtime also hands the model (`outputSchema`).
    #[serde(default, rename = "model-reads")]
    model_reads: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct IgnoreConfig {
    rule: String,
    tool: Option<String>,
    pointer: Option<String>,
    reason: String,
}

impl PolicyConfig {
    fn resolve(self) -> Result<Policy, String> {
        let mut policy = Policy::default();
        if let Some(p) = &self.preset {
            policy.preset = Preset::parse(p).ok_or_else(|| {
                format!("policy.preset: {p:?} is not a preset (wire, agent, paranoid)")
            })?;
        }
        let severity = |key: &str, s: &str| {
            parse_severity(s).ok_or_else(|| {
                format!("{key}: {s:?} is not a severity (critical, high, medium, low, info)")
            })
        };
        if let Some(f) = &self.fail_on {
            policy.fail_on = Some(severity("policy.fail-on", f)?);
        }
        for (id, level) in &self.rules {
            check_rule_id(id).map_err(|e| format!("policy.rules: {e}"))?;
            let level = match level.as_str() {
                "off" => Level::Off,
                s => Level::Severity(severity(&format!("policy.rules.{id}"), s)?),
            };
            policy.levels.insert(id.clone(), level);
        }
        for (i, entry) in self.ignore.into_iter().enumerate() {
            check_rule_id(&entry.rule).map_err(|e| format!("policy.ignore[{i}]: {e}"))?;
            if entry.reason.trim().is_empty() {
                return Err(format!(
                    "policy.ignore[{i}]: `reason` must say why the drift is accepted"
                ));
            }
            let tool = match &entry.tool {
                Some(t) => Some(Glob::new(t).map_err(|e| format!("policy.ignore[{i}].tool: {e}"))?),
                None => None,
            };
            if let Some(p) = &entry.pointer {
                if !p.is_empty() && !p.starts_with('/') {
                    return Err(format!(
                        "policy.ignore[{i}].pointer: {p:?} is not a JSON pointer"
                    ));
                }
            }
            policy.ignore.push(IgnoreEntry {
                rule: entry.rule,
                tool,
                pointer: entry.pointer,
                reason: entry.reason,
            });
        }
        for w in &self.watch {
            policy
                .watch
                .push(Glob::new(w).map_err(|e| format!("policy.watch: {e}"))?);
        }
        for member in &self.model_reads {
            if !toolpin_drift::policy::EXTRA_MODEL_READS.contains(&member.as_str()) {
                return Err(format!(
                    "policy.model-reads: {member:?} is not a tool member the model may also be handed ({})",
                    toolpin_drift::policy::EXTRA_MODEL_READS.join(", ")
                ));
            }
            policy.model_reads.push(member.clone());
        }
        Ok(policy)
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct EnvConfig {
    #[serde(default)]
    servers: BTreeMap<String, ServerConfig>,
}

/// One `[servers.NAME]` table (or an `[env.E.servers.NAME]` override, where
/// every key is optional and replaces the base value).
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct ServerConfig {
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

#[derive(Debug, Clone)]
pub enum TimeoutValue {
    Seconds(f64),
    Text(String),
}

impl<'de> Deserialize<'de> for TimeoutValue {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = TimeoutValue;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("seconds (30) or a duration string (\"500ms\", \"30s\", \"2m\")")
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<TimeoutValue, E> {
                Ok(TimeoutValue::Seconds(v as f64))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<TimeoutValue, E> {
                Ok(TimeoutValue::Seconds(v as f64))
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<TimeoutValue, E> {
                Ok(TimeoutValue::Seconds(v))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<TimeoutValue, E> {
                Ok(TimeoutValue::Text(v.to_string()))
            }
        }
        d.deserialize_any(Visitor)
    }
}

impl std::fmt::Display for TimeoutValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TimeoutValue::Seconds(s) => write!(f, "{s}"),
            TimeoutValue::Text(t) => write!(f, "{t:?}"),
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

/// A server ready to capture (the capture crate's type: it captures many
/// at once).
pub use toolpin_capture::Server;

/// The resolved configuration for one environment.
#[derive(Debug)]
pub struct Config {
    pub path: PathBuf,
    pub environment: String,
    pub servers: Vec<Server>,
    pub policy: Policy,
    pub release: ReleaseConfig,
    pub evals: Evals,
    /// `[proxy]` and `[facade."server/tool"]`.
    pub proxy: proxy::ProxyConfig,
    /// `[ledger]`: where drift events are recorded.
    pub ledger: ledger::LedgerConfig,
    /// `[notify.NAME]`: where drift events are delivered.
    pub notify: notify::NotifyConfig,
    /// `[usage.report]`: when `toolpin usage report` raises an alarm.
    pub usage_report: toolpin_usage::report::Thresholds,
    /// Each server's `vendor` key, where one is set (history groups by it;
    /// a server without one is its serverInfo.name's).
    pub vendors: BTreeMap<String, String>,
}

impl Config {
    /// The lockfile for this environment: `toolpin.lock` or
    /// `toolpin.NAME.lock` beside the config file.
    pub fn default_lockfile(&self) -> PathBuf {
        let dir = self.path.parent().unwrap_or(Path::new(""));
        if self.environment == "default" {
            dir.join("toolpin.lock")
        } else {
            dir.join(format!("toolpin.{}.lock", self.environment))
        }
    }
}

/// Reads and validates `path`, applying `[env.NAME]` when `env` is given.
pub fn load(path: &Path, env: Option<&str>) -> Result<Config, Error> {
    let origin = path.display().to_string();
    let text = match std::fs::read(path) {
        Ok(bytes) => {
            String::from_utf8(bytes).map_err(|_| Error::new(format!("{origin}: not UTF-8")))?
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(Error::new(format!(
                "{origin} not found; create one (see the README) or pass --config"
            )))
        }
        Err(e) => return Err(Error::new(format!("cannot read {origin}: {e}"))),
    };
    let mut file: ConfigFile = toml::from_str(&text).map_err(|e| toml_error(&origin, &text, &e))?;
    let policy = std::mem::take(&mut file.policy)
        .resolve()
        .map_err(|e| Error::new(format!("{origin}: {e}")))?;
    let release = std::mem::take(&mut file.release);
    for (key, value) in [("model", &release.model), ("prompt", &release.prompt)] {
        if value
            .as_deref()
            .is_some_and(|v| v.trim().is_empty() || v.contains(['\n', '\r']))
        {
            return Err(Error::new(format!(
                "{origin}: release.{key} must be one non-empty line"
            )));
        }
    }
    let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let evals = resolve_evals(
        std::mem::take(&mut file.evals),
        file.routing.take(),
        &origin,
        &text,
        &dir,
    )?;
    let proxy = proxy::ProxyConfig::resolve(
        std::mem::take(&mut file.proxy),
        std::mem::take(&mut file.facade),
        &dir,
    )
    .map_err(|e| Error::new(format!("{origin}: {e}")))?;
    let lookup = |k: &str| std::env::var(k).ok();
    let ledger = ledger::LedgerConfig::resolve(file.ledger.take(), &dir, &lookup)
        .map_err(|e| Error::new(format!("{origin}: {e}")))?;
    let notify = notify::NotifyConfig::resolve(std::mem::take(&mut file.notify), &lookup)
        .map_err(|e| Error::new(format!("{origin}: {e}")))?;
    let usage_report = usage_thresholds(file.usage.report.take(), &origin, &text)?;
    resolve(file, env, &origin, &dir, &lookup).map(|(environment, servers, vendors)| Config {
        path: path.to_path_buf(),
        environment,
        servers,
        policy,
        release,
        evals,
        proxy,
        ledger,
        notify,
        usage_report,
        vendors,
    })
}

/// `[usage.report]` checked: a value out of range is an error located at
/// its key.
fn usage_thresholds(
    table: Option<toml::Spanned<toolpin_usage::report::Thresholds>>,
    origin: &str,
    text: &str,
) -> Result<toolpin_usage::report::Thresholds, Error> {
    let Some(table) = table else {
        return Ok(toolpin_usage::report::Thresholds::default());
    };
    let span = table.span();
    let thresholds = table.into_inner();
    if let Err(message) = thresholds.validate() {
        // The message starts with the dotted key; find its line.
        let key = message
            .split_whitespace()
            .next()
            .and_then(|k| k.strip_prefix("usage.report."))
            .unwrap_or("");
        // A table's span covers its header only: its keys run to the next
        // header.
        let rest = text.get(span.start..).unwrap_or("");
        let end = rest
            .get(1..)
            .and_then(|r| r.find("\n["))
            .map_or(rest.len(), |i| i + 2);
        let body = &rest[..end];
        let offset = body
            .match_indices(key)
            .find(|(i, _)| {
                let before = body[..*i].chars().next_back();
                let after = body[i + key.len()..].trim_start();
                matches!(before, None | Some('\n' | ' ' | '\t' | '{' | ','))
                    && after.starts_with('=')
            })
            .map_or(span.start, |(i, _)| span.start + i);
        return Err(Diagnostic::schema(origin, text, offset, message).into());
    }
    Ok(thresholds)
}

/// Only the `[policy]`, `[evals]` and `[routing]` of a configuration file
/// (for `toolpin diff` and `toolpin evals list`): no server is resolved, so
/// no environment variable is needed.
pub fn load_policy_and_evals(path: &Path) -> Result<(Policy, Evals), Error> {
    let origin = path.display().to_string();
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(Error::new(format!(
                "{origin} not found; create one (see the README) or pass --config"
            )))
        }
        Err(e) => return Err(Error::new(format!("cannot read {origin}: {e}"))),
    };
    let file: ConfigFile = toml::from_str(&text).map_err(|e| toml_error(&origin, &text, &e))?;
    let policy = file
        .policy
        .resolve()
        .map_err(|e| Error::new(format!("{origin}: {e}")))?;
    let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let evals = resolve_evals(file.evals, file.routing, &origin, &text, &dir)?;
    Ok((policy, evals))
}

fn toml_error(origin: &str, text: &str, e: &toml::de::Error) -> Error {
    let message = e.message().trim().replace('\n', " ");
    let Some(span) = e.span() else {
        return Error::new(format!("{origin}: {message}"));
    };
    let line_start = text
        .get(..span.start.min(text.len()))
        .and_then(|before| before.rfind('\n'))
        .map_or(0, |i| i + 1);
    // Name the key for type errors, whose message only names the value.
    let line = text[line_start..].lines().next().unwrap_or("");
    let key = line
        .split_once('=')
        .map(|(k, _)| k.trim())
        .filter(|k| !k.is_empty() && !k.starts_with('['));
    let named = match key {
        Some(k) if !message.contains(&format!("`{k}`")) => format!("key `{k}`: {message}"),
        _ => message,
    };
    Diagnostic::new(
        Kind::Syntax,
        Location::in_text(origin, text, span.start),
        named,
    )
    .into()
}

/// The environment's name, its servers, and their `vendor` keys.
type Resolved = (String, Vec<Server>, BTreeMap<String, String>);

/// Reads an environment variable.
type Lookup<'a> = &'a dyn Fn(&str) -> Option<String>;

fn resolve(
    file: ConfigFile,
    env: Option<&str>,
    origin: &str,
    dir: &Path,
    lookup: Lookup,
) -> Result<Resolved, Error> {
    let mut merged = file.servers;
    let environment = match env {
        None => "default".to_string(),
        Some(name) => {
            if name.is_empty() {
                return Err(Error::new("--env needs a name"));
            }
            let Some(overrides) = file.env.get(name) else {
                let known: Vec<&str> = file.env.keys().map(String::as_str).collect();
                return Err(Error::new(format!(
                    "{origin}: no [env.{name}] table (defined: {})",
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
                return Err(Error::new(format!(
                    "{origin}: servers.{name}: `vendor` must be one non-empty line"
                )));
            }
            vendors.insert(name.clone(), vendor.clone());
        }
        servers.push(
            server(&name, cfg, dir, lookup)
                .map_err(|m| Error::new(format!("{origin}: servers.{name}: {m}")))?,
        );
    }
    if servers.is_empty() {
        return Err(Error::new(format!(
            "{origin} defines no servers; add a [servers.NAME] table"
        )));
    }
    Ok((environment, servers, vendors))
}

fn server(name: &str, cfg: ServerConfig, dir: &Path, lookup: Lookup) -> Result<Server, String> {
    if name.is_empty() || name.contains('/') {
        return Err("a server name must be non-empty and hold no '/'".into());
    }
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
    let mut record = Map::new();
    let mut secrets = Secrets::default();
    let cwd = cfg
        .cwd
        .as_ref()
        .map(|c| dir.join(c))
        .or_else(|| Some(dir.to_path_buf()).filter(|d| !d.as_os_str().is_empty()));
    let source = match kind {
        SourceKind::File => {
            let file = cfg.file.clone().unwrap_or_default();
            record.insert("file".into(), json!(file));
            Source::File {
                path: dir.join(file),
            }
        }
        SourceKind::Exec => {
            let (argv, timeout) = command_line(
                "exec",
                cfg.exec.as_ref(),
                "[\"program\", \"arg\", …]",
                cfg.timeout.as_ref(),
                DEFAULT_EXEC_TIMEOUT,
                &mut record,
            )?;
            let env = process_env(&cfg, lookup, &mut record, &mut secrets)?;
            Source::Exec {
                argv,
                env,
                cwd,
                timeout,
            }
        }
        SourceKind::Command => {
            let command = cfg.command.clone().unwrap_or_default();
            if command.first().is_none_or(|p| p.is_empty()) {
                return Err(
                    "`command` must name a program: command = [\"npx\", \"-y\", \"server\"]".into(),
                );
            }
            record.insert("command".into(), json!(command));
            let env = process_env(&cfg, lookup, &mut record, &mut secrets)?;
            Source::Mcp {
                endpoint: Endpoint::Stdio(StdioSpec {
                    command,
                    env,
                    cwd,
                    reader: None,
                }),
                session: session_options(&cfg, &mut record)?,
            }
        }
        SourceKind::Url => {
            let written = cfg.url.clone().unwrap_or_default();
            let url = expand_url(&written, lookup).map_err(|m| format!("`url`: {m}"))?;
            secrets.expanded(&url, false);
            record.insert("url".into(), json!(written));
            let headers = http_headers(&cfg, lookup, &mut record, &mut secrets)?;
            let mode = match cfg.transport.as_deref() {
                None => HttpMode::Auto,
                Some("http") | Some("streamable-http") => HttpMode::Streamable,
                Some("sse") => HttpMode::Sse,
                Some(other) => {
                    return Err(format!(
                        "`transport`: {other:?} is not a transport; use \"http\" (Streamable HTTP only) or \"sse\" (legacy HTTP+SSE only), or leave it out to try Streamable HTTP, then legacy SSE"
                    ))
                }
            };
            if let Some(t) = &cfg.transport {
                record.insert("transport".into(), json!(t));
            }
            Source::Mcp {
                endpoint: Endpoint::Http(HttpSpec {
                    url: url.value,
                    headers,
                    mode,
                }),
                session: session_options(&cfg, &mut record)?,
            }
        }
        SourceKind::OpenApi => openapi_source(&cfg, dir, lookup, &mut record, &mut secrets)?,
        SourceKind::Record => {
            let (argv, timeout) = command_line(
                "record",
                cfg.record.as_ref(),
                "[\"python\", \"agent.py\", \"--smoke\"]",
                cfg.timeout.as_ref(),
                DEFAULT_RECORD_TIMEOUT,
                &mut record,
            )?;
            let merge = match &cfg.merge {
                None => Merge::default(),
                Some(m) => {
                    let merge = Merge::parse(m).map_err(|e| format!("`merge`: {e}"))?;
                    record.insert("merge".into(), json!(merge.name()));
                    merge
                }
            };
            let env = process_env(&cfg, lookup, &mut record, &mut secrets)?;
            Source::Record(RecordSpec {
                argv,
                env,
                cwd,
                timeout,
                merge,
            })
        }
    };
    let format = match &cfg.format {
        None => None,
        Some(f) => {
            record.insert("format".into(), json!(f));
            Some(f.parse::<Format>().map_err(|e| format!("`format`: {e}"))?)
        }
    };
    let globs = |key: &str, list: &Option<Vec<String>>, record: &mut Map<String, Value>| {
        let list = list.clone().unwrap_or_default();
        if !list.is_empty() {
            record.insert(key.into(), json!(list));
        }
        list.iter()
            .map(|g| Glob::new(g).map_err(|e| format!("`{key}`: {e}")))
            .collect::<Result<Vec<_>, _>>()
    };
    let include = globs("include", &cfg.include, &mut record)?;
    let exclude = globs("exclude", &cfg.exclude, &mut record)?;
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
    Ok(Server {
        secrets: secrets.all,
        credentials: secrets.credentials,
        name: name.to_string(),
        source,
        format,
        transform: Transform {
            prefix,
            include,
            exclude,
            ignore,
        },
        record: Value::Object(record),
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
    let mut headers = Vec::new();
    if let Some(table) = &cfg.headers {
        let mut recorded = Map::new();
        for (name, value) in table {
            let e = expand(value, lookup).map_err(|m| format!("`headers.{name}`: {m}"))?;
            recorded.insert(name.clone(), json!(record_value(name, value)));
            secrets.literal(name, value);
            secrets.expanded(&e, secret_looking(name));
            headers.push((name.clone(), e.value));
        }
        record.insert("headers".into(), Value::Object(recorded));
    }
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
fn may_be_url(written: &str) -> bool {
    is_http_url(written) || written.contains("${")
}

fn is_http_url(text: &str) -> bool {
    ["http://", "https://"].iter().any(|p| {
        text.len() > p.len()
            && text
                .get(..p.len())
                .is_some_and(|s| s.eq_ignore_ascii_case(p))
    })
}

/// An `openapi` source: a file, or a URL fetched with `headers`, and the
/// conversion settings, recorded under `conversion` in full.
fn openapi_source(
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
        let timeout = match &cfg.timeout {
            None => DEFAULT_FETCH_TIMEOUT,
            Some(t) => {
                let d = parse_timeout("timeout", t)?;
                record.insert("timeout_ms".into(), json!(d.as_millis() as u64));
                d
            }
        };
        let location = DocumentLocation::Url {
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
        (
            DocumentLocation::File(dir.join(expanded.value)),
            DEFAULT_FETCH_TIMEOUT,
        )
    };
    let options = openapi_options(cfg)?;
    record.insert("conversion".into(), options.record());
    Ok(Source::OpenApi(OpenApiSpec {
        location,
        options,
        timeout,
    }))
}

fn openapi_options(cfg: &ServerConfig) -> Result<toolpin_openapi::Options, String> {
    let mut options = toolpin_openapi::Options::default();
    if let Some(body) = &cfg.body {
        options.body =
            toolpin_openapi::BodyMode::parse(body).map_err(|e| format!("`body`: {e}"))?;
    }
    if let Some(b) = cfg.output_schema {
        options.output_schema = b;
    }
    if let Some(b) = cfg.allow_remote_refs {
        options.allow_remote_refs = b;
    }
    let globs = |key: &str, list: &Option<Vec<String>>| {
        list.iter()
            .flatten()
            .map(|g| Glob::new(g).map_err(|e| format!("`{key}`: {e}")))
            .collect::<Result<Vec<_>, _>>()
    };
    let paths = |key: &str, list: &Option<Vec<String>>| {
        list.iter()
            .flatten()
            .map(|p| toolpin_openapi::PathPattern::parse(p).map_err(|e| format!("`{key}`: {e}")))
            .collect::<Result<Vec<_>, _>>()
    };
    options.selection = toolpin_openapi::Selection {
        include_operations: globs("include_operations", &cfg.include_operations)?,
        exclude_operations: globs("exclude_operations", &cfg.exclude_operations)?,
        include_tags: globs("include_tags", &cfg.include_tags)?,
        exclude_tags: globs("exclude_tags", &cfg.exclude_tags)?,
        include_paths: paths("include_paths", &cfg.include_paths)?,
        exclude_paths: paths("exclude_paths", &cfg.exclude_paths)?,
    };
    Ok(options)
}

/// The `env` and `cwd` of a process (`exec` or `command`): `env` values are
/// expanded for the process and recorded as written (literal secrets
/// redacted, and kept out of messages); `cwd` is recorded as written.
/// The argv of an `exec` or `record` source (`key`) and its deadline, both
/// recorded (the timeout only when set); `example` shows a valid argv.
fn command_line(
    key: &str,
    argv: Option<&Vec<String>>,
    example: &str,
    timeout: Option<&TimeoutValue>,
    default: Duration,
    record: &mut Map<String, Value>,
) -> Result<(Vec<String>, Duration), String> {
    let argv = argv.cloned().unwrap_or_default();
    if argv.first().is_none_or(|p| p.is_empty()) {
        return Err(format!("`{key}` must name a program: {key} = {example}"));
    }
    let timeout = match timeout {
        None => default,
        Some(t) => {
            let d = parse_timeout("timeout", t)?;
            record.insert("timeout_ms".into(), json!(d.as_millis() as u64));
            d
        }
    };
    record.insert(key.into(), json!(argv));
    Ok((argv, timeout))
}

fn process_env(
    cfg: &ServerConfig,
    lookup: Lookup,
    record: &mut Map<String, Value>,
    secrets: &mut Secrets,
) -> Result<BTreeMap<String, String>, String> {
    let mut env = BTreeMap::new();
    if let Some(vars) = &cfg.env {
        let mut recorded = Map::new();
        for (key, value) in vars {
            let e = expand(value, lookup).map_err(|m| format!("`env.{key}`: {m}"))?;
            recorded.insert(key.clone(), json!(record_value(key, value)));
            secrets.literal(key, value);
            secrets.expanded(&e, secret_looking(key));
            env.insert(key.clone(), e.value);
        }
        record.insert("env".into(), Value::Object(recorded));
    }
    if let Some(c) = &cfg.cwd {
        record.insert("cwd".into(), json!(c));
    }
    Ok(env)
}

/// Words that make an env or header name say its value is a secret.
pub const SECRET_WORDS: [&str; 8] = [
    "KEY",
    "TOKEN",
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "AUTH",
    "COOKIE",
    "CREDENTIAL",
];

/// Whether an env or header name says its value is a secret.
pub fn secret_looking(key: &str) -> bool {
    let upper = key.to_ascii_uppercase();
    SECRET_WORDS.iter().any(|s| upper.contains(s))
}

/// The secret values of one server, each with its stand-in (`${NAME}`, or
/// `<redacted>` for a literal).
///
/// Every value expanded from the environment is kept out of messages
/// (`all`). Only credentials are also replaced in data, the tool
/// definitions pinned and the results contract tests record, because
/// replacing an ordinary word there (a `${MODE}` of `status`, a `${REGION}`)
/// would change the data itself. A value is a credential by what it is:
/// under an env or header name that says so (`API_KEY`, `Authorization`),
/// from a variable whose name says so (`${GITHUB_TOKEN}`), in a URL's
/// userinfo, query or fragment, named by `bearer_token_env`, or a literal
/// under a secret-looking name.
#[derive(Debug, Default)]
struct Secrets {
    all: Vec<(String, String)>,
    credentials: Vec<(String, String)>,
}

impl Secrets {
    /// The values `e` expanded; all of them are credentials when the key
    /// they are configured under says so.
    fn expanded(&mut self, e: &Expanded, secret_key: bool) {
        let credentials = if secret_key {
            &e.secrets
        } else {
            &e.credentials
        };
        self.credentials.extend(credentials.iter().cloned());
        self.all.extend(e.secrets.iter().cloned());
    }

    fn credential(&mut self, stand_in: String, value: String) {
        self.credentials.push((stand_in.clone(), value.clone()));
        self.all.push((stand_in, value));
    }

    /// A literal secret written straight into toolpin.toml is kept out of
    /// messages too, not only out of the lockfile. The literal parts of a
    /// value that mixes text and references (`Bearer ${TOKEN}`) are not
    /// secret.
    fn literal(&mut self, key: &str, value: &str) {
        if secret_looking(key) && !value.contains("${") {
            self.credential("<redacted>".into(), value.to_string());
            // "Bearer abc…" is also echoed as just the credential.
            if let Some((_, credential)) = value.split_once(' ') {
                self.credential("<redacted>".into(), credential.to_string());
            }
        }
    }
}

/// What the lockfile records for an env or header value: references as
/// written; a literal value of a secret-looking key is redacted.
fn record_value(key: &str, value: &str) -> String {
    if secret_looking(key) && !value.contains("${") {
        "<redacted>".to_string()
    } else {
        value.to_string()
    }
}

fn session_options(
    cfg: &ServerConfig,
    record: &mut Map<String, Value>,
) -> Result<SessionOptions, String> {
    let mut opts = SessionOptions::default();
    if let Some(v) = &cfg.protocol_version {
        let known = v == mcp::STATELESS_VERSION || mcp::HANDSHAKE_VERSIONS.contains(&v.as_str());
        if !known {
            return Err(format!(
                "`protocol_version`: {v:?} is not a protocol revision toolpin speaks ({}, {})",
                mcp::STATELESS_VERSION,
                mcp::HANDSHAKE_VERSIONS.join(", ")
            ));
        }
        record.insert("protocol_version".into(), json!(v));
        opts.version = VersionChoice::Pinned(v.clone());
    }
    if let Some(caps) = &cfg.client_capabilities {
        if !caps.is_object() {
            return Err("`client_capabilities` must be a table".into());
        }
        opts.client_capabilities = caps.clone();
    }
    if let Some(info) = &cfg.client_info {
        if !info.get("name").is_some_and(Value::is_string)
            || !info.get("version").is_some_and(Value::is_string)
        {
            return Err("`client_info` must be a table with string `name` and `version`".into());
        }
        opts.client_info = info.clone();
    }
    if let Some(t) = &cfg.connect_timeout {
        opts.timeouts.connect = parse_timeout("connect_timeout", t)?;
    }
    if let Some(t) = &cfg.init_timeout {
        opts.timeouts.initialize = parse_timeout("init_timeout", t)?;
    }
    if let Some(t) = &cfg.page_timeout {
        opts.timeouts.page = parse_timeout("page_timeout", t)?;
    }
    if let Some(n) = cfg.max_pages {
        if n == 0 {
            return Err("`max_pages` must be at least 1".into());
        }
        opts.max_pages = n;
    }
    Ok(opts)
}

pub fn parse_timeout(key: &str, t: &TimeoutValue) -> Result<Duration, String> {
    let bad = || {
        format!(
            "`{key}`: {t} is not a duration of up to a day; write seconds (30) or \"500ms\", \"30s\", \"2m\""
        )
    };
    let secs = match t {
        TimeoutValue::Seconds(s) => *s,
        TimeoutValue::Text(text) => {
            let text = text.trim();
            let (num, scale) = if let Some(n) = text.strip_suffix("ms") {
                (n, 0.001)
            } else if let Some(n) = text.strip_suffix('s') {
                (n, 1.0)
            } else if let Some(n) = text.strip_suffix('m') {
                (n, 60.0)
            } else {
                (text, 1.0)
            };
            num.trim().parse::<f64>().map_err(|_| bad())? * scale
        }
    };
    if !(secs.is_finite() && secs > 0.0 && secs <= 86_400.0) {
        return Err(bad());
    }
    Ok(Duration::from_secs_f64(secs))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn test_env(name: &str) -> Option<String> {
        (name == "TOKEN").then(|| "s3cret-value".to_string())
    }

    fn parse(text: &str, env: Option<&str>) -> Result<(String, Vec<Server>), String> {
        let file: ConfigFile =
            toml::from_str(text).map_err(|e| toml_error("t.toml", text, &e).to_string())?;
        resolve(file, env, "t.toml", Path::new("/base"), &test_env)
            .map(|(environment, servers, _)| (environment, servers))
            .map_err(|e| e.to_string())
    }

    #[test]
    fn a_vendor_is_kept_per_server_and_overridable_per_environment() {
        let text = "[servers.orders]\nfile = \"a.json\"\nvendor = \"Acme\"\n\
                    [servers.billing]\nfile = \"b.json\"\n\
                    [env.prod.servers.billing]\nvendor = \"Initech\"\n";
        let file: ConfigFile = toml::from_str(text).unwrap();
        let (_, _, vendors) = resolve(file, None, "t.toml", Path::new("/base"), &test_env).unwrap();
        assert_eq!(vendors.get("orders").map(String::as_str), Some("Acme"));
        assert_eq!(vendors.get("billing"), None);
        let file: ConfigFile = toml::from_str(text).unwrap();
        let (_, _, vendors) =
            resolve(file, Some("prod"), "t.toml", Path::new("/base"), &test_env).unwrap();
        assert_eq!(vendors.get("billing").map(String::as_str), Some("Initech"));
        let file: ConfigFile =
            toml::from_str("[servers.a]\nfile = \"a.json\"\nvendor = \"\"\n").unwrap();
        let err = resolve(file, None, "t.toml", Path::new("/base"), &test_env).unwrap_err();
        assert!(
            err.to_string()
                .contains("`vendor` must be one non-empty line"),
            "{err}"
        );
    }

    #[test]
    fn unknown_key_names_key_and_line() {
        let err =
            parse("[servers.a]\nfile = \"a.json\"\nprefx = \"x\"\n", None).expect_err("unknown");
        assert!(
            err.starts_with("t.toml:3:1: unknown field `prefx`"),
            "{err}"
        );
    }

    #[test]
    fn wrong_type_names_key_and_line() {
        let err = parse("[servers.a]\nfile = \"a.json\"\nprefix = 3\n", None).expect_err("type");
        assert!(
            err.starts_with("t.toml:3:10: key `prefix`: invalid type: integer `3`"),
            "{err}"
        );
    }

    #[test]
    fn env_overrides_replace_the_source() {
        let text = r#"
[servers.orders]
exec = ["python", "print_tools.py"]
prefix = "orders__"
[servers.billing]
file = "billing.json"
[env.staging.servers.orders]
file = "orders.staging.json"
[env.staging.servers.billing]
enabled = false
"#;
        let (env, servers) = parse(text, Some("staging")).expect("valid");
        assert_eq!(env, "staging");
        assert_eq!(servers.len(), 1);
        assert!(
            matches!(&servers[0].source, Source::File { path } if path == Path::new("/base/orders.staging.json"))
        );
        assert_eq!(servers[0].transform.prefix, "orders__");
        assert_eq!(
            servers[0].record,
            json!({"file": "orders.staging.json", "prefix": "orders__"})
        );
        assert!(parse(text, Some("prod"))
            .expect_err("undefined")
            .contains("no [env.prod] table"));
        assert!(parse(text, Some("")).is_err());
    }

    #[test]
    fn semantic_errors_name_the_server_and_key() {
        let cases = [
            (
                "[servers.a]\nfile = \"x\"\nexec = [\"y\"]\n",
                "servers.a: set exactly one of `file`, `exec`, `command`, `url`, `openapi` or `record` (found `file` and `exec`)",
            ),
            ("[servers.a]\nprefix = \"p\"\n", "servers.a: no source"),
            (
                "[servers.a]\nfile = \"x\"\nformat = \"gpt\"\n",
                "servers.a: `format`: unknown format \"gpt\"",
            ),
            (
                "[servers.a]\nfile = \"x\"\nignore = [\"_meta\"]\n",
                "servers.a: `ignore`: \"_meta\" is not a JSON pointer",
            ),
            (
                "[servers.a]\nfile = \"x\"\ninclude = [\"[ab\"]\n",
                "servers.a: `include`: glob \"[ab\" has an unclosed '['",
            ),
            (
                "[servers.a]\nexec = [\"x\"]\ntimeout = \"soon\"\n",
                "servers.a: `timeout`",
            ),
            (
                "[servers.a]\nexec = []\n",
                "servers.a: `exec` must name a program",
            ),
            (
                "[servers.a]\nrecord = [\"\"]\n",
                "servers.a: `record` must name a program: record = [\"python\", \"agent.py\", \"--smoke\"]",
            ),
            (
                "[servers.a]\nrecord = [\"x\"]\nmerge = \"both\"\n",
                "servers.a: `merge`: \"both\" is not a merge; use \"distinct\"",
            ),
            (
                "[servers.a]\nexec = [\"x\"]\nmerge = \"union\"\n",
                "servers.a: `merge` applies to `record` sources only",
            ),
            (
                "[servers.a]\nfile = \"x\"\ncwd = \"d\"\n",
                "servers.a: `cwd` applies to `exec`, `command` and `record` sources only",
            ),
            (
                "[servers.a]\nrecord = [\"x\"]\nformat = \"mcp\"\n",
                "servers.a: `format` applies to `file` and `exec` sources only",
            ),
            ("", "defines no servers"),
        ];
        for (text, want) in cases {
            let err = parse(text, None).expect_err(want);
            assert!(err.contains(want), "{err} lacks {want}");
        }
    }

    #[test]
    fn exec_env_is_expanded_passed_and_recorded_like_command_env() {
        let text = "[servers.a]\nexec = [\"dump\"]\ncwd = \"tools\"\n\
                    env = { A = \"${TOKEN}\", B = \"${UNSET:-fallback}\", API_KEY = \"literal-key-1\" }\n";
        let (_, servers) = parse(text, None).expect("valid");
        let Source::Exec { env, cwd, .. } = &servers[0].source else {
            panic!("an exec source: {:?}", servers[0].source);
        };
        assert_eq!(
            env,
            &BTreeMap::from([
                ("A".to_string(), "s3cret-value".to_string()),
                ("API_KEY".to_string(), "literal-key-1".to_string()),
                ("B".to_string(), "fallback".to_string()),
            ])
        );
        assert_eq!(cwd.as_deref(), Some(Path::new("/base/tools")));
        assert_eq!(
            servers[0].record,
            json!({
                "exec": ["dump"],
                "cwd": "tools",
                "env": {"A": "${TOKEN}", "B": "${UNSET:-fallback}", "API_KEY": "<redacted>"},
            })
        );
        let secrets = &servers[0].secrets;
        assert!(secrets.contains(&("${TOKEN}".into(), "s3cret-value".into())));
        assert!(secrets.contains(&("<redacted>".into(), "literal-key-1".into())));
        let err = parse(
            "[servers.a]\nexec = [\"dump\"]\nenv = { A = \"${NOPE}\" }\n",
            None,
        )
        .expect_err("unset");
        assert!(err.contains("servers.a: `env.A`: "), "{err}");
    }

    #[test]
    fn a_record_source_runs_its_command_with_env_cwd_timeout_and_merge() {
        let text = "[servers.agent]\nrecord = [\"python\", \"agent.py\"]\ncwd = \"svc\"\n\
                    timeout = \"90s\"\nmerge = \"union\"\nenv = { A = \"${TOKEN}\" }\nprefix = \"a__\"\n";
        let (_, servers) = parse(text, None).expect("valid");
        let Source::Record(spec) = &servers[0].source else {
            panic!("a record source: {:?}", servers[0].source);
        };
        assert_eq!(spec.argv, vec!["python", "agent.py"]);
        assert_eq!(spec.cwd.as_deref(), Some(Path::new("/base/svc")));
        assert_eq!(spec.timeout, Duration::from_secs(90));
        assert_eq!(spec.merge, Merge::Union);
        assert_eq!(spec.env["A"], "s3cret-value");
        assert_eq!(
            servers[0].record,
            json!({
                "record": ["python", "agent.py"], "cwd": "svc", "timeout_ms": 90000,
                "merge": "union", "env": {"A": "${TOKEN}"}, "prefix": "a__",
            })
        );
        let (_, servers) =
            parse("[servers.agent]\nrecord = [\"node\", \"a.mjs\"]\n", None).expect("valid");
        let Source::Record(spec) = &servers[0].source else {
            panic!("a record source");
        };
        assert_eq!(
            (spec.timeout, spec.merge),
            (DEFAULT_RECORD_TIMEOUT, Merge::Distinct)
        );
        // An environment's override may swap an exec source for a record one.
        let text = "[servers.agent]\nexec = [\"dump\"]\nformat = \"mcp\"\n\
                    [env.ci.servers.agent]\nrecord = [\"python\", \"agent.py\"]\n";
        let (_, servers) = parse(text, Some("ci")).expect("valid");
        assert!(
            matches!(servers[0].source, Source::Record(_)),
            "{:?}",
            servers[0].source
        );
        assert_eq!(servers[0].format, None);
    }

    #[test]
    fn transport_http_means_streamable_http_only() {
        let mode = |transport: &str| {
            let text = format!("[servers.a]\nurl = \"http://h/mcp\"\n{transport}");
            let (_, servers) = parse(&text, None).expect("valid");
            match &servers[0].source {
                Source::Mcp {
                    endpoint: Endpoint::Http(spec),
                    ..
                } => spec.mode,
                other => panic!("an HTTP source: {other:?}"),
            }
        };
        assert_eq!(mode(""), HttpMode::Auto);
        assert_eq!(mode("transport = \"http\"\n"), HttpMode::Streamable);
        assert_eq!(
            mode("transport = \"streamable-http\"\n"),
            HttpMode::Streamable
        );
        assert_eq!(mode("transport = \"sse\"\n"), HttpMode::Sse);
        let err = parse(
            "[servers.a]\nurl = \"http://h/mcp\"\ntransport = \"ws\"\n",
            None,
        )
        .expect_err("unknown");
        assert!(
            err.contains("`transport`: \"ws\" is not a transport"),
            "{err}"
        );
    }

    #[test]
    fn an_override_source_drops_the_base_source_settings() {
        let text = "[servers.a]\nexec = [\"x\"]\ntimeout = 5\nformat = \"anthropic\"\n\
                    [env.ci.servers.a]\nfile = \"a.json\"\n";
        let (_, servers) = parse(text, Some("ci")).expect("valid");
        assert!(matches!(servers[0].source, Source::File { .. }));
        assert_eq!(servers[0].format, None);
    }

    #[test]
    fn openapi_sources_record_their_conversion_and_keep_secrets_out() {
        let text = "[servers.gh]\nopenapi = \"https://api.example.com/${TOKEN}/openapi.yaml\"\n\
                    headers = { X-Api-Key = \"${TOKEN}\" }\nbody = \"merge\"\ninclude_tags = [\"repos\"]\n\
                    exclude_paths = [\"DELETE /*\"]\nprefix = \"gh__\"\n\
                    [env.ci.servers.gh]\nopenapi = \"openapi.json\"\n";
        let (_, servers) = parse(text, None).expect("valid");
        let Source::OpenApi(spec) = &servers[0].source else {
            panic!("an openapi source: {:?}", servers[0].source);
        };
        match &spec.location {
            DocumentLocation::Url { url, headers } => {
                assert_eq!(url, "https://api.example.com/s3cret-value/openapi.yaml");
                assert_eq!(
                    headers,
                    &vec![("X-Api-Key".to_string(), "s3cret-value".to_string())]
                );
            }
            other => panic!("a URL: {other:?}"),
        }
        assert_eq!(
            servers[0].record,
            json!({
                "openapi": "https://api.example.com/${TOKEN}/openapi.yaml",
                "headers": {"X-Api-Key": "${TOKEN}"},
                "prefix": "gh__",
                "conversion": {"allow_remote_refs": false, "body": "merge", "output_schema": true, "version": 1,
                               "include_tags": ["repos"], "exclude_paths": ["DELETE /*"]}
            })
        );
        assert!(servers[0]
            .secrets
            .contains(&("${TOKEN}".into(), "s3cret-value".into())));
        // An override that names a file keeps the conversion settings and
        // drops what only a URL reads.
        let (_, servers) = parse(text, Some("ci")).expect("valid");
        let Source::OpenApi(spec) = &servers[0].source else {
            panic!("an openapi source");
        };
        assert!(
            matches!(&spec.location, DocumentLocation::File(p) if p == Path::new("/base/openapi.json"))
        );
        assert!(servers[0].record.get("headers").is_none());
        // Not a URL, however it begins.
        assert!(!is_http_url("héllo://x") && !is_http_url("http://") && is_http_url("HTTPS://x"));
        assert_eq!(spec.options.body, toolpin_openapi::BodyMode::Merge);
        let err = parse(
            text.replace("[env.ci.servers.gh]\nopenapi = \"openapi.json\"\n", "")
                .replace("https://api.example.com/${TOKEN}/", "")
                .as_str(),
            None,
        )
        .expect_err("headers on a file");
        assert!(
            err.contains("`headers` applies to an `openapi` URL"),
            "{err}"
        );
    }

    #[test]
    fn timeout_errors_read_well() {
        let err = parse("[servers.a]\nexec = [\"x\"]\ntimeout = true\n", None).expect_err("bool");
        assert!(
            err.contains("expected seconds (30) or a duration string"),
            "{err}"
        );
        let err =
            parse("[servers.a]\nexec = [\"x\"]\ntimeout = \"25h\"\n", None).expect_err("long");
        assert!(
            err.contains("`timeout`: \"25h\" is not a duration"),
            "{err}"
        );
    }

    #[test]
    fn policy_table() {
        let ok = |t: &str| -> Result<Policy, String> {
            toml::from_str::<ConfigFile>(t)
                .map_err(|e| e.to_string())?
                .policy
                .resolve()
        };
        let p = ok("[policy]\npreset = \"wire\"\nfail-on = \"high\"\nrules = { \"field-changed\" = \"off\", \"input-default-changed\" = \"critical\" }\nwatch = [\"orders/*\"]\nignore = [{ rule = \"description-changed\", tool = \"orders/lookup_order\", reason = \"reviewed in #12\" }]\n").expect("valid");
        assert_eq!(p.preset, Preset::Wire);
        assert_eq!(p.levels.get("field-changed"), Some(&Level::Off));
        assert_eq!(p.ignore.len(), 1);
        let p = ok("[policy]\nmodel-reads = [\"outputSchema\"]\n").expect("valid");
        assert_eq!(p.model_reads, vec!["outputSchema".to_string()]);
        for (bad, want) in [
            (
                "[policy]\nmodel-reads = [\"outputschema\"]\n",
                "policy.model-reads: \"outputschema\" is not a tool member the model may also be handed (outputSchema, _meta)",
            ),
            (
                "[policy]\nrules = { \"no-such-rule\" = \"high\" }\n",
                "unknown rule id \"no-such-rule\"",
            ),
            ("[policy]\nfail-on = \"severe\"\n", "not a severity"),
            ("[policy]\npreset = \"strict\"\n", "not a preset"),
            (
                "[policy]\nignore = [{ rule = \"tool-added\", reason = \" \" }]\n",
                "must say why",
            ),
            (
                "[policy]\nignore = [{ rule = \"tool-adde\", reason = \"x\" }]\n",
                "unknown rule id",
            ),
        ] {
            let err = ok(bad).expect_err(want);
            assert!(err.contains(want), "{err} lacks {want}");
        }
    }

    #[test]
    fn evals_and_routing_resolve_with_defaults() {
        let text = "[evals.trajectory]\nrun = \"pytest -q\"\ncwd = \"evals\"\ntimeout = \"2m\"\n\
                    env = { MODEL = \"${MODEL:-small}\" }\n\
                    [evals.redteam]\nrun = \"./redteam\"\nmanifest = \"openai\"\n\
                    [routing]\nbudget = [\"trajectory\", \"redteam\", \"trajectory\"]\nauthz = []\n";
        let file: ConfigFile = toml::from_str(text).expect("parses");
        let evals = resolve_evals(file.evals, file.routing, "t.toml", text, Path::new("/base"))
            .expect("valid");
        let t = &evals.evals["trajectory"];
        assert_eq!(t.run, "pytest -q");
        assert_eq!(t.manifest, ToolFormat::Mcp);
        assert_eq!(t.cwd, Path::new("/base/evals"));
        assert_eq!(t.timeout, Some(Duration::from_secs(120)));
        assert_eq!(
            t.env,
            BTreeMap::from([("MODEL".to_string(), "${MODEL:-small}".to_string())])
        );
        let r = &evals.evals["redteam"];
        assert_eq!(
            (r.manifest, r.cwd.as_path(), r.timeout),
            (ToolFormat::OpenAiChat, Path::new("/base"), None)
        );
        // Listed: sorted, each once; an empty list routes nowhere.
        assert_eq!(
            evals.route("budget"),
            Route::Listed(&["redteam".to_string(), "trajectory".to_string()])
        );
        assert_eq!(evals.route("authz"), Route::Listed(&[]));
        assert!(evals.route("authz").evals().is_empty());
        // Not listed: the eval of the same name, else nowhere.
        assert_eq!(evals.route("trajectory"), Route::SameName("trajectory"));
        assert_eq!(evals.route("red-team"), Route::Unrouted);

        // A config file beside the working directory runs evals in it.
        let file: ConfigFile = toml::from_str("[evals.a]\nrun = \"x\"\n").expect("parses");
        let evals = resolve_evals(file.evals, None, "t.toml", "", Path::new("")).expect("valid");
        assert_eq!(evals.evals["a"].cwd, Path::new("."));
    }

    #[test]
    fn usage_report_thresholds_are_read_and_checked_at_their_key() {
        let dir = std::env::temp_dir().join(format!("toolpin-config-usage-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let path = dir.join("toolpin.toml");
        let load_text = |text: &str| {
            let text = format!("[servers.s]\ncommand = [\"true\"]\n{text}");
            std::fs::write(&path, text).expect("write");
            load(&path, None)
        };
        let cfg = load_text("[usage.report]\nalpha = 0.001\nmin-calls = 500\n").expect("valid");
        assert_eq!(cfg.usage_report.alpha, 0.001);
        assert_eq!(cfg.usage_report.min_calls, 500);
        assert_eq!(cfg.usage_report.window_hours, 168);
        let cfg = load_text("").expect("valid");
        assert_eq!(
            cfg.usage_report,
            toolpin_usage::report::Thresholds::default()
        );
        let e = load_text(
            "[ledger]\nenabled = false\n\n[usage.report]\nmin-calls = 10\n  alpha = 2.0\n",
        )
        .expect_err("out of range")
        .to_string();
        assert!(
            e.contains("toolpin.toml:8:3: usage.report.alpha must be between 0 and 1"),
            "{e}"
        );
        let e = load_text("[usage.report]\nalpah = 0.1\n")
            .expect_err("unknown key")
            .to_string();
        assert!(e.contains("toolpin.toml:4:1") && e.contains("alpah"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn timeouts() {
        let d = |t: TimeoutValue| parse_timeout("timeout", &t);
        assert_eq!(
            d(TimeoutValue::Seconds(2.5)),
            Ok(Duration::from_millis(2500))
        );
        assert_eq!(
            d(TimeoutValue::Text("500ms".into())),
            Ok(Duration::from_millis(500))
        );
        assert_eq!(
            d(TimeoutValue::Text("2m".into())),
            Ok(Duration::from_secs(120))
        );
        assert!(d(TimeoutValue::Seconds(0.0)).is_err());
    }
}
