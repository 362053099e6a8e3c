//! Upstream credentials never reach the agent, a log or a report: servers
//! that echo what they were given (`tests/servers/py/secret_echo.py`, over
//! Streamable HTTP and stdio) behind `toolpin proxy` and `toolpin check`.
//! The secret holds `"`, `\`, `&` and `/`, so that its plain, JSON-escaped
//! and percent-encoded forms all differ; none may appear anywhere.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use common::*;
use serde_json::{json, Value};

/// What the agent is configured with, and what the server echoes.
const SECRET: &str = r#"tok_SECRET"q\w&e/1234"#;
/// What the server accepts (only for `lock`).
const RIGHT: &str = "right-token-5678";

fn repo() -> PathBuf {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    repo.canonicalize().unwrap_or(repo)
}

fn python() -> PathBuf {
    let p = repo().join(".venv/bin/python");
    assert!(p.exists(), "{} is missing: run scripts/setup", p.display());
    p
}

fn echo_server() -> String {
    repo()
        .join("tests/servers/py/secret_echo.py")
        .display()
        .to_string()
}

/// Every form in which the secret must not appear.
fn forms() -> Vec<String> {
    let json_escaped = serde_json::to_string(SECRET).expect("string");
    let json_escaped = json_escaped.trim_matches('"').to_string();
    let twice = serde_json::to_string(&json_escaped).expect("string");
    let twice = twice.trim_matches('"').to_string();
    let percent: String = SECRET
        .bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                char::from(b).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect();
    // The part before the first character that any encoding changes: a
    // prefix is a leak too.
    vec![
        SECRET.to_string(),
        json_escaped,
        twice,
        percent,
        "tok_SECRET\"".to_string(),
        "tok_SECRET\\\"".to_string(),
        "tok_SECRET%22".to_string(),
    ]
}

#[track_caller]
fn assert_clean(what: &str, text: &str) {
    for form in forms() {
        assert!(
            !text.contains(&form),
            "{what} leaks the secret as {form:?}:\n{text}"
        );
    }
}

/// The HTTP echo server, running in the sandbox until dropped.
struct Daemon(Child);

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn http_daemon(sb: &Sandbox, port: u16) -> Daemon {
    http_daemon_with(sb, port, &[("EXPECTED_TOKEN", RIGHT)])
}

/// secret_echo.py over HTTP on `port` with `env`, until dropped.
fn http_daemon_with(sb: &Sandbox, port: u16, env: &[(&str, &str)]) -> Daemon {
    let mut cmd = Command::new(python());
    cmd.args([&echo_server(), "http", &port.to_string()])
        .current_dir(sb.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let daemon = Daemon(cmd.spawn().expect("start secret_echo.py"));
    wait_for_port(port, Duration::from_secs(10), &|| "secret_echo.py".into());
    daemon
}

/// Plays the agent over stdio: sends `messages` to `toolpin proxy`, waits
/// for an answer to each request, closes stdin. Returns (the answers, the
/// proxy's whole stdout, its stderr).
fn agent(sb: &Sandbox, env: &[(&str, &str)], messages: &[Value]) -> (Vec<Value>, String, String) {
    let mut cmd = Command::new(BIN);
    cmd.args(["proxy", "--no-start-check", "--events", "events.jsonl"])
        .current_dir(sb.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().expect("start toolpin proxy");
    let mut stdin = child.stdin.take().expect("stdin");
    let stdout = child.stdout.take().expect("stdout");
    let mut stderr = child.stderr.take().expect("stderr");
    let (tx, rx) = mpsc::channel::<String>();
    let reader = thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { return };
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    let err_reader = thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    let mut answers = Vec::new();
    let mut raw = String::new();
    for m in messages {
        writeln!(stdin, "{m}").expect("write to the proxy");
        stdin.flush().expect("flush");
        let Some(id) = m.get("id") else { continue };
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let Ok(line) = rx.recv_timeout(left) else {
                let _ = child.kill();
                let _ = child.wait();
                let stderr = err_reader.join().unwrap_or_default();
                panic!("no answer to {m} within 20 s; got:\n{raw}\nstderr:\n{stderr}");
            };
            raw.push_str(&line);
            raw.push('\n');
            let v: Value = serde_json::from_str(&line).expect("the proxy writes JSON lines");
            if v.get("id") == Some(id) && v.get("method").is_none() {
                answers.push(v);
                break;
            }
        }
    }
    drop(stdin);
    let deadline = Instant::now() + Duration::from_secs(10);
    while child.try_wait().expect("wait").is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("toolpin proxy did not exit when its stdin closed");
        }
        thread::sleep(Duration::from_millis(20));
    }
    let _ = reader.join();
    while let Ok(line) = rx.try_recv() {
        raw.push_str(&line);
        raw.push('\n');
    }
    let stderr = err_reader.join().unwrap_or_default();
    (answers, raw, stderr)
}

fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "secrets-test", "version": "1"}}})
}

fn initialized() -> Value {
    json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
}

fn call_whoami() -> Value {
    json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "whoami", "arguments": {}}})
}

/// No process of the test (servers, proxies) is left in the sandbox.
fn finish(sb: &Sandbox) {
    assert_no_process_left(sb.path(), Duration::from_secs(5));
}

fn http_config(port: u16) -> String {
    format!(
        "[servers.s]\nurl = \"http://127.0.0.1:{port}/mcp?k=${{MY_TOKEN}}\"\n\
         headers = {{ X-Api-Key = \"${{MY_TOKEN}}\" }}\nbearer_token_env = \"MY_TOKEN\"\n"
    )
}

#[test]
fn http_upstream_echoing_credentials_through_proxy_and_check() {
    let sb = Sandbox::new();
    let port = free_port();
    let daemon = http_daemon(&sb, port);
    sb.write("toolpin.toml", http_config(port));
    sb.run_env(&["lock"], &[("MY_TOKEN", RIGHT)]).ok();
    let lock = sb.read_string("toolpin.lock");
    assert!(
        lock.contains(&format!(
            "\"url\": \"http://127.0.0.1:{port}/mcp?k=${{MY_TOKEN}}\""
        )),
        "{lock}"
    );

    let env = [("MY_TOKEN", SECRET)];
    let (answers, raw, stderr) = agent(&sb, &env, &[initialize()]);
    assert_clean("what the agent received", &raw);
    assert_clean("the proxy's stderr", &stderr);
    let events = sb.read_string("events.jsonl");
    assert_clean("the events log", &events);
    let message = answers[0]["error"]["message"].as_str().unwrap_or_default();
    // The server's words are quoted, with the stand-in in every form; the
    // URL's query value went out as one percent-encoded component.
    // (The capture layer keeps the first 120 characters of a body.)
    assert_eq!(
        message,
        r#"upstream s: initialize: HTTP 401 Unauthorized: unauthorized; path /mcp?k=${MY_TOKEN}; Authorization: Bearer ${MY_TOKEN} json={"got": "Bearer ${MY_TOKEN}"} quoted=Bearer%20${MY_TOKEN}; X-Api…"#
    );

    for format in drift_formats() {
        let run = sb.run_env(&["check", "--format", format], &env);
        let msg = run.error(&["server \"s\": initialize: HTTP 401", "${MY_TOKEN}"]);
        assert_clean(&format!("check --format {format} (stdout)"), &run.stdout);
        assert_clean(&format!("check --format {format} (stderr)"), &msg);
    }
    let run = sb.run_env(&["lock"], &env);
    run.error(&["server \"s\": initialize: HTTP 401"]);
    assert_clean("lock (stderr)", &run.stderr);
    // The proxy's own capture at start refuses to start, quoting the body.
    let run = sb.run_env(&["proxy"], &env);
    run.error(&[
        "server \"s\": initialize: HTTP 401",
        "quoted=Bearer%20${MY_TOKEN}",
    ]);
    assert_clean("proxy at start (stderr)", &run.stderr);
    drop(daemon);
    finish(&sb);
}

