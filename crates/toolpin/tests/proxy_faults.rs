//! The proxy's fronts under the attacks of issue 12, as they were run:
//! hand-built HTTP and stdio traffic against `toolpin proxy` fronting
//! `@modelcontextprotocol/server-everything` (over stdio, and in its
//! Streamable HTTP mode), on loopback only.
//!
//! - stateless (2026-07-28) clients that all start at id 1 each get their
//!   own answers (two-client race, ten clients mixing long and short calls);
//! - a cancelled request ends its POST stream and lets the session expire;
//!   a request whose `method` is not a string is answered `-32600` by both
//!   fronts;
//! - the upstream's `MCP-Protocol-Version` is what the proxy negotiated,
//!   never the agent's `_meta`;
//! - JSON-only batches, bodies that are not messages, Host parsing,
//!   duplicate Host headers, absolute-form targets, invalid UTF-8 on stdin.
//!
//! Every process a test starts names its scratch directory on its command
//! line or runs in it; tests that end cleanly assert that none is left.

mod common;

use std::fs;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::thread;
use std::time::{Duration, Instant};

use common::*;
use serde_json::{json, Value};

/// Longest wait for one answer or one event.
const STEP: Duration = Duration::from_secs(30);

const STATELESS: &str = "2026-07-28";

fn everything_bin() -> &'static PathBuf {
    static BIN_PATH: OnceLock<PathBuf> = OnceLock::new();
    BIN_PATH.get_or_init(|| {
        let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let repo = repo.canonicalize().unwrap_or(repo);
        let p = repo.join("tests/servers/node_modules/.bin/mcp-server-everything");
        assert!(
            p.exists(),
            "{} is missing: run scripts/setup to install the test servers",
            p.display()
        );
        p
    })
}

/// A TOML string.
fn q(text: impl AsRef<str>) -> String {
    json!(text.as_ref()).to_string()
}

/// A loopback port nobody listens on (bound and released).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

// ---------------------------------------------------------------------------
// a scenario: a sandbox, its processes, its event log

struct Scenario {
    sb: Sandbox,
    root: PathBuf,
    daemons: Vec<Child>,
}

impl Scenario {
    fn new() -> Self {
        let sb = Sandbox::new();
        let root = sb.path().canonicalize().expect("canonical sandbox");
        Self {
            sb,
            root,
            daemons: Vec::new(),
        }
    }

    fn path(&self, rel: &str) -> String {
        self.root.join(rel).display().to_string()
    }

    /// A link to server-everything inside the sandbox, so that its
    /// processes name the sandbox on their command line.
    fn everything(&self) -> String {
        let link = self.root.join("mcp-server-everything");
        if !link.exists() {
            std::os::unix::fs::symlink(everything_bin(), &link).expect("link");
        }
        link.display().to_string()
    }

    /// Writes toolpin.toml (server-everything over stdio unless `servers`
    /// says otherwise, then `extra`) and locks it.
    #[track_caller]
    fn lock(&self, servers: Option<&str>, extra: &str) -> Value {
        let servers = servers.map(str::to_string).unwrap_or_else(|| {
            format!(
                "[servers.everything]\ncommand = [{}]\n",
                q(self.everything())
            )
        });
        self.sb.write("toolpin.toml", format!("{servers}{extra}"));
        self.sb.run(&["lock"]).ok();
        self.sb.read_json("toolpin.lock")
    }

