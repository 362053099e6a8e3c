//! Notification sinks for the drift ledger's outbox (issue 18): one
//! [`Delivery`] (a trigger, escalation or resolve of an [`Event`]) sent to
//! one `[notify.NAME]` sink: a Slack incoming webhook, PagerDuty Events API
//! v2, a generic signed JSON webhook, or a GitHub issue per event.
//!
//! - The payloads are pure functions of the delivery ([`slack_payload`],
//!   [`pagerduty_payload`], [`webhook_payload`], [`github_issue`], …), so
//!   they are tested without a network.
//! - [`deliver`] sends one delivery, synchronously, through the
//!   [`Transport`] it is given: each request built as data (a [`Request`]),
//!   each answer read back (a [`Response`]); toolpin-ops's transport is
//!   reqwest's blocking client, so this crate has no HTTP client. It says
//!   whether a failure is worth retrying. Retries and backoff are the
//!   ledger's outbox's (`toolpin_ledger_model::backoff`, `MAX_ATTEMPTS`).
//! - No secret (a routing key, a token, a Slack URL, an HMAC secret) is in
//!   any error message: messages name the sink and the endpoint's host only,
//!   and whatever a service answers is redacted.
//!
//! docs/notify.md is the specification.

mod github;
mod http;
mod pagerduty;
mod slack;
mod text;
mod webhook;

use std::fmt;

use toolpin_config::notify::{Sink, SinkKind};
use toolpin_ledger_model::{Delivery, Event};
use toolpin_manifest::Severity;

pub use github::{github_comment, github_issue, GITHUB_API};
pub use http::{host, Method, Request, Response, Transport, TransportError, MAX_ANSWER};
pub use pagerduty::{pagerduty_dedup_key, pagerduty_payload, pagerduty_severity, PAGERDUTY_EVENTS};
pub use slack::{slack_payload, SLACK_SECTION_LIMIT};
pub use text::{accept_command, summary};
pub use webhook::{signature, webhook_payload, SCHEMA as WEBHOOK_SCHEMA};

/// A delivery the sink took.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Delivered {
    /// What the sink calls the event (a GitHub issue's number, a PagerDuty
    /// dedup key), to hand back with the event's later notices.
    pub reference: Option<String>,
}

/// A delivery the sink did not take.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeliveryError {
    /// One line, `notify.NAME: …`, with no secret in it.
    pub message: String,
    /// Whether trying again later may succeed: a connection error, a
    /// timeout, HTTP 408, 429 or 5xx. Another 4xx will fail again.
    pub retryable: bool,
    /// A reference learned before a later step failed (a GitHub issue
    /// created, its comment not): keep it, so the retry does not create
    /// a second issue.
    pub reference: Option<String>,
}

impl fmt::Display for DeliveryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for DeliveryError {}

/// Whether an event of `tool` of `server` in `environment` at `severity`
/// goes to `sink` (see `toolpin_config::notify::Route::matches`: a
/// server-level event, tool `""`, is not excluded by a `tools` filter).
pub fn routes(
    sink: &Sink,
    environment: &str,
    server: &str,
    tool: &str,
    severity: Option<Severity>,
) -> bool {
    sink.route.matches(environment, server, tool, severity)
}

/// Whether `event` goes to `sink`.
pub fn routes_event(sink: &Sink, event: &Event) -> bool {
    routes(
        sink,
        &event.environment,
        &event.server,
        &event.tool,
        event.severity,
    )
}

/// Sends `delivery` to `sink` through `transport`. `reference` is what the
/// sink called the event before (the GitHub issue's number). Nothing is
/// sent while a secret's variable is unset. Blocking: each request waits
/// for its answer.
pub fn deliver(
    sink: &Sink,
    delivery: &Delivery,
    reference: Option<&str>,
    transport: &dyn Transport,
) -> Result<Delivered, DeliveryError> {
    sink.ready().map_err(|message| DeliveryError {
        message,
        // A variable set later makes it work: the outbox retries.
        retryable: true,
        reference: reference.map(str::to_string),
    })?;
    let client = http::Client::new(sink, transport);
    match &sink.kind {
        SinkKind::Slack => slack::deliver(&client, sink, delivery, reference),
        SinkKind::PagerDuty { routing_key } => {
            pagerduty::deliver(&client, sink, routing_key.expose(), delivery, reference)
        }
        SinkKind::Webhook { secret } => webhook::deliver(
            &client,
            sink,
            secret.as_ref().map(|s| s.expose().as_bytes()),
            delivery,
            reference,
        ),
        SinkKind::GitHub {
            owner,
            repo,
            token,
            labels,
        } => github::deliver(
            &client,
            &github::Target {
                api: sink.url.as_ref().map_or(GITHUB_API, |u| u.expose()),
                owner,
                repo,
                token: token.expose(),
                labels,
            },
            delivery,
            reference,
        ),
    }
}
