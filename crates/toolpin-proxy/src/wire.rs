//! `tools/call` relayed as text.
//!
//! A call reaches the server, and its answer the agent, as the other side
//! wrote it, except for the `id` (and the tool's name when the server knows
//! it by another). Parsing each message into a tree and printing it again
//! was most of the proxy's CPU per call, and it reorders members and
//! reprints numbers. Here a message stays text: one pass reads its envelope
//! (where `id`, `method`, `params`, `result` and `error` sit; nothing is
//! allocated), the checks parse only the parts they look at (the
//! arguments, an error, `isError`, `structuredContent`), and the new id is
//! spliced in place of the old.

use std::ops::Range;

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;

/// The top-level members the relay looks at; the rest are skipped. Every
/// byte is still checked, so a message that parses here is valid JSON.
#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(borrow, default)]
    id: Member<'a>,
    #[serde(borrow, default)]
    method: Member<'a>,
    #[serde(borrow, default)]
    result: Member<'a>,
    #[serde(borrow, default)]
    error: Member<'a>,
}

/// A member's text if it is there, `null` included (an `Option` field
/// would read `null` as absent).
#[derive(Default)]
struct Member<'a>(Option<&'a RawValue>);

impl<'de: 'a, 'a> Deserialize<'de> for Member<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        <&'a RawValue>::deserialize(d).map(|r| Member(Some(r)))
    }
}

/// The agent's `tools/call`, kept as text.
#[derive(Debug)]
pub struct Call {
    text: String,
    id: Range<usize>,
    name: String,
    name_at: Range<usize>,
    arguments: Option<Range<usize>>,
}

/// The members of a call's `params` the proxy looks at.
#[derive(Deserialize)]
struct CallParams<'a> {
    #[serde(borrow, default)]
    name: Member<'a>,
    #[serde(borrow, default)]
    arguments: Member<'a>,
}

#[derive(Deserialize)]
struct RequestEnvelope<'a> {
    #[serde(borrow, default)]
    id: Member<'a>,
    #[serde(borrow, default)]
    method: Member<'a>,
    #[serde(borrow, default)]
    params: Member<'a>,
}

impl Call {
    /// A `tools/call` request whose tool is named by a string; `Err(text)`
    /// gives anything else back, to be handled as a tree.
    pub fn parse(text: String) -> Result<Call, String> {
        let Ok(envelope) = serde_json::from_str::<RequestEnvelope<'_>>(&text) else {
            return Err(text);
        };
        let (Some(id), Some(method), Some(params)) =
            (envelope.id.0, envelope.method.0, envelope.params.0)
        else {
            return Err(text);
        };
        if method.get() != "\"tools/call\"" || id.get() == "null" {
            return Err(text);
        }
        let Ok(inner) = serde_json::from_str::<CallParams<'_>>(params.get()) else {
            return Err(text);
        };
        let Some(name_raw) = inner.name.0 else {
            return Err(text);
        };
        let Ok(name) = serde_json::from_str::<String>(name_raw.get()) else {
            return Err(text);
        };
        let id = span(&text, id);
        let name_at = span(&text, name_raw);
        let arguments = inner.arguments.0.map(|a| span(&text, a));
        Ok(Call {
            text,
            id,
            name,
            name_at,
            arguments,
        })
    }

    /// The agent's id for the call.
    pub fn id(&self) -> Value {
        serde_json::from_str(&self.text[self.id.clone()]).unwrap_or(Value::Null)
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The `arguments` member's text, if there is one.
    pub fn arguments(&self) -> Option<&str> {
        self.arguments.clone().map(|r| &self.text[r])
    }

    /// The whole call as a tree.
    pub fn into_value(self) -> Value {
        serde_json::from_str(&self.text).unwrap_or(Value::Null)
    }

    /// The call as the server gets it: its id, and the server's name for
    /// the tool; every other byte as the agent wrote it.
    pub fn to_upstream(&self, id: i64, name: &str) -> String {
        let id_text = id.to_string();
        let mut out = String::with_capacity(self.text.len() + 16);
        let name_text;
        let name_new = if name == self.name {
            &self.text[self.name_at.clone()]
        } else {
            name_text = Value::String(name.to_string()).to_string();
            name_text.as_str()
        };
        // The two spans never overlap: the id is top-level, the name is in
        // `params`.
        let (first, first_new, second, second_new) = if self.id.start < self.name_at.start {
            (&self.id, id_text.as_str(), &self.name_at, name_new)
        } else {
            (&self.name_at, name_new, &self.id, id_text.as_str())
        };
        out.push_str(&self.text[..first.start]);
        out.push_str(first_new);
        out.push_str(&self.text[first.end..second.start]);
        out.push_str(second_new);
        out.push_str(&self.text[second.end..]);
        out
    }
}

