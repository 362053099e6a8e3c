//! `toolpin.toml`: which servers to pin and how the runtime sees them
//! (servers, `[env.NAME]` overrides, `[policy]`, `[evals]` and `[routing]`,
//! `[proxy]` and `[facade]`, `[ledger]`, `[notify]`, `[usage]`,
//! `[release]`), and what the lockfile's `source` records. Unknown keys and
//! wrong types are errors with the file, line and key.
//!
//! A pure schema (cargo-util-schemas is the model): serde data and located
//! diagnostics over `toolpin-manifest`, no capture, proxy or drift crate.
//! What only those crates can spell (a protocol revision, a rule id, a
//! drift action) is checked where the operations layer turns these tables
//! into their types (`toolpin_ops::settings`), with errors in the same
//! form.

pub mod diagnostic;
pub mod evals;
pub mod expand;
pub mod ledger;
pub mod notify;
pub mod policy;
pub mod proxy;
mod secrets;
pub mod server;
pub mod timeout;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use toml::Spanned;

pub use diagnostic::{line_column, Document};
pub use evals::{Eval, Evals, Route, EVAL_VARS};
pub use policy::{IgnoreConfig, PolicyConfig};
pub use secrets::{secret_looking, SECRET_WORDS};
pub use server::{is_http_url, Server, Source};
pub use timeout::{parse_timeout, TimeoutValue};

/// A configuration error: one line for the user, naming the file (and,
/// where it can, the line, column and key).
pub use toolpin_manifest::diagnostic::Error;

/// Default deadline for an `exec` source.
pub const DEFAULT_EXEC_TIMEOUT: Duration = Duration::from_secs(30);
/// Default deadline for a `record` source: an agent's smoke run makes real
/// MCP connections and imports a framework before its first request.
pub const DEFAULT_RECORD_TIMEOUT: Duration = Duration::from_secs(120);

/// Reads an environment variable.
pub type Lookup<'a> = &'a dyn Fn(&str) -> Option<String>;

/// toolpin.toml as written: every table, checked for unknown keys and
/// wrong types only.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigFile {
    #[serde(default)]
    pub servers: BTreeMap<String, server::ServerConfig>,
    #[serde(default)]
    pub env: BTreeMap<String, server::EnvConfig>,
    #[serde(default)]
    pub policy: PolicyConfig,
    #[serde(default)]
    pub release: ReleaseConfig,
    #[serde(default)]
    pub evals: BTreeMap<Spanned<String>, evals::EvalConfig>,
    pub routing: Option<evals::RoutingConfig>,
    #[serde(default)]
    pub proxy: proxy::ProxyFileConfig,
    #[serde(default)]
    pub facade: BTreeMap<String, proxy::FacadeFileConfig>,
    pub ledger: Option<ledger::LedgerFileConfig>,
    #[serde(default)]
    pub notify: BTreeMap<String, notify::NotifyFileSink>,
    #[serde(default)]
    pub usage: UsageFileConfig,
}

/// `[usage]`: `toolpin usage`'s settings; `[usage.report]` holds the
/// report's thresholds (docs/usage.md), which the usage crate defines and
/// the operations layer reads from the [`Document`].
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UsageFileConfig {
    pub report: Option<toml::Table>,
}

/// `[release]`: the other two legs of (model, prompt, tools), for the
/// release record `toolpin stamp` prints.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReleaseConfig {
    pub model: Option<String>,
    pub prompt: Option<String>,
}

/// One environment's configuration, as data.
#[derive(Debug)]
pub struct Config {
    pub path: PathBuf,
    /// The file's text, for located errors about the tables below.
    pub document: Document,
    pub environment: String,
    pub servers: Vec<Server>,
    pub policy: PolicyConfig,
    pub release: ReleaseConfig,
    pub evals: Evals,
    /// `[proxy]`.
    pub proxy: proxy::ProxyFileConfig,
    /// `[facade."server/tool"]`.
    pub facade: BTreeMap<String, proxy::FacadeFileConfig>,
    /// `[ledger]`: where drift events are recorded.
    pub ledger: ledger::LedgerConfig,
    /// `[notify.NAME]`: where drift events are delivered.
    pub notify: notify::NotifyConfig,
    /// Each server's `vendor` key, where one is set (history groups by it;
    /// a server without one is its serverInfo.name's).
    pub vendors: BTreeMap<String, String>,
}

/// The lockfile for `environment` of the configuration at `path`:
/// `toolpin.lock` or `toolpin.NAME.lock` beside it.
pub fn lockfile_for(path: &Path, environment: &str) -> PathBuf {
    let dir = path.parent().unwrap_or(Path::new(""));
    if environment == "default" {
        dir.join("toolpin.lock")
    } else {
        dir.join(format!("toolpin.{environment}.lock"))
    }
}

impl Config {
    /// The lockfile for this environment: `toolpin.lock` or
    /// `toolpin.NAME.lock` beside the config file.
    pub fn default_lockfile(&self) -> PathBuf {
        lockfile_for(&self.path, &self.environment)
    }
}

/// Reads and validates `path`, applying `[env.NAME]` when `env` is given;
/// `${VAR}` references are read from the process environment.
pub fn load(path: &Path, env: Option<&str>) -> Result<Config, Error> {
    let document = read(path)?;
    let lookup = |k: &str| std::env::var(k).ok();
    parse(path, document, env, &lookup)
}

