//! A load generator for `toolpin proxy`'s Streamable HTTP front
//! (scripts/bench-load): many concurrent clients, each numbering its own
//! JSON-RPC ids from 1 as real clients do, calling server-everything's
//! `echo` with a message that names the client and the call, and now and
//! then a short `trigger-long-running-operation`, for a fixed time.
//!
//! An answer whose echo names another client or call is *misrouted*; a
//! call with no answer (transport error, HTTP error, no answer in the
//! stream, past the deadline) is *lost*. Some clients open a session
//! (`initialize`, `Mcp-Session-Id`), the others speak the stateless
//! 2026-07-28 revision (protocol version in `_meta`, no session), which is
//! where answers used to cross between clients.
//!
//! ```text
//! load_client URL [--clients 200] [--sessions 10] [--seconds 30] [--long-every 20]
//! ```
//! Prints one JSON object: calls, answered, lost, misrouted, HTTP errors by
//! status, and p50/p99/max latency of the echo calls in ms.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

const STATELESS: &str = "2026-07-28";
const STATEFUL: &str = "2025-06-18";

#[derive(Default)]
struct Tally {
    calls: AtomicU64,
    answered: AtomicU64,
    lost: AtomicU64,
    misrouted: AtomicU64,
    http_errors: Mutex<BTreeMap<String, u64>>,
    /// Echo latencies in microseconds.
    latencies: Mutex<Vec<u64>>,
    /// The first few problems, for the reader.
    samples: Mutex<Vec<String>>,
}

impl Tally {
    fn note(&self, what: String) {
        if let Ok(mut s) = self.samples.lock() {
            if s.len() < 5 {
                s.push(what);
            }
        }
    }
}

struct Options {
    url: String,
    clients: usize,
    sessions: usize,
    seconds: u64,
    long_every: u64,
}

fn parse_args() -> Result<Options, String> {
    let mut args = std::env::args().skip(1);
    let url = args.next().ok_or(
        "usage: load_client URL [--clients N] [--sessions N] [--seconds N] [--long-every N]",
    )?;
    let mut o = Options {
        url,
        clients: 200,
        sessions: 10,
        seconds: 30,
        long_every: 20,
    };
    while let Some(flag) = args.next() {
        let value = args.next().ok_or(format!("{flag} needs a value"))?;
        let n: u64 = value
            .parse()
            .map_err(|_| format!("{flag}: not a number: {value}"))?;
        match flag.as_str() {
            "--clients" => o.clients = n as usize,
            "--sessions" => o.sessions = n as usize,
            "--seconds" => o.seconds = n,
            "--long-every" => o.long_every = n.max(1),
            _ => return Err(format!("unknown flag {flag}")),
        }
    }
    Ok(o)
}

/// One POST; the JSON-RPC answer to `id`, read from a JSON body or from the
/// event stream.
async fn post(
    http: &reqwest::Client,
    url: &str,
    session: Option<&str>,
    version: &str,
    body: &Value,
    id: Option<u64>,
) -> Result<(Option<Value>, Option<String>), String> {
    let mut req = http
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", version)
        .body(body.to_string());
    if let Some(s) = session {
        req = req.header("mcp-session-id", s);
    }
    let resp = req.send().await.map_err(|e| format!("send: {e}"))?;
    let status = resp.status();
    let sid = resp
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    if !status.is_success() {
        return Err(format!("HTTP {}", status.as_u16()));
    }
    let Some(id) = id else {
        return Ok((None, sid));
    };
    let text = resp.text().await.map_err(|e| format!("read: {e}"))?;
    if let Ok(v) = serde_json::from_str::<Value>(&text) {
        return Ok((Some(v), sid));
    }
    for line in text.lines() {
        if let Some(data) = line.strip_prefix("data:") {
            if let Ok(v) = serde_json::from_str::<Value>(data.trim()) {
                if v.get("id") == Some(&json!(id)) {
                    return Ok((Some(v), sid));
                }
            }
        }
    }
    Err("no answer in the event stream".into())
}

fn echoed_text(answer: &Value) -> Option<&str> {
    answer
        .pointer("/result/content/0/text")
        .and_then(Value::as_str)
}

