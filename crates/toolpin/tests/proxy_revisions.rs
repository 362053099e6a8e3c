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
