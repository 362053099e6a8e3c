//! Slack incoming webhooks: a POST of `{text, blocks}` to the webhook URL
//! (the URL is the secret), answered `200 ok`.

use serde_json::{json, Value};
use toolpin_config::notify::Sink;
use toolpin_ledger_model::{Delivery, Notice, Resolution};

use crate::http::Client;
use crate::text::{self, accept_command, summary};
use crate::{Delivered, DeliveryError};

/// The most characters Slack takes in a section block's text.
pub const SLACK_SECTION_LIMIT: usize = 3000;

/// The most word-diff blocks in one message (Slack takes 50 blocks; a
/// message with more is no longer read).
const MAX_DETAILS: usize = 5;

/// Slack's mrkdwn treats `&`, `<` and `>` as control characters.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

fn section(text: &str) -> Value {
    json!({
        "type": "section",
        "text": {"type": "mrkdwn", "text": text::truncate(text, SLACK_SECTION_LIMIT)},
    })
}

/// The message for `delivery`: `text` (the summary, for notifications and
/// clients without blocks) and mrkdwn section blocks with the findings,
/// the word diff, the re-run plan and the accept command.
pub fn slack_payload(delivery: &Delivery) -> Value {
    let event = &delivery.event;
    let headline = summary(delivery);
    let mut lead = format!("*{}*", escape(&headline));
    match delivery.notice {
        Notice::Escalate(s) => lead.push_str(&format!(
            "\nIt got more severe: now *{}* (it was reported before at a lower severity).",
            s.name()
        )),
        Notice::Resolve => match &event.resolved {
            Some((at, Resolution::Accepted { live })) => lead.push_str(&format!(
                "\nAccepted at {}: the live definition `{}` is pinned now.",
                text::time(*at),
                escape(&text::truncate(live, 20))
            )),
            Some((at, Resolution::Reverted)) => lead.push_str(&format!(
                "\nReverted at {}: upstream is back at the pinned definition.",
                text::time(*at)
            )),
            None => {}
        },
        Notice::Trigger => {}
    }
    for (name, value) in text::facts(event) {
        lead.push_str(&format!("\n• {name}: {}", escape(&value)));
    }
    let mut blocks = vec![section(&lead)];
    if delivery.notice != Notice::Resolve {
        if !event.findings.is_empty() {
            let mut list = String::from("*Findings*");
            for f in &event.findings {
                list.push_str(&format!(
                    "\n• `{}` at `{}` ({}): {}",
                    escape(&f.rule),
                    escape(if f.pointer.is_empty() {
                        "/"
                    } else {
                        &f.pointer
                    }),
                    f.severity.name(),
                    escape(&f.message)
                ));
            }
            blocks.push(section(&list));
        }
        for f in event
            .findings
            .iter()
            .filter(|f| f.detail.is_some())
            .take(MAX_DETAILS)
        {
            let head = format!("*Word diff* at `{}`\n", escape(&f.pointer));
            // Room for the fences, so the block stays a closed code block.
            let room = SLACK_SECTION_LIMIT.saturating_sub(head.chars().count() + 8);
            let detail = escape(f.detail.as_deref().unwrap_or("")).replace("```", "'''");
            blocks.push(section(&format!(
                "{head}```\n{}\n```",
                text::truncate(&detail, room)
            )));
        }
        if let Some(plan) = text::reruns(event) {
            blocks.push(section(&format!("*Re-run plan*: {plan}")));
        }
        if let Some(command) = accept_command(event) {
            blocks.push(section(&format!(
                "*To accept* the live definition after review:\n```{}```",
                escape(&command)
            )));
        }
    }
    // The fallback text is mrkdwn too: escaped, so that a tool name cannot
    // become `<!channel>`.
    json!({"text": escape(&headline), "blocks": blocks})
}

pub(crate) fn deliver(
    client: &Client,
    sink: &Sink,
    delivery: &Delivery,
    reference: Option<&str>,
) -> Result<Delivered, DeliveryError> {
    let url = sink.url.as_ref().map(|u| u.expose()).unwrap_or("");
    let answer = client.post_json("slack", url, &slack_payload(delivery), reference)?;
    // Slack documents `200 ok`; anything else is its error code.
    if answer.status == 200 && answer.body.trim() == "ok" {
        Ok(Delivered {
            reference: reference.map(str::to_string),
        })
    } else {
        Err(client.status_error("slack", url, &answer, false, reference))
    }
}
