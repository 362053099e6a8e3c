//! Calling a live server's tools (`toolpin contract record` and `run`):
//! one session per server, reached exactly as a capture reaches it; the
//! session's tools listed first, as a capture lists them, and pinned as the
//! lockfile pins them, so that the caller's [`Gate`] decides from what the
//! server serves now, not from the pin, whether a tool may be called; then
//! `tools/call` per request in order, each with its own deadline, its
//! answer read up to [`MAX_RESULT_BYTES`], and its wall-clock latency
//! measured.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};

use toolpin_manifest::{PinBuilder, PinnedTool, Redactor, ServerPin};

use crate::mcp::{self, Client, HttpMode, HttpSpec, McpError, RequestError, SessionOptions};
use crate::servers::Server;
use crate::source::{Endpoint, Source};

/// One `tools/call` to make.
#[derive(Clone, Debug)]
pub struct Request {
    /// The tool's name as the server serves it (no configured prefix).
    pub tool: String,
    pub arguments: Map<String, Value>,
    pub timeout: Duration,
}

/// How one call failed below the tool result.
#[derive(Clone, Debug, PartialEq)]
pub enum Failure {
    /// A JSON-RPC error object.
    Rpc { code: i64, message: String },
    /// An HTTP refusal.
    Http { status: u16, message: String },
    /// No answer within the call's timeout.
    Timeout,
    /// The transport failed or the server went away.
    Transport(String),
    /// The answer was larger than [`MAX_RESULT_BYTES`]: skipped unread.
    TooLarge(usize),
    /// Not sent: the [`Gate`] refused the tool, for this reason.
    NotCalled(String),
}

/// The largest `tools/call` answer read: a larger one is skipped as it
/// arrives, never held, and its call answered [`Failure::TooLarge`].
pub const MAX_RESULT_BYTES: usize = 16 << 20;

/// Decides whether a tool may be called, from its live definition on the
/// session: listed by `tools/list` and pinned exactly as the lockfile pins
/// it (the server's transform, normalization and fingerprint), or `None`
/// when the session does not list it. Called once per tool, with its name
/// as pinned (the server's prefix included), before any request to it;
/// `Err(why)` refuses it: none of its requests is sent, each is answered
/// [`Failure::NotCalled`] with `why`.
pub type Gate<'a> = dyn Fn(&str, Option<&PinnedTool>) -> Result<(), String> + 'a;

/// One call's answer.
#[derive(Clone, Debug)]
pub struct Answer {
    /// The `tools/call` result (which may say `isError`), or the failure.
    pub result: Result<Value, Failure>,
    pub latency: Duration,
}

/// Calls `requests` on `server`, in order, over one session, those to the
/// tools `gate` admits. `Err` when the server cannot be reached, the
/// session cannot be opened or its tools cannot be listed: the server is
/// unavailable, which is not drift.
pub fn call_server(
    server: &Server,
    requests: &[Request],
    gate: &Gate<'_>,
) -> Result<Vec<Answer>, String> {
    let mut answers = Vec::with_capacity(requests.len());
    call_server_each(server, requests, gate, &mut |a| answers.push(a))?;
    Ok(answers)
}

/// [`call_server`], handing each answer to `on_answer` as it arrives, in
/// request order: a caller can work on one answer (on another thread)
/// while the server works on the next.
pub fn call_server_each(
    server: &Server,
    requests: &[Request],
    gate: &Gate<'_>,
    on_answer: &mut dyn FnMut(Answer),
) -> Result<(), String> {
    let Source::Mcp { endpoint, session } = &server.source else {
        return Err("not an MCP server; only MCP servers can be called".into());
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    let redactor = Redactor::new(&server.secrets);
    // What a server echoes of its credentials in a result or an error is
    // redacted before anyone sees the answer: a behaviour snapshot, a
    // report or the ledger is made from it.
    let credentials = Redactor::new(&server.credentials);
    let mut redacted = |mut answer: Answer| {
        answer.redact(&credentials);
        on_answer(answer)
    };
    let session = Session {
        endpoint,
        opts: session,
        server,
    };
    runtime
        .block_on(call_all(&session, requests, gate, &mut redacted))
        .map_err(|e| redactor.redact(&e.to_string()))
}

impl Answer {
    /// Replaces every secret `redactor` knows in the result or failure.
    fn redact(&mut self, redactor: &Redactor) {
        match &mut self.result {
            Ok(value) => {
                redactor.redact_value(value);
            }
            Err(
                Failure::Rpc { message, .. }
                | Failure::Http { message, .. }
                | Failure::Transport(message)
                | Failure::NotCalled(message),
            ) => *message = redactor.redact(message),
            Err(Failure::Timeout | Failure::TooLarge(_)) => {}
        }
    }
}

struct Session<'a> {
    endpoint: &'a Endpoint,
    opts: &'a SessionOptions,
    server: &'a Server,
}

