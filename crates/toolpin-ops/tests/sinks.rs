//! Each sink kind against a local receiver that answers as the service
//! documents, sent through the real transport (`HttpTransport`, reqwest's
//! blocking client): the request shapes and headers, the GitHub issue flow
//! with its reference, retryable and final errors, timeouts, and no secret
//! in any message. (Moved from toolpin-notify with the transport; the
//! payloads' pure tests stay there.)

#[path = "../../toolpin-notify/tests/common/mod.rs"]
mod common;

use std::time::Duration;

use common::{delivery, sink, Receiver, Reply, LIVE};
use serde_json::Value;
use toolpin_ledger::{Notice, Severity};
use toolpin_notify::{signature, DeliveryError};
use toolpin_ops::deliver::send as deliver;

const T: Duration = Duration::from_secs(5);

fn slack_sink(rx: &Receiver) -> toolpin_config::notify::Sink {
    sink(
        "[chat]\nkind = \"slack\"\nurl = \"${SLACK_WEBHOOK_URL}\"\n",
        &[(
            "SLACK_WEBHOOK_URL",
            &rx.url("/services/T000/B000/XyZsecretPart"),
        )],
    )
}

#[test]
fn slack_posts_a_readable_message_and_takes_200_ok() {
    let rx = Receiver::start(vec![Reply::new(200, "ok")]);
    let s = slack_sink(&rx);
    let done = deliver(&s, &delivery(Notice::Trigger), None, T).expect("delivered");
    assert_eq!(done.reference, None);
    let reqs = rx.requests();
    assert_eq!(reqs.len(), 1);
    let r = &reqs[0];
    assert_eq!(r.method, "POST");
    assert_eq!(r.path, "/services/T000/B000/XyZsecretPart");
    assert_eq!(r.header("content-type"), Some("application/json"));
    let body = r.json();
    assert_eq!(
        body["text"],
        "[toolpin] high drift in orders/orders__lookup_order (staging)"
    );
    let blocks = body["blocks"].as_array().expect("blocks");
    let all: String = blocks
        .iter()
        .map(|b| {
            assert_eq!(b["type"], "section");
            assert_eq!(b["text"]["type"], "mrkdwn");
            let t = b["text"]["text"].as_str().expect("text");
            assert!(t.chars().count() <= 3000);
            t.to_string()
        })
        .collect::<Vec<_>>()
        .join("\n");
    assert!(
        all.contains("`description-changed` at `/description`"),
        "{all}"
    );
    assert!(
        all.contains("```\nLook up an order by ID. {+Prefer"),
        "{all}"
    );
    assert!(all.contains("3 evals to re-run"), "{all}");
    assert!(
        all.contains(
            "toolpin accept --env staging --tool orders/orders__lookup_order@3f1e0a9b7c6d --reason \"…\""
        ),
        "{all}"
    );
    assert!(all.contains("unchanged: the tools changed under the same version"));
}

#[test]
fn slack_escalate_and_resolve_say_so() {
    let rx = Receiver::start(vec![Reply::new(200, "ok")]);
    let s = slack_sink(&rx);
    deliver(&s, &delivery(Notice::Escalate(Severity::Critical)), None, T).expect("escalate");
    deliver(&s, &delivery(Notice::Resolve), None, T).expect("resolve");
    let reqs = rx.requests();
    let esc = reqs[0].json();
    assert_eq!(
        esc["text"],
        "[toolpin] escalated to critical: drift in orders/orders__lookup_order (staging)"
    );
    assert!(esc["blocks"][0]["text"]["text"]
        .as_str()
        .unwrap_or("")
        .contains("more severe"));
    let res = reqs[1].json();
    assert_eq!(
        res["text"],
        "[toolpin] resolved (accepted): drift in orders/orders__lookup_order (staging)"
    );
}

