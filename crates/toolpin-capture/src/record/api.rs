//! The model APIs the recording endpoint speaks: which request is which,
//! what toolpin keeps of it (the `tools` member, byte for byte, and the
//! model's name), and the reply that lets the agent finish its turn: a
//! final assistant message that calls no tool, in each API's JSON and
//! streaming shapes.
//!
//! Nothing but `tools` and `model` is kept: the messages, the system prompt
//! and the headers are read by serde's skipping and dropped with the body.

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{json, Value};

use super::instance;
use crate::Format;

/// A model API, told from the request's method and path.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Api {
    /// OpenAI Chat Completions: `POST …/chat/completions`.
    OpenAiChat,
    /// OpenAI Responses: `POST …/responses`.
    OpenAiResponses,
    /// Anthropic Messages: `POST …/messages` (`/v1/messages`, or
    /// `/messages` under a base URL that already ends in `/v1`).
    Anthropic,
    /// Gemini: `POST …/models/NAME:generateContent` and
    /// `:streamGenerateContent` (`?alt=sse` for server-sent events).
    Gemini,
}

impl Api {
    /// The tool format this API's `tools` array is in.
    pub fn format(self) -> Format {
        match self {
            Api::OpenAiChat => Format::OpenAiChat,
            Api::OpenAiResponses => Format::OpenAiResponses,
            Api::Anthropic => Format::Anthropic,
            Api::Gemini => Format::Gemini,
        }
    }

    /// The API's name as the lockfile records it (its tool format's name).
    pub fn name(self) -> &'static str {
        self.format().name()
    }
}

/// What a request is, by its method and path (the query string apart).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Route {
    /// A model request of this API; for Gemini, the model named in the
    /// path and whether the reply streams (and how).
    Model {
        api: Api,
        gemini: Option<GeminiCall>,
    },
    /// Anthropic's token counting: answered, nothing recorded (it is not
    /// what the model is sent).
    CountTokens,
    /// `GET …/models`: a client listing models before it starts.
    ListModels,
    /// Anything else.
    Unknown,
}

/// The model and streaming of a Gemini call, which live in its URL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GeminiCall {
    pub model: String,
    pub stream: Option<GeminiStream>,
}

/// How `streamGenerateContent` answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GeminiStream {
    /// `?alt=sse`: server-sent events, one response per event.
    Sse,
    /// No `alt`: one JSON array of responses.
    JsonArray,
}

/// Tells a request's API from its method, path and query.
pub fn route(method: &str, path: &str, query: Option<&str>) -> Route {
    let path = path.trim_end_matches('/');
    if method == "GET" {
        return if path.ends_with("/models") {
            Route::ListModels
        } else {
            Route::Unknown
        };
    }
    if method != "POST" {
        return Route::Unknown;
    }
    if path.ends_with("/chat/completions") {
        return Route::Model {
            api: Api::OpenAiChat,
            gemini: None,
        };
    }
    if path.ends_with("/responses") {
        return Route::Model {
            api: Api::OpenAiResponses,
            gemini: None,
        };
    }
    if path.ends_with("/messages/count_tokens") {
        return Route::CountTokens;
    }
    if path.ends_with("/messages") {
        return Route::Model {
            api: Api::Anthropic,
            gemini: None,
        };
    }
    if let Some((before, action)) = path.rsplit_once(':') {
        if let Some(model) = before.rsplit_once("/models/").map(|(_, m)| m) {
            let stream = match action {
                "generateContent" => None,
                "streamGenerateContent" => {
                    let sse = query
                        .unwrap_or("")
                        .split('&')
                        .any(|pair| pair.eq_ignore_ascii_case("alt=sse"));
                    Some(if sse {
                        GeminiStream::Sse
                    } else {
                        GeminiStream::JsonArray
                    })
                }
                _ => return Route::Unknown,
            };
            if !model.is_empty() {
                return Route::Model {
                    api: Api::Gemini,
                    gemini: Some(GeminiCall {
                        model: model.to_string(),
                        stream,
                    }),
                };
            }
        }
    }
    Route::Unknown
}