#[test]
fn stdio_upstream_echoing_its_token_through_proxy_and_check() {
    let sb = Sandbox::new();
    let server = |mode: &str| {
        format!(
            "[servers.s]\ncommand = [{:?}, {:?}, \"stdio\", \"{mode}\"]\n\
             env = {{ SECRET_TOKEN = \"${{MY_TOKEN}}\" }}\n",
            python().display().to_string(),
            echo_server(),
        )
    };
    sb.write("toolpin.toml", server("error"));
    let env = [("MY_TOKEN", SECRET)];
    sb.run_env(&["lock"], &env).ok();
    assert_clean("the lockfile", &sb.read_string("toolpin.lock"));

    // A JSON-RPC error whose message and data echo the token, a result that
    // shows it, and a log notification that holds it.
    let call_token = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "token", "arguments": {}}});
    let (answers, raw, stderr) = agent(
        &sb,
        &env,
        &[initialize(), initialized(), call_whoami(), call_token],
    );
    assert_clean("what the agent received", &raw);
    assert_clean("the proxy's stderr", &stderr);
    assert_clean("the events log", &sb.read_string("events.jsonl"));
    assert_eq!(
        answers[1]["error"],
        json!({"code": -32000, "message": "denied for token ${MY_TOKEN}",
               "data": {"request": "{\"token\": \"${MY_TOKEN}\"}", "url": "/x?t=${MY_TOKEN}"}})
    );
    let shown = r#"token: ${MY_TOKEN} json={"got": "${MY_TOKEN}"} quoted=${MY_TOKEN}"#;
    assert_eq!(
        answers[2]["result"],
        json!({"content": [{"type": "text", "text": shown}], "structuredContent": {"token": "${MY_TOKEN}"}})
    );
    let logs: Vec<Value> = raw
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|m| m["method"] == "notifications/message")
        .map(|m| m["params"]["data"].clone())
        .collect();
    assert_eq!(logs, vec![json!(shown), json!(shown)]);

    // A server that prints the token on stderr and exits.
    sb.write("toolpin.toml", server("stderr-exit"));
    let (answers, raw, stderr) = agent(&sb, &env, &[initialize()]);
    assert_clean("what the agent received", &raw);
    assert_clean("the proxy's stderr", &stderr);
    assert_clean("the events log", &sb.read_string("events.jsonl"));
    let message = answers[0]["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(r#"secret_echo: fatal: token: ${MY_TOKEN} json={"got": "${MY_TOKEN}"} quoted=${MY_TOKEN}"#),
        "{message}"
    );
    for format in drift_formats() {
        let run = sb.run_env(&["check", "--format", format], &env);
        let msg = run.error(&[
            "server \"s\": initialize: ",
            "json={\"got\": \"${MY_TOKEN}\"}",
        ]);
        assert_clean(&format!("check --format {format} (stdout)"), &run.stdout);
        assert_clean(&format!("check --format {format} (stderr)"), &msg);
    }
    finish(&sb);
}

/// One HTTP/1.1 request to the proxy's front; the whole response as text.
fn post(addr: &str, session: Option<&str>, body: &Value) -> String {
    let mut stream = TcpStream::connect(addr).unwrap_or_else(|e| panic!("connect {addr}: {e}"));
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .expect("timeout");
    let body = body.to_string();
    let mut request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\
         Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         MCP-Protocol-Version: 2025-06-18\r\n"
    );
    if let Some(id) = session {
        request.push_str(&format!("Mcp-Session-Id: {id}\r\n"));
    }
    request.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
    stream.write_all(request.as_bytes()).expect("send");
    let mut response = Vec::new();
    let _ = stream.read_to_end(&mut response);
    String::from_utf8_lossy(&response).into_owned()
}

/// The JSON-RPC messages in a response (a JSON body or `data:` lines).
fn messages(response: &str) -> Vec<Value> {
    let body = response.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    body.lines()
        .filter_map(|l| {
            let l = l.strip_prefix("data:").unwrap_or(l).trim();
            serde_json::from_str::<Value>(l).ok()
        })
        .filter(Value::is_object)
        .collect()
}

