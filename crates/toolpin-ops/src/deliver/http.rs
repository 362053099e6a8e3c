//! The HTTP transport the `[notify.NAME]` sinks send through: reqwest's
//! blocking client (the deliveries run on plain threads, outside any tokio
//! runtime), each request bounded by the sink's timeout, no redirect
//! followed, at most [`MAX_ANSWER`] bytes of an answer read, and a failure
//! told in one line that names the endpoint by its host only (reqwest's
//! own text names the whole URL; its innermost cause does not).

use std::io::Read;
use std::time::Duration;

use reqwest::blocking;
use toolpin_notify::{host, Method, Request, Response, Transport, TransportError, MAX_ANSWER};

/// One sink's client.
pub struct HttpTransport {
    inner: blocking::Client,
    timeout: Duration,
}

impl HttpTransport {
    /// A client whose requests each take at most `timeout` (connecting
    /// included). The error is reqwest's, when it cannot be set up.
    pub fn new(timeout: Duration) -> Result<Self, reqwest::Error> {
        let inner = blocking::Client::builder()
            .timeout(timeout)
            .connect_timeout(timeout)
            .user_agent(concat!("toolpin/", env!("CARGO_PKG_VERSION")))
            // A redirect is reported, not followed: it would carry the
            // token or the signed body to wherever it points.
            .redirect(reqwest::redirect::Policy::none())
            .build()?;
        Ok(Self { inner, timeout })
    }
}

impl Transport for HttpTransport {
    fn send(&self, request: &Request) -> Result<Response, TransportError> {
        let url = request.url.as_str();
        let method = match request.method {
            Method::Post => reqwest::Method::POST,
            Method::Patch => reqwest::Method::PATCH,
        };
        let mut builder = self.inner.request(method, request.url.clone());
        for (name, value) in &request.headers {
            builder = builder.header(*name, value.as_str());
        }
        builder = builder.body(request.body.clone());
        let fail = |e: reqwest::Error| {
            let why = if e.is_timeout() {
                format!("timed out after {}", seconds(self.timeout))
            } else if e.is_connect() {
                format!("cannot connect to {}: {}", host(url), root_cause(&e))
            } else {
                format!("request to {} failed: {}", host(url), root_cause(&e))
            };
            TransportError { why }
        };
        let response = builder.send().map_err(fail)?;
        let status = response.status().as_u16();
        let headers = response
            .headers()
            .iter()
            .map(|(name, value)| {
                let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
                (name.as_str().to_string(), value)
            })
            .collect();
        let mut body = Vec::new();
        response
            .take(MAX_ANSWER)
            .read_to_end(&mut body)
            .map_err(|e| {
                let why = if e.kind() == std::io::ErrorKind::TimedOut
                    || e.to_string().contains("timed out")
                {
                    format!("timed out after {}", seconds(self.timeout))
                } else {
                    format!("reading the answer from {}: {e}", host(url))
                };
                TransportError { why }
            })?;
        Ok(Response {
            status,
            headers,
            body,
        })
    }
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