async fn connect(endpoint: &Endpoint, opts: &SessionOptions) -> Result<Client, McpError> {
    match endpoint {
        Endpoint::Stdio(spec) => {
            tokio::time::timeout(opts.timeouts.connect, Client::connect_stdio(spec))
                .await
                .map_err(|_| McpError::new(mcp::Phase::Connect, "timed out starting the server"))?
        }
        Endpoint::Http(spec) => {
            let spec = HttpSpec {
                mode: match spec.mode {
                    HttpMode::Auto => HttpMode::Streamable,
                    m => m,
                },
                ..spec.clone()
            };
            Client::connect_http(&spec, opts.timeouts.connect).await
        }
    }
}

async fn call_all(
    session: &Session<'_>,
    requests: &[Request],
    gate: &Gate<'_>,
    on_answer: &mut dyn FnMut(Answer),
) -> Result<(), McpError> {
    let opts = session.opts;
    let mut client = connect(session.endpoint, opts).await?;
    let listed = async {
        let opened = mcp::open(&mut client, opts).await?;
        let live = list(&mut client, session, &opened).await?;
        Ok::<_, McpError>((opened, live))
    };
    let (opened, live) = match listed.await {
        Ok(o) => o,
        Err(e) => {
            client.close(Duration::from_secs(2)).await;
            return Err(e);
        }
    };
    if !opened.stateless {
        client.set_protocol_version(&opened.protocol_version);
    }
    // Listing pages may be as large as a capture allows; an answer to a
    // call is read up to its own limit.
    client.limit_messages(MAX_RESULT_BYTES);
    let prefix = &session.server.transform.prefix;
    let mut admitted: BTreeMap<&str, Result<(), String>> = BTreeMap::new();
    for request in requests {
        let admission = admitted.entry(&request.tool).or_insert_with(|| {
            // The name the lockfile pins it under (the transform's prefix
            // before the served name).
            let pinned = format!("{prefix}{}", request.tool);
            gate(&pinned, live.tools.get(&pinned))
        });
        if let Err(why) = admission {
            on_answer(Answer {
                result: Err(Failure::NotCalled(why.clone())),
                latency: Duration::ZERO,
            });
            continue;
        }
        let mut params = json!({"name": request.tool, "arguments": request.arguments});
        if opened.stateless {
            params["_meta"] = mcp::stateless_meta(opts);
        }
        let started = Instant::now();
        let result = client
            .request("tools/call", Some(params), request.timeout)
            .await;
        let latency = started.elapsed();
        let result = result.map_err(|e| match e {
            RequestError::Rpc { code, message, .. } => Failure::Rpc { code, message },
            RequestError::Http { status, message } => Failure::Http { status, message },
            RequestError::Timeout(_) => Failure::Timeout,
            RequestError::Transport(m) | RequestError::Unreachable(m) => Failure::Transport(m),
            RequestError::TooLarge(limit) => Failure::TooLarge(limit),
        });
        on_answer(Answer { result, latency });
    }
    client.close(Duration::from_secs(2)).await;
    Ok(())
}

/// The session's tools, listed with a capture's guards and pinned with the
/// server's transform and its credentials redacted, as `toolpin lock` pins
/// them.
async fn list(
    client: &mut Client,
    session: &Session<'_>,
    opened: &mcp::Opened,
) -> Result<ServerPin, McpError> {
    let mut builder = PinBuilder::new(session.server.transform.clone());
    mcp::list(client, session.opts, opened, &mut builder).await?;
    let mut pin = builder.finish(Value::Null, "mcp", None);
    pin.redact(&Redactor::new(&session.server.credentials));
    Ok(pin)
}
