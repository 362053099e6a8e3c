//! Configuration turned into the types of the crates that use it: the one
//! place that reads toolpin-config's plain data (servers, `[policy]`,
//! `[routing]`, `[proxy]`, `[usage.report]`) into capture, drift, proxy and
//! usage types. The configuration crate stays a pure schema; what only
//! those crates can spell is checked here, with errors in the same located
//! form.
//!
//! [`load`] reads a configuration for one command; [`resolve`] converts
//! one already read.

pub mod proxy;
pub mod server;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;
use toolpin_config::ledger::LedgerConfig;
use toolpin_config::notify::NotifyConfig;
use toolpin_config::{Document, Error, Evals, PolicyConfig, ReleaseConfig};
use toolpin_drift::policy::{check_rule_id, parse_severity, IgnoreEntry, Level, Policy, Preset};
use toolpin_manifest::Glob;
use toolpin_usage::report::Thresholds;

pub use proxy::ProxyConfig;
/// A server ready to capture (the capture crate's type: it captures many
/// at once).
pub use toolpin_capture::Server;

/// The configuration for one environment, in the types of the crates that
/// use it.
#[derive(Debug)]
pub struct Config {
    pub path: PathBuf,
    pub environment: String,
    pub servers: Vec<Server>,
    pub policy: Policy,
    pub release: ReleaseConfig,
    pub evals: Evals,
    /// `[proxy]` and `[facade."server/tool"]`.
    pub proxy: ProxyConfig,
    /// `[ledger]`: where drift events are recorded.
    pub ledger: LedgerConfig,
    /// `[notify.NAME]`: where drift events are delivered.
    pub notify: NotifyConfig,
    /// `[usage.report]`: when `toolpin usage report` raises an alarm.
    pub usage_report: Thresholds,
    /// Each server's `vendor` key, where one is set (history groups by it;
    /// a server without one is its serverInfo.name's).
    pub vendors: BTreeMap<String, String>,
}

impl Config {
    /// The lockfile for this environment: `toolpin.lock` or
    /// `toolpin.NAME.lock` beside the config file.
    pub fn default_lockfile(&self) -> PathBuf {
        toolpin_config::lockfile_for(&self.path, &self.environment)
    }
}

/// Reads and validates `path`, applying `[env.NAME]` when `env` is given.
pub fn load(path: &Path, env: Option<&str>) -> Result<Config, Error> {
    resolve(toolpin_config::load(path, env)?)
}

/// A configuration read by toolpin-config, in the types of the crates that
/// use it.
pub fn resolve(config: toolpin_config::Config) -> Result<Config, Error> {
    let doc = &config.document;
    let policy = policy(&config.policy).map_err(|e| doc.error(e))?;
    routing_tags(doc)?;
    let dir = config.path.parent().unwrap_or(Path::new(""));
    let proxy = proxy::resolve(&config.proxy, &config.facade, dir).map_err(|e| doc.error(e))?;
    let usage_report = usage_thresholds(doc)?;
    let mut servers = Vec::with_capacity(config.servers.len());
    for s in config.servers {
        let name = s.name.clone();
        servers.push(server::server(s).map_err(|m| doc.error(format!("servers.{name}: {m}")))?);
    }
    Ok(Config {
        path: config.path,
        environment: config.environment,
        servers,
        policy,
        release: config.release,
        evals: config.evals,
        proxy,
        ledger: config.ledger,
        notify: config.notify,
        usage_report,
        vendors: config.vendors,
    })
}

/// Only the `[policy]`, `[evals]` and `[routing]` of a configuration file
/// (for `toolpin diff` and `toolpin evals list`): no server is resolved, so
/// no environment variable is needed.
pub fn load_policy_and_evals(path: &Path) -> Result<(Policy, Evals), Error> {
    let read = toolpin_config::load_policy_and_evals(path)?;
    let policy = policy(&read.policy).map_err(|e| read.document.error(e))?;
    routing_tags(&read.document)?;
    Ok((policy, read.evals))
}

