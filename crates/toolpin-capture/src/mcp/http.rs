//! HTTP transports: Streamable HTTP (2025-03-26 and later: POST, JSON or SSE
//! answers, `Mcp-Session-Id`, `MCP-Protocol-Version`, DELETE on close) and
//! the legacy HTTP+SSE transport of 2024-11-05 (a GET event stream whose
//! `endpoint` event names where to POST).

use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue, ACCEPT, CONTENT_TYPE};
use reqwest::{StatusCode, Url};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use super::client::{limit_of, too_large, Incoming, Limit, SendError};
use super::excerpt;
use super::sse::Parser;

/// Largest response body read.
const MAX_BODY: usize = 256 << 20;
const SESSION_HEADER: &str = "mcp-session-id";
const VERSION_HEADER: &str = "mcp-protocol-version";

/// Which HTTP transport to use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum HttpMode {
    /// Streamable HTTP, falling back to legacy SSE when the server only
    /// speaks that.
    #[default]
    Auto,
    /// Streamable HTTP only.
    Streamable,
    /// Legacy HTTP+SSE only.
    Sse,
}

/// How to reach an HTTP server.
#[derive(Clone, Debug)]
pub struct HttpSpec {
    pub url: String,
    /// Header name and value, already expanded.
    pub headers: Vec<(String, String)>,
    pub mode: HttpMode,
}