    /// Starts server-everything's Streamable HTTP mode; its port.
    fn everything_http(&mut self) -> u16 {
        let port = free_port();
        let log = self.root.join("everything-http.log");
        let child = Command::new(self.everything())
            .arg("streamableHttp")
            .env("PORT", port.to_string())
            .current_dir(&self.root)
            .stdin(Stdio::null())
            .stdout(fs::File::create(&log).expect("log"))
            .stderr(fs::File::create(&log).expect("log"))
            .spawn()
            .expect("start server-everything streamableHttp");
        self.daemons.push(child);
        let deadline = Instant::now() + Duration::from_secs(20);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "server-everything did not listen: {}",
                fs::read_to_string(&log).unwrap_or_default()
            );
            thread::sleep(Duration::from_millis(50));
        }
        port
    }

    /// `toolpin proxy --listen 127.0.0.1:0`; the address it announced
    /// (`127.0.0.1:PORT`).
    fn listen(&mut self) -> String {
        let log = self.root.join("proxy-http.log");
        let child = Command::new(BIN)
            .args([
                "proxy",
                "--events",
                &self.path("events.jsonl"),
                "--no-start-check",
                "--listen",
                "127.0.0.1:0",
            ])
            .current_dir(&self.root)
            .stdin(Stdio::null())
            .stdout(fs::File::create(&log).expect("log"))
            .stderr(fs::File::create(&log).expect("log"))
            .spawn()
            .expect("start toolpin proxy --listen");
        self.daemons.push(child);
        let event = self.wait_event(STEP, |e| e["event"] == "listening");
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

    #[track_caller]
    fn wait_event(&mut self, limit: Duration, pred: impl Fn(&Value) -> bool) -> Value {
        let start = Instant::now();
        loop {
            if let Some(e) = self.events().into_iter().find(&pred) {
                return e;
            }
            for d in &mut self.daemons {
                if let Ok(Some(status)) = d.try_wait() {
                    panic!(
                        "a daemon exited ({status}): {}",
                        fs::read_to_string(self.root.join("proxy-http.log")).unwrap_or_default()
                    );
                }
            }
            assert!(
                start.elapsed() < limit,
                "no such event within {limit:?}; events: {:#?}",
                self.events()
            );
            thread::sleep(Duration::from_millis(20));
        }
    }

    /// The server-everything processes this scenario runs over stdio
    /// (those the proxy started).
    fn stdio_upstreams(&self) -> usize {
        processes_under(&self.root)
            .into_iter()
            .filter(|(_, cmd)| {
                cmd.contains("mcp-server-everything") && !cmd.contains("streamableHttp")
            })
            .count()
    }

    /// Kills the daemons, then asserts that no process started for this
    /// scenario is left.
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
                panic!(
                    "processes left behind for {}: {left:#?}",
                    self.root.display()
                );
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
    }
}

// ---------------------------------------------------------------------------
// raw HTTP

/// What came back for one request.
#[derive(Debug)]
struct Answer {
    status: u16,
    head: String,
    body: String,
    elapsed: Duration,
}

impl Answer {
    /// A response header's value.
    fn header(&self, name: &str) -> Option<String> {
        self.head.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.trim()
                .eq_ignore_ascii_case(name)
                .then(|| v.trim().to_string())
        })
    }

    /// The JSON-RPC messages of the body: SSE `data:` lines, or the body.
    fn messages(&self) -> Vec<Value> {
        let sse = self
            .header("content-type")
            .is_some_and(|t| t.starts_with("text/event-stream"));
        if sse {
            self.body
                .lines()
                .filter_map(|l| l.strip_prefix("data: "))
                .map(|d| serde_json::from_str(d).unwrap_or_else(|e| panic!("{e}: {d}")))
                .collect()
        } else if self.body.trim().is_empty() {
            Vec::new()
        } else {
            vec![serde_json::from_str(&self.body)
                .unwrap_or_else(|e| panic!("not JSON ({e}): {:?}", self.body))]
        }
    }

    /// The one JSON-RPC response in the body.
    #[track_caller]
    fn response(&self) -> Value {
        let responses: Vec<Value> = self
            .messages()
            .into_iter()
            .filter(|m| m.get("method").is_none())
            .collect();
        assert_eq!(responses.len(), 1, "{self:#?}");
        responses.into_iter().next().expect("one")
    }
}

/// Sends `request` (a whole HTTP/1.1 request, `Connection: close`) and
/// reads until the server closes or `limit` passes.
fn raw(addr: &str, request: &[u8], limit: Duration) -> Answer {
    let started = Instant::now();
    let mut stream = TcpStream::connect(addr).unwrap_or_else(|e| panic!("connect {addr}: {e}"));
    stream.set_read_timeout(Some(limit)).expect("timeout");
    stream.write_all(request).expect("send");
    let mut response = Vec::new();
    let _ = stream.read_to_end(&mut response);
    let elapsed = started.elapsed();
    let text = String::from_utf8_lossy(&response).into_owned();
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let (head, body) = text
        .split_once("\r\n\r\n")
        .map(|(h, b)| (h.to_string(), b.to_string()))
        .unwrap_or((text.clone(), String::new()));
    Answer {
        status,
        head,
        body,
        elapsed,
    }
}

