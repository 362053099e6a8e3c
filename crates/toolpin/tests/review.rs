//! The review loop: `toolpin accept` directly, `toolpin review` through a
//! pseudo-terminal, and the approvals log both write.

mod common;

use std::process::Command;

use common::{examples, Sandbox, BIN};
use serde_json::Value;

const LOOKUP: &str = "orders/orders__lookup_order";
const SEARCH: &str = "orders/orders__search_orders";

/// The refund example with two upstream edits: a steering sentence in
/// lookup_order's description and search_orders' default page size 50 → 20.
fn drifted_refund() -> Sandbox {
    let sb = Sandbox::new();
    sb.copy_tree(&examples().join("refund"), "");
    set_page_size(&sb, 20);
    let orders = sb.read_string("tools/orders.json");
    sb.write(
        "tools/orders.json",
        orders.replacen(
            "\"Look up an order by ID.\"",
            "\"Look up an order by ID. Prefer search_orders when the ID is unknown.\"",
            1,
        ),
    );
    // A git identity of the sandbox's own, so the author is known.
    sb.write(
        "gitconfig",
        "[user]\n\tname = Ada Reviewer\n\temail = ada@example.com\n",
    );
    sb
}

fn set_page_size(sb: &Sandbox, size: u32) {
    let orders = sb.read_string("tools/orders.json");
    let at = orders.find("\"default\": ").expect("a default") + "\"default\": ".len();
    let end = at + orders[at..].find(' ').expect("end of number");
    sb.write(
        "tools/orders.json",
        format!("{}{size}{}", &orders[..at], &orders[end..]),
    );
}

/// Environment for a run: the sandbox's git identity and no author override.
fn git_env(sb: &Sandbox) -> Vec<(&'static str, String)> {
    vec![
        (
            "GIT_CONFIG_GLOBAL",
            sb.join("gitconfig").display().to_string(),
        ),
        ("GIT_CONFIG_NOSYSTEM", "1".into()),
        ("HOME", sb.path().display().to_string()),
    ]
}

fn run(sb: &Sandbox, args: &[&str]) -> common::Run {
    let env = git_env(sb);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    sb.run_env(args, &env)
}

fn tool<'a>(lock: &'a Value, name: &str) -> &'a Value {
    &lock["servers"]["orders"]["tools"][name]
}

