//! The dashboards teams run (issue 19, point 4): a real Prometheus scrapes
//! a real `toolpin proxy --listen` (upstream: tests/servers/py/scripted.py)
//! while seeded, bounded traffic (the MCP Python SDK,
//! tests/clients/traffic.py) calls its tools: searches with enum values,
//! failing refunds, a made-up tool and an unpinned enum value, with an
//! upstream that drifted since the pin. Every query of every panel of
//! deploy/grafana/toolpin.json must then return series, and every rule of
//! deploy/prometheus must evaluate without error.

mod common;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::prometheus::{repo, Prometheus};
use common::{processes_under, Sandbox, BIN};
use serde_json::{json, Value};

fn tools(drifted: bool) -> Value {
    let mut tools = vec![
        json!({"name": "search_orders", "description": "Search orders by status.",
               "inputSchema": {"type": "object", "properties": {
                   "status": {"type": "string", "enum": ["open", "shipped", "returned"]}}}}),
        json!({"name": "lookup_order", "description": "Look up an order by ID.",
               "inputSchema": {"type": "object", "properties": {"order_id": {"type": "string"}}}}),
        json!({"name": "refund", "description": "Refund an order.",
               "inputSchema": {"type": "object", "properties": {"order_id": {"type": "string"}}}}),
    ];
    if drifted {
        tools.push(
            json!({"name": "cancel_order", "description": "Cancel an order.",
                          "inputSchema": {"type": "object"}}),
        );
    }
    json!({"tools": tools, "behaviors": {"refund": "tool_error", "lookup_order": "sleep:0.02"}})
}

struct Killed(Vec<Child>);

impl Drop for Killed {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Every target's expr of every panel, with the dashboard's variables as
/// a query run by hand gives them.
fn panel_queries(dashboard: &Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for panel in dashboard["panels"].as_array().expect("panels") {
        let title = panel["title"].as_str().unwrap_or("?");
        for target in panel["targets"].as_array().expect("targets") {
            let expr = target["expr"].as_str().expect("expr");
            let expr = expr
                .replace("$instance", ".*")
                .replace("$__rate_interval", "30s");
            assert!(!expr.contains('$'), "{title}: a variable left in {expr}");
            out.push((title.to_string(), expr));
        }
    }
    out
}

#[test]
fn every_panel_returns_series_from_a_real_proxy_under_traffic() {
    let sb = Sandbox::new();
    let root = sb.path().canonicalize().expect("root");
    let python = repo().join(".venv/bin/python");
    assert!(python.exists(), "run scripts/setup");
    sb.write(
        "tools.json",
        serde_json::to_vec(&tools(false)).expect("json"),
    );
    sb.write(
        "toolpin.toml",
        format!(
            "[servers.shop]\ncommand = {}\nprefix = \"shop__\"\n\n[ledger]\nenabled = false\n",
            json!([
                python.display().to_string(),
                repo()
                    .join("tests/servers/py/scripted.py")
                    .display()
                    .to_string(),
                root.join("tools.json").display().to_string()
            ])
        ),
    );
    sb.run(&["lock"]).ok();
    // Upstream gains a tool after the pin: drift at the proxy's start.
    sb.write(
        "tools.json",
        serde_json::to_vec(&tools(true)).expect("json"),
    );

    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("port");
    let proxy = Command::new(BIN)
        .args([
            "proxy",
            "--listen",
            &format!("127.0.0.1:{port}"),
            "--events",
            "events.jsonl",
        ])
        .current_dir(&root)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(root.join("proxy.log")).expect("log"))
        .spawn()
        .expect("proxy");
    let mut children = Killed(vec![proxy]);
    let start = std::time::Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "proxy did not listen"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let prom = Prometheus::start(&root.join("prometheus"), &[format!("127.0.0.1:{port}")]);

