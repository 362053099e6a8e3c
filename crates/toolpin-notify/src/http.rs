//! The one HTTP request shape every sink makes, as data ([`Request`]),
//! sent through a [`Transport`] the caller gives (toolpin-ops's is
//! reqwest's blocking client), and the errors it turns into: one line
//! naming the sink and the endpoint's host (never its path or query: a
//! Slack URL is itself the secret), redacted of every secret the sink
//! holds.

use std::fmt;

use toolpin_config::notify::{Secret, Sink, SinkKind};
use toolpin_manifest::text::one_line;
use toolpin_manifest::Redactor;
use url::Url;

use crate::DeliveryError;

/// The most of an answer's body a [`Transport`] reads: enough for an
/// error message or a JSON reply, and a misbehaving endpoint cannot make
/// us read gigabytes.
pub const MAX_ANSWER: u64 = 64 * 1024;

/// The most of an answer's text put in an error message.
const MAX_EXCERPT: usize = 200;

/// The methods the sinks use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    Post,
    Patch,
}

impl Method {
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Post => "POST",
            Method::Patch => "PATCH",
        }
    }
}

/// One request a sink makes, as data. Its `Debug` shows the method and
/// the endpoint's host only: the URL, a header or the body may hold a
/// secret.
#[derive(Clone)]
pub struct Request {
    pub method: Method,
    pub url: Url,
    pub headers: Vec<(&'static str, String)>,
    pub body: Vec<u8>,
}

impl fmt::Debug for Request {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.method.as_str(), host(self.url.as_str()))
    }
}

/// What the service answered: at most [`MAX_ANSWER`] bytes of its body.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Response {
    pub status: u16,
    /// Names in lower case, in the order received.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

/// Why a request got no answer: the network, not what was sent, so worth
/// another try. One line that names the endpoint by its host at most
/// (`timed out after 10s`, `cannot connect to HOST: …`); the sink's
/// secrets are redacted from it before it is shown.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TransportError {
    pub why: String,
}

/// Sends a sink's requests, one at a time (the GitHub sink's conversation
/// is several). Blocking: a delivery waits for each answer.
pub trait Transport {
    /// Sends `request` and reads its answer (at most [`MAX_ANSWER`] bytes
    /// of the body). Redirects are answers, not followed.
    fn send(&self, request: &Request) -> Result<Response, TransportError>;
}

/// What the service answered, as a sink reads it.
pub(crate) struct Answer {
    pub status: u16,
    headers: Vec<(String, String)>,
    pub body: String,
}

impl Answer {
    pub fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }

    /// The first value of header `name` (lower case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Whether an HTTP status is worth retrying: the service is overloaded,
/// rate-limiting or broken, not refusing what we sent.
pub(crate) fn retryable_status(status: u16) -> bool {
    status == 408 || status == 429 || (500..600).contains(&status)
}

pub(crate) struct Client<'a> {
    transport: &'a dyn Transport,
    sink: &'a str,
    redactor: Redactor,
}

impl<'a> Client<'a> {
    pub fn new(sink: &'a Sink, transport: &'a dyn Transport) -> Self {
        let mut secrets: Vec<&Secret> = sink.url.iter().collect();
        match &sink.kind {
            SinkKind::Slack => {}
            SinkKind::PagerDuty { routing_key } => secrets.push(routing_key),
            SinkKind::Webhook { secret } => secrets.extend(secret.iter()),
            SinkKind::GitHub { token, .. } => secrets.push(token),
        }
        let mut redactions: Vec<(String, String)> = secrets
            .iter()
            .flat_map(|s| s.redactions().iter().cloned())
            .collect();
        if let (SinkKind::Slack, Some(url)) = (&sink.kind, &sink.url) {
            redactions.extend(slack_secret_path(url.expose()));
        }
        Self {
            transport,
            sink: &sink.name,
            redactor: Redactor::new(&redactions),
        }
    }

    /// An error for this sink: `notify.NAME: what`, redacted, on one line.
    pub fn error(&self, what: &str, retryable: bool, reference: Option<&str>) -> DeliveryError {
        let text = one_line(&self.redactor.redact(what));
        DeliveryError {
            message: format!("notify.{}: {text}", self.sink),
            retryable,
            reference: reference.map(str::to_string),
        }
    }

