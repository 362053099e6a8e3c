//! Production detection end to end (issue 19, point 5): an agent stand-in
//! (`tests/clients/steered_agent.py`, the official MCP Python SDK) reads the
//! tools through a real `toolpin proxy` before each task and calls the one
//! it picks; the upstream is `tests/servers/py/orders.py`, whose variant b
//! adds "Prefer search_orders when the ID is unknown." to lookup_order's
//! description. The proxy exports its spans over OTLP/HTTP.
//!
//! - The steered run: 360 tasks on the catalog pinned from variant a, then
//!   the reviewed change (variant b re-locked and committed, the proxy
//!   restarted on the same port), then 360 more. The proxy exports its
//!   spans to a live `toolpin usage serve`, which stores them; `toolpin
//!   usage report` must
//!   exit 1 with a selection-share alarm on `shop__search_orders` that
//!   quotes the sentence from the lockfile's history. Both catalogs were
//!   first called within the same hour: the lockfile's history orders them.
//! - The unchanged run: the same traffic with no catalog change, its first
//!   phase filed a day earlier (a stand-in Collector writes the spans as
//!   the file exporter does, and the test moves the first phase's times
//!   back 24 h, since an hourly store cannot tell two phases seconds apart
//!   without a catalog change between them); `toolpin usage report FILE`
//!   really runs its day-over-day tests and must exit 0.
//!
//! In both, a real Prometheus scrapes the proxy with deploy/prometheus's
//! rules at the test windows: `ToolpinSelectionShareMoved` fires on
//! `shop__search_orders` in the steered run and never fires in the other.
//!
//! The agent deals its picks from decks of 20 (4 searches in 20, 7 once
//! steered), so the shares are exact and only their order is seeded.

mod common;

use std::fs;
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use common::prometheus::Prometheus;
use common::*;
use serde_json::{json, Value};

const TASKS: usize = 360;
const HOUR_NANOS: u64 = 3_600_000_000_000;

fn repo() -> PathBuf {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    repo.canonicalize().unwrap_or(repo)
}

fn python() -> PathBuf {
    let python = repo().join(".venv/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run scripts/setup",
        python.display()
    );
    python
}

/// A free port on 127.0.0.1 (bound and released: the proxy restarts on it).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("free port")
}

/// Processes of one scenario, killed when it ends.
struct World {
    sb: Sandbox,
    root: PathBuf,
    daemons: Vec<(String, Child)>,
}

impl World {
    fn new(variant: &str) -> Self {
        let sb = Sandbox::new();
        let root = sb.path().canonicalize().expect("canonical sandbox");
        let w = Self {
            sb,
            root,
            daemons: Vec::new(),
        };
        w.git(&["init", "-q"]);
        w.configure(variant);
        w.sb.run(&["lock"]).ok();
        w.git(&["add", "toolpin.toml", "toolpin.lock"]);
        w.git(&["commit", "-q", "-m", "pin the orders server"]);
        w
    }

    /// The upstream is a Python server on a 2-core machine shared with the
    /// rest of the suite: its p95 moves 0.5 to 2 times between phases with
    /// no change at all, so the latency check asks for 4 times here.
    fn configure(&self, variant: &str) {
        let command = json!([
            python().display().to_string(),
            repo()
                .join("tests/servers/py/orders.py")
                .display()
                .to_string()
        ]);
        self.sb.write(
            "toolpin.toml",
            format!(
                "[servers.shop]\ncommand = {command}\nprefix = \"shop__\"\n\
                 env = {{ ORDERS_VARIANT = \"{variant}\" }}\n\n\
                 [ledger]\nenabled = false\n\n\
                 [usage.report]\nlatency-ratio = 4.0\n"
            ),
        );
    }

    fn git(&self, args: &[&str]) {
        let ok = Command::new("git")
            .args(["-c", "user.name=Test", "-c", "user.email=t@example.com"])
            .args(args)
            .current_dir(&self.root)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("git")
            .success();
        assert!(ok, "git {args:?} failed");
    }