    let plan = json!([
        {"tool": "shop__search_orders", "arguments": {"status": "open"}, "times": 6},
        {"tool": "shop__search_orders", "arguments": {"status": "shipped"}, "times": 2},
        {"tool": "shop__lookup_order", "arguments": {"order_id": "A-1"}, "times": 4},
        {"tool": "shop__refund", "arguments": {"order_id": "A-1"}, "times": 2},
        {"tool": "made_up_tool", "arguments": {}, "times": 1},
        {"tool": "shop__search_orders", "arguments": {"status": "cancelled"}, "times": 1}
    ]);
    // 30 rounds of 16 calls at 40 a second: about 12 s of traffic, so that
    // the 10 s windows see several scrapes of moving counters. The alerts
    // are checked while it runs (their windows are short).
    let traffic = Command::new(&python)
        .arg(repo().join("tests/clients/traffic.py"))
        .args([
            "--url",
            &format!("http://127.0.0.1:{port}/mcp"),
            "--plan",
            &plan.to_string(),
            "--rounds",
            "30",
            "--per-second",
            "40",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("traffic");
    // Each alert is seen firing at some point (the drift at start only
    // for its first window).
    let seen = std::sync::Mutex::new(std::collections::BTreeSet::new());
    prom.wait_for("the immediate alerts", Duration::from_secs(25), |p| {
        let mut names = seen.lock().expect("seen");
        names.extend(p.firing());
        [
            "ToolpinUnknownToolCalled",
            "ToolpinUnknownEnumValue",
            "ToolpinDriftEvent",
            "ToolpinToolErrorRate",
        ]
        .iter()
        .all(|n| names.iter().any(|m| m == n))
    });
    let traffic = traffic.wait_with_output().expect("traffic");
    let summary: Value = serde_json::from_slice(&traffic.stdout).unwrap_or_else(|_| {
        panic!(
            "traffic failed: {}",
            String::from_utf8_lossy(&traffic.stderr)
        )
    });
    assert_eq!(summary["calls"], 30 * 16, "{summary}");
    // Refunds fail, the made-up tool and the unpinned value are refused.
    assert_eq!(summary["errors"], 30 * 4, "{summary}");

    let dashboard: Value = serde_json::from_slice(
        &std::fs::read(repo().join("deploy/grafana/toolpin.json")).expect("dashboard"),
    )
    .expect("dashboard JSON");
    let queries = panel_queries(&dashboard);
    assert!(queries.len() >= 10, "{queries:?}");
    // Each query has series once the rules have seen a few scrapes.
    prom.wait_for(
        "every panel's query to return series",
        Duration::from_secs(30),
        |p| queries.iter().all(|(_, q)| !p.query(q).is_empty()),
    );
    for (title, q) in &queries {
        let result = prom.query(q);
        assert!(!result.is_empty(), "{title}: {q} returned nothing");
    }
    // Named series where the panels name them.
    let shares = prom.query("toolpin:tool_selection_share:ratio10m");
    let mut tools: Vec<&str> = shares
        .iter()
        .filter_map(|s| s["metric"]["tool"].as_str())
        .collect();
    tools.sort_unstable();
    assert!(
        tools.contains(&"shop__search_orders") && tools.contains(&"made_up_tool"),
        "{tools:?}"
    );
    let unknown = prom.query("toolpin_unknown_enum_values_total");
    assert_eq!(unknown.len(), 1, "{unknown:?}");
    assert_eq!(unknown[0]["metric"]["parameter"], "status");
    // Every rule evaluates, and the immediate alerts fire.
    for (name, health, error) in prom.rules() {
        assert_ne!(health, "err", "{name}: {error}");
    }
    drop(prom);
    drop(
        children
            .0
            .drain(..)
            .collect::<Vec<_>>()
            .into_iter()
            .map(|mut c| {
                let _ = c.kill();
                c.wait()
            })
            .collect::<Vec<_>>(),
    );
    let left = processes_under(Path::new(&root));
    common::kill_all(&left);
    assert!(left.is_empty(), "processes left behind: {left:?}");
}