/// `[routing]`'s tags checked against the drift engine's re-run tags.
fn routing_tags(doc: &Document) -> Result<(), Error> {
    let known: Vec<&str> = toolpin_drift::policy::known_tags().into_iter().collect();
    toolpin_config::evals::routing_tags(doc, &known)
}

/// `[policy]` in the drift engine's types; errors name the key.
pub fn policy(config: &PolicyConfig) -> Result<Policy, String> {
    let mut policy = Policy::default();
    if let Some(p) = &config.preset {
        policy.preset = Preset::parse(p).ok_or_else(|| {
            format!("policy.preset: {p:?} is not a preset (wire, agent, paranoid)")
        })?;
    }
    let severity = |key: &str, s: &str| {
        parse_severity(s).ok_or_else(|| {
            format!("{key}: {s:?} is not a severity (critical, high, medium, low, info)")
        })
    };
    if let Some(f) = &config.fail_on {
        policy.fail_on = Some(severity("policy.fail-on", f)?);
    }
    for (id, level) in &config.rules {
        check_rule_id(id).map_err(|e| format!("policy.rules: {e}"))?;
        let level = match level.as_str() {
            "off" => Level::Off,
            s => Level::Severity(severity(&format!("policy.rules.{id}"), s)?),
        };
        policy.levels.insert(id.clone(), level);
    }
    for (i, entry) in config.ignore.iter().enumerate() {
        policy.ignore.push(ignore_entry(i, entry)?);
    }
    for w in &config.watch {
        policy
            .watch
            .push(Glob::new(w).map_err(|e| format!("policy.watch: {e}"))?);
    }
    for member in &config.model_reads {
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

/// `policy.ignore[i]`: a known rule, a reason, a tool glob and a JSON
/// pointer.
fn ignore_entry(i: usize, entry: &toolpin_config::IgnoreConfig) -> Result<IgnoreEntry, String> {
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
    Ok(IgnoreEntry {
        rule: entry.rule.clone(),
        tool,
        pointer: entry.pointer.clone(),
        reason: entry.reason.clone(),
    })
}

/// The `[usage.report]` table as the usage crate reads it.
#[derive(Deserialize)]
struct UsageView {
    #[serde(default)]
    usage: UsageTable,
}

#[derive(Default, Deserialize)]
struct UsageTable {
    report: Option<Spanned<Thresholds>>,
}

/// `[usage.report]` checked: a value out of range is an error located at
/// its key.
fn usage_thresholds(doc: &Document) -> Result<Thresholds, Error> {
    let view: UsageView = doc.parse()?;
    let Some(table) = view.usage.report else {
        return Ok(Thresholds::default());
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
        let text = &doc.text;
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
        return Err(doc.error_at(offset, message));
    }
    Ok(thresholds)
}

#[cfg(test)]
mod tests {
    // The configuration read into capture, drift and usage types (these
    // tests lived in toolpin-config while it did the conversion).

    use std::collections::BTreeMap;
    use std::path::Path;
    use std::time::Duration;

    use serde_json::json;
    use toolpin_capture::mcp::HttpMode;
    use toolpin_capture::record::Merge;
    use toolpin_capture::{DocumentLocation, Endpoint, Source};
    use toolpin_config::{is_http_url, ConfigFile, Document, DEFAULT_RECORD_TIMEOUT};
    use toolpin_drift::policy::{Level, Policy, Preset};

    use super::*;

    fn test_env(name: &str) -> Option<String> {
        (name == "TOKEN").then(|| "s3cret-value".to_string())
    }

    fn parse(text: &str, env: Option<&str>) -> Result<(String, Vec<Server>), String> {
        let config = toolpin_config::parse(
            Path::new("/base/t.toml"),
            Document::new("t.toml", text),
            env,
            &test_env,
        );
        config
            .and_then(resolve)
            .map(|c| (c.environment, c.servers))
            .map_err(|e| e.to_string())
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
    fn policy_table() {
        let ok = |t: &str| -> Result<Policy, String> {
            policy(
                &toml::from_str::<ConfigFile>(t)
                    .map_err(|e| e.to_string())?
                    .policy,
            )
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
}
