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
//! request; 413 past the body limit (as sent, once decompressed, or once
//! decoded); 415 for another content type or encoding; 404 and 405 for
//! other paths and methods; 408 for a body that does not arrive in time;
//! 503 with `Retry-After` while the buffer is full (the store is down or
//! slow), so that exporters keep their batches and send them again.
//!
//! What the receiver holds is bounded by [`Settings`], whatever is sent:
//! bodies by size and time, decoding by the body (spans are read one at a
//! time, only tool calls are kept, and a request's calls and aggregates
//! may take no more than the body limit) and by how many run at once, the
//! buffer by its bytes and its distinct names, connections by number and
//! by timeouts (`toolpin-front`'s [`Gate`], as the proxy's front has them).
//! No TLS and no authentication: bind it to loopback, or put it behind a
//! Collector.

use std::collections::BTreeMap;
use std::future::Future;
use std::io::Read;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::header::{HeaderValue, CONTENT_ENCODING, CONTENT_TYPE, RETRY_AFTER};
use hyper::{Method, Request, Response, StatusCode};
use tokio::net::TcpListener;
pub use toolpin_front::{
    Closed, DEFAULT_BODY_TIMEOUT, DEFAULT_CONNECTION_IDLE, DEFAULT_HEADER_READ_TIMEOUT,
    DEFAULT_MAX_CONNECTIONS,
};
use toolpin_front::{Counts, Gate, Limits, Tally};
use toolpin_manifest::text::json_string;
use toolpin_usage::{read_body, Aggregates, BodyError, Encoding, IngestReport, Options, Timestamp};

/// The path the SDKs post traces to (`OTEL_EXPORTER_OTLP_ENDPOINT` + this).
pub const TRACES_PATH: &str = "/v1/traces";

/// How many times its size a gzip body may inflate to. An export's trace
/// and span ids are random (24 bytes a span that gzip cannot shrink), so
/// real OTLP bodies compress less than 25 times; a body of empty spans
/// compresses a thousand times.
pub const MAX_INFLATION: usize = 100;
/// What any gzip body may inflate to, whatever its ratio: 64 KiB.
pub const MIN_INFLATED: usize = 64 << 10;

/// Default for [`Settings::max_body_bytes`]: 16 MiB.
pub const DEFAULT_MAX_BODY_BYTES: usize = 16 << 20;
/// Default for [`Settings::max_buffer_bytes`]: 256 MiB.
pub const DEFAULT_MAX_BUFFER_BYTES: usize = 256 << 20;
/// Default for [`Settings::max_names`].
pub const DEFAULT_MAX_NAMES: usize = 10_000;

/// What the receiver holds at most, and for how long. Every bound is on
/// what a request or a connection can make the receiver hold, whatever it
/// sends: see docs/usage.md ("Limits of usage serve").
#[derive(Clone, Debug)]
pub struct Settings {
    /// How spans are read (`now` is taken afresh for each request).
    pub options: Options,
    /// Largest body, as sent and once decompressed; also the most one
    /// request's tool calls and the aggregates they make may take once
    /// decoded (past either, 413).
    pub max_body_bytes: usize,
    /// Most bytes of aggregates held, what arrived since the last flush
    /// and a flush in progress together: past it exports are answered
    /// 503 with `Retry-After` until a flush stores what is held.
    pub max_buffer_bytes: usize,
    /// Distinct names held per key part (environment, tenant, agent,
    /// catalog, tool) between two flushes; calls naming more are counted
    /// under `(other)`.
    pub max_names: usize,
    /// Bodies decompressed and decoded at once; the rest wait.
    pub max_decodes: usize,
    /// Connections held at once.
    pub max_connections: usize,
    /// A connection that has started a request but not finished its
    /// headers within this is closed.
    pub header_read_timeout: Duration,
    /// A body not received in full within this of its headers is answered
    /// 408 and its connection closed.
    pub body_timeout: Duration,
    /// A connection with no request in flight for this long is closed.
    pub connection_idle: Duration,
    /// `Retry-After` of a 503.
    pub retry_after: Duration,
}

