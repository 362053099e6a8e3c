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
use serde_json::{json, Value};

use crate::scan::scan;

/// The agent's `tools/call`, kept as text.
#[derive(Debug)]
pub struct Call {
    text: String,
    id: Range<usize>,
    name: String,
    name_at: Range<usize>,
    arguments: Option<Range<usize>>,
    meta: Option<Range<usize>>,
    params: Option<Range<usize>>,
}

impl Call {
    /// A `tools/call` request whose tool is named by a string; `Err(text)`
    /// gives anything else back, to be handled as a tree.
    pub fn parse(text: String) -> Result<Call, String> {
        let Some(s) = scan(&text) else {
            return Err(text);
        };
        let (Some(id), Some(method), Some(name_at)) = (s.id, s.method, s.params_name) else {
            return Err(text);
        };
        if &text[method] != "\"tools/call\"" || &text[id.clone()] == "null" {
            return Err(text);
        }
        // A string, unescaped only when it has escapes.
        let raw = &text[name_at.clone()];
        let name = match raw.strip_prefix('"').and_then(|r| r.strip_suffix('"')) {
            Some(plain) if !plain.contains('\\') => plain.to_string(),
            Some(_) => match serde_json::from_str::<String>(raw) {
                Ok(name) => name,
                Err(_) => return Err(text),
            },
            None => return Err(text),
        };
        let arguments = s.params_arguments;
        Ok(Call {
            text,
            id,
            name,
            name_at,
            arguments,
            meta: s.params_meta,
            params: s.params,
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

    /// Whether `params._meta` names a protocol version (the stateless
    /// revision's): then the call cannot go upstream as written. Only the
    /// `_meta` member is searched, and only when there is one.
    pub fn names_protocol_version(&self) -> bool {
        self.meta
            .clone()
            .is_some_and(|r| self.text[r].contains("io.modelcontextprotocol/protocolVersion"))
    }

    /// The whole call as a tree.
    pub fn into_value(self) -> Value {
        serde_json::from_str(&self.text).unwrap_or(Value::Null)
    }

    /// `params._meta`, parsed (it is small, and only read to continue the
    /// agent's trace), if there is one.
    pub fn meta(&self) -> Option<Value> {
        self.meta
            .clone()
            .and_then(|r| serde_json::from_str(&self.text[r]).ok())
    }

    /// The call as the server gets it: its id, and the server's name for
    /// the tool; every other byte as the agent wrote it.
    pub fn to_upstream(&self, id: i64, name: &str) -> String {
        self.to_upstream_traced(id, name, None)
    }

    /// As [`Call::to_upstream`], with the proxy's span as
    /// `params._meta.traceparent` when `traceparent` is given (as the tree
    /// path sets it: an object `_meta` gets the member, replacing the
    /// agent's; a `_meta` that is not an object is left alone; no `_meta`
    /// gets one). Only `_meta` is reprinted.
    pub fn to_upstream_traced(&self, id: i64, name: &str, traceparent: Option<&str>) -> String {
        let id_text = id.to_string();
        let name_text;
        let name_new = if name == self.name {
            &self.text[self.name_at.clone()]
        } else {
            name_text = Value::String(name.to_string()).to_string();
            name_text.as_str()
        };
        // Replacements, by range; an empty range inserts.
        let mut edits: Vec<(Range<usize>, String)> = Vec::with_capacity(3);
        if let Some(tp) = traceparent {
            match (&self.meta, &self.params) {
                (Some(at), _) => {
                    if let Ok(Value::Object(mut meta)) =
                        serde_json::from_str::<Value>(&self.text[at.clone()])
                    {
                        meta.insert("traceparent".into(), json!(tp));
                        edits.push((at.clone(), Value::Object(meta).to_string()));
                    }
                }
                // `params` holds `name`, so it has members: `_meta` goes
                // first, before a comma.
                (None, Some(params)) => {
                    let at = params.start + 1;
                    edits.push((at..at, format!("\"_meta\":{},", json!({"traceparent": tp}))));
                }
                (None, None) => {}
            }
        }
        let mut out = String::with_capacity(
            self.text.len() + 16 + edits.iter().map(|e| e.1.len()).sum::<usize>(),
        );
        // The spans never overlap: the id is top-level, the name and
        // `_meta` are members of `params`.
        let mut all: Vec<(&Range<usize>, &str)> =
            vec![(&self.id, id_text.as_str()), (&self.name_at, name_new)];
        all.extend(edits.iter().map(|(r, t)| (r, t.as_str())));
        all.sort_by_key(|(r, _)| r.start);
        let mut at = 0;
        for (range, new) in all {
            out.push_str(&self.text[at..range.start]);
            out.push_str(new);
            at = range.end;
        }
        out.push_str(&self.text[at..]);
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
    is_error: Option<Range<usize>>,
    structured: Option<Range<usize>>,
    content: Option<Range<usize>>,
}

impl Reply {
    /// A response with an integer id; `Err(text)` gives the text back for
    /// anything else (requests, notifications, batches, other ids, and
    /// text that does not parse as an object), which the caller handles as
    /// a tree.
    pub fn parse(text: String) -> Result<Reply, String> {
        let Some(spans) = scan(&text) else {
            return Err(text);
        };
        let (Some(id), None) = (spans.id.clone(), &spans.method) else {
            return Err(text);
        };
        if spans.result.is_none() && spans.error.is_none() {
            return Err(text);
        }
        let Ok(upstream_id) = text[id.clone()].parse::<i64>() else {
            return Err(text);
        };
        Ok(Reply {
            text,
            upstream_id,
            id,
            result: spans.result,
            error: spans.error,
            is_error: spans.result_is_error,
            structured: spans.result_structured,
            content: spans.result_content,
        })
    }

    /// A response that arrived as a tree (Streamable HTTP, SSE, or a line
    /// the scanner left to the parser), as text. `None` when it is not a
    /// response to one of the proxy's requests.
    pub fn from_value(message: &Value) -> Option<Reply> {
        let id = message.get("id")?.as_i64()?;
        let text = serde_json::to_string(message).ok()?;
        // What serde_json prints, the scanner reads; should it not, the
        // call still gets an answer.
        Reply::parse(text).ok().or_else(|| {
            Reply::parse(
                json!({"jsonrpc": "2.0", "id": id, "error": {"code": crate::jsonrpc::INTERNAL_ERROR, "message": "toolpin proxy: the server's answer could not be relayed"}})
                    .to_string(),
            )
            .ok()
        })
    }

    /// The response with every secret in its strings redacted (an error
    /// or a result that echoes an upstream's credentials); itself when it
    /// holds none.
    pub fn redacted(self, redactor: &toolpin_manifest::Redactor) -> Reply {
        let Some(text) = redactor.redact_json_text(&self.text) else {
            return self;
        };
        let id = self.upstream_id;
        // Redaction only rewrites strings, so the response still scans; the
        // fallback keeps the secret out should it somehow not.
        Reply::parse(text).unwrap_or_else(|_| {
            let text = json!({"jsonrpc": "2.0", "id": id, "error": {"code": crate::jsonrpc::INTERNAL_ERROR, "message": "toolpin proxy: the server's answer could not be relayed"}}).to_string();
            Reply::parse(text).unwrap_or(self)
        })
    }

    pub fn upstream_id(&self) -> i64 {
        self.upstream_id
    }

    fn part(&self, at: &Option<Range<usize>>) -> Option<&str> {
        at.clone().map(|r| &self.text[r])
    }

    /// The `result` member's text.
    pub fn result(&self) -> Option<&str> {
        self.part(&self.result)
    }

    /// The `error` member's text.
    pub fn error(&self) -> Option<&str> {
        self.part(&self.error)
    }

    /// Whether the result says `"isError": true`.
    pub fn is_error(&self) -> bool {
        self.part(&self.is_error) == Some("true")
    }

    /// The result's `structuredContent`, as text.
    pub fn structured_content(&self) -> Option<&str> {
        self.part(&self.structured)
    }

    /// The first content block's text (what an error result explains).
    pub fn first_text(&self) -> String {
        self.part(&self.content)
            .and_then(|c| serde_json::from_str::<Value>(c).ok())
            .and_then(|c| {
                c.get(0)
                    .and_then(|b| b.get("text"))
                    .and_then(Value::as_str)
                    .map(str::to_string)
            })
            .unwrap_or_default()
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

/// A message to the agent: a tree the proxy built, or a server's response
/// kept as text, to go out under the agent's `id`.
#[derive(Debug)]
pub enum Outgoing {
    Json(Value),
    Reply {
        id: Value,
        reply: Reply,
    },
    /// A server's request or notification that belongs with one of the
    /// agent's requests (`to`, the agent's id for it as the session saw
    /// it): the HTTP front sends it on that request's stream.
    Related {
        to: Value,
        message: Value,
    },
}

impl Outgoing {
    /// Appends the message as one line of JSON (no newline).
    pub fn write_to(&self, out: &mut Vec<u8>) {
        match self {
            Outgoing::Json(v) | Outgoing::Related { message: v, .. } => {
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
            Outgoing::Json(v) | Outgoing::Related { message: v, .. } => v.to_string(),
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
            Outgoing::Json(_) | Outgoing::Related { .. } => None,
            Outgoing::Reply { id, .. } => Some(id),
        }
    }

    /// Gives a response another id (the HTTP front's id back to the
    /// agent's); anything else is left alone.
    pub fn set_response_id(&mut self, new: Value) {
        match self {
            Outgoing::Json(v) if v.get("method").is_none() => {
                if let Some(m) = v.as_object_mut() {
                    m.insert("id".into(), new);
                }
            }
            Outgoing::Reply { id, .. } => *id = new,
            Outgoing::Json(_) | Outgoing::Related { .. } => {}
        }
    }

    /// The agent's request this message belongs with, if the session knows.
    pub fn related_to(&self) -> Option<&Value> {
        match self {
            Outgoing::Related { to, .. } => Some(to),
            _ => None,
        }
    }

    /// The tree, for messages the proxy built (`None` for a relayed reply).
    pub fn json(&self) -> Option<&Value> {
        match self {
            Outgoing::Json(v) | Outgoing::Related { message: v, .. } => Some(v),
            Outgoing::Reply { .. } => None,
        }
    }

    /// The tree, to change (`None` for a relayed reply).
    pub fn json_mut(&mut self) -> Option<&mut Value> {
        match self {
            Outgoing::Json(v) | Outgoing::Related { message: v, .. } => Some(v),
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
    fn a_traced_call_gets_the_span_in_its_meta_and_nothing_else_changes() {
        let tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        // No `_meta`: one is added first in `params`.
        let text = r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"n":1.50}}}"#;
        let call = Call::parse(text.to_string()).expect("a call");
        assert_eq!(call.meta(), None);
        assert_eq!(
            call.to_upstream_traced(9, "up", Some(tp)),
            format!(
                r#"{{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{{"_meta":{{"traceparent":"{tp}"}},"name":"up","arguments":{{"n":1.50}}}}}}"#
            )
        );
        assert_eq!(
            call.to_upstream_traced(9, "up", None),
            call.to_upstream(9, "up")
        );
        // An object `_meta` keeps its members; the agent's traceparent is
        // replaced by the proxy's span.
        let text = r#"{"params":{"name":"echo","_meta":{"progressToken":"p1","traceparent":"x"},"arguments":{}},"id":"a","method":"tools/call"}"#;
        let call = Call::parse(text.to_string()).expect("a call");
        assert_eq!(
            call.meta(),
            Some(json!({"progressToken": "p1", "traceparent": "x"}))
        );
        let out = call.to_upstream_traced(4, "echo", Some(tp));
        let tree: Value = serde_json::from_str(&out).expect("json");
        assert_eq!(tree["id"], json!(4));
        assert_eq!(
            tree["params"]["_meta"],
            json!({"progressToken": "p1", "traceparent": tp})
        );
        assert!(
            out.ends_with(r#","arguments":{}},"id":4,"method":"tools/call"}"#),
            "{out}"
        );
        // A `_meta` that is not an object is left as it is.
        let text = r#"{"params":{"name":"echo","_meta":7},"id":1,"method":"tools/call"}"#;
        let call = Call::parse(text.to_string()).expect("a call");
        assert_eq!(
            call.to_upstream_traced(2, "echo", Some(tp)),
            text.replace(r#""id":1"#, r#""id":2"#)
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
    fn what_a_result_says_about_itself() {
        let reply = Reply::parse(
            r#"{"id":1,"result":{"isError":true,"content":[{"type":"text","text":"rate limited"}],"structuredContent":{"n":1}}}"#.into(),
        )
        .expect("a reply");
        assert!(reply.is_error());
        assert_eq!(reply.first_text(), "rate limited");
        assert_eq!(reply.structured_content(), Some(r#"{"n":1}"#));
        let plain = Reply::parse(r#"{"id":1,"result":[1,2]}"#.into()).expect("a reply");
        assert!(!plain.is_error());
        assert_eq!(plain.first_text(), "");
        assert_eq!(plain.structured_content(), None);
    }

    #[test]
    fn a_tree_becomes_a_reply() {
        let reply = Reply::from_value(&json!({"jsonrpc": "2.0", "id": 3, "result": {"x": 1e305}}))
            .expect("a reply");
        assert_eq!(reply.upstream_id(), 3);
        assert_eq!(reply.result(), Some(r#"{"x":1e+305}"#));
        assert!(Reply::from_value(&json!({"id": "s", "result": {}})).is_none());
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
