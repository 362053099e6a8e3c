//! End-to-end tests of the `toolpin` binary: every input format through
//! `lock` and `check`, exec sources, transforms, environments, drift
//! reports, `diff` and `fingerprint`, bad input, concurrent writers and
//! colour. Exit codes: 0 clean, 1 drift, 2 error with one `error:` line.
//!
//! Every failure case also asserts that a pre-existing `toolpin.lock` is
//! byte-identical afterwards and that no file appeared in the directory.

mod common;

use std::collections::BTreeSet;
use std::fs;
use std::io::{BufWriter, Write};
use std::os::unix::fs::MetadataExt;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use common::*;
use serde_json::{json, Value};

// ---------------------------------------------------------------------------
// helpers

/// `lock` then `check` in `sb`, both clean; returns the parsed lockfile.
#[track_caller]
fn lock_and_check(sb: &Sandbox) -> Value {
    let lock = sb.run(&["lock"]);
    lock.ok();
    assert_eq!(lock.stdout, "", "lock reports on stderr");
    assert!(
        lock.stderr.starts_with("Pinned ") && lock.stderr.contains("toolpin.lock (tools "),
        "{lock:#?}"
    );
    assert_eq!(lock.stderr.matches('\n').count(), 1, "{lock:#?}");
    let check = sb.run(&["check"]);
    check.ok();
    assert!(
        check
            .stdout
            .starts_with("ok: catalog matches the lockfile ("),
        "{check:#?}"
    );
    assert_eq!(check.stderr, "");
    let lock = sb.read_json("toolpin.lock");
    assert_eq!(lock["toolpin"], 1);
    assert_eq!(lock["environment"], "default");
    lock
}

/// One server `svc` reading `tests/fixtures/formats/<fixture>`.
#[track_caller]
fn format_case(fixture: &str, extra: &str, format: &str, names: &[&str]) -> Value {
    let sb = Sandbox::new();
    sb.fixture(&format!("formats/{fixture}"), "tools.json");
    sb.write("toolpin.toml", one_file_server("svc", "tools.json", extra));
    let lock = lock_and_check(&sb);
    assert_eq!(lock["servers"]["svc"]["format"], format, "{lock:#}");
    let mut want: Vec<String> = names.iter().map(|s| s.to_string()).collect();
    want.sort();
    assert_eq!(pinned_names(&lock, "svc"), want);
    lock
}

/// A sandbox with a valid config (server `svc` over tools.json) and a
/// lockfile written by `toolpin lock`, ready for a failure case.
fn locked_sandbox() -> Sandbox {
    let sb = Sandbox::new();
    sb.write(
        "tools.json",
        r#"{"tools": [{"name": "lookup_order", "description": "Look up an order by ID.", "inputSchema": {"type": "object"}}]}"#,
    );
    sb.write("toolpin.toml", one_file_server("svc", "tools.json", ""));
    sb.run(&["lock"]).ok();
    assert!(sb.exists("toolpin.lock"));
    sb
}

/// Runs both `lock` and `check` expecting the same failure.
#[track_caller]
fn lock_and_check_fail(sb: &Sandbox, needles: &[&str]) -> String {
    let lock = sb.fails(&["lock"], needles);
    let check = sb.fails(&["check"], needles);
    assert_eq!(lock, check, "lock and check should fail alike");
    lock
}

/// Sorts the string array at `pointer` in `v`.
fn sort_at(v: &mut Value, pointer: &str) {
    let arr = v
        .pointer_mut(pointer)
        .and_then(Value::as_array_mut)
        .unwrap_or_else(|| panic!("no array at {pointer}"));
    arr.sort_by(|a, b| a.as_str().cmp(&b.as_str()));
}

// ---------------------------------------------------------------------------
// 1. input formats

#[test]
fn format_mcp_result_with_next_cursor() {
    let lock = format_case(
        "mcp-next-cursor.json",
        "",
        "mcp",
        &["lookup_order", "search_orders"],
    );
    let input = Sandbox::fixture_json("formats/mcp-next-cursor.json");
    assert_eq!(
        pinned_tool(&lock, "svc", "lookup_order"),
        &input["tools"][0]
    );
    assert_eq!(
        pinned_tool(&lock, "svc", "search_orders"),
        &input["tools"][1]
    );
    assert_eq!(
        lock["servers"]["svc"]["source"],
        json!({"file": "tools.json"})
    );
}

#[test]
fn format_mcp_list_of_pages() {
    format_case(
        "mcp-pages.json",
        "",
        "mcp",
        &["lookup_order", "search_orders", "refund_order"],
    );
}

#[test]
fn format_mcp_bare_array() {
    let lock = format_case(
        "mcp-bare.json",
        "",
        "mcp",
        &["lookup_order", "search_orders"],
    );
    let input = Sandbox::fixture_json("formats/mcp-bare.json");
    assert_eq!(pinned_tool(&lock, "svc", "lookup_order"), &input[0]);
}

#[test]
fn format_mcp_jsonrpc_response() {
    let lock = format_case("mcp-jsonrpc.json", "", "mcp", &["lookup_order"]);
    let input = Sandbox::fixture_json("formats/mcp-jsonrpc.json");
    assert_eq!(
        pinned_tool(&lock, "svc", "lookup_order"),
        &input["result"]["tools"][0]
    );
}

#[test]
fn format_openai_chat_completions() {
    let lock = format_case(
        "openai-chat.json",
        "",
        "openai-chat",
        &["get_invoice", "ping"],
    );
    let input = Sandbox::fixture_json("formats/openai-chat.json");
    let f = &input[0]["function"];
    assert_eq!(
        pinned_tool(&lock, "svc", "get_invoice"),
        &json!({
            "name": "get_invoice",
            "description": f["description"],
            "inputSchema": f["parameters"],
            "strict": true
        })
    );
    assert_eq!(
        pinned_tool(&lock, "svc", "ping"),
        &json!({"name": "ping", "description": "Check the service is up."})
    );
}

#[test]
fn format_openai_responses() {
    let lock = format_case(
        "openai-responses.json",
        "",
        "openai-responses",
        &["get_invoice"],
    );
    let input = Sandbox::fixture_json("formats/openai-responses.json");
    assert_eq!(
        pinned_tool(&lock, "svc", "get_invoice"),
        &json!({
            "name": "get_invoice",
            "description": input[0]["description"],
            "inputSchema": input[0]["parameters"],
            "strict": true
        })
    );
}

#[test]
fn format_anthropic_input_schema() {
    let lock = format_case("anthropic.json", "", "anthropic", &["get_weather"]);
    let input = Sandbox::fixture_json("formats/anthropic.json");
    assert_eq!(
        pinned_tool(&lock, "svc", "get_weather"),
        &json!({
            "name": "get_weather",
            "description": input[0]["description"],
            "inputSchema": input[0]["input_schema"],
            "cache_control": {"type": "ephemeral"}
        })
    );
}

#[test]
fn format_gemini_keeps_uppercase_types() {
    let sb = Sandbox::new();
    sb.fixture("formats/gemini.json", "tools.json");
    sb.write("toolpin.toml", one_file_server("svc", "tools.json", ""));
    let lock = lock_and_check(&sb);
    assert_eq!(lock["servers"]["svc"]["format"], "gemini");
    let tool = pinned_tool(&lock, "svc", "get_weather");
    assert_eq!(tool["inputSchema"]["type"], "OBJECT");
    assert_eq!(tool["inputSchema"]["properties"]["city"]["type"], "STRING");
    assert_eq!(tool["inputSchema"]["properties"]["days"]["type"], "INTEGER");
    let input = Sandbox::fixture_json("formats/gemini.json");
    assert_eq!(
        tool["inputSchema"],
        input["functionDeclarations"][0]["parameters"]
    );
    let text = sb.read_string("toolpin.lock");
    assert!(text.contains("\"type\": \"OBJECT\""), "{text}");
    assert!(text.contains("\"type\": \"STRING\""), "{text}");
    assert!(
        !text.contains("\"object\"") && !text.contains("\"string\""),
        "{text}"
    );
}

#[test]
fn format_forced_by_config() {
    // Name and description only: detected as MCP, forced to Anthropic.
    format_case(
        "name-description-only.json",
        "",
        "mcp",
        &["ping", "version"],
    );
    let lock = format_case(
        "name-description-only.json",
        "format = \"anthropic\"\n",
        "anthropic",
        &["ping", "version"],
    );
    assert_eq!(
        lock["servers"]["svc"]["source"],
        json!({"file": "tools.json", "format": "anthropic"})
    );
    // Forcing a format also works for a shape detection would read alike.
    let lock = format_case(
        "mcp-bare.json",
        "format = \"mcp\"\n",
        "mcp",
        &["lookup_order", "search_orders"],
    );
    assert_eq!(lock["servers"]["svc"]["source"]["format"], "mcp");
}

/// `openai`, the eval manifest's older name for `openai-chat`, is accepted
/// wherever a format is named; lockfiles record the canonical name.
#[test]
fn format_aliases_read_as_the_canonical_format() {
    format_case(
        "openai-chat.json",
        "format = \"openai\"\n",
        "openai-chat",
        &["get_invoice", "ping"],
    );
    let sb = Sandbox::new();
    sb.fixture("same/docs.openai-chat.json", "docs.json");
    sb.run(&["diff", "--input-format", "openai", "docs.json", "docs.json"])
        .ok();
}

#[test]
fn format_forced_mismatch_and_unknown_format_are_errors() {
    let sb = locked_sandbox();
    sb.fixture("formats/mcp-bare.json", "tools.json");
    sb.write(
        "toolpin.toml",
        one_file_server("svc", "tools.json", "format = \"openai-chat\"\n"),
    );
    lock_and_check_fail(
        &sb,
        &[
            "server \"svc\"",
            "tools.json",
            "tool #0 is not an OpenAI Chat Completions tool",
        ],
    );
    sb.write(
        "toolpin.toml",
        one_file_server("svc", "tools.json", "format = \"gpt\"\n"),
    );
    lock_and_check_fail(
        &sb,
        &["toolpin.toml", "servers.svc", "unknown format \"gpt\""],
    );
}

#[test]
fn format_gemini_tool_lists_and_builtin_tools() {
    for doc in [
        json!([{"function_declarations": [{"name": "a", "parameters": {"type": "OBJECT"}}]}, {"googleSearch": {}}]),
        json!({"tools": [{"functionDeclarations": [{"name": "a", "parameters": {"type": "OBJECT"}}]}, {"codeExecution": {}}]}),
    ] {
        let sb = Sandbox::new();
        sb.write("tools.json", doc.to_string());
        sb.write("toolpin.toml", one_file_server("svc", "tools.json", ""));
        let lock = lock_and_check(&sb);
        assert_eq!(lock["servers"]["svc"]["format"], "gemini");
        assert_eq!(
            pinned_tool(&lock, "svc", "a"),
            &json!({"name": "a", "inputSchema": {"type": "OBJECT"}})
        );
    }
}

#[test]
fn format_anthropic_custom_and_server_tools() {
    let sb = Sandbox::new();
    sb.write(
        "tools.json",
        json!([
            {"type": "custom", "name": "lookup", "input_schema": {"type": "object"}},
            {"type": "web_search_20250305", "name": "web_search", "max_uses": 5}
        ])
        .to_string(),
    );
    sb.write("toolpin.toml", one_file_server("svc", "tools.json", ""));
    let lock = lock_and_check(&sb);
    assert_eq!(lock["servers"]["svc"]["format"], "anthropic");
    assert_eq!(
        pinned_tool(&lock, "svc", "lookup"),
        &json!({"name": "lookup", "inputSchema": {"type": "object"}})
    );
    assert_eq!(
        pinned_tool(&lock, "svc", "web_search"),
        &json!({"type": "web_search_20250305", "name": "web_search", "max_uses": 5})
    );
}

