//! The `record` source: run the agent's own command against a loopback
//! endpoint that speaks the model APIs, and pin the `tools` its framework
//! put into each model request, after every filter, rename, namespace and
//! schema conversion the framework does. docs/record.md is the user's page.
//!
//! - [`api`]: which request is which API, what is kept of it, the replies;
//! - [`endpoint`]: the HTTP server and its log of distinct tool arrays;
//! - [`instance`]: a minimal value of an output schema, for agents that
//!   want structured output;
//! - [`output`]: the document `toolpin record` prints;
//! - this file: running the command, the errors, and turning the log into
//!   catalogs (one per distinct array, or their union).

pub mod api;
pub mod endpoint;
pub mod instance;
pub mod output;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use toolpin_manifest::{Fingerprint, PinBuilder, ServerPin, Transform};

use crate::exec::{self, ExecError, ExecSpec};
use crate::format::{self, Format};
pub use api::Api;
pub use endpoint::RecordedArray;

/// What `[servers.NAME] record = […]` runs, and how its arrays are pinned.
#[derive(Clone, Debug)]
pub struct RecordSpec {
    pub argv: Vec<String>,
    /// Added to the inherited environment before toolpin's own variables
    /// (values already expanded).
    pub env: BTreeMap<String, String>,
    pub cwd: Option<PathBuf>,
    pub timeout: Duration,
    pub merge: Merge,
}

/// How several distinct tool arrays become catalogs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Merge {
    /// One catalog per distinct array, labelled by the position of the
    /// first request that sent it and its model (`agent#3:gpt-4o-mini`);
    /// a single array is the server itself.
    #[default]
    Distinct,
    /// One catalog of every tool any request carried, first seen first; a
    /// name sent with two different definitions is an error.
    Union,
}

impl Merge {
    pub fn parse(text: &str) -> Result<Merge, String> {
        match text {
            "distinct" => Ok(Merge::Distinct),
            "union" => Ok(Merge::Union),
            other => Err(format!(
                "{other:?} is not a merge; use \"distinct\" (a catalog per distinct tool array, the default) or \"union\" (one catalog of all their tools)"
            )),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Merge::Distinct => "distinct",
            Merge::Union => "union",
        }
    }
}

/// The dummy key every SDK is given: requests never leave the machine, and
/// the user's real keys are not handed to the recorded command.
pub const DUMMY_KEY: &str = "toolpin-record-dummy-key";

/// The variables toolpin sets for the recorded command, given the
/// endpoint's origin (`http://127.0.0.1:PORT`). Base URLs as each client
/// documents them: the OpenAI SDKs (Python, Node) and LangChain read a base
/// that ends in `/v1`; the Anthropic SDK appends `/v1/messages` itself;
/// google-genai appends `/v1beta/models/…`.
pub fn variables(origin: &str) -> Vec<(&'static str, String)> {
    let openai = format!("{origin}/v1");
    vec![
        // openai (Python, Node), OpenAI Agents SDK, pydantic-ai, Vercel AI
        // SDK's @ai-sdk/openai.
        ("OPENAI_BASE_URL", openai.clone()),
        // LangChain's ChatOpenAI and LiteLLM read this name first.
        ("OPENAI_API_BASE", openai),
        ("OPENAI_API_KEY", DUMMY_KEY.into()),
        // anthropic (Python, Node), @ai-sdk/anthropic, LangChain.
        ("ANTHROPIC_BASE_URL", origin.to_string()),
        ("ANTHROPIC_API_KEY", DUMMY_KEY.into()),
        // google-genai: the Gemini Developer API, not Vertex AI.
        ("GOOGLE_GEMINI_BASE_URL", origin.to_string()),
        ("GOOGLE_GENAI_USE_VERTEXAI", "false".into()),
        ("GEMINI_API_KEY", DUMMY_KEY.into()),
        ("GOOGLE_API_KEY", DUMMY_KEY.into()),
        ("GOOGLE_GENERATIVE_AI_API_KEY", DUMMY_KEY.into()),
        // The Agents SDK uploads traces to api.openai.com, not to the base
        // URL: with a dummy key that only fails, slowly, at exit.
        ("OPENAI_AGENTS_DISABLE_TRACING", "1".into()),
    ]
}

