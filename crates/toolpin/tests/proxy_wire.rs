//! What `toolpin proxy` does to the bytes of a call, seen from a raw
//! JSON-RPC client on its stdin/stdout and a raw server
//! (`tests/servers/py/verbatim.py`) that logs every line it reads and
//! answers with lines no JSON library would print.
//!
//! A `tools/call` and its answer are relayed as text: only the `id` (and
//! the tool's name, when the server knows it by another) changes. A server
//! that answers with a line that is not JSON fails the call in flight with
//! a reason, and the next call starts it again.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use common::*;
use serde_json::{json, Value};

fn python() -> PathBuf {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let python = repo.join(".venv/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run scripts/setup",
        python.display()
    );
    python
}

fn verbatim() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/servers/py/verbatim.py")
}

/// `toolpin proxy` on a pinned verbatim server, spoken to line by line.
struct Agent {
    child: Child,
    stdin: ChildStdin,
    lines: mpsc::Receiver<String>,
}

impl Agent {
    fn start(sb: &Sandbox, config: &str) -> Agent {
        sb.run(&["lock", "-c", config]).ok();
        let mut child = Command::new(BIN)
            .current_dir(sb.path())
            .args(["proxy", "-c", config, "--no-start-check", "--events"])
            .arg(sb.join("events.jsonl"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start toolpin proxy");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        let mut agent = Agent {
            child,
            stdin,
            lines,
        };
        agent.send(r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#);
        let init: Value = serde_json::from_str(&agent.next()).expect("JSON");
        assert!(init.get("result").is_some(), "{init}");
        agent.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        agent
    }

    fn send(&mut self, line: &str) {
        self.stdin
            .write_all(format!("{line}\n").as_bytes())
            .expect("write to the proxy");
        self.stdin.flush().expect("flush");
    }

    fn next(&self) -> String {
        self.lines
            .recv_timeout(Duration::from_secs(30))
            .expect("an answer from the proxy")
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn setup(sb: &Sandbox) -> String {
    sb.write(
        "toolpin.toml",
        format!(
            "[servers.v]\ncommand = [{:?}, {:?}, {:?}]\n",
            python().display().to_string(),
            verbatim().display().to_string(),
            sb.join("upstream.log").display().to_string(),
        ),
    );
    "toolpin.toml".into()
}

/// The `tools/call` lines the server read.
fn calls_received(sb: &Sandbox) -> Vec<String> {
    sb.read_string("upstream.log")
        .lines()
        .filter(|l| l.contains("tools/call"))
        .map(str::to_string)
        .collect()
}

/// `text` with its top-level `"id":<integer>` put back to `id`.
fn with_id(text: &str, id: &str) -> String {
    let v: Value = serde_json::from_str(text).expect("JSON");
    let upstream_id = v["id"].as_i64().expect("the proxy's ids are integers");
    text.replacen(&format!("\"id\":{upstream_id}"), &format!("\"id\":{id}"), 1)
}

#[test]
fn a_call_and_its_answer_keep_every_byte_but_the_id() {
    let sb = Sandbox::new();
    let config = setup(&sb);
    let mut agent = Agent::start(&sb, &config);

    // Members out of order, an escape in the name, a member MCP may add
    // later, a progress token: all reach the server as written.
    let call = r#"{"params":{"_meta":{"progressToken":"p-1"},"name":"sh\u0061pe","arguments":{"n":1.50,"message":"caf\u00e9"},"x-future":[1,{"b":2}]},"method":"tools/call","jsonrpc":"2.0","id":"agent-1"}"#;
    agent.send(call);
    let answer = agent.next();
    let expected = concat!(
        r#"{"result" : {"content":[{"type":"text","text":"caf\u00e9 \"q\""}],"#,
        r#""structuredContent":{"z":1.50,"a":[3,2,1],"big":12345678901234567890}},"#,
        r#"  "jsonrpc":"2.0", "id":"agent-1", "x-extra":{"kept":true}}"#
    );
    assert_eq!(answer, expected, "the server's answer, with the agent's id");

    let received = calls_received(&sb);
    assert_eq!(received.len(), 1);
    assert_eq!(
        with_id(&received[0], r#""agent-1""#),
        call,
        "the agent's call, with the proxy's id"
    );

    // A numeric id, and `null` arguments (sent upstream as `{}`, as the
    // SDKs expect an object).
    agent.send(r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"shape","arguments":null}}"#);
    let answer: Value = serde_json::from_str(&agent.next()).expect("JSON");
    assert_eq!(answer["id"], 7);
    let received = calls_received(&sb);
    let second: Value = serde_json::from_str(&received[1]).expect("JSON");
    assert_eq!(second["params"]["arguments"], json!({}));
}

#[test]
fn an_answer_that_is_not_json_fails_the_call_and_the_server_is_started_again() {
    let sb = Sandbox::new();
    let config = setup(&sb);
    let mut agent = Agent::start(&sb, &config);
    agent.send(r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"garbage","arguments":{}}}"#);
    let answer: Value = serde_json::from_str(&agent.next()).expect("JSON");
    assert_eq!(answer["id"], 1, "{answer}");
    let message = answer["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("invalid JSON") && message.contains("{oops"),
        "the reason names the bad line: {message}"
    );
    // The next call reaches a new server.
    agent.send(r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"shape","arguments":{}}}"#);
    let answer: Value = serde_json::from_str(&agent.next()).expect("JSON");
    assert_eq!(answer["id"], 2);
    assert_eq!(answer["result"]["structuredContent"]["z"], json!(1.5));
    let starts = sb
        .read_string("upstream.log")
        .lines()
        .filter(|l| l.contains("\"initialize\""))
        .count();
    // One for `toolpin lock`, one per proxy session with the server.
    assert_eq!(starts, 3, "the server was started again");
}

#[test]
fn refused_calls_never_reach_the_server() {
    let sb = Sandbox::new();
    let config = setup(&sb);
    let mut agent = Agent::start(&sb, &config);
    // Not pinned, then arguments the pinned schema refuses.
    agent.send(
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"nope","arguments":{}}}"#,
    );
    let answer: Value = serde_json::from_str(&agent.next()).expect("JSON");
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    agent.send(r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"shape","arguments":{"n":"ten"}}}"#);
    let answer: Value = serde_json::from_str(&agent.next()).expect("JSON");
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    assert!(calls_received(&sb).is_empty());
}