/// The members of a request body toolpin reads. Everything else (messages,
/// the system prompt, sampling settings) is skipped unread.
#[derive(Deserialize)]
struct Body<'a> {
    #[serde(default)]
    model: Option<String>,
    #[serde(default, borrow)]
    tools: Option<&'a RawValue>,
    #[serde(default)]
    stream: Option<bool>,
    #[serde(default)]
    stream_options: Option<StreamOptions>,
    /// Chat Completions structured output.
    #[serde(default, borrow)]
    response_format: Option<&'a RawValue>,
    /// Responses structured output (`text.format`).
    #[serde(default, borrow)]
    text: Option<&'a RawValue>,
    /// Gemini structured output (`generationConfig.responseSchema`).
    #[serde(
        default,
        borrow,
        rename = "generationConfig",
        alias = "generation_config"
    )]
    generation_config: Option<&'a RawValue>,
}

#[derive(Deserialize, Default)]
struct StreamOptions {
    #[serde(default)]
    include_usage: Option<bool>,
}

/// A model request, as far as toolpin keeps it.
#[derive(Debug, Clone, PartialEq)]
pub struct Parsed {
    pub api: Api,
    pub model: String,
    /// The `tools` member exactly as sent; `None` when absent, null or `[]`.
    pub tools: Option<String>,
    /// How to answer.
    pub reply: Reply,
}

/// The reply a request gets.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    pub api: Api,
    pub model: String,
    pub stream: Streaming,
    /// The assistant's text: a fixed word, or a minimal JSON value of the
    /// requested output schema so that a structured-output agent parses it.
    pub text: String,
}

/// Whether and how the reply streams.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Streaming {
    No,
    /// Server-sent events; for Chat Completions, whether a final usage
    /// chunk was asked for.
    Sse {
        usage: bool,
    },
    /// Gemini's streaming without `alt=sse`: a JSON array.
    JsonArray,
}

/// The text of a reply with no structured output asked for.
pub const REPLY_TEXT: &str = "OK";

/// Reads a model request's body. The error says what is wrong and where
/// without quoting the body: serde's own message would (`invalid type:
/// string "You are…"`), so only its category and position are kept.
pub fn parse(api: Api, gemini: Option<&GeminiCall>, body: &[u8]) -> Result<Parsed, String> {
    let parsed: Body = serde_json::from_slice(body).map_err(|e| {
        let what = if e.is_syntax() || e.is_eof() {
            "not JSON"
        } else {
            "not a request body (a member of the wrong type)"
        };
        format!("{what} at line {}, column {}", e.line(), e.column())
    })?;
    let model = match (api, gemini) {
        (Api::Gemini, Some(call)) => call.model.clone(),
        _ => parsed
            .model
            .clone()
            .filter(|m| !m.is_empty())
            .ok_or("no \"model\" member")?,
    };
    let tools = match parsed.tools {
        None => None,
        Some(raw) => {
            let text = raw.get();
            match text.as_bytes().first() {
                Some(b'[') => {
                    let empty = text[1..].trim_start().starts_with(']');
                    (!empty).then(|| text.to_string())
                }
                Some(b'n') => None,
                _ => return Err("\"tools\" is not an array".into()),
            }
        }
    };
    let stream = match (api, gemini.and_then(|g| g.stream)) {
        (Api::Gemini, None) => Streaming::No,
        (Api::Gemini, Some(GeminiStream::Sse)) => Streaming::Sse { usage: false },
        (Api::Gemini, Some(GeminiStream::JsonArray)) => Streaming::JsonArray,
        _ if parsed.stream == Some(true) => Streaming::Sse {
            usage: parsed
                .stream_options
                .as_ref()
                .and_then(|o| o.include_usage)
                .unwrap_or(false),
        },
        _ => Streaming::No,
    };
    let text = structured_text(api, &parsed).unwrap_or_else(|| REPLY_TEXT.to_string());
    Ok(Parsed {
        api,
        model: model.clone(),
        tools,
        reply: Reply {
            api,
            model,
            stream,
            text,
        },
    })
}