/// A POST of `body` to /mcp, Host the address itself.
fn post_with(addr: &str, headers: &[(&str, &str)], body: &[u8], limit: Duration) -> Answer {
    let mut request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Type: application/json\r\n"
    );
    for (k, v) in headers {
        request.push_str(&format!("{k}: {v}\r\n"));
    }
    request.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
    let mut bytes = request.into_bytes();
    bytes.extend_from_slice(body);
    raw(addr, &bytes, limit)
}

const SSE: (&str, &str) = ("Accept", "application/json, text/event-stream");
const JSON_ONLY: (&str, &str) = ("Accept", "application/json");

fn post(addr: &str, session: Option<&str>, body: &Value) -> Answer {
    let mut headers = vec![SSE];
    if let Some(s) = session {
        headers.push(("Mcp-Session-Id", s));
    }
    post_with(addr, &headers, body.to_string().as_bytes(), STEP)
}

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw-http","version":"1"}}}"#;

/// Opens a session; its id.
#[track_caller]
fn initialize(addr: &str) -> String {
    let a = post_with(addr, &[SSE], INITIALIZE.as_bytes(), STEP);
    assert_eq!(a.status, 200, "{a:#?}");
    let session = a.header("mcp-session-id").expect("a session id");
    let a = post(
        addr,
        Some(&session),
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    );
    assert_eq!(a.status, 202, "{a:#?}");
    session
}

/// A stateless (2026-07-28) `tools/call`.
fn stateless_call(id: Value, name: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
        "name": name,
        "arguments": arguments,
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": STATELESS,
            "io.modelcontextprotocol/clientInfo": {"name": "raw-stateless", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {},
        },
    }})
}

/// The text of a `tools/call` result.
fn text_of(response: &Value) -> String {
    response["result"]["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

fn long_running(seconds: u64) -> Value {
    json!({"duration": seconds, "steps": 1})
}

// ---------------------------------------------------------------------------
// 1. stateless clients each get their own answers

/// The issue's repro: a 3 s operation with id 1, then 0.5 s later an echo
/// with id 1, both stateless. Each must get its own answer, on its own POST.
#[test]
fn two_stateless_clients_with_the_same_id_each_get_their_own_answer() {
    let mut sc = Scenario::new();
    sc.lock(None, "");
    let addr = sc.listen();
    let first = {
        let addr = addr.clone();
        thread::spawn(move || {
            post(
                &addr,
                None,
                &stateless_call(json!(1), "trigger-long-running-operation", long_running(3)),
            )
        })
    };
    thread::sleep(Duration::from_millis(500));
    let second = post(
        &addr,
        None,
        &stateless_call(json!(1), "echo", json!({"message": "second client"})),
    );
    let first = first.join().expect("first client");
    let (a, b) = (first.response(), second.response());
    assert_eq!(a["id"], 1, "{a:#}");
    assert_eq!(b["id"], 1, "{b:#}");
    assert_eq!(
        b["result"]["content"][0]["text"], "Echo: second client",
        "{b:#}"
    );
    assert!(
        text_of(&a).contains("Long running operation") && !text_of(&a).contains("Echo"),
        "the first client got {a:#}"
    );
    assert!(
        b_first(&second, &first),
        "the echo came back before the long call"
    );
    sc.finish();
}

/// Whether `b` ended before `a` (the echo is not held behind the long call).
fn b_first(b: &Answer, a: &Answer) -> bool {
    b.elapsed + Duration::from_millis(500) < a.elapsed
}

/// Ten stateless clients, all using id 1, mixing 1 s operations and echoes
/// for a bounded number of rounds: every answer reaches its own client.
#[test]
fn ten_stateless_clients_mixing_long_and_short_calls_get_no_misrouted_answer() {
    let mut sc = Scenario::new();
    sc.lock(None, "");
    let addr = sc.listen();
    const CLIENTS: usize = 10;
    const ROUNDS: usize = 6;
    let workers: Vec<_> = (0..CLIENTS)
        .map(|c| {
            let addr = addr.clone();
            thread::spawn(move || {
                let mut mine = 0;
                let mut misrouted = Vec::new();
                for r in 0..ROUNDS {
                    let long = (c + r) % 3 == 0;
                    let message = format!("client {c} round {r}");
                    let call = if long {
                        stateless_call(json!(1), "trigger-long-running-operation", long_running(1))
                    } else {
                        stateless_call(json!(1), "echo", json!({"message": message}))
                    };
                    let answer = post(&addr, None, &call).response();
                    let text = text_of(&answer);
                    let own = answer["id"] == 1
                        && if long {
                            text.contains("Long running operation") && !text.contains("Echo")
                        } else {
                            text == format!("Echo: {message}")
                        };
                    if own {
                        mine += 1;
                    } else {
                        misrouted.push(answer);
                    }
                }
                (mine, misrouted)
            })
        })
        .collect();
    let mut own = 0;
    let mut misrouted = Vec::new();
    for w in workers {
        let (m, wrong) = w.join().expect("client");
        own += m;
        misrouted.extend(wrong);
    }
    assert_eq!(misrouted.len(), 0, "misrouted answers: {misrouted:#?}");
    assert_eq!(own, CLIENTS * ROUNDS);
    sc.finish();
}

/// Stateless clients share one session, so a `notifications/cancelled`
/// naming id 1 cannot say whose request 1 it means: it cancels nobody's
/// (another client's call still gets its answer).
#[test]
fn a_stateless_cancellation_cannot_cancel_another_clients_request() {
    let mut sc = Scenario::new();
    sc.lock(None, "");
    let addr = sc.listen();
    let first = {
        let addr = addr.clone();
        thread::spawn(move || {
            let call = stateless_call(json!(1), "trigger-long-running-operation", long_running(2));
            post_with(
                &addr,
                &[SSE],
                call.to_string().as_bytes(),
                Duration::from_secs(10),
            )
        })
    };
    thread::sleep(Duration::from_millis(500));
    let cancel = post(
        &addr,
        None,
        &json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {
            "requestId": 1, "reason": "another client",
            "_meta": {"io.modelcontextprotocol/protocolVersion": STATELESS}}}),
    );
    assert_eq!(cancel.status, 202, "{cancel:#?}");
    let first = first.join().expect("first client");
    let a = first.response();
    assert_eq!(
        a["result"]["content"][0]["text"],
        "Long running operation completed. Duration: 2 seconds, Steps: 1.",
        "{first:#?}"
    );
    sc.finish();
}

