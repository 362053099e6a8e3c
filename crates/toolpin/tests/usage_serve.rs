//! `toolpin usage serve` under attack (issue 32, faults 7, 8 and 9): what
//! an exporter can make the receiver hold, run against the real binary on
//! loopback. Small bodies that inflate into millions of spans, silent
//! connections under a lowered descriptor limit, bodies that never end,
//! and a store on a "full disk" (the store's file size limited with
//! RLIMIT_FSIZE) while exports keep coming. Each attack is bounded in count
//! and time; memory is the server's peak resident set (VmHWM), CPU its
//! utime + stime, both from /proc. scripts/bench-usage-serve runs the same
//! attacks at the issue's scale, before and after, for
//! docs/performance.md.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use common::{Sandbox, BIN};

const MIB: usize = 1 << 20;

/// Resource limits the server starts under.
#[derive(Clone, Copy, Default)]
struct Limits {
    /// RLIMIT_NOFILE, soft and hard.
    nofile: Option<u64>,
    /// SIGXFSZ ignored, so that a write past RLIMIT_FSIZE (set later by
    /// [`Serve::disk`]) fails with EFBIG, as on a full disk, instead of
    /// killing the server.
    full_disk: bool,
}

/// `toolpin usage serve` in a sandbox, its stderr collected.
struct Serve {
    child: Child,
    addr: String,
    log: Arc<Mutex<String>>,
}

impl Serve {
    fn start(sb: &Sandbox, extra: &[&str], limits: Limits) -> Self {
        let mut cmd = Command::new(BIN);
        cmd.args([
            "usage",
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--store",
            "u.db",
            "--flush-every",
            "1s",
        ])
        .args(extra)
        .current_dir(sb.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
        // SAFETY: between fork and exec, only setrlimit(2) and signal(2),
        // which are async-signal-safe, on the child's own limits.
        unsafe {
            cmd.pre_exec(move || {
                if let Some(n) = limits.nofile {
                    let l = libc::rlimit {
                        rlim_cur: n,
                        rlim_max: n,
                    };
                    if libc::setrlimit(libc::RLIMIT_NOFILE, &l) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                if limits.full_disk {
                    libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
                }
                Ok(())
            });
        }
        let mut child = cmd.spawn().expect("start usage serve");
        let stderr = child.stderr.take().expect("stderr");
        let log = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = mpsc::channel();
        let collected = Arc::clone(&log);
        thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if let Some(url) = line.split_whitespace().find(|w| w.starts_with("http://")) {
                    let _ = tx.send(url.trim_start_matches("http://").to_string());
                }
                if let Ok(mut l) = collected.lock() {
                    l.push_str(&line);
                    l.push('\n');
                }
            }
        });
        let addr = match rx.recv_timeout(Duration::from_secs(30)) {
            Ok(addr) => addr,
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "usage serve did not start: {}",
                    log.lock().map(|l| l.clone()).unwrap_or_default()
                );
            }
        };
        Self { child, addr, log }
    }

    fn status_kib(&self, key: &str) -> u64 {
        let text = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .expect("/proc status");
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{key}:")))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .unwrap_or_else(|| panic!("no {key} in /proc status"))
    }

    /// Peak resident memory so far, in MiB.
    fn peak_mib(&self) -> u64 {
        self.status_kib("VmHWM") / 1024
    }

    /// CPU time used so far (user + system).
    fn cpu(&self) -> Duration {
        common::process_cpu(self.child.id())
    }

    fn log(&self) -> String {
        self.log.lock().map(|l| l.clone()).unwrap_or_default()
    }

    fn wait_log(&self, needle: &str, limit: Duration) -> String {
        let start = Instant::now();
        loop {
            let log = self.log();
            if log.contains(needle) {
                return log;
            }
            assert!(
                start.elapsed() < limit,
                "no {needle:?} in {limit:?}; the log:\n{log}"
            );
            thread::sleep(Duration::from_millis(50));
        }
    }

    /// Sets RLIMIT_FSIZE: with `Some(4096)` no file can grow past its
    /// first page (the store, opened, cannot write a transaction); `None`:
    /// the disk has room again.
    fn disk(&self, limit: Option<u64>) {
        let l = libc::rlimit {
            rlim_cur: limit.unwrap_or(libc::RLIM_INFINITY),
            rlim_max: libc::RLIM_INFINITY,
        };
        // SAFETY: prlimit(2) on our own child's limits.
        let r = unsafe {
            libc::prlimit(
                self.child.id() as libc::pid_t,
                libc::RLIMIT_FSIZE,
                &l,
                std::ptr::null_mut(),
            )
        };
        assert_eq!(r, 0, "prlimit: {}", std::io::Error::last_os_error());
    }

    /// SIGTERM (the rest is stored), and the whole log.
    fn stop(mut self) -> String {
        // SAFETY: kill(2) on our own child.
        unsafe {
            libc::kill(self.child.id() as i32, libc::SIGTERM);
        }
        let start = Instant::now();
        let status = loop {
            if let Some(s) = self.child.try_wait().expect("wait") {
                break s;
            }
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "no exit on SIGTERM"
            );
            thread::sleep(Duration::from_millis(20));
        };
        thread::sleep(Duration::from_millis(100));
        let log = self.log();
        assert!(status.success(), "{status}: {log}");
        log
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The sum of the counts the log's lines give before `what` (a count is
/// reported once per flush, so five may come as 3 and 2).
fn counted(log: &str, what: &str) -> u64 {
    log.lines()
        .filter_map(|l| l.split_once(what))
        .filter_map(|(before, _)| before.rsplit([' ', ':', ';']).nth(1)?.parse::<u64>().ok())
        .sum()
}