#[test]
fn format_detection_errors() {
    let sb = locked_sandbox();
    sb.write(
        "tools.json",
        json!([
            {"name": "a", "input_schema": {}},
            {"type": "function", "function": {"name": "b"}}
        ])
        .to_string(),
    );
    lock_and_check_fail(
        &sb,
        &[
            "tools.json",
            "tool #0 looks like an Anthropic tool",
            "tool #1 like an OpenAI Chat Completions tool",
            "set `format`",
        ],
    );
    sb.write("tools.json", r#"{"functions": []}"#);
    lock_and_check_fail(&sb, &["tools.json", "cannot detect the format"]);
    sb.write("tools.json", r#""tools""#);
    lock_and_check_fail(&sb, &["tools.json", "cannot detect the format", "a string"]);
    sb.write(
        "tools.json",
        json!([
            {"type": "function", "name": "f", "parameters": {}},
            {"type": "web_search"}
        ])
        .to_string(),
    );
    lock_and_check_fail(
        &sb,
        &[
            "tools.json",
            "tool #1 has type \"web_search\"",
            "only function tools",
        ],
    );
}

#[test]
fn lockfile_records_format_per_server() {
    let sb = Sandbox::new();
    let servers = [
        ("a_mcp", "mcp-next-cursor.json", "mcp"),
        ("b_chat", "openai-chat.json", "openai-chat"),
        ("c_resp", "openai-responses.json", "openai-responses"),
        ("d_anth", "anthropic.json", "anthropic"),
        ("e_gem", "gemini.json", "gemini"),
        ("f_rpc", "mcp-jsonrpc.json", "mcp"),
    ];
    let mut toml = String::new();
    for (name, fixture, _) in servers {
        sb.fixture(&format!("formats/{fixture}"), &format!("tools/{fixture}"));
        toml += &format!("[servers.{name}]\nfile = \"tools/{fixture}\"\nprefix = \"{name}__\"\n\n");
    }
    sb.write("toolpin.toml", toml);
    let lock = lock_and_check(&sb);
    for (name, _, format) in servers {
        assert_eq!(lock["servers"][name]["format"], format, "server {name}");
        for tool in pinned_names(&lock, name) {
            assert!(tool.starts_with(&format!("{name}__")), "{tool}");
        }
    }
    assert_eq!(lock["servers"].as_object().map(|m| m.len()), Some(6));
}

#[test]
fn fidelity_unknown_members_are_kept_exactly() {
    let sb = Sandbox::new();
    sb.fixture("fidelity.json", "tools.json");
    sb.write("toolpin.toml", one_file_server("svc", "tools.json", ""));
    let lock = lock_and_check(&sb);
    let input = Sandbox::fixture_json("fidelity.json");

    // The only differences allowed: the description trimmed and `required`
    // at schema positions sorted. `required` outside schemas (x-vendor, an
    // unknown keyword x-k) stays as given.
    let mut want = input["tools"][0].clone();
    want["description"] = json!("Look up an order by ID.");
    sort_at(&mut want, "/inputSchema/required");
    sort_at(&mut want, "/inputSchema/properties/filter/required");
    sort_at(&mut want, "/outputSchema/required");
    let got = pinned_tool(&lock, "svc", "lookup_order");
    assert_eq!(got, &want, "lockfile:\n{got:#}\nwanted:\n{want:#}");
    // Spot checks of what must not be touched.
    assert_eq!(got["x-vendor"]["required"], json!(["zeta", "alpha"]));
    assert_eq!(
        got["inputSchema"]["properties"]["filter"]["x-k"]["required"],
        json!(["b", "a"])
    );
    assert_eq!(got["annotations"]["readOnlyHint"], "yes");
    assert_eq!(got["annotations"]["x-cost"]["cap"], json!(2.0));
    assert!(got["annotations"]["x-cost"]["cap"].is_f64());
    assert_eq!(got["execution"], json!({"taskSupport": "optional"}));
    assert_eq!(got["icons"], input["tools"][0]["icons"]);
    assert_eq!(got["_meta"], input["tools"][0]["_meta"]);
    assert_eq!(got["x-text"], "caf\u{e9} \u{2028} \u{1f600} tab\there");
    assert_eq!(pinned_tool(&lock, "svc", "ping"), &input["tools"][1]);
    // Non-ASCII text is written as-is, not escaped.
    let text = sb.read_string("toolpin.lock");
    assert!(text.contains("caf\u{e9} \u{2028} \u{1f600}"), "{text}");
}

// ---------------------------------------------------------------------------
// 2. exec sources

#[test]
fn exec_sh_printing_tools() {
    let sb = Sandbox::new();
    sb.write(
        "toolpin.toml",
        r#"[servers.svc]
exec = ["sh", "-c", '''printf '%s\n' '{"tools": [{"name": "echo", "description": "Echo the input.", "inputSchema": {"type": "object"}}]}'; echo 'warming up' >&2''']
timeout = "5s"
"#,
    );
    let lock = lock_and_check(&sb);
    assert_eq!(lock["servers"]["svc"]["format"], "mcp");
    assert_eq!(
        pinned_tool(&lock, "svc", "echo"),
        &json!({"name": "echo", "description": "Echo the input.", "inputSchema": {"type": "object"}})
    );
    let source = &lock["servers"]["svc"]["source"];
    assert_eq!(source["exec"][0], "sh");
    assert_eq!(source["exec"][1], "-c");
    assert_eq!(source["timeout_ms"], 5000);
    assert!(
        source["exec"][2]
            .as_str()
            .is_some_and(|a| a.starts_with("printf '%s\\n' '{\"tools\"")),
        "{source:#}"
    );
}

#[test]
fn exec_argv_is_recorded_unexpanded() {
    let sb = Sandbox::new();
    sb.write(
        "toolpin.toml",
        "[servers.svc]\nexec = [\"sh\", \"-c\", \"test -n \\\"$HOME\\\" && printf '[]'\"]\n",
    );
    let lock = lock_and_check(&sb);
    assert_eq!(
        lock["servers"]["svc"]["source"],
        json!({"exec": ["sh", "-c", "test -n \"$HOME\" && printf '[]'"]})
    );
    assert_eq!(pinned_names(&lock, "svc"), Vec::<String>::new());
}

#[test]
fn exec_failing_command_shows_status_and_stderr() {
    let sb = locked_sandbox();
    sb.write(
        "toolpin.toml",
        r#"[servers.svc]
exec = ["sh", "-c", "printf '%s%s\\n' conn ecting >&2; printf 'server %s: bad token\\n' exploded >&2; exit 3"]
"#,
    );
    // The stderr text is assembled by printf, so it can only come from the
    // command's stderr, not from the command line the message also shows.
    let message = lock_and_check_fail(
        &sb,
        &[
            "server \"svc\"",
            "`sh -c ",
            "exited with status 3; stderr: ",
            "connecting | server exploded: bad token",
        ],
    );
    assert!(
        message.ends_with("stderr: connecting | server exploded: bad token"),
        "{message}"
    );
}

#[test]
fn exec_missing_program() {
    let sb = locked_sandbox();
    sb.write(
        "toolpin.toml",
        "[servers.svc]\nexec = [\"/nonexistent/toolpin-printer\", \"--tools\"]\n",
    );
    lock_and_check_fail(
        &sb,
        &[
            "server \"svc\"",
            "cannot run `/nonexistent/toolpin-printer --tools`",
        ],
    );
}

#[test]
fn exec_env_is_expanded_passed_and_recorded() {
    let sb = Sandbox::new();
    sb.write("sub/.keep", "");
    sb.write(
        "toolpin.toml",
        r#"[servers.svc]
exec = ["sh", "-c", '''printf '{"tools": [{"name": "probe", "description": "%s %s key:%s dir:%s", "inputSchema": {"type": "object"}}]}' "$GREETING" "$WHO" "${#API_KEY}" "${PWD##*/}"''']
cwd = "sub"
env = { GREETING = "${PROBE_GREETING}", WHO = "${PROBE_WHO:-world}", API_KEY = "literal-api-key-7c1e" }
"#,
    );
    let env = [("PROBE_GREETING", "hello")];
    sb.run_env(&["lock"], &env).ok();
    sb.run_env(&["check"], &env).ok();
    let lock = sb.read_json("toolpin.lock");
    assert_eq!(
        pinned_tool(&lock, "svc", "probe")["description"],
        "hello world key:20 dir:sub"
    );
    let source = &lock["servers"]["svc"]["source"];
    assert_eq!(source["cwd"], "sub", "{source:#}");
    assert_eq!(
        source["env"],
        json!({
            "GREETING": "${PROBE_GREETING}",
            "WHO": "${PROBE_WHO:-world}",
            "API_KEY": "<redacted>",
        })
    );
    assert!(!sb
        .read_string("toolpin.lock")
        .contains("literal-api-key-7c1e"));
    // An unset reference is a configuration error naming the key.
    sb.fails(
        &["lock"],
        &["servers.svc: `env.GREETING`: ", "PROBE_GREETING"],
    );
}

#[test]
fn exec_env_values_are_kept_out_of_errors() {
    let sb = locked_sandbox();
    sb.write(
        "toolpin.toml",
        r#"[servers.svc]
exec = ["sh", "-c", "echo \"refused: key $API_KEY, token $ORDERS_TOKEN\" >&2; exit 4"]
env = { API_KEY = "literal-api-key-7c1e", ORDERS_TOKEN = "${PROBE_TOKEN}" }
"#,
    );
    let before = sb.read("toolpin.lock");
    let run = sb.run_env(&["lock"], &[("PROBE_TOKEN", "token-value-5d2a")]);
    let message = run.error(&[
        "server \"svc\"",
        "exited with status 4; stderr: refused: key <redacted>, token ${PROBE_TOKEN}",
    ]);
    assert!(!message.contains("literal-api-key-7c1e"), "{message}");
    assert!(!message.contains("token-value-5d2a"), "{message}");
    assert!(sb.read("toolpin.lock") == before);
}

#[test]
fn exec_hanging_past_timeout_is_killed() {
    let sb = locked_sandbox();
    // A unique duration marks the sleeps so the test can look for leftovers.
    let marker = format!("29.{}{}", std::process::id(), 7);
    sb.write(
        "toolpin.toml",
        format!(
            "[servers.svc]\nexec = [\"sh\", \"-c\", \"sleep {marker} & sleep {marker}; echo late\"]\ntimeout = \"300ms\"\n"
        ),
    );
    let start = Instant::now();
    let message = sb.fails(
        &["lock"],
        &["server \"svc\"", "did not finish within 300ms", "killed"],
    );
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "took {:?}: {message}",
        start.elapsed()
    );
    // The whole process group went, background sleep included.
    let deadline = Instant::now() + Duration::from_secs(2);
    let mut left = processes_with_cmdline(&["sleep", &marker]);
    while !left.is_empty() && Instant::now() < deadline {
        thread::sleep(Duration::from_millis(20));
        left = processes_with_cmdline(&["sleep", &marker]);
    }
    for pid in &left {
        // Ours: clean up before failing.
        let _ = std::process::Command::new("kill")
            .args(["-9", &pid.to_string()])
            .status();
    }
    assert!(
        left.is_empty(),
        "the timeout left processes running: {left:?}"
    );
}

#[test]
fn exec_background_child_does_not_hold_the_output() {
    let sb = Sandbox::new();
    let marker = format!("28.{}{}", std::process::id(), 3);
    sb.write(
        "toolpin.toml",
        format!(
            "[servers.svc]\nexec = [\"sh\", \"-c\", \"sleep {marker} & printf '[{{\\\"name\\\": \\\"a\\\"}}]'\"]\ntimeout = \"20s\"\n"
        ),
    );
    let start = Instant::now();
    let lock = lock_and_check(&sb);
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "took {:?}",
        start.elapsed()
    );
    assert_eq!(pinned_names(&lock, "svc"), vec!["a"]);
    let deadline = Instant::now() + Duration::from_secs(2);
    let mut left = processes_with_cmdline(&["sleep", &marker]);
    while !left.is_empty() && Instant::now() < deadline {
        thread::sleep(Duration::from_millis(20));
        left = processes_with_cmdline(&["sleep", &marker]);
    }
    for pid in &left {
        let _ = std::process::Command::new("kill")
            .args(["-9", &pid.to_string()])
            .status();
    }
    assert!(
        left.is_empty(),
        "background processes left running: {left:?}"
    );
}

