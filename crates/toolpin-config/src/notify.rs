//! The `[notify.NAME]` tables of toolpin.toml: where drift events are
//! delivered (Slack, PagerDuty, a generic webhook, GitHub issues) and which
//! events each sink wants (docs/notify.md).
//!
//! A secret (`routing_key`, `token`, `secret`, every `url`) is kept as a
//! [`Secret`], whose `Debug` and `Display` print `***`. A `${VAR}` that is
//! not set does not fail loading: a `check` must never fail because a
//! notification secret is missing. The sink still resolves, and
//! [`Sink::ready`] says what is missing when something is to be sent.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use serde::Deserialize;
use toolpin_manifest::{Glob, Severity};

use crate::expand::{expand, expand_url};
use crate::is_http_url;

/// One `[notify.NAME]` table as written: every key any kind takes; which
/// belong to which kind is checked by [`NotifyConfig::resolve`].
#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NotifyFileSink {
    kind: Option<String>,
    url: Option<String>,
    routing_key: Option<String>,
    secret: Option<String>,
    repo: Option<String>,
    token: Option<String>,
    labels: Option<Vec<String>>,
    servers: Option<Vec<String>>,
    tools: Option<Vec<String>>,
    environments: Option<Vec<String>>,
    min_severity: Option<String>,
    timeout: Option<crate::TimeoutValue>,
}

// By hand: a secret may be written literally in the file.
impl fmt::Debug for NotifyFileSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let hidden = |v: &Option<String>| v.as_ref().map(|_| "***");
        f.debug_struct("NotifyFileSink")
            .field("kind", &self.kind)
            .field("url", &hidden(&self.url))
            .field("routing_key", &hidden(&self.routing_key))
            .field("secret", &hidden(&self.secret))
            .field("repo", &self.repo)
            .field("token", &hidden(&self.token))
            .field("labels", &self.labels)
            .field("servers", &self.servers)
            .field("tools", &self.tools)
            .field("environments", &self.environments)
            .field("min_severity", &self.min_severity)
            .field("timeout", &self.timeout)
            .finish()
    }
}

/// A secret value: expanded from `${VAR}` references (or written as is).
/// Its `Debug` and `Display` print `***`.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret {
    value: String,
    /// The variables it was expanded from.
    vars: Vec<String>,
    /// Those of `vars` that were not set (the value is then incomplete).
    missing: Vec<String>,
    /// (stand-in, value) pairs for redacting messages.
    redactions: Vec<(String, String)>,
}

