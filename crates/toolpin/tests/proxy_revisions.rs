//! toolpin's own MCP client through `toolpin proxy`, for every protocol
//! revision it speaks, over stdio and Streamable HTTP: whatever revision
//! the agent speaks, it is handed exactly the pinned catalog.
//!
//! The upstream is `mcp-server-time` (it speaks the stateless 2026-07-28
//! revision and the handshake), so the proxy also translates between the
//! agent's revision and the upstream's.

mod common;

use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use serde_json::Value;

const REVISIONS: [&str; 5] = [
    "2024-11-05",
    "2025-03-26",
    "2025-06-18",
    "2025-11-25",
    "2026-07-28",
];

fn time_server() -> String {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let bin = repo.join(".venv/bin/mcp-server-time");
    assert!(
        bin.exists(),
        "{} is missing: run scripts/setup",
        bin.display()
    );
    bin.canonicalize()
        .unwrap_or(bin)
        .to_string_lossy()
        .into_owned()
}

/// The pinned upstream: `upstream/toolpin.lock`.
fn pinned_upstream(sb: &Sandbox) -> Value {
    sb.write(
        "upstream/toolpin.toml",
        format!(
            "[servers.time]\ncommand = [\"{}\", \"--local-timezone\", \"UTC\"]\n",
            time_server()
        ),
    );
    sb.run(&["lock", "-c", "upstream/toolpin.toml"]).ok();
    sb.read_json("upstream/toolpin.lock")
}

fn tools_of(lock: &Value, server: &str) -> Value {
    let tools = &lock["servers"][server]["tools"];
    let mut out = serde_json::Map::new();
    for (name, t) in tools.as_object().expect("tools") {
        out.insert(name.clone(), t["tool"].clone());
    }
    Value::Object(out)
}

#[test]
fn every_revision_through_the_stdio_front() {
    let sb = Sandbox::new();
    let upstream = pinned_upstream(&sb);
    for revision in REVISIONS {
        let dir = format!("agent-{revision}");
        sb.write(
            &format!("{dir}/toolpin.toml"),
            format!(
                "[servers.proxied]\ncommand = [\"{}\", \"proxy\", \"-c\", \"{}\", \"--events\", \"{}\"]\nprotocol_version = \"{revision}\"\n",
                BIN,
                sb.join("upstream/toolpin.toml").display(),
                sb.join(&format!("{dir}/events.jsonl")).display(),
            ),
        );
        let out = sb.run(&["lock", "-c", &format!("{dir}/toolpin.toml")]);
        out.ok();
        let lock = sb.read_json(&format!("{dir}/toolpin.lock"));
        assert_eq!(
            lock["servers"]["proxied"]["session"]["protocol_version"], revision,
            "the agent spoke {revision}"
        );
        assert_eq!(
            tools_of(&lock, "proxied"),
            tools_of(&upstream, "time"),
            "{revision}: the agent is handed exactly the pinned tools"
        );
        assert_eq!(
            lock["servers"]["proxied"]["fingerprint"],
            upstream["servers"]["time"]["fingerprint"]
        );
    }
}

