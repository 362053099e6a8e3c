//! OpenAPI documents as a source: read from a file or fetched over HTTP(S)
//! with the same client and headers as MCP servers, parsed as JSON or YAML,
//! and converted by `toolpin-openapi` into the sink one tool at a time.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

use reqwest::header::ACCEPT;
use serde_json::{Map, Number, Value};
use toolpin_manifest::json::{self, JsonError};
use toolpin_manifest::pointer::escape_token;

use crate::format::ToolSink;
use crate::mcp::http;
use crate::source::CaptureError;

/// Largest OpenAPI document read or fetched: 64 MiB, five times GitHub's
/// REST description (13 MB). Its `Value` tree takes several times the
/// text, so the limit bounds memory as well.
pub const MAX_DOCUMENT_BYTES: u64 = 64 << 20;

/// Default deadline for fetching a document by URL.
pub const DEFAULT_FETCH_TIMEOUT: Duration = Duration::from_secs(30);

/// Where the document is.
#[derive(Clone, Debug)]
pub enum DocumentLocation {
    File(PathBuf),
    /// Headers are already expanded; the caller redacts messages.
    Url {
        url: String,
        headers: Vec<(String, String)>,
    },
}

/// An `openapi` source: where the document is and how to convert it.
#[derive(Clone, Debug)]
pub struct OpenApiSpec {
    pub location: DocumentLocation,
    pub options: toolpin_openapi::Options,
    /// Deadline for fetching a URL (connecting and reading).
    pub timeout: Duration,
}

fn too_large(size: u64) -> String {
    format!(
        "the document is {size} bytes; toolpin reads OpenAPI documents of up to {MAX_DOCUMENT_BYTES} bytes (64 MiB)"
    )
}

/// Reads a document file, refusing directories and anything over
/// [`MAX_DOCUMENT_BYTES`].
pub fn read_document(path: &Path) -> Result<Vec<u8>, CaptureError> {
    let err = |reason: String| CaptureError::Read {
        path: path.display().to_string(),
        reason,
    };
    let meta = std::fs::metadata(path).map_err(|e| err(crate::source::io_reason(&e)))?;
    if meta.is_dir() {
        return Err(err("it is a directory".into()));
    }
    if meta.len() > MAX_DOCUMENT_BYTES {
        return Err(err(too_large(meta.len())));
    }
    let file = std::fs::File::open(path).map_err(|e| err(crate::source::io_reason(&e)))?;
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    // A file that grows while it is read stops at the limit too.
    file.take(MAX_DOCUMENT_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| err(crate::source::io_reason(&e)))?;
    if bytes.len() as u64 > MAX_DOCUMENT_BYTES {
        return Err(err(too_large(bytes.len() as u64)));
    }
    Ok(bytes)
}

/// Fetches a document with GET, sending `headers`, within `timeout`.
pub async fn fetch(
    url: &str,
    headers: &[(String, String)],
    timeout: Duration,
) -> Result<Vec<u8>, CaptureError> {
    let err = |reason: String| CaptureError::Read {
        path: url.to_string(),
        reason,
    };
    let parsed = http::parse_url(url).map_err(err)?;
    let client = http::build_client(timeout).map_err(err)?;
    let map = http::headers_from(headers).map_err(err)?;
    let request = async {
        let resp = client
            .get(parsed)
            .headers(map)
            .header(
                ACCEPT,
                "application/json, application/yaml;q=0.9, text/yaml;q=0.9, */*;q=0.5",
            )
            .send()
            .await
            .map_err(|e| http::transport_error("GET", e).message)?;
        if !resp.status().is_success() {
            return Err(format!("GET: {}", http::status_error(resp).await.message));
        }
        if let Some(len) = resp.content_length() {
            if len > MAX_DOCUMENT_BYTES {
                return Err(too_large(len));
            }
        }
        // The limit is in bytes and fits usize on every supported target.
        let limit = usize::try_from(MAX_DOCUMENT_BYTES).unwrap_or(usize::MAX);
        http::read_limited(resp, limit)
            .await
            .map_err(|e| format!("GET: {e} (the limit for an OpenAPI document is 64 MiB)"))
    };
    match tokio::time::timeout(timeout, request).await {
        Ok(result) => result.map_err(err),
        Err(_) => Err(err(format!(
            "GET timed out after {:.3}s",
            timeout.as_secs_f64()
        ))),
    }
}