/// A stateless client cancels by closing its connection (there is no
/// session to send a cancellation on): the call is cancelled upstream and
/// counted as cancelled.
#[test]
fn a_stateless_client_that_hangs_up_cancels_its_request() {
    let mut sc = Scenario::new();
    sc.lock(None, "");
    let addr = sc.listen();
    let started = Instant::now();
    let call = stateless_call(json!(1), "trigger-long-running-operation", long_running(6));
    let body = call.to_string();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let mut stream = TcpStream::connect(&addr).expect("connect");
    stream.write_all(request.as_bytes()).expect("send");
    stream.set_read_timeout(Some(STEP)).expect("timeout");
    let mut head = [0u8; 12];
    stream.read_exact(&mut head).expect("the response starts");
    assert_eq!(&head, b"HTTP/1.1 200");
    thread::sleep(Duration::from_millis(500));
    drop(stream);
    let cancelled = "toolpin_tool_errors_total{server=\"everything\",tool=\"trigger-long-running-operation\",class=\"cancelled\"} 1";
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let metrics = raw(
            &addr,
            format!("GET /metrics HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n")
                .as_bytes(),
            STEP,
        );
        if metrics.body.contains(cancelled) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the abandoned call was not cancelled: {}",
            metrics.body
        );
        thread::sleep(Duration::from_millis(100));
    }
    assert!(
        started.elapsed() < Duration::from_secs(6),
        "noticed only after the call ended"
    );
    // server-everything does not stop the operation it was told to
    // cancel; a server busy when the proxy goes outlives it meanwhile.
    thread::sleep(Duration::from_millis(6500).saturating_sub(started.elapsed()));
    sc.finish();
}