#[test]
fn slack_error_codes_fail_without_the_url() {
    for (status, body, retryable) in [
        (400, "invalid_payload", false),
        (404, "no_service", false),
        (200, "not ok", false),
        (429, "rate_limited", true),
        (500, "oops", true),
    ] {
        let rx = Receiver::start(vec![Reply::new(status, body)]);
        let s = slack_sink(&rx);
        let e = deliver(&s, &delivery(Notice::Trigger), None, T).expect_err("fails");
        assert_eq!(e.retryable, retryable, "{status}: {e:?}");
        assert!(
            e.message.starts_with("notify.chat: slack: HTTP "),
            "{}",
            e.message
        );
        assert!(e.message.contains(body), "{}", e.message);
        assert!(!e.message.contains("services"), "{}", e.message);
        assert!(!e.message.contains("XyZsecretPart"), "{}", e.message);
        assert!(!format!("{e:?}").contains("XyZsecretPart"));
    }
}

/// The secret of a Slack incoming webhook is its URL's path: an answer
/// that echoes it, alone or in a URL with another host (as a proxy or
/// Slack's own error pages do), does not show it, in any form.
#[test]
fn slack_an_echoed_webhook_path_is_redacted() {
    let path = "/services/T000/B000/XyZsecretPart";
    for (said, url) in [
        (format!("no_service: {path}"), true),
        (
            format!("no_service: https://hooks.slack.com:443{path} not found"),
            false,
        ),
        (
            format!(
                r#"{{"url": "https:\/\/hooks.slack.com{}"}}"#,
                path.replace('/', "\\/")
            ),
            false,
        ),
        (format!("no_service: {}", path.replace('/', "%2F")), false),
    ] {
        let rx = Receiver::start(vec![Reply::new(404, &said)]);
        // Written in the file as is, or from the environment.
        let s = if url {
            sink(
                &format!("[chat]\nkind = \"slack\"\nurl = \"{}\"\n", rx.url(path)),
                &[],
            )
        } else {
            slack_sink(&rx)
        };
        let e = deliver(&s, &delivery(Notice::Trigger), None, T).expect_err("404");
        assert!(
            e.message
                .starts_with("notify.chat: slack: HTTP 404 from 127.0.0.1:"),
            "{}",
            e.message
        );
        assert!(
            e.message.contains("no_service") || e.message.contains("url"),
            "{}",
            e.message
        );
        for part in ["XyZsecretPart", "B000"] {
            assert!(!e.message.contains(part), "{said} → {}", e.message);
        }
    }
}

fn pd_sink(rx: &Receiver) -> toolpin_config::notify::Sink {
    sink(
        "[oncall]\nkind = \"pagerduty\"\nrouting_key = \"${PD_ROUTING_KEY}\"\nurl = \"URL\"\n"
            .replace("URL", &rx.url("/v2/enqueue"))
            .as_str(),
        &[("PD_ROUTING_KEY", "R0UT1NGKEYsecret")],
    )
}

const PD_OK: &str = r#"{"status":"success","message":"Event processed","dedup_key":"k"}"#;

#[test]
fn pagerduty_triggers_escalates_and_resolves_with_one_dedup_key() {
    let rx = Receiver::start(vec![Reply::new(202, PD_OK)]);
    let s = pd_sink(&rx);
    let first = deliver(&s, &delivery(Notice::Trigger), None, T).expect("trigger");
    let key = first
        .reference
        .clone()
        .expect("the dedup key is the reference");
    assert_eq!(key, "toolpin-staging-orders-orders__lookup_order-42");
    deliver(
        &s,
        &delivery(Notice::Escalate(Severity::Critical)),
        Some(&key),
        T,
    )
    .expect("escalate");
    deliver(&s, &delivery(Notice::Resolve), Some(&key), T).expect("resolve");
    let reqs = rx.requests();
    assert_eq!(reqs.len(), 3);
    for r in &reqs {
        assert_eq!(
            (r.method.as_str(), r.path.as_str()),
            ("POST", "/v2/enqueue")
        );
        let b = r.json();
        assert_eq!(b["routing_key"], "R0UT1NGKEYsecret");
        assert_eq!(b["dedup_key"], key.as_str());
        assert_eq!(b["client"], "toolpin");
    }
    let t = reqs[0].json();
    assert_eq!(t["event_action"], "trigger");
    let p = &t["payload"];
    assert_eq!(
        p["summary"],
        "[toolpin] high drift in orders/orders__lookup_order (staging)"
    );
    assert_eq!(p["severity"], "error");
    assert_eq!(p["source"], "staging/orders");
    assert_eq!(p["component"], "orders__lookup_order");
    assert_eq!(p["group"], "staging");
    assert_eq!(p["class"], "drift");
    assert_eq!(
        p["custom_details"]["findings"][0]["rule"],
        "description-changed"
    );
    let e = reqs[1].json();
    assert_eq!(e["event_action"], "trigger");
    assert_eq!(e["payload"]["severity"], "critical");
    let r = reqs[2].json();
    assert_eq!(r["event_action"], "resolve");
    assert!(r.get("payload").is_none(), "{r}");
}