/// Why a recording failed; `Display` is one line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecordError {
    #[error("cannot start the recording endpoint on 127.0.0.1: {0}")]
    Listen(String),
    #[error("{0}")]
    Command(#[from] ExecError),
    #[error("`{command}` sent {count} request{} toolpin cannot read: {first}", if *.count == 1 { "" } else { "s" })]
    Unreadable {
        command: String,
        count: usize,
        first: String,
    },
    #[error("no request reached toolpin: does the client read OPENAI_BASE_URL? `{command}` exited without calling a model API while {variables} pointed at {origin}")]
    NoRequest {
        command: String,
        variables: String,
        origin: String,
    },
    #[error("merge = \"union\" needs one API, but the requests used {0}; pin each array with merge = \"distinct\"")]
    MixedApis(String),
    #[error("tool {name:?} differs between request {first} ({first_model}) and request {second} ({second_model}): a catalog pins one definition per name; record each agent with a `record` server of its own and a `prefix`")]
    Conflict {
        name: String,
        first: usize,
        first_model: String,
        second: usize,
        second_model: String,
    },
    #[error("request {request} ({api}): {reason}")]
    Tools {
        request: usize,
        api: &'static str,
        reason: String,
    },
}

/// What a recording caught.
#[derive(Debug)]
pub struct Recording {
    /// Model requests that reached toolpin.
    pub requests: usize,
    /// The API of the first of them.
    pub first_api: Option<Api>,
    /// The distinct tool arrays, first seen first.
    pub arrays: Vec<RecordedArray>,
}

/// Runs the command against a fresh endpoint and returns what its model
/// requests carried. The command's stdout is discarded; its stderr's tail
/// explains a failure.
pub async fn record(spec: &RecordSpec) -> Result<Recording, RecordError> {
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
        .await
        .map_err(|e| RecordError::Listen(e.to_string()))?;
    let port = listener
        .local_addr()
        .map_err(|e| RecordError::Listen(e.to_string()))?
        .port();
    let origin = format!("http://127.0.0.1:{port}");
    let ours = variables(&origin);
    let mut env = spec.env.clone();
    for (name, value) in &ours {
        env.insert((*name).to_string(), value.clone());
    }
    // A proxy configured for the agent's real traffic must not take the
    // loopback requests.
    for name in ["NO_PROXY", "no_proxy"] {
        let inherited = spec
            .env
            .get(name)
            .cloned()
            .or_else(|| std::env::var(name).ok())
            .filter(|v| !v.is_empty());
        let value = match inherited {
            Some(v) => format!("{v},127.0.0.1,localhost"),
            None => "127.0.0.1,localhost".into(),
        };
        env.insert(name.into(), value);
    }
    let exec_spec = ExecSpec {
        argv: spec.argv.clone(),
        env,
        cwd: spec.cwd.clone(),
        timeout: spec.timeout,
    };
    let endpoint = Arc::new(endpoint::Endpoint::default());
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(endpoint::serve(listener, Arc::clone(&endpoint), async {
        let _ = stop_rx.await;
    }));
    let ran = tokio::task::spawn_blocking(move || exec::run_quiet(&exec_spec)).await;
    let _ = stop_tx.send(());
    let _ = server.await;
    let log = endpoint.take();
    let command = exec::display_command(&spec.argv);
    let ran = ran.unwrap_or_else(|e| {
        Err(ExecError::Spawn {
            command: command.clone(),
            reason: format!("the task running it failed: {e}"),
        })
    });
    // A timeout says the most; then what toolpin could not read (which is
    // often why the command failed: its client got a 400); then the
    // command's own failure.
    if let Err(e @ ExecError::Timeout { .. }) = ran {
        return Err(e.into());
    }
    if let Some(first) = log.failures.first() {
        return Err(RecordError::Unreadable {
            command,
            count: log.failures.len(),
            first: first.clone(),
        });
    }
    ran?;
    if log.requests == 0 {
        let names: Vec<&str> = ours
            .iter()
            .filter(|(n, _)| n.ends_with("_BASE_URL") || n.ends_with("_API_BASE"))
            .map(|(n, _)| *n)
            .collect();
        return Err(RecordError::NoRequest {
            command,
            variables: names.join(", "),
            origin,
        });
    }
    Ok(Recording {
        requests: log.requests,
        first_api: log.first_api,
        arrays: log.arrays,
    })
}