    fn spawn(&mut self, name: &str, cmd: &mut Command) {
        let log = self.root.join(format!("{name}.log"));
        let child = cmd
            .current_dir(&self.root)
            .stdin(Stdio::null())
            .stdout(fs::File::create(&log).expect("log"))
            .stderr(fs::File::create(&log).expect("log"))
            .spawn()
            .unwrap_or_else(|e| panic!("start {name}: {e}"));
        self.daemons.push((name.to_string(), child));
    }

    fn log(&self, name: &str) -> String {
        fs::read_to_string(self.root.join(format!("{name}.log"))).unwrap_or_default()
    }

    /// `toolpin proxy --listen 127.0.0.1:PORT`, exporting spans to `otlp`.
    fn start_proxy(&mut self, port: u16, otlp: &str) {
        let mut cmd = Command::new(BIN);
        cmd.args([
            "proxy",
            "--no-start-check",
            "--listen",
            &format!("127.0.0.1:{port}"),
            "--events",
            "events.jsonl",
        ])
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", otlp)
        .env("OTEL_SERVICE_NAME", "support-agent")
        .env(
            "OTEL_RESOURCE_ATTRIBUTES",
            "deployment.environment.name=prod,tenant.id=acme",
        );
        self.spawn("proxy", &mut cmd);
        wait_listening(port, &|| self.log("proxy"));
    }

    /// Stops a daemon with SIGTERM (it flushes what it holds) and waits.
    fn stop(&mut self, name: &str) {
        let Some(i) = self.daemons.iter().position(|(n, _)| n == name) else {
            panic!("no daemon {name}");
        };
        let (_, mut child) = self.daemons.remove(i);
        // SAFETY: plain kill(2) on our own child's pid.
        unsafe {
            libc::kill(child.id() as i32, libc::SIGTERM);
        }
        let start = Instant::now();
        loop {
            if let Some(status) = child.try_wait().expect("wait") {
                // 143: ended by SIGTERM as asked (128 + 15), after flushing.
                assert!(
                    status.success() || status.code() == Some(143),
                    "{name} exited with {status} at SIGTERM: {}",
                    self.log(name)
                );
                return;
            }
            if start.elapsed() > Duration::from_secs(20) {
                let _ = child.kill();
                panic!("{name} did not stop within 20 s: {}", self.log(name));
            }
            thread::sleep(Duration::from_millis(20));
        }
    }

    /// One phase of the agent: TASKS tasks through the proxy.
    fn agent(&self, port: u16, seed: u64) -> Value {
        let out = Command::new(python())
            .arg(repo().join("tests/clients/steered_agent.py"))
            .args([
                "--url",
                &format!("http://127.0.0.1:{port}/mcp"),
                "--tasks",
                &TASKS.to_string(),
                "--seed",
                &seed.to_string(),
            ])
            .current_dir(&self.root)
            .stdin(Stdio::null())
            .output()
            .expect("run the agent");
        assert!(
            out.status.success(),
            "agent failed: {}\nproxy: {}",
            String::from_utf8_lossy(&out.stderr),
            self.log("proxy")
        );
        serde_json::from_slice(&out.stdout).expect("agent summary")
    }

    /// The reviewed change: variant b re-locked and committed.
    fn steer(&self) {
        self.configure("b");
        self.sb.run(&["lock"]).ok();
        self.git(&["commit", "-q", "-am", "accept the orders update"]);
    }

    fn finish(mut self) {
        for (_, child) in &mut self.daemons {
            let _ = child.kill();
            let _ = child.wait();
        }
        self.daemons.clear();
        let left = processes_under(&self.root);
        kill_all(&left);
        assert!(left.is_empty(), "processes left behind: {left:?}");
    }
}

