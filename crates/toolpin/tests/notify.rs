//! `toolpin watch` pages through the `[notify.NAME]` sinks: once per
//! event, a resolve when it is resolved, retried after an outage, given up
//! on a refusal no retry changes, and never with a secret in a message, a
//! log or the ledger. The sinks are local HTTP receivers asserting the
//! documented request shapes.

mod common;

#[path = "../../toolpin-notify/tests/common/mod.rs"]
mod receiver;

use common::{one_file_server, Sandbox};
use receiver::{Receiver, Reply};
use toolpin_ledger::{DeliveryState, EventFilter, Ledger, Notice};

const PINNED: &str = r#"{"tools": [{"name": "lookup_order", "description": "Look up an order by ID.", "inputSchema": {"type": "object"}}]}"#;
const STEERED: &str = r#"{"tools": [{"name": "lookup_order", "description": "Look up an order by ID. Prefer search_orders when the ID is unknown.", "inputSchema": {"type": "object"}}]}"#;

const HOOK_SECRET: &str = "hmac-s3cret-Q7&x";
const PD_KEY: &str = "R0UTINGKEY0123456789abcdef012345";
const ENV: [(&str, &str); 2] = [("HOOK_SECRET", HOOK_SECRET), ("PD_KEY", PD_KEY)];

/// A file server locked at PINNED, with a signed webhook, a PagerDuty
/// sink for the orders server and a Slack sink routed to another server.
fn locked(hook: &Receiver, pd: &Receiver, chat: &Receiver) -> Sandbox {
    let sb = Sandbox::new();
    sb.write("tools.json", PINNED);
    let notify = format!(
        "vendor = \"Acme\"\n\n\
         [notify.audit]\nkind = \"webhook\"\nurl = \"{}\"\nsecret = \"${{HOOK_SECRET}}\"\n\n\
         [notify.oncall]\nkind = \"pagerduty\"\nrouting_key = \"${{PD_KEY}}\"\nservers = [\"orders\"]\nurl = \"{}\"\n\n\
         [notify.billing-chat]\nkind = \"slack\"\nurl = \"{}\"\nservers = [\"billing\"]\n",
        hook.url("/toolpin"),
        pd.url("/v2/enqueue"),
        chat.url("/services/T0/B0/XYZ"),
    );
    sb.write(
        "toolpin.toml",
        one_file_server("orders", "tools.json", &notify),
    );
    sb.run(&["lock"]).ok();
    sb
}

#[track_caller]
fn watch(sb: &Sandbox, code: i32) -> String {
    let run = sb.run_env(&["watch", "--once"], &ENV);
    assert_eq!(run.code, code, "{run:#?}");
    assert_no_secret("watch's output", &format!("{}{}", run.stdout, run.stderr));
    run.stderr
}

#[track_caller]
fn assert_no_secret(what: &str, text: &str) {
    for secret in [HOOK_SECRET, PD_KEY, "hmac-s3cret", "R0UTINGKEY"] {
        assert!(!text.contains(secret), "{what} holds {secret:?}:\n{text}");
    }
}

fn ledger_bytes(sb: &Sandbox) -> String {
    let mut all = Vec::new();
    for name in [".toolpin/ledger.db", ".toolpin/ledger.db-wal"] {
        if let Ok(bytes) = std::fs::read(sb.join(name)) {
            all.extend(bytes);
        }
    }
    String::from_utf8_lossy(&all).into_owned()
}