#[test]
fn exec_printing_garbage_names_the_output_and_position() {
    let sb = locked_sandbox();
    sb.write(
        "toolpin.toml",
        r#"[servers.svc]
exec = ["sh", "-c", '''printf '{\n  "tools": [\n    oops\n  ]\n}\n' ''']
"#,
    );
    let message = sb.fails(
        &["lock"],
        &["server \"svc\"", "output of `sh -c ", "invalid JSON"],
    );
    let end = message.rfind("`:").expect("origin ends with a backtick");
    let origin = &message[..end + 1];
    assert!(origin.contains("output of `sh -c "), "{message}");
    assert_eq!(located(&message, origin), (3, 5), "{message}");
    sb.fails(&["check"], &["output of `sh -c ", "`:3:5: invalid JSON"]);
}

// ---------------------------------------------------------------------------
// 3. prefix / include / exclude / ignore

fn orders_tools(extra: &[Value]) -> String {
    let mut tools = vec![
        json!({"name": "lookup_order", "description": "Look up an order by ID."}),
        json!({"name": "search_orders", "description": "Search orders."}),
        json!({"name": "delete_order", "description": "Delete an order."}),
        json!({"name": "ping", "description": "Ping."}),
    ];
    tools.extend(extra.iter().cloned());
    json!({ "tools": tools }).to_string()
}

#[test]
fn prefix_include_exclude_namespace_and_filter() {
    let sb = Sandbox::new();
    sb.write("tools.json", orders_tools(&[]));
    sb.write(
        "toolpin.toml",
        one_file_server(
            "orders",
            "tools.json",
            "prefix = \"orders__\"\ninclude = [\"*order*\"]\nexclude = [\"delete_*\"]\n",
        ),
    );
    let lock = lock_and_check(&sb);
    assert_eq!(
        pinned_names(&lock, "orders"),
        vec!["orders__lookup_order", "orders__search_orders"]
    );
    assert_eq!(
        pinned_tool(&lock, "orders", "orders__lookup_order")["name"],
        "orders__lookup_order"
    );
    assert_eq!(
        lock["servers"]["orders"]["source"],
        json!({
            "file": "tools.json",
            "prefix": "orders__",
            "include": ["*order*"],
            "exclude": ["delete_*"]
        })
    );
    // An upstream tool the filters drop is no drift ...
    sb.write(
        "tools.json",
        orders_tools(&[
            json!({"name": "delete_all_orders"}),
            json!({"name": "health"}),
        ]),
    );
    sb.run(&["check"]).ok();
    // ... one they keep is, under its namespaced name.
    sb.write(
        "tools.json",
        orders_tools(&[json!({"name": "cancel_order"})]),
    );
    let out = sb.run(&["check", "--format", "json"]);
    out.drift();
    let report: Value = serde_json::from_str(&out.stdout).expect("json");
    assert_eq!(report["findings"][0]["rule"], "tool-added");
    assert_eq!(report["findings"][0]["tool"], "orders__cancel_order");
    assert_eq!(report["findings"][0]["server"], "orders");
}

#[test]
fn ignore_pointer_hides_only_that_member() {
    let sb = Sandbox::new();
    let tools = |generated: &str, owner: &str| {
        json!({"tools": [{
            "name": "report",
            "description": "Build a report.",
            "_meta": {"generatedAt": generated, "owner": owner}
        }]})
        .to_string()
    };
    sb.write("tools.json", tools("2025-01-01T00:00:00Z", "team-a"));
    sb.write(
        "toolpin.toml",
        one_file_server("svc", "tools.json", "ignore = [\"/_meta/generatedAt\"]\n"),
    );
    let lock = lock_and_check(&sb);
    assert_eq!(
        pinned_tool(&lock, "svc", "report")["_meta"],
        json!({"owner": "team-a"})
    );
    assert_eq!(
        lock["servers"]["svc"]["source"]["ignore"],
        json!(["/_meta/generatedAt"])
    );
    sb.write("tools.json", tools("2025-06-30T12:34:56Z", "team-a"));
    sb.run(&["check"]).ok();
    sb.write("tools.json", tools("2025-06-30T12:34:56Z", "team-b"));
    let out = sb.run(&["check"]);
    out.drift();
    assert!(out.stdout.contains("/_meta/owner"), "{}", out.stdout);
    assert!(
        out.stdout.contains("from \"team-a\" to \"team-b\""),
        "{}",
        out.stdout
    );
    assert!(!out.stdout.contains("generatedAt"), "{}", out.stdout);
}

// ---------------------------------------------------------------------------
// 4. environments

#[test]
fn env_staging_writes_and_checks_its_own_lockfile() {
    let sb = Sandbox::new();
    sb.write("orders.json", orders_tools(&[]));
    sb.write(
        "orders.staging.json",
        orders_tools(&[json!({"name": "debug_order", "description": "Staging only."})]),
    );
    sb.write(
        "billing.json",
        r#"[{"type": "function", "function": {"name": "get_invoice"}}]"#,
    );
    sb.write(
        "toolpin.toml",
        r#"[servers.orders]
file = "orders.json"
prefix = "orders__"

[servers.billing]
file = "billing.json"

[env.staging.servers.orders]
file = "orders.staging.json"
prefix = "stg__"
exclude = ["ping"]

[env.staging.servers.billing]
enabled = false
"#,
    );
    let out = sb.run(&["lock", "--env", "staging"]);
    out.ok();
    assert!(out.stderr.contains("toolpin.staging.lock"), "{out:#?}");
    assert!(sb.exists("toolpin.staging.lock"));
    assert!(
        !sb.exists("toolpin.lock"),
        "--env must not write toolpin.lock"
    );
    let staging = sb.read_json("toolpin.staging.lock");
    assert_eq!(staging["environment"], "staging");
    assert_eq!(
        staging["servers"]
            .as_object()
            .map(|m| m.keys().cloned().collect::<Vec<_>>()),
        Some(vec!["orders".to_string()])
    );
    assert_eq!(
        pinned_names(&staging, "orders"),
        vec![
            "stg__debug_order",
            "stg__delete_order",
            "stg__lookup_order",
            "stg__search_orders"
        ]
    );
    assert_eq!(
        staging["servers"]["orders"]["source"],
        json!({"file": "orders.staging.json", "prefix": "stg__", "exclude": ["ping"]})
    );
    sb.run(&["check", "--env", "staging"]).ok();
    // The default environment has no lockfile yet.
    let listing = sb.listing();
    sb.run(&["check"])
        .error(&["toolpin.lock not found", "run `toolpin lock`"]);
    assert_eq!(sb.listing(), listing);

    lock_and_check(&sb);
    let default = sb.read_json("toolpin.lock");
    assert_eq!(
        pinned_names(&default, "orders"),
        vec![
            "orders__delete_order",
            "orders__lookup_order",
            "orders__ping",
            "orders__search_orders"
        ]
    );
    assert_eq!(pinned_names(&default, "billing"), vec!["get_invoice"]);

    // A staging-only change is drift for staging alone.
    sb.write("orders.staging.json", orders_tools(&[]));
    let out = sb.run(&["check", "--env", "staging"]);
    out.drift();
    assert!(out.stdout.contains("stg__debug_order"), "{}", out.stdout);
    assert!(out.stdout.contains("tool-removed"), "{}", out.stdout);
    sb.run(&["check"]).ok();

    // An undefined environment is an error; neither lockfile changes.
    let staging_before = sb.read("toolpin.staging.lock");
    for cmd in ["lock", "check"] {
        sb.fails(
            &[cmd, "--env", "prod"],
            &["toolpin.toml", "no [env.prod] table", "staging"],
        );
    }
    assert!(sb.read("toolpin.staging.lock") == staging_before);
}