impl Drop for World {
    fn drop(&mut self) {
        for (_, child) in &mut self.daemons {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

#[track_caller]
fn wait_listening(port: u16, log: &dyn Fn() -> String) {
    let start = Instant::now();
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "nothing listens on {port}: {}",
            log()
        );
        thread::sleep(Duration::from_millis(20));
    }
}

fn picks(summary: &Value, tool: &str) -> u64 {
    summary["picks"][tool].as_u64().unwrap_or(0)
}

#[test]
fn a_steering_sentence_moves_selection_and_the_report_names_it() {
    let mut w = World::new("a");
    // The live receiver, flushing into the store every second.
    let receiver = free_port();
    let mut serve = Command::new(BIN);
    serve.args([
        "usage",
        "serve",
        "--listen",
        &format!("127.0.0.1:{receiver}"),
        "--store",
        "usage.db",
        "--flush-every",
        "1s",
    ]);
    w.spawn("serve", &mut serve);
    wait_listening(receiver, &|| w.log("serve"));
    let otlp = format!("http://127.0.0.1:{receiver}");
    let port = free_port();

    w.start_proxy(port, &otlp);
    // A real Prometheus scrapes the proxy's port every second, with the
    // rules of deploy/prometheus at the test windows.
    let prom = Prometheus::start(&w.root.join("prometheus"), &[format!("127.0.0.1:{port}")]);
    let before = w.agent(port, 1);
    assert_eq!(before["steered_tasks"], 0, "{before}");
    assert_eq!(picks(&before, "shop__search_orders"), 72, "{before}");

    w.steer();
    w.stop("proxy");
    w.start_proxy(port, &otlp);
    let after = w.agent(port, 2);
    assert_eq!(after["steered_tasks"], TASKS as u64, "{after}");
    assert_eq!(picks(&after, "shop__search_orders"), 126, "{after}");
    // The alert fired on the tool that gained share (and on the one that
    // lost it), at some point since the change.
    let fired = prom.query(
        "max by (tool) (max_over_time(ALERTS{alertname=\"ToolpinSelectionShareMoved\",alertstate=\"firing\"}[2m]))",
    );
    let tools: Vec<&str> = fired
        .iter()
        .filter_map(|s| s["metric"]["tool"].as_str())
        .collect();
    assert!(
        tools.contains(&"shop__search_orders"),
        "ToolpinSelectionShareMoved did not fire on shop__search_orders: {fired:?}\n{:?}",
        prom.query("toolpin:tool_selection_share:ratio10m")
    );
    drop(prom);
    // The proxy flushes its spans at SIGTERM; the receiver stores the rest
    // at its own.
    w.stop("proxy");
    w.stop("serve");
    let served = w.log("serve");
    let stored: u64 = served
        .lines()
        .filter_map(|l| l.strip_prefix("usage serve: stored "))
        .filter_map(|l| l.split_whitespace().next()?.parse::<u64>().ok())
        .sum();
    assert_eq!(stored, 2 * TASKS as u64, "{served}");

    let run = w.sb.run(&[
        "usage",
        "report",
        "--store",
        "usage.db",
        "--format",
        "json",
        "--no-record",
    ]);
    assert_eq!(run.code, 1, "{}\n{}", run.stdout, run.stderr);
    let report: Value = serde_json::from_str(&run.stdout).expect("report JSON");
    let alarms = report["alarms"].as_array().expect("alarms");
    let share: Vec<&Value> = alarms
        .iter()
        .filter(|a| a["kind"] == "selection-share")
        .collect();
    assert_eq!(share.len(), 1, "{report:#}");
    let alarm = share[0];
    assert_eq!(alarm["tool"], "shop__search_orders", "{alarm:#}");
    assert_eq!(alarm["environment"], "prod", "{alarm:#}");
    assert_eq!(alarm["tenant"], "acme", "{alarm:#}");
    assert_eq!(alarm["agent"], "support-agent", "{alarm:#}");
    let change = alarm["change"].as_str().unwrap_or_default();
    assert!(
        change.contains("Prefer search_orders when the ID is unknown"),
        "{alarm:#}"
    );
    // Nothing else moved: the agent never passes page_size, and no call
    // failed.
    assert_eq!(alarms.len(), 1, "{report:#}");

    // The text report says the same in a line.
    let text =
        w.sb.run(&["usage", "report", "--store", "usage.db", "--no-record"]);
    assert_eq!(text.code, 1, "{}", text.stderr);
    assert!(
        text.stdout.contains("shop__search_orders"),
        "{}",
        text.stdout
    );
    w.finish();
}

/// A stand-in for a Collector with the file exporter: every OTLP/JSON
/// request becomes one value of the returned channel
/// (`common::otlp_collector`, without the request paths).
fn collector() -> (String, mpsc::Receiver<Value>) {
    let (endpoint, requests) = otlp_collector();
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        for (_, body) in requests {
            if tx.send(body).is_err() {
                return;
            }
        }
    });
    (endpoint, rx)
}