#[test]
fn stdio_upstream_echoing_its_token_through_the_http_front() {
    let sb = Sandbox::new();
    sb.write(
        "toolpin.toml",
        format!(
            "[servers.s]\ncommand = [{:?}, {:?}, \"stdio\", \"error\"]\n\
             env = {{ SECRET_TOKEN = \"${{MY_TOKEN}}\" }}\n",
            python().display().to_string(),
            echo_server(),
        ),
    );
    sb.run_env(&["lock"], &[("MY_TOKEN", SECRET)]).ok();
    let mut proxy = Daemon(
        Command::new(BIN)
            .args(["proxy", "--listen", "127.0.0.1:0", "--no-start-check"])
            .args(["--events", "events.jsonl"])
            .env("MY_TOKEN", SECRET)
            .current_dir(sb.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start toolpin proxy --listen"),
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    let endpoint = loop {
        let events = std::fs::read_to_string(sb.join("events.jsonl")).unwrap_or_default();
        let listening = events
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find(|e| e["event"] == "listening");
        if let Some(e) = listening {
            break e["endpoint"].as_str().expect("endpoint").to_string();
        }
        assert!(Instant::now() < deadline, "the proxy did not listen");
        thread::sleep(Duration::from_millis(50));
    };
    let addr = endpoint
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_string();

    let init = post(&addr, None, &initialize());
    let session = init
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("mcp-session-id")
                .then(|| v.trim().to_string())
        })
        .unwrap_or_else(|| panic!("no session id: {init}"));
    let mut all = init.clone();
    all.push_str(&post(&addr, Some(&session), &initialized()));
    let refused = post(&addr, Some(&session), &call_whoami());
    let shown = post(
        &addr,
        Some(&session),
        &json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "token", "arguments": {}}}),
    );
    all.push_str(&refused);
    all.push_str(&shown);
    assert_clean("what the agent received over HTTP", &all);
    let answer = |response: &str, id: i64| {
        messages(response)
            .into_iter()
            .find(|m| m["id"] == json!(id))
            .unwrap_or_else(|| panic!("no answer {id} in {response}"))
    };
    assert_eq!(
        answer(&refused, 2)["error"]["message"],
        json!("denied for token ${MY_TOKEN}")
    );
    assert_eq!(
        answer(&shown, 3)["result"]["structuredContent"],
        json!({"token": "${MY_TOKEN}"})
    );
    let _ = Command::new("kill")
        .args(["-TERM", &proxy.0.id().to_string()])
        .status();
    let deadline = Instant::now() + Duration::from_secs(10);
    while proxy.0.try_wait().expect("wait").is_none() {
        assert!(
            Instant::now() < deadline,
            "the proxy did not stop on SIGTERM"
        );
        thread::sleep(Duration::from_millis(20));
    }
    drop(proxy);
    assert_clean("the events log", &sb.read_string("events.jsonl"));
    finish(&sb);
}

#[path = "../../toolpin-notify/tests/common/mod.rs"]
mod receiver;

/// A query-string secret for the HTTP server's URL (`?key=`).
const QUERY_KEY: &str = "qk_SECRET/5&6=7";

/// Every form of both secrets of the artefacts test.
fn all_forms() -> Vec<String> {
    let mut out = forms();
    for (value, lower) in [(QUERY_KEY, false), (QUERY_KEY, true)] {
        out.push(value.to_string());
        out.push(toolpin_manifest::redact::percent_encoded(value, lower));
    }
    out.push("qk_SECRET".to_string());
    out
}

/// Every file below `dir` (the ledger, its WAL, the store, the snapshot,
/// every report, the approvals log, the events log), read as bytes: a
/// secret in none of them, in any form.
#[track_caller]
fn assert_tree_clean(dir: &Path) -> usize {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).expect("list") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                walk(&path, out);
            } else {
                out.push(path);
            }
        }
    }
    let mut files = Vec::new();
    walk(dir, &mut files);
    for path in &files {
        let bytes = std::fs::read(path).expect("read");
        let text = String::from_utf8_lossy(&bytes);
        for form in all_forms() {
            assert!(
                !text.contains(&form),
                "{} holds the secret as {form:?}",
                path.display()
            );
        }
    }
    files.len()
}

