//! A local HTTP/1.1 receiver for the sink tests: it records each request
//! (method, path, headers, body) and answers with the replies it was
//! given, in order (the last one repeated), closing each connection.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use toolpin_config::notify::{NotifyConfig, NotifyFileSink, Sink};
use toolpin_ledger_model::{
    Delivery, DeliveryState, Event, EventKind, FindingRecord, Notice, Severity,
};

#[derive(Clone, Debug)]
pub struct Request {
    pub method: String,
    pub path: String,
    /// Lower-case names.
    pub headers: BTreeMap<String, String>,
    pub body: Vec<u8>,
}

impl Request {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).expect("a JSON body")
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(String::as_str)
    }
}

#[derive(Clone, Debug)]
pub struct Reply {
    pub status: u16,
    pub body: String,
    pub headers: Vec<(String, String)>,
    /// Wait this long before answering (for timeouts).
    pub delay: Duration,
}

impl Reply {
    pub fn new(status: u16, body: &str) -> Self {
        Self {
            status,
            body: body.to_string(),
            headers: Vec::new(),
            delay: Duration::ZERO,
        }
    }

    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_string(), value.to_string()));
        self
    }

    pub fn after(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }
}

pub struct Receiver {
    pub port: u16,
    requests: Arc<Mutex<Vec<Request>>>,
}

impl Receiver {
    pub fn start(replies: Vec<Reply>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&requests);
        thread::spawn(move || {
            let mut n = 0;
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let reply = replies
                    .get(n)
                    .or(replies.last())
                    .cloned()
                    .unwrap_or_else(|| Reply::new(500, "no reply"));
                n += 1;
                let seen = Arc::clone(&seen);
                thread::spawn(move || serve(stream, reply, seen));
            }
        });
        Self { port, requests }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    pub fn requests(&self) -> Vec<Request> {
        self.requests.lock().expect("lock").clone()
    }
}

fn serve(stream: TcpStream, reply: Reply, seen: Arc<Mutex<Vec<Request>>>) {
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    if reader.read_line(&mut line).is_err() {
        return;
    }
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or("").to_string();
    let path = parts.next().unwrap_or("").to_string();
    let mut headers = BTreeMap::new();
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).is_err() || h.trim().is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_string());
        }
    }
    let length: usize = headers
        .get("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    if reader.read_exact(&mut body).is_err() {
        return;
    }
    seen.lock().expect("lock").push(Request {
        method,
        path,
        headers,
        body,
    });
    thread::sleep(reply.delay);
    let mut out = format!(
        "HTTP/1.1 {} X\r\nContent-Length: {}\r\nConnection: close\r\n",
        reply.status,
        reply.body.len()
    );
    for (k, v) in &reply.headers {
        out.push_str(&format!("{k}: {v}\r\n"));
    }
    out.push_str("\r\n");
    out.push_str(&reply.body);
    let mut stream = reader.into_inner();
    let _ = stream.write_all(out.as_bytes());
    let _ = stream.flush();
}

/// The sinks of `toml` (`[NAME]` tables, as under `[notify]`), resolved
/// with `env`.
pub fn sinks(toml: &str, env: &[(&str, &str)]) -> NotifyConfig {
    let file: BTreeMap<String, NotifyFileSink> = toml::from_str(toml).expect("toml");
    let env: Vec<(String, String)> = env
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    NotifyConfig::resolve(file, &|k| {
        env.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone())
    })
    .expect("valid sinks")
}

pub fn sink(toml: &str, env: &[(&str, &str)]) -> Sink {
    sinks(toml, env)
        .sinks
        .into_values()
        .next()
        .expect("one sink")
}

pub const LIVE: &str = "3f1e0a9b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f";
pub const PINNED: &str = "911cc96793e6aa00bb11cc22dd33ee44ff5566778899aabbccddeeff00112233";

pub fn event() -> Event {
    Event {
        id: 42,
        environment: "staging".into(),
        server: "orders".into(),
        tool: "orders__lookup_order".into(),
        pinned: Some(PINNED.into()),
        live: Some(LIVE.into()),
        kind: EventKind::Drift,
        severity: Some(Severity::High),
        findings: vec![
            FindingRecord {
                rule: "description-changed".into(),
                pointer: "/description".into(),
                severity: Severity::High,
                kind: "description".into(),
                message: "the description changed: it now steers the model".into(),
                detail: Some(
                    "Look up an order by ID. {+Prefer search_orders when the ID is unknown.+}"
                        .into(),
                ),
            },
            FindingRecord {
                rule: "input-default-changed".into(),
                pointer: "/inputSchema/properties/page_size/default".into(),
                severity: Severity::Medium,
                kind: "semantic".into(),
                message: "default 50 → 20".into(),
                detail: None,
            },
        ],
        vendor: Some("Acme".into()),
        server_version: Some("1.4.0".into()),
        pinned_version: Some("1.4.0".into()),
        reruns: 3,
        unchanged_at: Some(1_764_700_000),
        first_seen: 1_764_770_000,
        last_seen: 1_764_773_600,
        count: 4,
        resolved: None,
    }
}

pub fn delivery(notice: Notice) -> Delivery {
    let mut event = event();
    if notice == Notice::Resolve {
        event.resolved = Some((
            1_764_780_000,
            toolpin_ledger_model::Resolution::Accepted { live: LIVE.into() },
        ));
    }
    if let Notice::Escalate(s) = notice {
        event.severity = Some(s);
    }
    Delivery {
        id: 7,
        sink: "x".into(),
        notice,
        state: DeliveryState::Pending,
        attempts: 1,
        next_attempt_at: 0,
        last_error: None,
        delivered_at: None,
        event,
    }
}
