//! The contracts file, `toolpin.contracts.toml`: its model, parsing with
//! located errors (`file:LINE:COLUMN: message`, unknown keys refused), and
//! the checks that need no calls: validation against the lockfile
//! ([`Contracts::validate`]) and readiness for `run` ([`Contracts::check_ready`]).
//!
//! The assertion keys (`[…calls.expect]`) are defined and checked here
//! (a regex compiles, here too); `toolpin contract run` evaluates them
//! (`expect.rs`, `latency` in `behaviour.rs`).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::ops::Range;

use serde::Deserialize;
use serde_json::{Map, Value};
use toml::Spanned;
use toolpin_manifest::diagnostic::{Diagnostic, Kind, Location};
use toolpin_manifest::Catalog;

use crate::derive;

/// The `version` this build reads and writes.
pub const FORMAT_VERSION: i64 = 1;

/// Per-call timeout when none is set, and its bounds.
pub const DEFAULT_TIMEOUT_MS: u64 = 10_000;
pub const MAX_TIMEOUT_MS: u64 = 600_000;
/// Calls in flight at once when none is set, and the bound.
pub const DEFAULT_CONCURRENCY: u64 = 4;
pub const MAX_CONCURRENCY: u64 = 64;
/// How often each call is made when none is set, and the bound.
pub const DEFAULT_REPEATS: u64 = 1;
pub const MAX_REPEATS: u64 = 100;

/// A contracts file that cannot be used: one line, located where it can be.
pub use toolpin_manifest::diagnostic::Error;

/// Whether a contract may call a tool its pin does not call read-only.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SideEffects {
    /// The default: only read-only tools ([`read_only`]: `readOnlyHint:
    /// true`, and not also `destructiveHint: true`).
    None,
    /// `side_effects = "allowed"`: the tool is called with the arguments
    /// the contract gives, read-only or not.
    Allowed,
}

/// The JSON type a field must have.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum JsonType {
    String,
    Number,
    Integer,
    Boolean,
    Object,
    Array,
    Null,
}

/// The built-in value formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Format {
    /// RFC 3339 date-time with an offset (`Z` or `+02:00`).
    Rfc3339,
    /// RFC 3339 date-time without an offset.
    Rfc3339Local,
    /// RFC 3339 full-date, `2026-12-02`.
    Date,
    /// ISO 3166-1 alpha-2 country code, `DE`.
    #[serde(rename = "iso-3166-alpha-2")]
    Iso3166Alpha2,
    /// A country name, `Germany` (not a code).
    CountryName,
    /// ISO 4217 currency code, `EUR`.
    #[serde(rename = "iso-4217")]
    Iso4217,
    Email,
    Uri,
    Uuid,
}

/// The class of a failed call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ErrorClass {
    Validation,
    Auth,
    RateLimit,
    Timeout,
}

/// Sort direction for an ordering assertion.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    #[default]
    Ascending,
    Descending,
}

/// `fields`: a value is present at `pointer` (with `*` over array items),
/// with a JSON type when `type` is given.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FieldAssertion {
    pub pointer: Spanned<String>,
    #[serde(rename = "type")]
    pub json_type: Option<JsonType>,
}

/// `values`: the values seen at `pointer` are among `set`; with `exact`,
/// every value of `set` is seen too.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ValueSet {
    pub pointer: Spanned<String>,
    pub set: Spanned<Vec<Value>>,
    #[serde(default)]
    pub exact: bool,
}

/// `formats`: each value at `pointer` is a string of a built-in `format`,
/// matches `regex`, and/or has a length in `min_length..=max_length`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FormatAssertion {
    pub pointer: Spanned<String>,
    pub format: Option<Format>,
    pub regex: Option<Spanned<String>>,
    pub min_length: Option<u64>,
    pub max_length: Option<u64>,
}

/// `counts`: the array at `pointer` (or the matches of a wildcard pointer)
/// holds `min..=max` items.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Count {
    pub pointer: Spanned<String>,
    pub min: Option<u64>,
    pub max: Option<u64>,
}

/// `order`: the items of the array at `pointer` are sorted by the value at
/// the pointer `key` inside each item.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Order {
    pub pointer: Spanned<String>,
    pub key: Spanned<String>,
    #[serde(default)]
    pub direction: Direction,
}

/// `latency`: percentiles over the call's `repeats`, in milliseconds.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Latency {
    pub p50_ms: Option<Spanned<i64>>,
    pub p95_ms: Option<Spanned<i64>>,
}

/// A call's assertions, parsed and checked; `run` evaluates them
/// (`expect::check_expect`, `behaviour::over_budget` for `latency`).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    #[serde(default)]
    pub fields: Vec<FieldAssertion>,
    #[serde(default)]
    pub values: Vec<ValueSet>,
    #[serde(default)]
    pub formats: Vec<FormatAssertion>,
    #[serde(default)]
    pub counts: Vec<Count>,
    #[serde(default)]
    pub order: Vec<Order>,
    /// The result's `structuredContent` conforms to the pinned outputSchema.
    #[serde(default)]
    pub output_schema: Option<Spanned<bool>>,
    /// The call is a deliberate bad call that fails with this class.
    pub error: Option<ErrorClass>,
    pub latency: Option<Spanned<Latency>>,
}

/// Settings for every contract.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Defaults {
    pub timeout_ms: u64,
    pub concurrency: u64,
    pub repeats: u64,
}

/// One golden call.
#[derive(Debug)]
pub struct Call {
    pub name: String,
    pub enabled: bool,
    /// Added to the contract's arguments (replacing those of the same name).
    pub arguments: Map<String, Value>,
    pub timeout_ms: u64,
    pub repeats: u64,
    pub expect: Expect,
    argument_spans: BTreeMap<String, Range<usize>>,
}

/// A default probe: the call without `parameter` and the call with
/// `parameter = default` must give the same result shape and size.
#[derive(Debug)]
pub struct DefaultProbe {
    pub parameter: String,
    pub default: Value,
    pub enabled: bool,
    pub timeout_ms: u64,
    parameter_span: Range<usize>,
}

