//! The sinks' payloads as pure functions: the Slack section limit,
//! PagerDuty's severities and dedup keys, the webhook's signature and its
//! fixtures, routing, summaries and accept commands, and no `@mention`
//! from upstream text. Each sink over HTTP (a local receiver, the real
//! transport) is tested in toolpin-ops's tests/sinks.rs.

mod common;

use common::{delivery, LIVE};
use toolpin_ledger_model::{Notice, Severity};
use toolpin_notify::signature;

#[test]
fn slack_truncates_a_long_word_diff_to_the_section_limit() {
    let mut d = delivery(Notice::Trigger);
    d.event.findings[0].detail = Some("word ".repeat(2000));
    let body = toolpin_notify::slack_payload(&d);
    for b in body["blocks"].as_array().expect("blocks") {
        let t = b["text"]["text"].as_str().expect("text");
        assert!(t.chars().count() <= 3000, "{}", t.chars().count());
        if t.starts_with("*Word diff*") {
            assert!(
                t.ends_with("…\n```"),
                "closed code block: {}",
                &t[t.len() - 20..]
            );
        }
    }
    // The default environment is not named in the accept command.
    d.event.environment = "default".into();
    let body = toolpin_notify::slack_payload(&d).to_string();
    assert!(body.contains("toolpin accept --tool orders/orders__lookup_order@3f1e0a9b7c6d"));
}

#[test]
fn pagerduty_severities_and_long_keys() {
    use toolpin_notify::{pagerduty_dedup_key, pagerduty_severity};
    assert_eq!(pagerduty_severity(Some(Severity::Critical)), "critical");
    assert_eq!(pagerduty_severity(Some(Severity::High)), "error");
    assert_eq!(pagerduty_severity(Some(Severity::Medium)), "warning");
    assert_eq!(pagerduty_severity(Some(Severity::Low)), "info");
    assert_eq!(pagerduty_severity(Some(Severity::Info)), "info");
    let mut e = common::event();
    e.tool = "t".repeat(300);
    let k = pagerduty_dedup_key(&e);
    assert!(k.len() <= 255, "{}", k.len());
    assert!(k.starts_with("toolpin-") && k.ends_with("-42"), "{k}");
    assert_eq!(k, pagerduty_dedup_key(&e), "stable");
    e.tool.clear();
    assert_eq!(pagerduty_dedup_key(&e), "toolpin-staging-orders-42");
    let mut d = delivery(Notice::Trigger);
    d.event.findings[0].message = "m".repeat(5000);
    d.event.server = "s".repeat(2000);
    let p = toolpin_notify::pagerduty_payload("k", "d", &d);
    assert!(
        p["payload"]["summary"]
            .as_str()
            .unwrap_or("")
            .chars()
            .count()
            <= 1024
    );
}

#[test]
fn signature_matches_a_known_vector() {
    // RFC 4231 test case 2.
    assert_eq!(
        signature(b"Jefe", b"what do ya want for nothing?"),
        "sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
    );
}

#[test]
fn routing_filters_pick_the_sinks() {
    let all = common::sinks(
        r#"
[oncall]
kind = "pagerduty"
routing_key = "k"
servers = ["orders"]
tools = ["orders__*"]
environments = ["staging"]
min_severity = "high"

[chat]
kind = "slack"
url = "https://hooks.example.com/x"
"#,
        &[],
    );
    let oncall = &all.sinks["oncall"];
    let chat = &all.sinks["chat"];
    let e = common::event();
    assert!(toolpin_notify::routes_event(oncall, &e));
    assert!(toolpin_notify::routes(
        oncall,
        "staging",
        "orders",
        "orders__x",
        Some(Severity::Critical)
    ));
    assert!(!toolpin_notify::routes(
        oncall,
        "staging",
        "orders",
        "orders__x",
        Some(Severity::Medium)
    ));
    assert!(!toolpin_notify::routes(
        oncall,
        "prod",
        "orders",
        "orders__x",
        Some(Severity::High)
    ));
    assert!(!toolpin_notify::routes(
        oncall,
        "staging",
        "orders",
        "refund",
        Some(Severity::High)
    ));
    assert!(toolpin_notify::routes(
        oncall,
        "staging",
        "orders",
        "",
        Some(Severity::High)
    ));
    assert!(toolpin_notify::routes(
        chat, "prod", "billing", "refund", None
    ));
}