impl Secret {
    /// A secret from `text` with its `${VAR}` references expanded by
    /// `lookup` (`url`: as a URL, each value percent-encoded into its
    /// component). An unset variable is remembered, not an error; a
    /// malformed reference is.
    pub fn expand(
        text: &str,
        url: bool,
        lookup: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, String> {
        let unset = RefCell::new(Vec::new());
        // An unset variable expands to nothing (or its default) so that
        // loading goes on; it is reported by `Sink::ready`.
        let lenient = |name: &str| match lookup(name) {
            Some(v) => Some(v),
            None => {
                unset.borrow_mut().push(name.to_string());
                Some(String::new())
            }
        };
        let expanded = if url {
            expand_url(text, &lenient)?
        } else {
            expand(text, &lenient)?
        };
        let mut missing: Vec<String> = Vec::new();
        for name in unset.into_inner() {
            // `${NAME:-default}` falls back to its default: not missing.
            if text.contains(&format!("${{{name}}}")) && !missing.contains(&name) {
                missing.push(name);
            }
        }
        let mut vars = Vec::new();
        let mut rest = text;
        while let Some(start) = rest.find("${") {
            let after = &rest[start + 2..];
            let end = after.find('}').unwrap_or(after.len());
            let name = after[..end].split(":-").next().unwrap_or("").to_string();
            if !vars.contains(&name) {
                vars.push(name);
            }
            rest = after.get(end + 1..).unwrap_or("");
        }
        let mut redactions = expanded.secrets;
        if !expanded.value.is_empty() {
            redactions.push(("***".to_string(), expanded.value.clone()));
        }
        Ok(Self {
            value: expanded.value,
            vars,
            missing,
            redactions,
        })
    }

    /// The value: to send, never to print.
    pub fn expose(&self) -> &str {
        &self.value
    }

    /// The variables the value came from (`PD_ROUTING_KEY`).
    pub fn vars(&self) -> &[String] {
        &self.vars
    }

    /// The variables that were not set.
    pub fn missing(&self) -> &[String] {
        &self.missing
    }

    /// (stand-in, value) pairs to redact a message with
    /// (`crate::expand::redact`): each expanded value and the whole.
    pub fn redactions(&self) -> &[(String, String)] {
        &self.redactions
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

/// Which events a sink is sent. An empty list (a key left out) matches
/// anything.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Route {
    /// Server names, exact.
    pub servers: Vec<String>,
    /// Tool-name globs, matched against the tool's name
    /// (`orders__lookup_order`), or, for a glob with a `/`, against
    /// `server/tool`.
    pub tools: Vec<Glob>,
    /// Environment names, exact (`default` when no `--env` was given).
    pub environments: Vec<String>,
    /// The least severe severity sent; `None`: every severity.
    pub min_severity: Option<Severity>,
}

impl Route {
    /// Whether an event of `tool` of `server` in `environment`, at
    /// `severity`, goes to the sink.
    ///
    /// A server-level event (tool `""`: the server is gone, its catalog
    /// changed as a whole) is not excluded by `tools`: it concerns every
    /// tool of the server, so whoever watches some of them is told. With
    /// `min_severity`, an event without a severity (no findings) is not
    /// sent.
    pub fn matches(
        &self,
        environment: &str,
        server: &str,
        tool: &str,
        severity: Option<Severity>,
    ) -> bool {
        if !self.environments.is_empty() && !self.environments.iter().any(|e| e == environment) {
            return false;
        }
        if !self.servers.is_empty() && !self.servers.iter().any(|s| s == server) {
            return false;
        }
        if !tool.is_empty() && !self.tools.is_empty() {
            let address = format!("{server}/{tool}");
            let hit = self.tools.iter().any(|g| {
                if g.as_str().contains('/') {
                    g.is_match(&address)
                } else {
                    g.is_match(tool)
                }
            });
            if !hit {
                return false;
            }
        }
        match (self.min_severity, severity) {
            (None, _) => true,
            // Severity orders the most severe first.
            (Some(min), Some(s)) => s <= min,
            (Some(_), None) => false,
        }
    }
}

/// What kind of sink, with the kind's own settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SinkKind {
    /// A Slack incoming webhook: the sink's `url` (required) is the secret.
    Slack,
    /// PagerDuty Events API v2.
    PagerDuty { routing_key: Secret },
    /// A generic JSON webhook; `secret` signs the body (HMAC-SHA256).
    Webhook { secret: Option<Secret> },
    /// An issue per event in `owner/repo`.
    GitHub {
        owner: String,
        repo: String,
        token: Secret,
        labels: Vec<String>,
    },
}

impl SinkKind {
    /// The name written as `kind = "…"`.
    pub fn name(&self) -> &'static str {
        match self {
            SinkKind::Slack => "slack",
            SinkKind::PagerDuty { .. } => "pagerduty",
            SinkKind::Webhook { .. } => "webhook",
            SinkKind::GitHub { .. } => "github",
        }
    }
}

/// The kinds, for messages.
pub const KINDS: [&str; 4] = ["slack", "pagerduty", "webhook", "github"];

/// One resolved `[notify.NAME]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sink {
    pub name: String,
    pub kind: SinkKind,
    pub route: Route,
    /// The endpoint: required for slack and webhook, an override of the
    /// service's own for pagerduty and github.
    pub url: Option<Secret>,
    /// How long one HTTP request to the sink may take (`timeout`, at most
    /// [`MAX_TIMEOUT`]); `None`: the watcher's default.
    pub timeout: Option<Duration>,
}

/// The longest `timeout` a sink may set: a delivery (at most three
/// requests, GitHub's) must end well inside the outbox's lease.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(60);

