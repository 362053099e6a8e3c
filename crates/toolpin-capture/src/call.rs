//! Calling a live server's tools (`toolpin contract record` and `run`):
//! one session per server, reached exactly as a capture reaches it, then
//! `tools/call` per request in order, each with its own deadline and its
//! wall-clock latency measured.

use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};

use toolpin_manifest::Redactor;

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
}

/// One call's answer.
#[derive(Clone, Debug)]
pub struct Answer {
    /// The `tools/call` result (which may say `isError`), or the failure.
    pub result: Result<Value, Failure>,
    pub latency: Duration,
}

/// Calls `requests` on `server`, in order, over one session. `Err` when the
/// server cannot be reached or the session cannot be opened: the server is
/// unavailable, which is not drift.
pub fn call_server(server: &Server, requests: &[Request]) -> Result<Vec<Answer>, String> {
    let mut answers = Vec::with_capacity(requests.len());
    call_server_each(server, requests, &mut |a| answers.push(a))?;
    Ok(answers)
}

/// [`call_server`], handing each answer to `on_answer` as it arrives, in
/// request order: a caller can work on one answer (on another thread)
/// while the server works on the next.
pub fn call_server_each(
    server: &Server,
    requests: &[Request],
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
    runtime
        .block_on(call_all(endpoint, session, requests, &mut redacted))
        .map_err(|e| redactor.redact(&e.to_string()))
}

impl Answer {
    /// Replaces every secret `redactor` knows in the result or failure.
    fn redact(&mut self, redactor: &Redactor) {
        match &mut self.result {
            Ok(value) => {
                redactor.redact_value(value);
            }
            Err(Failure::Rpc { message, .. } | Failure::Http { message, .. })
            | Err(Failure::Transport(message)) => *message = redactor.redact(message),
            Err(Failure::Timeout) => {}
        }
    }
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
    endpoint: &Endpoint,
    opts: &SessionOptions,
    requests: &[Request],
    on_answer: &mut dyn FnMut(Answer),
) -> Result<(), McpError> {
    let mut client = connect(endpoint, opts).await?;
    let opened = match mcp::open(&mut client, opts).await {
        Ok(o) => o,
        Err(e) => {
            client.close(Duration::from_secs(2)).await;
            return Err(e);
        }
    };
    if !opened.stateless {
        client.set_protocol_version(&opened.protocol_version);
    }
    for request in requests {
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
        });
        on_answer(Answer { result, latency });
    }
    client.close(Duration::from_secs(2)).await;
    Ok(())
}