/// A catalog to pin from a recording.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedCatalog {
    /// Appended to the server's name when a recording holds several
    /// distinct arrays (`#3:gpt-4o-mini`); `None` for the server itself.
    pub label: Option<String>,
    pub format: Format,
    /// Each tool with its format's envelope removed, in the order sent.
    pub tools: Vec<RecordedTool>,
    /// What the lockfile's session member records: the API, path, model,
    /// request position and tool order (no fingerprint reads it).
    pub session: Value,
    /// Tools not pinned (hosted tools that declare no function).
    pub warnings: Vec<String>,
}

/// One tool of a recorded array, envelope removed, held as compact JSON
/// text (a `Value` tree costs about ten times the text, and a recording may
/// hold hundreds of arrays until they are pinned).
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedTool {
    /// Its `name` member ("" without one: normalization reports it).
    pub name: String,
    /// The fingerprint of its canonical form: two arrays' tools of one
    /// name are the same definition when these are equal.
    pub digest: Fingerprint,
    pub json: String,
}

impl RecordedTool {
    fn new(tool: &Value, scratch: &mut Vec<u8>) -> Self {
        RecordedTool {
            name: tool_name(tool).to_string(),
            digest: Fingerprint::of_tool(tool, scratch),
            json: tool.to_string(),
        }
    }

    /// The tool as a tree. Its text was written from one, so it parses.
    pub fn value(&self) -> Value {
        serde_json::from_str(&self.json).unwrap_or(Value::Null)
    }
}

/// Turns a recording into the catalogs to pin. A recording whose requests
/// carried no tools is one empty catalog.
pub fn catalogs(recording: &Recording, merge: Merge) -> Result<Vec<RecordedCatalog>, RecordError> {
    let mut read = Vec::new();
    for array in &recording.arrays {
        read.push(read_array(array)?);
    }
    if read.is_empty() {
        return Ok(vec![RecordedCatalog {
            label: None,
            format: recording.first_api.unwrap_or(Api::OpenAiChat).format(),
            tools: Vec::new(),
            session: json!({"recorded": {"requests_without_tools": recording.requests}}),
            warnings: vec![format!(
                "{} model request{} reached toolpin, none with tools: nothing to pin",
                recording.requests,
                if recording.requests == 1 { "" } else { "s" }
            )],
        }]);
    }
    let first = first_sightings(recording, &read)?;
    match merge {
        Merge::Distinct => {
            let several = read.len() > 1;
            Ok(recording
                .arrays
                .iter()
                .zip(read)
                .zip(first)
                .map(|((array, (tools, warnings)), first)| {
                    let order = names(&tools);
                    // A tool an earlier array already carried (the same
                    // definition, `first_sightings` made sure) is pinned
                    // there; this array's order still names it.
                    let tools = tools
                        .into_iter()
                        .zip(first)
                        .filter_map(|(tool, first)| first.then_some(tool))
                        .collect();
                    RecordedCatalog {
                        label: several.then(|| label(array)),
                        format: array.api.format(),
                        session: json!({"recorded": {
                            "api": array.api.name(),
                            "path": array.path,
                            "model": array.model,
                            "request": array.first_request,
                            "order": order,
                        }}),
                        tools,
                        warnings,
                    }
                })
                .collect())
        }
        Merge::Union => union(recording, read, first),
    }
}

