//! The one HTTP request shape every sink makes, and the errors it turns
//! into: one line naming the sink and the endpoint's host (never its path
//! or query: a Slack URL is itself the secret), redacted of every secret
//! the sink holds.

use std::io::Read;
use std::time::Duration;

use reqwest::blocking;
use reqwest::header::HeaderMap;
use reqwest::Method;
use toolpin_config::notify::{Secret, Sink, SinkKind};
use toolpin_manifest::text::one_line;

use crate::DeliveryError;

/// The most of an answer's body read: enough for an error message or a
/// JSON reply, and a misbehaving endpoint cannot make us read gigabytes.
const MAX_BODY: u64 = 64 * 1024;

/// The most of an answer's text put in an error message.
const MAX_EXCERPT: usize = 200;

/// What the service answered.
pub(crate) struct Answer {
    pub status: u16,
    pub headers: HeaderMap,
    pub body: String,
}

impl Answer {
    pub fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }
}

/// Whether an HTTP status is worth retrying: the service is overloaded,
/// rate-limiting or broken, not refusing what we sent.
pub(crate) fn retryable_status(status: u16) -> bool {
    status == 408 || status == 429 || (500..600).contains(&status)
}

pub(crate) struct Client {
    inner: blocking::Client,
    sink: String,
    timeout: Duration,
    redactions: Vec<(String, String)>,
}

impl Client {
    pub fn new(sink: &Sink, timeout: Duration) -> Result<Self, DeliveryError> {
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
        let inner = blocking::Client::builder()
            .timeout(timeout)
            .connect_timeout(timeout)
            .user_agent(concat!("toolpin/", env!("CARGO_PKG_VERSION")))
            // A redirect is reported, not followed: it would carry the
            // token or the signed body to wherever it points.
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| DeliveryError {
                message: format!("notify.{}: cannot set up the HTTP client: {e}", sink.name),
                retryable: false,
                reference: None,
            })?;
        Ok(Self {
            inner,
            sink: sink.name.clone(),
            timeout,
            redactions,
        })
    }

    /// An error for this sink: `notify.NAME: what`, redacted, on one line.
    pub fn error(&self, what: &str, retryable: bool, reference: Option<&str>) -> DeliveryError {
        let text = one_line(&toolpin_config::expand::redact(what, &self.redactions));
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
        let body = toolpin_config::expand::redact(&answer.body, &self.redactions);
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

    /// Sends one request. `doing` says what for, in errors.
    pub fn send(
        &self,
        doing: &str,
        method: Method,
        url: &str,
        headers: &[(&str, String)],
        body: Option<Vec<u8>>,
        reference: Option<&str>,
    ) -> Result<Answer, DeliveryError> {
        let parsed = reqwest::Url::parse(url)
            .map_err(|_| self.error(&format!("{doing}: the URL is not valid"), false, reference))?;
        let mut request = self.inner.request(method, parsed);
        for (name, value) in headers {
            request = request.header(*name, value.as_str());
        }
        if let Some(body) = body {
            request = request.body(body);
        }
        let fail = |e: reqwest::Error| {
            let why = if e.is_timeout() {
                format!("timed out after {}", seconds(self.timeout))
            } else if e.is_connect() {
                format!("cannot connect to {}: {}", host(url), root_cause(&e))
            } else {
                format!("request to {} failed: {}", host(url), root_cause(&e))
            };
            // The network, not what we sent: worth another try.
            self.error(&format!("{doing}: {why}"), true, reference)
        };
        let response = request.send().map_err(fail)?;
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let mut bytes = Vec::new();
        response
            .take(MAX_BODY)
            .read_to_end(&mut bytes)
            .map_err(|e| {
                let why = if e.kind() == std::io::ErrorKind::TimedOut
                    || e.to_string().contains("timed out")
                {
                    format!("timed out after {}", seconds(self.timeout))
                } else {
                    format!("reading the answer from {}: {e}", host(url))
                };
                self.error(&format!("{doing}: {why}"), true, reference)
            })?;
        Ok(Answer {
            status,
            headers,
            body: String::from_utf8_lossy(&bytes).into_owned(),
        })
    }
}

/// A Slack incoming webhook's secret is its URL's path
/// (`/services/T…/B…/…`), not the whole URL: an answer that echoes the
/// URL with another host, port or scheme, or the path alone, must not show
/// it either. The path and query (as sent, percent-encoded) for redaction.
fn slack_secret_path(url: &str) -> Vec<(String, String)> {
    let Ok(parsed) = reqwest::Url::parse(url) else {
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

fn seconds(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{}s", d.as_secs())
    } else {
        format!("{}ms", d.as_millis())
    }
}

/// The innermost error: reqwest's own text names the URL, its causes do
/// not.
fn root_cause(e: &reqwest::Error) -> String {
    let mut cause: &dyn std::error::Error = e;
    while let Some(next) = cause.source() {
        cause = next;
    }
    cause.to_string()
}

/// The endpoint's host and port, what a message may name.
pub(crate) fn host(url: &str) -> String {
    match reqwest::Url::parse(url) {
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