impl Settings {
    /// The defaults, reading spans with `options`.
    pub fn new(options: Options) -> Self {
        Self {
            options,
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            max_buffer_bytes: DEFAULT_MAX_BUFFER_BYTES,
            max_names: DEFAULT_MAX_NAMES,
            max_decodes: std::thread::available_parallelism()
                .map_or(2, |n| n.get())
                .clamp(1, 4),
            max_connections: DEFAULT_MAX_CONNECTIONS,
            header_read_timeout: DEFAULT_HEADER_READ_TIMEOUT,
            body_timeout: DEFAULT_BODY_TIMEOUT,
            connection_idle: DEFAULT_CONNECTION_IDLE,
            retry_after: Duration::from_secs(5),
        }
    }
}

/// What arrived since the last [`Receiver::take`].
struct Buffer {
    aggregates: Aggregates,
    report: IngestReport,
    /// Bytes of the batch taken and not yet stored: still held.
    flushing: usize,
}

impl Buffer {
    fn held(&self) -> usize {
        self.aggregates.bytes() + self.flushing
    }
}

/// What the receiver refused or closed since the last
/// [`Receiver::take_notices`], for its caller's log.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Notices {
    /// Exports answered 503 because the buffer was full.
    pub busy: u64,
    /// Exports answered 413: too large as sent, decompressed or decoded.
    pub too_large: u64,
    /// Bodies that did not arrive within the body timeout (408).
    pub body_timeouts: u64,
    /// Connections the receiver closed for another reason, by reason.
    pub closed: BTreeMap<Closed, u64>,
    /// Failed accepts (out of descriptors), and the last error.
    pub accept_failures: u64,
    pub accept_error: Option<String>,
}

impl Notices {
    pub fn is_empty(&self) -> bool {
        *self == Notices::default()
    }
}

/// The receiver's state, shared by its connections and its caller.
pub struct Receiver {
    settings: Settings,
    buffer: Mutex<Buffer>,
    decodes: tokio::sync::Semaphore,
    /// Its connections' guard.
    gate: Arc<Gate>,
    /// Exports refused since the last take (`busy`, `too_large`), and the
    /// gate's counts at the last take.
    notices: Mutex<(Notices, Counts)>,
}

/// What [`Receiver::take`] hands over: its bytes stay counted as held
/// until it is dropped (stored, or given up) or restored.
pub struct Taken<'r> {
    receiver: &'r Receiver,
    pub aggregates: Aggregates,
    pub report: IngestReport,
    bytes: usize,
}

impl Taken<'_> {
    /// Hands the aggregates back (the store failed), to be taken again
    /// with what arrives next: what was answered 200 is never dropped.
    /// What arrived meanwhile is merged into them (not the other way
    /// round: the batch is usually the larger, and is not copied).
    pub fn restore(mut self) {
        let mut b = self.receiver.buffer();
        let newer = std::mem::replace(&mut b.aggregates, std::mem::take(&mut self.aggregates));
        b.aggregates.merge(&newer);
        b.flushing = b.flushing.saturating_sub(std::mem::take(&mut self.bytes));
    }
}

impl Drop for Taken<'_> {
    fn drop(&mut self) {
        if self.bytes > 0 {
            let mut b = self.receiver.buffer();
            b.flushing = b.flushing.saturating_sub(self.bytes);
        }
    }
}

impl Receiver {
    pub fn new(settings: Settings) -> Arc<Self> {
        let mut settings = settings;
        settings.options.limits.names = settings.max_names.max(1);
        settings.options.max_decoded_bytes = settings.max_body_bytes;
        settings.max_decodes = settings.max_decodes.max(1);
        let gate = Gate::new(
            Limits {
                max_connections: settings.max_connections,
                header_read_timeout: settings.header_read_timeout,
                connection_idle: settings.connection_idle,
                body_timeout: settings.body_timeout,
            },
            Arc::new(Tally::default()),
        );
        settings.max_connections = gate.limits().max_connections;
        Arc::new(Self {
            buffer: Mutex::new(Buffer {
                aggregates: Aggregates::new(settings.options.limits),
                report: IngestReport::new(settings.options.examples),
                flushing: 0,
            }),
            decodes: tokio::sync::Semaphore::new(settings.max_decodes),
            gate,
            notices: Mutex::new(Default::default()),
            settings,
        })
    }