#[track_caller]
fn assert_run_clean(what: &str, run: &Run) {
    for form in all_forms() {
        for (stream, text) in [("stdout", &run.stdout), ("stderr", &run.stderr)] {
            assert!(
                !text.contains(&form),
                "{what} ({stream}) holds the secret as {form:?}:\n{text}"
            );
        }
    }
}

/// Two careless servers that echo their credentials in what they serve
/// (secret_echo.py `definitions`: the instructions, a tool description, a
/// tool's results), one over stdio with its token in `env`, one over HTTP
/// with a bearer token and a `?key=` query secret. Every command that
/// writes something runs against them, and every artefact is searched for
/// every form of every secret: the lockfile (which says where a secret was
/// redacted), the reports of check in every format, the ledger and its
/// WAL, the outbox payloads the Slack and webhook stand-ins receive, the
/// approvals log, the behaviour snapshot and contract reports, the proxy's
/// events, the usage store and its report, and every command's output.
#[test]
fn no_artefact_holds_a_secret_a_server_echoes() {
    let sb = Sandbox::new();
    let port = free_port();
    let http = http_daemon_with(
        &sb,
        port,
        &[("EXPECTED_TOKEN", SECRET), ("SECRET_ECHO_DEFINITIONS", "1")],
    );
    let slack = receiver::Receiver::start(vec![receiver::Reply::new(200, "ok")]);
    let hook = receiver::Receiver::start(vec![receiver::Reply::new(200, "")]);
    sb.write(
        "toolpin.toml",
        format!(
            "[servers.local]\ncommand = [{:?}, {:?}, \"stdio\", \"definitions\"]\n\
             env = {{ SECRET_TOKEN = \"${{MY_TOKEN}}\", SECRET_ECHO_VARIANT = \"${{ECHO_VARIANT:-a}}\" }}\n\n\
             [servers.remote]\nurl = \"http://127.0.0.1:{port}/mcp?key=${{MY_KEY}}\"\n\
             bearer_token_env = \"MY_TOKEN\"\nprefix = \"remote_\"\n\n\
             [notify.chat]\nkind = \"slack\"\nurl = \"{}\"\n\n\
             [notify.audit]\nkind = \"webhook\"\nurl = \"{}\"\nsecret = \"${{HOOK_SECRET}}\"\n",
            python().display().to_string(),
            echo_server(),
            slack.url("/services/T0/B0/XYZ"),
            hook.url("/toolpin"),
        ),
    );
    let base = [
        ("MY_TOKEN", SECRET),
        ("MY_KEY", QUERY_KEY),
        ("HOOK_SECRET", "hmac-secret-1"),
    ];
    let drifted = [
        ("MY_TOKEN", SECRET),
        ("MY_KEY", QUERY_KEY),
        ("HOOK_SECRET", "hmac-secret-1"),
        ("ECHO_VARIANT", "b"),
    ];
    let run = |args: &[&str], env: &[(&str, &str)]| {
        let r = sb.run_env(args, env);
        assert_run_clean(&format!("toolpin {args:?}"), &r);
        r
    };

    run(&["lock"], &base).ok();
    let lock = sb.read_json("toolpin.lock");
    let local = &lock["servers"]["local"];
    assert_eq!(local["redacted"], json!(["/instructions"]), "{lock:#}");
    assert_eq!(
        local["tools"]["whoami"]["redacted"],
        json!(["/description"])
    );
    let remote = &lock["servers"]["remote"];
    assert_eq!(
        remote["tools"]["remote_whoami"]["redacted"],
        json!(["/description"])
    );
    let described = local["tools"]["whoami"]["tool"]["description"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        described.contains("token: ${MY_TOKEN} json="),
        "{described}"
    );
    run(&["check"], &base).ok();

    // Upstream drifts: every report format, then the watch that pages.
    let mut args = vec!["check"];
    let targets: Vec<String> = drift_formats()
        .map(|f| format!("{f}=reports/check.{f}"))
        .collect();
    for t in &targets {
        args.extend(["--format", t.as_str()]);
    }
    assert_eq!(run(&args, &drifted).code, 1);
    assert_eq!(run(&["watch", "--once"], &drifted).code, 1);
    for (name, receiver) in [("slack", &slack), ("webhook", &hook)] {
        let requests = receiver.requests();
        assert!(!requests.is_empty(), "{name} was not notified");
        for request in requests {
            let text = format!(
                "{} {}",
                request.path,
                String::from_utf8_lossy(&request.body)
            );
            for form in all_forms() {
                assert!(
                    !text.contains(&form),
                    "the {name} payload holds {form:?}:\n{text}"
                );
            }
        }
    }
    for format in ["text", "json", "csv", "markdown"] {
        run(&["history", "--by", "tool", "--format", format], &drifted).ok();
    }
    run(
        &[
            "accept",
            "--tool",
            "local/whoami",
            "--reason",
            "debug line reviewed",
        ],
        &drifted,
    )
    .ok();
    run(&["check"], &drifted).ok();

    // Contracts: the golden calls' results echo both secrets.
    run(&["contract", "init"], &drifted).ok();
    run(&["contract", "record"], &drifted).ok();
    let snapshot = sb.read_string("toolpin.behaviour.json");
    assert!(
        snapshot.contains("${MY_TOKEN}"),
        "the stand-in is kept: {snapshot}"
    );
    for format in drift_formats() {
        let out = format!("{format}=reports/contract.{format}");
        assert_eq!(
            run(&["contract", "run", "--format", &out], &drifted).code,
            0
        );
    }

    // The proxy's events and spans, received by `usage serve` into the
    // usage store (the ledger), then the usage report.
    let receiver = free_port();
    let mut serve = Command::new(BIN);
    serve
        .args([
            "usage",
            "serve",
            "--listen",
            &format!("127.0.0.1:{receiver}"),
        ])
        .args(["--flush-every", "1s"])
        .current_dir(sb.path())
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(sb.join("serve.log")).expect("log"))
        .stderr(std::fs::File::create(sb.join("serve.err")).expect("log"));
    for (k, v) in drifted {
        serve.env(k, v);
    }
    let mut serve = serve.spawn().expect("start usage serve");
    wait_for_port(receiver, Duration::from_secs(20), &|| {
        sb.read_string("serve.err")
    });
    let endpoint = format!("http://127.0.0.1:{receiver}");
    let mut traced: Vec<(&str, &str)> = drifted.to_vec();
    traced.push(("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint));
    let (answers, raw, stderr) = agent(&sb, &traced, &[initialize(), initialized(), call_whoami()]);
    assert!(answers[1].get("result").is_some(), "{raw}");
    assert_clean("what the agent received", &raw);
    assert_clean("the proxy's stderr", &stderr);
    // SAFETY: plain kill(2) on our own child's pid; it stores what it holds.
    unsafe {
        libc::kill(serve.id() as i32, libc::SIGTERM);
    }
    let stopped = serve.wait().expect("usage serve exits");
    assert!(
        stopped.success() || stopped.code() == Some(143),
        "{stopped}"
    );
    let served = sb.read_string("serve.err");
    assert!(served.contains("usage serve: stored 1 "), "{served}");
    let report = run(&["usage", "report", "--format", "json"], &drifted);
    assert!(report.code == 0 || report.code == 1, "{report:#?}");

    drop(http);
    let searched = assert_tree_clean(sb.path());
    assert!(searched >= 20, "only {searched} files were searched");
    finish(&sb);
}

/// Every format the drift report is written in (a new one is checked for
/// secrets without a change here).
fn drift_formats() -> impl Iterator<Item = &'static str> {
    toolpin_report::FORMATS.iter().map(|f| f.format.name)
}