/// The configuration in `document` (read from `path`, whose directory
/// relative paths are read from), for environment `env`.
pub fn parse(
    path: &Path,
    document: Document,
    env: Option<&str>,
    lookup: Lookup,
) -> Result<Config, Error> {
    let mut file: ConfigFile = document.parse()?;
    let release = std::mem::take(&mut file.release);
    for (key, value) in [("model", &release.model), ("prompt", &release.prompt)] {
        if value
            .as_deref()
            .is_some_and(|v| v.trim().is_empty() || v.contains(['\n', '\r']))
        {
            return Err(document.error(format!("release.{key} must be one non-empty line")));
        }
    }
    let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let evals = evals::resolve_evals(
        std::mem::take(&mut file.evals),
        file.routing.take(),
        &document,
        &dir,
    )?;
    let ledger = ledger::LedgerConfig::resolve(file.ledger.take(), &dir, &lookup)
        .map_err(|e| document.error(e))?;
    let notify = notify::NotifyConfig::resolve(std::mem::take(&mut file.notify), &lookup)
        .map_err(|e| document.error(e))?;
    let servers = server::resolve(file.servers, &file.env, env, &document, &dir, lookup)?;
    Ok(Config {
        path: path.to_path_buf(),
        document,
        environment: servers.environment,
        servers: servers.servers,
        policy: file.policy,
        release,
        evals,
        proxy: file.proxy,
        facade: file.facade,
        ledger,
        notify,
        vendors: servers.vendors,
    })
}

/// `[policy]`, `[evals]` and `[routing]` of a configuration file.
#[derive(Debug)]
pub struct PolicyAndEvals {
    pub document: Document,
    pub policy: PolicyConfig,
    pub evals: Evals,
}

/// Only the `[policy]`, `[evals]` and `[routing]` of a configuration file
/// (for `toolpin diff` and `toolpin evals list`): no server is resolved, so
/// no environment variable is needed.
pub fn load_policy_and_evals(path: &Path) -> Result<PolicyAndEvals, Error> {
    let document = read(path)?;
    let file: ConfigFile = document.parse()?;
    let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let evals = evals::resolve_evals(file.evals, file.routing, &document, &dir)?;
    Ok(PolicyAndEvals {
        document,
        policy: file.policy,
        evals,
    })
}

/// The text of the configuration file at `path`.
pub fn read(path: &Path) -> Result<Document, Error> {
    let origin = path.display().to_string();
    match std::fs::read(path) {
        Ok(bytes) => match String::from_utf8(bytes) {
            Ok(text) => Ok(Document::new(origin, text)),
            Err(_) => Err(Error::new(format!("{origin}: not UTF-8"))),
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(Error::new(format!(
            "{origin} not found; create one (see the README) or pass --config"
        ))),
        Err(e) => Err(Error::new(format!("cannot read {origin}: {e}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolpin_manifest::ToolFormat;

    fn test_env(name: &str) -> Option<String> {
        (name == "TOKEN").then(|| "s3cret-value".to_string())
    }

    /// The configuration in `text`, as if read from /base/t.toml.
    fn config(text: &str, env: Option<&str>) -> Result<Config, Error> {
        crate::parse(
            Path::new("/base/t.toml"),
            Document::new("t.toml", text),
            env,
            &test_env,
        )
    }

    fn parse(text: &str, env: Option<&str>) -> Result<(String, Vec<Server>), String> {
        config(text, env)
            .map(|c| (c.environment, c.servers))
            .map_err(|e| e.to_string())
    }

    #[test]
    fn a_vendor_is_kept_per_server_and_overridable_per_environment() {
        let text = "[servers.orders]\nfile = \"a.json\"\nvendor = \"Acme\"\n\
                    [servers.billing]\nfile = \"b.json\"\n\
                    [env.prod.servers.billing]\nvendor = \"Initech\"\n";
        let vendors = config(text, None).unwrap().vendors;
        assert_eq!(vendors.get("orders").map(String::as_str), Some("Acme"));
        assert_eq!(vendors.get("billing"), None);
        let vendors = config(text, Some("prod")).unwrap().vendors;
        assert_eq!(vendors.get("billing").map(String::as_str), Some("Initech"));
        let err = config("[servers.a]\nfile = \"a.json\"\nvendor = \"\"\n", None).unwrap_err();
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
    fn evals_and_routing_resolve_with_defaults() {
        let text = "[evals.trajectory]\nrun = \"pytest -q\"\ncwd = \"evals\"\ntimeout = \"2m\"\n\
                    env = { MODEL = \"${MODEL:-small}\" }\n\
                    [evals.redteam]\nrun = \"./redteam\"\nmanifest = \"openai\"\n\
                    [routing]\nbudget = [\"trajectory\", \"redteam\", \"trajectory\"]\nauthz = []\n";
        let file: ConfigFile = toml::from_str(text).expect("parses");
        let doc = Document::new("t.toml", text);
        let evals = evals::resolve_evals(file.evals, file.routing, &doc, Path::new("/base"))
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
        let doc = Document::new("t.toml", "");
        let evals = evals::resolve_evals(file.evals, None, &doc, Path::new("")).expect("valid");
        assert_eq!(evals.evals["a"].cwd, Path::new("."));
    }
}
