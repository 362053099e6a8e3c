//! What a client can make `toolpin proxy --listen` hold, and its limits
//! (issue 12, point 5): the session cap, the header-read and idle-connection
//! timeouts (also under a lowered descriptor limit, where silent connections
//! used to lock every client out), and the bounded metric labels.
//!
//! The upstream is `tests/servers/py/scripted.py` (a Python SDK server);
//! the clients are raw HTTP/1.1 on loopback, so that each test controls
//! exactly which bytes are sent and when. Every process a test starts
//! names its scratch directory on its command line, and is gone when the
//! test ends.

mod common;

use std::collections::BTreeMap;
use std::fs;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use common::*;
use serde_json::{json, Value};

/// Longest wait for one answer or one event.
const STEP: Duration = Duration::from_secs(30);

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw-http","version":"1.0.0"}}}"#;

/// A file of the repository (the repository's path made canonical, not
/// the file's: `.venv/bin/python` must stay the venv's).
fn repo_file(rel: &str) -> PathBuf {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let path = repo.canonicalize().unwrap_or(repo).join(rel);
    assert!(
        path.exists(),
        "{} is missing: run scripts/setup to install the test servers and SDKs",
        path.display()
    );
    path
}

/// A TOML string.
fn q(text: impl AsRef<str>) -> String {
    json!(text.as_ref()).to_string()
}

fn tools() -> Value {
    let n = json!({"type": "object", "properties": {"n": {"type": "integer"}}});
    json!({
        "tools": [
            {"name": "get", "description": "Get one item by its id.",
             "inputSchema": {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}},
            {"name": "wait", "description": "Answers after 5 s.", "inputSchema": n},
        ],
        "behaviors": {"wait": "sleep:5"}
    })
}

/// A sandbox with scripted.py pinned, and the proxies started in it.
struct Scenario {
    sb: Sandbox,
    root: PathBuf,
    daemons: Vec<Child>,
}

impl Scenario {
    /// Pins scripted.py; `proxy_toml` is added to toolpin.toml.
    fn new(proxy_toml: &str) -> Self {
        let sb = Sandbox::new();
        let root = sb.path().canonicalize().expect("canonical sandbox");
        sb.write(
            "tools.json",
            serde_json::to_vec_pretty(&tools()).expect("json"),
        );
        let command = format!(
            "[{}, {}, {}]",
            q(repo_file(".venv/bin/python").display().to_string()),
            q(repo_file("tests/servers/py/scripted.py")
                .display()
                .to_string()),
            q(root.join("tools.json").display().to_string()),
        );
        sb.write(
            "toolpin.toml",
            format!("[servers.shop]\ncommand = {command}\n\n{proxy_toml}"),
        );
        sb.run(&["lock"]).ok();
        Self {
            sb,
            root,
            daemons: Vec::new(),
        }
    }

    /// Starts `[prefix...] toolpin proxy --listen 127.0.0.1:0 EXTRA` and
    /// returns the address it announced.
    fn listen(&mut self, prefix: &[&str], extra: &[&str]) -> String {
        let events = self.root.join("events.jsonl").display().to_string();
        let mut argv: Vec<String> = prefix.iter().map(|s| s.to_string()).collect();
        argv.extend(
            [
                BIN,
                "proxy",
                "--events",
                &events,
                "--no-start-check",
                "--listen",
                "127.0.0.1:0",
            ]
            .map(String::from),
        );
        argv.extend(extra.iter().map(|s| s.to_string()));
        let log = self.root.join("proxy-http.log");
        let child = Command::new(&argv[0])
            .args(&argv[1..])
            .current_dir(&self.root)
            .stdin(Stdio::null())
            .stdout(fs::File::create(&log).expect("log"))
            .stderr(fs::File::create(&log).expect("log"))
            .spawn()
            .unwrap_or_else(|e| panic!("start {argv:?}: {e}"));
        self.daemons.push(child);
        let event = self.wait_event(|e| e["event"] == "listening");
        event["address"]
            .as_str()
            .unwrap_or_else(|| panic!("listening event without address: {event}"))
            .to_string()
    }