/// For a request that asks for JSON output, a minimal value of its schema
/// as text (`{}` for JSON without a schema).
fn structured_text(api: Api, body: &Body) -> Option<String> {
    let read = |raw: Option<&RawValue>| -> Option<Value> {
        raw.and_then(|r| serde_json::from_str::<Value>(r.get()).ok())
    };
    let (kind, schema) = match api {
        Api::OpenAiChat => {
            let format = read(body.response_format)?;
            let kind = format.get("type")?.as_str()?.to_string();
            let schema = format.pointer("/json_schema/schema").cloned();
            (kind, schema)
        }
        Api::OpenAiResponses => {
            let text = read(body.text)?;
            let format = text.get("format")?;
            let kind = format.get("type")?.as_str()?.to_string();
            (kind, format.get("schema").cloned())
        }
        Api::Gemini => {
            let config = read(body.generation_config)?;
            let schema = config
                .get("responseJsonSchema")
                .or_else(|| config.get("response_json_schema"))
                .or_else(|| config.get("responseSchema"))
                .or_else(|| config.get("response_schema"))
                .cloned();
            let json_mime = config
                .get("responseMimeType")
                .or_else(|| config.get("response_mime_type"))
                .and_then(Value::as_str)
                == Some("application/json");
            if schema.is_none() && !json_mime {
                return None;
            }
            ("json_schema".to_string(), schema)
        }
        Api::Anthropic => return None,
    };
    match (kind.as_str(), schema) {
        ("json_schema", Some(schema)) => Some(instance::minimal(&schema).to_string()),
        ("json_schema" | "json_object", None) => Some("{}".to_string()),
        _ => None,
    }
}

/// A response: its content type and body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    pub content_type: &'static str,
    pub body: String,
}

const JSON: &str = "application/json";
const SSE: &str = "text/event-stream";

/// The reply to a model request: `id` numbers it (ids must differ between
/// requests), `created` is the Unix time in seconds.
pub fn answer(reply: &Reply, id: u64, created: u64) -> Answer {
    match reply.api {
        Api::OpenAiChat => chat(reply, id, created),
        Api::OpenAiResponses => responses(reply, id, created),
        Api::Anthropic => anthropic(reply, id),
        Api::Gemini => gemini(reply),
    }
}

fn json_answer(v: &Value) -> Answer {
    Answer {
        content_type: JSON,
        body: v.to_string(),
    }
}

/// Server-sent events, each `(event name, data)`; unnamed events are
/// `data:` lines only.
fn sse(events: &[(Option<&str>, Value)], done: bool) -> Answer {
    let mut body = String::new();
    for (name, data) in events {
        if let Some(name) = name {
            body.push_str("event: ");
            body.push_str(name);
            body.push('\n');
        }
        body.push_str("data: ");
        body.push_str(&data.to_string());
        body.push_str("\n\n");
    }
    if done {
        body.push_str("data: [DONE]\n\n");
    }
    Answer {
        content_type: SSE,
        body,
    }
}

fn chat(reply: &Reply, id: u64, created: u64) -> Answer {
    let id = format!("chatcmpl-toolpin-{id}");
    let usage = json!({"prompt_tokens": 0, "completion_tokens": 1, "total_tokens": 1});
    match reply.stream {
        Streaming::No | Streaming::JsonArray => json_answer(&json!({
            "id": id,
            "object": "chat.completion",
            "created": created,
            "model": reply.model,
            "choices": [{
                "index": 0,
                "message": {"role": "assistant", "content": reply.text, "refusal": null},
                "logprobs": null,
                "finish_reason": "stop",
            }],
            "usage": usage,
        })),
        Streaming::Sse { usage: with_usage } => {
            let chunk = |delta: Value, finish: Value| {
                json!({
                    "id": id,
                    "object": "chat.completion.chunk",
                    "created": created,
                    "model": reply.model,
                    "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}],
                })
            };
            let mut events = vec![
                (
                    None,
                    chunk(
                        json!({"role": "assistant", "content": "", "refusal": null}),
                        Value::Null,
                    ),
                ),
                (None, chunk(json!({"content": reply.text}), Value::Null)),
                (None, chunk(json!({}), json!("stop"))),
            ];
            if with_usage {
                events.push((
                    None,
                    json!({
                        "id": id,
                        "object": "chat.completion.chunk",
                        "created": created,
                        "model": reply.model,
                        "choices": [],
                        "usage": usage,
                    }),
                ));
            }
            sse(&events, true)
        }
    }
}

fn responses(reply: &Reply, id: u64, created: u64) -> Answer {
    let response_id = format!("resp_toolpin_{id}");
    let message_id = format!("msg_toolpin_{id}");
    let part =
        json!({"type": "output_text", "text": reply.text, "annotations": [], "logprobs": []});
    let message = json!({
        "type": "message",
        "id": message_id,
        "status": "completed",
        "role": "assistant",
        "content": [part],
    });
    let response = |status: &str, output: Value, usage: Value| {
        response_object(reply, &response_id, created, status, output, usage)
    };
    let usage = json!({
        "input_tokens": 0,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 1,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 1,
    });
    let completed = response("completed", json!([message]), usage);
    match reply.stream {
        Streaming::No | Streaming::JsonArray => json_answer(&completed),
        Streaming::Sse { .. } => {
            let in_progress = response("in_progress", json!([]), Value::Null);
            let events = response_events(reply, &message_id, part, message, in_progress, completed);
            sse(&events, false)
        }
    }
}

