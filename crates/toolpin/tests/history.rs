//! `toolpin history` over a ledger built by real runs: `watch --once`,
//! `check` and `accept` over two servers with `vendor` keys (an MCP server
//! whose serverInfo.version stays put while its tools change, and a file
//! source), then the history in every format; and its errors.

mod common;

use common::Sandbox;
use serde_json::Value;

/// A stdio MCP server (newline-delimited JSON-RPC, standard library only)
/// serving the tools in `tools.json` beside it under serverInfo
/// `orders-server` at the version in `version.txt`.
const SERVER: &str = r#"
import json, os, sys
here = os.path.dirname(os.path.abspath(__file__))
def read(name):
    with open(os.path.join(here, name), encoding="utf-8") as f:
        return f.read()
for line in sys.stdin:
    if not line.strip():
        continue
    msg = json.loads(line)
    if "id" not in msg:
        continue
    method = msg.get("method")
    if method == "initialize":
        result = {
            "protocolVersion": msg["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "orders-server", "version": read("version.txt").strip()},
        }
    elif method == "tools/list":
        result = {"tools": json.loads(read("tools.json"))}
    else:
        reply = {"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": "no"}}
        print(json.dumps(reply), flush=True)
        continue
    print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}), flush=True)
"#;

const LOOKUP: &str = r#"[{"name": "lookup_order", "description": "Look up an order by ID.", "inputSchema": {"type": "object"}}]"#;
const LOOKUP_STEERED: &str = r#"[{"name": "lookup_order", "description": "Look up an order by ID. Prefer search_orders when the ID is unknown.", "inputSchema": {"type": "object"}}]"#;
const CHARGE: &str = r#"{"tools": [{"name": "charge", "description": "Charge a card.", "inputSchema": {"type": "object", "properties": {"amount": {"type": "integer"}}}}]}"#;
const CHARGE_CHANGED: &str = r#"{"tools": [{"name": "charge", "description": "Charge a card.", "inputSchema": {"type": "object", "properties": {"amount": {"type": "string"}}}}]}"#;

fn config() -> String {
    "[servers.orders]\ncommand = [\"python3\", \"orders/server.py\"]\nvendor = \"Acme\"\n\n\
     [servers.billing]\nfile = \"billing.json\"\nvendor = \"Globex, Inc.\"\n"
        .to_string()
}

/// Acme's orders server drifts with its version unchanged (silent) and
/// stays open; Globex's billing drifts and is accepted.
fn story() -> Sandbox {
    let sb = Sandbox::new();
    sb.write("orders/server.py", SERVER);
    sb.write("orders/tools.json", LOOKUP);
    sb.write("orders/version.txt", "1.4.0\n");
    sb.write("billing.json", CHARGE);
    sb.write("toolpin.toml", config());
    sb.run(&["lock"]).ok();
    sb.run(&["watch", "--once"]).ok();
    sb.write("orders/tools.json", LOOKUP_STEERED);
    sb.write("billing.json", CHARGE_CHANGED);
    let run = sb.run(&["watch", "--once"]);
    assert_eq!(run.code, 1, "{run:#?}");
    sb.run(&["check"]).drift();
    sb.run(&["accept", "--tool", "billing/charge", "--reason", "reviewed"])
        .ok();
    sb
}

fn json_rows(sb: &Sandbox, args: &[&str]) -> Vec<Value> {
    let mut all = vec!["history", "--format", "json"];
    all.extend_from_slice(args);
    let run = sb.run(&all);
    run.ok();
    let doc: Value = serde_json::from_str(&run.stdout).expect("JSON");
    assert_eq!(doc["schema"], "toolpin.history/v1");
    doc["rows"].as_array().cloned().unwrap_or_default()
}

fn row<'a>(rows: &'a [Value], key: &str) -> &'a Value {
    rows.iter()
        .find(|r| r["key"] == key)
        .unwrap_or_else(|| panic!("no row {key}: {rows:#?}"))
}