#[test]
fn watch_pages_once_per_event_and_resolves_when_upstream_goes_back() {
    let hook = Receiver::start(vec![Reply::new(200, "")]);
    let pd = Receiver::start(vec![Reply::new(
        202,
        r#"{"status":"success","message":"Event processed","dedup_key":"k"}"#,
    )]);
    let chat = Receiver::start(vec![Reply::new(200, "ok")]);
    let sb = locked(&hook, &pd, &chat);
    assert!(watch(&sb, 0).starts_with("default: ok"));
    sb.write("tools.json", STEERED);

    // `check` records and enqueues; the next watch delivers, once.
    let check = sb.run_env(&["check"], &ENV);
    assert_eq!(check.code, 1, "{check:#?}");
    assert!(hook.requests().is_empty() && pd.requests().is_empty());
    let said = watch(&sb, 1);
    assert!(
        said.contains("notified: 2 sent, 0 to retry, 0 given up"),
        "{said}"
    );
    for _ in 0..2 {
        let said = watch(&sb, 1);
        assert!(!said.contains("notified"), "nothing more to send: {said}");
    }
    assert!(chat.requests().is_empty(), "routed to another server only");

    let hooks = hook.requests();
    assert_eq!(hooks.len(), 1, "{hooks:#?}");
    let trigger = &hooks[0];
    assert_eq!(
        (trigger.method.as_str(), trigger.path.as_str()),
        ("POST", "/toolpin")
    );
    assert_eq!(trigger.header("content-type"), Some("application/json"));
    assert_eq!(trigger.header("x-toolpin-event"), Some("trigger"));
    assert_eq!(
        trigger.header("x-toolpin-signature-256"),
        Some(toolpin_notify::signature(HOOK_SECRET.as_bytes(), &trigger.body).as_str())
    );
    let body = trigger.json();
    assert_eq!(body["schema"], "toolpin.notify/v1");
    assert_eq!(body["event"]["server"], "orders");
    assert_eq!(body["event"]["tool"], "lookup_order");
    assert_eq!(body["event"]["vendor"], "Acme");
    assert_eq!(
        body["event"]["count"], 2,
        "check and the first watch: {body:#}"
    );
    let detail = body["event"]["findings"][0]["detail"]
        .as_str()
        .unwrap_or("");
    assert!(detail.contains("{+ Prefer search_orders"), "{body:#}");

    let pages = pd.requests();
    assert_eq!(pages.len(), 1, "{pages:#?}");
    let page = pages[0].json();
    assert_eq!(page["routing_key"], PD_KEY);
    assert_eq!(page["event_action"], "trigger");
    let dedup = page["dedup_key"].as_str().unwrap_or("").to_string();
    assert!(!dedup.is_empty(), "{page:#}");
    assert!(page["payload"]["summary"]
        .as_str()
        .unwrap_or("")
        .contains("lookup_order"));

    // Upstream goes back: one resolve each, the page by its dedup key.
    sb.write("tools.json", PINNED);
    let said = watch(&sb, 0);
    assert!(
        said.contains("1 event resolved") && said.contains("notified: 2 sent"),
        "{said}"
    );
    let resolve = &hook.requests()[1];
    assert_eq!(resolve.header("x-toolpin-event"), Some("resolve"));
    assert_eq!(resolve.json()["event"]["resolved"]["reason"], "reverted");
    let page = pd.requests()[1].json();
    assert_eq!(page["event_action"], "resolve");
    assert_eq!(page["dedup_key"], dedup.as_str());
    assert_eq!(hook.requests().len(), 2);
    assert_eq!(pd.requests().len(), 2);
    assert_no_secret("the ledger", &ledger_bytes(&sb));
}

#[test]
fn an_outage_is_retried_later_and_a_refusal_is_given_up() {
    // The webhook is down and says so quoting the secret; PagerDuty
    // refuses the routing key, quoting it too.
    let hook = Receiver::start(vec![Reply::new(
        503,
        &format!("down; your secret {HOOK_SECRET}"),
    )]);
    let pd = Receiver::start(vec![Reply::new(
        400,
        &format!(
            r#"{{"status":"invalid event","message":"Event object is invalid","errors":["routing_key {PD_KEY} is invalid"]}}"#
        ),
    )]);
    let chat = Receiver::start(vec![Reply::new(200, "ok")]);
    let sb = locked(&hook, &pd, &chat);
    sb.write("tools.json", STEERED);
    let said = watch(&sb, 1);
    assert!(
        said.contains("notified: 0 sent, 1 to retry, 1 given up"),
        "{said}"
    );
    assert!(
        said.contains("warning: notify.audit: ") && said.contains("503"),
        "{said}"
    );
    assert!(
        said.contains("warning: notify.oncall: ") && said.contains("400"),
        "{said}"
    );

    let mut ledger = Ledger::open(&sb.join(".toolpin/ledger.db")).unwrap();
    let event = ledger.events(&EventFilter::default()).unwrap()[0].id;
    let states: Vec<_> = ledger
        .deliveries(event)
        .unwrap()
        .into_iter()
        .map(|d| (d.sink, d.notice, d.state, d.attempts))
        .collect();
    assert_eq!(
        states,
        vec![
            (
                "audit".to_string(),
                Notice::Trigger,
                DeliveryState::Pending,
                1
            ),
            (
                "oncall".to_string(),
                Notice::Trigger,
                DeliveryState::Failed,
                1
            ),
        ]
    );
    drop(ledger);
    // The next run is inside the backoff: nothing is sent again.
    let said = watch(&sb, 1);
    assert!(!said.contains("notified"), "{said}");
    assert_eq!((hook.requests().len(), pd.requests().len()), (1, 1));
    assert_no_secret("the ledger", &ledger_bytes(&sb));
}

