//! The stdio front: the agent starts `toolpin proxy` as its MCP server
//! command and speaks JSON-RPC over stdin and stdout, one message per line.
//! Logs never go to stdout.

use std::os::fd::AsFd;
use std::pin::Pin;
use std::sync::Arc;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

use crate::session::{error_response, Session};
use crate::wire::Outgoing;
use crate::Proxy;

/// Longest line accepted from the agent.
const MAX_LINE: usize = 64 << 20;

/// Standard input. A pipe (the usual case: an agent started the proxy) is
/// read directly, non-blocking, on the runtime; tokio's own stdin hands
/// every read to a blocking thread, which costs two context switches a
/// message.
fn stdin() -> Pin<Box<dyn AsyncRead + Send>> {
    let pipe = std::io::stdin()
        .as_fd()
        .try_clone_to_owned()
        .and_then(tokio::net::unix::pipe::Receiver::from_owned_fd);
    match pipe {
        Ok(p) => Box::pin(p),
        Err(_) => Box::pin(tokio::io::stdin()),
    }
}

/// Standard output, likewise.
fn stdout() -> Pin<Box<dyn AsyncWrite + Send>> {
    let pipe = std::io::stdout()
        .as_fd()
        .try_clone_to_owned()
        .and_then(tokio::net::unix::pipe::Sender::from_owned_fd);
    match pipe {
        Ok(p) => Box::pin(p),
        Err(_) => Box::pin(tokio::io::stdout()),
    }
}

/// Serves one agent on stdin/stdout until stdin closes.
pub async fn serve(proxy: Arc<Proxy>) -> std::io::Result<()> {
    let (to_client, mut outgoing) = mpsc::unbounded_channel::<Outgoing>();
    let session = Session::start(
        Arc::clone(&proxy),
        to_client.clone(),
        crate::telemetry::Link::stdio(),
    );
    // Opened on the runtime that writes the answers.
    let writer = proxy.spawn_reply(async move {
        let mut stdout = stdout();
        let mut buf = Vec::with_capacity(1 << 16);
        while let Some(message) = outgoing.recv().await {
            // Whatever else is ready goes out in the same write.
            buf.clear();
            let mut next = Some(message);
            while let Some(m) = next {
                m.write_to(&mut buf);
                buf.push(b'\n');
                next = if buf.len() < (1 << 20) {
                    outgoing.try_recv().ok()
                } else {
                    None
                };
            }
            if stdout.write_all(&buf).await.is_err() || stdout.flush().await.is_err() {
                return;
            }
        }
    });
    let mut lines = BufReader::with_capacity(1 << 16, stdin());
    let mut buf = Vec::new();
    loop {
        buf.clear();
        let n = lines.read_until(b'\n', &mut buf).await?;
        if n == 0 {
            break;
        }
        if buf.len() > MAX_LINE {
            let _ = to_client.send(Outgoing::Json(error_response(
                &Value::Null,
                crate::jsonrpc::PARSE_ERROR,
                format!("message longer than {MAX_LINE} bytes"),
                None,
            )));
            continue;
        }
        // A line that is not UTF-8 is no JSON: refused as the HTTP front
        // refuses such a body (the same parse error), never forwarded with
        // the bytes replaced.
        let text = match std::str::from_utf8(&buf) {
            Ok(t) => t.trim().to_string(),
            Err(_) => {
                let why = serde_json::from_slice::<Value>(buf.trim_ascii())
                    .err()
                    .map_or_else(|| "invalid UTF-8".to_string(), |e| e.to_string());
                let _ = to_client.send(Outgoing::Json(error_response(
                    &Value::Null,
                    crate::jsonrpc::PARSE_ERROR,
                    format!("parse error: {why}"),
                    None,
                )));
                continue;
            }
        };
        if text.is_empty() {
            continue;
        }
        session.handle_text(text).await;
    }
    session.close().await;
    drop(session);
    drop(to_client);
    let _ = writer.await;
    Ok(())
}
