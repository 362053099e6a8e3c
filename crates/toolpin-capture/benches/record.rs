//! What recording adds to a model request (docs/performance.md; target: at
//! most 5 ms per request). One HTTP/1.1 keep-alive client posts a realistic
//! Chat Completions request (40 tools and a conversation, 42 KB)
//! to, side by side in one run:
//!
//! - `reference`: a bare server on the same HTTP stack (hyper) that reads
//!   the whole body and answers a fixed completion: the floor any local
//!   endpoint has;
//! - `recording/same_array`: toolpin's endpoint, the same tools each time
//!   (an agent's turns: the array is found again by its bytes);
//! - `recording/new_array`: toolpin's endpoint, a tools array unlike any
//!   before (parsed and compared with every array kept, up to 200: the
//!   worst case);
//! - `recording/stream`: the same array, answered as server-sent events.
//!
//! The added cost per request is a `recording/*` time minus `reference`.
//! Run with `cargo bench -p toolpin-capture --bench record`.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use serde_json::{json, Value};
use tokio::net::TcpListener;
use toolpin_capture::record::endpoint::{self, Endpoint};

/// A tool as an agent framework sends it: strict, with a few typed,
/// described parameters.
fn tool(i: usize, salt: &str) -> Value {
    json!({"type": "function", "function": {
        "name": format!("tool_{i:02}"),
        "description": format!("Look up record {i} by its ID and return its status, owner and history.{salt}"),
        "strict": true,
        "parameters": {"type": "object", "additionalProperties": false,
            "required": ["id", "limit", "status", "fields"],
            "properties": {
                "id": {"type": "string", "description": "The record's ID, e.g. REC-1234."},
                "limit": {"type": ["integer", "null"], "description": "At most this many history entries."},
                "status": {"type": "string", "enum": ["open", "closed", "pending", "archived"]},
                "fields": {"type": "array", "items": {"type": "string"}, "description": "Which fields to return."},
            }},
    }})
}

fn body(salt: &str, stream: bool) -> Vec<u8> {
    let tools: Vec<Value> = (0..40).map(|i| tool(i, salt)).collect();
    let messages: Vec<Value> = (0..20)
        .map(|i| json!({"role": if i % 2 == 0 {"user"} else {"assistant"}, "content": "A turn of the conversation so far, long enough to matter. ".repeat(15)}))
        .collect();
    serde_json::to_vec(
        &json!({"model": "gpt-4.1-mini", "messages": messages, "tools": tools, "stream": stream}),
    )
    .expect("json")
}

/// A runtime on its own thread, serving until the process ends.
fn spawn_server<F>(serve: impl FnOnce(TcpListener) -> F + Send + 'static) -> String
where
    F: std::future::Future<Output = ()> + 'static,
{
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async move {
            let listener = TcpListener::bind(("127.0.0.1", 0)).await.expect("bind");
            tx.send(listener.local_addr().expect("addr").port())
                .expect("port");
            serve(listener).await;
        });
    });
    let port = rx.recv().expect("server started");
    format!("http://127.0.0.1:{port}/v1/chat/completions")
}

/// The reference: reads the body, answers a fixed completion.
async fn bare(listener: TcpListener) {
    let answer = Bytes::from(
        json!({"id": "x", "object": "chat.completion", "created": 0, "model": "m",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "OK"}, "finish_reason": "stop"}]})
        .to_string(),
    );
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let answer = answer.clone();
        tokio::task::spawn_local(async move {
            let service =
                hyper::service::service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                    let answer = answer.clone();
                    async move {
                        let _ = req.into_body().collect().await;
                        let mut r = hyper::Response::new(Full::new(answer));
                        r.headers_mut().insert(
                            hyper::header::CONTENT_TYPE,
                            hyper::header::HeaderValue::from_static("application/json"),
                        );
                        Ok::<_, Infallible>(r)
                    }
                });
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                .await;
        });
    }
}

fn record(c: &mut Criterion) {
    let reference = spawn_server(|listener| async move {
        tokio::task::LocalSet::new().run_until(bare(listener)).await;
    });
    let endpoint = Arc::new(Endpoint::default());
    let kept = Arc::clone(&endpoint);
    let recording = spawn_server(move |listener| async move {
        endpoint::serve(listener, kept, std::future::pending::<()>()).await;
    });
    let client = reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .expect("client");
    let post = |url: &str, body: Vec<u8>| {
        let r = client
            .post(url)
            .header("content-type", "application/json")
            .header("authorization", "Bearer sk-bench")
            .body(body)
            .send()
            .expect("sent");
        assert!(r.status().is_success(), "{}", r.status());
        r.bytes().expect("read")
    };
    let same = body("", false);
    let streamed = body("", true);
    eprintln!("record bench: a request of {} bytes", same.len());

    let mut group = c.benchmark_group("record");
    group
        .sample_size(200)
        .measurement_time(Duration::from_secs(8));
    group.bench_function("reference", |b| b.iter(|| post(&reference, same.clone())));
    group.bench_function("same_array", |b| b.iter(|| post(&recording, same.clone())));
    group.bench_function("stream", |b| b.iter(|| post(&recording, streamed.clone())));
    // Each iteration a new array. The log is emptied before it reaches the
    // endpoint's bound (every 200 requests, so each is compared with up to
    // 200 kept arrays); the emptied log is returned so that criterion drops
    // it outside the timing.
    let mut n = 0usize;
    group.bench_function("new_array", |b| {
        b.iter_batched(
            || body(&format!(" {}", rand_salt()), false),
            |bytes| {
                n += 1;
                let emptied = (n % 200 == 0).then(|| endpoint.take());
                (post(&recording, bytes), emptied)
            },
            criterion::BatchSize::SmallInput,
        )
    });
    group.finish();
    let log = endpoint.take();
    assert!(log.failures.is_empty(), "{:?}", log.failures);
}

/// A salt no earlier request used.
fn rand_salt() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}

criterion_group!(benches, record);
criterion_main!(benches);