    fn events(&self) -> Vec<Value> {
        let mut text = fs::read_to_string(self.root.join("events.jsonl")).unwrap_or_default();
        text.truncate(text.rfind('\n').map_or(0, |end| end + 1));
        text.lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("event {l:?}: {e}")))
            .collect()
    }

    fn events_named(&self, name: &str) -> Vec<Value> {
        self.events()
            .into_iter()
            .filter(|e| e["event"] == name)
            .collect()
    }

    #[track_caller]
    fn wait_event(&mut self, pred: impl Fn(&Value) -> bool) -> Value {
        let start = Instant::now();
        loop {
            if let Some(e) = self.events().into_iter().find(&pred) {
                return e;
            }
            self.assert_running();
            assert!(
                start.elapsed() < STEP,
                "no such event within {STEP:?}; events: {:#?}",
                self.events()
            );
            thread::sleep(Duration::from_millis(20));
        }
    }

    #[track_caller]
    fn assert_running(&mut self) {
        for d in &mut self.daemons {
            if let Ok(Some(status)) = d.try_wait() {
                panic!(
                    "toolpin proxy exited ({status}): {}",
                    fs::read_to_string(self.root.join("proxy-http.log")).unwrap_or_default()
                );
            }
        }
    }

    /// Running scripted.py upstreams of this scenario.
    fn upstreams(&self) -> usize {
        processes_under(&self.root)
            .iter()
            .filter(|(_, cmd)| cmd.contains("scripted.py"))
            .count()
    }

    /// Kills the proxies, then asserts that nothing started here is left.
    fn finish(mut self) {
        for mut d in self.daemons.drain(..) {
            let _ = d.kill();
            let _ = d.wait();
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let left = processes_under(&self.root);
            if left.is_empty() {
                return;
            }
            if Instant::now() > deadline {
                kill_all(&left);
                panic!("processes left behind: {left:#?}");
            }
            thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Scenario {
    fn drop(&mut self) {
        for mut d in self.daemons.drain(..) {
            let _ = d.kill();
            let _ = d.wait();
        }
        kill_all(&processes_under(&self.root));
        let _ = &self.sb;
    }
}

/// One answer: status, headers (names in lower case), body.
#[derive(Debug)]
struct Answer {
    status: u16,
    headers: BTreeMap<String, String>,
    body: String,
}

impl Answer {
    fn json(&self) -> Value {
        serde_json::from_str(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {:?}", self.body))
    }
}

/// A keep-alive HTTP/1.1 connection (answers with a Content-Length only:
/// the proxy answers `Accept: application/json` requests that way).
struct Conn {
    addr: String,
    reader: BufReader<TcpStream>,
}

impl Conn {
    fn open(addr: &str, read_timeout: Duration) -> Self {
        let stream = TcpStream::connect(addr).unwrap_or_else(|e| panic!("connect {addr}: {e}"));
        stream
            .set_read_timeout(Some(read_timeout))
            .expect("timeout");
        Self {
            addr: addr.to_string(),
            reader: BufReader::new(stream),
        }
    }

    fn send(&mut self, method: &str, path: &str, session: Option<&str>, body: &str) -> Answer {
        let mut request = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nAccept: application/json\r\nContent-Type: application/json\r\n",
            self.addr
        );
        if let Some(id) = session {
            request.push_str(&format!("Mcp-Session-Id: {id}\r\n"));
        }
        request.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
        self.reader
            .get_mut()
            .write_all(request.as_bytes())
            .expect("send");
        self.read_answer()
    }

    fn read_answer(&mut self) -> Answer {
        let mut status_line = String::new();
        self.reader
            .read_line(&mut status_line)
            .unwrap_or_else(|e| panic!("no answer from {}: {e}", self.addr));
        let status = status_line
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("not an HTTP response: {status_line:?}"));
        let mut headers = BTreeMap::new();
        loop {
            let mut line = String::new();
            self.reader.read_line(&mut line).expect("header line");
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some((k, v)) = line.split_once(':') {
                headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_string());
            }
        }
        let length: usize = headers
            .get("content-length")
            .and_then(|l| l.parse().ok())
            .unwrap_or_else(|| panic!("no Content-Length: {headers:?}"));
        let mut body = vec![0; length];
        self.reader.read_exact(&mut body).expect("body");
        Answer {
            status,
            headers,
            body: String::from_utf8_lossy(&body).into_owned(),
        }
    }

    /// Waits until the proxy closes this connection; how long that took.
    fn time_to_close(&mut self) -> Duration {
        let start = Instant::now();
        let mut byte = [0u8; 1];
        loop {
            match self.reader.read(&mut byte) {
                Ok(0) | Err(_) => return start.elapsed(),
                Ok(_) => {}
            }
            assert!(start.elapsed() < STEP, "the proxy never closed it");
        }
    }
}

