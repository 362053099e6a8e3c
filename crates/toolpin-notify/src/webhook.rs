//! The generic webhook: the event as JSON (docs/notify-webhook.schema.json),
//! signed with HMAC-SHA256 when the sink has a `secret`.

use hmac::{Hmac, Mac};
use serde_json::{json, Value};
use sha2::Sha256;
use toolpin_config::notify::Sink;
use toolpin_ledger_model::{Delivery, Notice, Resolution};

use crate::http::{Client, Method};
use crate::text::{accept_command, summary};
use crate::{Delivered, DeliveryError};

/// The `schema` member of every body.
pub const SCHEMA: &str = "toolpin.notify/v1";

/// The body for `delivery`: `{schema, notice, delivery, summary,
/// escalated_to, accept, event: {…}}`.
pub fn webhook_payload(delivery: &Delivery) -> Value {
    let e = &delivery.event;
    let resolved = match &e.resolved {
        None => Value::Null,
        Some((at, r)) => json!({
            "at": at,
            "reason": r.reason(),
            "live": match r {
                Resolution::Accepted { live } => Value::String(live.clone()),
                Resolution::Reverted => Value::Null,
            },
        }),
    };
    let findings: Vec<Value> = e
        .findings
        .iter()
        .map(|f| {
            json!({
                "rule": f.rule,
                "pointer": f.pointer,
                "severity": f.severity.name(),
                "kind": f.kind,
                "message": f.message,
                "detail": f.detail,
            })
        })
        .collect();
    json!({
        "schema": SCHEMA,
        "notice": delivery.notice.name(),
        "delivery": delivery.id,
        "summary": summary(delivery),
        "escalated_to": match delivery.notice {
            Notice::Escalate(s) => Value::String(s.name().into()),
            _ => Value::Null,
        },
        "accept": accept_command(e),
        "event": {
            "id": e.id,
            "environment": e.environment,
            "server": e.server,
            "tool": e.tool,
            "kind": e.kind.name(),
            "severity": e.severity.map(|s| s.name()),
            "pinned": e.pinned,
            "live": e.live,
            "vendor": e.vendor,
            "server_version": e.server_version,
            "pinned_version": e.pinned_version,
            "unchanged_at": e.unchanged_at,
            "first_seen": e.first_seen,
            "last_seen": e.last_seen,
            "count": e.count,
            "reruns": e.reruns,
            "findings": findings,
            "resolved": resolved,
        },
    })
}

/// `sha256=<lowercase hex HMAC-SHA256(secret, body)>`: the
/// `X-Toolpin-Signature-256` header.
pub fn signature(secret: &[u8], body: &[u8]) -> String {
    // HMAC takes a key of any length: new_from_slice cannot fail.
    let hex = match Hmac::<Sha256>::new_from_slice(secret) {
        Ok(mut mac) => {
            mac.update(body);
            toolpin_manifest::text::hex(&mac.finalize().into_bytes())
        }
        Err(_) => String::new(),
    };
    format!("sha256={hex}")
}

pub(crate) fn deliver(
    client: &Client,
    sink: &Sink,
    secret: Option<&[u8]>,
    delivery: &Delivery,
    reference: Option<&str>,
) -> Result<Delivered, DeliveryError> {
    let url = sink.url.as_ref().map(|u| u.expose()).unwrap_or("");
    let body = webhook_payload(delivery).to_string().into_bytes();
    let mut headers = vec![
        ("Content-Type", "application/json".to_string()),
        ("X-Toolpin-Event", delivery.notice.name().to_string()),
        ("X-Toolpin-Delivery", delivery.id.to_string()),
    ];
    if let Some(secret) = secret {
        headers.push(("X-Toolpin-Signature-256", signature(secret, &body)));
    }
    let answer = client.send("webhook", Method::Post, url, headers, body, reference)?;
    if answer.is_success() {
        Ok(Delivered {
            reference: reference.map(str::to_string),
        })
    } else {
        Err(client.status_error("webhook", url, &answer, false, reference))
    }
}