/// The webhook bodies scripts/check-schemas validates against
/// docs/notify-webhook.schema.json, kept in tests/fixtures and compared
/// here; `TOOLPIN_BLESS=1 cargo test -p toolpin-notify --test sinks`
/// rewrites them.
#[test]
fn webhook_fixtures_are_current() {
    let mut server_level = delivery(Notice::Resolve);
    server_level.event.tool.clear();
    server_level.event.severity = None;
    server_level.event.findings.clear();
    server_level.event.live = None;
    server_level.event.vendor = None;
    server_level.event.unchanged_at = None;
    server_level.event.resolved = Some((1_764_780_000, toolpin_ledger_model::Resolution::Reverted));
    let cases = [
        ("webhook-trigger.json", delivery(Notice::Trigger)),
        (
            "webhook-escalate.json",
            delivery(Notice::Escalate(Severity::Critical)),
        ),
        ("webhook-resolve.json", delivery(Notice::Resolve)),
        ("webhook-server-reverted.json", server_level),
    ];
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let bless = std::env::var_os("TOOLPIN_BLESS").is_some();
    for (name, d) in cases {
        let text = serde_json::to_string_pretty(&toolpin_notify::webhook_payload(&d))
            .expect("json")
            + "\n";
        let path = dir.join(name);
        if bless {
            std::fs::create_dir_all(&dir).expect("fixtures dir");
            std::fs::write(&path, &text).expect("write fixture");
        } else {
            let kept = std::fs::read_to_string(&path).unwrap_or_default();
            assert_eq!(
                kept, text,
                "{name} is stale: run `TOOLPIN_BLESS=1 cargo test -p toolpin-notify --test sinks`"
            );
        }
    }
}

#[test]
fn summaries_and_accept_commands() {
    use toolpin_notify::{accept_command, summary};
    let mut d = delivery(Notice::Trigger);
    d.event.severity = None;
    d.event.kind = toolpin_ledger_model::EventKind::ProxyRefusal;
    assert_eq!(
        summary(&d),
        "[toolpin] proxy-refusal in orders/orders__lookup_order (staging)"
    );
    d.event.tool.clear();
    assert_eq!(summary(&d), "[toolpin] proxy-refusal in orders (staging)");
    // Nothing to accept: a server-level event, a tool gone, a failed contract.
    assert_eq!(accept_command(&d.event), None);
    let mut e = common::event();
    e.live = None;
    assert_eq!(accept_command(&e), None);
    let mut e = common::event();
    e.kind = toolpin_ledger_model::EventKind::ContractFailed;
    assert_eq!(accept_command(&e), None);
    let mut e = common::event();
    e.live = Some(format!("sha256:{LIVE}"));
    assert_eq!(
        accept_command(&e).as_deref(),
        Some("toolpin accept --env staging --tool orders/orders__lookup_order@3f1e0a9b7c6d --reason \"…\"")
    );
}

#[test]
fn upstream_text_cannot_ping_people() {
    let mut d = delivery(Notice::Trigger);
    d.event.findings[0].message = "<!channel> ask @acme/oncall".into();
    d.event.tool = "<!here>".into();
    let slack = toolpin_notify::slack_payload(&d).to_string();
    assert!(
        !slack.contains("<!channel>") && !slack.contains("<!here>"),
        "{slack}"
    );
    assert!(slack.contains("&lt;!channel&gt;"), "{slack}");
    let issue = toolpin_notify::github_issue(&d, &[]);
    let body = issue["body"].as_str().unwrap_or("");
    assert!(!body.contains("@acme"), "{body}");
}
