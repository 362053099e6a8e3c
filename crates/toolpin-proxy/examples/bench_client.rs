//! A minimal MCP client for benchmarks (scripts/bench-proxy): it opens a
//! session, then measures `tools/call` latency one call at a time and
//! throughput with 16 calls in flight, over stdio (a command it starts) or
//! Streamable HTTP (a URL). A raw JSON-RPC client, so that what is measured
//! is the server side, not an SDK.
//!
//! ```text
//! bench_client stdio [--calls N] [--latency-calls N] [--warmup N] [--tool NAME] [--args JSON] -- COMMAND ARGS...
//! bench_client http URL [--calls N] [--latency-calls N] [--warmup N] [--tool NAME] [--args JSON]
//! ```
//! Prints one JSON object: p50/p90/p99/mean latency in ms, throughput in
//! calls/s at 16 concurrent, and for stdio the child's peak RSS (VmHWM).

use std::collections::HashMap;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::{oneshot, Semaphore};

const CONCURRENCY: usize = 16;

type Waiters = Arc<Mutex<HashMap<i64, oneshot::Sender<Value>>>>;

enum Conn {
    Stdio {
        stdin: tokio::sync::Mutex<tokio::process::ChildStdin>,
        waiters: Waiters,
        pid: u32,
    },
    Http {
        client: reqwest::Client,
        url: String,
        session: Mutex<Option<String>>,
    },
}

impl Conn {
    async fn request(&self, id: i64, method: &str, params: Value) -> Result<Value, String> {
        let msg = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        match self {
            Conn::Stdio { stdin, waiters, .. } => {
                let (tx, rx) = oneshot::channel();
                waiters.lock().map_err(|e| e.to_string())?.insert(id, tx);
                let mut line = msg.to_string().into_bytes();
                line.push(b'\n');
                {
                    let mut w = stdin.lock().await;
                    w.write_all(&line).await.map_err(|e| e.to_string())?;
                    w.flush().await.map_err(|e| e.to_string())?;
                }
                tokio::time::timeout(Duration::from_secs(30), rx)
                    .await
                    .map_err(|_| format!("no answer to {method}"))?
                    .map_err(|e| e.to_string())
            }
            Conn::Http {
                client,
                url,
                session,
            } => {
                let mut req = client
                    .post(url.as_str())
                    .header("content-type", "application/json")
                    .header("accept", "application/json, text/event-stream")
                    .header("mcp-protocol-version", "2025-06-18")
                    .body(msg.to_string());
                let sid = session.lock().map_err(|e| e.to_string())?.clone();
                if let Some(s) = sid {
                    req = req.header("mcp-session-id", s);
                }
                let resp = req.send().await.map_err(|e| e.to_string())?;
                if let Some(s) = resp.headers().get("mcp-session-id") {
                    *session.lock().map_err(|e| e.to_string())? =
                        s.to_str().ok().map(str::to_string);
                }
                let sse = resp
                    .headers()
                    .get("content-type")
                    .and_then(|v| v.to_str().ok())
                    .is_some_and(|v| v.starts_with("text/event-stream"));
                let text = resp.text().await.map_err(|e| e.to_string())?;
                if !sse {
                    return serde_json::from_str(&text).map_err(|e| e.to_string());
                }
                for line in text.lines() {
                    if let Some(data) = line.strip_prefix("data:") {
                        let v: Value =
                            serde_json::from_str(data.trim()).map_err(|e| e.to_string())?;
                        if v.get("id") == Some(&json!(id)) {
                            return Ok(v);
                        }
                    }
                }
                Err(format!("no answer to {method} in the event stream"))
            }
        }
    }

    async fn notify(&self, method: &str) -> Result<(), String> {
        let msg = json!({"jsonrpc": "2.0", "method": method});
        match self {
            Conn::Stdio { stdin, .. } => {
                let mut line = msg.to_string().into_bytes();
                line.push(b'\n');
                let mut w = stdin.lock().await;
                w.write_all(&line).await.map_err(|e| e.to_string())?;
                w.flush().await.map_err(|e| e.to_string())
            }
            Conn::Http {
                client,
                url,
                session,
            } => {
                let mut req = client
                    .post(url.as_str())
                    .header("content-type", "application/json")
                    .header("accept", "application/json, text/event-stream")
                    .body(msg.to_string());
                let sid = session.lock().map_err(|e| e.to_string())?.clone();
                if let Some(s) = sid {
                    req = req.header("mcp-session-id", s);
                }
                req.send().await.map_err(|e| e.to_string()).map(|_| ())
            }
        }
    }
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((p / 100.0) * (sorted.len() - 1) as f64).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}