/// A Responses API `response` object in `status` with its `output`.
fn response_object(
    reply: &Reply,
    response_id: &str,
    created: u64,
    status: &str,
    output: Value,
    usage: Value,
) -> Value {
    json!({
        "id": response_id,
        "object": "response",
        "created_at": created,
        "status": status,
        "error": null,
        "incomplete_details": null,
        "instructions": null,
        "max_output_tokens": null,
        "model": reply.model,
        "output": output,
        "parallel_tool_calls": true,
        "previous_response_id": null,
        "reasoning": {"effort": null, "summary": null},
        "store": false,
        "temperature": 1.0,
        "text": {"format": {"type": "text"}},
        "tool_choice": "auto",
        "tools": [],
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": usage,
        "metadata": {},
    })
}

/// The Responses API's stream of one text message: the response created
/// and in progress, the message and its text part opened, the text in one
/// delta, then each closed and the response completed; each event with
/// its `type` and `sequence_number`.
fn response_events(
    reply: &Reply,
    message_id: &str,
    part: Value,
    message: Value,
    in_progress: Value,
    completed: Value,
) -> Vec<(Option<&'static str>, Value)> {
    let item_open = json!({
        "type": "message", "id": message_id, "status": "in_progress",
        "role": "assistant", "content": [],
    });
    let empty_part = json!({"type": "output_text", "text": "", "annotations": [], "logprobs": []});
    let events: Vec<(&'static str, Value)> = vec![
        ("response.created", json!({"response": in_progress})),
        ("response.in_progress", json!({"response": in_progress})),
        (
            "response.output_item.added",
            json!({"output_index": 0, "item": item_open}),
        ),
        (
            "response.content_part.added",
            json!({"item_id": message_id, "output_index": 0, "content_index": 0, "part": empty_part}),
        ),
        (
            "response.output_text.delta",
            json!({"item_id": message_id, "output_index": 0, "content_index": 0, "delta": reply.text, "logprobs": []}),
        ),
        (
            "response.output_text.done",
            json!({"item_id": message_id, "output_index": 0, "content_index": 0, "text": reply.text, "logprobs": []}),
        ),
        (
            "response.content_part.done",
            json!({"item_id": message_id, "output_index": 0, "content_index": 0, "part": part}),
        ),
        (
            "response.output_item.done",
            json!({"output_index": 0, "item": message}),
        ),
        ("response.completed", json!({"response": completed})),
    ];
    events
        .into_iter()
        .enumerate()
        .map(|(n, (name, mut data))| {
            if let Value::Object(map) = &mut data {
                map.insert("type".into(), json!(name));
                map.insert("sequence_number".into(), json!(n));
            }
            (Some(name), data)
        })
        .collect()
}

fn anthropic(reply: &Reply, id: u64) -> Answer {
    let id = format!("msg_toolpin_{id}");
    match reply.stream {
        Streaming::No | Streaming::JsonArray => json_answer(&json!({
            "id": id,
            "type": "message",
            "role": "assistant",
            "model": reply.model,
            "content": [{"type": "text", "text": reply.text}],
            "stop_reason": "end_turn",
            "stop_sequence": null,
            "usage": {"input_tokens": 0, "output_tokens": 1},
        })),
        Streaming::Sse { .. } => {
            let events = [
                (
                    "message_start",
                    json!({"message": {
                        "id": id, "type": "message", "role": "assistant", "model": reply.model,
                        "content": [], "stop_reason": null, "stop_sequence": null,
                        "usage": {"input_tokens": 0, "output_tokens": 0},
                    }}),
                ),
                (
                    "content_block_start",
                    json!({"index": 0, "content_block": {"type": "text", "text": ""}}),
                ),
                (
                    "content_block_delta",
                    json!({"index": 0, "delta": {"type": "text_delta", "text": reply.text}}),
                ),
                ("content_block_stop", json!({"index": 0})),
                (
                    "message_delta",
                    json!({"delta": {"stop_reason": "end_turn", "stop_sequence": null}, "usage": {"output_tokens": 1}}),
                ),
                ("message_stop", json!({})),
            ];
            let events: Vec<(Option<&str>, Value)> = events
                .into_iter()
                .map(|(name, mut data)| {
                    if let Value::Object(map) = &mut data {
                        map.insert("type".into(), json!(name));
                    }
                    (Some(name), data)
                })
                .collect();
            sse(&events, false)
        }
    }
}

