//! The loopback endpoint the recorded command's model client talks to: one
//! HTTP/1.1 server on 127.0.0.1, every request routed by [`api::route`],
//! the `tools` of each model request kept, everything else of it dropped.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::header::{HeaderValue, CONTENT_ENCODING, CONTENT_TYPE};
use hyper::{Request, Response, StatusCode};
use serde_json::Value;
use tokio::net::TcpListener;
use toolpin_manifest::time::Timestamp;
use toolpin_manifest::Fingerprint;

use super::api::{self, Answer, Api, Route};

/// Largest request body read; a bigger one is a failure of the recording.
pub const MAX_BODY_BYTES: usize = 64 << 20;
/// Distinct tool arrays kept; past them a recording fails (each is a
/// catalog to pin, and memory is bounded by them).
pub const MAX_ARRAYS: usize = 256;

/// One distinct tool array, in the order first seen.
#[derive(Debug, Clone)]
pub struct RecordedArray {
    pub api: Api,
    /// The model named by the first request that sent it.
    pub model: String,
    /// That request's path.
    pub path: String,
    /// That request's position among the model requests, from 1.
    pub first_request: usize,
    /// How many requests sent it.
    pub requests: usize,
    /// The `tools` member exactly as the client sent it.
    pub raw: String,
    /// The fingerprint of its canonical form (RFC 8785): arrays are told
    /// apart by value, so the same tools serialized with members in
    /// another order or numbers spelled otherwise are one array. Only the
    /// text is kept, not the parsed tree, which is ten times its size.
    pub digest: Fingerprint,
}

/// What the endpoint saw.
#[derive(Debug, Default)]
pub struct Log {
    /// Model requests received (with tools or without).
    pub requests: usize,
    /// The API of the first of them.
    pub first_api: Option<Api>,
    pub arrays: Vec<RecordedArray>,
    /// Requests toolpin could not read: path and why, one line each.
    pub failures: Vec<String>,
    /// Array index by a hash of its bytes, so a resent array is found
    /// without parsing it again.
    by_bytes: HashMap<u64, usize>,
}

impl Log {
    /// Counts a model request that carried no tools.
    fn count(&mut self, api: Api) {
        self.requests += 1;
        self.first_api.get_or_insert(api);
    }

    fn keep(&mut self, api: Api, model: &str, path: &str, raw: String) -> Result<(), String> {
        self.count(api);
        let position = self.requests;
        let hash = {
            let mut h = std::collections::hash_map::DefaultHasher::new();
            (api as u8).hash(&mut h);
            raw.hash(&mut h);
            h.finish()
        };
        if let Some(&i) = self.by_bytes.get(&hash) {
            if self.arrays[i].raw == raw && self.arrays[i].api == api {
                self.arrays[i].requests += 1;
                return Ok(());
            }
        }
        let value: Value =
            serde_json::from_str(&raw).map_err(|e| format!("\"tools\" is not JSON ({e})"))?;
        let digest = Fingerprint::of_tool(&value, &mut Vec::new());
        drop(value);
        if let Some(i) = self
            .arrays
            .iter()
            .position(|a| a.api == api && a.digest == digest)
        {
            self.arrays[i].requests += 1;
            self.by_bytes.insert(hash, i);
            return Ok(());
        }
        if self.arrays.len() >= MAX_ARRAYS {
            return Err(format!(
                "a tool array unlike the {MAX_ARRAYS} before it; does the agent put something that changes per request (a time, an ID) into its tools?"
            ));
        }
        self.by_bytes.insert(hash, self.arrays.len());
        self.arrays.push(RecordedArray {
            api,
            model: model.to_string(),
            path: path.to_string(),
            first_request: position,
            requests: 1,
            raw,
            digest,
        });
        Ok(())
    }
}

/// The endpoint's shared state.
#[derive(Default)]
pub struct Endpoint {
    log: Mutex<Log>,
    ids: AtomicU64,
}

impl Endpoint {
    fn log(&self) -> MutexGuard<'_, Log> {
        // A panic while holding the lock cannot leave the log half-written
        // in a way that matters more than losing the recording.
        self.log.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// What was seen; the endpoint's log is left empty.
    pub fn take(&self) -> Log {
        std::mem::take(&mut *self.log())
    }

    /// A request toolpin cannot record: its method, path and why, never
    /// its body (messages, the system prompt).
    fn fail(&self, method: &str, path: &str, why: &str) -> Answer {
        self.log().failures.push(format!("{method} {path}: {why}"));
        api::error(&format!("toolpin cannot record this request: {why}"))
    }