#[test]
fn history_counts_silent_drift_resolution_and_review_cost_in_every_format() {
    let sb = story();
    let rows = json_rows(&sb, &["--period", "quarter"]);
    assert_eq!(rows.len(), 2, "{rows:#?}");
    let acme = row(&rows, "Acme");
    assert_eq!(acme["changes"], 1);
    assert_eq!(acme["silent_drift"], 1, "1.4.0 live and pinned: {acme:#}");
    assert_eq!(acme["kinds"]["description"], 1);
    assert_eq!(acme["open"], 1);
    assert_eq!(acme["to_resolution"]["count"], 0);
    assert_eq!(acme["to_first_sighting"]["count"], 1, "the clean watch run");
    assert!(acme["to_first_sighting"]["median_seconds"]
        .as_i64()
        .is_some());
    let globex = row(&rows, "Globex, Inc.");
    assert_eq!(globex["changes"], 1);
    assert_eq!(
        globex["silent_drift"], 0,
        "a file source reports no version"
    );
    assert_eq!(globex["open"], 0);
    assert_eq!(globex["approvals"], 1);
    assert_eq!(globex["to_resolution"]["count"], 1);
    let resolved = globex["to_resolution"]["median_seconds"].as_i64();
    assert!(resolved.is_some_and(|s| (0..60).contains(&s)), "{globex:#}");
    let period = acme["period"].as_str().unwrap_or("");
    assert!(
        period.len() == 7 && period.as_bytes()[5] == b'Q',
        "{period}"
    );

    // Per tool: the server is named beside the tool.
    let tools = json_rows(&sb, &["--by", "tool"]);
    let lookup = row(&tools, "lookup_order");
    assert_eq!(lookup["server"], "orders");
    // Filters.
    let only = json_rows(&sb, &["--vendor", "Acme"]);
    assert_eq!(only.len(), 1);
    assert!(json_rows(&sb, &["--env", "staging"]).is_empty());
    assert!(json_rows(&sb, &["--until", "2000-01-01"]).is_empty());

    // CSV: a header and one record per row, the comma in the vendor quoted.
    let csv = sb.run(&["history", "--format", "csv", "--by", "vendor"]);
    csv.ok();
    let records = parse_csv(&csv.stdout);
    assert_eq!(records.len(), 3, "{}", csv.stdout);
    let header = &records[0];
    assert_eq!(&header[..3], ["vendor", "period", "changes"]);
    let col = |name: &str| header.iter().position(|h| h == name).expect(name);
    let globex = records
        .iter()
        .find(|r| r[0] == "Globex, Inc.")
        .expect("a Globex record");
    assert_eq!(globex[col("approvals")], "1");
    assert_eq!(globex[col("to_resolution_count")], "1");
    let acme = records.iter().find(|r| r[0] == "Acme").expect("Acme");
    assert_eq!(acme[col("silent_drift")], "1");
    assert_eq!(acme[col("to_resolution_median_seconds")], "");

    // Markdown: a GitHub table.
    let md = sb.run(&["history", "--format", "markdown"]);
    md.ok();
    let lines: Vec<&str> = md.stdout.lines().collect();
    assert!(
        lines[0].starts_with("| vendor | period | changes |"),
        "{}",
        md.stdout
    );
    assert!(lines[1].starts_with("|---|---|---:|"), "{}", md.stdout);
    assert_eq!(lines.len(), 4);

    // Text: aligned, with the header first.
    let text = sb.run(&["history"]);
    text.ok();
    assert!(text.stdout.starts_with("vendor "), "{}", text.stdout);
    assert!(text.stdout.contains("Globex, Inc."), "{}", text.stdout);

    // -o writes the file and prints nothing.
    let out = sb.run(&["history", "--format", "json", "-o", "history.json"]);
    out.ok();
    assert_eq!(out.stdout, "");
    let doc = sb.read_json("history.json");
    assert_eq!(doc["rows"].as_array().map(Vec::len), Some(2));
    assert!(sb.temp_files().is_empty(), "{:?}", sb.temp_files());
}

#[test]
fn history_without_a_ledger_is_an_error_and_creates_none() {
    let sb = Sandbox::new();
    sb.write("billing.json", CHARGE);
    sb.write(
        "toolpin.toml",
        "[servers.billing]\nfile = \"billing.json\"\n",
    );
    let message = sb
        .run(&["history"])
        .error(&[".toolpin/ledger.db", "no ledger"]);
    assert!(!message.contains('\n'));
    assert!(!sb.exists(".toolpin"));
    sb.write(
        "toolpin.toml",
        "[servers.billing]\nfile = \"billing.json\"\n[ledger]\nenabled = false\n",
    );
    sb.run(&["history"]).error(&["turned off"]);
}

#[test]
fn history_refuses_bad_dates() {
    let sb = Sandbox::new();
    sb.write("billing.json", CHARGE);
    sb.write(
        "toolpin.toml",
        "[servers.billing]\nfile = \"billing.json\"\n",
    );
    sb.run(&["lock"]).ok();
    sb.run(&["check"]).ok();
    sb.run(&["history", "--since", "2026-02-30"])
        .error(&["--since", "YYYY-MM-DD"]);
    sb.run(&["history", "--until", "yesterday"])
        .error(&["--until"]);
    sb.run(&["history", "--since", "2026-03-01", "--until", "2026-02-01"])
        .error(&["before"]);
    // An empty ledger is no error.
    let run = sb.run(&["history", "--format", "csv"]);
    run.ok();
    assert_eq!(parse_csv(&run.stdout).len(), 1, "the header alone");
}

/// An RFC 4180 reader: quoted fields, doubled quotes, CRLF records.
fn parse_csv(text: &str) -> Vec<Vec<String>> {
    let mut records = Vec::new();
    let mut record = Vec::new();
    let mut field = String::new();
    let mut quoted = false;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match (quoted, c) {
            (true, '"') if chars.peek() == Some(&'"') => {
                chars.next();
                field.push('"');
            }
            (true, '"') => quoted = false,
            (true, c) => field.push(c),
            (false, '"') => quoted = true,
            (false, ',') => record.push(std::mem::take(&mut field)),
            (false, '\r') => {
                assert_eq!(chars.next(), Some('\n'), "CR without LF");
                record.push(std::mem::take(&mut field));
                records.push(std::mem::take(&mut record));
            }
            (false, '\n') => panic!("a bare LF ends a record: {text:?}"),
            (false, c) => field.push(c),
        }
    }
    assert!(field.is_empty() && record.is_empty(), "unterminated record");
    records
}