#[test]
fn pagerduty_errors_are_classified_and_keep_the_key_secret() {
    for (status, body, retryable) in [
        (
            400,
            r#"{"status":"invalid event","message":"Event object is invalid","errors":["Length of 'routing_key' is incorrect"]}"#,
            false,
        ),
        (429, "", true),
        (503, "unavailable", true),
        (202, r#"{"status":"invalid event"}"#, false),
    ] {
        let rx = Receiver::start(vec![Reply::new(status, body)]);
        let s = pd_sink(&rx);
        let e = deliver(&s, &delivery(Notice::Trigger), None, T).expect_err("fails");
        assert_eq!(e.retryable, retryable, "{status}: {e:?}");
        assert!(
            e.message.starts_with("notify.oncall: pagerduty: HTTP"),
            "{}",
            e.message
        );
        assert!(!e.message.contains("R0UT1NGKEYsecret"));
    }
    // A service that echoes the key does not get it into the message.
    let rx = Receiver::start(vec![Reply::new(
        400,
        r#"{"message":"bad key R0UT1NGKEYsecret"}"#,
    )]);
    let e = deliver(&pd_sink(&rx), &delivery(Notice::Trigger), None, T).expect_err("fails");
    assert!(!e.message.contains("R0UT1NGKEYsecret"), "{}", e.message);
    assert!(e.message.contains("bad key"), "{}", e.message);
}

fn hook_sink(rx: &Receiver, secret: bool) -> toolpin_config::notify::Sink {
    let mut toml = format!(
        "[audit]\nkind = \"webhook\"\nurl = \"{}\"\n",
        rx.url("/toolpin")
    );
    if secret {
        toml.push_str("secret = \"${HOOK_SECRET}\"\n");
    }
    sink(&toml, &[("HOOK_SECRET", "h00k-s3cret")])
}

#[test]
fn webhook_posts_the_event_with_headers_and_a_signature() {
    let rx = Receiver::start(vec![Reply::new(204, "")]);
    let s = hook_sink(&rx, true);
    deliver(&s, &delivery(Notice::Trigger), None, T).expect("delivered");
    deliver(&s, &delivery(Notice::Resolve), None, T).expect("delivered");
    let reqs = rx.requests();
    let r = &reqs[0];
    assert_eq!((r.method.as_str(), r.path.as_str()), ("POST", "/toolpin"));
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(r.header("x-toolpin-event"), Some("trigger"));
    assert_eq!(r.header("x-toolpin-delivery"), Some("7"));
    // Recomputed here from the raw body, as a receiver does.
    use hmac::{Hmac, Mac};
    let mut mac = Hmac::<sha2::Sha256>::new_from_slice(b"h00k-s3cret").expect("key");
    mac.update(&r.body);
    let want: String = mac
        .finalize()
        .into_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(
        r.header("x-toolpin-signature-256"),
        Some(format!("sha256={want}").as_str())
    );
    assert_eq!(signature(b"h00k-s3cret", &r.body), format!("sha256={want}"));
    let b = r.json();
    assert_eq!(b["schema"], "toolpin.notify/v1");
    assert_eq!(b["notice"], "trigger");
    assert_eq!(b["delivery"], 7);
    assert_eq!(b["event"]["id"], 42);
    assert_eq!(b["event"]["severity"], "high");
    assert_eq!(b["event"]["live"], LIVE);
    assert_eq!(b["event"]["findings"][1]["detail"], Value::Null);
    assert_eq!(b["event"]["resolved"], Value::Null);
    let res = reqs[1].json();
    assert_eq!(reqs[1].header("x-toolpin-event"), Some("resolve"));
    assert_eq!(res["event"]["resolved"]["reason"], "accepted");
    assert_eq!(res["event"]["resolved"]["at"], 1_764_780_000);
}

#[test]
fn webhook_without_a_secret_is_unsigned_and_any_2xx_is_success() {
    let rx = Receiver::start(vec![Reply::new(200, "thanks"), Reply::new(202, "")]);
    let s = hook_sink(&rx, false);
    deliver(&s, &delivery(Notice::Escalate(Severity::Critical)), None, T).expect("200");
    deliver(&s, &delivery(Notice::Trigger), None, T).expect("202");
    let reqs = rx.requests();
    assert_eq!(reqs[0].header("x-toolpin-signature-256"), None);
    assert_eq!(reqs[0].header("x-toolpin-event"), Some("escalate"));
    assert_eq!(reqs[0].json()["escalated_to"], "critical");
}

fn gh_sink(rx: &Receiver) -> toolpin_config::notify::Sink {
    sink(
        &format!(
            "[tracker]\nkind = \"github\"\nrepo = \"acme/agents\"\ntoken = \"${{GITHUB_TOKEN}}\"\nlabels = [\"toolpin\", \"drift\"]\nurl = \"{}\"\n",
            rx.url("/api/v3")
        ),
        &[("GITHUB_TOKEN", "ghp_T0KENsecret")],
    )
}

fn assert_github_headers(r: &common::Request) {
    assert_eq!(r.header("authorization"), Some("Bearer ghp_T0KENsecret"));
    assert_eq!(r.header("accept"), Some("application/vnd.github+json"));
    assert_eq!(r.header("x-github-api-version"), Some("2022-11-28"));
    assert!(r
        .header("user-agent")
        .is_some_and(|u| u.starts_with("toolpin/")));
}

#[test]
fn github_opens_comments_on_and_closes_one_issue() {
    let rx = Receiver::start(vec![
        Reply::new(201, r#"{"number": 42, "html_url": "https://x/42"}"#),
        Reply::new(201, r#"{"id": 1}"#),
        Reply::new(200, r#"{"number": 42}"#),
        Reply::new(201, r#"{"id": 2}"#),
        Reply::new(200, r#"{"number": 42, "state": "closed"}"#),
    ]);
    let s = gh_sink(&rx);
    let opened = deliver(&s, &delivery(Notice::Trigger), None, T).expect("opened");
    assert_eq!(opened.reference.as_deref(), Some("42"));
    let n = opened.reference.as_deref();
    let esc = deliver(&s, &delivery(Notice::Escalate(Severity::Critical)), n, T).expect("esc");
    assert_eq!(esc.reference.as_deref(), Some("42"));
    let closed = deliver(&s, &delivery(Notice::Resolve), n, T).expect("closed");
    assert_eq!(closed.reference.as_deref(), Some("42"));
    let reqs = rx.requests();
    let calls: Vec<(&str, &str)> = reqs
        .iter()
        .map(|r| (r.method.as_str(), r.path.as_str()))
        .collect();
    assert_eq!(
        calls,
        vec![
            ("POST", "/api/v3/repos/acme/agents/issues"),
            ("POST", "/api/v3/repos/acme/agents/issues/42/comments"),
            ("PATCH", "/api/v3/repos/acme/agents/issues/42"),
            ("POST", "/api/v3/repos/acme/agents/issues/42/comments"),
            ("PATCH", "/api/v3/repos/acme/agents/issues/42"),
        ]
    );
    for r in &reqs {
        assert_github_headers(r);
    }
    let issue = reqs[0].json();
    assert_eq!(
        issue["title"],
        "[toolpin] high drift in orders/orders__lookup_order (staging)"
    );
    assert_eq!(issue["labels"], serde_json::json!(["toolpin", "drift"]));
    let body = issue["body"].as_str().expect("body");
    assert!(
        body.contains("| `description-changed` | `/description` | high |"),
        "{body}"
    );
    assert!(body.contains("````text\nLook up an order by ID."), "{body}");
    assert!(body.contains("3 evals to re-run"), "{body}");
    assert!(body
        .contains("toolpin accept --env staging --tool orders/orders__lookup_order@3f1e0a9b7c6d"));
    assert!(reqs[1].json()["body"]
        .as_str()
        .unwrap_or("")
        .contains("now **critical**"));
    assert_eq!(
        reqs[2].json()["title"],
        "[toolpin] critical drift in orders/orders__lookup_order (staging)"
    );
    assert!(reqs[3].json()["body"]
        .as_str()
        .unwrap_or("")
        .starts_with("Resolved (accepted)"));
    assert_eq!(
        reqs[4].json(),
        serde_json::json!({"state": "closed", "state_reason": "completed"})
    );
}

#[test]
fn github_without_a_reference_creates_on_escalate_and_skips_resolve() {
    let rx = Receiver::start(vec![Reply::new(201, r#"{"number": 7}"#)]);
    let s = gh_sink(&rx);
    let done = deliver(&s, &delivery(Notice::Resolve), None, T).expect("nothing to close");
    assert_eq!(done.reference, None);
    assert!(rx.requests().is_empty());
    let done =
        deliver(&s, &delivery(Notice::Escalate(Severity::Critical)), None, T).expect("created");
    assert_eq!(done.reference.as_deref(), Some("7"));
    let reqs = rx.requests();
    assert_eq!(reqs.len(), 1);
    assert_eq!(reqs[0].path, "/api/v3/repos/acme/agents/issues");
}

#[test]
fn github_a_failed_later_step_keeps_the_reference() {
    let rx = Receiver::start(vec![
        Reply::new(201, r#"{"id": 1}"#),
        Reply::new(502, "bad gateway"),
    ]);
    let s = gh_sink(&rx);
    let e = deliver(&s, &delivery(Notice::Resolve), Some("42"), T).expect_err("close fails");
    assert!(e.retryable);
    assert_eq!(e.reference.as_deref(), Some("42"));
    assert!(
        e.message
            .starts_with("notify.tracker: github: closing the issue in acme/agents: HTTP 502"),
        "{}",
        e.message
    );
}

#[test]
fn github_errors_are_classified_without_the_token() {
    for (reply, retryable) in [
        (Reply::new(401, r#"{"message":"Bad credentials"}"#), false),
        (Reply::new(404, r#"{"message":"Not Found"}"#), false),
        (
            Reply::new(
                422,
                r#"{"message":"Validation Failed","errors":[{"field":"labels"}]}"#,
            ),
            false,
        ),
        (
            Reply::new(403, r#"{"message":"API rate limit exceeded"}"#)
                .header("x-ratelimit-remaining", "0"),
            true,
        ),
        (
            Reply::new(403, r#"{"message":"Resource not accessible"}"#),
            false,
        ),
        (Reply::new(500, "oops ghp_T0KENsecret"), true),
        (Reply::new(201, r#"{"id": 1}"#), false),
    ] {
        let rx = Receiver::start(vec![reply.clone()]);
        let e = deliver(&gh_sink(&rx), &delivery(Notice::Trigger), None, T).expect_err("fails");
        assert_eq!(e.retryable, retryable, "{reply:?}: {e:?}");
        assert!(
            e.message
                .starts_with("notify.tracker: github: creating an issue in acme/agents"),
            "{}",
            e.message
        );
        assert!(!e.message.contains("ghp_T0KENsecret"), "{}", e.message);
        assert!(!format!("{e:?}").contains("ghp_T0KENsecret"));
    }
}

fn unreachable_url() -> String {
    // A port nobody listens on: bound, then closed.
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = l.local_addr().expect("addr").port();
    drop(l);
    format!("http://127.0.0.1:{port}/services/T/B/S3CRETPATH")
}

fn check_no_secret(e: &DeliveryError, secrets: &[&str]) {
    let shown = format!("{} {e:?}", e.message);
    for s in secrets {
        assert!(!shown.contains(s), "{s} in {shown}");
    }
    assert!(!e.message.contains('\n'), "{}", e.message);
}

#[test]
fn an_unreachable_endpoint_is_retryable_and_names_only_the_host() {
    let url = unreachable_url();
    let s = sink(
        "[chat]\nkind = \"slack\"\nurl = \"${U}\"\n",
        &[("U", url.as_str())],
    );
    let e = deliver(&s, &delivery(Notice::Trigger), None, T).expect_err("unreachable");
    assert!(e.retryable);
    assert!(
        e.message
            .starts_with("notify.chat: slack: cannot connect to 127.0.0.1:"),
        "{}",
        e.message
    );
    check_no_secret(&e, &["S3CRETPATH", "/services"]);
    for toml in [
        format!("[p]\nkind = \"pagerduty\"\nrouting_key = \"PDKEYsecret\"\nurl = \"{url}\"\n"),
        format!(
            "[g]\nkind = \"github\"\nrepo = \"a/b\"\ntoken = \"GHTOKENsecret\"\nurl = \"{url}\"\n"
        ),
        format!("[w]\nkind = \"webhook\"\nurl = \"{url}\"\nsecret = \"HMACsecret\"\n"),
    ] {
        let e = deliver(&sink(&toml, &[]), &delivery(Notice::Trigger), None, T)
            .expect_err("unreachable");
        assert!(e.retryable, "{}", e.message);
        check_no_secret(
            &e,
            &["S3CRETPATH", "PDKEYsecret", "GHTOKENsecret", "HMACsecret"],
        );
    }
}

#[test]
fn a_slow_endpoint_times_out_and_is_retryable() {
    let rx = Receiver::start(vec![Reply::new(200, "ok").after(Duration::from_secs(3))]);
    let s = slack_sink(&rx);
    let start = std::time::Instant::now();
    let e = deliver(
        &s,
        &delivery(Notice::Trigger),
        None,
        Duration::from_millis(300),
    )
    .expect_err("times out");
    assert!(
        start.elapsed() < Duration::from_secs(2),
        "{:?}",
        start.elapsed()
    );
    assert!(e.retryable);
    assert_eq!(e.message, "notify.chat: slack: timed out after 300ms");
}

#[test]
fn a_sink_whose_secret_is_unset_is_not_sent_and_says_why() {
    let s = sink(
        "[oncall]\nkind = \"pagerduty\"\nrouting_key = \"${PD_ROUTING_KEY}\"\n",
        &[],
    );
    let e = deliver(&s, &delivery(Notice::Trigger), None, T).expect_err("not ready");
    assert_eq!(e.message, "notify.oncall: PD_ROUTING_KEY is not set");
    assert!(e.retryable);
}

#[test]
fn a_redirect_is_not_followed() {
    let rx = Receiver::start(vec![
        Reply::new(302, "").header("Location", "http://127.0.0.1:9/elsewhere")
    ]);
    let e = deliver(&hook_sink(&rx, true), &delivery(Notice::Trigger), None, T).expect_err("3xx");
    assert!(!e.retryable);
    assert!(e.message.contains("HTTP 302"), "{}", e.message);
    assert_eq!(rx.requests().len(), 1);
}

#[test]
fn debug_of_sinks_holds_no_secret() {
    let rx = Receiver::start(vec![Reply::new(200, "ok")]);
    for s in [
        slack_sink(&rx),
        pd_sink(&rx),
        hook_sink(&rx, true),
        gh_sink(&rx),
    ] {
        let shown = format!("{s:?}");
        for secret in [
            "XyZsecretPart",
            "R0UT1NGKEYsecret",
            "h00k-s3cret",
            "ghp_T0KENsecret",
        ] {
            assert!(!shown.contains(secret), "{secret} in {shown}");
        }
    }
}
