//! The OTLP/HTTP receiver against the real OpenTelemetry Python SDK and
//! its protobuf exporter (plain and gzipped), the same spans in JSON, the
//! error answers the specification names, and random bodies.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use proptest::prelude::*;
use toolpin_otlp::{serve, Receiver, Settings};
use toolpin_usage::{Aggregates, IngestReport, Options};

/// A receiver on a free loopback port, served from a thread of its own
/// until the returned guard is dropped.
struct Running {
    url: String,
    receiver: Arc<Receiver>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// What arrived, taken out of the receiver (and no longer held by it).
fn take(receiver: &Receiver) -> (Aggregates, IngestReport) {
    let mut taken = receiver.take();
    (
        std::mem::take(&mut taken.aggregates),
        std::mem::take(&mut taken.report),
    )
}

impl Running {
    fn start(max_body: usize) -> Self {
        Self::with(Settings {
            max_body_bytes: max_body,
            ..Settings::new(Options::default())
        })
    }

    fn with(settings: Settings) -> Self {
        let receiver = Receiver::new(settings);
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let (ready_tx, ready) = std::sync::mpsc::channel();
        let r = Arc::clone(&receiver);
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("runtime");
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                    .await
                    .expect("bind");
                ready_tx
                    .send(listener.local_addr().expect("addr"))
                    .expect("ready");
                serve(
                    listener,
                    r,
                    async {
                        let _ = stopped.await;
                    },
                    Duration::from_secs(2),
                )
                .await
                .expect("serve");
            });
        });
        let addr = ready.recv().expect("address");
        Self {
            url: format!("http://{addr}"),
            receiver,
            stop: Some(stop),
            thread: Some(thread),
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn python() -> PathBuf {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let python = repo.join(".venv/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run scripts/setup",
        python.display()
    );
    python
}

fn export_with_the_python_sdk(url: &str, gzip: bool) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/clients/otel_exporter.py");
    let mut cmd = std::process::Command::new(python());
    cmd.arg(script)
        .args(["--endpoint", &format!("{url}/v1/traces")]);
    if gzip {
        cmd.arg("--gzip");
    }
    let out = cmd.output().expect("run the exporter");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("\"exported\": true"),
        "the SDK's export failed: {stdout}\n{}\n(missing packages? run scripts/setup)",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// What the exporter script sends, as the aggregates must hold it.
fn assert_the_scripts_calls(agg: &Aggregates) {
    let calls = agg.calls();
    let summary: Vec<(String, String, String, String, u64, u64)> = calls
        .iter()
        .map(|(k, s)| {
            (
                k.environment.to_string(),
                k.tenant.to_string(),
                k.agent.to_string(),
                k.tool.to_string(),
                s.calls,
                s.errors.get("timeout").copied().unwrap_or(0),
            )
        })
        .collect();
    let row = |tool: &str, calls, errors| {
        (
            "staging".into(),
            "globex".into(),
            "billing-agent".into(),
            tool.to_string(),
            calls,
            errors,
        )
    };
    assert_eq!(
        summary,
        vec![row("lookup_order", 2, 2), row("search_orders", 5, 0)]
    );
    let search = calls
        .iter()
        .find(|(k, _)| &*k.tool == "search_orders")
        .expect("search")
        .1;
    let status = &search.params["status"];
    assert_eq!((status.values["open"], status.values["shipped"]), (3, 2));
    assert_eq!(search.params["page_size"].non_string, 5);
    assert!(calls.iter().all(|(k, _)| k.catalog.starts_with("9644aeef")));
}

#[test]
fn the_python_sdk_exports_protobuf_plain_and_gzipped() {
    for gzip in [false, true] {
        let running = Running::start(4 << 20);
        export_with_the_python_sdk(&running.url, gzip);
        let (agg, report) = take(&running.receiver);
        assert_the_scripts_calls(&agg);
        assert_eq!(report.spans_other, 1, "the chat span is not a tool call");
        assert_eq!(report.spans_rejected, 0);
        // Taken: nothing is left.
        assert_eq!(take(&running.receiver).0.len(), 0);
    }
}

/// The script's spans, as OTLP/JSON.
fn json_body() -> String {
    let span = |tool: &str, args: &str, error: bool, i: u64| {
        let mut attrs = vec![
            serde_json::json!({"key": "gen_ai.operation.name", "value": {"stringValue": "execute_tool"}}),
            serde_json::json!({"key": "gen_ai.tool.name", "value": {"stringValue": tool}}),
            serde_json::json!({"key": "gen_ai.tool.call.arguments", "value": {"stringValue": args}}),
            serde_json::json!({"key": "toolpin.catalog.fingerprint", "value": {"stringValue": format!("9644aeef{}", "0".repeat(56))}}),
        ];
        if error {
            attrs.push(
                serde_json::json!({"key": "error.type", "value": {"stringValue": "timeout"}}),
            );
        }
        let start = now() - 60_000_000_000 + i;
        serde_json::json!({"spanId": format!("{i:016x}"), "name": tool, "attributes": attrs,
            "startTimeUnixNano": start.to_string(), "endTimeUnixNano": (start + 1_000).to_string(),
            "status": if error { serde_json::json!({"code": 2}) } else { serde_json::json!({}) }})
    };
    let mut spans = Vec::new();
    for (i, s) in ["open", "open", "shipped", "open", "shipped"]
        .iter()
        .enumerate()
    {
        spans.push(span(
            "search_orders",
            &format!("{{\"status\":\"{s}\",\"page_size\":20}}"),
            false,
            i as u64,
        ));
    }
    spans.push(span("lookup_order", "{\"order_id\":\"A-1\"}", true, 10));
    spans.push(span("lookup_order", "{\"order_id\":\"A-1\"}", true, 11));
    serde_json::json!({"resourceSpans": [{
        "resource": {"attributes": [
            {"key": "service.name", "value": {"stringValue": "billing-agent"}},
            {"key": "deployment.environment.name", "value": {"stringValue": "staging"}},
            {"key": "tenant.id", "value": {"stringValue": "globex"}}]},
        "scopeSpans": [{"spans": spans}]}]})
    .to_string()
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

fn post(url: &str, content_type: &str, encoding: Option<&str>, body: Vec<u8>) -> (u16, Vec<u8>) {
    let client = reqwest::blocking::Client::new();
    let mut req = client
        .post(url)
        .header("content-type", content_type)
        .body(body);
    if let Some(e) = encoding {
        req = req.header("content-encoding", e);
    }
    let r = req.send().expect("send");
    let status = r.status().as_u16();
    (status, r.bytes().expect("body").to_vec())
}

/// A key as text, its calls, and its argument values with their counts.
type Stripped = (String, u64, Vec<(String, u64)>);

#[test]
fn json_gives_what_protobuf_gives() {
    let running = Running::start(4 << 20);
    let (status, body) = post(
        &format!("{}/v1/traces", running.url),
        "application/json",
        None,
        json_body().into_bytes(),
    );
    assert_eq!((status, body.as_slice()), (200, &b"{}"[..]));
    let (json, _) = take(&running.receiver);
    assert_the_scripts_calls(&json);
    export_with_the_python_sdk(&running.url, false);
    let (proto, _) = take(&running.receiver);
    // The same calls, keys and argument statistics (latencies differ).
    let strip = |a: &Aggregates| -> Vec<Stripped> {
        a.calls()
            .iter()
            .map(|(k, s)| {
                let mut values: Vec<(String, u64)> = s
                    .params
                    .iter()
                    .flat_map(|(p, st)| {
                        st.values.iter().map(move |(v, n)| (format!("{p}={v}"), *n))
                    })
                    .collect();
                values.sort();
                (
                    format!(
                        "{}/{}/{}/{}/{}",
                        k.environment, k.tenant, k.agent, k.catalog, k.tool
                    ),
                    s.calls,
                    values,
                )
            })
            .collect()
    };
    assert_eq!(strip(&json), strip(&proto));
}

#[test]
fn errors_are_answered_as_the_specification_says() {
    let running = Running::start(64 * 1024);
    let traces = format!("{}/v1/traces", running.url);
    // Not a request: 400 with a google.rpc.Status in JSON.
    let (status, body) = post(&traces, "application/json", None, b"[1,2]".to_vec());
    assert_eq!(status, 400);
    assert!(String::from_utf8_lossy(&body).contains("\"code\":3"));
    let (status, _) = post(
        &traces,
        "application/x-protobuf",
        None,
        vec![0x0a, 0x05, 0x01],
    );
    assert_eq!(status, 400);
    // Another content type or encoding: 415.
    assert_eq!(post(&traces, "text/plain", None, b"{}".to_vec()).0, 415);
    assert_eq!(
        post(&traces, "application/json", Some("br"), b"{}".to_vec()).0,
        415
    );
    // Over the limit, as sent or once decompressed (a gzip bomb): 413.
    assert_eq!(
        post(&traces, "application/json", None, vec![b' '; 70 * 1024]).0,
        413
    );
    let mut bomb = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    bomb.write_all(&vec![b' '; 8 << 20]).expect("compress");
    let bomb = bomb.finish().expect("gzip");
    assert!(bomb.len() < 64 * 1024, "{}", bomb.len());
    assert_eq!(post(&traces, "application/json", Some("gzip"), bomb).0, 413);
    // Within the limit once decompressed, but a thousand times its size:
    // the work a body makes is bounded by what was sent.
    let roomy = Running::start(16 << 20);
    let mut bomb = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    bomb.write_all(&vec![b' '; 4 << 20]).expect("compress");
    let (status, body) = post(
        &format!("{}/v1/traces", roomy.url),
        "application/json",
        Some("gzip"),
        bomb.finish().expect("gzip"),
    );
    assert_eq!(status, 413);
    assert!(
        String::from_utf8_lossy(&body).contains("inflates more than 100 times"),
        "{}",
        String::from_utf8_lossy(&body)
    );
    assert_eq!(
        post(
            &traces,
            "application/json",
            Some("gzip"),
            b"not gzip".to_vec()
        )
        .0,
        400
    );
    // Other paths and methods.
    assert_eq!(
        post(
            &format!("{}/v1/metrics", running.url),
            "application/json",
            None,
            b"{}".to_vec()
        )
        .0,
        404
    );
    let get = reqwest::blocking::get(&traces).expect("get");
    assert_eq!(get.status().as_u16(), 405);
    assert_eq!(
        get.headers().get("allow").and_then(|v| v.to_str().ok()),
        Some("POST")
    );
    // Spans left out: a partial success naming them.
    let mut partial: serde_json::Value = serde_json::from_str(&json_body()).expect("json");
    partial["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["endTimeUnixNano"] =
        serde_json::json!("1");
    let (status, body) = post(
        &traces,
        "application/json",
        None,
        partial.to_string().into_bytes(),
    );
    assert_eq!(status, 200);
    let body: serde_json::Value = serde_json::from_slice(&body).expect("json");
    assert_eq!(body["partialSuccess"]["rejectedSpans"], "1", "{body}");
    assert!(
        body["partialSuccess"]["errorMessage"]
            .as_str()
            .unwrap_or("")
            .contains("end-before-start"),
        "{body}"
    );
    // What was refused was still counted.
    let (agg, report) = take(&running.receiver);
    assert_eq!(agg.total_calls(), 6);
    assert!(report.count(toolpin_usage::Problem::MalformedLine) >= 2);
}

#[test]
fn a_full_buffer_answers_503_until_a_flush_frees_it() {
    // How much one export of the script's calls holds.
    let probe = Running::start(1 << 20);
    let traces = |r: &Running| format!("{}/v1/traces", r.url);
    let json = || json_body().into_bytes();
    assert_eq!(
        post(&traces(&probe), "application/json", None, json()).0,
        200
    );
    let one = probe.receiver.held_bytes();
    assert!(one > 1000, "{one}");
    drop(probe);

    // Room for one: the second is told to retry later, as OTLP/HTTP says.
    let running = Running::with(Settings {
        max_buffer_bytes: one + one / 2,
        retry_after: Duration::from_secs(7),
        ..Settings::new(Options::default())
    });
    assert_eq!(
        post(&traces(&running), "application/json", None, json()).0,
        200
    );
    let r = reqwest::blocking::Client::new()
        .post(traces(&running))
        .header("content-type", "application/json")
        .body(json())
        .send()
        .expect("send");
    assert_eq!(r.status().as_u16(), 503);
    assert_eq!(
        r.headers().get("retry-after").and_then(|v| v.to_str().ok()),
        Some("7")
    );
    // Taken for a flush, the batch is still held until it is stored...
    let taken = running.receiver.take();
    assert_eq!(running.receiver.held_bytes(), one);
    assert_eq!(
        post(&traces(&running), "application/json", None, json()).0,
        503
    );
    // ...and handed back when the store fails: nothing answered 200 is lost.
    taken.restore();
    assert_eq!(running.receiver.held_bytes(), one);
    assert_eq!(take(&running.receiver).0.total_calls(), 7);
    // Stored (the batch dropped): room again.
    assert_eq!(running.receiver.held_bytes(), 0);
    assert_eq!(
        post(&traces(&running), "application/json", None, json()).0,
        200
    );
    assert_eq!(running.receiver.take_notices().busy, 2);
}

#[test]
fn a_body_that_does_not_arrive_is_answered_408_and_idle_connections_make_room() {
    use std::io::Read;
    let running = Running::with(Settings {
        body_timeout: Duration::from_millis(300),
        max_connections: 3,
        ..Settings::new(Options::default())
    });
    let addr = running.url.trim_start_matches("http://").to_string();
    // Headers, and 10 bytes of the 1,000 promised.
    let mut slow = std::net::TcpStream::connect(&addr).expect("connect");
    slow.write_all(
        b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"resourceS",
    )
    .expect("write");
    slow.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    let mut answer = String::new();
    let started = std::time::Instant::now();
    let _ = slow.read_to_string(&mut answer);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(started.elapsed() < Duration::from_secs(5));

    // Three silent connections fill the cap; an export still gets in, in
    // the place of the one idle longest.
    let silent: Vec<std::net::TcpStream> = (0..3)
        .map(|_| std::net::TcpStream::connect(&addr).expect("connect"))
        .collect();
    std::thread::sleep(Duration::from_millis(200));
    let started = std::time::Instant::now();
    let (status, _) = post(
        &format!("{}/v1/traces", running.url),
        "application/json",
        None,
        json_body().into_bytes(),
    );
    assert_eq!(status, 200);
    assert!(started.elapsed() < Duration::from_secs(5));
    let notices = running.receiver.take_notices();
    assert_eq!(notices.body_timeouts, 1);
    assert!(
        notices.closed.get(&toolpin_otlp::Closed::Evicted) >= Some(&1),
        "{notices:?}"
    );
    drop(silent);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn random_bodies_always_get_an_answer(body in proptest::collection::vec(any::<u8>(), 0..512), json in any::<bool>()) {
        let running = RUNNING.with(|r| r.url.clone());
        let kind = if json { "application/json" } else { "application/x-protobuf" };
        let (status, _) = post(&format!("{running}/v1/traces"), kind, None, body);
        prop_assert!(status == 200 || status == 400, "status {}", status);
    }
}

thread_local! {
    static RUNNING: Running = Running::start(64 * 1024);
}