/// One tool's contract, `[tools."server/tool"]`.
#[derive(Debug)]
pub struct Contract {
    /// `server/tool`, as written.
    pub key: String,
    pub enabled: bool,
    pub side_effects: SideEffects,
    /// The arguments every call starts from.
    pub arguments: Map<String, Value>,
    /// Pointers (with `*`) whose values are volatile (ids, timestamps) and
    /// left out of the behaviour snapshot's value sets.
    pub volatile: Vec<String>,
    /// Regexes whose matching strings are volatile and left out of the
    /// value sets: `[defaults]`' `volatile_patterns`, then the contract's.
    pub volatile_patterns: Vec<String>,
    pub calls: Vec<Call>,
    pub default_probes: Vec<DefaultProbe>,
    key_span: Range<usize>,
    argument_spans: BTreeMap<String, Range<usize>>,
}

impl Contract {
    /// What this contract's observations leave out of the value sets, its
    /// patterns compiled (`run::plan` asks once per contract and shares the
    /// result between the contract's calls).
    pub fn volatile_values(&self) -> crate::behaviour::Volatile {
        crate::behaviour::Volatile {
            pointers: self.volatile.clone(),
            // Every pattern was checked to compile when the file was parsed.
            patterns: self
                .volatile_patterns
                .iter()
                .filter_map(|p| regex::Regex::new(p).ok())
                .collect::<Vec<_>>()
                .into(),
        }
    }

    /// The arguments `call` is made with: the contract's, then the call's.
    pub fn call_arguments(&self, call: &Call) -> Map<String, Value> {
        let mut args = self.arguments.clone();
        args.extend(call.arguments.iter().map(|(k, v)| (k.clone(), v.clone())));
        args
    }

    /// A default probe's two calls: without the parameter, and with the
    /// pinned default passed explicitly.
    pub fn probe_arguments(
        &self,
        probe: &DefaultProbe,
    ) -> (Map<String, Value>, Map<String, Value>) {
        let mut without = self.arguments.clone();
        without.remove(&probe.parameter);
        let mut with = without.clone();
        with.insert(probe.parameter.clone(), probe.default.clone());
        (without, with)
    }
}

/// A parsed contracts file.
#[derive(Debug)]
pub struct Contracts {
    pub origin: String,
    pub defaults: Defaults,
    /// By key, in key order.
    pub tools: Vec<Contract>,
    text: String,
}

/// What a valid file holds, for the one-line summary of `contract check`.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Summary {
    pub contracts: usize,
    pub calls: usize,
    pub probes: usize,
    /// (`server/tool`, argument) of every placeholder still in an active call.
    pub placeholders: Vec<(String, String)>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileIn {
    version: Spanned<i64>,
    #[serde(default)]
    defaults: DefaultsIn,
    #[serde(default)]
    tools: BTreeMap<Spanned<String>, ToolIn>,
}

#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct DefaultsIn {
    timeout_ms: Option<Spanned<i64>>,
    concurrency: Option<Spanned<i64>>,
    repeats: Option<Spanned<i64>>,
    #[serde(default)]
    volatile_patterns: Vec<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ToolIn {
    enabled: Option<bool>,
    side_effects: Option<Spanned<String>>,
    arguments: Option<Spanned<BTreeMap<Spanned<String>, Value>>>,
    #[serde(default)]
    volatile: Vec<Spanned<String>>,
    #[serde(default)]
    volatile_patterns: Vec<Spanned<String>>,
    timeout_ms: Option<Spanned<i64>>,
    repeats: Option<Spanned<i64>>,
    #[serde(default)]
    calls: Vec<CallIn>,
    #[serde(default)]
    default_probes: Vec<ProbeIn>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CallIn {
    name: Spanned<String>,
    enabled: Option<bool>,
    arguments: Option<Spanned<BTreeMap<Spanned<String>, Value>>>,
    timeout_ms: Option<Spanned<i64>>,
    repeats: Option<Spanned<i64>>,
    #[serde(default)]
    expect: Expect,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ProbeIn {
    parameter: Spanned<String>,
    default: Spanned<Value>,
    enabled: Option<bool>,
    timeout_ms: Option<Spanned<i64>>,
}

/// Locates messages in one file's text.
struct At<'a> {
    origin: &'a str,
    text: &'a str,
}

impl At<'_> {
    fn error(&self, span: &Range<usize>, message: impl fmt::Display) -> Error {
        Diagnostic::schema(self.origin, self.text, span.start, message).into()
    }

    /// An integer setting within `1..=max`, or `default` when absent.
    fn bounded(
        &self,
        value: &Option<Spanned<i64>>,
        what: &str,
        max: u64,
        default: u64,
    ) -> Result<u64, Error> {
        let Some(v) = value else {
            return Ok(default);
        };
        match u64::try_from(*v.get_ref()) {
            Ok(n) if (1..=max).contains(&n) => Ok(n),
            _ => Err(self.error(
                &v.span(),
                format!("{what} must be between 1 and {max}, not {}", v.get_ref()),
            )),
        }
    }

    /// A regex (the `regex` crate's syntax) that compiles.
    fn regex(&self, r: &Spanned<String>, what: &str) -> Result<(), Error> {
        regex::Regex::new(r.get_ref()).map(|_| ()).map_err(|e| {
            let why = e.to_string();
            let why = why
                .lines()
                .last()
                .unwrap_or("")
                .trim()
                .trim_start_matches("error: ");
            self.error(
                &r.span(),
                format!("{what}: {:?} is not a valid regex: {why}", r.get_ref()),
            )
        })
    }

    /// A result pointer: empty, or `/`-separated segments (`*` for every
    /// array item) with `~0` and `~1` the only escapes.
    fn pointer(&self, p: &Spanned<String>, what: &str) -> Result<(), Error> {
        let text = p.get_ref();
        let bad_escape = text
            .char_indices()
            .any(|(i, c)| c == '~' && !matches!(text[i + 1..].chars().next(), Some('0' | '1')));
        if !(text.is_empty() || text.starts_with('/')) || bad_escape {
            return Err(self.error(
                &p.span(),
                format!("{what}: {text:?} is not a JSON pointer (\"\" or \"/a/*/b\", ~0 for ~ and ~1 for /)"),
            ));
        }
        Ok(())
    }
}