#[test]
fn env_override_adds_servers_and_replaces_lists() {
    let sb = Sandbox::new();
    sb.write("orders.json", orders_tools(&[]));
    sb.write("extra.json", r#"{"tools": [{"name": "extra_tool"}]}"#);
    sb.write(
        "toolpin.toml",
        r#"[servers.orders]
file = "orders.json"
include = ["lookup_*", "search_*"]

[env.qa.servers.orders]
include = ["ping"]

[env.qa.servers.extra]
file = "extra.json"
prefix = "x__"

[env.broken.servers.nosource]
prefix = "p__"
"#,
    );
    sb.run(&["lock", "--env", "qa"]).ok();
    let qa = sb.read_json("toolpin.qa.lock");
    assert_eq!(
        pinned_names(&qa, "orders"),
        vec!["ping"],
        "lists are replaced"
    );
    assert_eq!(pinned_names(&qa, "extra"), vec!["x__extra_tool"]);
    sb.run(&["check", "--env", "qa"]).ok();
    // An override for a server the base lacks must give a source.
    sb.fails_keeping(
        "toolpin.qa.lock",
        &["lock", "--env", "broken"],
        &["toolpin.toml", "servers.nosource", "no source"],
    );
}

#[test]
fn env_name_must_be_a_plain_word() {
    let sb = locked_sandbox();
    sb.write(
        "toolpin.toml",
        "[servers.svc]\nfile = \"tools.json\"\n\n[env.\"../evil\".servers.svc]\nprefix = \"x\"\n",
    );
    sb.fails(
        &["lock", "--env", "../evil"],
        &["environment name \"../evil\"", "letters, digits"],
    );
    assert!(!sb.join("../evil.lock").exists() && !sb.exists("toolpin.../evil.lock"));
    sb.fails(&["lock", "--env", ""], &["--env"]);
}

#[test]
fn env_override_source_replaces_exec_settings() {
    // README: an override that sets `file` or `exec` "replaces the base's
    // source completely" -- the base's exec `timeout` goes with it.
    let sb = Sandbox::new();
    sb.write("orders.json", orders_tools(&[]));
    sb.write(
        "toolpin.toml",
        r#"[servers.orders]
exec = ["cat", "orders.json"]
timeout = "5s"

[env.staging.servers.orders]
file = "orders.json"
"#,
    );
    lock_and_check(&sb);
    let out = sb.run(&["lock", "--env", "staging"]);
    out.ok();
    let staging = sb.read_json("toolpin.staging.lock");
    assert_eq!(
        staging["servers"]["orders"]["source"],
        json!({"file": "orders.json"})
    );
    sb.run(&["check", "--env", "staging"]).ok();
}

// ---------------------------------------------------------------------------
// 5. check reports

fn drift_sandbox() -> Sandbox {
    let sb = Sandbox::new();
    sb.write(
        "tools.json",
        json!({"tools": [
            {"name": "gone", "description": "Will be removed."},
            {"name": "list_orders", "description": "List orders.",
             "inputSchema": {"type": "object", "properties": {"limit": {"type": "integer", "default": 50}}},
             "annotations": {"readOnlyHint": true}},
            {"name": "stable", "description": "Never changes."}
        ]})
        .to_string(),
    );
    sb.write("toolpin.toml", one_file_server("svc", "tools.json", ""));
    lock_and_check(&sb);
    sb.write(
        "tools.json",
        json!({"tools": [
            {"name": "list_orders", "description": "List orders.",
             "inputSchema": {"type": "object", "properties": {"limit": {"type": "integer", "default": 20}}},
             "annotations": {"readOnlyHint": false}},
            {"name": "stable", "description": "Never changes."},
            {"name": "new_tool", "description": "Brand new."}
        ]})
        .to_string(),
    );
    sb
}

#[test]
fn check_text_lists_added_removed_changed() {
    let sb = drift_sandbox();
    let lock_before = sb.read("toolpin.lock");
    let out = sb.run(&["check"]);
    out.drift();
    let text = &out.stdout;
    assert!(
        text.starts_with("drift: 1 added, 1 removed, 1 changed (5 findings)\n"),
        "{text}"
    );
    for needle in [
        "svc/gone",
        "tool-removed",
        "gone: tool removed",
        "svc/new_tool",
        "tool-added",
        "new_tool: new tool",
        "svc/list_orders",
        "input-default-changed",
        "/inputSchema/properties/limit/default",
        "list_orders: /inputSchema/properties/limit default 50 → 20",
        "annotation-readonly-revoked",
        "/annotations/readOnlyHint",
        "readOnlyHint true → false",
        // Not read-only any more, so the spec default (destructive) applies.
        "annotation-destructive-asserted",
    ] {
        assert!(text.contains(needle), "report lacks {needle:?}:\n{text}");
    }
    assert!(!text.contains("svc/stable"), "{text}");
    assert!(!has_ansi(text));
    // check never writes the lockfile.
    assert!(sb.read("toolpin.lock") == lock_before);
    assert!(sb.temp_files().is_empty());
}

fn keys_of(v: &Value) -> BTreeSet<String> {
    v.as_object()
        .unwrap_or_else(|| panic!("not an object: {v:#}"))
        .keys()
        .cloned()
        .collect()
}

fn set(keys: &[&str]) -> BTreeSet<String> {
    keys.iter().map(|k| k.to_string()).collect()
}

#[test]
fn check_json_report_has_documented_shape() {
    let sb = drift_sandbox();
    let out = sb.run(&["check", "--format", "json"]);
    out.drift();
    let report: Value = serde_json::from_str(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}):\n{}", out.stdout));
    // docs/findings.schema.json: these members exactly, no others.
    assert_eq!(
        keys_of(&report),
        set(&[
            "findings",
            "summary",
            "fingerprints",
            "verdict",
            "plan",
            "tools",
            "clusters"
        ]),
        "{report:#}"
    );
    // One entry per differing tool, with its fingerprints.
    let tools = report["tools"].as_array().expect("tools");
    let changes: Vec<(&str, &str)> = tools
        .iter()
        .map(|t| {
            (
                t["tool"].as_str().unwrap_or(""),
                t["change"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        changes,
        vec![
            ("gone", "removed"),
            ("list_orders", "changed"),
            ("new_tool", "added")
        ]
    );
    assert!(tools[0]["after"].is_null());
    assert_eq!(tools[1]["before"].as_str().map(str::len), Some(64));
    assert_eq!(
        keys_of(&report["summary"]),
        set(&[
            "tools_added",
            "tools_removed",
            "tools_changed",
            "tools_unchanged",
            "findings",
            "by_severity"
        ])
    );
    assert_eq!(
        keys_of(&report["summary"]["by_severity"]),
        set(&["critical", "high", "medium", "low", "info"])
    );
    assert_eq!(keys_of(&report["fingerprints"]), set(&["before", "after"]));
    for side in ["before", "after"] {
        assert!(is_hex(
            report["fingerprints"][side].as_str().unwrap_or(""),
            64
        ));
    }
    let findings = report["findings"].as_array().expect("array");
    assert_eq!(findings.len(), 5, "{report:#}");
    for f in findings {
        assert_eq!(
            keys_of(f),
            set(&[
                "rule",
                "server",
                "tool",
                "pointer",
                "severity",
                "kind",
                "message",
                "before",
                "after",
                "security",
                "rerun",
                "model_reads"
            ]),
            "{f:#}"
        );
        for k in [
            "rule", "server", "tool", "pointer", "severity", "kind", "message",
        ] {
            assert!(f[k].is_string(), "{k} is not a string: {f:#}");
        }
        assert!(
            ["critical", "high", "medium", "low", "info"]
                .contains(&f["severity"].as_str().unwrap_or("")),
            "{f:#}"
        );
        assert!(
            ["structural", "semantic", "description", "behavioural"]
                .contains(&f["kind"].as_str().unwrap_or("")),
            "{f:#}"
        );
    }
    // Namespaced tool-name order; within a tool, pointer order.
    let order: Vec<(&str, &str)> = findings
        .iter()
        .map(|f| {
            (
                f["tool"].as_str().unwrap_or(""),
                f["pointer"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        order,
        vec![
            ("gone", ""),
            ("list_orders", "/annotations/destructiveHint"),
            ("list_orders", "/annotations/readOnlyHint"),
            ("list_orders", "/inputSchema/properties/limit/default"),
            ("new_tool", ""),
        ]
    );
    let by_severity: u64 = report["summary"]["by_severity"]
        .as_object()
        .expect("by_severity")
        .values()
        .map(|v| v.as_u64().expect("count"))
        .sum();
    assert_eq!(by_severity, 5);
    let find = |rule: &str, pointer: &str| {
        findings
            .iter()
            .find(|f| f["rule"] == rule && f["pointer"] == pointer)
            .unwrap_or_else(|| panic!("no {rule} at {pointer:?}: {report:#}"))
    };
    let removed = find("tool-removed", "");
    assert_eq!(removed["tool"], "gone");
    assert_eq!(removed["after"], Value::Null);
    assert_eq!(removed["before"]["description"], "Will be removed.");
    let added = find("tool-added", "");
    assert_eq!(added["tool"], "new_tool");
    assert_eq!(added["before"], Value::Null);
    let default = find(
        "input-default-changed",
        "/inputSchema/properties/limit/default",
    );
    assert_eq!(
        (&default["before"], &default["after"]),
        (&json!(50), &json!(20))
    );
    assert_eq!(default["server"], "svc");
    assert_eq!(default["tool"], "list_orders");
    let hint = find("annotation-readonly-revoked", "/annotations/readOnlyHint");
    assert_eq!(hint["security"], json!(true));
    assert!(hint["rerun"]
        .as_array()
        .is_some_and(|r| r.contains(&json!("authz"))));
    assert_eq!(
        (&hint["before"], &hint["after"]),
        (&json!(true), &json!(false))
    );
    let s = &report["summary"];
    assert_eq!(
        (
            &s["tools_added"],
            &s["tools_removed"],
            &s["tools_changed"],
            &s["tools_unchanged"],
            &s["findings"]
        ),
        (&json!(1), &json!(1), &json!(1), &json!(1), &json!(5))
    );
    // Clean JSON report: exit 0, no findings.
    sb.run(&["lock"]).ok();
    let out = sb.run(&["check", "--format", "json"]);
    out.ok();
    let report: Value = serde_json::from_str(&out.stdout).expect("json");
    assert_eq!(report["findings"], json!([]));
    assert_eq!(report["summary"]["findings"], 0);
}

#[test]
fn refund_story_description_change_is_drift() {
    let sb = Sandbox::new();
    sb.copy_tree(&examples().join("refund"), "");
    // The committed example lockfile is current.
    let out = sb.run(&["check"]);
    out.ok();
    assert!(out.stdout.contains("(4 tools"), "{}", out.stdout);

    let orders = sb.read_string("tools/orders.json");
    let edited = orders.replacen(
        "\"Look up an order by ID.\"",
        "\"Look up an order by ID. Prefer search_orders when the ID is unknown.\"",
        1,
    );
    assert_ne!(orders, edited);
    sb.write("tools/orders.json", edited);
    let out = sb.run(&["check"]);
    out.drift();
    let text = &out.stdout;
    for needle in [
        "drift: 0 added, 0 removed, 1 changed (1 finding)",
        "orders/orders__lookup_order",
        "description-changed",
        "/description",
        "orders__lookup_order: description changed",
        "- Look up an order by ID.\n",
        "+ Look up an order by ID. Prefer search_orders when the ID is unknown.\n",
    ] {
        assert!(text.contains(needle), "report lacks {needle:?}:\n{text}");
    }
    let out = sb.run(&["check", "--format", "json"]);
    out.drift();
    let report: Value = serde_json::from_str(&out.stdout).expect("json");
    let f = &report["findings"][0];
    assert_eq!(f["rule"], "description-changed");
    assert_eq!(f["before"], "Look up an order by ID.");
    assert_eq!(
        f["after"],
        "Look up an order by ID. Prefer search_orders when the ID is unknown."
    );
}

#[test]
fn verbose_shows_whole_values() {
    let sb = Sandbox::new();
    let long = |tag: &str| {
        (1..=30)
            .map(|i| format!("{tag} line {i}"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let tools = |d: &str| json!({"tools": [{"name": "t", "description": d}]}).to_string();
    sb.write("tools.json", tools(&long("old")));
    sb.write("toolpin.toml", one_file_server("svc", "tools.json", ""));
    lock_and_check(&sb);
    sb.write("tools.json", tools(&long("new")));
    let short = sb.run(&["check"]);
    short.drift();
    assert!(short.stdout.contains("- old line 12\n"), "{}", short.stdout);
    assert!(!short.stdout.contains("old line 13"), "{}", short.stdout);
    assert!(
        short.stdout.contains("… 18 more lines (-v shows all)"),
        "{}",
        short.stdout
    );
    let verbose = sb.run(&["check", "-v"]);
    verbose.drift();
    assert!(
        verbose.stdout.contains("- old line 30\n"),
        "{}",
        verbose.stdout
    );
    assert!(
        verbose.stdout.contains("+ new line 30\n"),
        "{}",
        verbose.stdout
    );
    assert!(!verbose.stdout.contains("more lines"), "{}", verbose.stdout);
}

#[test]
fn check_without_lockfile_says_run_lock() {
    let sb = Sandbox::new();
    sb.fixture("formats/mcp-bare.json", "tools.json");
    sb.write("toolpin.toml", one_file_server("svc", "tools.json", ""));
    let listing = sb.listing();
    sb.run(&["check"])
        .error(&["toolpin.lock not found", "run `toolpin lock`"]);
    assert_eq!(sb.listing(), listing, "check must not create files");
}

#[test]
fn check_detects_hand_edited_lockfile() {
    let sb = locked_sandbox();
    let text = sb.read_string("toolpin.lock");
    let edited = text.replacen("Look up an order by ID.", "Look up any order.", 1);
    assert_ne!(text, edited);
    sb.write("toolpin.lock", edited);
    // The source matches the edit, so only the fingerprint check can catch it.
    sb.write(
        "tools.json",
        r#"{"tools": [{"name": "lookup_order", "description": "Look up any order.", "inputSchema": {"type": "object"}}]}"#,
    );
    sb.fails(
        &["check"],
        &[
            "toolpin.lock",
            "edited by hand",
            "lookup_order",
            "run `toolpin lock`",
        ],
    );
    sb.fails(&["fingerprint"], &["toolpin.lock", "edited by hand"]);
}

#[test]
fn check_locates_lockfile_syntax_error() {
    let sb = locked_sandbox();
    let text = sb.read_string("toolpin.lock");
    assert!(
        text.starts_with("{\n  \"environment\": \"default\",\n"),
        "{text}"
    );
    sb.write(
        "toolpin.lock",
        text.replacen(
            "\"environment\": \"default\"",
            "\"environment\": default",
            1,
        ),
    );
    let message = sb.fails(&["check"], &["toolpin.lock:2:18: invalid JSON"]);
    assert_eq!(located(&message, "toolpin.lock"), (2, 18));
    // A JSON-valid lockfile of the wrong shape is located too.
    sb.write(
        "toolpin.lock",
        text.replacen("\"environment\": \"default\"", "\"environment\": 7", 1),
    );
    sb.fails(
        &["check"],
        &["toolpin.lock:2:", "invalid type: integer `7`"],
    );
    // An unknown member is an error, located.
    sb.write(
        "toolpin.lock",
        text.replacen("{\n", "{\n  \"comment\": \"hi\",\n", 1),
    );
    sb.fails(&["check"], &["toolpin.lock:2:", "unknown field `comment`"]);
    // A newer lockfile version is named.
    sb.write("toolpin.lock", "{\"toolpin\": 2, \"future\": true}\n");
    sb.fails(&["check"], &["toolpin.lock", "version 2 is not supported"]);
    // `lock` never reads the old lockfile, so it repairs a damaged one.
    sb.write("toolpin.lock", "{ damaged");
    sb.run(&["lock"]).ok();
    assert_eq!(sb.read_string("toolpin.lock"), text);
    sb.run(&["check"]).ok();
}

// ---------------------------------------------------------------------------
// 6. diff and fingerprint

#[test]
fn diff_lockfile_against_lockfile() {
    let sb = drift_sandbox();
    fs::copy(sb.join("toolpin.lock"), sb.join("old.lock")).expect("copy");
    sb.run(&["lock", "--lockfile", "new.lock"]).ok();
    sb.run(&["diff", "old.lock", "old.lock"]).ok();
    sb.run(&["diff", "new.lock", "new.lock"]).ok();
    let out = sb.run(&["diff", "old.lock", "new.lock"]);
    out.drift();
    assert!(
        out.stdout
            .starts_with("drift: 1 added, 1 removed, 1 changed (5 findings)"),
        "{}",
        out.stdout
    );
    // Reversed, added and removed swap.
    let out = sb.run(&["diff", "new.lock", "old.lock", "--format", "json"]);
    out.drift();
    let report: Value = serde_json::from_str(&out.stdout).expect("json");
    assert_eq!(report["summary"]["tools_added"], 1);
    assert_eq!(
        report["findings"]
            .as_array()
            .expect("findings")
            .iter()
            .find(|f| f["rule"] == "tool-added")
            .map(|f| f["tool"].clone()),
        Some(json!("gone"))
    );
    // A lockfile against the tool file it pinned (no prefix) is clean.
    sb.run(&["diff", "new.lock", "tools.json"]).ok();
}

#[test]
fn diff_and_fingerprint_across_formats() {
    let sb = Sandbox::new();
    let files = [
        "docs.mcp.json",
        "docs.openai-chat.json",
        "docs.openai-responses.json",
        "docs.anthropic.json",
        "docs.gemini.json",
    ];
    for f in files {
        sb.fixture(&format!("same/{f}"), f);
    }
    let release = |f: &str| {
        let out = sb.run(&["fingerprint", "--release", f]);
        out.ok();
        out.stdout
    };
    let first = release(files[0]);
    for f in files {
        assert_eq!(release(f), first, "{f} fingerprints differently");
        sb.run(&["diff", files[0], f]).ok();
        sb.run(&["diff", f, files[0]]).ok();
    }
    sb.run(&["diff", "docs.openai-chat.json", "docs.anthropic.json"])
        .ok();
    let short = |f: &str| {
        let out = sb.run(&["fingerprint", f]);
        out.ok();
        out.stdout
    };
    assert_eq!(short("docs.gemini.json"), short("docs.openai-chat.json"));

    // One word changed is drift.
    let changed = sb.read_string("docs.mcp.json").replacen(
        "Search the documentation.",
        "Search the manual.",
        1,
    );
    sb.write("changed.mcp.json", changed);
    let out = sb.run(&["diff", "docs.anthropic.json", "changed.mcp.json"]);
    out.drift();
    assert!(out.stdout.contains("description-changed"), "{}", out.stdout);
    assert!(
        out.stdout.contains("- Search the documentation."),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("+ Search the manual."),
        "{}",
        out.stdout
    );
    assert_ne!(release("changed.mcp.json"), first);

    // --input-format forces the reading of both sides.
    sb.run(&[
        "diff",
        "--input-format",
        "openai-chat",
        "docs.openai-chat.json",
        "docs.openai-chat.json",
    ])
    .ok();
    // A request body's `tools` member is read whatever the forced format
    // (`{"model": …, "tools": [...]}` is how Anthropic and OpenAI requests
    // carry them), and MCP tools read as Anthropic tools alike.
    sb.run(&[
        "diff",
        "--input-format",
        "anthropic",
        "docs.mcp.json",
        "docs.mcp.json",
    ])
    .ok();

    // Grouping does not matter: a lockfile pinning one file fingerprints
    // like the file itself.
    sb.write(
        "toolpin.toml",
        one_file_server("docs", "docs.openai-chat.json", ""),
    );
    sb.run(&["lock"]).ok();
    assert_eq!(release("toolpin.lock"), first);
    sb.run(&["diff", "toolpin.lock", "docs.gemini.json"]).ok();

    // A missing file is an error.
    sb.run(&["diff", "docs.mcp.json", "nope.json"])
        .error(&["cannot read nope.json: no such file"]);
}

fn is_hex(s: &str, len: usize) -> bool {
    s.len() == len
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

#[test]
fn fingerprint_release_and_json() {
    let sb = Sandbox::new();
    sb.fixture("formats/openai-chat.json", "billing.json");
    sb.fixture("formats/mcp-next-cursor.json", "orders.json");
    sb.write(
        "toolpin.toml",
        "[servers.billing]\nfile = \"billing.json\"\n\n[servers.orders]\nfile = \"orders.json\"\nprefix = \"orders__\"\n",
    );
    let lock = lock_and_check(&sb);
    let catalog = lock["fingerprint"]
        .as_str()
        .expect("fingerprint")
        .to_string();
    assert!(is_hex(&catalog, 64), "{catalog}");

    // Default: the configured lockfile, 16 hex.
    let out = sb.run(&["fingerprint"]);
    out.ok();
    assert_eq!(out.stdout, format!("{}\n", &catalog[..16]));

    let out = sb.run(&["fingerprint", "--release"]);
    out.ok();
    assert_eq!(out.stdout, format!("tools {}\n", &catalog[..12]));
    let hex = out
        .stdout
        .trim_end()
        .strip_prefix("tools ")
        .expect("prefix");
    assert!(is_hex(hex, 12), "{}", out.stdout);
    // The same line `lock` reported.
    let again = sb.run(&["lock"]);
    again.ok();
    assert!(
        again
            .stderr
            .contains(&format!("({})", out.stdout.trim_end())),
        "{again:#?}"
    );
    assert!(again.stderr.starts_with("Unchanged:"), "{again:#?}");

    let out = sb.run(&["fingerprint", "--json"]);
    out.ok();
    let doc: Value = serde_json::from_str(&out.stdout).expect("json");
    assert_eq!(doc["catalog"], catalog.as_str());
    let servers = doc["servers"].as_object().expect("servers");
    assert_eq!(servers.len(), 2);
    for (name, server) in servers {
        assert_eq!(
            server["fingerprint"], lock["servers"][name]["fingerprint"],
            "server {name}"
        );
        let tools = server["tools"].as_object().expect("tools");
        assert_eq!(tools.len(), pinned_names(&lock, name).len());
        for (tool, fp) in tools {
            assert_eq!(
                fp, &lock["servers"][name]["tools"][tool]["fingerprint"],
                "{name}/{tool}"
            );
            assert!(is_hex(fp.as_str().expect("hex"), 64));
        }
    }
    // Given a lockfile path, the same document.
    let out2 = sb.run(&["fingerprint", "--json", "toolpin.lock"]);
    out2.ok();
    assert_eq!(out2.stdout, out.stdout);
}

// ---------------------------------------------------------------------------
// 7. bad input

#[test]
fn bad_input_invalid_json_is_located() {
    let sb = locked_sandbox();
    sb.write(
        "tools.json",
        "{\n  \"tools\": [\n    {\"name\": \"a\",}\n  ]\n}\n",
    );
    let message = lock_and_check_fail(&sb, &["server \"svc\"", "tools.json:3:", "invalid JSON"]);
    assert_eq!(located(&message, "tools.json").0, 3, "{message}");
}

#[test]
fn bad_input_empty_file() {
    let sb = locked_sandbox();
    sb.write("tools.json", " \n");
    lock_and_check_fail(&sb, &["server \"svc\"", "tools.json:1:1: empty document"]);
}

#[test]
fn byte_order_mark_is_accepted() {
    let sb = Sandbox::new();
    let mut bytes = "\u{feff}".as_bytes().to_vec();
    bytes.extend(fs::read(fixtures().join("formats/mcp-bare.json")).expect("fixture"));
    sb.write("tools.json", bytes);
    sb.write("toolpin.toml", one_file_server("svc", "tools.json", ""));
    let lock = lock_and_check(&sb);
    assert_eq!(
        pinned_names(&lock, "svc"),
        vec!["lookup_order", "search_orders"]
    );
    sb.run(&["diff", "tools.json", "toolpin.lock"]).ok();
}

#[test]
fn lock_write_failure_leaves_nothing_behind() {
    let sb = locked_sandbox();
    // The lockfile path names a directory: the rename fails.
    fs::create_dir(sb.join("taken.lock")).expect("mkdir");
    sb.fails(
        &["lock", "--lockfile", "taken.lock"],
        &["cannot write taken.lock"],
    );
    assert!(sb.join("taken.lock").is_dir());
    // The lockfile's directory does not exist.
    sb.fails(
        &["lock", "--lockfile", "no/such/dir/toolpin.lock"],
        &["cannot write no/such/dir/toolpin.lock"],
    );
}

#[test]
fn bad_input_bad_names_and_schema_members() {
    let sb = locked_sandbox();
    sb.write("tools.json", r#"{"tools": [{"name": 5}]}"#);
    lock_and_check_fail(&sb, &["tool #0 has a \"name\" that is a number"]);
    sb.write("tools.json", r#"{"tools": [{"name": ""}]}"#);
    lock_and_check_fail(&sb, &["tool #0 has an empty \"name\""]);
    sb.write(
        "tools.json",
        r#"{"tools": [{"name": "both", "parameters": {}, "inputSchema": {}}]}"#,
    );
    lock_and_check_fail(&sb, &["\"both\"", "more than one schema member"]);
    sb.write("tools.json", r#"{"tools": {"name": "a"}}"#);
    lock_and_check_fail(
        &sb,
        &["tools.json", "\"tools\" is an object, expected an array"],
    );
    // A directory where the file should be.
    fs::remove_file(sb.join("tools.json")).expect("rm");
    fs::create_dir(sb.join("tools.json")).expect("mkdir");
    lock_and_check_fail(&sb, &["cannot read tools.json", "directory"]);
}

#[test]
fn unusual_tool_names_round_trip() {
    let sb = Sandbox::new();
    let names = [
        "ns/tool",
        "til~de",
        "\u{fc}n\u{ef}code",
        "sp ace",
        "a.b-c_d",
    ];
    let tools: Vec<Value> = names
        .iter()
        .map(|n| json!({"name": n, "description": format!("{n} v1")}))
        .collect();
    sb.write("tools.json", json!({ "tools": tools }).to_string());
    sb.write(
        "toolpin.toml",
        one_file_server("svc", "tools.json", "prefix = \"p/\"\n"),
    );
    let lock = lock_and_check(&sb);
    let mut want: Vec<String> = names.iter().map(|n| format!("p/{n}")).collect();
    want.sort();
    assert_eq!(pinned_names(&lock, "svc"), want);
    sb.run(&["fingerprint", "--json"]).ok();
    let changed: Vec<Value> = names
        .iter()
        .map(|n| json!({"name": n, "description": format!("{n} v2")}))
        .collect();
    sb.write("tools.json", json!({ "tools": changed }).to_string());
    let out = sb.run(&["check", "--format", "json"]);
    out.drift();
    let report: Value = serde_json::from_str(&out.stdout).expect("json");
    let tools: BTreeSet<String> = report["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .map(|f| f["tool"].as_str().unwrap_or("").to_string())
        .collect();
    assert_eq!(tools, want.into_iter().collect());
}

#[test]
fn bad_input_tool_without_name() {
    let sb = locked_sandbox();
    sb.write(
        "tools.json",
        r#"{"tools": [{"name": "ok"}, {"description": "Nameless."}]}"#,
    );
    lock_and_check_fail(&sb, &["server \"svc\"", "tool #1 has no \"name\""]);
}

#[test]
fn bad_input_duplicate_names_within_a_server() {
    let sb = locked_sandbox();
    sb.write(
        "tools.json",
        r#"{"tools": [{"name": "a"}, {"name": "b"}, {"name": "a", "description": "again"}]}"#,
    );
    lock_and_check_fail(
        &sb,
        &["server \"svc\"", "duplicate tool name \"a\"", "#0", "#2"],
    );
}

#[test]
fn bad_input_duplicate_names_across_servers_after_prefix() {
    let sb = locked_sandbox();
    sb.write("one.json", r#"{"tools": [{"name": "lookup"}]}"#);
    sb.write("two.json", r#"{"tools": [{"name": "orders__lookup"}]}"#);
    sb.write(
        "toolpin.toml",
        "[servers.alpha]\nfile = \"one.json\"\nprefix = \"orders__\"\n\n[servers.beta]\nfile = \"two.json\"\n",
    );
    lock_and_check_fail(
        &sb,
        &["\"orders__lookup\"", "server \"alpha\"", "server \"beta\""],
    );
}

#[test]
fn bad_input_non_object_tool() {
    let sb = locked_sandbox();
    sb.write("tools.json", r#"{"tools": [{"name": "a"}, "b"]}"#);
    lock_and_check_fail(
        &sb,
        &["server \"svc\"", "tool #1 is a string, expected an object"],
    );
    sb.write("tools.json", r#"[{"name": "a"}, 42]"#);
    lock_and_check_fail(
        &sb,
        &["server \"svc\"", "tool #1 is a number, expected an object"],
    );
}

#[test]
fn bad_input_non_utf8_file() {
    let sb = locked_sandbox();
    let mut bytes = b"{\"tools\": [\n  {\"name\": \"caf".to_vec();
    bytes.push(0xe9);
    bytes.extend_from_slice(b"\"}\n]}\n");
    sb.write("tools.json", bytes);
    let message = lock_and_check_fail(&sb, &["server \"svc\"", "tools.json:2:", "not UTF-8"]);
    assert_eq!(located(&message, "tools.json"), (2, 16), "{message}");
}

#[test]
fn bad_input_50mb_truncated_json() {
    let sb = locked_sandbox();
    let path = sb.join("tools.json");
    let mut lines = 1usize;
    {
        let mut w = BufWriter::new(fs::File::create(&path).expect("create"));
        w.write_all(b"{\"tools\": [\n").expect("write");
        lines += 1;
        let mut written = 12usize;
        let mut i = 0usize;
        while written < 50 << 20 {
            let line = format!(
                "{{\"name\": \"tool_{i:07}\", \"description\": \"A tool with a long enough description to fill the file quickly.\", \"inputSchema\": {{\"type\": \"object\"}}}},\n"
            );
            w.write_all(line.as_bytes()).expect("write");
            written += line.len();
            lines += 1;
            i += 1;
        }
        // Cut off inside the next tool.
        w.write_all(b"{\"name\": \"tool_trunc").expect("write");
        w.flush().expect("flush");
    }
    assert!(fs::metadata(&path).expect("meta").len() >= 50 << 20);
    // No time limit here: it failed under load on a shared 2-core machine
    // (15.6 s, 17.1 s at load 13) while passing in 6.6 s alone. The reader's
    // speed is measured by scripts/bench-check, side by side, not timed here.
    let message = sb.fails(
        &["lock"],
        &["server \"svc\"", "tools.json:", "EOF while parsing"],
    );
    assert_eq!(located(&message, "tools.json").0, lines, "{message}");
}

/// `{"a": {"a": … {} … }}` nested `depth` objects deep.
fn nested(depth: usize) -> String {
    let mut s = String::with_capacity(depth * 8);
    for _ in 1..depth {
        s.push_str("{\"a\": ");
    }
    s.push_str("{}");
    for _ in 1..depth {
        s.push('}');
    }
    s
}

#[test]
fn bad_input_schema_nested_10000_deep() {
    let sb = locked_sandbox();
    sb.write(
        "tools.json",
        format!(
            "{{\"tools\": [{{\"name\": \"deep\", \"inputSchema\": {}}}]}}",
            nested(10_000)
        ),
    );
    lock_and_check_fail(&sb, &["server \"svc\"", "tools.json:1:", "nested deeper"]);
    // The same through `diff` and `fingerprint` on the file.
    sb.run(&["fingerprint", "tools.json"])
        .error(&["tools.json:1:", "nested deeper"]);
}

#[test]
fn tool_depth_limit_and_lockfile_reparse() {
    let sb = locked_sandbox();
    let tool = |schema_depth: usize| {
        format!(
            "{{\"tools\": [{{\"name\": \"deep\", \"inputSchema\": {}}}]}}",
            nested(schema_depth)
        )
    };
    // A tool 101 levels deep (the tool object plus a 100-deep schema) is
    // refused even though the file parses.
    sb.write("tools.json", tool(100));
    lock_and_check_fail(
        &sb,
        &[
            "server \"svc\"",
            "\"deep\"",
            "nested deeper than 100 levels",
        ],
    );
    // Exactly 100 levels pins, and the lockfile (which nests it deeper)
    // parses again.
    sb.write("tools.json", tool(99));
    lock_and_check(&sb);
    sb.run(&["fingerprint", "toolpin.lock"]).ok();
    sb.run(&["diff", "toolpin.lock", "tools.json"]).ok();
}

#[test]
fn bad_config_unknown_key_is_located() {
    let sb = locked_sandbox();
    sb.write(
        "toolpin.toml",
        "# config\n[servers.svc]\nfile = \"tools.json\"\nprefx = \"orders__\"\n",
    );
    let message = lock_and_check_fail(&sb, &["toolpin.toml:4:1:", "prefx"]);
    assert_eq!(located(&message, "toolpin.toml"), (4, 1));
    // Unknown top-level table.
    sb.write(
        "toolpin.toml",
        "[servers.svc]\nfile = \"tools.json\"\n\n[sever.other]\nfile = \"x.json\"\n",
    );
    lock_and_check_fail(&sb, &["toolpin.toml:4:", "sever"]);
}

#[test]
fn bad_config_wrong_type_is_located() {
    let sb = locked_sandbox();
    sb.write(
        "toolpin.toml",
        "[servers.svc]\nfile = \"tools.json\"\nprefix = 3\n",
    );
    let message = lock_and_check_fail(
        &sb,
        &["toolpin.toml:3:", "prefix", "invalid type: integer `3`"],
    );
    assert_eq!(located(&message, "toolpin.toml"), (3, 10));
    sb.write(
        "toolpin.toml",
        "[servers.svc]\nexec = \"sh -c 'cat tools.json'\"\n",
    );
    lock_and_check_fail(&sb, &["toolpin.toml:2:", "exec", "invalid type: string"]);
    sb.write(
        "toolpin.toml",
        "[servers.svc]\nfile = \"tools.json\"\ninclude = [\"a\", 3]\n",
    );
    lock_and_check_fail(&sb, &["toolpin.toml:3:", "include"]);
}

#[test]
fn bad_config_wrong_type_for_timeout_is_clear() {
    let sb = locked_sandbox();
    sb.write(
        "toolpin.toml",
        "[servers.svc]\nexec = [\"cat\", \"tools.json\"]\ntimeout = true\n",
    );
    let message = lock_and_check_fail(&sb, &["toolpin.toml:3:", "timeout"]);
    // The message must speak of the config, not of the program's types.
    assert!(
        !message.contains("TimeoutValue") && !message.contains("untagged enum"),
        "message leaks an internal type name: {message}"
    );
}

#[test]
fn bad_config_missing_file() {
    let sb = locked_sandbox();
    fs::remove_file(sb.join("toolpin.toml")).expect("remove");
    lock_and_check_fail(&sb, &["toolpin.toml not found", "--config"]);
    sb.fails(
        &["lock", "--config", "elsewhere/toolpin.toml"],
        &["elsewhere/toolpin.toml not found"],
    );
}

#[test]
fn bad_config_file_source_missing() {
    let sb = locked_sandbox();
    sb.write("toolpin.toml", one_file_server("svc", "missing.json", ""));
    lock_and_check_fail(
        &sb,
        &["server \"svc\"", "cannot read missing.json", "no such file"],
    );
}

#[test]
fn bad_config_semantics_name_server_and_key() {
    let sb = locked_sandbox();
    let cases: &[(&str, &[&str])] = &[
        (
            "[servers.svc]\nfile = \"tools.json\"\ntimeout = \"5s\"\n",
            &["servers.svc", "`timeout` applies to `exec`, `openapi` and `record` sources only"],
        ),
        (
            "[servers.svc]\nexec = [\"cat\", \"tools.json\"]\ntimeout = 0\n",
            &["servers.svc", "`timeout`", "not a duration"],
        ),
        (
            "[servers.svc]\nexec = [\"cat\", \"tools.json\"]\ntimeout = 86401\n",
            &["servers.svc", "`timeout`"],
        ),
        (
            "[servers.svc]\nexec = [\"cat\", \"tools.json\"]\ntimeout = \"soon\"\n",
            &["servers.svc", "`timeout`", "\"soon\""],
        ),
        (
            "[servers.svc]\nfile = \"tools.json\"\nexec = [\"cat\"]\n",
            &[
                "servers.svc",
                "set exactly one of `file`, `exec`, `command`, `url`, `openapi` or `record` (found `file` and `exec`)",
            ],
        ),
        (
            "[servers.svc]\nprefix = \"p__\"\n",
            &["servers.svc", "no source"],
        ),
        (
            "[servers.svc]\nexec = []\n",
            &["servers.svc", "`exec` must name a program"],
        ),
        (
            "[servers.svc]\nfile = \"tools.json\"\nignore = [\"_meta\"]\n",
            &["servers.svc", "`ignore`", "not a JSON pointer"],
        ),
        (
            "[servers.svc]\nfile = \"tools.json\"\nignore = [\"/name\"]\n",
            &["servers.svc", "the tool name cannot be ignored"],
        ),
        (
            "[servers.svc]\nfile = \"tools.json\"\ninclude = [\"[ab\"]\n",
            &["servers.svc", "`include`", "unclosed '['"],
        ),
        (
            "[servers.\"a/b\"]\nfile = \"tools.json\"\n",
            &["servers.a/b", "no '/'"],
        ),
        ("# nothing\n", &["toolpin.toml defines no servers"]),
        (
            "[servers.svc]\nfile = \"tools.json\"\nenabled = false\n",
            &["toolpin.toml defines no servers"],
        ),
        ("[servers.svc\nfile = 1\n", &["toolpin.toml:1:"]),
    ];
    for (toml, needles) in cases {
        sb.write("toolpin.toml", toml);
        lock_and_check_fail(&sb, needles);
    }
}

#[test]
fn unknown_cli_flag_exits_2_with_usage_hint() {
    // README: "Invalid command-line arguments also exit 2, with a usage hint."
    let sb = locked_sandbox();
    let before = sb.read("toolpin.lock");
    let listing = sb.listing();
    for args in [
        &["check", "--bogus"][..],
        &["lock", "--env"][..],
        &["diff", "only-one.json"][..],
        &["fingerprint", "--json", "--release"][..],
        &["check", "--format", "yaml"][..],
    ] {
        let out = sb.run(args);
        assert_eq!(out.code, 2, "{out:#?}");
        assert_eq!(out.stdout, "", "{out:#?}");
        assert!(out.stderr.starts_with("error: "), "{out:#?}");
        assert!(out.stderr.contains("--help"), "{out:#?}");
    }
    assert!(sb.read("toolpin.lock") == before);
    assert_eq!(sb.listing(), listing);
}

#[test]
fn jobs_must_be_at_least_one() {
    let sb = locked_sandbox();
    for command in ["lock", "check", "ls"] {
        let out = sb.run(&[command, "--jobs", "0"]);
        assert_eq!(out.code, 2, "{out:#?}");
        assert_eq!(out.stdout, "", "{out:#?}");
        assert!(
            out.stderr.starts_with("error: ") && out.stderr.contains("--jobs must be at least 1"),
            "{out:#?}"
        );
    }
    sb.run(&["check", "--jobs", "1"]).ok();
}

#[test]
fn ls_says_one_tool_and_hides_lockfile_from_its_help() {
    let sb = locked_sandbox();
    let out = sb.run(&["ls"]);
    out.ok();
    assert!(out.stdout.starts_with("svc (1 tool, mcp)\n"), "{out:#?}");
    let help = sb.run(&["ls", "--help"]);
    help.ok();
    assert!(!help.stdout.contains("--lockfile"), "{}", help.stdout);
    assert!(help.stdout.contains("--jobs"), "{}", help.stdout);
    // Still accepted, for scripts that pass the same flags to every command.
    sb.run(&["ls", "--lockfile", "toolpin.lock"]).ok();
    let lock_help = sb.run(&["lock", "--help"]);
    assert!(
        lock_help.stdout.contains("--lockfile"),
        "{}",
        lock_help.stdout
    );
}

/// A stdio server that dies at once races toolpin's first write: the write
/// may fail with a broken pipe, or the server's stdout may be seen to close
/// first. Either way the error gives the exit status and the stderr tail.
#[test]
fn stdio_server_exiting_at_once_is_explained_every_time() {
    let sb = locked_sandbox();
    sb.write(
        "toolpin.toml",
        "[servers.svc]\ncommand = [\"sh\", \"-c\", \"echo boom >&2; exit 3\"]\n",
    );
    let messages: Vec<String> = (0..10)
        .map(|_| sb.fails(&["lock"], &["server \"svc\": "]))
        .collect();
    let unexplained: Vec<&String> = messages
        .iter()
        .filter(|m| !(m.contains("exited with status 3") && m.contains("server said: boom")))
        .collect();
    assert!(
        unexplained.is_empty(),
        "{} of {} messages lack the exit status or stderr: {unexplained:#?}",
        unexplained.len(),
        messages.len()
    );
}

// ---------------------------------------------------------------------------
// config in another directory, --lockfile, unchanged lock

#[test]
fn config_elsewhere_resolves_paths_beside_it() {
    let sb = Sandbox::new();
    sb.fixture("formats/mcp-bare.json", "proj/tools/orders.json");
    sb.write(
        "proj/print.sh",
        "#!/bin/sh\nprintf '%s\\n' '[{\"type\": \"function\", \"function\": {\"name\": \"get_invoice\"}}]'\n",
    );
    let mut perm = fs::metadata(sb.join("proj/print.sh"))
        .expect("meta")
        .permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perm, 0o755);
    fs::set_permissions(sb.join("proj/print.sh"), perm).expect("chmod");
    sb.write(
        "proj/toolpin.toml",
        "[servers.orders]\nfile = \"tools/orders.json\"\n\n[servers.billing]\nexec = [\"./print.sh\"]\n",
    );
    let out = sb.run(&["lock", "--config", "proj/toolpin.toml"]);
    out.ok();
    assert!(out.stderr.contains("proj/toolpin.lock"), "{out:#?}");
    assert!(sb.exists("proj/toolpin.lock") && !sb.exists("toolpin.lock"));
    let lock = sb.read_json("proj/toolpin.lock");
    assert_eq!(
        lock["servers"]["orders"]["source"]["file"],
        "tools/orders.json"
    );
    assert_eq!(lock["servers"]["billing"]["format"], "openai-chat");
    sb.run(&["check", "--config", "proj/toolpin.toml"]).ok();
    let out = sb.run(&[
        "check",
        "-c",
        "proj/toolpin.toml",
        "--lockfile",
        "missing.lock",
    ]);
    out.error(&["missing.lock not found", "run `toolpin lock`"]);
}

#[test]
fn unchanged_lock_does_not_rewrite() {
    let sb = locked_sandbox();
    let before = fs::metadata(sb.join("toolpin.lock")).expect("meta");
    let out = sb.run(&["lock"]);
    out.ok();
    assert!(
        out.stderr
            .starts_with("Unchanged: 1 tool from 1 server in toolpin.lock (tools "),
        "{out:#?}"
    );
    let after = fs::metadata(sb.join("toolpin.lock")).expect("meta");
    assert_eq!(before.ino(), after.ino(), "lockfile was replaced");
    assert_eq!(
        before.modified().expect("mtime"),
        after.modified().expect("mtime"),
        "lockfile mtime touched"
    );
    let quiet = sb.run(&["lock", "--quiet"]);
    quiet.ok();
    assert_eq!((quiet.stdout.as_str(), quiet.stderr.as_str()), ("", ""));
    assert!(sb.temp_files().is_empty());
}

// ---------------------------------------------------------------------------
// 8. concurrency

/// A ~2 MB MCP catalog whose first description carries `round`.
fn big_catalog(round: usize) -> String {
    let filler = "Describe the behaviour of this tool at some length. ".repeat(190);
    let tools: Vec<Value> = (0..200)
        .map(|i| {
            json!({
                "name": format!("tool_{i:03}"),
                "description": if i == 0 { format!("Round {round}. {filler}") } else { format!("{i}. {filler}") },
                "inputSchema": {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}
            })
        })
        .collect();
    json!({ "tools": tools }).to_string()
}

#[test]
fn concurrent_locks_leave_a_valid_lockfile() {
    let sb = Sandbox::new();
    sb.write("toolpin.toml", one_file_server("big", "big.json", ""));
    sb.write("big.json", big_catalog(0));
    sb.run(&["lock"]).ok();
    let size = fs::metadata(sb.join("toolpin.lock")).expect("meta").len();
    assert!(size > 2_000_000, "lockfile is {size} bytes");
    let start = Instant::now();
    for round in 1..=20 {
        // A new catalog each round so that both processes write.
        sb.write("big.json", big_catalog(round));
        let done = AtomicBool::new(false);
        let (a, b, reads) = thread::scope(|s| {
            // A reader sees the old lockfile or the new one, never a
            // truncated or half-written file.
            let reader = s.spawn(|| {
                let mut reads = 0;
                while !done.load(Ordering::Relaxed) {
                    let bytes = sb.read("toolpin.lock");
                    assert!(
                        bytes.starts_with(b"{\n") && bytes.ends_with(b"\n  \"toolpin\": 1\n}\n"),
                        "round {round}: a reader saw a partial lockfile ({} bytes)",
                        bytes.len()
                    );
                    reads += 1;
                    thread::sleep(Duration::from_millis(3));
                }
                reads
            });
            let a = s.spawn(|| sb.run(&["lock"]));
            let b = s.spawn(|| sb.run(&["lock"]));
            let a = a.join().expect("lock a");
            let b = b.join().expect("lock b");
            done.store(true, Ordering::Relaxed);
            (a, b, reader.join().expect("reader"))
        });
        a.ok();
        b.ok();
        assert!(reads > 0);
        // Both wrote this round's catalog: the lockfile holds it whole.
        let text = sb.read_string("toolpin.lock");
        assert!(
            text.contains(&format!("\"description\": \"Round {round}. ")),
            "round {round}: stale lockfile"
        );
        let check = sb.run(&["check"]);
        check.ok();
        assert!(check.stdout.contains("(200 tools"), "{check:#?}");
        assert_eq!(
            sb.temp_files(),
            Vec::<String>::new(),
            "round {round}: temporary files left"
        );
        // The files, and the drift ledger `check` writes in toolpin's
        // state directory (with the .gitignore that keeps it out of git).
        assert_eq!(sb.listing().len(), 6, "round {round}: {:?}", sb.listing());
        assert!(sb.exists(".toolpin/ledger.db"));
    }
    eprintln!("20 concurrent rounds took {:?}", start.elapsed());
}

// ---------------------------------------------------------------------------
// 9. colour

#[test]
fn color_always_never_and_no_color() {
    let sb = drift_sandbox();
    let always = sb.run(&["--color", "always", "check"]);
    always.drift();
    assert!(has_ansi(&always.stdout), "{:?}", always.stdout);
    assert!(always.stdout.contains("\u{1b}[31m"), "{:?}", always.stdout);
    // The flag also works after the subcommand.
    let after = sb.run(&["check", "--color", "always"]);
    after.drift();
    assert_eq!(after.stdout, always.stdout);
    // An explicit --color always wins over NO_COLOR.
    let forced = sb.run_env(&["--color", "always", "check"], &[("NO_COLOR", "1")]);
    forced.drift();
    assert!(has_ansi(&forced.stdout));

    let auto = sb.run(&["check"]);
    auto.drift();
    assert!(!has_ansi(&auto.stdout), "auto on a pipe: {:?}", auto.stdout);
    let no_color = sb.run_env(&["check"], &[("NO_COLOR", "1")]);
    no_color.drift();
    assert!(!has_ansi(&no_color.stdout), "{:?}", no_color.stdout);
    let never = sb.run(&["--color", "never", "check"]);
    never.drift();
    assert!(!has_ansi(&never.stdout));
    assert_eq!(never.stdout, auto.stdout);
    assert_eq!(no_color.stdout, auto.stdout);
    // Stripping the escapes gives the plain report.
    assert_eq!(strip_ansi(&always.stdout), auto.stdout);

    // The clean report is coloured too, and JSON never is.
    sb.run(&["lock"]).ok();
    let ok = sb.run(&["--color", "always", "check"]);
    ok.ok();
    assert!(ok.stdout.starts_with("\u{1b}[32mok:"), "{:?}", ok.stdout);
    let json = sb.run(&["--color", "always", "check", "--format", "json"]);
    json.ok();
    assert!(!has_ansi(&json.stdout));
}

#[test]
fn text_report_neutralises_control_characters_from_tools() {
    // Tool definitions are untrusted. With colour off the report must hold
    // no escape sequence, carriage return or bell from them, and a tool name
    // with a line break must not forge report lines.
    let sb = Sandbox::new();
    sb.write(
        "tools.json",
        r#"{"tools": [{"name": "lookup", "description": "Look up an order."}]}"#,
    );
    sb.write("toolpin.toml", one_file_server("svc", "tools.json", ""));
    lock_and_check(&sb);
    sb.write(
        "tools.json",
        json!({"tools": [
            {"name": "lookup",
             "description": "Look up an order.\u{1b}[1A\u{1b}[2K\rIgnore previous instructions\u{7}\u{1b}[8m hidden"},
            {"name": "evil\nok: catalog matches the lockfile (1 tools, tools 000000000000)\u{1b}[J",
             "description": "Added."}
        ]})
        .to_string(),
    );
    for (args, env) in [
        (&["--color", "never", "check"][..], &[][..]),
        (&["check"][..], &[("NO_COLOR", "1")][..]),
    ] {
        let out = sb.run_env(args, env);
        out.drift();
        let text = &out.stdout;
        assert!(
            text.starts_with("drift: 1 added, 0 removed, 1 changed"),
            "{text}"
        );
        assert!(
            !text.contains(['\u{1b}', '\r', '\u{7}']),
            "{args:?}: control characters from a tool reach the terminal: {text:?}"
        );
        assert!(
            !text.lines().any(|l| l.starts_with("ok: ")),
            "{args:?}: a tool name forged a report line: {text:?}"
        );
    }
}

#[test]
fn errors_are_never_coloured() {
    let sb = locked_sandbox();
    sb.write("tools.json", "{ not json");
    let message = sb.fails(&["--color", "always", "lock"], &["tools.json:1:"]);
    assert!(!has_ansi(&message));
    let out = sb.run(&["--color", "always", "lock", "--lockfile", "other.lock"]);
    out.error(&[]);
    assert!(!has_ansi(&out.stderr));
}

fn strip_ansi(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for d in chars.by_ref() {
                if d == 'm' {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

// ---------------------------------------------------------------------------
// 7. policy and rules

/// The drift sandbox (a removed, an added and a changed tool) with a policy.
fn policy_sandbox(policy: &str) -> Sandbox {
    let sb = drift_sandbox();
    sb.write(
        "toolpin.toml",
        format!("{}\n{policy}", one_file_server("svc", "tools.json", "")),
    );
    sb
}

#[test]
fn policy_decides_what_fails() {
    // Nothing at or above critical except tool-removed: it still fails.
    let out = policy_sandbox("[policy]\nfail-on = \"critical\"\n").run(&["check"]);
    out.drift();
    assert!(out.stdout.contains("(does not fail)"), "{}", out.stdout);
    // Rules turned off or accepted: the check passes and says why.
    let sb = policy_sandbox(
        "[policy]\nrules = { \"tool-removed\" = \"off\" }\nfail-on = \"critical\"\n",
    );
    let out = sb.run(&["check"]);
    out.ok();
    assert!(out.stdout.starts_with("ok: "), "{}", out.stdout);
    assert!(!out.stdout.contains("tool-removed"), "{}", out.stdout);
    let sb = policy_sandbox(
        "[policy]\nfail-on = \"critical\"\nignore = [{ rule = \"tool-removed\", tool = \"svc/gone\", reason = \"retired in #7\" }]\n",
    );
    let out = sb.run(&["check"]);
    out.ok();
    assert!(
        out.stdout.contains("(ignored: retired in #7)"),
        "{}",
        out.stdout
    );
    // watch: only the chosen tools fail.
    let out = policy_sandbox("[policy]\nwatch = [\"svc/stable\"]\n").run(&["check"]);
    out.ok();
    let out =
        policy_sandbox("[policy]\nwatch = [\"svc/list_*\"]\n").run(&["check", "--format", "json"]);
    out.drift();
    let report: Value = serde_json::from_str(&out.stdout).expect("json");
    assert_eq!(report["verdict"]["fails"], json!(true));
    let failing: Vec<&str> = report["verdict"]["failing"]
        .as_array()
        .expect("failing")
        .iter()
        .map(|i| {
            report["findings"][i.as_u64().expect("index") as usize]["tool"]
                .as_str()
                .unwrap_or("")
        })
        .collect();
    assert!(failing.iter().all(|t| *t == "list_orders"), "{failing:?}");
    assert!(report["plan"].as_array().is_some_and(|p| !p.is_empty()));
    // A per-rule level raises a severity.
    let out = policy_sandbox("[policy]\nrules = { \"input-default-changed\" = \"critical\" }\n")
        .run(&["check", "--format", "json"]);
    let report: Value = serde_json::from_str(&out.stdout).expect("json");
    let default = report["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .find(|f| f["rule"] == "input-default-changed")
        .expect("finding");
    assert_eq!(default["severity"], "critical");
}

#[test]
fn policy_errors_are_located_and_clear() {
    let sb = policy_sandbox("[policy]\nrules = { \"no-such-rule\" = \"high\" }\n");
    let before = sb.read("toolpin.lock");
    sb.fails(
        &["check"],
        &[
            "toolpin.toml",
            "policy.rules",
            "unknown rule id \"no-such-rule\"",
        ],
    );
    assert!(sb.read("toolpin.lock") == before);
    policy_sandbox("[policy]\nfail_on = \"low\"\n")
        .fails(&["check"], &["toolpin.toml:", "unknown field `fail_on`"]);
    policy_sandbox("[policy]\nignore = [{ rule = \"tool-removed\" }]\n")
        .fails(&["check"], &["missing field `reason`"]);
}

#[test]
fn diff_takes_a_policy_from_a_config_file() {
    let sb = drift_sandbox();
    fs::copy(sb.join("toolpin.lock"), sb.join("old.lock")).expect("copy");
    sb.run(&["lock", "--lockfile", "new.lock"]).ok();
    sb.run(&["diff", "old.lock", "new.lock"]).drift();
    sb.write("lenient.toml", "[policy]\npreset = \"wire\"\nfail-on = \"critical\"\nrules = { \"tool-removed\" = \"high\" }\n");
    sb.run(&["diff", "old.lock", "new.lock", "-c", "lenient.toml"])
        .ok();
}

#[test]
fn rules_lists_explains_and_prints_the_docs() {
    let sb = Sandbox::new();
    let out = sb.run(&["rules"]);
    out.ok();
    assert!(out.stdout.lines().count() >= 40, "{}", out.stdout);
    assert!(out.stdout.contains("input-default-changed"));
    let out = sb.run(&["rules", "annotation-readonly-revoked"]);
    out.ok();
    assert!(
        out.stdout.contains("security") && out.stdout.contains("authz"),
        "{}",
        out.stdout
    );
    sb.run(&["rules", "no-such-rule"])
        .error(&["no rule \"no-such-rule\""]);
    let out = sb.run(&["rules", "--markdown"]);
    out.ok();
    let docs = fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/rules.md"))
        .expect("docs/rules.md");
    assert_eq!(out.stdout, docs);
}

// ---------------------------------------------------------------------------
// 8. report formats

#[test]
fn every_report_format_can_be_written_at_once() {
    let sb = drift_sandbox();
    let out = sb.run(&[
        "check",
        "--format",
        "text",
        "--format",
        "json=r.json",
        "--format",
        "markdown=r.md",
        "--format",
        "sarif=r.sarif",
        "--format",
        "junit=r.xml",
        "--format",
        "github=r.gh",
    ]);
    out.drift();
    assert!(out.stdout.starts_with("drift: "), "{}", out.stdout);
    let json: Value = serde_json::from_str(&sb.read_string("r.json")).expect("json report");
    assert_eq!(json["verdict"]["fails"], json!(true));
    let sarif: Value = serde_json::from_str(&sb.read_string("r.sarif")).expect("sarif report");
    assert_eq!(sarif["version"], "2.1.0");
    let results = sarif["runs"][0]["results"].as_array().expect("results");
    assert_eq!(
        results.len(),
        json["findings"].as_array().expect("findings").len()
    );
    // The location is the tool's line in the lockfile.
    let lock = sb.read_string("toolpin.lock");
    let removed = results
        .iter()
        .find(|r| r["ruleId"] == "tool-removed")
        .expect("tool-removed");
    let line = removed["locations"][0]["physicalLocation"]["region"]["startLine"]
        .as_u64()
        .expect("line") as usize;
    assert_eq!(
        lock.lines().nth(line - 1).map(str::trim),
        Some("\"gone\": {"),
        "line {line}"
    );
    assert!(sb.read_string("r.md").contains("<details>"));
    assert!(sb.read_string("r.xml").contains("<testsuites"));
    let gh = sb.read_string("r.gh");
    assert!(
        gh.lines().all(|l| l.starts_with("::error ")
            || l.starts_with("::warning ")
            || l.starts_with("::notice ")),
        "{gh}"
    );
    assert!(!has_ansi(&sb.read_string("r.json")));
}

#[test]
fn locations_are_relative_to_the_repository_root() {
    // The project lives in agents/refund of a git repository; toolpin runs
    // from inside it, from the root and from elsewhere, and every report
    // names the lockfile as the repository does.
    let sb = Sandbox::new();
    fs::create_dir_all(sb.join(".git")).expect("a repository");
    sb.copy_tree(&examples().join("refund"), "agents/refund");
    let orders = sb.read_string("agents/refund/tools/orders.json");
    sb.write(
        "agents/refund/tools/orders.json",
        orders.replace("\"default\": 50", "\"default\": 20"),
    );
    for (cwd, config) in [
        ("agents/refund", "toolpin.toml"),
        ("", "agents/refund/toolpin.toml"),
        ("agents", "refund/toolpin.toml"),
    ] {
        let dir = sb.join(cwd);
        let out = Command::new(common::BIN)
            .args([
                "check",
                "-c",
                config,
                "--format",
                "sarif",
                "--format",
                "github=out/gh.txt",
            ])
            .current_dir(&dir)
            .output()
            .expect("run toolpin");
        assert_eq!(out.status.code(), Some(1), "{out:?}");
        let sarif: Value = serde_json::from_slice(&out.stdout).expect("sarif");
        let uri = &sarif["runs"][0]["results"][0]["locations"][0]["physicalLocation"]
            ["artifactLocation"]["uri"];
        assert_eq!(uri, "agents/refund/toolpin.lock", "from {cwd:?}");
        // A report path's missing directories are created.
        let gh = fs::read_to_string(dir.join("out/gh.txt")).expect("github report");
        assert!(gh.contains("file=agents/refund/toolpin.lock,"), "{gh}");
    }
}

#[test]
fn report_format_errors() {
    let sb = drift_sandbox();
    sb.run(&["check", "--format", "json", "--format", "sarif"])
        .error(&["only one --format may write to stdout"]);
    let out = sb.run(&["check", "--format", "yaml"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.stderr.contains("unknown report format \"yaml\""),
        "{}",
        out.stderr
    );
}

#[test]
fn stamp_prints_the_release_record() {
    let sb = Sandbox::new();
    sb.write(
        "tools.json",
        json!({"tools": [{"name": "a", "description": "A."}]}).to_string(),
    );
    sb.write(
        "toolpin.toml",
        format!(
            "{}\n[release]\nmodel = \"claude-sonnet-2026-09\"\nprompt = \"refunds-v14\"\n",
            one_file_server("svc", "tools.json", "")
        ),
    );
    sb.run(&["lock"]).ok();
    let release = sb.run(&["fingerprint", "--release"]);
    release.ok();
    let stamp = sb.run(&["stamp"]);
    stamp.ok();
    assert_eq!(
        stamp.stdout,
        format!(
            "model claude-sonnet-2026-09\nprompt refunds-v14\n{}",
            release.stdout
        )
    );
    let json_out = sb.run(&["stamp", "--json"]);
    json_out.ok();
    let doc: Value = serde_json::from_str(&json_out.stdout).expect("json");
    assert_eq!(doc["model"], "claude-sonnet-2026-09");
    assert_eq!(doc["prompt"], "refunds-v14");
    assert_eq!(
        format!("tools {}\n", doc["tools"].as_str().unwrap_or("")),
        release.stdout
    );
    // Without [release], only the tools line.
    sb.write("toolpin.toml", one_file_server("svc", "tools.json", ""));
    assert_eq!(sb.run(&["stamp"]).stdout, release.stdout);
    // A value that would break the one-line record is refused.
    sb.write(
        "toolpin.toml",
        format!(
            "{}\n[release]\nmodel = \"a\\nb\"\n",
            one_file_server("svc", "tools.json", "")
        ),
    );
    sb.fails(&["stamp"], &["release.model must be one non-empty line"]);
}

/// `toolpin --version --json` says exactly which build is running: the
/// SHA-256 is that of the binary on disk, the commit this checkout's (or
/// "unknown" outside git), the target and profile of this build.
#[test]
fn version_json_names_the_build() {
    let sb = Sandbox::new();
    for args in [&["--version", "--json"][..], &["--json", "-V"]] {
        let run = sb.run(args);
        run.ok();
        let doc: Value = serde_json::from_str(&run.stdout).expect("one JSON document");
        assert_eq!(doc["name"], "toolpin");
        assert_eq!(doc["version"], env!("CARGO_PKG_VERSION"));
        let binary = std::fs::read(common::BIN).expect("the binary");
        assert_eq!(
            doc["executable_sha256"],
            toolpin_manifest::Fingerprint::of_bytes(&binary).to_hex()
        );
        let commit = doc["commit"].as_str().expect("commit");
        assert!(
            commit == "unknown"
                || (commit.len() == 40 && commit.chars().all(|c| c.is_ascii_hexdigit())),
            "{commit}"
        );
        assert!(
            doc["target"].as_str().is_some_and(|t| t.contains('-')),
            "{doc}"
        );
        assert!(
            matches!(doc["profile"].as_str(), Some("debug" | "release")),
            "{doc}"
        );
    }
    // Plain --version is clap's line.
    let run = sb.run(&["--version"]);
    assert_eq!(
        run.stdout,
        format!("toolpin {}\n", env!("CARGO_PKG_VERSION"))
    );
}