    fn buffer(&self) -> MutexGuard<'_, Buffer> {
        // A panic while holding the lock cannot leave the buffer half
        // merged in a way that matters more than losing the process.
        self.buffer.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn notices(&self) -> MutexGuard<'_, (Notices, Counts)> {
        self.notices.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Everything that arrived since the last take, and what was wrong
    /// with it.
    pub fn take(&self) -> Taken<'_> {
        let mut b = self.buffer();
        let limits = self.settings.options.limits;
        let aggregates = std::mem::replace(&mut b.aggregates, Aggregates::new(limits));
        let report = std::mem::replace(
            &mut b.report,
            IngestReport::new(self.settings.options.examples),
        );
        let bytes = aggregates.bytes();
        b.flushing += bytes;
        Taken {
            receiver: self,
            aggregates,
            report,
            bytes,
        }
    }

    /// Keys held now (not counting a flush in progress).
    pub fn buffered_keys(&self) -> usize {
        self.buffer().aggregates.len()
    }

    /// Bytes of aggregates held now, a flush in progress included.
    pub fn held_bytes(&self) -> usize {
        self.buffer().held()
    }

    /// What was refused or closed since the last call.
    pub fn take_notices(&self) -> Notices {
        let mut held = self.notices();
        let (notices, seen) = &mut *held;
        let now = self.gate.tally().counts();
        let mut gate = now.since(seen);
        *seen = now;
        let mut n = std::mem::take(notices);
        n.body_timeouts = gate.closed.remove(&Closed::BodyTimeout).unwrap_or(0);
        n.closed = gate.closed;
        n.accept_failures = gate.accept_failures;
        n.accept_error = gate.accept_error;
        n
    }

    fn full(&self) -> bool {
        self.buffer().held() >= self.settings.max_buffer_bytes
    }

    /// One export body: decompressed (bounded), decoded into aggregates of
    /// its own (bounded) and, when the buffer has room for them, merged in.
    fn ingest(&self, body: &[u8], gzip: bool, encoding: Encoding) -> Outcome {
        let limit = self.settings.max_body_bytes;
        let inflated = if gzip {
            // The work a body makes is bounded by what was sent: it may
            // inflate to MAX_INFLATION times its size (a floor for tiny
            // ones), and never past the body limit.
            let cap = limit.min(body.len().saturating_mul(MAX_INFLATION).max(MIN_INFLATED));
            // Read one byte past the cap to tell "at the cap" from "over".
            let mut out = Vec::new();
            match flate2::read::GzDecoder::new(body)
                .take(cap as u64 + 1)
                .read_to_end(&mut out)
            {
                Err(e) => return Outcome::Malformed(format!("not gzip: {e}")),
                Ok(n) if n > cap && cap == limit => {
                    return Outcome::TooLarge(format!(
                        "a body over {limit} bytes once decompressed"
                    ))
                }
                Ok(n) if n > cap => {
                    return Outcome::TooLarge(format!(
                        "a gzip body of {} bytes that inflates more than {MAX_INFLATION} times (past {cap} bytes)",
                        body.len()
                    ))
                }
                Ok(_) => Some(out),
            }
        } else {
            None
        };
        let body = inflated.as_deref().unwrap_or(body);
        let mut options = self.settings.options.clone();
        options.now = Timestamp::now();
        let mut report = IngestReport::new(options.examples);
        let read = read_body(body, encoding, "otlp", &options, &mut report);
        // The decompressed body is not held while waiting for the buffer.
        drop(inflated);
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
        match read {
            Err(BodyError::Malformed(why)) => {
                b.report.merge(&report);
                Outcome::Malformed(why)
            }
            Err(BodyError::TooLarge) => {
                b.report.merge(&report);
                Outcome::TooLarge(format!(
                    "the export's tool calls take more than {limit} bytes to hold once decoded; send smaller batches"
                ))
            }
            Ok(aggregates) => {
                let max = self.settings.max_buffer_bytes;
                if aggregates.bytes() > max {
                    return Outcome::TooLarge(format!(
                        "the export's aggregates alone take more than the buffer's {max} bytes; send smaller batches"
                    ));
                }
                if b.held() + aggregates.bytes() > max {
                    return Outcome::Busy;
                }
                b.aggregates.merge(&aggregates);
                b.report.merge(&report);
                Outcome::Stored { rejected, why }
            }
        }
    }
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