/// `side_effects = "none" | "allowed"` (none when not given).
fn side_effects(
    at: &At,
    name: &str,
    value: &Option<Spanned<String>>,
) -> Result<SideEffects, Error> {
    match value {
        None => Ok(SideEffects::None),
        Some(s) if s.get_ref() == "none" => Ok(SideEffects::None),
        Some(s) if s.get_ref() == "allowed" => Ok(SideEffects::Allowed),
        Some(s) => Err(at.error(
            &s.span(),
            format!(
                "{name}: side_effects must be \"none\" or \"allowed\", not {:?}",
                s.get_ref()
            ),
        )),
    }
}

/// Arguments as JSON, with where each one is written.
#[allow(clippy::type_complexity)]
fn parse_arguments(
    at: &At,
    what: &str,
    given: Option<Spanned<BTreeMap<Spanned<String>, Value>>>,
) -> Result<(Map<String, Value>, BTreeMap<String, Range<usize>>), Error> {
    let mut args = Map::new();
    let mut spans = BTreeMap::new();
    for (k, v) in given.map(Spanned::into_inner).unwrap_or_default() {
        if !json_only(&v) {
            return Err(at.error(
                &k.span(),
                format!(
                    "{what}: argument `{}`: a TOML date is not JSON; write it as a string",
                    k.get_ref()
                ),
            ));
        }
        spans.insert(k.get_ref().clone(), k.span());
        args.insert(k.into_inner(), v);
    }
    Ok((args, spans))
}

/// Rejects TOML dates in arguments: JSON has none.
fn json_only(value: &Value) -> bool {
    match value {
        Value::Object(map) => {
            !map.contains_key("$__toml_private_datetime") && map.values().all(json_only)
        }
        Value::Array(items) => items.iter().all(json_only),
        _ => true,
    }
}

/// `tools."s/t"` for messages.
fn label(key: &str) -> String {
    format!("tools.{key:?}")
}

/// The toml crate's parse error, located.
fn toml_error(origin: &str, text: &str, e: &toml::de::Error) -> Error {
    let message = e.message().trim().replace('\n', " ");
    let Some(span) = e.span() else {
        return Error::new(format!("{origin}: {message}"));
    };
    // Name the key for type errors, whose message only names the value.
    let start = span.start.min(text.len());
    let line_start = text
        .get(..start)
        .and_then(|before| before.rfind('\n'))
        .map_or(0, |i| i + 1);
    // The innermost `key =` before the value on its line.
    let key = text
        .get(line_start..start)
        .and_then(|before| before.rsplit_once('='))
        .and_then(|(k, _)| k.rsplit([',', '{']).next())
        .map(str::trim)
        .filter(|k| !k.is_empty() && !k.starts_with('[') && !k.starts_with('#'));
    let message = match key {
        Some(k) if !message.contains(&format!("`{k}`")) => format!("key `{k}`: {message}"),
        _ => message,
    };
    Diagnostic::new(
        Kind::Syntax,
        Location::in_text(origin, text, span.start),
        message,
    )
    .into()
}

impl Contracts {
    /// Parses a contracts file. Structure, types, unknown keys, bounds,
    /// pointers and assertions are checked here; the lockfile in
    /// [`Contracts::validate`].
    pub fn parse(text: &str, origin: &str) -> Result<Self, Error> {
        let file: FileIn = toml::from_str(text).map_err(|e| toml_error(origin, text, &e))?;
        let at = At { origin, text };
        if *file.version.get_ref() != FORMAT_VERSION {
            return Err(at.error(
                &file.version.span(),
                format!(
                    "version {} is not supported by this toolpin (it reads version {FORMAT_VERSION})",
                    file.version.get_ref()
                ),
            ));
        }
        let d = &file.defaults;
        let defaults = Defaults {
            timeout_ms: at.bounded(
                &d.timeout_ms,
                "defaults.timeout_ms",
                MAX_TIMEOUT_MS,
                DEFAULT_TIMEOUT_MS,
            )?,
            concurrency: at.bounded(
                &d.concurrency,
                "defaults.concurrency",
                MAX_CONCURRENCY,
                DEFAULT_CONCURRENCY,
            )?,
            repeats: at.bounded(&d.repeats, "defaults.repeats", MAX_REPEATS, DEFAULT_REPEATS)?,
        };
        for r in &d.volatile_patterns {
            at.regex(r, "defaults.volatile_patterns")?;
        }
        let patterns: Vec<String> = d
            .volatile_patterns
            .iter()
            .map(|r| r.get_ref().clone())
            .collect();
        let mut tools = Vec::new();
        for (key, tool) in file.tools {
            tools.push(Self::contract(&at, &defaults, &patterns, key, tool)?);
        }
        Ok(Self {
            origin: origin.to_string(),
            defaults,
            tools,
            text: text.to_string(),
        })
    }