/// Per array, whether each of its tools is the first sighting of its name.
/// A catalog holds one definition per name (the model's view of a tool is
/// its name), so a name seen again must carry the same definition.
fn first_sightings(
    recording: &Recording,
    read: &[ReadArray],
) -> Result<Vec<Vec<bool>>, RecordError> {
    let mut seen: BTreeMap<&str, (&Fingerprint, usize)> = BTreeMap::new();
    let mut out = Vec::with_capacity(read.len());
    for (a, (tools, _)) in read.iter().enumerate() {
        let mut flags = Vec::with_capacity(tools.len());
        for tool in tools {
            match seen.get(tool.name.as_str()) {
                Some(&(before, first)) if *before != tool.digest => {
                    let (x, y) = (&recording.arrays[first], &recording.arrays[a]);
                    return Err(RecordError::Conflict {
                        name: tool.name.clone(),
                        first: x.first_request,
                        first_model: x.model.clone(),
                        second: y.first_request,
                        second_model: y.model.clone(),
                    });
                }
                Some(_) => flags.push(false),
                None => {
                    seen.insert(&tool.name, (&tool.digest, a));
                    flags.push(true);
                }
            }
        }
        out.push(flags);
    }
    Ok(out)
}

pub(crate) type ReadArray = (Vec<RecordedTool>, Vec<String>);

fn union(
    recording: &Recording,
    read: Vec<ReadArray>,
    first: Vec<Vec<bool>>,
) -> Result<Vec<RecordedCatalog>, RecordError> {
    let mut apis: Vec<&str> = recording.arrays.iter().map(|a| a.api.name()).collect();
    apis.sort_unstable();
    apis.dedup();
    if apis.len() > 1 {
        return Err(RecordError::MixedApis(apis.join(" and ")));
    }
    let mut tools: Vec<RecordedTool> = Vec::new();
    let mut warnings = Vec::new();
    for ((array_tools, said), first) in read.into_iter().zip(first) {
        warnings.extend(said);
        tools.extend(
            array_tools
                .into_iter()
                .zip(first)
                .filter_map(|(tool, first)| first.then_some(tool)),
        );
    }
    let requests: Vec<Value> = recording
        .arrays
        .iter()
        .map(|a| json!({"request": a.first_request, "model": a.model, "path": a.path}))
        .collect();
    let api = recording.arrays[0].api;
    Ok(vec![RecordedCatalog {
        label: None,
        format: api.format(),
        session: json!({"recorded": {
            "api": api.name(),
            "merge": "union",
            "arrays": requests,
            "order": names(&tools),
        }}),
        tools,
        warnings,
    }])
}

/// Pins by server name, and the warnings of the catalogs they came from.
pub type RecordedPins = (Vec<(String, ServerPin)>, Vec<String>);

/// The pins of a recorded server named `server`: one per catalog, each
/// named `server` or `server#N:model`, its tools through the server's
/// transform; and the catalogs' warnings.
pub fn pins(
    server: &str,
    transform: &Transform,
    source: &Value,
    catalogs: Vec<RecordedCatalog>,
) -> Result<RecordedPins, String> {
    let mut pins = Vec::with_capacity(catalogs.len());
    let mut warnings = Vec::new();
    for catalog in catalogs {
        let name = format!("{server}{}", catalog.label.as_deref().unwrap_or(""));
        let mut builder = PinBuilder::new(transform.clone());
        for tool in catalog.tools {
            builder
                .push(tool.value())
                .map_err(|e| format!("{name}: {e}"))?;
        }
        let pin = builder.finish(source.clone(), catalog.format.name(), Some(catalog.session));
        warnings.extend(catalog.warnings);
        pins.push((name, pin));
    }
    Ok((pins, warnings))
}