impl Sink {
    /// Whether the sink can be sent to: every `${VAR}` it names is set and
    /// its URL is one. `Err` is one line, `notify.NAME: PD_ROUTING_KEY is
    /// not set`, with no secret in it.
    pub fn ready(&self) -> Result<(), String> {
        let mut secrets: Vec<(&str, &Secret)> = Vec::new();
        if let Some(url) = &self.url {
            secrets.push(("url", url));
        }
        match &self.kind {
            SinkKind::Slack => {}
            SinkKind::PagerDuty { routing_key } => secrets.push(("routing_key", routing_key)),
            SinkKind::Webhook { secret } => {
                if let Some(s) = secret {
                    secrets.push(("secret", s));
                }
            }
            SinkKind::GitHub { token, .. } => secrets.push(("token", token)),
        }
        let mut missing: Vec<&str> = Vec::new();
        for (_, s) in &secrets {
            for name in s.missing() {
                if !missing.contains(&name.as_str()) {
                    missing.push(name);
                }
            }
        }
        match missing.len() {
            0 => {}
            1 => return Err(format!("notify.{}: {} is not set", self.name, missing[0])),
            _ => {
                return Err(format!(
                    "notify.{}: {} are not set",
                    self.name,
                    missing.join(", ")
                ))
            }
        }
        for (key, s) in &secrets {
            if s.expose().trim().is_empty() {
                return Err(format!("notify.{}.{key}: is empty", self.name));
            }
        }
        if let Some(url) = &self.url {
            if !is_http_url(url.expose()) {
                return Err(format!(
                    "notify.{}.url: not an http:// or https:// URL",
                    self.name
                ));
            }
        }
        Ok(())
    }
}

/// Every `[notify.NAME]`, by name.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NotifyConfig {
    pub sinks: BTreeMap<String, Sink>,
}

impl NotifyConfig {
    /// The names of the sinks an event goes to.
    pub fn route(
        &self,
        environment: &str,
        server: &str,
        tool: &str,
        severity: Option<Severity>,
    ) -> Vec<String> {
        self.sinks
            .values()
            .filter(|s| s.route.matches(environment, server, tool, severity))
            .map(|s| s.name.clone())
            .collect()
    }

    /// Resolves the `[notify.NAME]` tables; `${VAR}` references are read
    /// with `lookup` (an unset one is no error, see [`Sink::ready`]).
    /// Errors are one line naming `notify.NAME.KEY`.
    pub fn resolve(
        file: BTreeMap<String, NotifyFileSink>,
        lookup: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, String> {
        let mut sinks = BTreeMap::new();
        for (name, table) in file {
            let sink = resolve_sink(&name, table, lookup)?;
            sinks.insert(name, sink);
        }
        Ok(Self { sinks })
    }
}

fn resolve_sink(
    name: &str,
    file: NotifyFileSink,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<Sink, String> {
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err(format!(
            "notify.{name:?}: a sink name may hold only letters, digits, '-' and '_'"
        ));
    }
    let kind = sink_kind(name, &file)?;
    let secret = |key: &str, text: &Option<String>, url: bool| -> Result<Option<Secret>, String> {
        let Some(text) = text else {
            return Ok(None);
        };
        if text.trim().is_empty() {
            return Err(format!("notify.{name}.{key}: must not be empty"));
        }
        let s =
            Secret::expand(text, url, lookup).map_err(|m| format!("notify.{name}.{key}: {m}"))?;
        // A URL written as is is checked now; one from the environment
        // when it is used (`Sink::ready`), so that loading never needs it.
        if url && s.vars().is_empty() && !is_http_url(s.expose()) {
            return Err(format!(
                "notify.{name}.{key}: not an http:// or https:// URL"
            ));
        }
        Ok(Some(s))
    };
    let url = secret("url", &file.url, true)?;
    let missing = |key: &str| format!("notify.{name}: a {kind} sink needs `{key}`");
    let kind = match kind {
        "slack" => SinkKind::Slack,
        "pagerduty" => SinkKind::PagerDuty {
            routing_key: secret("routing_key", &file.routing_key, false)?
                .ok_or_else(|| missing("routing_key"))?,
        },
        "webhook" => SinkKind::Webhook {
            secret: secret("secret", &file.secret, false)?,
        },
        _ => {
            let (owner, repo, labels) = github(name, file.repo.clone(), file.labels.clone())?;
            SinkKind::GitHub {
                owner,
                repo,
                token: secret("token", &file.token, false)?.ok_or_else(|| missing("token"))?,
                labels,
            }
        }
    };
    let route = sink_route(name, &file)?;
    let timeout = sink_timeout(name, &file.timeout)?;
    Ok(Sink {
        name: name.to_string(),
        kind,
        route,
        url,
        timeout,
    })
}

/// The sink's `kind`, with only that kind's keys set and its required
/// ones present.
fn sink_kind<'a>(name: &str, file: &'a NotifyFileSink) -> Result<&'a str, String> {
    let Some(kind) = file.kind.as_deref() else {
        return Err(format!(
            "notify.{name}: `kind` is required ({})",
            KINDS.join(", ")
        ));
    };
    if !KINDS.contains(&kind) {
        return Err(format!(
            "notify.{name}.kind: {kind:?} is not a sink kind ({})",
            KINDS.join(", ")
        ));
    }
    // The kind's own keys (the routing keys belong to every kind).
    let (own, required): (&[&str], &[&str]) = match kind {
        "slack" => (&["url"], &["url"]),
        "pagerduty" => (&["routing_key", "url"], &["routing_key"]),
        "webhook" => (&["url", "secret"], &["url"]),
        _ => (&["repo", "token", "labels", "url"], &["repo", "token"]),
    };
    let present = [
        ("url", file.url.is_some()),
        ("routing_key", file.routing_key.is_some()),
        ("secret", file.secret.is_some()),
        ("repo", file.repo.is_some()),
        ("token", file.token.is_some()),
        ("labels", file.labels.is_some()),
    ];
    for (key, is_set) in present {
        if is_set && !own.contains(&key) {
            return Err(format!(
                "notify.{name}.{key}: not a key of a {kind} sink (its keys: {})",
                own.join(", ")
            ));
        }
    }
    for key in required {
        if !present.iter().any(|(k, set)| k == key && *set) {
            return Err(format!("notify.{name}: a {kind} sink needs `{key}`"));
        }
    }
    Ok(kind)
}