    fn contract(
        at: &At,
        defaults: &Defaults,
        default_patterns: &[String],
        key: Spanned<String>,
        tool: ToolIn,
    ) -> Result<Contract, Error> {
        let key_span = key.span();
        let key = key.into_inner();
        let name = label(&key);
        if !key
            .split_once('/')
            .is_some_and(|(s, t)| !s.is_empty() && !t.is_empty())
        {
            return Err(at.error(
                &key_span,
                format!("{name}: a contract is named \"server/tool\", as the lockfile pins it"),
            ));
        }
        let side_effects = side_effects(at, &name, &tool.side_effects)?;
        let (arguments, argument_spans) = parse_arguments(at, &name, tool.arguments)?;
        for v in &tool.volatile {
            at.pointer(v, &format!("{name}: volatile"))?;
        }
        for r in &tool.volatile_patterns {
            at.regex(r, &format!("{name}: volatile_patterns"))?;
        }
        let volatile_patterns = default_patterns
            .iter()
            .cloned()
            .chain(tool.volatile_patterns.iter().map(|r| r.get_ref().clone()))
            .collect();
        let timeout_ms = at.bounded(
            &tool.timeout_ms,
            &format!("{name}: timeout_ms"),
            MAX_TIMEOUT_MS,
            defaults.timeout_ms,
        )?;
        let repeats = at.bounded(
            &tool.repeats,
            &format!("{name}: repeats"),
            MAX_REPEATS,
            defaults.repeats,
        )?;
        let mut calls: Vec<Call> = Vec::new();
        for call in tool.calls {
            let call = Self::call(at, &name, &calls, call, (timeout_ms, repeats))?;
            calls.push(call);
        }
        let mut default_probes: Vec<DefaultProbe> = Vec::new();
        for probe in tool.default_probes {
            let probe = Self::default_probe(at, &name, &default_probes, probe, timeout_ms)?;
            default_probes.push(probe);
        }
        Ok(Contract {
            key,
            enabled: tool.enabled.unwrap_or(true),
            side_effects,
            arguments,
            volatile: tool.volatile.into_iter().map(Spanned::into_inner).collect(),
            volatile_patterns,
            calls,
            default_probes,
            key_span,
            argument_spans,
        })
    }

    /// One `[[…calls]]` entry; `calls` are the tool's calls before it,
    /// `(timeout_ms, repeats)` the tool's.
    fn call(
        at: &At,
        name: &str,
        calls: &[Call],
        call: CallIn,
        (timeout_ms, repeats): (u64, u64),
    ) -> Result<Call, Error> {
        let call_name = call.name.get_ref().clone();
        let what = format!("{name}: call {call_name:?}");
        if call_name.trim().is_empty() {
            return Err(at.error(&call.name.span(), format!("{name}: a call needs a name")));
        }
        if calls.iter().any(|c| c.name == call_name) {
            return Err(at.error(
                &call.name.span(),
                format!("{name}: two calls are named {call_name:?}"),
            ));
        }
        let (arguments, argument_spans) = parse_arguments(at, &what, call.arguments)?;
        let call_timeout = at.bounded(
            &call.timeout_ms,
            &format!("{what}: timeout_ms"),
            MAX_TIMEOUT_MS,
            timeout_ms,
        )?;
        let call_repeats = at.bounded(
            &call.repeats,
            &format!("{what}: repeats"),
            MAX_REPEATS,
            repeats,
        )?;
        check_expect(at, &what, &call.expect, call_timeout)?;
        Ok(Call {
            name: call_name,
            enabled: call.enabled.unwrap_or(true),
            arguments,
            timeout_ms: call_timeout,
            repeats: call_repeats,
            expect: call.expect,
            argument_spans,
        })
    }

    /// One `[[…default_probes]]` entry; `probes` are the tool's probes
    /// before it, `timeout_ms` the tool's.
    fn default_probe(
        at: &At,
        name: &str,
        probes: &[DefaultProbe],
        probe: ProbeIn,
        timeout_ms: u64,
    ) -> Result<DefaultProbe, Error> {
        let parameter = probe.parameter.get_ref().clone();
        if parameter.is_empty() {
            return Err(at.error(
                &probe.parameter.span(),
                format!("{name}: a default probe needs a parameter"),
            ));
        }
        if probes.iter().any(|p| p.parameter == parameter) {
            return Err(at.error(
                &probe.parameter.span(),
                format!("{name}: two default probes for {parameter:?}"),
            ));
        }
        if !json_only(probe.default.get_ref()) {
            return Err(at.error(
                &probe.default.span(),
                format!("{name}: default probe {parameter:?}: a TOML date is not JSON; write it as a string"),
            ));
        }
        let timeout = at.bounded(
            &probe.timeout_ms,
            &format!("{name}: default probe {parameter:?}: timeout_ms"),
            MAX_TIMEOUT_MS,
            timeout_ms,
        )?;
        Ok(DefaultProbe {
            parameter,
            default: probe.default.into_inner(),
            enabled: probe.enabled.unwrap_or(true),
            timeout_ms: timeout,
            parameter_span: probe.parameter.span(),
        })
    }