    /// The error for an answer that is not what the service documents:
    /// retryable for 408, 429 and 5xx (and `also_retryable`).
    pub fn status_error(
        &self,
        doing: &str,
        url: &str,
        answer: &Answer,
        also_retryable: bool,
        reference: Option<&str>,
    ) -> DeliveryError {
        // Redacted before it is cut, so that no part of a secret is left.
        let body = self.redactor.redact(&answer.body);
        let said = excerpt(&body);
        let said = if said.is_empty() {
            String::new()
        } else {
            format!(": {said}")
        };
        self.error(
            &format!("{doing}: HTTP {} from {}{said}", answer.status, host(url)),
            retryable_status(answer.status) || also_retryable,
            reference,
        )
    }

    /// POSTs a JSON document: how Slack, PagerDuty and the webhook deliver.
    pub fn post_json(
        &self,
        doing: &str,
        url: &str,
        document: &serde_json::Value,
        reference: Option<&str>,
    ) -> Result<Answer, DeliveryError> {
        self.send(
            doing,
            Method::Post,
            url,
            vec![("Content-Type", "application/json".to_string())],
            document.to_string().into_bytes(),
            reference,
        )
    }

    /// Sends one request. `doing` says what for, in errors.
    pub fn send(
        &self,
        doing: &str,
        method: Method,
        url: &str,
        headers: Vec<(&'static str, String)>,
        body: Vec<u8>,
        reference: Option<&str>,
    ) -> Result<Answer, DeliveryError> {
        let url = Url::parse(url)
            .map_err(|_| self.error(&format!("{doing}: the URL is not valid"), false, reference))?;
        let request = Request {
            method,
            url,
            headers,
            body,
        };
        let response = self
            .transport
            .send(&request)
            // The network, not what we sent: worth another try.
            .map_err(|e| self.error(&format!("{doing}: {}", e.why), true, reference))?;
        Ok(Answer {
            status: response.status,
            headers: response.headers,
            body: String::from_utf8_lossy(&response.body).into_owned(),
        })
    }
}

/// A Slack incoming webhook's secret is its URL's path
/// (`/services/T…/B…/…`), not the whole URL: an answer that echoes the
/// URL with another host, port or scheme, or the path alone, must not show
/// it either. The path and query (as sent, percent-encoded) for redaction.
fn slack_secret_path(url: &str) -> Vec<(String, String)> {
    let Ok(parsed) = Url::parse(url) else {
        return Vec::new();
    };
    let path = parsed.path();
    let mut forms = Vec::new();
    if path.trim_matches('/').is_empty() {
        return forms;
    }
    if let Some(query) = parsed.query() {
        forms.push(("***".to_string(), format!("{path}?{query}")));
    }
    forms.push(("***".to_string(), path.to_string()));
    forms
}

/// The endpoint's host and port, what a message may name.
pub fn host(url: &str) -> String {
    match Url::parse(url) {
        Ok(u) => match (u.host_str(), u.port()) {
            (Some(h), Some(p)) => format!("{h}:{p}"),
            (Some(h), None) => h.to_string(),
            _ => "the endpoint".to_string(),
        },
        Err(_) => "the endpoint".to_string(),
    }
}

/// What an answer says, short: a JSON `message` (GitHub, PagerDuty) with
/// its `errors`, or the start of the text.
fn excerpt(body: &str) -> String {
    let text = match serde_json::from_str::<serde_json::Value>(body) {
        Ok(v) => {
            let message = v.get("message").and_then(|m| m.as_str()).unwrap_or("");
            match v.get("errors") {
                Some(errors) if !message.is_empty() => format!("{message} {errors}"),
                Some(errors) => errors.to_string(),
                None if !message.is_empty() => message.to_string(),
                None => body.to_string(),
            }
        }
        Err(_) => body.to_string(),
    };
    let text = one_line(text.trim());
    if text.chars().count() > MAX_EXCERPT {
        let cut: String = text.chars().take(MAX_EXCERPT).collect();
        format!("{cut}…")
    } else {
        text
    }
}