/// One request on a connection of its own.
fn request(addr: &str, method: &str, path: &str, session: Option<&str>, body: &str) -> Answer {
    Conn::open(addr, STEP).send(method, path, session, body)
}

/// `initialize`; the answer and its session id.
fn initialize(addr: &str) -> (Answer, Option<String>) {
    let answer = request(addr, "POST", "/mcp", None, INITIALIZE);
    let id = answer.headers.get("mcp-session-id").cloned();
    (answer, id)
}

fn metrics(addr: &str) -> String {
    let answer = request(addr, "GET", "/metrics", None, "");
    assert_eq!(answer.status, 200, "{answer:?}");
    answer.body
}

/// The value of the one sample `series` (name and labels) in `text`.
fn sample(text: &str, series: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

#[track_caller]
fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < STEP, "{what}: not within {STEP:?}");
        thread::sleep(Duration::from_millis(50));
    }
}

// ---------------------------------------------------------------------------
// the session cap

#[test]
fn initialize_past_the_session_cap_is_refused_and_delete_frees_a_slot() {
    let mut sc = Scenario::new("");
    let addr = sc.listen(&[], &["--max-sessions", "2"]);
    let (first, one) = initialize(&addr);
    let (second, two) = initialize(&addr);
    assert_eq!((first.status, second.status), (200, 200));
    let (one, two) = (one.expect("session id"), two.expect("session id"));
    assert_ne!(one, two);
    wait_for("two upstreams", || sc.upstreams() == 2);

    // The third is refused before any upstream starts for it.
    let (third, none) = initialize(&addr);
    assert_eq!(third.status, 503, "{third:?}");
    assert_eq!(none, None);
    assert_eq!(
        third.headers.get("retry-after").map(String::as_str),
        Some("10")
    );
    assert_eq!(
        third.json(),
        json!({"jsonrpc": "2.0", "id": 1, "error": {
            "code": -32000,
            "message": "too many sessions: this proxy holds at most 2 ([proxy] max_sessions); retry later, or end an unused session with DELETE",
            "data": {"toolpin": {"limit": "max_sessions", "max_sessions": 2, "retry_after_seconds": 10}}
        }})
    );
    let refused = sc.events_named("session-refused");
    assert_eq!(refused.len(), 1, "{refused:#?}");
    assert_eq!(refused[0]["reason"], "max_sessions");
    assert_eq!(refused[0]["max_sessions"], 2);
    assert_eq!(refused[0]["open"], 2);
    thread::sleep(Duration::from_millis(500));
    assert_eq!(
        sc.upstreams(),
        2,
        "a refused initialize started an upstream"
    );
    assert_eq!(
        sample(&metrics(&addr), "toolpin_sessions_refused_total"),
        Some(1)
    );

    // DELETE frees a slot: the next initialize is served.
    let deleted = request(&addr, "DELETE", "/mcp", Some(&one), "");
    assert_eq!(deleted.status, 200, "{deleted:?}");
    let (again, three) = initialize(&addr);
    assert_eq!(again.status, 200, "{again:?}");
    assert!(again.body.contains("\"serverInfo\""), "{again:?}");
    // The freed session's id is gone; the others still work.
    let call = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get","arguments":{"id":"7"}}}"#;
    assert_eq!(request(&addr, "POST", "/mcp", Some(&one), call).status, 404);
    for id in [&two, &three.expect("session id")] {
        let answer = request(&addr, "POST", "/mcp", Some(id), call);
        assert_eq!(answer.status, 200, "{answer:?}");
        assert!(answer.body.contains(r#"\"id\": \"7\""#), "{answer:?}");
    }
    assert_eq!(sc.events_named("session-refused").len(), 1);
    sc.finish();
}

#[test]
fn max_sessions_in_toolpin_toml_and_its_validation() {
    let mut sc = Scenario::new("[proxy]\nmax_sessions = 1\n");
    let addr = sc.listen(&[], &[]);
    assert_eq!(initialize(&addr).0.status, 200);
    let (refused, _) = initialize(&addr);
    assert_eq!(refused.status, 503, "{refused:?}");
    assert!(refused.body.contains("at most 1 ([proxy] max_sessions)"));
    // The flag wins over the file.
    let mut sc2 = Scenario::new("[proxy]\nmax_sessions = 1\n");
    let addr2 = sc2.listen(&[], &["--max-sessions", "2"]);
    assert_eq!(initialize(&addr2).0.status, 200);
    assert_eq!(initialize(&addr2).0.status, 200);
    assert_eq!(initialize(&addr2).0.status, 503);
    sc.finish();
    sc2.finish();

    // Checked when toolpin.toml is read, before anything starts.
    let sb = Sandbox::new();
    sb.write(
        "toolpin.toml",
        "[servers.shop]\ncommand = [\"true\"]\n\n[proxy]\nmax_sessions = 0\n",
    );
    sb.run(&["proxy", "--listen", "127.0.0.1:0"])
        .error(&["proxy.max_sessions must be at least 1"]);
}

// ---------------------------------------------------------------------------
// connection timeouts

#[test]
fn unfinished_headers_and_silent_connections_are_closed_but_a_long_call_is_not() {
    let mut sc = Scenario::new("[proxy]\nheader_read_timeout = \"1s\"\nconnection_idle = \"3s\"\n");
    let addr = sc.listen(&[], &[]);

    // Slowloris: headers trickled a byte at a time, never finished.
    let mut slow = TcpStream::connect(&addr).expect("connect");
    slow.set_read_timeout(Some(Duration::from_millis(100)))
        .expect("timeout");
    let start = Instant::now();
    let head = format!("POST /mcp HTTP/1.1\r\nHost: {addr}\r\nX-Slow: ");
    slow.write_all(head.as_bytes()).expect("send");
    let closed = loop {
        let mut byte = [0u8; 1];
        match slow.read(&mut byte) {
            Ok(0) => break start.elapsed(),
            Ok(_) => panic!("the proxy answered unfinished headers"),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => break start.elapsed(),
            Err(_) => {}
        }
        assert!(start.elapsed() < STEP, "the slow client was never dropped");
        if slow.write_all(b"a").is_err() {
            break start.elapsed();
        }
    };
    assert!(
        closed >= Duration::from_millis(900) && closed < Duration::from_millis(2800),
        "unfinished headers closed after {closed:?}, not at header_read_timeout (1 s)"
    );

    // A connection that never sends anything: closed at connection_idle.
    let silent = Conn::open(&addr, STEP).time_to_close();
    assert!(
        silent >= Duration::from_millis(2900) && silent < Duration::from_millis(4500),
        "a silent connection closed after {silent:?}, not at connection_idle (3 s)"
    );

    // Kept alive after an answer: closed at connection_idle too.
    let mut kept = Conn::open(&addr, STEP);
    let (answer, id) = {
        let a = kept.send("POST", "/mcp", None, INITIALIZE);
        let id = a.headers.get("mcp-session-id").cloned();
        (a, id)
    };
    assert_eq!(answer.status, 200, "{answer:?}");
    let idle = kept.time_to_close();
    assert!(
        idle >= Duration::from_millis(2900) && idle < Duration::from_millis(4500),
        "an idle kept-alive connection closed after {idle:?}"
    );

    // A request in flight for longer than connection_idle is answered.
    let id = id.expect("session id");
    let mut long = Conn::open(&addr, STEP);
    let start = Instant::now();
    let answer = long.send(
        "POST",
        "/mcp",
        Some(&id),
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"wait","arguments":{"n":1}}}"#,
    );
    assert_eq!(answer.status, 200, "{answer:?}");
    assert!(answer.body.contains(r#"\"tool\": \"wait\""#), "{answer:?}");
    assert!(start.elapsed() >= Duration::from_secs(5));

    let text = metrics(&addr);
    assert_eq!(
        sample(
            &text,
            "toolpin_connections_closed_total{reason=\"header_timeout\"}"
        ),
        Some(1),
        "{text}"
    );
    assert_eq!(
        sample(&text, "toolpin_connections_closed_total{reason=\"idle\"}"),
        Some(2),
        "{text}"
    );
    sc.finish();
}

/// Under a 64-descriptor limit, 150 silent connections: the proxy runs out
/// of descriptors, backs off, closes them as they idle out, and serves a
/// normal client (before: every client locked out for as long as the
/// silent ones stayed).
#[test]
fn silent_connection_flood_under_a_lowered_descriptor_limit() {
    const SILENT: usize = 150;
    let mut sc = Scenario::new("[proxy]\nheader_read_timeout = \"1s\"\nconnection_idle = \"1s\"\n");
    let addr = sc.listen(&["prlimit", "--nofile=64:64", "--"], &[]);
    let silent: Vec<TcpStream> = (0..SILENT)
        .map(|i| TcpStream::connect(&addr).unwrap_or_else(|e| panic!("connection {i}: {e}")))
        .collect();
    sc.wait_event(|e| e["event"] == "accept-failed");

    // A normal client, queued behind the flood, is served once the silent
    // connections ahead of it idle out.
    let start = Instant::now();
    let mut normal = Conn::open(&addr, Duration::from_secs(15));
    let answer = normal.send("GET", "/metrics", None, "");
    assert_eq!(answer.status, 200, "{answer:?}");
    let waited = start.elapsed();
    assert!(waited < Duration::from_secs(10), "served after {waited:?}");
    drop(normal);
    sc.assert_running();

    // Every silent connection is closed by the proxy, and then a whole
    // MCP session works (it needs descriptors for its upstream).
    wait_for("every silent connection closed", || {
        sample(
            &metrics(&addr),
            "toolpin_connections_closed_total{reason=\"idle\"}",
        )
        .is_some_and(|n| n >= SILENT as u64)
    });
    let (answer, id) = initialize(&addr);
    assert_eq!(answer.status, 200, "{answer:?}");
    let call = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get","arguments":{"id":"9"}}}"#;
    let answer = request(&addr, "POST", "/mcp", id.as_deref(), call);
    assert_eq!(answer.status, 200, "{answer:?}");
    assert!(answer.body.contains(r#"\"id\": \"9\""#), "{answer:?}");
    drop(silent);
    sc.assert_running();
    sc.finish();
}

/// Under a 64-descriptor limit, 100 connections that send nothing and the
/// default timeouts (a minute idle): the proxy neither spins on EMFILE nor
/// locks a client out until the silent ones idle out, because it closes
/// the connection idle longest to make room (before: the client waited
/// the whole `connection_idle`).
#[test]
fn silent_connections_under_a_descriptor_limit_neither_spin_nor_lock_out() {
    let mut sc = Scenario::new("");
    let addr = sc.listen(&["prlimit", "--nofile=64:64", "--"], &[]);
    let pid = sc.daemons[0].id();
    let silent: Vec<TcpStream> = (0..100)
        .map(|i| TcpStream::connect(&addr).unwrap_or_else(|e| panic!("connection {i}: {e}")))
        .collect();
    sc.wait_event(|e| e["event"] == "accept-failed");
    thread::sleep(Duration::from_millis(500));
    let before = process_cpu(pid);
    thread::sleep(Duration::from_secs(2));
    let burned = process_cpu(pid) - before;
    assert!(
        burned < Duration::from_millis(500),
        "{burned:?} of CPU in 2 s"
    );

    let started = Instant::now();
    let answer = Conn::open(&addr, Duration::from_secs(8)).send("GET", "/metrics", None, "");
    assert_eq!(answer.status, 200, "{answer:?}");
    let waited = started.elapsed();
    assert!(waited < Duration::from_secs(5), "served after {waited:?}");
    let evicted = sample(
        &answer.body,
        "toolpin_connections_closed_total{reason=\"evicted\"}",
    );
    assert!(evicted.is_some_and(|n| n > 0), "{}", answer.body);
    // One event for the episode, not one per retry or per eviction.
    let failed = sc.events_named("accept-failed");
    assert_eq!(failed.len(), 1, "{failed:#?}");
    drop(silent);
    sc.assert_running();
    sc.finish();
}

/// Bodies that stop short are answered 408 and their connections closed
/// after `body_timeout` (before: held, with their megabytes, for as long
/// as the sender liked); past `--max-connections`, the connection idle
/// longest makes room for a client.
#[test]
fn bodies_that_never_end_time_out_and_the_connection_cap_makes_room() {
    const MIB: usize = 1 << 20;
    let mut sc = Scenario::new("[proxy]\nbody_timeout = \"1s\"\n");
    let addr = sc.listen(&[], &["--max-connections", "8"]);
    let mut stalled: Vec<Conn> = (0..5)
        .map(|_| {
            let mut c = Conn::open(&addr, Duration::from_secs(10));
            let head = format!(
                "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nAccept: application/json\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
                4 * MIB
            );
            let stream = c.reader.get_mut();
            stream.write_all(head.as_bytes()).expect("head");
            stream.write_all(&vec![b' '; MIB]).expect("a quarter of the body");
            c
        })
        .collect();
    let started = Instant::now();
    for c in &mut stalled {
        let answer = c.read_answer();
        assert_eq!(answer.status, 408, "{answer:?}");
        assert_eq!(
            answer.headers.get("connection").map(String::as_str),
            Some("close"),
            "{answer:?}"
        );
        c.time_to_close();
    }
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "{:?}",
        started.elapsed()
    );

    let silent: Vec<TcpStream> = (0..12)
        .map(|_| TcpStream::connect(&addr).expect("connect"))
        .collect();
    thread::sleep(Duration::from_millis(300));
    let started = Instant::now();
    let (answer, id) = initialize(&addr);
    assert_eq!(answer.status, 200, "{answer:?}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    let call = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get","arguments":{"id":"5"}}}"#;
    let answer = request(&addr, "POST", "/mcp", id.as_deref(), call);
    assert_eq!(answer.status, 200, "{answer:?}");
    assert!(answer.body.contains(r#"\"id\": \"5\""#), "{answer:?}");
    drop(silent);

    let text = metrics(&addr);
    assert_eq!(
        sample(
            &text,
            "toolpin_connections_closed_total{reason=\"body_timeout\"}"
        ),
        Some(5),
        "{text}"
    );
    assert!(
        sample(
            &text,
            "toolpin_connections_closed_total{reason=\"evicted\"}"
        )
        .is_some_and(|n| n >= 4),
        "{text}"
    );
    sc.finish();
}

/// `max_connections` and `body_timeout` are checked when toolpin.toml is
/// read, and so are the flags, before anything starts.
#[test]
fn connection_limits_are_checked_before_anything_starts() {
    let sb = Sandbox::new();
    sb.write(
        "toolpin.toml",
        "[servers.shop]\ncommand = [\"true\"]\n\n[proxy]\nmax_connections = 0\n",
    );
    sb.run(&["proxy", "--listen", "127.0.0.1:0"])
        .error(&["proxy.max_connections must be at least 1"]);
    sb.write(
        "toolpin.toml",
        "[servers.shop]\ncommand = [\"true\"]\n\n[proxy]\nbody_timeout = \"forever\"\n",
    );
    sb.run(&["proxy", "--listen", "127.0.0.1:0"])
        .error(&["proxy.body_timeout"]);
    sb.write("toolpin.toml", "[servers.shop]\ncommand = [\"true\"]\n");
    for (flag, value, needle) in [
        ("--max-connections", "0", "must be at least 1"),
        (
            "--max-connections",
            "many",
            "\"many\" is not a whole number",
        ),
        ("--body-timeout", "forever", "\"forever\" is not a duration"),
    ] {
        let run = sb.run(&["proxy", "--listen", "127.0.0.1:0", flag, value]);
        assert_eq!(run.code, 2, "{flag} {value}: {run:#?}");
        let first = run.stderr.lines().next().unwrap_or("");
        assert!(
            first.contains(flag) && first.contains(needle),
            "{flag} {value}: {}",
            run.stderr
        );
    }
}

// ---------------------------------------------------------------------------
// metric labels

/// 3,000 made-up tool names and one of 1 MB: /metrics stays small, the
/// names past the cap are one `unknown` series, the events log keeps each
/// name (the long one cut, saying so).
#[test]
fn made_up_tool_names_are_one_unknown_series_past_the_cap() {
    const NAMES: usize = 3000;
    let mut sc = Scenario::new("");
    let addr = sc.listen(&[], &[]);
    let (answer, id) = initialize(&addr);
    assert_eq!(answer.status, 200, "{answer:?}");
    let id = id.expect("session id");
    let mut conn = Conn::open(&addr, STEP);
    let long = "L".repeat(1 << 20);
    let mut call = |n: usize, name: &str| {
        let body = json!({"jsonrpc": "2.0", "id": n, "method": "tools/call",
            "params": {"name": name, "arguments": {}}})
        .to_string();
        let answer = conn.send("POST", "/mcp", Some(&id), &body);
        assert_eq!(answer.status, 200, "{answer:?}");
        assert_eq!(answer.json()["error"]["code"], -32602, "{answer:?}");
    };
    call(0, &long);
    for n in 1..=NAMES {
        call(n, &format!("made-up-tool-{n}"));
    }
    call(NAMES + 1, "get");

    let text = metrics(&addr);
    // Bounded by the label cap, not by the names: each capped tool series
    // is ~20 lines of mcp_server_operation_duration_seconds buckets too.
    assert!(
        text.len() < 128 * 1024,
        "/metrics is {} bytes after {NAMES} made-up names",
        text.len()
    );
    let unserved: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("toolpin_tool_calls_total{server=\"\","))
        .collect();
    // The long name and the first 15 made-up ones, then `unknown`.
    assert_eq!(unserved.len(), 17, "{unserved:#?}");
    assert_eq!(
        sample(
            &text,
            "toolpin_tool_calls_total{server=\"\",tool=\"unknown\",outcome=\"error\"}"
        ),
        Some((NAMES - 15) as u64)
    );
    let cut = format!("{}...", "L".repeat(125));
    assert_eq!(
        sample(
            &text,
            &format!("toolpin_tool_calls_total{{server=\"\",tool=\"{cut}\",outcome=\"error\"}}")
        ),
        Some(1)
    );
    assert_eq!(
        sample(
            &text,
            "toolpin_tool_calls_total{server=\"\",tool=\"made-up-tool-15\",outcome=\"error\"}"
        ),
        Some(1)
    );
    assert_eq!(
        sample(
            &text,
            "toolpin_findings_total{rule=\"unknown-tool-called\"}"
        ),
        Some(NAMES as u64 + 1)
    );
    // A served tool keeps its own series.
    assert_eq!(
        sample(
            &text,
            "toolpin_tool_calls_total{server=\"shop\",tool=\"get\",outcome=\"error\"}"
        ),
        Some(1)
    );
    assert_eq!(
        text.matches("tool=\"unknown\"").count(),
        1 + 1 + 17,
        "one unknown series per metric (calls, errors, histogram)"
    );

    // The events log names every refused tool; the 1 MB name is cut.
    let refused = sc.events_named("refused");
    assert_eq!(refused.len(), NAMES + 1);
    assert_eq!(refused[NAMES]["tool"], format!("made-up-tool-{NAMES}"));
    assert_eq!(
        refused[0]["tool"],
        format!("{}... (truncated: 1048576 bytes)", "L".repeat(4096))
    );
    let log = fs::metadata(sc.root.join("events.jsonl"))
        .expect("events")
        .len();
    assert!(log < 2 << 20, "the events log is {log} bytes");
    sc.finish();
}