    fn at(&self) -> At<'_> {
        At {
            origin: &self.origin,
            text: &self.text,
        }
    }

    /// Checks the contracts against the lockfile `catalog` (read from
    /// `lockfile`, for messages): every contract names a pinned tool; a
    /// tool whose pinned annotations do not say `readOnlyHint: true` needs
    /// `side_effects = "allowed"` (enabled or not); a default probe names a
    /// parameter of the pinned inputSchema; `output_schema = true` needs a
    /// pinned outputSchema.
    pub fn validate(&self, catalog: &Catalog, lockfile: &str) -> Result<Summary, Error> {
        let at = self.at();
        let mut summary = Summary::default();
        for contract in &self.tools {
            let name = label(&contract.key);
            let pinned = contract
                .key
                .split_once('/')
                .and_then(|(server, tool)| catalog.servers.get(server)?.tools.get(tool));
            let Some(pinned) = pinned else {
                let known: Vec<String> = catalog
                    .tools()
                    .take(10)
                    .map(|(tool, server, _)| format!("{server}/{tool}"))
                    .collect();
                let more = catalog.tools().count().saturating_sub(known.len());
                let known = if known.is_empty() {
                    "none".to_string()
                } else if more > 0 {
                    format!("{}, and {more} more", known.join(", "))
                } else {
                    known.join(", ")
                };
                // A tool named without its server's prefix.
                let hint = contract
                    .key
                    .split_once('/')
                    .and_then(|(server, tool)| {
                        let pin = catalog.servers.get(server)?;
                        pin.tools
                            .keys()
                            .find(|k| k.ends_with(tool) && k.len() > tool.len())
                            .map(|k| format!("; did you mean \"{server}/{k}\"?"))
                    })
                    .unwrap_or_default();
                return Err(at.error(
                    &contract.key_span,
                    format!("{name}: no such tool is pinned in {lockfile} (pinned: {known}){hint}"),
                ));
            };
            let tool = pinned.value();
            if let (Some(why), SideEffects::None) = (not_read_only(&tool), contract.side_effects) {
                return Err(at.error(
                    &contract.key_span,
                    format!(
                        "{name}: the pinned tool is not read-only ({why}); set side_effects = \"allowed\" to call it with the arguments given, or remove the contract"
                    ),
                ));
            }
            let parameters = parameters(tool.get("inputSchema"));
            for probe in &contract.default_probes {
                if !parameters.contains(&probe.parameter) {
                    return Err(at.error(
                        &probe.parameter_span,
                        format!(
                            "{name}: default probe {:?}: not a parameter of the pinned inputSchema",
                            probe.parameter
                        ),
                    ));
                }
            }
            for call in &contract.calls {
                if let Some(o) = &call.expect.output_schema {
                    if *o.get_ref() && tool.get("outputSchema").is_none() {
                        return Err(at.error(
                            &o.span(),
                            format!("{name}: call {:?}: output_schema = true, but the pinned tool has no outputSchema", call.name),
                        ));
                    }
                }
            }
            summary.contracts += 1;
            if contract.enabled {
                summary.calls += contract.calls.iter().filter(|c| c.enabled).count();
                summary.probes += contract.default_probes.iter().filter(|p| p.enabled).count();
            }
        }
        summary.placeholders = self
            .placeholders()
            .into_iter()
            .map(|(key, arg, _)| (key, arg))
            .collect();
        Ok(summary)
    }

    /// Every placeholder in an active call: (`server/tool`, argument, where).
    fn placeholders(&self) -> Vec<(String, String, Range<usize>)> {
        let mut out: Vec<(String, String, Range<usize>)> = Vec::new();
        let mut push = |key: &str, arg: &str, spans: &BTreeMap<String, Range<usize>>| {
            if !out.iter().any(|(k, a, _)| k == key && a == arg) {
                let span = spans.get(arg).cloned().unwrap_or_default();
                out.push((key.to_string(), arg.to_string(), span));
            }
        };
        for c in self.tools.iter().filter(|c| c.enabled) {
            for call in c.calls.iter().filter(|call| call.enabled) {
                for (arg, value) in &call.arguments {
                    if holds_placeholder(value) {
                        push(&c.key, arg, &call.argument_spans);
                    }
                }
                for (arg, value) in &c.arguments {
                    if !call.arguments.contains_key(arg) && holds_placeholder(value) {
                        push(&c.key, arg, &c.argument_spans);
                    }
                }
            }
            for probe in c.default_probes.iter().filter(|p| p.enabled) {
                for (arg, value) in &c.arguments {
                    if arg != &probe.parameter && holds_placeholder(value) {
                        push(&c.key, arg, &c.argument_spans);
                    }
                }
            }
        }
        out
    }

    /// What `run` checks before it calls anything: no active call (nor
    /// default probe) still holds a placeholder argument that `init`
    /// wrote (`"<FILL IN: …>"`).
    pub fn check_ready(&self) -> Result<(), Error> {
        let placeholders = self.placeholders();
        let Some((key, arg, span)) = placeholders.first() else {
            return Ok(());
        };
        let more = match placeholders.len() - 1 {
            0 => String::new(),
            n => format!(
                " ({n} more placeholder{} after it)",
                if n == 1 { "" } else { "s" }
            ),
        };
        Err(self.at().error(
            span,
            format!(
                "{}: argument `{arg}` is still a placeholder; give it a real value (or set enabled = false) before the calls are made{more}",
                label(key)
            ),
        ))
    }
}

/// Whether `value` holds an `init` placeholder anywhere.
fn holds_placeholder(value: &Value) -> bool {
    match value {
        Value::Array(items) => items.iter().any(holds_placeholder),
        Value::Object(map) => map.values().any(holds_placeholder),
        v => derive::is_placeholder(v),
    }
}

/// Whether a tool is safe to call without `side_effects = "allowed"`: its
/// annotations say `readOnlyHint: true` and do not also say
/// `destructiveHint: true` (a tool claiming both is taken at its worst).
/// The one test of safety: `init` writes active contracts for these tools
/// only, [`Contracts::validate`] refuses a contract for any other, and
/// `record` and `run` call a tool whose live definition moved from its pin
/// only while it still passes it (`crate::run::Gate`).
pub fn read_only(tool: &Value) -> bool {
    not_read_only(tool).is_none()
}

/// Why a tool is not [`read_only`], in words for a message; `None` when it
/// is.
pub fn not_read_only(tool: &Value) -> Option<String> {
    let Some(annotations) = tool.get("annotations").and_then(Value::as_object) else {
        return Some("it has no annotations, so it is not read-only".into());
    };
    let hint = |key: &str| annotations.get(key).map(Value::to_string);
    match (
        hint("readOnlyHint").as_deref(),
        hint("destructiveHint").as_deref(),
    ) {
        (Some("true"), Some("true")) => {
            Some("its annotations say both readOnlyHint: true and destructiveHint: true".into())
        }
        (Some("true"), _) => None,
        (None, _) => Some("its annotations do not say readOnlyHint: true".into()),
        (Some(ro), Some("true")) => Some(format!(
            "its annotations say readOnlyHint: {ro} and destructiveHint: true"
        )),
        (Some(ro), _) => Some(format!("its annotations say readOnlyHint: {ro}")),
    }
}

/// The top-level parameter names of an inputSchema (following `$ref`s).
fn parameters(schema: Option<&Value>) -> BTreeSet<String> {
    let Some(root) = schema else {
        return BTreeSet::new();
    };
    derive::chain(root, root)
        .iter()
        .find_map(|s| s.get("properties").and_then(Value::as_object))
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default()
}

