//! `toolpin usage` from the command line: ingest counts bad input and
//! stores the rest, report records its alarms as one ledger event that
//! pages once (a signed webhook at a local receiver), and bad arguments are
//! one-line errors that create nothing.

mod common;

#[path = "../../toolpin-notify/tests/common/mod.rs"]
mod receiver;

use common::{one_file_server, Sandbox};
use receiver::{Receiver, Reply};
use serde_json::{json, Value};
use toolpin_ledger::{EventFilter, EventKind, Ledger};

const TOOLS: &str = r#"{"tools": [
  {"name": "search_orders", "description": "Search orders.", "inputSchema": {"type": "object",
    "properties": {"status": {"enum": ["open", "shipped"]}}}},
  {"name": "lookup_order", "description": "Look up an order.", "inputSchema": {"type": "object"}}
]}"#;

const HOOK_SECRET: &str = "hmac-s3cret-Q7&x";

fn now_nanos() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

/// One OTLP/JSON request line holding `spans`.
fn request(catalog: &str, spans: &[Value]) -> String {
    json!({"resourceSpans": [{
        "resource": {"attributes": [
            {"key": "service.name", "value": {"stringValue": "support-agent"}},
            {"key": "deployment.environment.name", "value": {"stringValue": "prod"}}
        ]},
        "scopeSpans": [{"spans": spans.iter().map(|s| {
            let mut s = s.clone();
            s["attributes"].as_array_mut().expect("attributes").push(
                json!({"key": "toolpin.catalog.fingerprint", "value": {"stringValue": catalog}}));
            s
        }).collect::<Vec<_>>()}]
    }]})
    .to_string()
}

fn span(tool: &str, arguments: &str, at: u64) -> Value {
    json!({
        "traceId": "4bf92f3577b34da6a3ce929d0e0e4736", "spanId": "00f067aa0ba902b7",
        "name": format!("execute_tool {tool}"), "kind": 3,
        "startTimeUnixNano": at.to_string(), "endTimeUnixNano": (at + 2_000_000).to_string(),
        "attributes": [
            {"key": "gen_ai.operation.name", "value": {"stringValue": "execute_tool"}},
            {"key": "gen_ai.tool.name", "value": {"stringValue": tool}},
            {"key": "gen_ai.tool.call.arguments", "value": {"stringValue": arguments}}
        ],
        "status": {}
    })
}

/// A sandbox pinning TOOLS, with a signed webhook sink at `hook`.
fn locked(hook: &Receiver) -> (Sandbox, String) {
    let sb = Sandbox::new();
    sb.write("tools.json", TOOLS);
    let notify = format!(
        "[notify.audit]\nkind = \"webhook\"\nurl = \"{}\"\nsecret = \"${{HOOK_SECRET}}\"\n",
        hook.url("/toolpin")
    );
    sb.write(
        "toolpin.toml",
        one_file_server("shop", "tools.json", &notify),
    );
    sb.run(&["lock"]).ok();
    let catalog = sb.read_json("toolpin.lock")["fingerprint"]
        .as_str()
        .expect("fingerprint")
        .to_string();
    // The lockfile's `sha256:` prefix, if any, is not what spans carry.
    let catalog = catalog.trim_start_matches("sha256:").to_string();
    (sb, catalog)
}