/// CPU time (user + system) the process has used, in ms.
fn cpu_ms(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = stat.rsplit_once(')')?.1;
    let f: Vec<&str> = rest.split_whitespace().collect();
    let (u, s): (f64, f64) = (f.get(11)?.parse().ok()?, f.get(12)?.parse().ok()?);
    // SAFETY: sysconf has no memory effects.
    let tick = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    (tick > 0.0).then(|| (u + s) * 1000.0 / tick)
}

/// The process `pid` and every process below it, with each one's command
/// name, so that the CPU a call costs can be split between client, proxy and
/// server.
fn process_tree(pid: u32) -> Vec<(u32, String)> {
    let mut parents: Vec<(u32, u32, String)> = Vec::new();
    if let Ok(dir) = std::fs::read_dir("/proc") {
        for entry in dir.flatten() {
            let Some(p) = entry
                .file_name()
                .to_str()
                .and_then(|s| s.parse::<u32>().ok())
            else {
                continue;
            };
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{p}/stat")) else {
                continue;
            };
            let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
                continue;
            };
            let comm = stat[open + 1..close].to_string();
            let ppid = stat[close + 1..]
                .split_whitespace()
                .nth(1)
                .and_then(|s| s.parse().ok())
                .unwrap_or(0);
            parents.push((p, ppid, comm));
        }
    }
    let mut tree: Vec<(u32, String)> = parents
        .iter()
        .filter(|(p, _, _)| *p == pid)
        .map(|(p, _, c)| (*p, c.clone()))
        .collect();
    let mut i = 0;
    while i < tree.len() {
        let parent = tree[i].0;
        for (p, pp, c) in &parents {
            if *pp == parent {
                tree.push((*p, c.clone()));
            }
        }
        i += 1;
    }
    tree
}

fn peak_rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