/// What became of one export.
enum Outcome {
    Stored {
        rejected: u64,
        why: String,
    },
    Malformed(String),
    TooLarge(String),
    /// The buffer has no room for it now.
    Busy,
}

/// 503 with `Retry-After`: the exporter keeps the batch and sends it
/// again later (OTLP/HTTP's answer for a receiver that cannot take it now).
fn busy(receiver: &Receiver) -> Response<Body> {
    receiver.notices().0.busy += 1;
    let mut r = plain(
        StatusCode::SERVICE_UNAVAILABLE,
        &format!(
            "the receiver holds its limit of {} bytes of aggregates until they are stored; retry later",
            receiver.settings.max_buffer_bytes
        ),
    );
    let seconds = receiver.settings.retry_after.as_secs().max(1);
    if let Ok(v) = HeaderValue::from_str(&seconds.to_string()) {
        r.headers_mut().insert(RETRY_AFTER, v);
    }
    r
}

fn too_large(receiver: &Receiver, why: &str) -> Response<Body> {
    receiver.notices().0.too_large += 1;
    plain(StatusCode::PAYLOAD_TOO_LARGE, why)
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
    // Full already: the body is not read.
    if receiver.full() {
        return busy(&receiver);
    }
    let limit = receiver.settings.max_body_bytes;
    let body = match receiver.gate.body(req.into_body(), limit).await {
        Ok(b) => b,
        Err(e @ toolpin_front::BodyError::TooLarge(_)) => {
            return too_large(&receiver, &e.to_string())
        }
        Err(e @ toolpin_front::BodyError::TimedOut(_)) => {
            let mut r = plain(StatusCode::REQUEST_TIMEOUT, &e.to_string());
            toolpin_front::close_after(&mut r);
            return r;
        }
        Err(toolpin_front::BodyError::Unreadable(_)) => {
            return plain(StatusCode::BAD_REQUEST, "the body could not be read")
        }
    };
    // Decompressing and decoding are CPU work and take memory: a few at
    // a time, off the connections' tasks.
    let Ok(_permit) = receiver.decodes.acquire().await else {
        return busy(&receiver);
    };
    let r = Arc::clone(&receiver);
    let outcome = tokio::task::spawn_blocking(move || r.ingest(&body, gzip, encoding)).await;
    match outcome {
        Ok(Outcome::Stored { rejected, why }) => success(encoding, rejected, &why),
        Ok(Outcome::Malformed(why)) => bad_request(encoding, &why),
        Ok(Outcome::TooLarge(why)) => too_large(&receiver, &why),
        Ok(Outcome::Busy) => busy(&receiver),
        Err(_) => plain(
            StatusCode::INTERNAL_SERVER_ERROR,
            "the request could not be read",
        ),
    }
}

/// Serves `listener` until `shutdown` completes, then stops accepting,
/// lets open connections finish the request they are in (at most
/// `grace`), and returns. Connections are bounded as [`Settings`] says
/// (by `toolpin-front`'s [`Gate`]).
pub async fn serve(
    listener: TcpListener,
    receiver: Arc<Receiver>,
    shutdown: impl Future<Output = ()> + Send,
    grace: Duration,
) -> std::io::Result<()> {
    let gate = Arc::clone(&receiver.gate);
    // Every failed accept is counted by the gate, for the log.
    let handler = move |req| handle(Arc::clone(&receiver), req);
    gate.serve(listener, handler, |_, _| {}, shutdown, grace)
        .await
}