/// A server's response to one of the proxy's own requests (whose ids are
/// integers), kept as text.
#[derive(Debug)]
pub struct Reply {
    text: String,
    /// The proxy's id for the request.
    upstream_id: i64,
    id: Range<usize>,
    result: Option<Range<usize>>,
    error: Option<Range<usize>>,
}

/// Where `part` (a slice of `whole`) sits in `whole`.
fn span(whole: &str, part: &RawValue) -> Range<usize> {
    let start = part.get().as_ptr() as usize - whole.as_ptr() as usize;
    start..start + part.get().len()
}

impl Reply {
    /// A response with an integer id; `Err(text)` gives the text back for
    /// anything else (requests, notifications, batches, other ids, and
    /// text that does not parse as an object), which the caller handles as
    /// a tree.
    pub fn parse(text: String) -> Result<Reply, String> {
        let Ok(envelope) = serde_json::from_str::<Envelope<'_>>(&text) else {
            return Err(text);
        };
        let (Some(id), None) = (envelope.id.0, envelope.method.0) else {
            return Err(text);
        };
        if envelope.result.0.is_none() && envelope.error.0.is_none() {
            return Err(text);
        }
        let Ok(upstream_id) = id.get().parse::<i64>() else {
            return Err(text);
        };
        let id = span(&text, id);
        let result = envelope.result.0.map(|r| span(&text, r));
        let error = envelope.error.0.map(|e| span(&text, e));
        Ok(Reply {
            text,
            upstream_id,
            id,
            result,
            error,
        })
    }

    /// A response that arrived as a tree (Streamable HTTP, SSE), as text.
    pub fn from_value(message: &Value) -> Option<Reply> {
        Reply::parse(serde_json::to_string(message).ok()?).ok()
    }

    pub fn upstream_id(&self) -> i64 {
        self.upstream_id
    }

    /// The `result` member's text.
    pub fn result(&self) -> Option<&str> {
        self.result.clone().map(|r| &self.text[r])
    }

    /// The `error` member's text.
    pub fn error(&self) -> Option<&str> {
        self.error.clone().map(|r| &self.text[r])
    }

    /// The error's code and message, when the server answered with one.
    pub fn error_code_message(&self) -> Option<(Option<i64>, String)> {
        #[derive(Deserialize)]
        struct Error {
            #[serde(default)]
            code: Option<Value>,
            #[serde(default)]
            message: Option<Value>,
        }
        let e: Error = serde_json::from_str(self.error()?).ok()?;
        let code = e.code.as_ref().and_then(Value::as_i64);
        let message = match e.message {
            Some(Value::String(s)) => s,
            _ => String::new(),
        };
        Some((code, message))
    }

    /// The whole response as a tree (for the proxy's own requests).
    pub fn into_value(self) -> Value {
        serde_json::from_str(&self.text).unwrap_or(Value::Null)
    }

    /// Appends the response as the agent gets it: the server's text with
    /// `id` in place of the server's id.
    pub fn write_with_id(&self, id: &Value, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.text.as_bytes()[..self.id.start]);
        let _ = serde_json::to_writer(&mut *out, id);
        out.extend_from_slice(&self.text.as_bytes()[self.id.end..]);
    }

    /// The response as the agent gets it.
    pub fn with_id(&self, id: &Value) -> String {
        let mut out = Vec::with_capacity(self.text.len() + 16);
        self.write_with_id(id, &mut out);
        // Valid UTF-8 in, and a JSON value spliced at a value boundary.
        String::from_utf8(out).unwrap_or_default()
    }
}