/// An answer read off a raw HTTP/1.1 connection.
#[derive(Debug)]
struct Answer {
    status: u16,
    head: String,
    body: String,
}

fn read_answer(stream: &mut TcpStream) -> std::io::Result<Answer> {
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw)?;
    let text = String::from_utf8_lossy(&raw).to_string();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    Ok(Answer {
        status,
        head: head.to_ascii_lowercase(),
        body: body.to_string(),
    })
}

/// POST /v1/traces, the connection closed after the answer.
fn post(addr: &str, content_type: &str, gzip: bool, body: &[u8]) -> std::io::Result<Answer> {
    let mut s = TcpStream::connect(addr)?;
    s.set_read_timeout(Some(Duration::from_secs(30)))?;
    let head = format!(
        "POST /v1/traces HTTP/1.1\r\nHost: {addr}\r\nContent-Type: {content_type}\r\n{}Content-Length: {}\r\nConnection: close\r\n\r\n",
        if gzip { "Content-Encoding: gzip\r\n" } else { "" },
        body.len()
    );
    s.write_all(head.as_bytes())?;
    s.write_all(body)?;
    read_answer(&mut s)
}

// ---------------------------------------------------------------------------
// bodies

fn varint(out: &mut Vec<u8>, mut v: u64) {
    loop {
        let b = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(b);
            return;
        }
        out.push(b | 0x80);
    }
}

fn field(number: u64, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(payload.len() + 12);
    varint(&mut out, number << 3 | 2);
    varint(&mut out, payload.len() as u64);
    out.extend_from_slice(payload);
    out
}

/// An `ExportTraceServiceRequest` of about `bytes` bytes: one resource,
/// one scope, and 2-byte empty spans.
fn empty_spans_protobuf(bytes: usize) -> Vec<u8> {
    let scope = b"\x12\x00".repeat((bytes - 16) / 2);
    field(1, &field(2, &scope))
}

/// The same in OTLP/JSON: `{"resourceSpans":[{"scopeSpans":[{"spans":[{},{},…]}]}]}`.
fn empty_spans_json(bytes: usize) -> Vec<u8> {
    let mut out = br#"{"resourceSpans":[{"scopeSpans":[{"spans":[{}"#.to_vec();
    while out.len() < bytes - 8 {
        out.extend_from_slice(b",{}");
    }
    out.extend_from_slice(b"]}]}]}");
    out
}

fn kv(key: &str, value: &str) -> Vec<u8> {
    let mut out = field(1, key.as_bytes());
    out.extend(field(2, &field(1, value.as_bytes())));
    out
}

/// A tool-call span (protobuf), `nanos` long.
fn call_span(tool: &str, tenant: &str, start: u64, nanos: u64) -> Vec<u8> {
    let mut span = field(2, &[1; 8]);
    span.push(0x39); // start_time_unix_nano, fixed64
    span.extend_from_slice(&start.to_le_bytes());
    span.push(0x41); // end_time_unix_nano, fixed64
    span.extend_from_slice(&(start + nanos).to_le_bytes());
    for a in [
        kv("gen_ai.operation.name", "execute_tool"),
        kv("gen_ai.tool.name", tool),
        kv("tenant.id", tenant),
    ] {
        span.extend(field(9, &a));
    }
    span
}

