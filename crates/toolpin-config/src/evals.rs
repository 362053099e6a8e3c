//! `[evals.NAME]` and `[routing]`: the eval suites `toolpin evals run` runs
//! and which re-run tags go to which of them (docs/evals.md).
//!
//! A re-run tag is the drift engine's vocabulary: the operations layer
//! checks `[routing]`'s tags against it ([`routing_tags`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use toml::Spanned;
use toolpin_manifest::ToolFormat;

use crate::diagnostic::Document;
use crate::expand::expand;
use crate::timeout::{parse_timeout, TimeoutValue};
use crate::Error;

/// `[routing]` as written: re-run tag → eval names, with their places.
pub type RoutingConfig = BTreeMap<Spanned<String>, Spanned<Vec<Spanned<String>>>>;

/// One `[evals.NAME]` table: an eval suite `toolpin evals run` can run
/// against the pinned and the live catalog (docs/evals.md).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EvalConfig {
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
pub(crate) fn resolve_evals(
    evals: BTreeMap<Spanned<String>, EvalConfig>,
    routing: Option<RoutingConfig>,
    doc: &Document,
    dir: &Path,
) -> Result<Evals, Error> {
    let mut out = Evals::default();
    for (name, cfg) in evals {
        let span = name.span();
        let name = name.into_inner();
        check_name(&name).map_err(|m| doc.error_at(span.start, m))?;
        let eval = resolve_eval(name.clone(), cfg, doc, dir)?;
        out.evals.insert(name, eval);
    }
    out.routing = resolve_routing(routing.unwrap_or_default(), &out, doc)?;
    Ok(out)
}

/// Why `name` cannot name an eval.
fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err(format!(
            "evals.{name:?}: an eval name may hold only letters, digits, '-' and '_'"
        ));
    }
    if name == "manifests" {
        return Err("evals.manifests: the name `manifests` is taken by the directory that holds the catalogs `toolpin evals run` writes".into());
    }
    Ok(())
}

/// One `[evals.NAME]` table checked; `cwd` is read below `dir`.
fn resolve_eval(name: String, cfg: EvalConfig, doc: &Document, dir: &Path) -> Result<Eval, Error> {
    let run_span = cfg.run.span();
    let run = cfg.run.into_inner();
    if run.trim().is_empty() {
        return Err(doc.error_at(
            run_span.start,
            format!("evals.{name}: `run` must be a shell command, e.g. run = \"pytest evals -q\""),
        ));
    }
    let timeout = match cfg.timeout {
        None => None,
        Some(t) => Some(
            parse_timeout("timeout", t.get_ref())
                .map_err(|m| doc.error_at(t.span().start, format!("evals.{name}: {m}")))?,
        ),
    };
    let env = eval_env(&name, cfg.env, doc)?;
    let cwd = match &cfg.cwd {
        Some(c) => dir.join(c),
        None if dir.as_os_str().is_empty() => PathBuf::from("."),
        None => dir.to_path_buf(),
    };
    Ok(Eval {
        name,
        run,
        manifest: cfg.manifest.unwrap_or(ToolFormat::Mcp),
        cwd,
        timeout,
        env,
    })
}

/// An eval's `env`, kept as written: only its syntax is checked here (the
/// variables are read when the eval runs, so `check` does not need them).
fn eval_env(
    name: &str,
    env: BTreeMap<Spanned<String>, Spanned<String>>,
    doc: &Document,
) -> Result<BTreeMap<String, String>, Error> {
    let mut out = BTreeMap::new();
    for (key, value) in env {
        let key_span = key.span();
        let key = key.into_inner();
        if EVAL_VARS.contains(&key.as_str()) {
            return Err(doc.error_at(
                key_span.start,
                format!("evals.{name}: `env.{key}` is set by toolpin for each run and cannot be configured"),
            ));
        }
        let value_span = value.span();
        let value = value.into_inner();
        expand(&value, &|_| Some(String::new())).map_err(|m| {
            doc.error_at(value_span.start, format!("evals.{name}: `env.{key}`: {m}"))
        })?;
        out.insert(key, value);
    }
    Ok(out)
}

/// `[routing]`: each tag's evals, which must be defined, sorted and each
/// once.
fn resolve_routing(
    routing: RoutingConfig,
    evals: &Evals,
    doc: &Document,
) -> Result<BTreeMap<String, Vec<String>>, Error> {
    let mut out = BTreeMap::new();
    for (tag, names) in routing {
        let mut list: Vec<String> = Vec::new();
        for name in names.into_inner() {
            if !evals.evals.contains_key(name.get_ref()) {
                return Err(doc.error_at(
                    name.span().start,
                    format!(
                        "routing.{}: no eval named {:?}; define [evals.{}] (defined: {})",
                        tag.get_ref(),
                        name.get_ref(),
                        name.get_ref(),
                        evals.names()
                    ),
                ));
            }
            if !list.contains(name.get_ref()) {
                list.push(name.into_inner());
            }
        }
        list.sort();
        out.insert(tag.into_inner(), list);
    }
    Ok(out)
}

/// `[routing]`'s tags with their places, for a check against the re-run
/// tags the drift engine knows.
#[derive(Debug, Default, Deserialize)]
pub struct RoutingTags {
    routing: Option<BTreeMap<Spanned<String>, toml::Value>>,
}

/// `[routing]`'s tags, each checked against `known` (the drift engine's
/// re-run tags): an unknown one is an error located at its key.
pub fn routing_tags(doc: &Document, known: &[&str]) -> Result<(), Error> {
    let tags: RoutingTags = doc.parse()?;
    for tag in tags.routing.unwrap_or_default().keys() {
        if !known.contains(&tag.get_ref().as_str()) {
            return Err(doc.error_at(
                tag.span().start,
                format!(
                    "routing: unknown re-run tag {:?} (known: {})",
                    tag.get_ref(),
                    known.join(", ")
                ),
            ));
        }
    }
    Ok(())
}
