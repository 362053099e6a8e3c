//! The OTLP/HTTP receiver behind `toolpin usage serve` (issue 19, point 2):
//! agents that do not go through the proxy (plain function calling, other
//! frameworks emitting GenAI `execute_tool` spans) export their spans here,
//! as to any Collector. `POST /v1/traces` takes an `ExportTraceServiceRequest`
//! in protobuf (`application/x-protobuf`) or JSON (`application/json`),
//! optionally gzipped, and folds its tool calls into [`Aggregates`] by the
//! same rules as span files (`toolpin_usage::read_body`). The caller takes
//! what arrived with [`Receiver::take`] and stores it.
//!
//! Answers follow the OTLP/HTTP specification: 200 with an
//! `ExportTraceServiceResponse` in the request's encoding (a partial success
//! naming the spans left out, when some were); 400 for a body that is not a
//! request; 413 past the body limit (after decompression too); 415 for
//! another content type or encoding; 404 and 405 for other paths and
//! methods; 503 with `Retry-After` while the caller says its store is
//! unavailable and its buffer is full. No TLS and no authentication: bind
//! it to loopback, or put it behind a Collector.

use std::future::Future;
use std::io::Read;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::header::{HeaderValue, CONTENT_ENCODING, CONTENT_TYPE, RETRY_AFTER};
use hyper::{Method, Request, Response, StatusCode};
use tokio::net::TcpListener;
use toolpin_usage::{read_body, Aggregates, Encoding, IngestReport, Options};

/// The path the SDKs post traces to (`OTEL_EXPORTER_OTLP_ENDPOINT` + this).
pub const TRACES_PATH: &str = "/v1/traces";

/// What arrived since the last [`Receiver::take`].
struct Buffer {
    aggregates: Aggregates,
    report: IngestReport,
}

/// The receiver's state, shared by its connections and its caller.
pub struct Receiver {
    buffer: Mutex<Buffer>,
    options: Options,
    max_body_bytes: usize,
    unavailable: AtomicBool,
    connections: AtomicUsize,
}

impl Receiver {
    /// `options` as for span files (`now_nanos` is taken afresh for each
    /// request); bodies over `max_body_bytes`, compressed or not, are
    /// refused.
    pub fn new(options: Options, max_body_bytes: usize) -> Arc<Self> {
        Arc::new(Self {
            buffer: Mutex::new(Buffer {
                aggregates: Aggregates::new(options.limits),
                report: IngestReport::new(options.examples),
            }),
            options,
            max_body_bytes,
            unavailable: AtomicBool::new(false),
            connections: AtomicUsize::new(0),
        })
    }

    fn buffer(&self) -> MutexGuard<'_, Buffer> {
        // A panic while holding the lock cannot leave the buffer half
        // merged in a way that matters more than losing the process.
        self.buffer.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Everything that arrived since the last take, and what was wrong
    /// with it.
    pub fn take(&self) -> (Aggregates, IngestReport) {
        let mut b = self.buffer();
        let aggregates = std::mem::replace(&mut b.aggregates, Aggregates::new(self.options.limits));
        let report = std::mem::replace(&mut b.report, IngestReport::new(self.options.examples));
        (aggregates, report)
    }

    /// Hands back aggregates the caller could not store, to be taken again
    /// with what arrives next.
    pub fn restore(&self, aggregates: &Aggregates) {
        self.buffer().aggregates.merge(aggregates);
    }

    /// Keys held now.
    pub fn buffered_keys(&self) -> usize {
        self.buffer().aggregates.len()
    }

    /// While set, exports are answered 503 with `Retry-After` (the store is
    /// down and the buffer is full): the SDKs retry later.
    pub fn set_unavailable(&self, unavailable: bool) {
        self.unavailable.store(unavailable, Ordering::Relaxed);
    }