/// A github sink's `repo` as (owner, name) and its `labels`.
fn github(
    name: &str,
    repo: Option<String>,
    labels: Option<Vec<String>>,
) -> Result<(String, String, Vec<String>), String> {
    let written = repo.unwrap_or_default();
    let (owner, repo) = parse_repo(&written).ok_or_else(|| {
        format!("notify.{name}.repo: {written:?} is not a GitHub repository as owner/name")
    })?;
    let labels = labels.unwrap_or_default();
    if let Some(bad) = labels.iter().find(|l| l.trim().is_empty()) {
        return Err(format!("notify.{name}.labels: {bad:?} is not a label"));
    }
    Ok((owner, repo, labels))
}

/// Which events the sink is sent: `servers`, `tools`, `environments` and
/// `min_severity`.
fn sink_route(name: &str, file: &NotifyFileSink) -> Result<Route, String> {
    let list = |key: &str, v: &Option<Vec<String>>| -> Result<Vec<String>, String> {
        match v.clone() {
            None => Ok(Vec::new()),
            Some(v) if v.is_empty() => Err(format!(
                "notify.{name}.{key}: an empty list matches nothing; leave the key out to match every one"
            )),
            Some(v) => match v.iter().find(|x| x.trim().is_empty()) {
                Some(_) => Err(format!("notify.{name}.{key}: holds an empty name")),
                None => Ok(v),
            },
        }
    };
    let servers = list("servers", &file.servers)?;
    let environments = list("environments", &file.environments)?;
    let tools = list("tools", &file.tools)?
        .iter()
        .map(|t| Glob::new(t).map_err(|e| format!("notify.{name}.tools: {e}")))
        .collect::<Result<Vec<_>, _>>()?;
    let min_severity = match &file.min_severity {
        None => None,
        Some(s) => Some(Severity::parse(s).ok_or_else(|| {
            format!(
                "notify.{name}.min_severity: {s:?} is not a severity (critical, high, medium, low, info)"
            )
        })?),
    };
    Ok(Route {
        servers,
        tools,
        environments,
        min_severity,
    })
}

/// A sink's `timeout`: at most [`MAX_TIMEOUT`].
fn sink_timeout(
    name: &str,
    timeout: &Option<crate::TimeoutValue>,
) -> Result<Option<Duration>, String> {
    let Some(t) = timeout else {
        return Ok(None);
    };
    let t = crate::parse_timeout("timeout", t).map_err(|m| format!("notify.{name}: {m}"))?;
    if t > MAX_TIMEOUT {
        return Err(format!(
            "notify.{name}.timeout: at most {} s (a delivery must end well inside the outbox's lease)",
            MAX_TIMEOUT.as_secs()
        ));
    }
    Ok(Some(t))
}

