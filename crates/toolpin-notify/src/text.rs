//! The words every sink shares: the one-line summary, the accept command,
//! the re-run plan, times.

use std::time::Duration;

use toolpin_ledger_model::{Delivery, Event, Notice};

/// The one line a notification leads with:
/// `[toolpin] high drift in orders/orders__lookup_order (staging)`,
/// `[toolpin] escalated to critical: drift in …`,
/// `[toolpin] resolved (accepted): drift in …`.
pub fn summary(delivery: &Delivery) -> String {
    let event = &delivery.event;
    let what = format!(
        "{} in {} ({})",
        event.kind.name(),
        subject(event),
        event.environment
    );
    match delivery.notice {
        Notice::Trigger => match event.severity {
            Some(s) => format!("[toolpin] {} {what}", s.name()),
            None => format!("[toolpin] {what}"),
        },
        Notice::Escalate(s) => format!("[toolpin] escalated to {}: {what}", s.name()),
        Notice::Resolve => match &event.resolved {
            Some((_, r)) => format!("[toolpin] resolved ({}): {what}", r.reason()),
            None => format!("[toolpin] resolved: {what}"),
        },
    }
}

/// `server/tool`, or the server for an event about the server itself.
pub(crate) fn subject(event: &Event) -> String {
    if event.tool.is_empty() {
        event.server.clone()
    } else {
        format!("{}/{}", event.server, event.tool)
    }
}

/// The command that accepts the live definition the event is about:
/// `toolpin accept --env staging --tool orders/orders__lookup_order@<12 hex>
/// --reason "…"` (no `--env` for the environment `default`). `None` when
/// there is nothing to accept: no live definition (the tool is gone), an
/// event about the server, or a kind an acceptance does not resolve.
pub fn accept_command(event: &Event) -> Option<String> {
    let live = event.live.as_deref()?;
    if !event.kind.resolved_by_fingerprint() || event.tool.is_empty() {
        return None;
    }
    let hex = live.rsplit(':').next().unwrap_or(live);
    let short: String = hex.chars().take(12).collect();
    let env = if event.environment == "default" {
        String::new()
    } else {
        format!("--env {} ", event.environment)
    };
    Some(format!(
        "toolpin accept {env}--tool {}/{}@{short} --reason \"…\"",
        event.server, event.tool
    ))
}

/// `3 evals to re-run`; `None` when the plan asks for none.
pub(crate) fn reruns(event: &Event) -> Option<String> {
    match event.reruns {
        n if n <= 0 => None,
        1 => Some("1 eval to re-run".to_string()),
        n => Some(format!("{n} evals to re-run")),
    }
}

/// Unix seconds as RFC 3339 UTC.
pub(crate) fn time(unix: i64) -> String {
    toolpin_manifest::time::rfc3339(Duration::from_secs(unix.max(0) as u64), false)
}

/// `text` cut to at most `max` characters, with `…` when cut.
pub(crate) fn truncate(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut cut: String = text.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

/// What the event is, beyond its findings: vendor, versions, when seen.
pub(crate) fn facts(event: &Event) -> Vec<(&'static str, String)> {
    let mut facts = Vec::new();
    if let Some(v) = &event.vendor {
        facts.push(("vendor", v.clone()));
    }
    match (&event.server_version, &event.pinned_version) {
        (Some(live), Some(pinned)) if live == pinned => facts.push((
            "server version",
            format!("{live} (unchanged: the tools changed under the same version)"),
        )),
        (Some(live), Some(pinned)) => facts.push(("server version", format!("{pinned} → {live}"))),
        (Some(live), None) => facts.push(("server version", live.clone())),
        (None, Some(pinned)) => facts.push(("pinned server version", pinned.clone())),
        (None, None) => {}
    }
    facts.push((
        "seen",
        if event.count == 1 {
            format!("once, {}", time(event.first_seen))
        } else {
            format!(
                "{} times, {} to {}",
                event.count,
                time(event.first_seen),
                time(event.last_seen)
            )
        },
    ));
    if let Some(at) = event.unchanged_at {
        facts.push(("last seen unchanged", time(at)));
    }
    facts
}