    /// One export body, decoded and folded in; the rejected spans' count
    /// and a reason, for a partial success.
    fn ingest(&self, body: &[u8], encoding: Encoding) -> Result<(u64, String), String> {
        let mut options = self.options.clone();
        options.now_nanos = now_nanos();
        let mut aggregates = Aggregates::new(options.limits);
        let mut report = IngestReport::new(options.examples);
        let outcome = read_body(
            body,
            encoding,
            "otlp",
            &options,
            &mut aggregates,
            &mut report,
        );
        let rejected = report.spans_rejected;
        let why = report
            .problems
            .iter()
            .find(|(p, _)| p.rejects())
            .map(|(p, o)| {
                format!(
                    "{}: {}",
                    p.name(),
                    o.examples.first().map_or("", String::as_str)
                )
            })
            .unwrap_or_default();
        let mut b = self.buffer();
        b.aggregates.merge(&aggregates);
        b.report.merge(&report);
        drop(b);
        outcome.map(|()| (rejected, why))
    }
}

fn now_nanos() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

type Body = Full<Bytes>;

fn answer(status: StatusCode, content_type: &'static str, body: Vec<u8>) -> Response<Body> {
    let mut r = Response::new(Full::new(Bytes::from(body)));
    *r.status_mut() = status;
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    r
}

fn plain(status: StatusCode, text: &str) -> Response<Body> {
    answer(
        status,
        "text/plain; charset=utf-8",
        format!("{text}\n").into_bytes(),
    )
}

/// A protobuf varint.
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

fn proto_string(out: &mut Vec<u8>, field: u64, s: &str) {
    varint(out, field << 3 | 2);
    varint(out, s.len() as u64);
    out.extend_from_slice(s.as_bytes());
}

/// A JSON string literal.
fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// `ExportTraceServiceResponse`, with `partial_success` when spans were
/// left out.
fn success(encoding: Encoding, rejected: u64, why: &str) -> Response<Body> {
    match encoding {
        Encoding::Protobuf => {
            let mut body = Vec::new();
            if rejected > 0 {
                let mut partial = Vec::new();
                varint(&mut partial, 1 << 3);
                varint(&mut partial, rejected);
                proto_string(&mut partial, 2, why);
                varint(&mut body, 1 << 3 | 2);
                varint(&mut body, partial.len() as u64);
                body.extend_from_slice(&partial);
            }
            answer(StatusCode::OK, "application/x-protobuf", body)
        }
        Encoding::Json => {
            let body = if rejected > 0 {
                format!(
                    "{{\"partialSuccess\":{{\"rejectedSpans\":\"{rejected}\",\"errorMessage\":{}}}}}",
                    json_string(why)
                )
            } else {
                "{}".to_string()
            };
            answer(StatusCode::OK, "application/json", body.into_bytes())
        }
    }
}

/// A `google.rpc.Status` (code 3, INVALID_ARGUMENT) for a 400.
fn bad_request(encoding: Encoding, why: &str) -> Response<Body> {
    match encoding {
        Encoding::Protobuf => {
            let mut body = Vec::new();
            varint(&mut body, 1 << 3);
            varint(&mut body, 3);
            proto_string(&mut body, 2, why);
            answer(StatusCode::BAD_REQUEST, "application/x-protobuf", body)
        }
        Encoding::Json => answer(
            StatusCode::BAD_REQUEST,
            "application/json",
            format!("{{\"code\":3,\"message\":{}}}", json_string(why)).into_bytes(),
        ),
    }
}