/// Parses a document: JSON when its first character (after white space
/// and a byte-order mark) is `{`, YAML otherwise. Errors carry the line
/// and column.
pub fn parse_document(bytes: &[u8], origin: &str) -> Result<Value, CaptureError> {
    let text = json::as_text(bytes, origin)?;
    let first = text.trim_start().chars().next();
    match first {
        None => Err(JsonError {
            origin: origin.to_string(),
            line: 1,
            column: 1,
            message: "empty document, expected an OpenAPI document in JSON or YAML".into(),
        }
        .into()),
        Some('{') => json::parse(text.as_bytes(), origin).map_err(CaptureError::from),
        Some(_) => parse_yaml(text, origin),
    }
}

fn parse_yaml(text: &str, origin: &str) -> Result<Value, CaptureError> {
    let mut doc: serde_norway::Value =
        serde_norway::from_str(text).map_err(|e| yaml_error(&e, origin))?;
    // `<<: *anchor` merge keys, as YAML 1.1 tools read them.
    doc.apply_merge().map_err(|e| yaml_error(&e, origin))?;
    let mut at = Vec::new();
    yaml_to_json(doc, &mut at).map_err(|reason| CaptureError::Format {
        origin: origin.to_string(),
        reason,
    })
}

/// `text` without its " at line N column M" parts: the location is given
/// once, in front.
fn strip_positions(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find(" at line ") {
        out.push_str(&rest[..i]);
        let after = &rest[i + " at line ".len()..];
        let digits = |s: &str| s.len() - s.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        let n = digits(after);
        let tail = &after[n..];
        match tail.strip_prefix(" column ") {
            Some(col) if n > 0 => rest = &col[digits(col)..],
            _ => {
                out.push_str(" at line ");
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

fn yaml_error(e: &serde_norway::Error, origin: &str) -> CaptureError {
    let full = e.to_string();
    let bare = strip_positions(&full);
    match e.location() {
        Some(loc) => JsonError {
            origin: origin.to_string(),
            line: loc.line().max(1),
            column: loc.column().max(1),
            message: format!("invalid YAML: {bare}"),
        }
        .into(),
        None => CaptureError::Format {
            origin: origin.to_string(),
            reason: format!("invalid YAML: {bare}"),
        },
    }
}

fn pointer(at: &[String]) -> String {
    let mut out = String::from("#");
    for token in at {
        out.push('/');
        out.push_str(&escape_token(token));
    }
    out
}

/// A YAML value as JSON: scalar mapping keys become strings (`200:` is the
/// key "200"), tags are dropped, and what JSON cannot hold (`.nan`, a
/// sequence as a key) is an error naming where it is.
fn yaml_to_json(value: serde_norway::Value, at: &mut Vec<String>) -> Result<Value, String> {
    use serde_norway::Value as Y;
    Ok(match value {
        Y::Null => Value::Null,
        Y::Bool(b) => Value::Bool(b),
        Y::String(s) => Value::String(s),
        Y::Number(n) => {
            if let Some(u) = n.as_u64() {
                Value::Number(u.into())
            } else if let Some(i) = n.as_i64() {
                Value::Number(i.into())
            } else {
                let f = n.as_f64().unwrap_or(f64::NAN);
                Value::Number(
                    Number::from_f64(f).ok_or_else(|| {
                        format!("{}: {n} is not a number JSON can hold", pointer(at))
                    })?,
                )
            }
        }
        Y::Sequence(items) => {
            let mut out = Vec::with_capacity(items.len());
            for (i, item) in items.into_iter().enumerate() {
                at.push(i.to_string());
                out.push(yaml_to_json(item, at)?);
                at.pop();
            }
            Value::Array(out)
        }
        Y::Mapping(map) => {
            let mut out = Map::new();
            for (key, item) in map {
                let key = match key {
                    Y::String(s) => s,
                    Y::Number(n) => n.to_string(),
                    Y::Bool(b) => b.to_string(),
                    Y::Null => "null".into(),
                    Y::Tagged(t) => match t.value {
                        Y::String(s) => s,
                        _ => {
                            return Err(format!(
                                "{}: a mapping key is a tagged collection; only scalar keys can become JSON",
                                pointer(at)
                            ))
                        }
                    },
                    Y::Sequence(_) | Y::Mapping(_) => {
                        return Err(format!(
                            "{}: a mapping key is a collection; only scalar keys can become JSON",
                            pointer(at)
                        ))
                    }
                };
                at.push(key.clone());
                let item = yaml_to_json(item, at)?;
                at.pop();
                out.insert(key, item);
            }
            Value::Object(out)
        }
        Y::Tagged(tagged) => yaml_to_json(tagged.value, at)?,
    })
}

/// Converts a parsed document into `sink`; returns the conversion's
/// warnings.
pub fn convert_into(
    doc: &Value,
    options: &toolpin_openapi::Options,
    origin: &str,
    sink: &mut dyn ToolSink,
) -> Result<Vec<String>, CaptureError> {
    let converted =
        toolpin_openapi::convert(doc, options, &mut |tool| sink.push(tool)).map_err(|e| {
            CaptureError::Format {
                origin: origin.to_string(),
                reason: e.message,
            }
        })?;
    Ok(converted.warnings)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(text: &str) -> Result<Value, String> {
        parse_document(text.as_bytes(), "api.yaml").map_err(|e| e.to_string())
    }

    #[test]
    fn json_and_yaml_are_told_apart_by_content() {
        assert_eq!(
            parse("{\"openapi\": \"3.1.0\"}").expect("json"),
            json!({"openapi": "3.1.0"})
        );
        assert_eq!(
            parse("openapi: 3.1.0\npaths: {}\n").expect("yaml"),
            json!({"openapi": "3.1.0", "paths": {}})
        );
    }

    #[test]
    fn yaml_keys_tags_and_merges_become_json() {
        let doc = parse(
            "responses:\n  200: {description: ok}\n  true: x\n  ~: y\nbase: &b {type: string}\n\
             merged:\n  <<: *b\n  format: uuid\ntagged: !custom 3\n",
        )
        .expect("yaml");
        assert_eq!(
            doc,
            json!({
                "responses": {"200": {"description": "ok"}, "true": "x", "null": "y"},
                "base": {"type": "string"},
                "merged": {"type": "string", "format": "uuid"},
                "tagged": 3,
            })
        );
    }

    #[test]
    fn yaml_errors_are_located() {
        let err = parse("openapi: 3.1.0\npaths:\n  /a: [1,\n").expect_err("invalid");
        assert!(err.starts_with("api.yaml:4:1: invalid YAML: "), "{err}");
        // The parser locates a duplicate key at the mapping that holds it.
        let err = parse("x: 0\nm:\n  a: 1\n  a: 2\n").expect_err("duplicate");
        assert_eq!(
            err,
            "api.yaml:3:3: invalid YAML: m: duplicate entry with key \"a\""
        );
        let err = parse("a:\n  b: .nan\n").expect_err("nan");
        assert_eq!(err, "api.yaml: #/a/b: .nan is not a number JSON can hold");
        let err = parse("? [1, 2]\n: x\n").expect_err("collection key");
        assert!(err.contains("#: a mapping key is a collection"), "{err}");
        let err = parse("{\"a\": }").expect_err("json");
        assert!(err.starts_with("api.yaml:1:7: invalid JSON: "), "{err}");
        let err = parse("  \n").expect_err("empty");
        assert!(err.contains("empty document"), "{err}");
    }

    #[test]
    fn positions_are_stripped_from_parser_messages() {
        assert_eq!(
            strip_positions("did not find expected ',' or ']' at line 5 column 1, while parsing a flow sequence at line 4 column 10"),
            "did not find expected ',' or ']', while parsing a flow sequence"
        );
        assert_eq!(strip_positions("a key at line x"), "a key at line x");
    }

    #[test]
    fn billion_laughs_is_refused() {
        let mut doc = String::from("a: &a [x, x, x, x, x, x, x, x, x, x]\n");
        for (i, c) in ('b'..='j').enumerate() {
            let prev = (b'a' + i as u8) as char;
            doc += &format!("{c}: &{c} [*{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}]\n");
        }
        let err = parse(&doc).expect_err("expansion");
        assert!(err.contains("repetition limit exceeded"), "{err}");
    }
}
