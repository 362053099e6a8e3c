//! PagerDuty Events API v2: a trigger per event, the same dedup key again
//! for an escalation (at the new severity) and for the resolve.

use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};
use toolpin_config::notify::Sink;
use toolpin_ledger_model::{Delivery, Event, Notice};
use toolpin_manifest::Severity;

use crate::http::Client;
use crate::text::{self, accept_command, summary};
use crate::{Delivered, DeliveryError};

/// Where events go unless the sink's `url` says otherwise.
pub const PAGERDUTY_EVENTS: &str = "https://events.pagerduty.com/v2/enqueue";

/// PagerDuty's limits: the dedup key and the summary.
const MAX_DEDUP_KEY: usize = 255;
const MAX_SUMMARY: usize = 1024;

/// PagerDuty's severity for ours: critical → critical, high → error,
/// medium → warning, low and info → info. An event without a severity (no
/// findings) is a warning.
pub fn pagerduty_severity(severity: Option<Severity>) -> &'static str {
    match severity {
        Some(Severity::Critical) => "critical",
        Some(Severity::High) => "error",
        Some(Severity::Medium) | None => "warning",
        Some(Severity::Low) | Some(Severity::Info) => "info",
    }
}

/// The dedup key of a ledger event, stable across its notices:
/// `toolpin-<environment>-<server>-<tool>-<event id>` (no tool part for an
/// event about the server); a key past PagerDuty's 255 characters is
/// `toolpin-<sha256 of that key>-<event id>`.
pub fn pagerduty_dedup_key(event: &Event) -> String {
    let mut key = format!("toolpin-{}-{}", event.environment, event.server);
    if !event.tool.is_empty() {
        key.push('-');
        key.push_str(&event.tool);
    }
    let key = format!("{key}-{}", event.id);
    if key.len() <= MAX_DEDUP_KEY {
        return key;
    }
    let digest = Sha256::digest(key.as_bytes());
    let hex = toolpin_manifest::text::hex(&digest);
    format!("toolpin-{hex}-{}", event.id)
}

/// The Events API v2 body for `delivery`, with `dedup_key` (the one the
/// trigger used, or [`pagerduty_dedup_key`]). A resolve carries no
/// `payload`.
pub fn pagerduty_payload(routing_key: &str, dedup_key: &str, delivery: &Delivery) -> Value {
    let event = &delivery.event;
    let action = match delivery.notice {
        Notice::Resolve => "resolve",
        Notice::Trigger | Notice::Escalate(_) => "trigger",
    };
    let mut body = json!({
        "routing_key": routing_key,
        "event_action": action,
        "dedup_key": dedup_key,
        "client": "toolpin",
    });
    if delivery.notice == Notice::Resolve {
        return body;
    }
    let severity = match delivery.notice {
        Notice::Escalate(s) => Some(s),
        _ => event.severity,
    };
    let mut details = Map::new();
    details.insert("environment".into(), json!(event.environment));
    details.insert("server".into(), json!(event.server));
    details.insert("tool".into(), json!(event.tool));
    details.insert("kind".into(), json!(event.kind.name()));
    details.insert("severity".into(), json!(severity.map(|s| s.name())));
    details.insert(
        "findings".into(),
        Value::Array(
            event
                .findings
                .iter()
                .map(|f| {
                    json!({
                        "rule": f.rule,
                        "pointer": f.pointer,
                        "severity": f.severity.name(),
                        "message": f.message,
                        "detail": f.detail,
                    })
                })
                .collect(),
        ),
    );
    details.insert("pinned".into(), json!(event.pinned));
    details.insert("live".into(), json!(event.live));
    for (name, value) in text::facts(event) {
        details.insert(name.replace(' ', "_"), json!(value));
    }
    if let Some(plan) = text::reruns(event) {
        details.insert("reruns".into(), json!(plan));
    }
    if let Some(command) = accept_command(event) {
        details.insert("accept".into(), json!(command));
    }
    body["payload"] = json!({
        "summary": text::truncate(&summary(delivery), MAX_SUMMARY),
        "source": format!("{}/{}", event.environment, event.server),
        "severity": pagerduty_severity(severity),
        "component": if event.tool.is_empty() { &event.server } else { &event.tool },
        "group": event.environment,
        "class": event.kind.name(),
        "custom_details": Value::Object(details),
    });
    body
}

pub(crate) fn deliver(
    client: &Client,
    sink: &Sink,
    routing_key: &str,
    delivery: &Delivery,
    reference: Option<&str>,
) -> Result<Delivered, DeliveryError> {
    let url = sink.url.as_ref().map_or(PAGERDUTY_EVENTS, |u| u.expose());
    // The trigger's key, kept as the reference, wins: the key format may
    // change between versions, an open incident's key does not.
    let dedup_key = match reference {
        Some(r) if !r.is_empty() && r.len() <= MAX_DEDUP_KEY => r.to_string(),
        _ => pagerduty_dedup_key(&delivery.event),
    };
    let payload = pagerduty_payload(routing_key, &dedup_key, delivery);
    let answer = client.post_json("pagerduty", url, &payload, reference)?;
    if !answer.is_success() {
        return Err(client.status_error("pagerduty", url, &answer, false, reference));
    }
    // 202 {"status":"success","dedup_key":…}; a body saying otherwise is
    // an error even with a 2xx.
    let said: Option<Value> = serde_json::from_str(&answer.body).ok();
    if let Some(status) = said
        .as_ref()
        .and_then(|v| v.get("status"))
        .and_then(Value::as_str)
    {
        if status != "success" {
            return Err(client.status_error("pagerduty", url, &answer, false, reference));
        }
    }
    Ok(Delivered {
        reference: Some(dedup_key),
    })
}