async fn handle(receiver: Arc<Receiver>, req: Request<Incoming>) -> Response<Body> {
    if req.uri().path() != TRACES_PATH {
        return plain(
            StatusCode::NOT_FOUND,
            "not found: spans go to POST /v1/traces",
        );
    }
    if req.method() != Method::POST {
        let mut r = plain(StatusCode::METHOD_NOT_ALLOWED, "only POST");
        r.headers_mut()
            .insert(hyper::header::ALLOW, HeaderValue::from_static("POST"));
        return r;
    }
    let content_type = req
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|v| {
            v.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase()
        })
        .unwrap_or_default();
    let encoding = match content_type.as_str() {
        "application/x-protobuf" => Encoding::Protobuf,
        "application/json" => Encoding::Json,
        other => {
            return plain(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                &format!("content type {other:?}: send application/x-protobuf or application/json"),
            )
        }
    };
    let gzip = match req
        .headers()
        .get(CONTENT_ENCODING)
        .and_then(|v| v.to_str().ok())
        .map(|v| v.trim().to_ascii_lowercase())
    {
        None => false,
        Some(e) if e.is_empty() || e == "identity" => false,
        Some(e) if e == "gzip" => true,
        Some(e) => {
            return plain(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                &format!("content encoding {e:?}: send gzip or none"),
            )
        }
    };
    if receiver.unavailable.load(Ordering::Relaxed) {
        let mut r = plain(
            StatusCode::SERVICE_UNAVAILABLE,
            "the usage store is unavailable; retry later",
        );
        r.headers_mut()
            .insert(RETRY_AFTER, HeaderValue::from_static("5"));
        return r;
    }
    let limit = receiver.max_body_bytes;
    let body = match Limited::new(req.into_body(), limit).collect().await {
        Ok(b) => b.to_bytes(),
        Err(e) => {
            return if e
                .downcast_ref::<http_body_util::LengthLimitError>()
                .is_some()
            {
                plain(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    &format!("a body over {limit} bytes"),
                )
            } else {
                plain(StatusCode::BAD_REQUEST, "the body could not be read")
            };
        }
    };
    let body: Vec<u8> = if gzip {
        // Read one byte past the limit to tell "at the limit" from "over".
        let mut out = Vec::new();
        let read = flate2::read::GzDecoder::new(&body[..])
            .take(limit as u64 + 1)
            .read_to_end(&mut out);
        match read {
            Err(e) => return bad_request(encoding, &format!("not gzip: {e}")),
            Ok(n) if n > limit => {
                return plain(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    &format!("a body over {limit} bytes once decompressed"),
                )
            }
            Ok(_) => out,
        }
    } else {
        body.to_vec()
    };
    // Decoding is CPU work: off the connection's task.
    let r = Arc::clone(&receiver);
    let outcome = tokio::task::spawn_blocking(move || r.ingest(&body, encoding)).await;
    match outcome {
        Ok(Ok((rejected, why))) => success(encoding, rejected, &why),
        Ok(Err(why)) => bad_request(encoding, &why),
        Err(_) => plain(
            StatusCode::INTERNAL_SERVER_ERROR,
            "the request could not be read",
        ),
    }
}

/// Serves `listener` until `shutdown` completes, then stops accepting,
/// lets open connections finish the request they are in (at most
/// `grace`), and returns.
pub async fn serve(
    listener: TcpListener,
    receiver: Arc<Receiver>,
    shutdown: impl Future<Output = ()>,
    grace: Duration,
) -> std::io::Result<()> {
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => {
                let (stream, _) = match accepted {
                    Ok(a) => a,
                    // A failed accept (out of descriptors, a reset) ends
                    // that connection, not the receiver.
                    Err(_) => continue,
                };
                let receiver = Arc::clone(&receiver);
                let mut stop = stop_rx.clone();
                receiver.connections.fetch_add(1, Ordering::SeqCst);
                tokio::spawn(async move {
                    let io = hyper_util::rt::TokioIo::new(stream);
                    let r = Arc::clone(&receiver);
                    let service = hyper::service::service_fn(move |req| {
                        let r = Arc::clone(&r);
                        async move { Ok::<_, std::convert::Infallible>(handle(r, req).await) }
                    });
                    let conn = hyper::server::conn::http1::Builder::new()
                        .timer(hyper_util::rt::TokioTimer::new())
                        .header_read_timeout(Duration::from_secs(30))
                        .serve_connection(io, service);
                    tokio::pin!(conn);
                    tokio::select! {
                        _ = conn.as_mut() => {}
                        _ = stop.changed() => {
                            conn.as_mut().graceful_shutdown();
                            let _ = conn.await;
                        }
                    }
                    receiver.connections.fetch_sub(1, Ordering::SeqCst);
                });
            }
        }
    }
    let _ = stop_tx.send(true);
    let deadline = tokio::time::Instant::now() + grace;
    while receiver.connections.load(Ordering::SeqCst) > 0 && tokio::time::Instant::now() < deadline
    {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    Ok(())
}