    async fn handle(&self, req: Request<Incoming>) -> (StatusCode, Answer) {
        let method = req.method().as_str().to_string();
        let path = req.uri().path().to_string();
        let route = api::route(&method, &path, req.uri().query());
        let (api, gemini) = match route {
            Route::ListModels => return (StatusCode::OK, api::models()),
            Route::Unknown => {
                let why = "not a model API toolpin records (OpenAI Chat Completions or Responses, Anthropic Messages, Gemini generateContent)";
                // Its body is not read: nothing of it is wanted.
                drop(req);
                return (StatusCode::NOT_FOUND, self.fail(&method, &path, why));
            }
            Route::CountTokens => return (StatusCode::OK, api::count_tokens()),
            Route::Model { api, gemini } => (api, gemini),
        };
        let encoded = req
            .headers()
            .get(CONTENT_ENCODING)
            .and_then(|v| v.to_str().ok())
            .map(|v| v.trim().to_ascii_lowercase())
            .filter(|v| !v.is_empty() && v != "identity");
        if let Some(encoding) = encoded {
            let why = format!("a body in content encoding {encoding:?}: send it uncompressed");
            return (
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                self.fail(&method, &path, &why),
            );
        }
        let body = match Limited::new(req.into_body(), MAX_BODY_BYTES)
            .collect()
            .await
        {
            Ok(b) => b.to_bytes(),
            Err(e) => {
                let why = if e
                    .downcast_ref::<http_body_util::LengthLimitError>()
                    .is_some()
                {
                    format!("a body over {MAX_BODY_BYTES} bytes")
                } else {
                    "the body could not be read".to_string()
                };
                return (
                    StatusCode::PAYLOAD_TOO_LARGE,
                    self.fail(&method, &path, &why),
                );
            }
        };
        let parsed = match api::parse(api, gemini.as_ref(), &body) {
            Ok(p) => p,
            Err(why) => return (StatusCode::BAD_REQUEST, self.fail(&method, &path, &why)),
        };
        // The body (messages, system prompt) goes here, unread past what
        // `parse` took.
        drop(body);
        let kept = {
            let mut log = self.log();
            match parsed.tools {
                Some(raw) => log.keep(api, &parsed.model, &path, raw),
                None => {
                    log.count(api);
                    Ok(())
                }
            }
        };
        if let Err(why) = kept {
            return (StatusCode::BAD_REQUEST, self.fail(&method, &path, &why));
        }
        let id = self.ids.fetch_add(1, Ordering::Relaxed) + 1;
        (
            StatusCode::OK,
            api::answer(&parsed.reply, id, Timestamp::now().since_epoch().as_secs()),
        )
    }
}

type Body = Full<Bytes>;

fn respond(status: StatusCode, answer: Answer) -> Response<Body> {
    let mut r = Response::new(Full::new(Bytes::from(answer.body)));
    *r.status_mut() = status;
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(answer.content_type));
    r
}

/// Serves `listener` until `stop` completes; connections still open then
/// are closed after the request they are in.
pub async fn serve(
    listener: TcpListener,
    endpoint: Arc<Endpoint>,
    stop: impl std::future::Future<Output = ()>,
) {
    let (closing_tx, closing_rx) = tokio::sync::watch::channel(false);
    let open = Arc::new(AtomicU64::new(0));
    tokio::pin!(stop);
    loop {
        tokio::select! {
            () = &mut stop => break,
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else { continue };
                let endpoint = Arc::clone(&endpoint);
                let mut closing = closing_rx.clone();
                let open = Arc::clone(&open);
                open.fetch_add(1, Ordering::SeqCst);
                tokio::spawn(async move {
                    let io = hyper_util::rt::TokioIo::new(stream);
                    let service = hyper::service::service_fn(move |req| {
                        let endpoint = Arc::clone(&endpoint);
                        async move {
                            let (status, answer) = endpoint.handle(req).await;
                            Ok::<_, std::convert::Infallible>(respond(status, answer))
                        }
                    });
                    let conn = hyper::server::conn::http1::Builder::new()
                        .serve_connection(io, service);
                    tokio::pin!(conn);
                    tokio::select! {
                        _ = conn.as_mut() => {}
                        _ = closing.changed() => {
                            conn.as_mut().graceful_shutdown();
                            let _ = conn.await;
                        }
                    }
                    open.fetch_sub(1, Ordering::SeqCst);
                });
            }
        }
    }
    let _ = closing_tx.send(true);
    // The command has exited: whatever its children still send gets a
    // moment, not a wait.
    let deadline = tokio::time::Instant::now() + Duration::from_millis(500);
    while open.load(Ordering::SeqCst) > 0 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrays_are_told_apart_by_value_and_counted() {
        let mut log = Log::default();
        let a = r#"[{"name":"a","input_schema":{"type":"object"}}]"#;
        let a_reordered = r#"[{"input_schema":{"type":"object"},"name":"a"}]"#;
        let b = r#"[{"name":"b","input_schema":{"type":"object"}}]"#;
        log.keep(Api::Anthropic, "m1", "/v1/messages", a.into())
            .expect("a");
        log.keep(Api::Anthropic, "m1", "/v1/messages", a.into())
            .expect("a again");
        log.keep(Api::Anthropic, "m2", "/v1/messages", b.into())
            .expect("b");
        log.keep(Api::Anthropic, "m1", "/v1/messages", a_reordered.into())
            .expect("a in other bytes");
        assert_eq!(log.requests, 4);
        let seen: Vec<(usize, usize, &str, &str)> = log
            .arrays
            .iter()
            .map(|a| {
                (
                    a.first_request,
                    a.requests,
                    a.model.as_str(),
                    a.raw.as_str(),
                )
            })
            .collect();
        assert_eq!(seen, vec![(1, 3, "m1", a), (3, 1, "m2", b)]);
    }

    #[test]
    fn distinct_arrays_are_bounded() {
        let mut log = Log::default();
        for i in 0..MAX_ARRAYS {
            let raw = format!(r#"[{{"name":"t{i}"}}]"#);
            log.keep(Api::Anthropic, "m", "/v1/messages", raw)
                .expect("kept");
        }
        // A resent array is still counted; a new one is refused.
        log.keep(
            Api::Anthropic,
            "m",
            "/v1/messages",
            r#"[{"name":"t0"}]"#.into(),
        )
        .expect("resent");
        let err = log
            .keep(
                Api::Anthropic,
                "m",
                "/v1/messages",
                r#"[{"name":"new"}]"#.into(),
            )
            .expect_err("one too many");
        assert!(err.contains("unlike the 256 before it"), "{err}");
        assert_eq!(log.requests, MAX_ARRAYS + 2);
    }
}