struct Daemon(Child);

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn every_revision_through_the_http_front() {
    let sb = Sandbox::new();
    let upstream = pinned_upstream(&sb);
    let port = {
        let l = TcpListener::bind("127.0.0.1:0").expect("bind");
        l.local_addr().expect("addr").port()
    };
    let _proxy = Daemon(
        Command::new(BIN)
            .args([
                "proxy",
                "-c",
                &sb.join("upstream/toolpin.toml").display().to_string(),
                "--listen",
                &format!("127.0.0.1:{port}"),
                "--events",
                &sb.join("events.jsonl").display().to_string(),
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the proxy"),
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "the proxy never listened");
        std::thread::sleep(Duration::from_millis(50));
    }
    for revision in REVISIONS {
        let dir = format!("agent-{revision}");
        sb.write(
            &format!("{dir}/toolpin.toml"),
            format!(
                "[servers.proxied]\nurl = \"http://127.0.0.1:{port}/mcp\"\nprotocol_version = \"{revision}\"\n"
            ),
        );
        sb.run(&["lock", "-c", &format!("{dir}/toolpin.toml")]).ok();
        let lock = sb.read_json(&format!("{dir}/toolpin.lock"));
        assert_eq!(
            lock["servers"]["proxied"]["session"]["protocol_version"],
            revision
        );
        assert_eq!(
            tools_of(&lock, "proxied"),
            tools_of(&upstream, "time"),
            "{revision} over HTTP"
        );
    }
    // A foreign Host header is refused (DNS-rebinding protection).
    let out = Command::new("curl")
        .args([
            "-s",
            "-o",
            "/dev/null",
            "-w",
            "%{http_code}",
            "-H",
            "Host: evil.example",
            "-X",
            "POST",
            &format!("http://127.0.0.1:{port}/mcp"),
        ])
        .output();
    if let Ok(out) = out {
        assert_eq!(String::from_utf8_lossy(&out.stdout), "403");
    }
}

/// POSTs one JSON-RPC message with curl; (status, headers and body).
fn post(port: u16, session: Option<&str>, body: &str) -> (String, String) {
    let mut args = vec![
        "-s".to_string(),
        "-i".to_string(),
        "-X".into(),
        "POST".into(),
        "-H".into(),
        "content-type: application/json".into(),
        "-H".into(),
        "accept: application/json, text/event-stream".into(),
    ];
    if let Some(s) = session {
        args.push("-H".into());
        args.push(format!("mcp-session-id: {s}"));
    }
    args.push("--data".into());
    args.push(body.into());
    args.push(format!("http://127.0.0.1:{port}/mcp"));
    let out = Command::new("curl").args(&args).output().expect("curl");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let status = text.split_whitespace().nth(1).unwrap_or("").to_string();
    (status, text)
}

#[test]
fn idle_http_sessions_expire_with_their_upstreams() {
    let sb = Sandbox::new();
    pinned_upstream(&sb);
    let toml = sb.read_string("upstream/toolpin.toml");
    sb.write(
        "upstream/toolpin.toml",
        format!("{toml}\n[proxy]\nsession_idle = \"1s\"\n"),
    );
    let port = {
        let l = TcpListener::bind("127.0.0.1:0").expect("bind");
        l.local_addr().expect("addr").port()
    };
    let events = sb.join("events.jsonl");
    let proxy = Daemon(
        Command::new(BIN)
            .args([
                "proxy",
                "-c",
                &sb.join("upstream/toolpin.toml").display().to_string(),
                "--listen",
                &format!("127.0.0.1:{port}"),
                "--events",
                &events.display().to_string(),
                "--no-start-check",
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the proxy"),
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "the proxy never listened");
        std::thread::sleep(Duration::from_millis(50));
    }
    let (status, text) = post(
        port,
        None,
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"curl","version":"1"}}}"#,
    );
    assert_eq!(status, "200", "{text}");
    let session = text
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("mcp-session-id")
                .then(|| v.trim().to_string())
        })
        .expect("a session id");
    let (status, _) = post(
        port,
        Some(&session),
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
    );
    assert_eq!(status, "200");
    assert_eq!(
        children_of(proxy.0.id()).len(),
        1,
        "one upstream for the session"
    );
    // Quiet for longer than session_idle: the session and its upstream go.
    std::thread::sleep(Duration::from_millis(2500));
    let (status, _) = post(
        port,
        Some(&session),
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/list"}"#,
    );
    assert_eq!(status, "404", "an expired session is unknown");
    let log = std::fs::read_to_string(&events).unwrap_or_default();
    assert!(log.contains("\"session-expired\""), "{log}");
    let deadline = Instant::now() + Duration::from_secs(5);
    while !children_of(proxy.0.id()).is_empty() {
        assert!(
            Instant::now() < deadline,
            "the expired session's upstream still runs"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Live (not zombie) child processes of `pid`, from /proc.
fn children_of(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return out;
    };
    for entry in dir.flatten() {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // pid (comm) state ppid ...: comm may hold spaces; split after ')'.
        let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        if fields.first() != Some(&"Z") && fields.get(1) == Some(&pid.to_string().as_str()) {
            if let Ok(child) = entry.file_name().to_string_lossy().parse() {
                out.push(child);
            }
        }
    }
    out
}