pub(crate) fn build_client(connect_timeout: Duration) -> Result<reqwest::Client, String> {
    reqwest::Client::builder()
        .connect_timeout(connect_timeout)
        .user_agent(concat!("toolpin/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| format!("cannot build the HTTP client: {e}"))
}

fn header_map(spec: &HttpSpec) -> Result<HeaderMap, String> {
    headers_from(&spec.headers)
}

/// Request headers from (name, value) pairs; a value is never echoed.
pub(crate) fn headers_from(headers: &[(String, String)]) -> Result<HeaderMap, String> {
    let mut map = HeaderMap::new();
    for (name, value) in headers {
        let n = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| format!("invalid header name {name:?}"))?;
        // The value may hold a secret: never echo it.
        let v = HeaderValue::from_str(value)
            .map_err(|_| format!("header {name:?} has a value that is not valid in HTTP"))?;
        map.insert(n, v);
    }
    Ok(map)
}

pub(crate) fn parse_url(url: &str) -> Result<Url, String> {
    let parsed = Url::parse(url).map_err(|e| format!("invalid URL: {e}"))?;
    match parsed.scheme() {
        "http" | "https" => Ok(parsed),
        other => Err(format!(
            "unsupported URL scheme {other:?}: use http or https"
        )),
    }
}

pub(crate) async fn status_error(resp: reqwest::Response) -> SendError {
    let status = resp.status();
    let body = read_limited(resp, 4096).await.unwrap_or_default();
    let text = excerpt(&String::from_utf8_lossy(&body), 200);
    let reason = status.canonical_reason().unwrap_or("");
    SendError {
        message: if text.is_empty() {
            format!("HTTP {} {reason}", status.as_u16())
        } else {
            format!("HTTP {} {reason}: {text}", status.as_u16())
        },
        http_status: Some(status.as_u16()),
        unreachable: false,
    }
}

pub(crate) async fn read_limited(
    mut resp: reqwest::Response,
    limit: usize,
) -> Result<Vec<u8>, String> {
    let mut body = Vec::new();
    while let Some(chunk) = resp
        .chunk()
        .await
        .map_err(|e| format!("reading the response failed: {e}"))?
    {
        if body.len() + chunk.len() > limit {
            return Err(format!("the response is larger than {limit} bytes"));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

pub(crate) fn transport_error(what: &str, e: reqwest::Error) -> SendError {
    let kind = if e.is_connect() {
        "cannot connect"
    } else if e.is_timeout() {
        "timed out"
    } else {
        "failed"
    };
    // reqwest's messages name the URL; the caller redacts secrets in it.
    let mut source: Option<&dyn std::error::Error> = std::error::Error::source(&e);
    let mut detail = String::new();
    while let Some(s) = source {
        detail = s.to_string();
        source = s.source();
    }
    SendError {
        unreachable: e.is_connect(),
        message: if detail.is_empty() {
            format!("{what} {kind}")
        } else {
            format!("{what} {kind}: {detail}")
        },
        http_status: None,
    }
}

const METHOD_HEADER: &str = "mcp-method";
const NAME_HEADER: &str = "mcp-name";

/// The routing headers of the stateless revision (2026-07-28): a request
/// that carries its protocol version in `_meta` repeats it, its method and,
/// for `tools/call`, `prompts/get` and `resources/read`, the name it acts on,
/// as HTTP headers so that gateways can route without reading the body.
fn routing_headers(message: &Value) -> Vec<(&'static str, HeaderValue)> {
    let Some(method) = message.get("method").and_then(Value::as_str) else {
        return Vec::new();
    };
    let params = message.get("params");
    let Some(version) = params
        .and_then(|p| p.pointer("/_meta/io.modelcontextprotocol~1protocolVersion"))
        .and_then(Value::as_str)
    else {
        return Vec::new();
    };
    let mut headers = Vec::new();
    if let Ok(v) = HeaderValue::from_str(version) {
        headers.push((VERSION_HEADER, v));
    }
    if let Ok(m) = HeaderValue::from_str(method) {
        headers.push((METHOD_HEADER, m));
    }
    let name_key = match method {
        "tools/call" | "prompts/get" => Some("name"),
        "resources/read" => Some("uri"),
        _ => None,
    };
    if let Some(name) = name_key.and_then(|k| params?.get(k)?.as_str()) {
        if let Ok(n) = HeaderValue::from_str(&header_safe(name)) {
            headers.push((NAME_HEADER, n));
        }
    }
    headers
}

/// A value as it can travel in a header: printable ASCII without edge
/// white space as is, anything else in the `=?base64?…?=` form.
fn header_safe(value: &str) -> String {
    let plain = !value.is_empty()
        && value.bytes().all(|b| (0x20..0x7f).contains(&b))
        && value.trim() == value
        && !(value.starts_with("=?base64?") && value.ends_with("?="));
    if plain {
        value.to_string()
    } else {
        format!("=?base64?{}?=", base64(value.as_bytes()))
    }
}

fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, &b)| n | (b as u32) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Streamable HTTP. Cloning shares the connection pool and session, so
/// clones can POST concurrently.
#[derive(Clone)]
pub struct StreamableTransport {
    http: reqwest::Client,
    url: Url,
    headers: HeaderMap,
    session_id: Option<HeaderValue>,
    protocol_version: Option<HeaderValue>,
    tx: mpsc::UnboundedSender<Incoming>,
    /// The largest answer read ([`super::Client::limit_messages`]).
    limit: Limit,
}

impl StreamableTransport {
    pub fn new(
        spec: &HttpSpec,
        connect_timeout: Duration,
        tx: mpsc::UnboundedSender<Incoming>,
        limit: Limit,
    ) -> Result<Self, String> {
        Ok(Self {
            http: build_client(connect_timeout)?,
            url: parse_url(&spec.url)?,
            headers: header_map(spec)?,
            session_id: None,
            protocol_version: None,
            tx,
            limit,
        })
    }

    /// Where this transport delivers what the server sends.
    pub fn incoming_sender(&self) -> mpsc::UnboundedSender<Incoming> {
        self.tx.clone()
    }

    /// Sent on every request after negotiation.
    pub fn set_protocol_version(&mut self, version: &str) {
        self.protocol_version = HeaderValue::from_str(version).ok();
    }

    pub async fn send(&mut self, message: &Value) -> Result<(), SendError> {
        let body = serde_json::to_vec(message).map_err(|e| SendError::plain(e.to_string()))?;
        let mut req = self
            .http
            .post(self.url.clone())
            .headers(self.headers.clone())
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, "application/json, text/event-stream")
            .body(body);
        if let Some(id) = &self.session_id {
            req = req.header(SESSION_HEADER, id.clone());
        }
        let routing = routing_headers(message);
        if routing.is_empty() {
            if let Some(v) = &self.protocol_version {
                req = req.header(VERSION_HEADER, v.clone());
            }
        }
        for (name, value) in routing {
            req = req.header(name, value);
        }
        let resp = req.send().await.map_err(|e| transport_error("POST", e))?;
        // Only a successful answer starts a session; an error page may carry
        // an id that means nothing.
        if resp.status().is_success() {
            if let Some(id) = resp.headers().get(SESSION_HEADER) {
                self.session_id = Some(id.clone());
            }
        }
        if resp.status() == StatusCode::ACCEPTED || resp.status() == StatusCode::NO_CONTENT {
            return Ok(());
        }
        if !resp.status().is_success() {
            return Err(status_error(resp).await);
        }
        let content_type = resp
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_ascii_lowercase();
        let request_id = message
            .get("id")
            .filter(|_| message.get("method").is_some())
            .cloned();
        let cap = limit_of(&self.limit, MAX_BODY);
        if content_type.starts_with("text/event-stream") {
            self.read_event_stream(resp, request_id, cap).await
        } else {
            let body = match read_limited(resp, cap).await {
                Ok(body) => body,
                // Over the client's limit: the request is answered so,
                // and the rest of the body is never read.
                Err(_) if cap < MAX_BODY => {
                    self.deliver(too_large(request_id.unwrap_or(Value::Null), cap));
                    return Ok(());
                }
                Err(e) => return Err(SendError::plain(e)),
            };
            if body.iter().all(u8::is_ascii_whitespace) {
                return Ok(());
            }
            let value: Value = serde_json::from_slice(&body).map_err(|e| {
                SendError::plain(format!(
                    "the server sent invalid JSON ({e}): {}",
                    excerpt(&String::from_utf8_lossy(&body[..body.len().min(200)]), 120)
                ))
            })?;
            self.deliver(value);
            Ok(())
        }
    }

    /// Reads SSE `message` events until the response to `request_id`
    /// arrives (the server may close the stream then, or keep it open).
    async fn read_event_stream(
        &mut self,
        mut resp: reqwest::Response,
        request_id: Option<Value>,
        cap: usize,
    ) -> Result<(), SendError> {
        let mut parser = Parser::new(cap);
        while let Some(chunk) = resp
            .chunk()
            .await
            .map_err(|e| transport_error("reading the event stream", e))?
        {
            let events = match parser.feed(&chunk) {
                Ok(events) => events,
                // Over the client's limit: as for a JSON body.
                Err(_) if cap < MAX_BODY => {
                    self.deliver(too_large(request_id.unwrap_or(Value::Null), cap));
                    return Ok(());
                }
                Err(e) => return Err(SendError::plain(e)),
            };
            for event in events {
                if event.event != "message" || event.data.trim().is_empty() {
                    continue;
                }
                let value: Value = serde_json::from_str(&event.data).map_err(|e| {
                    SendError::plain(format!(
                        "the server sent an event that is not JSON ({e}): {}",
                        excerpt(&event.data, 120)
                    ))
                })?;
                let answers = request_id.as_ref().is_some_and(|id| {
                    value.get("id") == Some(id)
                        && (value.get("result").is_some() || value.get("error").is_some())
                });
                self.deliver(value);
                if answers {
                    return Ok(());
                }
            }
        }
        Ok(())
    }

    fn deliver(&self, value: Value) {
        match value {
            Value::Array(batch) => batch.into_iter().for_each(|m| {
                let _ = self.tx.send(Incoming::Message(m));
            }),
            single => {
                let _ = self.tx.send(Incoming::Message(single));
            }
        }
    }

    /// Ends the session on the server (DELETE), when it gave one.
    pub async fn close(&mut self) {
        if let Some(id) = self.session_id.take() {
            let req = self
                .http
                .delete(self.url.clone())
                .headers(self.headers.clone())
                .header(SESSION_HEADER, id);
            let _ = tokio::time::timeout(Duration::from_secs(2), req.send()).await;
        }
    }
}

/// Legacy HTTP+SSE.
pub struct SseTransport {
    http: reqwest::Client,
    endpoint: Url,
    headers: HeaderMap,
    reader: JoinHandle<()>,
}

impl SseTransport {
    /// Opens the event stream and waits for its `endpoint` event.
    pub async fn connect(
        spec: &HttpSpec,
        connect_timeout: Duration,
        tx: mpsc::UnboundedSender<Incoming>,
        limit: Limit,
    ) -> Result<Self, SendError> {
        let http = build_client(connect_timeout).map_err(SendError::plain)?;
        let url = parse_url(&spec.url).map_err(SendError::plain)?;
        let headers = header_map(spec).map_err(SendError::plain)?;
        let resp = http
            .get(url.clone())
            .headers(headers.clone())
            .header(ACCEPT, "text/event-stream")
            .send()
            .await
            .map_err(|e| transport_error("GET", e))?;
        if !resp.status().is_success() {
            return Err(status_error(resp).await);
        }
        let (endpoint_tx, endpoint_rx) = oneshot::channel();
        let reader = tokio::spawn(read_legacy_stream(resp, tx, endpoint_tx, limit));
        let endpoint = match tokio::time::timeout(connect_timeout, endpoint_rx).await {
            Ok(Ok(path)) => url.join(&path).map_err(|e| {
                SendError::plain(format!("the endpoint event holds an invalid URL: {e}"))
            })?,
            Ok(Err(_)) => {
                reader.abort();
                return Err(SendError::plain(
                    "the event stream ended before its `endpoint` event",
                ));
            }
            Err(_) => {
                reader.abort();
                return Err(SendError::plain(
                    "no `endpoint` event on the event stream (is this a legacy SSE server?)",
                ));
            }
        };
        Ok(Self {
            http,
            endpoint,
            headers,
            reader,
        })
    }

    pub async fn send(&mut self, message: &Value) -> Result<(), SendError> {
        let body = serde_json::to_vec(message).map_err(|e| SendError::plain(e.to_string()))?;
        let resp = self
            .http
            .post(self.endpoint.clone())
            .headers(self.headers.clone())
            .header(CONTENT_TYPE, "application/json")
            .body(body)
            .send()
            .await
            .map_err(|e| transport_error("POST", e))?;
        if resp.status().is_success() {
            Ok(())
        } else {
            Err(status_error(resp).await)
        }
    }

    pub fn close(&mut self) {
        self.reader.abort();
    }
}

impl Drop for SseTransport {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

async fn read_legacy_stream(
    mut resp: reqwest::Response,
    tx: mpsc::UnboundedSender<Incoming>,
    endpoint: oneshot::Sender<String>,
    limit: Limit,
) {
    let mut endpoint = Some(endpoint);
    let mut parser = Parser::new(MAX_BODY);
    loop {
        // The one stream carries every answer: an event over the client's
        // limit ends it (the parser refuses the line).
        parser.max_line = limit_of(&limit, MAX_BODY);
        let chunk = match resp.chunk().await {
            Ok(Some(c)) => c,
            Ok(None) => {
                let _ = tx.send(Incoming::Closed(
                    "the server closed the event stream".into(),
                ));
                return;
            }
            Err(e) => {
                let _ = tx.send(Incoming::Closed(
                    transport_error("reading the event stream", e).message,
                ));
                return;
            }
        };
        let events = match parser.feed(&chunk) {
            Ok(events) => events,
            Err(reason) => {
                let _ = tx.send(Incoming::Closed(reason));
                return;
            }
        };
        for event in events {
            match event.event.as_str() {
                "endpoint" => {
                    if let Some(sender) = endpoint.take() {
                        let _ = sender.send(event.data.trim().to_string());
                    }
                }
                "message" => match serde_json::from_str::<Value>(&event.data) {
                    Ok(v) => {
                        let _ = tx.send(Incoming::Message(v));
                    }
                    Err(e) => {
                        let _ = tx.send(Incoming::Closed(format!(
                            "the server sent an event that is not JSON ({e}): {}",
                            excerpt(&event.data, 120)
                        )));
                        return;
                    }
                },
                _ => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn stateless_requests_carry_routing_headers() {
        let msg = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "get_sum",
            "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}});
        let h: Vec<(&str, String)> = routing_headers(&msg)
            .into_iter()
            .map(|(n, v)| (n, v.to_str().unwrap_or("").to_string()))
            .collect();
        assert_eq!(
            h,
            vec![
                ("mcp-protocol-version", "2026-07-28".into()),
                ("mcp-method", "tools/call".into()),
                ("mcp-name", "get_sum".into())
            ]
        );
        assert!(
            routing_headers(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})).is_empty()
        );
    }

    #[test]
    fn header_values_outside_printable_ascii_are_base64() {
        assert_eq!(header_safe("plain-name"), "plain-name");
        assert_eq!(header_safe("café"), "=?base64?Y2Fmw6k=?=");
        assert_eq!(header_safe(" x"), "=?base64?IHg=?=");
        assert_eq!(base64(b"ab"), "YWI=");
        assert_eq!(base64(b"abc"), "YWJj");
        assert_eq!(base64(b"a"), "YQ==");
    }
}
