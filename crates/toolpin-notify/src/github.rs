//! A GitHub issue per event: opened on the trigger, commented on and
//! retitled on an escalation, commented on and closed on the resolve. The
//! issue's number is the sink's reference for the event.

use serde_json::{json, Value};
use toolpin_ledger_model::{Delivery, Notice, Resolution};

use crate::http::{Answer, Client, Method};
use crate::text::{self, accept_command, subject};
use crate::{Delivered, DeliveryError};

/// The REST API unless the sink's `url` names another (GitHub Enterprise
/// Server: `https://HOST/api/v3`).
pub const GITHUB_API: &str = "https://api.github.com";

/// GitHub takes 65,536 characters in an issue body or a comment.
const MAX_BODY: usize = 60_000;

/// Each word diff in a body, at most.
const MAX_DETAIL: usize = 4_000;

pub(crate) struct Target<'a> {
    pub api: &'a str,
    pub owner: &'a str,
    pub repo: &'a str,
    pub token: &'a str,
    pub labels: &'a [String],
}

/// A table cell: no pipe, no line break, and no `@mention` (upstream
/// text must not notify people or teams).
fn cell(text: &str) -> String {
    text.replace('|', "\\|")
        .replace(['\n', '\r'], " ")
        .replace('@', "@\u{200b}")
}

fn findings_table(delivery: &Delivery) -> String {
    let findings = &delivery.event.findings;
    if findings.is_empty() {
        return String::new();
    }
    let mut out = String::from("| rule | pointer | severity | message |\n|---|---|---|---|\n");
    for f in findings {
        out.push_str(&format!(
            "| `{}` | `{}` | {} | {} |\n",
            cell(&f.rule),
            cell(if f.pointer.is_empty() {
                "/"
            } else {
                &f.pointer
            }),
            f.severity.name(),
            cell(&f.message)
        ));
    }
    out
}

/// The issue's title: the summary at the event's severity now (the
/// escalated one for an escalation).
fn title(delivery: &Delivery) -> String {
    let e = &delivery.event;
    let severity = match delivery.notice {
        Notice::Escalate(s) => Some(s),
        _ => e.severity,
    };
    let what = format!("{} in {} ({})", e.kind.name(), subject(e), e.environment);
    match severity {
        Some(s) => format!("[toolpin] {} {what}", s.name()),
        None => format!("[toolpin] {what}"),
    }
}

/// The issue for `delivery`: `{title, body, labels}`, the body markdown
/// with the facts, the findings table, each word diff, the re-run plan and
/// the accept command.
pub fn github_issue(delivery: &Delivery, labels: &[String]) -> Value {
    let e = &delivery.event;
    let mut body = format!(
        "toolpin saw **{}** in `{}`, environment `{}`.\n\n",
        e.kind.name(),
        subject(e),
        e.environment
    );
    for (name, value) in text::facts(e) {
        body.push_str(&format!("- {name}: {}\n", cell(&value)));
    }
    if let (Some(pinned), Some(live)) = (&e.pinned, &e.live) {
        body.push_str(&format!("- pinned `{pinned}`, live `{live}`\n"));
    }
    body.push('\n');
    let table = findings_table(delivery);
    if !table.is_empty() {
        body.push_str("### Findings\n\n");
        body.push_str(&table);
        body.push('\n');
    }
    for f in e.findings.iter().filter(|f| f.detail.is_some()) {
        let detail = text::truncate(f.detail.as_deref().unwrap_or(""), MAX_DETAIL);
        body.push_str(&format!(
            "### Word diff at `{}`\n\n````text\n{detail}\n````\n\n",
            cell(&f.pointer)
        ));
    }
    if let Some(plan) = text::reruns(e) {
        body.push_str(&format!("### Re-run plan\n\n{plan}.\n\n"));
    }
    if let Some(command) = accept_command(e) {
        body.push_str(&format!(
            "### To accept\n\nAfter review, pin the live definition:\n\n```sh\n{command}\n```\n\n"
        ));
    }
    body.push_str(&format!("<!-- toolpin event {} -->\n", e.id));
    json!({
        "title": title(delivery),
        "body": text::truncate(&body, MAX_BODY),
        "labels": labels,
    })
}

/// The comment an escalation or a resolve adds: `{body}`.
pub fn github_comment(delivery: &Delivery) -> Value {
    let e = &delivery.event;
    let body = match delivery.notice {
        Notice::Escalate(s) => {
            let mut b = format!(
                "Escalated: this drift got more severe, now **{}**.\n\n",
                s.name()
            );
            b.push_str(&findings_table(delivery));
            b
        }
        Notice::Resolve => match &e.resolved {
            Some((at, Resolution::Accepted { live })) => format!(
                "Resolved (accepted) at {}: the live definition `{live}` is pinned now.",
                text::time(*at)
            ),
            Some((at, Resolution::Reverted)) => format!(
                "Resolved (reverted) at {}: upstream is back at the pinned definition.",
                text::time(*at)
            ),
            None => "Resolved.".to_string(),
        },
        Notice::Trigger => format!(
            "Seen again: {} time(s), last at {}.",
            e.count,
            text::time(e.last_seen)
        ),
    };
    json!({ "body": text::truncate(&body, MAX_BODY) })
}