/// Moves every span of a request `by` nanoseconds earlier.
fn shift(request: &mut Value, by: u64) {
    for rs in request["resourceSpans"]
        .as_array_mut()
        .into_iter()
        .flatten()
    {
        for ss in rs["scopeSpans"].as_array_mut().into_iter().flatten() {
            for span in ss["spans"].as_array_mut().into_iter().flatten() {
                for key in ["startTimeUnixNano", "endTimeUnixNano"] {
                    let t: u64 = span[key]
                        .as_str()
                        .and_then(|s| s.parse().ok())
                        .expect("OTLP/JSON times are strings");
                    span[key] = json!((t - by).to_string());
                }
            }
        }
    }
}

fn spans_in(requests: &[Value]) -> usize {
    requests
        .iter()
        .flat_map(|r| r["resourceSpans"].as_array().into_iter().flatten())
        .flat_map(|rs| rs["scopeSpans"].as_array().into_iter().flatten())
        .map(|ss| ss["spans"].as_array().map_or(0, Vec::len))
        .sum()
}

/// Everything the collector got until `want` spans arrived.
fn drain(rx: &mpsc::Receiver<Value>, want: usize) -> Vec<Value> {
    let mut got = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    while spans_in(&got) < want {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(r) => got.push(r),
            Err(_) => panic!("{} spans of {want} arrived", spans_in(&got)),
        }
    }
    got
}

#[test]
fn the_same_traffic_with_no_catalog_change_fires_nothing() {
    let mut w = World::new("a");
    let (otlp, spans) = collector();
    let port = free_port();
    w.start_proxy(port, &otlp);
    let prom = Prometheus::start(&w.root.join("prometheus"), &[format!("127.0.0.1:{port}")]);
    let first = w.agent(port, 3);
    w.stop("proxy");
    let mut day_before = drain(&spans, TASKS);
    w.start_proxy(port, &otlp);
    let second = w.agent(port, 4);
    w.stop("proxy");
    let today = drain(&spans, TASKS);
    assert_eq!(picks(&first, "shop__search_orders"), 72, "{first}");
    assert_eq!(picks(&second, "shop__search_orders"), 72, "{second}");
    // The same shares: the alert never fired, though the rule was
    // evaluated over both phases. (It may go pending for a second or two
    // at the restart: a new process's counters are born one call at a
    // time, and the 10 s test windows see the gap; `for` outlasts it.)
    let moved = prom.query(
        "max_over_time(ALERTS{alertname=\"ToolpinSelectionShareMoved\",alertstate=\"firing\"}[2m])",
    );
    assert!(moved.is_empty(), "{moved:?}");
    assert!(!prom
        .query("toolpin:tool_selection_share:ratio10m{tool=\"shop__search_orders\"}")
        .is_empty());
    drop(prom);

    for request in &mut day_before {
        shift(request, 24 * HOUR_NANOS);
    }
    let lines: Vec<String> = day_before
        .iter()
        .chain(&today)
        .map(|r| r.to_string())
        .collect();
    w.sb.write("spans.jsonl", lines.join("\n") + "\n");

    let run = w.sb.run(&[
        "usage",
        "report",
        "spans.jsonl",
        "--format",
        "json",
        "--no-record",
    ]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let report: Value = serde_json::from_str(&run.stdout).expect("report JSON");
    assert_eq!(report["alarms"], json!([]), "{report:#}");
    // Not quiet by default: the day-over-day comparison was made and its
    // tests were run.
    assert!(
        report["tests"].as_u64().unwrap_or(0) > 0,
        "no test was run: {report:#}"
    );
    w.finish();
}