/// `#N:model`, the model's characters outside `[A-Za-z0-9._-]` as `-`
/// (a Gemini model may be `tunedModels/x`).
fn label(array: &RecordedArray) -> String {
    let model: String = array
        .model
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-".contains(c) {
                c
            } else {
                '-'
            }
        })
        .collect();
    format!("#{}:{model}", array.first_request)
}

fn tool_name(tool: &Value) -> &str {
    tool.get("name").and_then(Value::as_str).unwrap_or("")
}

fn names(tools: &[RecordedTool]) -> Vec<String> {
    tools.iter().map(|t| t.name.clone()).collect()
}

/// One array's tools, envelopes removed; hosted tools (a `type` other than
/// `function` in an OpenAI array) are left out with a warning, since they
/// declare nothing the model reads as a definition.
pub(crate) fn read_array(array: &RecordedArray) -> Result<ReadArray, RecordError> {
    let api = array.api;
    let fail = |reason: String| RecordError::Tools {
        request: array.first_request,
        api: api.name(),
        reason,
    };
    let parsed: Value = serde_json::from_str(&array.raw)
        .map_err(|e| fail(format!("\"tools\" is not JSON ({e})")))?;
    let Value::Array(items) = parsed else {
        return Err(fail("\"tools\" is not an array".into()));
    };
    let mut warnings = Vec::new();
    let mut kept = Vec::with_capacity(items.len());
    for (index, item) in items.into_iter().enumerate() {
        let kind = item.get("type").and_then(Value::as_str);
        let openai = matches!(api, Api::OpenAiChat | Api::OpenAiResponses);
        match kind {
            Some(kind) if openai && kind != "function" => warnings.push(format!(
                "request {} ({}): tool #{index} is a hosted tool (type {kind:?}), not pinned: it declares no function",
                array.first_request,
                api.name()
            )),
            _ => kept.push(item),
        }
    }
    let mut unwrapped = Vec::with_capacity(kept.len());
    format::extract_into(Value::Array(kept), Some(api.format()), &mut unwrapped).map_err(fail)?;
    let mut scratch = Vec::new();
    let tools = unwrapped
        .iter()
        .map(|t| RecordedTool::new(t, &mut scratch))
        .collect();
    Ok((tools, warnings))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn array(api: Api, model: &str, first: usize, tools: Value) -> RecordedArray {
        RecordedArray {
            api,
            model: model.into(),
            path: "/v1/chat/completions".into(),
            first_request: first,
            requests: 1,
            raw: tools.to_string(),
            digest: Fingerprint::of_tool(&tools, &mut Vec::new()),
        }
    }

    fn values(tools: &[RecordedTool]) -> Vec<Value> {
        tools.iter().map(RecordedTool::value).collect()
    }

    fn chat(name: &str, description: &str) -> Value {
        json!({"type": "function", "function": {"name": name, "description": description, "parameters": {"type": "object"}}})
    }

    #[test]
    fn one_array_is_the_server_itself_in_the_order_sent() {
        let rec = Recording {
            first_api: None,
            requests: 2,
            arrays: vec![array(
                Api::OpenAiChat,
                "gpt-4o",
                1,
                json!([chat("zeta", "z"), chat("alpha", "a")]),
            )],
        };
        let out = catalogs(&rec, Merge::Distinct).expect("catalogs");
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].label, None);
        assert_eq!(out[0].format, Format::OpenAiChat);
        assert_eq!(
            out[0].session["recorded"]["order"],
            json!(["zeta", "alpha"])
        );
        assert_eq!(
            out[0].tools[0].value(),
            json!({"name": "zeta", "description": "z", "parameters": {"type": "object"}})
        );
    }

    #[test]
    fn several_arrays_are_labelled_or_merged() {
        let rec = Recording {
            first_api: None,
            requests: 3,
            arrays: vec![
                array(
                    Api::OpenAiChat,
                    "gpt-4o",
                    1,
                    json!([chat("a", "x"), chat("b", "y")]),
                ),
                array(
                    Api::OpenAiChat,
                    "models/tuned:1",
                    3,
                    json!([chat("b", "y"), chat("c", "z")]),
                ),
            ],
        };
        let distinct = catalogs(&rec, Merge::Distinct).expect("distinct");
        let labels: Vec<Option<&str>> = distinct.iter().map(|c| c.label.as_deref()).collect();
        assert_eq!(labels, vec![Some("#1:gpt-4o"), Some("#3:models-tuned-1")]);
        // `b`, sent by both, is pinned where it was first seen.
        assert_eq!(names(&distinct[0].tools), vec!["a", "b"]);
        assert_eq!(names(&distinct[1].tools), vec!["c"]);
        assert_eq!(distinct[1].session["recorded"]["order"], json!(["b", "c"]));
        let union = catalogs(&rec, Merge::Union).expect("union");
        assert_eq!(union.len(), 1);
        assert_eq!(
            union[0].session["recorded"]["order"],
            json!(["a", "b", "c"])
        );
    }

    #[test]
    fn one_name_with_two_definitions_and_a_union_of_mixed_apis_are_refused() {
        let rec = Recording {
            first_api: None,
            requests: 2,
            arrays: vec![
                array(Api::OpenAiChat, "m1", 1, json!([chat("a", "x")])),
                array(Api::OpenAiChat, "m2", 2, json!([chat("a", "changed")])),
            ],
        };
        assert_eq!(
            catalogs(&rec, Merge::Distinct).expect_err("conflict"),
            catalogs(&rec, Merge::Union).expect_err("conflict")
        );
        assert_eq!(
            catalogs(&rec, Merge::Union).expect_err("conflict").to_string(),
            "tool \"a\" differs between request 1 (m1) and request 2 (m2): a catalog pins one definition per name; record each agent with a `record` server of its own and a `prefix`"
        );
        let mixed = Recording {
            first_api: None,
            requests: 2,
            arrays: vec![
                array(Api::OpenAiChat, "m1", 1, json!([chat("a", "x")])),
                array(
                    Api::Anthropic,
                    "m2",
                    2,
                    json!([{"name": "b", "input_schema": {}}]),
                ),
            ],
        };
        assert_eq!(
            catalogs(&mixed, Merge::Union).expect_err("mixed").to_string(),
            "merge = \"union\" needs one API, but the requests used anthropic and openai-chat; pin each array with merge = \"distinct\""
        );
    }

    #[test]
    fn hosted_tools_are_left_out_with_a_warning() {
        let rec = Recording {
            first_api: None,
            requests: 1,
            arrays: vec![array(
                Api::OpenAiResponses,
                "gpt-5",
                1,
                json!([{"type": "web_search"}, {"type": "function", "name": "f", "parameters": {}, "strict": true}]),
            )],
        };
        let out = catalogs(&rec, Merge::Distinct).expect("catalogs");
        assert_eq!(
            values(&out[0].tools),
            vec![json!({"name": "f", "parameters": {}, "strict": true})]
        );
        assert_eq!(out[0].warnings.len(), 1);
        assert!(
            out[0].warnings[0].contains("\"web_search\""),
            "{:?}",
            out[0].warnings
        );
    }

    #[test]
    fn requests_without_tools_pin_an_empty_catalog_and_say_so() {
        let rec = Recording {
            first_api: None,
            requests: 2,
            arrays: Vec::new(),
        };
        let out = catalogs(&rec, Merge::Distinct).expect("catalogs");
        assert_eq!(out.len(), 1);
        assert!(out[0].tools.is_empty());
        assert!(out[0].warnings[0].contains("none with tools"));
    }
}