/// `owner/name`, each part GitHub's characters.
fn parse_repo(text: &str) -> Option<(String, String)> {
    let (owner, repo) = text.split_once('/')?;
    let part = |p: &str| {
        !p.is_empty()
            && p.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    };
    (part(owner) && part(repo)).then(|| (owner.to_string(), repo.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str, env: &[(&str, &str)]) -> Result<NotifyConfig, String> {
        let file: BTreeMap<String, NotifyFileSink> =
            toml::from_str(text).map_err(|e| e.message().to_string())?;
        let env: Vec<(String, String)> = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        NotifyConfig::resolve(file, &|k| {
            env.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone())
        })
    }

    const ALL: &str = r#"
[orders-oncall]
kind = "pagerduty"
routing_key = "${PD_ROUTING_KEY}"
servers = ["orders", "billing"]
tools = ["orders__*"]
environments = ["staging"]
min_severity = "high"
url = "http://127.0.0.1:9/x"

[audit]
kind = "webhook"
url = "https://hooks.example.com/toolpin"
secret = "${HOOK_SECRET}"

[chat]
kind = "slack"
url = "${SLACK_WEBHOOK_URL}"

[tracker]
kind = "github"
repo = "acme/agents"
token = "${GITHUB_TOKEN}"
labels = ["toolpin", "drift"]
url = "https://ghe.example.com/api/v3"
"#;

    fn full_env() -> Vec<(&'static str, &'static str)> {
        vec![
            ("PD_ROUTING_KEY", "pd-key-123"),
            ("HOOK_SECRET", "hook-s3cret"),
            (
                "SLACK_WEBHOOK_URL",
                "https://hooks.slack.com/services/T0/B0/XyZ",
            ),
            ("GITHUB_TOKEN", "ghp_tok"),
        ]
    }

    #[test]
    fn every_kind_resolves_with_its_settings() {
        let c = parse(ALL, &full_env()).expect("valid");
        assert_eq!(c.sinks.len(), 4);
        let pd = &c.sinks["orders-oncall"];
        match &pd.kind {
            SinkKind::PagerDuty { routing_key } => assert_eq!(routing_key.expose(), "pd-key-123"),
            other => panic!("{other:?}"),
        }
        assert_eq!(pd.route.servers, vec!["orders", "billing"]);
        assert_eq!(pd.route.min_severity, Some(Severity::High));
        assert_eq!(
            pd.url.as_ref().map(Secret::expose),
            Some("http://127.0.0.1:9/x")
        );
        let gh = &c.sinks["tracker"];
        match &gh.kind {
            SinkKind::GitHub {
                owner,
                repo,
                token,
                labels,
            } => {
                assert_eq!((owner.as_str(), repo.as_str()), ("acme", "agents"));
                assert_eq!(token.expose(), "ghp_tok");
                assert_eq!(labels, &vec!["toolpin".to_string(), "drift".to_string()]);
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(c.sinks["chat"].kind, SinkKind::Slack);
        for sink in c.sinks.values() {
            assert_eq!(sink.ready(), Ok(()), "{}", sink.name);
        }
    }

    #[test]
    fn secrets_never_show_in_debug_or_display() {
        let c = parse(ALL, &full_env()).expect("valid");
        let shown = format!("{c:?}");
        for (_, value) in full_env() {
            assert!(!shown.contains(value), "{value} in {shown}");
        }
        let file: BTreeMap<String, NotifyFileSink> =
            toml::from_str("[x]\nkind = \"pagerduty\"\nrouting_key = \"literal-key\"\n")
                .expect("toml");
        assert!(!format!("{file:?}").contains("literal-key"));
        match &c.sinks["orders-oncall"].kind {
            SinkKind::PagerDuty { routing_key } => {
                assert_eq!(routing_key.to_string(), "***");
                assert_eq!(routing_key.vars(), ["PD_ROUTING_KEY"]);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn an_unset_variable_loads_but_is_not_ready() {
        let c = parse(ALL, &[]).expect("loads without the secrets");
        assert_eq!(
            c.sinks["orders-oncall"].ready(),
            Err("notify.orders-oncall: PD_ROUTING_KEY is not set".into())
        );
        assert_eq!(
            c.sinks["chat"].ready(),
            Err("notify.chat: SLACK_WEBHOOK_URL is not set".into())
        );
        assert_eq!(
            c.sinks["tracker"].ready(),
            Err("notify.tracker: GITHUB_TOKEN is not set".into())
        );
        // A default is not missing.
        let c = parse(
            "[x]\nkind = \"webhook\"\nurl = \"http://h/${PATH_PART:-hook}\"\n",
            &[],
        )
        .expect("valid");
        assert_eq!(c.sinks["x"].ready(), Ok(()));
        assert_eq!(
            c.sinks["x"].url.as_ref().map(Secret::expose),
            Some("http://h/hook")
        );
        // A variable that is set but not a URL.
        let c = parse("[x]\nkind = \"slack\"\nurl = \"${U}\"\n", &[("U", "nope")]).expect("valid");
        assert_eq!(
            c.sinks["x"].ready(),
            Err("notify.x.url: not an http:// or https:// URL".into())
        );
    }

    #[test]
    fn a_key_of_another_kind_is_named() {
        for (text, want) in [
            (
                "[chat]\nkind = \"slack\"\nurl = \"https://h/x\"\nrouting_key = \"k\"\n",
                "notify.chat.routing_key: not a key of a slack sink",
            ),
            (
                "[p]\nkind = \"pagerduty\"\nrouting_key = \"k\"\nsecret = \"s\"\n",
                "notify.p.secret: not a key of a pagerduty sink",
            ),
            (
                "[w]\nkind = \"webhook\"\nurl = \"https://h/x\"\nlabels = [\"a\"]\n",
                "notify.w.labels: not a key of a webhook sink",
            ),
            (
                "[g]\nkind = \"github\"\nrepo = \"a/b\"\ntoken = \"t\"\nrouting_key = \"k\"\n",
                "notify.g.routing_key: not a key of a github sink",
            ),
        ] {
            let err = parse(text, &[]).expect_err(text);
            assert!(err.contains(want), "{text}: {err}");
            assert!(!err.contains('\n'), "{err}");
        }
    }

    #[test]
    fn required_keys_per_kind() {
        for (text, want) in [
            (
                "[p]\nkind = \"pagerduty\"\n",
                "notify.p: a pagerduty sink needs `routing_key`",
            ),
            (
                "[w]\nkind = \"webhook\"\n",
                "notify.w: a webhook sink needs `url`",
            ),
            (
                "[s]\nkind = \"slack\"\n",
                "notify.s: a slack sink needs `url`",
            ),
            (
                "[g]\nkind = \"github\"\ntoken = \"t\"\n",
                "notify.g: a github sink needs `repo`",
            ),
            (
                "[g]\nkind = \"github\"\nrepo = \"a/b\"\n",
                "notify.g: a github sink needs `token`",
            ),
            (
                "[k]\nurl = \"https://h/\"\n",
                "notify.k: `kind` is required",
            ),
        ] {
            let err = parse(text, &[]).expect_err(text);
            assert!(err.contains(want), "{text}: {err}");
        }
    }

    #[test]
    fn mistakes_are_one_line_errors_naming_the_key() {
        for (text, want) in [
            (
                "[x]\nkind = \"teams\"\n",
                "notify.x.kind: \"teams\" is not a sink kind",
            ),
            (
                "[x]\nkind = \"slack\"\nurl = \"https://h/\"\nchannel = \"#a\"\n",
                "unknown field `channel`",
            ),
            (
                "[\"a b\"]\nkind = \"slack\"\nurl = \"https://h/\"\n",
                "a sink name may hold only",
            ),
            (
                "[g]\nkind = \"github\"\nrepo = \"agents\"\ntoken = \"t\"\n",
                "notify.g.repo: \"agents\" is not a GitHub repository",
            ),
            (
                "[g]\nkind = \"github\"\nrepo = \"a/b/c\"\ntoken = \"t\"\n",
                "notify.g.repo",
            ),
            (
                "[x]\nkind = \"slack\"\nurl = \"ftp://h/\"\n",
                "notify.x.url: not an http:// or https:// URL",
            ),
            (
                "[x]\nkind = \"slack\"\nurl = \"${OOPS\"\n",
                "notify.x.url: unclosed",
            ),
            (
                "[x]\nkind = \"pagerduty\"\nrouting_key = \"\"\n",
                "notify.x.routing_key: must not be empty",
            ),
            (
                "[x]\nkind = \"slack\"\nurl = \"https://h/\"\nmin_severity = \"severe\"\n",
                "notify.x.min_severity: \"severe\" is not a severity",
            ),
            (
                "[x]\nkind = \"slack\"\nurl = \"https://h/\"\nservers = []\n",
                "notify.x.servers: an empty list matches nothing",
            ),
            (
                "[x]\nkind = \"slack\"\nurl = \"https://h/\"\ntools = [\"a\\\\\"]\n",
                "notify.x.tools:",
            ),
            (
                "[x]\nkind = \"slack\"\nurl = \"https://h/\"\ntimeout = \"soon\"\n",
                "notify.x: `timeout`: \"soon\" is not a duration",
            ),
            (
                "[x]\nkind = \"slack\"\nurl = \"https://h/\"\ntimeout = \"2m\"\n",
                "notify.x.timeout: at most 60 s",
            ),
        ] {
            let err = parse(text, &[]).expect_err(text);
            assert!(err.contains(want), "{text}: {err}");
            assert!(!err.contains('\n'), "{err}");
        }
    }

    #[test]
    fn a_sink_may_set_its_request_timeout() {
        let c = parse(
            "[a]\nkind = \"slack\"\nurl = \"https://h/\"\ntimeout = \"1.5s\"\n\n\
             [b]\nkind = \"slack\"\nurl = \"https://h/\"\ntimeout = 60\n\n\
             [c]\nkind = \"slack\"\nurl = \"https://h/\"\n",
            &[],
        )
        .expect("valid");
        assert_eq!(c.sinks["a"].timeout, Some(Duration::from_millis(1500)));
        assert_eq!(c.sinks["b"].timeout, Some(MAX_TIMEOUT));
        assert_eq!(c.sinks["c"].timeout, None);
    }

    #[test]
    fn routes_filter_by_environment_server_tool_and_severity() {
        let c = parse(ALL, &full_env()).expect("valid");
        let pd = &c.sinks["orders-oncall"].route;
        let high = Some(Severity::High);
        assert!(pd.matches("staging", "orders", "orders__lookup", high));
        assert!(pd.matches(
            "staging",
            "orders",
            "orders__lookup",
            Some(Severity::Critical)
        ));
        assert!(!pd.matches(
            "staging",
            "orders",
            "orders__lookup",
            Some(Severity::Medium)
        ));
        assert!(!pd.matches("staging", "orders", "orders__lookup", None));
        assert!(!pd.matches("prod", "orders", "orders__lookup", high));
        assert!(!pd.matches("staging", "search", "orders__lookup", high));
        assert!(!pd.matches("staging", "billing", "invoice", high));
        // A server-level event is not excluded by the tool globs.
        assert!(pd.matches("staging", "billing", "", high));
        // No filter: everything.
        let chat = &c.sinks["chat"].route;
        assert!(chat.matches("default", "any", "", None));
        assert!(chat.matches("prod", "x", "y", Some(Severity::Info)));
        // A glob with a slash matches server/tool.
        let c = parse(
            "[x]\nkind = \"slack\"\nurl = \"https://h/\"\ntools = [\"orders/*lookup*\"]\n",
            &[],
        )
        .expect("valid");
        let r = &c.sinks["x"].route;
        assert!(r.matches("default", "orders", "orders__lookup_order", None));
        assert!(!r.matches("default", "billing", "orders__lookup_order", None));
        let all = parse(ALL, &full_env()).expect("valid");
        assert_eq!(
            all.route("staging", "orders", "orders__x", Some(Severity::Low)),
            vec!["audit", "chat", "tracker"]
        );
    }

    #[test]
    fn load_resolves_notify_beside_the_ledger_without_its_secrets() {
        let dir = std::env::temp_dir().join(format!("toolpin-notify-load-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let path = dir.join("toolpin.toml");
        std::fs::write(
            &path,
            "[servers.orders]\nfile = \"orders.json\"\n\n[notify.pd]\nkind = \"pagerduty\"\nrouting_key = \"${TOOLPIN_TEST_UNSET_PD_KEY}\"\n",
        )
        .expect("write");
        let config =
            crate::load(&path, None).expect("a missing notify secret does not fail loading");
        let pd = &config.notify.sinks["pd"];
        assert_eq!(
            pd.ready(),
            Err("notify.pd: TOOLPIN_TEST_UNSET_PD_KEY is not set".into())
        );
        std::fs::write(
            &path,
            "[servers.orders]\nfile = \"orders.json\"\n\n[notify.pd]\nkind = \"pagerduty\"\nrouting_key = \"k\"\nrepo = \"a/b\"\n",
        )
        .expect("write");
        let err = crate::load(&path, None).expect_err("a github key on pagerduty");
        assert!(
            err.message().ends_with(
                "notify.pd.repo: not a key of a pagerduty sink (its keys: routing_key, url)"
            ),
            "{err}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