#[test]
fn an_unpinned_tool_and_enum_value_page_once_and_are_counted_again_after() {
    let hook = Receiver::start(vec![Reply::new(200, "")]);
    let (sb, catalog) = locked(&hook);
    let at = now_nanos() - 60_000_000_000;
    let spans = vec![
        span("search_orders", r#"{"status": "open"}"#, at),
        span("search_orders", r#"{"status": "cancelled"}"#, at + 1),
        span("delete_orders", r#"{}"#, at + 2),
    ];
    sb.write("spans.jsonl", request(&catalog, &spans) + "\n");
    let env = [("HOOK_SECRET", HOOK_SECRET)];

    let ingest = sb.run_env(&["usage", "ingest", "spans.jsonl"], &env);
    assert_eq!(ingest.code, 0, "{ingest:#?}");
    // The ledger is the store.
    assert!(
        ingest.stderr.contains("stored 3 calls"),
        "{}",
        ingest.stderr
    );
    assert!(!sb.exists("toolpin.usage.db"));

    let report = sb.run_env(&["usage", "report", "--format", "json"], &env);
    assert_eq!(report.code, 1, "{report:#?}");
    let doc: Value = serde_json::from_str(&report.stdout).expect("JSON");
    let kinds: Vec<(&str, &str)> = doc["alarms"]
        .as_array()
        .expect("alarms")
        .iter()
        .map(|a| {
            (
                a["kind"].as_str().unwrap_or(""),
                a["tool"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        kinds,
        [
            ("unknown-tool", "delete_orders"),
            ("unknown-enum-value", "search_orders")
        ]
    );
    // The report enqueues; delivering is `watch`'s job (a report never
    // waits on a sink).
    assert!(!report.stderr.contains("notified"), "{}", report.stderr);
    assert!(hook.requests().is_empty());
    let watch = sb.run_env(&["watch", "--once"], &env);
    assert_eq!(watch.code, 0, "{watch:#?}");
    assert!(
        watch.stderr.contains("notified: 2 sent"),
        "{}",
        watch.stderr
    );
    let pages = hook.requests();
    assert_eq!(pages.len(), 2, "{pages:#?}");
    let bodies: Vec<Value> = pages.iter().map(|r| r.json()).collect();
    let mut tools: Vec<&str> = bodies
        .iter()
        .map(|b| b["event"]["tool"].as_str().unwrap_or(""))
        .collect();
    tools.sort_unstable();
    assert_eq!(tools, ["delete_orders", "search_orders"]);
    for b in &bodies {
        assert_eq!(b["event"]["kind"], "usage-shift", "{b:#}");
        // The server pinning the tool; a tool no pin has is filed under
        // `usage`.
        let server = if b["event"]["tool"] == "delete_orders" {
            "usage"
        } else {
            "shop"
        };
        assert_eq!(b["event"]["server"], server, "{b:#}");
    }
    assert!(pages[0].header("x-toolpin-signature-256").is_some());

    // The same alarms again: one more sighting each, no new page.
    let again = sb.run_env(&["usage", "report"], &env);
    assert_eq!(again.code, 1, "{again:#?}");
    assert!(
        again
            .stdout
            .contains("ALARM unknown-tool [prod/(no tenant)/support-agent] `delete_orders`"),
        "{}",
        again.stdout
    );
    assert_eq!(hook.requests().len(), 2);
    let mut ledger = Ledger::open(&sb.join(".toolpin/ledger.db")).expect("ledger");
    let events = ledger.events(&EventFilter::default()).expect("events");
    let usage: Vec<_> = events
        .iter()
        .filter(|e| e.kind == EventKind::UsageShift)
        .collect();
    assert_eq!(usage.len(), 2, "{events:#?}");
    assert!(usage.iter().all(|e| e.count == 2), "{usage:#?}");
    assert!(usage
        .iter()
        .all(|e| e.pinned.as_deref() == Some(catalog.as_str())));

    // --no-record writes nothing more.
    let quiet = sb.run_env(&["usage", "report", "--no-record"], &env);
    assert_eq!(quiet.code, 1);
    let events = ledger.events(&EventFilter::default()).expect("events");
    assert!(events
        .iter()
        .filter(|e| e.kind == EventKind::UsageShift)
        .all(|e| e.count == 2));
}

#[test]
fn bad_input_is_counted_and_bad_arguments_create_nothing() {
    let hook = Receiver::start(vec![Reply::new(200, "")]);
    let (sb, catalog) = locked(&hook);
    let at = now_nanos() - 60_000_000_000;
    let mut no_name = span("x", "{}", at);
    no_name["attributes"] =
        json!([{"key": "gen_ai.operation.name", "value": {"stringValue": "execute_tool"}}]);
    let future = span("lookup_order", "{}", now_nanos() + 3 * 3_600_000_000_000);
    let mut skewed = span("lookup_order", "{}", at);
    skewed["endTimeUnixNano"] = json!((at - 5).to_string());
    let lines = [
        request(&catalog, &[span("lookup_order", "{}", at)]),
        "{not json".to_string(),
        request(&catalog, &[no_name, future, skewed]),
        request(
            "0000000000000000000000000000000000000000000000000000000000000000",
            &[span("lookup_order", "{}", at)],
        ),
        "[1, 2]".to_string(),
    ];
    sb.write("spans.jsonl", lines.join("\n") + "\n");
    let ingest = sb.run(&["usage", "ingest", "spans.jsonl", "--store", "u.db"]);
    assert_eq!(ingest.code, 0, "{ingest:#?}");
    for problem in [
        "malformed-line",
        "missing-tool-name",
        "future-timestamp",
        "end-before-start",
        "wrong-shape",
    ] {
        assert!(
            ingest.stderr.contains(problem),
            "{problem}: {}",
            ingest.stderr
        );
    }
    assert!(
        ingest.stderr.contains("stored 2 calls"),
        "{}",
        ingest.stderr
    );
    // A report names the catalog no lockfile has.
    let report = sb.run(&["usage", "report", "--store", "u.db", "--no-record"]);
    assert_eq!(report.code, 0, "{report:#?}");
    assert!(report.stdout.contains("note: catalog 0000000000000000000000000000000000000000000000000000000000000000 is in no lockfile read (1 call)"), "{}", report.stdout);

    let listing = sb.listing();
    for (args, needle) in [
        (
            vec!["usage", "ingest", "missing.jsonl", "--store", "new.db"],
            "cannot read missing.jsonl",
        ),
        (
            vec!["usage", "ingest", "tools.json", "--store", "new.db"],
            "neither OTLP/JSON spans nor a proxy event log",
        ),
        (
            vec!["usage", "report", "--store", "absent.db"],
            "no usage store here",
        ),
        (
            vec!["usage", "report", "spans.jsonl", "--lockfile", "nope.lock"],
            "nope.lock",
        ),
    ] {
        let run = sb.run(&args);
        assert_eq!(run.code, 2, "{args:?}: {run:#?}");
        let lines: Vec<&str> = run.stderr.lines().collect();
        assert!(
            lines.len() == 1 && lines[0].contains(needle),
            "{args:?}: {}",
            run.stderr
        );
        assert_eq!(sb.listing(), listing, "{args:?} changed files");
    }
}

#[test]
fn serve_receives_the_python_sdk_and_stores_at_sigterm() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    let sb = Sandbox::new();
    let mut child = Command::new(common::BIN)
        .args([
            "usage",
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--store",
            "u.db",
            "--flush-every",
            "1h",
        ])
        .current_dir(sb.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start usage serve");
    let mut stderr = BufReader::new(child.stderr.take().expect("stderr"));
    let mut line = String::new();
    stderr.read_line(&mut line).expect("read");
    let url = line
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .to_string();
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = Command::new(repo.join(".venv/bin/python"))
        .arg(repo.join("tests/clients/otel_exporter.py"))
        .args(["--endpoint", &format!("{url}/v1/traces"), "--gzip"])
        .output()
        .expect("run the exporter (scripts/setup installs it)");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("\"exported\": true"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The flush is an hour away: SIGTERM stores what arrived.
    // SAFETY: kill(2) on our own child.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGTERM);
    }
    let status = child.wait().expect("wait");
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stderr, &mut rest).expect("read");
    assert!(status.success(), "{status}: {rest}");
    assert!(rest.contains("stored 7 calls under 2 keys"), "{rest}");
    let mut ledger = Ledger::open(&sb.join("u.db")).expect("store");
    let stored = ledger
        .usage_read(&toolpin_ledger::usage::UsageFilter {
            from_hour: 0,
            until_hour: u64::MAX / 2,
            environment: Some("staging".into()),
        })
        .expect("read");
    assert_eq!(stored.total_calls(), 7);
    let tenants: Vec<&str> = stored.calls().iter().map(|(k, _)| &*k.tenant).collect();
    assert_eq!(tenants, ["globex", "globex"]);
}

/// `--store` with a PostgreSQL URL is a URL whatever the case of its
/// scheme (the command tested `starts_with("postgres://")` itself while
/// the ledger read the scheme in any case, so `POSTGRESQL://…` was taken
/// for a file and its password printed): its password is never shown,
/// and no file is made.
#[test]
fn a_store_url_in_any_case_is_a_url_and_its_password_is_never_shown() {
    let sb = Sandbox::new();
    let listing = sb.listing();
    for scheme in ["POSTGRESQL", "postgres"] {
        let url = format!("{scheme}://toolpin:s3cret-pw%21@127.0.0.1:1/toolpin?connect_timeout=2");
        // `compact` opens the store before anything else.
        let run = sb.run(&["usage", "compact", "--store", &url]);
        assert_eq!(run.code, 2, "{url}: {run:#?}");
        let lines: Vec<&str> = run.stderr.lines().collect();
        assert_eq!(lines.len(), 1, "{}", run.stderr);
        assert!(!run.stderr.contains("s3cret-pw"), "{}", run.stderr);
        assert!(
            run.stderr.contains("cannot connect to the ledger database"),
            "{}",
            run.stderr
        );
        assert_eq!(sb.listing(), listing, "{url} changed files");
    }
}