async fn run() -> Result<Value, String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mode = args
        .first()
        .cloned()
        .ok_or("usage: bench_client stdio|http ...")?;
    let mut calls = 2000usize;
    let mut latency_calls = None;
    let mut warmup = 200usize;
    let mut tool = "echo".to_string();
    let mut tool_args = json!({"message": "hello"});
    let mut rest = Vec::new();
    let mut i = 1;
    while i < args.len() {
        match args[i].as_str() {
            "--calls" => {
                calls = args
                    .get(i + 1)
                    .and_then(|s| s.parse().ok())
                    .ok_or("--calls N")?;
                i += 2;
            }
            "--latency-calls" => {
                latency_calls = Some(
                    args.get(i + 1)
                        .and_then(|s| s.parse().ok())
                        .ok_or("--latency-calls N")?,
                );
                i += 2;
            }
            "--warmup" => {
                warmup = args
                    .get(i + 1)
                    .and_then(|s| s.parse().ok())
                    .ok_or("--warmup N")?;
                i += 2;
            }
            "--tool" => {
                tool = args.get(i + 1).cloned().ok_or("--tool NAME")?;
                i += 2;
            }
            "--args" => {
                tool_args = serde_json::from_str(args.get(i + 1).ok_or("--args JSON")?)
                    .map_err(|e| e.to_string())?;
                i += 2;
            }
            "--" => {
                rest.extend(args[i + 1..].iter().cloned());
                break;
            }
            other => {
                rest.push(other.to_string());
                i += 1;
            }
        }
    }
    let mut child = None;
    let conn = match mode.as_str() {
        "stdio" => {
            let (program, argv) = rest
                .split_first()
                .ok_or("stdio: a command is needed after --")?;
            let mut c = tokio::process::Command::new(program)
                .args(argv)
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .kill_on_drop(true)
                .spawn()
                .map_err(|e| format!("cannot start {program}: {e}"))?;
            let stdin = c.stdin.take().ok_or("no stdin")?;
            let stdout = c.stdout.take().ok_or("no stdout")?;
            let pid = c.id().unwrap_or(0);
            let waiters: Waiters = Arc::new(Mutex::new(HashMap::new()));
            let w = Arc::clone(&waiters);
            tokio::spawn(async move {
                let mut lines = BufReader::new(stdout).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    let Ok(v) = serde_json::from_str::<Value>(&line) else {
                        continue;
                    };
                    if let Some(id) = v.get("id").and_then(Value::as_i64) {
                        if v.get("method").is_none() {
                            if let Some(tx) = w.lock().ok().and_then(|mut m| m.remove(&id)) {
                                let _ = tx.send(v);
                            }
                        }
                    }
                }
            });
            child = Some(c);
            Conn::Stdio {
                stdin: tokio::sync::Mutex::new(stdin),
                waiters,
                pid,
            }
        }
        "http" => Conn::Http {
            client: reqwest::Client::builder()
                .pool_max_idle_per_host(64)
                .build()
                .map_err(|e| e.to_string())?,
            url: rest.first().cloned().ok_or("http: a URL is needed")?,
            session: Mutex::new(None),
        },
        other => return Err(format!("unknown mode {other}")),
    };
    let conn = Arc::new(conn);
    let init = conn
        .request(
            0,
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}),
        )
        .await?;
    if init.get("error").is_some() {
        return Err(format!("initialize failed: {init}"));
    }
    conn.notify("notifications/initialized").await?;
    let params = json!({"name": tool, "arguments": tool_args});
    // Warm-up (a JIT-compiled server needs thousands of calls).
    for id in 1..=warmup as i64 {
        conn.request(id, "tools/call", params.clone()).await?;
    }
    let latency_calls = latency_calls.unwrap_or(calls);
    let mut lat = Vec::with_capacity(latency_calls);
    for n in 0..latency_calls {
        let t = Instant::now();
        let r = conn
            .request(1000 + n as i64, "tools/call", params.clone())
            .await?;
        lat.push(t.elapsed().as_secs_f64() * 1000.0);
        if r.get("error").is_some() {
            return Err(format!("call failed: {r}"));
        }
    }
    lat.sort_by(|a, b| a.total_cmp(b));
    let mean = lat.iter().sum::<f64>() / lat.len().max(1) as f64;
    // Throughput: 16 in flight.
    let total = calls * 2;
    let sem = Arc::new(Semaphore::new(CONCURRENCY));
    let cpu_before = match conn.as_ref() {
        Conn::Stdio { pid, .. } => cpu_ms(*pid),
        Conn::Http { .. } => None,
    };
    let tree = match conn.as_ref() {
        Conn::Stdio { pid, .. } => process_tree(*pid),
        Conn::Http { .. } => Vec::new(),
    };
    let tree_before: Vec<Option<f64>> = tree.iter().map(|(p, _)| cpu_ms(*p)).collect();
    let client_before = cpu_ms(std::process::id());
    let t = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for n in 0..total {
        let permit = Arc::clone(&sem)
            .acquire_owned()
            .await
            .map_err(|e| e.to_string())?;
        let c = Arc::clone(&conn);
        let p = params.clone();
        tasks.spawn(async move {
            let r = c.request(1_000_000 + n as i64, "tools/call", p).await;
            drop(permit);
            r
        });
    }
    let mut failed = 0;
    while let Some(r) = tasks.join_next().await {
        if !matches!(r, Ok(Ok(ref v)) if v.get("result").is_some()) {
            failed += 1;
        }
    }
    let throughput = total as f64 / t.elapsed().as_secs_f64();
    let per_call = |before: Option<f64>, after: Option<f64>| match (before, after) {
        (Some(b), Some(a)) => Some((a - b) * 1000.0 / total as f64),
        _ => None,
    };
    // CPU per call of every process involved, while 16 were in flight.
    let mut cpu_us_per_call = serde_json::Map::new();
    cpu_us_per_call.insert(
        "client".into(),
        json!(per_call(client_before, cpu_ms(std::process::id()))),
    );
    for ((p, comm), before) in tree.iter().zip(tree_before) {
        cpu_us_per_call.insert(format!("{comm}[{p}]"), json!(per_call(before, cpu_ms(*p))));
    }
    let rss = match conn.as_ref() {
        Conn::Stdio { pid, .. } => peak_rss_kib(*pid),
        Conn::Http { .. } => None,
    };
    // The server's own CPU per call while 16 were in flight.
    let cpu_per_call_us = match (conn.as_ref(), cpu_before) {
        (Conn::Stdio { pid, .. }, Some(before)) => {
            cpu_ms(*pid).map(|after| (after - before) * 1000.0 / total as f64)
        }
        _ => None,
    };
    drop(child);
    Ok(json!({
        "mode": mode,
        "calls": calls,
        "p50_ms": percentile(&lat, 50.0),
        "p90_ms": percentile(&lat, 90.0),
        "p99_ms": percentile(&lat, 99.0),
        "mean_ms": mean,
        "throughput_16": throughput,
        "failed_concurrent": failed,
        "peak_rss_kib": rss,
        "server_cpu_us_per_call": cpu_per_call_us,
        "cpu_us_per_call": cpu_us_per_call,
    }))
}

fn main() {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
    };
    match runtime.block_on(run()) {
        Ok(v) => println!("{v}"),
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
    }
}