/// What a `tools/call` result says about itself, read without building
/// the tree.
#[derive(Deserialize, Default)]
pub struct ResultView<'a> {
    #[serde(rename = "isError", default)]
    pub is_error: Option<Value>,
    #[serde(rename = "structuredContent", borrow, default)]
    pub structured_content: Option<&'a RawValue>,
    #[serde(borrow, default)]
    pub content: Option<&'a RawValue>,
}

impl<'a> ResultView<'a> {
    /// Reads a `result`; a result that is not an object says nothing.
    pub fn of(result: &'a str) -> ResultView<'a> {
        serde_json::from_str(result).unwrap_or_default()
    }

    pub fn is_error(&self) -> bool {
        self.is_error == Some(Value::Bool(true))
    }

    /// The first content block's text (what an error result explains).
    pub fn first_text(&self) -> String {
        self.content
            .and_then(|c| serde_json::from_str::<Value>(c.get()).ok())
            .and_then(|c| {
                c.get(0)
                    .and_then(|b| b.get("text"))
                    .and_then(Value::as_str)
                    .map(str::to_string)
            })
            .unwrap_or_default()
    }
}

/// A message to the agent: a tree the proxy built, or a server's response
/// kept as text, to go out under the agent's `id`.
#[derive(Debug)]
pub enum Outgoing {
    Json(Value),
    Reply { id: Value, reply: Reply },
}

impl Outgoing {
    /// Appends the message as one line of JSON (no newline).
    pub fn write_to(&self, out: &mut Vec<u8>) {
        match self {
            Outgoing::Json(v) => {
                let _ = serde_json::to_writer(&mut *out, v);
            }
            Outgoing::Reply { id, reply } => reply.write_with_id(id, out),
        }
    }

    /// The message as one line of JSON. A carriage return in a server's
    /// text can only be whitespace (JSON escapes it inside strings), and
    /// it would end an SSE line, so it becomes a space.
    pub fn to_line(&self) -> String {
        match self {
            Outgoing::Json(v) => v.to_string(),
            Outgoing::Reply { id, reply } => {
                let text = reply.with_id(id);
                if text.contains('\r') {
                    text.replace('\r', " ")
                } else {
                    text
                }
            }
        }
    }

    /// The id of a response (`None` for requests and notifications).
    pub fn response_id(&self) -> Option<&Value> {
        match self {
            Outgoing::Json(v) if v.get("method").is_none() => v.get("id"),
            Outgoing::Json(_) => None,
            Outgoing::Reply { id, .. } => Some(id),
        }
    }