struct Api<'a> {
    client: &'a Client<'a>,
    target: &'a Target<'a>,
}

impl Api<'_> {
    fn url(&self, rest: &str) -> String {
        format!(
            "{}/repos/{}/{}/issues{rest}",
            self.target.api.trim_end_matches('/'),
            self.target.owner,
            self.target.repo
        )
    }

    /// One call; anything but a 2xx is an error (with `reference`).
    fn call(
        &self,
        doing: &str,
        method: Method,
        rest: &str,
        body: &Value,
        reference: Option<&str>,
    ) -> Result<Answer, DeliveryError> {
        let url = self.url(rest);
        let headers = vec![
            ("Authorization", format!("Bearer {}", self.target.token)),
            ("Accept", "application/vnd.github+json".to_string()),
            ("X-GitHub-Api-Version", "2022-11-28".to_string()),
            ("Content-Type", "application/json".to_string()),
        ];
        let doing = format!(
            "github: {doing} in {}/{}",
            self.target.owner, self.target.repo
        );
        let answer = self.client.send(
            &doing,
            method,
            &url,
            headers,
            body.to_string().into_bytes(),
            reference,
        )?;
        if answer.is_success() {
            return Ok(answer);
        }
        // GitHub's rate limits answer 403 (or 429) with these headers.
        let limited = answer.header("x-ratelimit-remaining") == Some("0")
            || answer.header("retry-after").is_some();
        Err(self
            .client
            .status_error(&doing, &url, &answer, limited, reference))
    }

    /// The issue's title and body brought up to date with `delivery`.
    fn update_issue(&self, n: &str, delivery: &Delivery) -> Result<(), DeliveryError> {
        let issue = github_issue(delivery, self.target.labels);
        let update = json!({"title": issue["title"], "body": issue["body"]});
        self.call(
            "updating the issue",
            Method::Patch,
            &format!("/{n}"),
            &update,
            Some(n),
        )?;
        Ok(())
    }

    fn create(&self, delivery: &Delivery) -> Result<Delivered, DeliveryError> {
        let issue = github_issue(delivery, self.target.labels);
        let answer = self.call("creating an issue", Method::Post, "", &issue, None)?;
        let number = serde_json::from_str::<Value>(&answer.body)
            .ok()
            .and_then(|v| v.get("number").and_then(Value::as_u64));
        match number {
            Some(n) => Ok(Delivered {
                reference: Some(n.to_string()),
            }),
            // Created, perhaps, but unnamed: a retry could open a second.
            None => Err(self.client.error(
                &format!(
                    "github: creating an issue in {}/{}: the answer has no issue number",
                    self.target.owner, self.target.repo
                ),
                false,
                None,
            )),
        }
    }
}

pub(crate) fn deliver(
    client: &Client,
    target: &Target<'_>,
    delivery: &Delivery,
    reference: Option<&str>,
) -> Result<Delivered, DeliveryError> {
    let api = Api { client, target };
    // A reference that is not an issue number is not ours to follow.
    let number = reference.filter(|r| !r.is_empty() && r.bytes().all(|b| b.is_ascii_digit()));
    let kept = || Delivered {
        reference: number.map(str::to_string),
    };
    match (delivery.notice, number) {
        (Notice::Trigger | Notice::Escalate(_), None) => api.create(delivery),
        (Notice::Trigger, Some(n)) => {
            // Sent before (the outcome was lost): update, do not open a
            // second issue.
            api.update_issue(n, delivery)?;
            Ok(kept())
        }
        (Notice::Escalate(_), Some(n)) => {
            api.call(
                "commenting on the issue",
                Method::Post,
                &format!("/{n}/comments"),
                &github_comment(delivery),
                Some(n),
            )?;
            api.update_issue(n, delivery)?;
            Ok(kept())
        }
        // No issue was opened for it: nothing to close.
        (Notice::Resolve, None) => Ok(Delivered { reference: None }),
        (Notice::Resolve, Some(n)) => {
            api.call(
                "commenting on the issue",
                Method::Post,
                &format!("/{n}/comments"),
                &github_comment(delivery),
                Some(n),
            )?;
            api.call(
                "closing the issue",
                Method::Patch,
                &format!("/{n}"),
                &json!({"state": "closed", "state_reason": "completed"}),
                Some(n),
            )?;
            Ok(kept())
        }
    }
}