/// A server's request during a stateless client's call (sampling) goes on
/// that call's POST stream, and the client's answer, POSTed without a
/// session id, reaches the server: the call completes with it.
#[test]
fn a_stateless_clients_call_gets_its_servers_sampling_request_and_the_answer_reaches_it() {
    let mut sc = Scenario::new();
    sc.lock(None, "client_capabilities = { sampling = {} }\n");
    let addr = sc.listen();
    let body = stateless_call(
        json!(1),
        "trigger-sampling-request",
        json!({"prompt": "hello", "maxTokens": 5}),
    )
    .to_string();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let mut stream = TcpStream::connect(&addr).expect("connect");
    stream.set_read_timeout(Some(STEP)).expect("timeout");
    stream.write_all(request.as_bytes()).expect("send");
    let mut lines = BufReader::new(stream).lines();
    let mut next_message = || -> Value {
        loop {
            let line = lines
                .next()
                .expect("the stream ended early")
                .expect("a line within the timeout");
            if let Some(data) = line.strip_prefix("data: ") {
                return serde_json::from_str(data).unwrap_or_else(|e| panic!("{e}: {data}"));
            }
        }
    };
    let sampling = next_message();
    assert_eq!(sampling["method"], "sampling/createMessage", "{sampling:#}");
    assert_eq!(
        sampling["params"]["messages"][0]["content"]["text"],
        "Resource trigger-sampling-request context: hello"
    );
    let answer = json!({"jsonrpc": "2.0", "id": sampling["id"], "result": {
        "role": "assistant", "content": {"type": "text", "text": "SAMPLED-7f3a"},
        "model": "test-model", "stopReason": "endTurn"}});
    let posted = post(&addr, None, &answer);
    assert_eq!(posted.status, 202, "{posted:#?}");
    let result = next_message();
    assert_eq!(result["id"], 1, "{result:#}");
    let text = text_of(&result);
    assert!(text.contains("SAMPLED-7f3a"), "{result:#}");
    sc.finish();
}

/// A server's request that belongs with no one call (two stateless calls
/// are in flight on that server) goes to neither client: the server is
/// told it cannot be delivered, and the other client's call is untouched.
#[test]
fn a_servers_request_that_belongs_with_no_one_call_reaches_no_other_client() {
    let mut sc = Scenario::new();
    sc.lock(None, "client_capabilities = { sampling = {} }\n");
    let addr = sc.listen();
    let first = {
        let addr = addr.clone();
        thread::spawn(move || {
            post(
                &addr,
                None,
                &stateless_call(json!(1), "trigger-long-running-operation", long_running(3)),
            )
        })
    };
    thread::sleep(Duration::from_millis(500));
    let second = post(
        &addr,
        None,
        &stateless_call(
            json!(1),
            "trigger-sampling-request",
            json!({"prompt": "hello", "maxTokens": 5}),
        ),
    );
    let first = first.join().expect("first client");
    let requests: Vec<Value> = first
        .messages()
        .into_iter()
        .chain(second.messages())
        .filter(|m| m.get("method").is_some())
        .collect();
    assert_eq!(requests, Vec::<Value>::new(), "{first:#?}\n{second:#?}");
    assert_eq!(
        text_of(&first.response()),
        "Long running operation completed. Duration: 3 seconds, Steps: 1.",
        "{first:#?}"
    );
    let b = second.response();
    let refused = b["error"]["message"]
        .as_str()
        .map(str::to_string)
        .unwrap_or_else(|| text_of(&b));
    assert!(refused.contains("cannot be delivered"), "{b:#}");
    sc.finish();
}

// ---------------------------------------------------------------------------
// 4. every POST ends