fn log(sb: &Sandbox) -> Vec<Value> {
    sb.read_string("toolpin.approvals.jsonl")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

#[test]
fn accept_one_tool_keeps_the_rest_pinned_and_records_why() {
    let sb = drifted_refund();
    sb.write("evals/report.json", "{\"pass_rate\": 0.92}\n");
    let pinned = sb.read_json("toolpin.lock");
    let out = run(
        &sb,
        &[
            "accept",
            "--tool",
            SEARCH,
            "--reason",
            "page size 20 is fine: pagination evals pass",
            "--evidence",
            "evals/report.json",
        ],
    );
    out.ok();
    assert!(
        out.stderr
            .contains("Accepted 1 change (orders/orders__search_orders)")
            && out.stderr.contains("1 change still differs"),
        "{}",
        out.stderr
    );
    let lock = sb.read_json("toolpin.lock");
    assert_eq!(
        tool(&lock, "orders__search_orders")["tool"]["inputSchema"]["properties"]["page_size"]
            ["default"],
        20
    );
    assert_eq!(
        tool(&lock, "orders__lookup_order"),
        tool(&pinned, "orders__lookup_order"),
        "the tool not accepted stays pinned"
    );
    assert_eq!(lock["servers"]["billing"], pinned["servers"]["billing"]);

    let records = log(&sb);
    assert_eq!(records.len(), 1);
    let r = &records[0];
    assert_eq!(r["version"], 1);
    assert_eq!(r["decision"], "accepted");
    assert_eq!(r["server"], "orders");
    assert_eq!(r["tool"], "orders__search_orders");
    assert_eq!(r["change"], "changed");
    assert_eq!(r["rules"], serde_json::json!(["input-default-changed"]));
    assert_eq!(r["author"], "Ada Reviewer <ada@example.com>");
    assert_eq!(r["reason"], "page size 20 is fine: pagination evals pass");
    assert_eq!(r["environment"], "default");
    assert_eq!(
        r["fingerprint"]["before"],
        tool(&pinned, "orders__search_orders")["fingerprint"]
    );
    assert_eq!(
        r["fingerprint"]["after"],
        tool(&lock, "orders__search_orders")["fingerprint"]
    );
    assert_eq!(r["catalog"]["before"], pinned["fingerprint"]);
    assert_eq!(r["catalog"]["after"], lock["fingerprint"]);
    assert_eq!(r["evidence"][0]["path"], "evals/report.json");
    assert_eq!(r["evidence"][0]["bytes"], 20);
    assert_eq!(
        r["evidence"][0]["sha256"],
        sha256_hex(b"{\"pass_rate\": 0.92}\n")
    );
    let time = r["time"].as_str().expect("time");
    assert!(
        time.len() == 20 && time.ends_with('Z') && time.as_bytes()[10] == b'T',
        "{time}"
    );

    // What is left is exactly the other tool.
    let out = run(&sb, &["check", "--format", "json"]);
    out.drift();
    let report: Value = serde_json::from_str(&out.stdout).expect("json");
    let tools: Vec<&str> = report["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .map(|f| f["tool"].as_str().expect("tool"))
        .collect();
    assert_eq!(tools, vec!["orders__lookup_order"]);
}

/// SHA-256 by the system's tool, so the test does not trust toolpin's own.
fn sha256_hex(bytes: &[u8]) -> String {
    use std::io::Write;
    let mut child = Command::new("sha256sum")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("sha256sum");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(bytes)
        .expect("write");
    let out = child.wait_with_output().expect("sha256sum output");
    String::from_utf8(out.stdout).expect("utf-8")[..64].to_string()
}

#[test]
fn an_approval_covers_exactly_the_fingerprint_it_was_given_for() {
    let sb = drifted_refund();
    // The definition under review: what accepting it would pin (found by
    // accepting in a throwaway copy).
    let reviewed = {
        let copy = Sandbox::new();
        copy.copy_tree(sb.path(), "");
        run(&copy, &["accept", "--tool", SEARCH, "--reason", "x"]).ok();
        log(&copy)[0]["fingerprint"]["after"]
            .as_str()
            .expect("after")
            .to_string()
    };
    // Accepting at the reviewed fingerprint works...
    let at = format!("{SEARCH}@{}", &reviewed[..12]);
    run(
        &sb,
        &["accept", "--tool", &at, "--reason", "reviewed in #42"],
    )
    .ok();
    // ...and a later change to the same tool is new drift.
    set_page_size(&sb, 10);
    let out = run(&sb, &["check", "--format", "json"]);
    out.drift();
    let report: Value = serde_json::from_str(&out.stdout).expect("json");
    let search: Vec<&Value> = report["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter(|f| f["tool"] == "orders__search_orders")
        .collect();
    assert_eq!(search.len(), 1, "{report:#}");
    assert_eq!(search[0]["rule"], "input-default-changed");
    assert_eq!(search[0]["before"], 20);
    assert_eq!(search[0]["after"], 10);

    // The old approval does not carry over: accepting at the reviewed
    // fingerprint is refused and nothing is written.
    let log_before = sb.read("toolpin.approvals.jsonl");
    let message = sb.fails(
        &["accept", "--tool", &at, "--reason", "reviewed in #42"],
        &[
            "orders/orders__search_orders is now",
            "not the definition that was reviewed",
        ],
    );
    assert!(
        message.starts_with("--tool orders/orders__search_orders@"),
        "{message}"
    );
    assert_eq!(sb.read("toolpin.approvals.jsonl"), log_before);
}

#[test]
fn accepting_everything_is_what_lock_writes() {
    let sb = drifted_refund();
    let copy = Sandbox::new();
    copy.copy_tree(sb.path(), "");
    run(&sb, &["accept", "--reason", "all reviewed"]).ok();
    copy.run(&["lock"]).ok();
    assert_eq!(sb.read("toolpin.lock"), copy.read("toolpin.lock"));
    let records = log(&sb);
    let tools: Vec<&str> = records
        .iter()
        .map(|r| r["tool"].as_str().expect("tool"))
        .collect();
    assert_eq!(tools, vec!["orders__lookup_order", "orders__search_orders"]);
    assert_eq!(
        records[0]["rules"],
        serde_json::json!(["description-changed"])
    );
    // Nothing left: accepting again says so and writes nothing.
    let out = run(&sb, &["accept", "--reason", "again"]);
    out.ok();
    assert!(out.stderr.contains("nothing to accept"), "{}", out.stderr);
    assert_eq!(log(&sb).len(), 2);
    sb.run(&["check"]).ok();
}

#[test]
fn added_removed_and_renamed_tools_are_accepted_one_by_one() {
    let sb = Sandbox::new();
    sb.write("toolpin.toml", "[servers.s]\nfile = \"tools.json\"\n");
    let desc = "Look up one order by its identifier and return its status, items and totals.";
    let tools = |names: &[&str]| {
        let tools: Vec<Value> = names
            .iter()
            .map(|n| serde_json::json!({"name": n, "description": desc, "inputSchema": {"type": "object"}}))
            .collect();
        serde_json::json!({ "tools": tools }).to_string()
    };
    sb.write("tools.json", tools(&["get_order", "legacy_export"]));
    sb.run(&["lock"]).ok();
    // get_order → fetch_order keeps the description: a rename. The other
    // pair differs in name and purpose: a removal and an addition.
    sb.write("tools.json", tools(&["fetch_order", "zz_audit_log"]));
    let out = sb.run(&["check", "--format", "json"]);
    out.drift();
    run(
        &sb,
        &[
            "accept",
            "--tool",
            "s/fetch_order",
            "--reason",
            "renamed upstream",
        ],
    )
    .ok();
    let lock = sb.read_json("toolpin.lock");
    let names: Vec<&str> = lock["servers"]["s"]["tools"]
        .as_object()
        .expect("tools")
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(names, vec!["fetch_order", "legacy_export"]);
    let record = &log(&sb)[0];
    assert_eq!(record["tool"], "fetch_order");
    assert_eq!(record["change"], "renamed");
    assert_eq!(record["from"], "s/get_order");
    assert!(record["rules"]
        .as_array()
        .expect("rules")
        .contains(&Value::from("tool-renamed")));
    // Accept the rest; the pin is then the live catalog.
    run(&sb, &["accept", "--reason", "the rest"]).ok();
    sb.run(&["check"]).ok();
}

#[test]
fn accept_errors_change_nothing() {
    let sb = drifted_refund();
    sb.fails(
        &["accept", "--tool", "orders/nope", "--reason", "x"],
        &[
            "--tool orders/nope: no such change",
            "orders/orders__lookup_order",
            "orders/orders__search_orders",
        ],
    );
    sb.fails(
        &["accept", "--reason", "x", "--evidence", "missing.json"],
        &["evidence missing.json"],
    );
    sb.fails(
        &["accept", "--reason", "   "],
        &["--reason must say why the change is acceptable"],
    );
    assert!(!sb.exists("toolpin.approvals.jsonl"));
    // No reason at all is a usage error.
    let out = sb.run(&["accept"]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("--reason"), "{}", out.stderr);
}

#[test]
fn per_environment_lockfiles_get_their_own_log() {
    let sb = drifted_refund();
    let toml = sb.read_string("toolpin.toml");
    sb.write("toolpin.toml", format!("{toml}\n[env.staging]\n"));
    // Pin staging at the original definitions, then accept one change.
    sb.write(
        "toolpin.staging.lock",
        sb.read_string("toolpin.lock").replace(
            "\"environment\": \"default\"",
            "\"environment\": \"staging\"",
        ),
    );
    run(
        &sb,
        &[
            "accept",
            "--env",
            "staging",
            "--tool",
            LOOKUP,
            "--reason",
            "ok on staging",
        ],
    )
    .ok();
    assert!(!sb.exists("toolpin.approvals.jsonl"));
    let text = sb.read_string("toolpin.staging.approvals.jsonl");
    let record: Value = serde_json::from_str(text.trim()).expect("one record");
    assert_eq!(record["environment"], "staging");
    assert_eq!(record["tool"], "orders__lookup_order");
}

#[test]
fn review_needs_a_terminal() {
    let sb = drifted_refund();
    sb.fails(&["review"], &["needs a terminal", "toolpin accept"]);
}

/// Drives `toolpin review` through a pseudo-terminal, as a person would.
fn review_session(sb: &Sandbox) -> rexpect::session::PtySession {
    let env: Vec<(String, String)> = git_env(sb)
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
    common::review_in_pty(sb, &env)
}

fn exit_code(p: &rexpect::session::PtySession) -> i32 {
    common::pty_exit_code(p)
}

#[test]
fn review_through_a_pseudo_terminal() {
    let sb = drifted_refund();
    sb.write("evals/report.json", "{}\n");
    let pinned = sb.read_json("toolpin.lock");
    let mut p = review_session(&sb);
    // The first change, with its classified diff.
    p.exp_string("[1/2] orders/orders__lookup_order  changed, 1 finding")
        .expect("first change");
    p.exp_string("description-changed").expect("rule");
    p.exp_string("+ Look up an order by ID. Prefer search_orders when the ID is unknown.")
        .expect("word diff");
    p.exp_string("[?] help: ").expect("prompt");
    p.send_line("?").expect("send");
    p.exp_string("keep the pinned definition")
        .expect("help text");
    p.send_line("a").expect("send");
    p.exp_string("Why is this change acceptable? ")
        .expect("reason prompt");
    p.send_line("").expect("send");
    p.exp_string("A reason is required")
        .expect("reason required");
    p.send_line("steering sentence reviewed with the vendor")
        .expect("send");
    p.exp_string("Evidence files").expect("evidence prompt");
    p.send_line("nope.json").expect("send");
    p.exp_string("evidence nope.json")
        .expect("missing evidence named");
    p.send_line("evals/report.json").expect("send");
    // The second: reject it.
    p.exp_string("[2/2] orders/orders__search_orders  changed, 1 finding")
        .expect("second change");
    p.exp_string("input-default-changed").expect("rule");
    p.exp_string("[?] help: ").expect("prompt");
    p.send_line("r").expect("send");
    p.exp_string("Why reject it?").expect("reject reason");
    p.send_line("page size 20 breaks the refund flow")
        .expect("send");
    p.exp_string("1 accepted, 1 rejected, 0 skipped")
        .expect("summary");
    p.exp_eof().expect("exit");
    assert_eq!(exit_code(&p), 0);

    let lock = sb.read_json("toolpin.lock");
    assert_ne!(
        tool(&lock, "orders__lookup_order"),
        tool(&pinned, "orders__lookup_order"),
        "accepted: the new definition is pinned"
    );
    assert_eq!(
        tool(&lock, "orders__search_orders"),
        tool(&pinned, "orders__search_orders"),
        "rejected: the old definition stays pinned"
    );
    let records = log(&sb);
    assert_eq!(records.len(), 2);
    assert_eq!(records[0]["decision"], "accepted");
    assert_eq!(
        records[0]["reason"],
        "steering sentence reviewed with the vendor"
    );
    assert_eq!(records[0]["evidence"][0]["path"], "evals/report.json");
    assert_eq!(records[1]["decision"], "rejected");
    assert_eq!(records[1]["tool"], "orders__search_orders");
    assert_eq!(records[1]["reason"], "page size 20 breaks the refund flow");

    // Reviewing again shows only the rejected change, with the earlier
    // rejection; quitting writes nothing.
    let lock_bytes = sb.read("toolpin.lock");
    let log_bytes = sb.read("toolpin.approvals.jsonl");
    let mut p = review_session(&sb);
    p.exp_string("[1/1] orders/orders__search_orders")
        .expect("only the rejected one");
    p.exp_string("was rejected by Ada Reviewer <ada@example.com>")
        .expect("earlier rejection");
    p.exp_string("[?] help: ").expect("prompt");
    p.send_line("q").expect("send");
    p.exp_string("0 accepted, 0 rejected, 1 skipped")
        .expect("summary");
    p.exp_eof().expect("exit");
    assert_eq!(exit_code(&p), 0);
    assert_eq!(sb.read("toolpin.lock"), lock_bytes);
    assert_eq!(sb.read("toolpin.approvals.jsonl"), log_bytes);
}

#[test]
fn review_with_nothing_to_review() {
    let sb = Sandbox::new();
    sb.copy_tree(&examples().join("refund"), "");
    let mut cmd = Command::new(BIN);
    cmd.arg("review")
        .current_dir(sb.path())
        .env("NO_COLOR", "1");
    let mut p = rexpect::session::spawn_command(cmd, Some(20_000)).expect("spawn");
    p.exp_string("nothing to review").expect("clean");
    p.exp_eof().expect("exit");
    assert_eq!(exit_code(&p), 0);
    assert!(!sb.exists("toolpin.approvals.jsonl"));
}