/// The assertions of one call: pointers, non-empty sets, sane bounds.
fn check_expect(at: &At, what: &str, expect: &Expect, timeout_ms: u64) -> Result<(), Error> {
    for f in &expect.fields {
        at.pointer(&f.pointer, &format!("{what}: expect.fields"))?;
    }
    for v in &expect.values {
        at.pointer(&v.pointer, &format!("{what}: expect.values"))?;
        if v.set.get_ref().is_empty() {
            return Err(at.error(
                &v.set.span(),
                format!("{what}: expect.values: `set` is empty"),
            ));
        }
        if !v.set.get_ref().iter().all(json_only) {
            return Err(at.error(
                &v.set.span(),
                format!("{what}: expect.values: a TOML date is not JSON; write it as a string"),
            ));
        }
    }
    for f in &expect.formats {
        at.pointer(&f.pointer, &format!("{what}: expect.formats"))?;
        if let Some(r) = &f.regex {
            at.regex(r, &format!("{what}: expect.formats"))?;
        }
        if f.format.is_none()
            && f.regex.is_none()
            && f.min_length.is_none()
            && f.max_length.is_none()
        {
            return Err(at.error(
                &f.pointer.span(),
                format!(
                    "{what}: expect.formats: give `format`, `regex`, `min_length` or `max_length`"
                ),
            ));
        }
        if let (Some(lo), Some(hi)) = (f.min_length, f.max_length) {
            if lo > hi {
                return Err(at.error(
                    &f.pointer.span(),
                    format!("{what}: expect.formats: min_length {lo} is above max_length {hi}"),
                ));
            }
        }
    }
    for c in &expect.counts {
        at.pointer(&c.pointer, &format!("{what}: expect.counts"))?;
        match (c.min, c.max) {
            (None, None) => {
                return Err(at.error(
                    &c.pointer.span(),
                    format!("{what}: expect.counts: give `min`, `max` or both"),
                ))
            }
            (Some(lo), Some(hi)) if lo > hi => {
                return Err(at.error(
                    &c.pointer.span(),
                    format!("{what}: expect.counts: min {lo} is above max {hi}"),
                ))
            }
            _ => {}
        }
    }
    for o in &expect.order {
        at.pointer(&o.pointer, &format!("{what}: expect.order"))?;
        at.pointer(&o.key, &format!("{what}: expect.order key"))?;
    }
    if let Some(latency) = &expect.latency {
        let l = latency.get_ref();
        if l.p50_ms.is_none() && l.p95_ms.is_none() {
            return Err(at.error(
                &latency.span(),
                format!("{what}: expect.latency: give `p50_ms`, `p95_ms` or both"),
            ));
        }
        let budget = |key: &str, v: &Option<Spanned<i64>>| {
            at.bounded(
                v,
                &format!("{what}: expect.latency.{key} (at most the call's timeout_ms)"),
                timeout_ms,
                0,
            )
        };
        let p50 = budget("p50_ms", &l.p50_ms)?;
        let p95 = budget("p95_ms", &l.p95_ms)?;
        if let (Some(_), Some(given)) = (&l.p50_ms, &l.p95_ms) {
            if p50 > p95 {
                return Err(at.error(
                    &given.span(),
                    format!("{what}: expect.latency: p95_ms is below p50_ms"),
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn refund() -> Catalog {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/refund/toolpin.lock");
        toolpin_manifest::lockfile::read(&path).expect("the refund lockfile")
    }

    fn parse(text: &str) -> Result<Contracts, String> {
        Contracts::parse(text, "c.toml").map_err(|e| e.to_string())
    }

    fn invalid(text: &str) -> String {
        match parse(text) {
            Ok(c) => c
                .validate(&refund(), "toolpin.lock")
                .expect_err("invalid")
                .to_string(),
            Err(e) => e,
        }
    }

    const SEARCH: &str = "version = 1\n[tools.\"orders/orders__search_orders\"]\n";

    #[test]
    fn a_full_contract_parses() {
        let text = r#"
version = 1
[defaults]
timeout_ms = 2000
concurrency = 2
repeats = 3

[tools."orders/orders__search_orders"]
volatile = ["/structuredContent/orders/*/id"]
arguments = { page_size = 10 }
repeats = 5

[[tools."orders/orders__search_orders".calls]]
name = "golden"
arguments = { status = "open", nested = { a = [1, 2] } }
timeout_ms = 500

[tools."orders/orders__search_orders".calls.expect]
fields = [{ pointer = "/structuredContent/orders/*/status", type = "string" }]
values = [{ pointer = "/structuredContent/orders/*/status", set = ["open", "shipped"], exact = true }]
formats = [
  { pointer = "/structuredContent/orders/*/country", format = "iso-3166-alpha-2" },
  { pointer = "/structuredContent/orders/*/id", regex = "^ORD-[0-9]+$", min_length = 5, max_length = 12 },
]
counts = [{ pointer = "/structuredContent/orders", min = 1, max = 50 }]
order = [{ pointer = "/structuredContent/orders", key = "/created", direction = "descending" }]
latency = { p50_ms = 100, p95_ms = 400 }

[[tools."orders/orders__search_orders".calls]]
name = "bad page size"
arguments = { page_size = 0 }
expect = { error = "validation" }

[[tools."orders/orders__search_orders".default_probes]]
parameter = "page_size"
default = 50
"#;
        let c = parse(text).expect("parses");
        assert_eq!(
            c.defaults,
            Defaults {
                timeout_ms: 2000,
                concurrency: 2,
                repeats: 3
            }
        );
        let t = &c.tools[0];
        assert_eq!(t.key, "orders/orders__search_orders");
        assert_eq!(t.volatile, vec!["/structuredContent/orders/*/id"]);
        assert_eq!((t.calls[0].timeout_ms, t.calls[0].repeats), (500, 5));
        assert_eq!((t.calls[1].timeout_ms, t.calls[1].repeats), (2000, 5));
        assert_eq!(
            Value::Object(t.call_arguments(&t.calls[0])),
            serde_json::json!({"page_size": 10, "status": "open", "nested": {"a": [1, 2]}})
        );
        let e = &t.calls[0].expect;
        assert_eq!(e.formats[0].format, Some(Format::Iso3166Alpha2));
        assert_eq!(e.order[0].direction, Direction::Descending);
        assert!(e.values[0].exact);
        assert_eq!(t.calls[1].expect.error, Some(ErrorClass::Validation));
        let (without, with) = t.probe_arguments(&t.default_probes[0]);
        assert_eq!(Value::Object(without), serde_json::json!({}));
        assert_eq!(Value::Object(with), serde_json::json!({"page_size": 50}));
        let s = c.validate(&refund(), "toolpin.lock").expect("valid");
        assert_eq!((s.contracts, s.calls, s.probes), (1, 2, 1));
        c.check_ready().expect("no placeholders");
    }

    #[test]
    fn parse_errors_are_located() {
        let cases: &[(&str, &str)] = &[
            ("version = 1\nbogus = 1\n", "c.toml:2:1: unknown field `bogus`"),
            ("version = 2\n", "c.toml:1:11: version 2 is not supported"),
            ("version = 1\n[defaults]\ntimeout_ms = 0\n", "c.toml:3:14: defaults.timeout_ms must be between 1 and 600000, not 0"),
            ("version = 1\n[defaults]\nconcurrency = 65\n", "c.toml:3:15: defaults.concurrency must be between 1 and 64, not 65"),
            ("version = 1\n[defaults]\nrepeats = -1\n", "c.toml:3:11: defaults.repeats must be between 1 and 100, not -1"),
            ("version = 1\n[defaults]\ntimeout_ms = \"10s\"\n", "c.toml:3:14: key `timeout_ms`: invalid type: string \"10s\", expected i64"),
            ("version = 1\n[tools.nope]\n", "c.toml:2:8: tools.\"nope\": a contract is named \"server/tool\""),
            (&format!("{SEARCH}side_effects = \"yes\"\n"), "c.toml:3:16: tools.\"orders/orders__search_orders\": side_effects must be \"none\" or \"allowed\", not \"yes\""),
            (&format!("{SEARCH}colour = 1\n"), "c.toml:3:1: unknown field `colour`"),
            (&format!("{SEARCH}[[tools.\"orders/orders__search_orders\".calls]]\nname = \"a\"\nrepeats = 1000\n"), "c.toml:5:11: tools.\"orders/orders__search_orders\": call \"a\": repeats must be between 1 and 100, not 1000"),
            (&format!("{SEARCH}[[tools.\"orders/orders__search_orders\".calls]]\nname = \"a\"\n[[tools.\"orders/orders__search_orders\".calls]]\nname = \"a\"\n"), "c.toml:6:8: tools.\"orders/orders__search_orders\": two calls are named \"a\""),
            (&format!("{SEARCH}[[tools.\"orders/orders__search_orders\".calls]]\nname = \"a\"\nexpect = {{ fields = [{{ pointer = \"x/y\" }}] }}\n"), "c.toml:5:34: tools.\"orders/orders__search_orders\": call \"a\": expect.fields: \"x/y\" is not a JSON pointer"),
            (&format!("{SEARCH}[[tools.\"orders/orders__search_orders\".calls]]\nname = \"a\"\nexpect = {{ counts = [{{ pointer = \"/x\", min = 3, max = 2 }}] }}\n"), "c.toml:5:34: tools.\"orders/orders__search_orders\": call \"a\": expect.counts: min 3 is above max 2"),
            (&format!("{SEARCH}[[tools.\"orders/orders__search_orders\".calls]]\nname = \"a\"\nexpect = {{ error = \"teapot\" }}\n"), "c.toml:5:20: key `error`: unknown variant `teapot`, expected one of `validation`, `auth`, `rate-limit`, `timeout`"),
            (&format!("{SEARCH}[[tools.\"orders/orders__search_orders\".calls]]\nname = \"a\"\nexpect = {{ latency = {{ p50_ms = 500, p95_ms = 100 }} }}\n"), "c.toml:5:47: tools.\"orders/orders__search_orders\": call \"a\": expect.latency: p95_ms is below p50_ms"),
            (&format!("{SEARCH}[[tools.\"orders/orders__search_orders\".calls]]\nname = \"a\"\nexpect = {{ latency = {{ p95_ms = 20000 }} }}\n"), "c.toml:5:33: tools.\"orders/orders__search_orders\": call \"a\": expect.latency.p95_ms (at most the call's timeout_ms) must be between 1 and 10000, not 20000"),
            (&format!("{SEARCH}[[tools.\"orders/orders__search_orders\".calls]]\nname = \"a\"\nexpect = {{ values = [{{ pointer = \"/x\", set = [] }}] }}\n"), "expect.values: `set` is empty"),
            (&format!("{SEARCH}[[tools.\"orders/orders__search_orders\".calls]]\nname = \"a\"\nexpect = {{ formats = [{{ pointer = \"/x\" }}] }}\n"), "expect.formats: give `format`, `regex`, `min_length` or `max_length`"),
            (&format!("{SEARCH}arguments = {{ when = 2026-12-02 }}\n"), "c.toml:3:15: tools.\"orders/orders__search_orders\": argument `when`: a TOML date is not JSON"),
        ];
        for (text, want) in cases {
            let got = parse(text).expect_err(text);
            assert!(got.contains(want), "{text}\nwant {want:?}\n got {got:?}");
        }
    }

    #[test]
    fn read_only_means_read_only_and_not_destructive() {
        use serde_json::json;
        let tool = |a: Value| json!({"name": "t", "annotations": a});
        assert!(read_only(&tool(json!({"readOnlyHint": true}))));
        assert!(read_only(&tool(
            json!({"readOnlyHint": true, "destructiveHint": false})
        )));
        for (t, why) in [
            (
                tool(json!({"readOnlyHint": true, "destructiveHint": true})),
                "its annotations say both readOnlyHint: true and destructiveHint: true",
            ),
            (
                tool(json!({"readOnlyHint": false})),
                "its annotations say readOnlyHint: false",
            ),
            (
                tool(json!({"readOnlyHint": "true"})),
                "its annotations say readOnlyHint: \"true\"",
            ),
            (
                tool(json!({"destructiveHint": false})),
                "its annotations do not say readOnlyHint: true",
            ),
            (
                json!({"name": "t"}),
                "it has no annotations, so it is not read-only",
            ),
        ] {
            assert!(!read_only(&t), "{t}");
            assert_eq!(not_read_only(&t).as_deref(), Some(why), "{t}");
        }
    }

    #[test]
    fn safety_and_lockfile_errors() {
        // Not pinned.
        let e = invalid("version = 1\n[tools.\"orders/cancel_order\"]\n");
        assert!(
            e.starts_with("c.toml:2:8: tools.\"orders/cancel_order\": no such tool is pinned in toolpin.lock (pinned: billing/get_invoice, orders/orders__lookup_order, orders/orders__refund_order, orders/orders__search_orders)"),
            "{e}"
        );
        // Named without the server's prefix: the pinned name is suggested.
        let e = invalid("version = 1\n[tools.\"orders/lookup_order\"]\n");
        assert!(
            e.ends_with("; did you mean \"orders/orders__lookup_order\"?"),
            "{e}"
        );
        // Not read-only, and no side_effects = "allowed": refused, enabled or not.
        for extra in ["", "enabled = false\n", "side_effects = \"none\"\n"] {
            let e = invalid(&format!(
                "version = 1\n[tools.\"orders/orders__refund_order\"]\n{extra}"
            ));
            assert!(
                e.starts_with("c.toml:2:8: tools.\"orders/orders__refund_order\": the pinned tool is not read-only"),
                "{e}"
            );
            assert!(e.contains("side_effects = \"allowed\""), "{e}");
        }
        // No annotations at all is not read-only either.
        let e = invalid("version = 1\n[tools.\"billing/get_invoice\"]\n");
        assert!(e.contains("is not read-only"), "{e}");
        let ok = parse(
            "version = 1\n[tools.\"orders/orders__refund_order\"]\nside_effects = \"allowed\"\n",
        )
        .expect("parses");
        ok.validate(&refund(), "toolpin.lock").expect("allowed");
        // A default probe for a parameter the schema does not have.
        let e = invalid(&format!("{SEARCH}[[tools.\"orders/orders__search_orders\".default_probes]]\nparameter = \"limit\"\ndefault = 5\n"));
        assert!(e.starts_with("c.toml:4:13: tools.\"orders/orders__search_orders\": default probe \"limit\": not a parameter of the pinned inputSchema"), "{e}");
        // output_schema = true without a pinned outputSchema.
        let e = invalid(&format!("{SEARCH}[[tools.\"orders/orders__search_orders\".calls]]\nname = \"a\"\nexpect = {{ output_schema = true }}\n"));
        assert!(e.starts_with("c.toml:5:28: tools.\"orders/orders__search_orders\": call \"a\": output_schema = true, but the pinned tool has no outputSchema"), "{e}");
    }

    #[test]
    fn placeholders_in_active_calls_only() {
        let base = "version = 1\n[tools.\"orders/orders__lookup_order\"]\narguments = { order_id = \"<FILL IN: order_id (string)>\" }\n";
        // No call: nothing to refuse.
        parse(base)
            .expect("parses")
            .check_ready()
            .expect("no calls");
        let with_call =
            format!("{base}[[tools.\"orders/orders__lookup_order\".calls]]\nname = \"golden\"\n");
        let e = parse(&with_call)
            .expect("parses")
            .check_ready()
            .expect_err("placeholder")
            .to_string();
        assert_eq!(
            e,
            "c.toml:3:15: tools.\"orders/orders__lookup_order\": argument `order_id` is still a placeholder; give it a real value (or set enabled = false) before the calls are made"
        );
        // The call overrides it: ready.
        let overridden = format!("{with_call}arguments = {{ order_id = \"ORD-1\" }}\n");
        parse(&overridden)
            .expect("parses")
            .check_ready()
            .expect("overridden");
        // Disabled call, or disabled contract: ready.
        parse(&format!("{with_call}enabled = false\n"))
            .expect("parses")
            .check_ready()
            .expect("call disabled");
        let disabled = with_call.replace("]\narguments", "]\nenabled = false\narguments");
        parse(&disabled)
            .expect("parses")
            .check_ready()
            .expect("contract disabled");
        // Nested in a call's own arguments.
        let nested = format!("{base}[[tools.\"orders/orders__lookup_order\".calls]]\nname = \"g\"\narguments = {{ order_id = \"x\", filter = {{ ids = [\"<FILL IN: id (string)>\"] }} }}\n");
        let e = parse(&nested)
            .expect("parses")
            .check_ready()
            .expect_err("nested")
            .to_string();
        assert!(e.starts_with("c.toml:6:31: tools.\"orders/orders__lookup_order\": argument `filter` is still a placeholder"), "{e}");
    }

    #[test]
    fn the_example_in_the_docs_is_valid() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/contracts.md");
        let doc = std::fs::read_to_string(path).expect("docs/contracts.md");
        let block = doc
            .split("```toml\n")
            .nth(1)
            .and_then(|b| b.split("```").next())
            .expect("a toml block");
        let c = parse(block).expect("the example parses");
        let s = c
            .validate(&refund(), "toolpin.lock")
            .expect("and validates");
        assert_eq!((s.contracts, s.calls, s.probes), (1, 2, 1));
        assert_eq!(c.tools[0].calls[1].expect.values[0].set.get_ref().len(), 4);
    }
}