/// A request cancelled with notifications/cancelled ends its SSE POST
/// stream (no answer is owed), so the session and its upstream expire.
#[test]
fn cancelled_request_ends_its_post_stream_and_the_session_expires() {
    let mut sc = Scenario::new();
    sc.lock(None, "[proxy]\nsession_idle = \"1s\"\n");
    let addr = sc.listen();
    let session = initialize(&addr);
    let long = {
        let (addr, session) = (addr.clone(), session.clone());
        thread::spawn(move || {
            let call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
                "name": "trigger-long-running-operation", "arguments": long_running(20)}});
            let mut headers = vec![SSE];
            headers.push(("Mcp-Session-Id", session.as_str()));
            post_with(
                &addr,
                &headers,
                call.to_string().as_bytes(),
                Duration::from_secs(10),
            )
        })
    };
    thread::sleep(Duration::from_millis(800));
    let cancel = post(
        &addr,
        Some(&session),
        &json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7, "reason": "test"}}),
    );
    assert_eq!(cancel.status, 202, "{cancel:#?}");
    let long = long.join().expect("the long call");
    assert_eq!(long.status, 200, "{long:#?}");
    assert!(
        long.elapsed < Duration::from_secs(3),
        "the cancelled request's stream stayed open {:?}",
        long.elapsed
    );
    let answers: Vec<Value> = long
        .messages()
        .into_iter()
        .filter(|m| m.get("method").is_none())
        .collect();
    assert_eq!(answers, Vec::<Value>::new(), "no answer is owed");
    // The session goes (session_idle 1 s), and its upstream with it.
    sc.wait_event(Duration::from_secs(10), |e| e["event"] == "session-expired");
    let deadline = Instant::now() + Duration::from_secs(5);
    while sc.stdio_upstreams() > 0 {
        assert!(
            Instant::now() < deadline,
            "the expired session's upstream runs"
        );
        thread::sleep(Duration::from_millis(50));
    }
    let again = post(
        &addr,
        Some(&session),
        &json!({"jsonrpc": "2.0", "id": 8, "method": "tools/list"}),
    );
    assert_eq!(again.status, 404, "{again:#?}");
    sc.finish();
}

const BAD_METHODS: [&str; 3] = ["5", "null", "{}"];