fn gemini(reply: &Reply) -> Answer {
    let response = json!({
        "candidates": [{
            "content": {"role": "model", "parts": [{"text": reply.text}]},
            "finishReason": "STOP",
            "index": 0,
        }],
        "usageMetadata": {"promptTokenCount": 0, "candidatesTokenCount": 1, "totalTokenCount": 1},
        "modelVersion": reply.model,
    });
    match reply.stream {
        Streaming::No => json_answer(&response),
        Streaming::JsonArray => json_answer(&json!([response])),
        Streaming::Sse { .. } => sse(&[(None, response)], false),
    }
}

/// The answer to `GET …/models`: an empty list in the shapes OpenAI,
/// Anthropic and Gemini clients read.
pub fn models() -> Answer {
    json_answer(&json!({"object": "list", "data": [], "models": [], "has_more": false}))
}

/// The answer to Anthropic's token counting.
pub fn count_tokens() -> Answer {
    json_answer(&json!({"input_tokens": 0}))
}

/// An error body clients show: OpenAI's and Anthropic's shapes at once
/// (`error.message`, `error.type`), which Gemini clients read too.
pub fn error(message: &str) -> Answer {
    json_answer(&json!({
        "type": "error",
        "error": {"message": message, "type": "invalid_request_error", "code": 400, "status": "INVALID_ARGUMENT"},
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(api: Api) -> Route {
        Route::Model { api, gemini: None }
    }

    #[test]
    fn routes_every_api_under_any_base_path() {
        assert_eq!(
            route("POST", "/v1/chat/completions", None),
            model(Api::OpenAiChat)
        );
        assert_eq!(
            route("POST", "/openai/v1/chat/completions/", None),
            model(Api::OpenAiChat)
        );
        assert_eq!(
            route("POST", "/v1/responses", None),
            model(Api::OpenAiResponses)
        );
        assert_eq!(route("POST", "/v1/messages", None), model(Api::Anthropic));
        assert_eq!(route("POST", "/messages", None), model(Api::Anthropic));
        assert_eq!(
            route("POST", "/v1/messages/count_tokens", None),
            Route::CountTokens
        );
        assert_eq!(route("GET", "/v1/models", None), Route::ListModels);
        assert_eq!(route("GET", "/v1/chat/completions", None), Route::Unknown);
        assert_eq!(route("POST", "/v1/embeddings", None), Route::Unknown);
        let gemini = |model: &str, stream| Route::Model {
            api: Api::Gemini,
            gemini: Some(GeminiCall {
                model: model.into(),
                stream,
            }),
        };
        assert_eq!(
            route(
                "POST",
                "/v1beta/models/gemini-2.5-flash:generateContent",
                None
            ),
            gemini("gemini-2.5-flash", None)
        );
        assert_eq!(
            route(
                "POST",
                "/v1beta/models/gemini-2.5-flash:streamGenerateContent",
                Some("alt=sse")
            ),
            gemini("gemini-2.5-flash", Some(GeminiStream::Sse))
        );
        assert_eq!(
            route(
                "POST",
                "/v1beta/models/g:streamGenerateContent",
                Some("key=x")
            ),
            gemini("g", Some(GeminiStream::JsonArray))
        );
        assert_eq!(
            route("POST", "/v1beta/models/g:embedContent", None),
            Route::Unknown
        );
        assert_eq!(
            route("POST", "/v1beta/models/:generateContent", None),
            Route::Unknown
        );
    }

    #[test]
    fn keeps_the_tools_member_byte_for_byte_and_nothing_else() {
        let body = br#"{"model":"m","messages":[{"role":"system","content":"secret prompt"}],"tools":[ {"type":"function","function":{"name":"a","strict":true,"parameters":{"type":"object","properties":{}}}} ]}"#;
        let p = parse(Api::OpenAiChat, None, body).expect("parses");
        assert_eq!(
            p.tools.as_deref(),
            Some(
                r#"[ {"type":"function","function":{"name":"a","strict":true,"parameters":{"type":"object","properties":{}}}} ]"#
            )
        );
        assert_eq!(p.model, "m");
        assert_eq!(p.reply.stream, Streaming::No);
        assert!(!format!("{p:?}").contains("secret prompt"));
    }

    #[test]
    fn absent_null_and_empty_tools_are_no_tools() {
        for body in [
            &br#"{"model":"m"}"#[..],
            br#"{"model":"m","tools":null}"#,
            br#"{"model":"m","tools":[ ]}"#,
        ] {
            assert_eq!(
                parse(Api::Anthropic, None, body).expect("parses").tools,
                None
            );
        }
    }

    #[test]
    fn bad_bodies_are_explained_without_quoting_them() {
        let err = parse(Api::OpenAiChat, None, b"model=m&secret=1").expect_err("not json");
        assert!(err.starts_with("not JSON"), "{err}");
        assert!(!err.contains("secret"), "{err}");
        assert_eq!(
            parse(Api::OpenAiChat, None, br#"{"messages":[]}"#).expect_err("no model"),
            "no \"model\" member"
        );
        assert_eq!(
            parse(Api::OpenAiChat, None, br#"{"model":"m","tools":{"a":1}}"#).expect_err("object"),
            "\"tools\" is not an array"
        );
        let err = parse(Api::OpenAiChat, None, br#"{"model":7}"#).expect_err("number");
        assert!(err.starts_with("not a request body"), "{err}");
        // serde names the value it did not expect; the error does not.
        let body = br#"{"model":"m","system":"x","stream":"You are the secret prompt"}"#;
        let err = parse(Api::Anthropic, None, body).expect_err("a string stream");
        assert_eq!(
            err,
            "not a request body (a member of the wrong type) at line 1, column 62"
        );
    }

    #[test]
    fn gemini_takes_its_model_from_the_path() {
        let call = GeminiCall {
            model: "gemini-2.5-flash".into(),
            stream: Some(GeminiStream::Sse),
        };
        let p = parse(
            Api::Gemini,
            Some(&call),
            br#"{"contents":[],"tools":[{"functionDeclarations":[{"name":"a"}]}]}"#,
        )
        .expect("parses");
        assert_eq!(p.model, "gemini-2.5-flash");
        assert_eq!(p.reply.stream, Streaming::Sse { usage: false });
    }

    #[test]
    fn structured_output_gets_a_value_of_its_schema() {
        let body = br#"{"model":"m","response_format":{"type":"json_schema","json_schema":{"name":"x","strict":true,"schema":{"type":"object","properties":{"city":{"type":"string"},"n":{"type":"integer","minimum":2}},"required":["city","n"]}}}}"#;
        let p = parse(Api::OpenAiChat, None, body).expect("parses");
        assert_eq!(p.reply.text, r#"{"city":"","n":2}"#);
        let body = br#"{"model":"m","text":{"format":{"type":"json_schema","name":"x","schema":{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}}}}"#;
        let p = parse(Api::OpenAiResponses, None, body).expect("parses");
        assert_eq!(p.reply.text, r#"{"ok":false}"#);
        let body = br#"{"model":"m","response_format":{"type":"json_object"}}"#;
        assert_eq!(
            parse(Api::OpenAiChat, None, body)
                .expect("parses")
                .reply
                .text,
            "{}"
        );
        let body = br#"{"model":"m","response_format":{"type":"text"}}"#;
        assert_eq!(
            parse(Api::OpenAiChat, None, body)
                .expect("parses")
                .reply
                .text,
            REPLY_TEXT
        );
    }

    #[test]
    fn every_answer_is_json_or_well_formed_events() {
        for api in [
            Api::OpenAiChat,
            Api::OpenAiResponses,
            Api::Anthropic,
            Api::Gemini,
        ] {
            for stream in [
                Streaming::No,
                Streaming::Sse { usage: true },
                Streaming::JsonArray,
            ] {
                let reply = Reply {
                    api,
                    model: "m".into(),
                    stream,
                    text: "OK".into(),
                };
                let a = answer(&reply, 3, 1_700_000_000);
                if a.content_type == JSON {
                    let v: Value = serde_json::from_str(&a.body).expect("json");
                    assert!(v.to_string().contains("\"OK\""), "{api:?}");
                } else {
                    let mut events = 0;
                    for block in a.body.split("\n\n").filter(|b| !b.is_empty()) {
                        let data = block
                            .lines()
                            .find_map(|l| l.strip_prefix("data: "))
                            .expect("a data line");
                        if data != "[DONE]" {
                            serde_json::from_str::<Value>(data).expect("json data");
                        }
                        events += 1;
                    }
                    assert!(events >= 1, "{api:?}");
                    assert!(a.body.contains("OK"), "{api:?}");
                }
            }
        }
    }
}