    /// The tree, for messages the proxy built (`None` for a relayed reply).
    pub fn json(&self) -> Option<&Value> {
        match self {
            Outgoing::Json(v) => Some(v),
            Outgoing::Reply { .. } => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_response_keeps_every_byte_but_its_id() {
        let text = r#"{"result":{"content":[{"type":"text","text":"hi"}],"z":1.50,"a":[3,2,1]},"jsonrpc":"2.0","id":17,"extra":{"kept":true}}"#;
        let reply = Reply::parse(text.to_string()).expect("a reply");
        assert_eq!(reply.upstream_id(), 17);
        assert!(reply.error().is_none());
        assert_eq!(
            reply.result(),
            Some(r#"{"content":[{"type":"text","text":"hi"}],"z":1.50,"a":[3,2,1]}"#)
        );
        let out = reply.with_id(&json!("agent-id-1"));
        assert_eq!(out, text.replace("\"id\":17", "\"id\":\"agent-id-1\""));
    }

    #[test]
    fn whitespace_and_escapes_survive() {
        let text = "{ \"id\" : 3 , \"result\" : {\"t\":\"a\\nb \\u00e9\\\"q\"} }";
        let out = Reply::parse(text.to_string())
            .expect("a reply")
            .with_id(&json!({"k": [1]}));
        assert!(!out.is_empty());
        assert_eq!(out, text.replace(": 3 ,", ": {\"k\":[1]} ,"));
        let v: Value = serde_json::from_str(&out).expect("still JSON");
        assert_eq!(v["result"]["t"], "a\nb \u{e9}\"q");
    }

    #[test]
    fn a_call_keeps_every_byte_but_its_id_and_name() {
        let text = r#"{"params":{"_meta":{"progressToken":"p1"},"name":"echo","arguments":{"message":"h\u00e9","n":1.50},"task":{"ttl":5}},"jsonrpc":"2.0","id":"a-7","method":"tools/call"}"#;
        let call = Call::parse(text.to_string()).expect("a call");
        assert_eq!(call.id(), json!("a-7"));
        assert_eq!(call.name(), "echo");
        assert_eq!(call.arguments(), Some(r#"{"message":"h\u00e9","n":1.50}"#));
        assert_eq!(
            call.to_upstream(12, "echo"),
            text.replace(r#""id":"a-7""#, r#""id":12"#)
        );
        assert_eq!(
            call.to_upstream(13, "ns\"x"),
            text.replace(r#""id":"a-7""#, r#""id":13"#)
                .replace(r#""name":"echo""#, r#""name":"ns\"x""#)
        );
        // The id after the params.
        let text = r#"{"method":"tools/call","params":{"name":"e\u0063ho"},"id":5}"#;
        let call = Call::parse(text.to_string()).expect("a call");
        assert_eq!(call.name(), "echo");
        assert_eq!(call.arguments(), None);
        assert_eq!(
            call.to_upstream(1, "echo"),
            r#"{"method":"tools/call","params":{"name":"e\u0063ho"},"id":1}"#
        );
        assert_eq!(
            call.to_upstream(1, "other"),
            r#"{"method":"tools/call","params":{"name":"other"},"id":1}"#
        );
    }

    #[test]
    fn other_requests_are_given_back() {
        for text in [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#,
            r#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"x"}}"#,
            r#"{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"x"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":7}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":[]}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","name":"y"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools\/call","params":{"name":"x"}}"#,
            r#"[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}]"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}"#,
        ] {
            assert_eq!(Call::parse(text.to_string()).err().as_deref(), Some(text));
        }
    }

    #[test]
    fn a_null_result_is_a_result() {
        let reply =
            Reply::parse(r#"{"jsonrpc":"2.0","id":4,"result":null}"#.into()).expect("a reply");
        assert_eq!(reply.result(), Some("null"));
    }

    #[test]
    fn errors_are_read() {
        let reply = Reply::parse(
            r#"{"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"bad"}}"#.into(),
        )
        .expect("a reply");
        assert_eq!(
            reply.error_code_message(),
            Some((Some(-32602), "bad".into()))
        );
    }

    #[test]
    fn anything_else_is_given_back() {
        for text in [
            r#"{"jsonrpc":"2.0","id":1,"method":"sampling/createMessage","params":{}}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/progress"}"#,
            r#"[{"jsonrpc":"2.0","id":1,"result":{}}]"#,
            r#"{"jsonrpc":"2.0","id":"s-1","result":{}}"#,
            r#"{"jsonrpc":"2.0","id":1.5,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":1,"message":"x"}}"#,
            r#"{"jsonrpc":"2.0","id":1}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{}} trailing"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"a":}}"#,
            r#"{"id":1,"id":2,"result":{}}"#,
            "",
            "42",
        ] {
            assert_eq!(Reply::parse(text.to_string()).err().as_deref(), Some(text));
        }
    }

    #[test]
    fn result_view() {
        let v = ResultView::of(
            r#"{"isError":true,"content":[{"type":"text","text":"rate limited"}],"structuredContent":{"n":1}}"#,
        );
        assert!(v.is_error());
        assert_eq!(v.first_text(), "rate limited");
        assert_eq!(v.structured_content.map(RawValue::get), Some(r#"{"n":1}"#));
        let none = ResultView::of("[1,2]");
        assert!(!none.is_error());
        assert_eq!(none.first_text(), "");
    }

    #[test]
    fn lines_for_sse_have_no_carriage_return() {
        let reply = Reply::parse("{\"id\":1,\r\"result\":{}}".into()).expect("a reply");
        let o = Outgoing::Reply {
            id: json!("a"),
            reply,
        };
        assert_eq!(o.to_line(), "{\"id\":\"a\", \"result\":{}}");
        let mut line = Vec::new();
        o.write_to(&mut line);
        assert_eq!(line, b"{\"id\":\"a\",\r\"result\":{}}");
        let v: Value = serde_json::from_str(&o.to_line()).expect("JSON");
        assert_eq!(v["id"], "a");
    }
}