/// A request whose method is not a string gets -32600 with its id over
/// HTTP, and does not keep the session alive.
#[test]
fn malformed_methods_get_invalid_request_over_http_and_the_session_expires() {
    let mut sc = Scenario::new();
    sc.lock(None, "[proxy]\nsession_idle = \"1s\"\n");
    let addr = sc.listen();
    let session = initialize(&addr);
    for (n, method) in BAD_METHODS.iter().enumerate() {
        let body = format!(r#"{{"jsonrpc":"2.0","id":{},"method":{method}}}"#, 40 + n);
        let headers = [SSE, ("Mcp-Session-Id", session.as_str())];
        let a = post_with(&addr, &headers, body.as_bytes(), Duration::from_secs(5));
        assert!(a.elapsed < Duration::from_secs(3), "{method}: {a:#?}");
        assert_eq!(a.status, 400, "{method}: {a:#?}");
        let r = a.response();
        assert_eq!(r["id"], 40 + n, "{method}: {r:#}");
        assert_eq!(r["error"]["code"], -32600, "{method}: {r:#}");
    }
    sc.wait_event(Duration::from_secs(10), |e| e["event"] == "session-expired");
    let deadline = Instant::now() + Duration::from_secs(5);
    while sc.stdio_upstreams() > 0 {
        assert!(
            Instant::now() < deadline,
            "the expired session's upstream runs"
        );
        thread::sleep(Duration::from_millis(50));
    }
    sc.finish();
}

/// `toolpin proxy` over stdio, driven line by line.
struct StdioFront {
    child: Child,
    stdin: Option<std::process::ChildStdin>,
    lines: std::sync::mpsc::Receiver<String>,
}

impl StdioFront {
    fn start(sc: &Scenario) -> Self {
        let mut child = Command::new(BIN)
            .args([
                "proxy",
                "--events",
                &sc.path("events-stdio.jsonl"),
                "--no-start-check",
            ])
            .current_dir(&sc.root)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start toolpin proxy");
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().expect("stdout");
        let (tx, lines) = std::sync::mpsc::channel();
        thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        Self {
            child,
            stdin,
            lines,
        }
    }

    fn send(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin");
        stdin.write_all(bytes).expect("write");
        stdin.write_all(b"\n").expect("write");
        stdin.flush().expect("flush");
    }

    #[track_caller]
    fn read(&self, limit: Duration) -> Value {
        let line = self
            .lines
            .recv_timeout(limit)
            .unwrap_or_else(|e| panic!("no line from the stdio front within {limit:?}: {e}"));
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
    }

    /// Closes stdin and waits for the proxy to exit.
    fn quit(mut self) {
        drop(self.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.child.try_wait().ok().flatten().is_none() {
            assert!(Instant::now() < deadline, "the stdio proxy did not exit");
            thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for StdioFront {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The stdio front answers a request whose method is not a string with
/// -32600 and its id, and keeps serving.
#[test]
fn malformed_methods_get_invalid_request_over_stdio() {
    let sc = Scenario::new();
    sc.lock(None, "");
    let mut p = StdioFront::start(&sc);
    p.send(INITIALIZE.as_bytes());
    assert_eq!(p.read(STEP)["id"], 1);
    for (n, method) in BAD_METHODS.iter().enumerate() {
        let body = format!(r#"{{"jsonrpc":"2.0","id":{},"method":{method}}}"#, 40 + n);
        p.send(body.as_bytes());
        let r = p.read(Duration::from_secs(5));
        assert_eq!(r["id"], 40 + n, "{method}: {r:#}");
        assert_eq!(r["error"]["code"], -32600, "{method}: {r:#}");
    }
    p.send(br#"{"jsonrpc":"2.0","id":50,"method":"ping"}"#);
    assert_eq!(
        p.read(STEP),
        json!({"jsonrpc": "2.0", "id": 50, "result": {}})
    );
    p.quit();
    sc.finish();
}

// ---------------------------------------------------------------------------
// 6. the upstream leg's protocol header is the proxy's

/// A stateless agent calls a tool behind an HTTP upstream that negotiated a
/// handshake revision: the upstream gets its own revision in
/// MCP-Protocol-Version, not the agent's 2026-07-28.
#[test]
fn stateless_agent_reaches_an_http_upstream_of_an_older_revision() {
    let mut sc = Scenario::new();
    let port = sc.everything_http();
    let lock = sc.lock(
        Some(&format!(
            "[servers.everything]\nurl = \"http://127.0.0.1:{port}/mcp\"\n"
        )),
        "",
    );
    let negotiated = lock["servers"]["everything"]["session"]["protocol_version"]
        .as_str()
        .expect("a negotiated revision")
        .to_string();
    assert_ne!(negotiated, STATELESS);
    let addr = sc.listen();
    for n in 0..2 {
        let a = post(
            &addr,
            None,
            &stateless_call(
                json!(n),
                "echo",
                json!({"message": format!("over http {n}")}),
            ),
        );
        let r = a.response();
        assert_eq!(
            r,
            json!({"jsonrpc": "2.0", "id": n, "result": {"content": [{"type": "text", "text": format!("Echo: over http {n}")}]}}),
            "{a:#?}"
        );
    }
    sc.finish();
}

// ---------------------------------------------------------------------------
// 7. smaller faults of the fronts

/// Accept: application/json and a batch of requests: every answer, as a
/// JSON array.
#[test]
fn json_only_batch_gets_every_answer() {
    let mut sc = Scenario::new();
    sc.lock(None, "");
    let addr = sc.listen();
    let session = initialize(&addr);
    let batch = json!([
        {"jsonrpc": "2.0", "id": 1, "method": "ping"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "echo", "arguments": {"message": "two"}}},
        {"jsonrpc": "2.0", "id": "three", "method": "ping"},
    ]);
    let headers = [JSON_ONLY, ("Mcp-Session-Id", session.as_str())];
    let a = post_with(&addr, &headers, batch.to_string().as_bytes(), STEP);
    assert_eq!(a.status, 200, "{a:#?}");
    assert_eq!(
        a.header("content-type").as_deref(),
        Some("application/json")
    );
    let mut answers: Vec<Value> = serde_json::from_str::<Value>(&a.body)
        .unwrap_or_else(|e| panic!("{e}: {a:#?}"))
        .as_array()
        .unwrap_or_else(|| panic!("not an array: {a:#?}"))
        .clone();
    answers.sort_by_key(|m| m["id"].to_string());
    assert_eq!(
        answers,
        vec![
            json!({"jsonrpc": "2.0", "id": "three", "result": {}}),
            json!({"jsonrpc": "2.0", "id": 1, "result": {}}),
            json!({"jsonrpc": "2.0", "id": 2, "result": {"content": [{"type": "text", "text": "Echo: two"}]}}),
        ]
    );
    sc.finish();
}

/// Bodies that are no JSON-RPC message: HTTP 400 with a JSON-RPC error.
#[test]
fn bodies_that_are_not_messages_get_400() {
    let mut sc = Scenario::new();
    sc.lock(None, "");
    let addr = sc.listen();
    let session = initialize(&addr);
    for body in ["[]", "42", "\"x\"", "null"] {
        for with_session in [false, true] {
            let mut headers = vec![SSE];
            if with_session {
                headers.push(("Mcp-Session-Id", session.as_str()));
            }
            let a = post_with(&addr, &headers, body.as_bytes(), Duration::from_secs(5));
            assert_eq!(a.status, 400, "{body}: {a:#?}");
            let r: Value = serde_json::from_str(&a.body).unwrap_or_else(|e| panic!("{e}: {a:#?}"));
            assert_eq!(r["jsonrpc"], "2.0", "{body}: {r:#}");
            assert_eq!(r["id"], Value::Null, "{body}: {r:#}");
            assert_eq!(r["error"]["code"], -32600, "{body}: {r:#}");
        }
    }
    sc.finish();
}

/// The Host check parses the host: nothing but `:port` after `]`, one Host
/// header, and no absolute-form target (RFC 9112).
#[test]
fn host_check_parses_the_host() {
    let mut sc = Scenario::new();
    sc.lock(None, "");
    let addr = sc.listen();
    let port = addr.rsplit_once(':').expect("port").1.to_string();
    let request = |target: &str, hosts: &[&str]| {
        let mut r = format!("POST {target} HTTP/1.1\r\nConnection: close\r\n");
        for h in hosts {
            r.push_str(&format!("Host: {h}\r\n"));
        }
        r.push_str(&format!(
            "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\n\r\n{INITIALIZE}",
            INITIALIZE.len()
        ));
        raw(&addr, r.as_bytes(), STEP)
    };
    for host in [
        "[::1]evil.com".to_string(),
        format!("[::1]evil.com:{port}"),
        "[::1]:80evil".to_string(),
        "[::1]:".to_string(),
        format!("localhost:{port}x"),
    ] {
        let a = request("/mcp", &[&host]);
        assert_eq!(a.status, 403, "Host {host}: {a:#?}");
    }
    let a = request("/mcp", &[&format!("[::1]:{port}")]);
    assert_eq!(a.status, 200, "{a:#?}");
    let a = request("/mcp", &[&addr, "evil.example"]);
    assert_eq!(a.status, 400, "two Host headers: {a:#?}");
    let a = request("/mcp", &[&addr, &addr]);
    assert_eq!(a.status, 400, "two Host headers: {a:#?}");
    let a = request(&format!("http://{addr}/mcp"), &[&addr]);
    assert_eq!(a.status, 400, "absolute-form: {a:#?}");
    let a = request("http://evil.example/mcp", &[&addr]);
    assert_eq!(a.status, 400, "absolute-form: {a:#?}");
    sc.finish();
}

/// Invalid UTF-8 is refused the same way by both fronts: a JSON-RPC parse
/// error, nothing forwarded.
#[test]
fn invalid_utf8_is_rejected_by_both_fronts_alike() {
    let mut sc = Scenario::new();
    sc.lock(None, "");
    let mut line =
        br#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"echo","arguments":{"message":"a"#
            .to_vec();
    line.push(0xff);
    line.extend_from_slice(br#"b"}}}"#);

    let addr = sc.listen();
    let session = initialize(&addr);
    let headers = [SSE, ("Mcp-Session-Id", session.as_str())];
    let over_http = post_with(&addr, &headers, &line, STEP);
    assert_eq!(over_http.status, 400, "{over_http:#?}");
    let over_http: Value = serde_json::from_str(&over_http.body).expect("JSON");
    assert_eq!(over_http["error"]["code"], -32700, "{over_http:#}");
    assert_eq!(over_http["id"], Value::Null, "{over_http:#}");

    let mut p = StdioFront::start(&sc);
    p.send(INITIALIZE.as_bytes());
    assert_eq!(p.read(STEP)["id"], 1);
    p.send(&line);
    let over_stdio = p.read(STEP);
    assert_eq!(over_stdio, over_http, "both fronts refuse it alike");
    // Nothing went upstream: the next answer is the ping's.
    p.send(br#"{"jsonrpc":"2.0","id":10,"method":"ping"}"#);
    assert_eq!(
        p.read(STEP),
        json!({"jsonrpc": "2.0", "id": 10, "result": {}})
    );
    p.quit();
    sc.finish();
}