/// An export of `spans` (protobuf).
fn export(spans: &[Vec<u8>]) -> Vec<u8> {
    let scope: Vec<u8> = spans.iter().flat_map(|s| field(2, s)).collect();
    field(1, &field(2, &scope))
}

fn now_nanos() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

const HOUR: u64 = 3_600_000_000_000;

/// gzip with Python's standard library (the venv scripts/setup installs).
fn gzip(sb: &Sandbox, data: &[u8]) -> Vec<u8> {
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let python = repo.join(".venv/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run scripts/setup",
        python.display()
    );
    sb.write("plain.bin", data);
    let out = Command::new(python)
        .args([
            "-c",
            "import gzip, sys; open(sys.argv[2], 'wb').write(gzip.compress(open(sys.argv[1], 'rb').read(), 9))",
        ])
        .arg(sb.join("plain.bin"))
        .arg(sb.join("body.gz"))
        .output()
        .expect("python");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    sb.read("body.gz")
}

/// Posts each body on a thread of its own, all at once.
fn at_once(addr: &str, bodies: Vec<(&'static str, bool, Arc<Vec<u8>>)>) -> Vec<Answer> {
    let handles: Vec<_> = bodies
        .into_iter()
        .map(|(kind, gz, body)| {
            let addr = addr.to_string();
            thread::spawn(move || post(&addr, kind, gz, &body).expect("post"))
        })
        .collect();
    handles
        .into_iter()
        .map(|h| h.join().expect("poster"))
        .collect()
}

// ---------------------------------------------------------------------------
// fault 7: small bodies, large work

/// A 16 KB gzip export that inflates to 16 MiB of 8 million empty spans,
/// four at once, and then 8 MiB bodies of empty spans in both encodings,
/// four at once: the server's peak memory stays near its idle size
/// (before: 742 MB for one gzip body, 5.8 GB for eight; ~1.3 GB here),
/// and an ordinary export is still stored.
#[test]
fn small_bodies_do_not_amplify_into_gigabytes() {
    let sb = Sandbox::new();
    let serve = Serve::start(&sb, &[], Limits::default());
    let idle = serve.peak_mib();

    let zipped = Arc::new(gzip(&sb, &empty_spans_protobuf(16 * MIB)));
    assert!(zipped.len() < 20_000, "{}", zipped.len());
    let answers = at_once(
        &serve.addr,
        (0..4)
            .map(|_| ("application/x-protobuf", true, Arc::clone(&zipped)))
            .collect(),
    );
    let after_gzip = serve.peak_mib();
    assert!(
        after_gzip < idle + 96,
        "peak {after_gzip} MiB (idle {idle} MiB) after four 16 KB bodies"
    );
    for a in &answers {
        assert_eq!(a.status, 413, "{a:?}");
        assert!(a.body.contains("inflates more than 100 times"), "{a:?}");
    }

    // Sent as they are, the spans are read one at a time and cost nothing
    // to hold: every body is taken.
    let proto = Arc::new(empty_spans_protobuf(8 * MIB));
    let json = Arc::new(empty_spans_json(8 * MIB));
    let answers = at_once(
        &serve.addr,
        vec![
            ("application/x-protobuf", false, Arc::clone(&proto)),
            ("application/json", false, Arc::clone(&json)),
            ("application/x-protobuf", false, proto),
            ("application/json", false, json),
        ],
    );
    for a in &answers {
        assert_eq!(a.status, 200, "{a:?}");
    }
    let peak = serve.peak_mib();
    assert!(
        peak < idle + 96,
        "peak {peak} MiB (idle {idle} MiB, {after_gzip} MiB after the gzip bodies)"
    );

    let start = now_nanos() - 60_000_000_000;
    let ordinary = export(&[call_span("search_orders", "acme", start, 2_000_000)]);
    assert_eq!(
        post(&serve.addr, "application/x-protobuf", false, &ordinary)
            .expect("post")
            .status,
        200
    );
    let log = serve.stop();
    assert!(log.contains("stored 1 call under 1 key"), "{log}");
}

// ---------------------------------------------------------------------------
// fault 8: connections

/// Under a 64-descriptor limit, 100 connections that send nothing: the
/// server neither spins on EMFILE nor locks an exporter out (before: a
/// core's worth of CPU, and the export timed out).
#[test]
fn silent_connections_under_a_descriptor_limit_neither_spin_nor_lock_out() {
    let sb = Sandbox::new();
    let serve = Serve::start(
        &sb,
        &[],
        Limits {
            nofile: Some(64),
            ..Limits::default()
        },
    );
    let silent: Vec<TcpStream> = (0..100)
        .map(|i| TcpStream::connect(&serve.addr).unwrap_or_else(|e| panic!("connection {i}: {e}")))
        .collect();
    thread::sleep(Duration::from_millis(500));
    let before = serve.cpu();
    thread::sleep(Duration::from_secs(2));
    let burned = serve.cpu() - before;
    assert!(
        burned < Duration::from_millis(500),
        "{burned:?} of CPU in 2 s"
    );

    let started = Instant::now();
    let start = now_nanos() - 60_000_000_000;
    let ordinary = export(&[call_span("search_orders", "acme", start, 2_000_000)]);
    let answer = post(&serve.addr, "application/x-protobuf", false, &ordinary).expect("post");
    assert_eq!(answer.status, 200, "{answer:?}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    drop(silent);
    let log = serve.stop();
    assert!(log.contains("stored 1 call under 1 key"), "{log}");
    assert!(
        log.contains("accepts failed") || log.contains("accept failed"),
        "{log}"
    );
}

/// Bodies that stop short are answered 408 and their connections closed
/// after --body-timeout (before: held, with their megabytes, for as long
/// as the sender liked); past --max-connections, the connection idle
/// longest makes room for an exporter.
#[test]
fn bodies_that_never_end_time_out_and_the_connection_cap_makes_room() {
    let sb = Sandbox::new();
    let serve = Serve::start(
        &sb,
        &["--body-timeout", "1s", "--max-connections", "8"],
        Limits::default(),
    );
    let mut stalled: Vec<TcpStream> = (0..5)
        .map(|_| {
            let mut s = TcpStream::connect(&serve.addr).expect("connect");
            let head = format!(
                "POST /v1/traces HTTP/1.1\r\nHost: {}\r\nContent-Type: application/x-protobuf\r\nContent-Length: {}\r\n\r\n",
                serve.addr,
                4 * MIB
            );
            s.write_all(head.as_bytes()).expect("head");
            s.write_all(&vec![0u8; MIB]).expect("a quarter of the body");
            s.set_read_timeout(Some(Duration::from_secs(10)))
                .expect("timeout");
            s
        })
        .collect();
    let started = Instant::now();
    for s in &mut stalled {
        let answer = read_answer(s).expect("an answer, then the end");
        assert_eq!(answer.status, 408, "{answer:?}");
        assert!(answer.head.contains("connection: close"), "{answer:?}");
    }
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "{:?}",
        started.elapsed()
    );

    let silent: Vec<TcpStream> = (0..12)
        .map(|_| TcpStream::connect(&serve.addr).expect("connect"))
        .collect();
    thread::sleep(Duration::from_millis(300));
    let started = Instant::now();
    let start = now_nanos() - 60_000_000_000;
    let ordinary = export(&[call_span("search_orders", "acme", start, 2_000_000)]);
    let answer = post(&serve.addr, "application/x-protobuf", false, &ordinary).expect("post");
    assert_eq!(answer.status, 200, "{answer:?}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    drop(silent);
    let log = serve.wait_log("connections closed: evicted", Duration::from_secs(10));
    assert_eq!(
        counted(&log, " not received within --body-timeout (408)"),
        5,
        "{log}"
    );
    let log = serve.stop();
    assert!(log.contains("stored 1 call under 1 key"), "{log}");
}

// ---------------------------------------------------------------------------
// fault 9: the buffer while the store is down

/// The store on a "full disk": exports of new keys are taken until the
/// buffer holds --max-buffer, then answered 503 with Retry-After (before:
/// every export 200 while the buffer grew without bound, 1.7 GB for
/// 60,000 keys). Once the disk has room, every call answered 200 is stored.
#[test]
fn a_down_store_fills_a_bounded_buffer_then_answers_503_and_loses_nothing() {
    let sb = Sandbox::new();
    let serve = Serve::start(
        &sb,
        // About 500 bytes a key (a sketch holds the buckets it uses, not
        // those between them): 1 MiB is some 2,000 keys, 20 batches.
        &["--max-buffer", "1MiB"],
        Limits {
            full_disk: true,
            ..Limits::default()
        },
    );
    serve.disk(Some(4096));
    let now = now_nanos() - 60_000_000_000;
    let mut taken = 0u64;
    let mut refused = None;
    for batch in 0..40u64 {
        // 100 keys of an hour of their own; each sketch spans 1 ns to 10 s
        // (two buckets).
        let start = now - batch * HOUR;
        let spans: Vec<Vec<u8>> = (0..100)
            .flat_map(|i| {
                let tool = format!("tool-{i}");
                [
                    call_span(&tool, "acme", start, 1),
                    call_span(&tool, "acme", start, 10_000_000_000),
                ]
            })
            .collect();
        let answer = post(
            &serve.addr,
            "application/x-protobuf",
            false,
            &export(&spans),
        )
        .expect("post");
        match answer.status {
            200 => taken += 200,
            503 => {
                refused = Some(answer);
                break;
            }
            _ => panic!("{answer:?}"),
        }
        if batch == 0 {
            serve.wait_log("kept for the next flush", Duration::from_secs(10));
        }
    }
    let refused = refused.unwrap_or_else(|| panic!("no 503 after {taken} calls; {}", serve.log()));
    assert!(refused.head.contains("retry-after: 1"), "{refused:?}");
    assert!(
        taken >= 400,
        "{taken} calls taken before the buffer was full"
    );
    let peak = serve.peak_mib();
    assert!(peak < 100, "peak {peak} MiB with a 1 MiB buffer");

    // Room on the disk again: the next flush stores all that was taken.
    serve.disk(None);
    serve.wait_log(&format!("stored {taken} calls"), Duration::from_secs(15));
    let log = serve.stop();
    assert!(log.contains("answered 503 (the buffer was full"), "{log}");
    let mut ledger = toolpin_ledger::Ledger::open(&sb.join("u.db")).expect("store");
    let stored = ledger
        .usage_read(&toolpin_ledger::usage::UsageFilter {
            from_hour: 0,
            until_hour: u64::MAX / 2,
            environment: None,
        })
        .expect("read");
    assert_eq!(stored.total_calls(), taken);
}

/// Names come from the exporter: past --max-names distinct tools (or
/// tenants, agents, …) between two flushes, calls are counted under
/// "(other)", stored, and said so.
#[test]
fn names_past_the_cap_are_counted_under_other() {
    let sb = Sandbox::new();
    let serve = Serve::start(&sb, &["--max-names", "3"], Limits::default());
    let start = now_nanos() - 60_000_000_000;
    let spans: Vec<Vec<u8>> = (0..10)
        .map(|i| call_span(&format!("made-up-{i}"), "acme", start, 1_000_000))
        .collect();
    let answer = post(
        &serve.addr,
        "application/x-protobuf",
        false,
        &export(&spans),
    )
    .expect("post");
    assert_eq!(answer.status, 200, "{answer:?}");
    let log = serve.stop();
    assert!(log.contains("stored 10 calls under 4 keys"), "{log}");
    assert!(log.contains("counted under \"(other)\" (tool 7)"), "{log}");
    let mut ledger = toolpin_ledger::Ledger::open(&sb.join("u.db")).expect("store");
    let stored = ledger
        .usage_read(&toolpin_ledger::usage::UsageFilter {
            from_hour: 0,
            until_hour: u64::MAX / 2,
            environment: None,
        })
        .expect("read");
    let tools: Vec<(String, u64)> = stored
        .calls()
        .iter()
        .map(|(k, s)| (k.tool.to_string(), s.calls))
        .collect();
    assert_eq!(
        tools,
        [
            ("(other)".to_string(), 7),
            ("made-up-0".to_string(), 1),
            ("made-up-1".to_string(), 1),
            ("made-up-2".to_string(), 1)
        ]
    );
}

/// A limit that is not one is an error naming it, exit 2, and no store is
/// created.
#[test]
fn bad_limits_are_errors_that_create_nothing() {
    let sb = Sandbox::new();
    let listing = sb.listing();
    for (flag, value, needle) in [
        (
            "--max-body",
            "12XB",
            "\"12XB\" is not a size; write bytes or KiB, MiB, GiB",
        ),
        (
            "--max-buffer",
            "100",
            "\"100\" is too small; give at least 1KiB",
        ),
        ("--max-names", "0", "must be at least 1"),
        (
            "--max-connections",
            "many",
            "\"many\" is not a whole number",
        ),
        ("--body-timeout", "forever", "\"forever\" is not a duration"),
        ("--connection-idle", "0s", "is not a duration"),
    ] {
        let args = [
            "usage",
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--store",
            "u.db",
            flag,
            value,
        ];
        let run = sb.run(&args);
        assert_eq!(run.code, 2, "{args:?}: {run:#?}");
        let first = run.stderr.lines().next().unwrap_or("");
        assert!(
            first.contains(flag) && first.contains(needle),
            "{args:?}: {}",
            run.stderr
        );
        assert_eq!(sb.listing(), listing, "{args:?} changed files");
    }
}