async fn client(n: usize, stateful: bool, o: Arc<Options>, tally: Arc<Tally>, until: Instant) {
    let http = match reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
    {
        Ok(c) => c,
        Err(e) => {
            tally.note(format!("client {n}: {e}"));
            return;
        }
    };
    let version = if stateful { STATEFUL } else { STATELESS };
    let mut session = None;
    let mut id = 1u64;
    if stateful {
        let init = json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
            "protocolVersion": STATEFUL, "capabilities": {},
            "clientInfo": {"name": "load_client", "version": "1"}}});
        id += 1;
        match post(&http, &o.url, None, version, &init, Some(1)).await {
            Ok((_, sid)) => session = sid,
            Err(e) => {
                tally.note(format!("client {n} initialize: {e}"));
                return;
            }
        }
        let done = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        if let Err(e) = post(&http, &o.url, session.as_deref(), version, &done, None).await {
            tally.note(format!("client {n} initialized: {e}"));
            return;
        }
    }
    let mut k = 0u64;
    while Instant::now() < until {
        k += 1;
        let long = k % o.long_every == 0;
        let expected = format!("Echo: client {n} call {k}");
        // Unique per client, so that a long answer crossing to another
        // client shows in its text too.
        let long_duration = (200 + n) as f64 / 1000.0;
        let long_expected = format!("Duration: {long_duration} seconds");
        let mut params = if long {
            json!({"name": "trigger-long-running-operation", "arguments": {"duration": long_duration, "steps": 2}})
        } else {
            json!({"name": "echo", "arguments": {"message": format!("client {n} call {k}")}})
        };
        if !stateful {
            params["_meta"] = json!({"io.modelcontextprotocol/protocolVersion": STATELESS});
        }
        let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params});
        tally.calls.fetch_add(1, Ordering::Relaxed);
        let started = Instant::now();
        let outcome = post(&http, &o.url, session.as_deref(), version, &call, Some(id)).await;
        let took = started.elapsed();
        id += 1;
        match outcome {
            Ok((Some(answer), _)) => {
                tally.answered.fetch_add(1, Ordering::Relaxed);
                let text = echoed_text(&answer);
                let right = if long {
                    text.is_some_and(|t| t.contains(&long_expected))
                } else {
                    text == Some(expected.as_str())
                };
                if !right {
                    tally.misrouted.fetch_add(1, Ordering::Relaxed);
                    tally.note(format!(
                        "client {n} call {k}: got {}",
                        answer.to_string().chars().take(200).collect::<String>()
                    ));
                } else if !long {
                    if let Ok(mut l) = tally.latencies.lock() {
                        l.push(took.as_micros() as u64);
                    }
                }
            }
            Ok((None, _)) => {
                tally.lost.fetch_add(1, Ordering::Relaxed);
            }
            Err(e) => {
                tally.lost.fetch_add(1, Ordering::Relaxed);
                if let Some(status) = e.strip_prefix("HTTP ") {
                    if let Ok(mut m) = tally.http_errors.lock() {
                        *m.entry(status.to_string()).or_default() += 1;
                    }
                }
                tally.note(format!("client {n} call {k}: {e}"));
            }
        }
    }
    if let Some(s) = session {
        let _ = http
            .delete(o.url.as_str())
            .header("mcp-session-id", s)
            .send()
            .await;
    }
}

fn percentile_ms(sorted: &[u64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((p / 100.0) * (sorted.len() - 1) as f64).round() as usize;
    sorted[rank.min(sorted.len() - 1)] as f64 / 1000.0
}

async fn run() -> Result<Value, String> {
    let o = Arc::new(parse_args()?);
    let tally = Arc::new(Tally::default());
    let until = Instant::now() + Duration::from_secs(o.seconds);
    let mut tasks = Vec::new();
    for n in 0..o.clients {
        let stateful = n < o.sessions;
        tasks.push(tokio::spawn(client(
            n,
            stateful,
            o.clone(),
            tally.clone(),
            until,
        )));
    }
    for t in tasks {
        t.await.map_err(|e| e.to_string())?;
    }
    let mut lat = tally.latencies.lock().map_err(|e| e.to_string())?.clone();
    lat.sort_unstable();
    let errors = tally.http_errors.lock().map_err(|e| e.to_string())?.clone();
    let samples = tally.samples.lock().map_err(|e| e.to_string())?.clone();
    Ok(json!({
        "clients": o.clients,
        "sessions": o.sessions,
        "seconds": o.seconds,
        "calls": tally.calls.load(Ordering::Relaxed),
        "answered": tally.answered.load(Ordering::Relaxed),
        "lost": tally.lost.load(Ordering::Relaxed),
        "misrouted": tally.misrouted.load(Ordering::Relaxed),
        "http_errors": errors,
        "echo_p50_ms": percentile_ms(&lat, 50.0),
        "echo_p99_ms": percentile_ms(&lat, 99.0),
        "echo_max_ms": percentile_ms(&lat, 100.0),
        "samples": samples,
    }))
}

fn main() {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("load_client: {e}");
            std::process::exit(2);
        }
    };
    match runtime.block_on(run()) {
        Ok(report) => println!("{report}"),
        Err(e) => {
            eprintln!("load_client: {e}");
            std::process::exit(2);
        }
    }
}