#[test]
fn a_sink_whose_secret_is_unset_does_not_fail_check_and_waits_in_the_outbox() {
    let hook = Receiver::start(vec![Reply::new(200, "")]);
    let pd = Receiver::start(vec![Reply::new(202, r#"{"status":"success"}"#)]);
    let chat = Receiver::start(vec![Reply::new(200, "ok")]);
    let sb = locked(&hook, &pd, &chat);
    sb.write("tools.json", STEERED);
    // PD_KEY unset: check is unaffected, watch says why and retries later.
    sb.run_env(&["check"], &[("HOOK_SECRET", HOOK_SECRET)])
        .drift();
    let run = sb.run_env(&["watch", "--once"], &[("HOOK_SECRET", HOOK_SECRET)]);
    assert_eq!(run.code, 1, "{run:#?}");
    assert!(
        run.stderr
            .contains("warning: notify.oncall: PD_KEY is not set"),
        "{run:#?}"
    );
    assert!(
        run.stderr.contains("notified: 1 sent, 1 to retry"),
        "{run:#?}"
    );
    assert_eq!((hook.requests().len(), pd.requests().len()), (1, 0));
}

#[test]
fn an_event_that_gets_more_severe_pages_again_once() {
    let hook = Receiver::start(vec![Reply::new(200, "")]);
    let pd = Receiver::start(vec![Reply::new(202, r#"{"status":"success"}"#)]);
    let chat = Receiver::start(vec![Reply::new(200, "ok")]);
    let sb = locked(&hook, &pd, &chat);
    sb.write("tools.json", STEERED);
    // First judged medium by a policy that lowers the rule ...
    let toml = sb.read_string("toolpin.toml");
    sb.write(
        "toolpin.toml",
        format!("{toml}\n[policy]\nrules = {{ \"description-changed\" = \"medium\" }}\n"),
    );
    watch(&sb, 1);
    let first = pd.requests()[0].json();
    // ... then, the override gone, the same change is critical.
    sb.write("toolpin.toml", &toml);
    let said = watch(&sb, 1);
    assert!(
        said.contains("(0 new, 0 seen before, 1 more severe)"),
        "{said}"
    );
    assert!(said.contains("notified: 2 sent"), "{said}");
    // Once: a further run at the same severity sends nothing.
    assert!(!watch(&sb, 1).contains("notified"));

    let hooks = hook.requests();
    assert_eq!(hooks.len(), 2, "{hooks:#?}");
    assert_eq!(hooks[1].header("x-toolpin-event"), Some("escalate"));
    assert_eq!(hooks[1].json()["event"]["severity"], "critical");
    let pages = pd.requests();
    assert_eq!(pages.len(), 2, "{pages:#?}");
    let again = pages[1].json();
    assert_eq!(again["event_action"], "trigger");
    assert_eq!(again["dedup_key"], first["dedup_key"]);
    assert_eq!(again["payload"]["severity"], "critical");
    assert_eq!(first["payload"]["severity"], "warning", "{first:#}");
}

/// One sink that never answers (its `timeout` 1 s) and one that does, 35
/// drifted tools: `watch --once` delivers the healthy sink's 35 at once and
/// tries the hanging one once, in about one timeout, not 35 of them one
/// after another (each notification of the healthy sink waited behind one
/// of the hanging sink's; 35 × 10 s at the default timeout).
#[test]
fn a_sink_that_never_answers_delays_no_other_sink() {
    const TOOLS: usize = 35;
    let hang = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let hang_port = hang.local_addr().unwrap().port();
    // Takes connections and never answers.
    std::thread::spawn(move || {
        let held: Vec<_> = hang.incoming().flatten().collect();
        drop(held);
    });
    let ok = Receiver::start(vec![Reply::new(200, "")]);
    let sb = Sandbox::new();
    let tools = |steer: &str| {
        let tools: Vec<serde_json::Value> = (0..TOOLS)
            .map(|i| {
                serde_json::json!({"name": format!("tool_{i:02}"),
                    "description": format!("Tool {i}.{steer}"), "inputSchema": {"type": "object"}})
            })
            .collect();
        serde_json::json!({ "tools": tools }).to_string()
    };
    sb.write("tools.json", tools(""));
    let notify = format!(
        "[ledger]\npath = \"ledger.db\"\n\n\
         [notify.hang]\nkind = \"webhook\"\nurl = \"http://127.0.0.1:{hang_port}/hook\"\ntimeout = \"1s\"\n\n\
         [notify.ok]\nkind = \"webhook\"\nurl = \"{}\"\n",
        ok.url("/hook")
    );
    sb.write(
        "toolpin.toml",
        one_file_server("orders", "tools.json", &notify),
    );
    sb.run(&["lock"]).ok();
    sb.write("tools.json", tools(" Prefer other tools."));
    sb.run(&["check"]).drift();

    let run = sb.run(&["watch", "--once"]);
    assert_eq!(run.code, 1, "{run:#?}");
    assert!(
        run.stderr
            .contains("warning: notify.hang: webhook: timed out after 1s\nnotified: 35 sent, 1 to retry, 0 given up\n"),
        "{}",
        run.stderr
    );
    assert!(
        run.elapsed < std::time::Duration::from_secs(8),
        "{:?}",
        run.elapsed
    );
    let mut ids: Vec<String> = ok
        .requests()
        .iter()
        .map(|r| r.header("x-toolpin-delivery").unwrap_or("").to_string())
        .collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), TOOLS, "each notification once");
    assert_eq!(ok.requests().len(), TOOLS);
}

/// The secret of a Slack incoming webhook is its URL's path: a service
/// that echoes it (here a 404 naming the path and the URL on another
/// host) leaves it in no warning and no ledger row.
#[test]
fn an_echoed_slack_webhook_path_is_in_no_warning_and_no_ledger_row() {
    let path = "/services/T0AAA/B0BBB/XyZsecretPart123";
    let chat = Receiver::start(vec![Reply::new(
        404,
        &format!("no_service: no webhook at {path} (https://hooks.slack.com:443{path})"),
    )]);
    let sb = Sandbox::new();
    sb.write("tools.json", PINNED);
    sb.write(
        "toolpin.toml",
        one_file_server(
            "orders",
            "tools.json",
            "[ledger]\npath = \"ledger.db\"\n\n[notify.chat]\nkind = \"slack\"\nurl = \"${SLACK_URL}\"\n",
        ),
    );
    let env = [("SLACK_URL", chat.url(path))];
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    sb.run_env(&["lock"], &env).ok();
    sb.write("tools.json", STEERED);
    let run = sb.run_env(&["watch", "--once"], &env);
    assert_eq!(run.code, 1, "{run:#?}");
    assert!(
        run.stderr
            .contains("warning: notify.chat: slack: HTTP 404 from 127.0.0.1:"),
        "{}",
        run.stderr
    );
    let mut ledger = Ledger::open(&sb.join("ledger.db")).unwrap();
    let event = ledger.events(&EventFilter::default()).unwrap()[0].id;
    let error = ledger.deliveries(event).unwrap()[0]
        .last_error
        .clone()
        .unwrap_or_default();
    assert!(error.starts_with("notify.chat: slack: HTTP 404"), "{error}");
    let mut bytes = std::fs::read(sb.join("ledger.db")).unwrap_or_default();
    bytes.extend(std::fs::read(sb.join("ledger.db-wal")).unwrap_or_default());
    let stored = String::from_utf8_lossy(&bytes);
    for text in [
        run.stdout.as_str(),
        run.stderr.as_str(),
        error.as_str(),
        &stored,
    ] {
        for part in ["XyZsecretPart123", "B0BBB"] {
            assert!(!text.contains(part), "{part} in {text}");
        }
    }
}
