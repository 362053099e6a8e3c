//! Starting a proxy: the runtimes, OTLP export from the environment, the
//! termination and flags-file watchers, and the front (Streamable HTTP, or
//! stdio with optional `/metrics`). `toolpin proxy` resolves its flags and
//! toolpin.toml into [`Settings`] and [`Serve`] and calls [`serve`].

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use crate::{events, http, stdio, telemetry, Proxy, Settings};

/// Where the proxy listens.
pub enum Front {
    /// Streamable HTTP at `http://ADDR/mcp` (and `/metrics`).
    Http {
        addr: String,
        options: http::Options,
    },
    /// stdio, with Prometheus `/metrics` on `metrics` when given.
    Stdio {
        metrics: Option<(String, http::Options)>,
    },
}

/// What [`serve`] needs besides the [`Settings`].
pub struct Serve {
    pub events: events::Sink,
    /// `[proxy] otlp_endpoint`; the OTEL_* variables win.
    pub otlp_endpoint: Option<String>,
    pub front: Front,
}

/// Builds the proxy and serves until the front ends. `before_serving` runs
/// once the proxy exists and before the front opens (the drift check at
/// start); its error stops the start. Errors are one line for the user.
pub fn serve(
    settings: Settings,
    serve: Serve,
    before_serving: impl FnOnce(&Arc<Proxy>) -> Result<(), String>,
) -> Result<(), String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    let endpoint = telemetry::endpoint_from_env(serve.otlp_endpoint.as_deref());
    let telemetry = match endpoint {
        Some(endpoint) => {
            // The exporter's task is spawned here and runs with the proxy.
            let _context = runtime.enter();
            telemetry::Telemetry::otlp(endpoint, otlp_headers())?
        }
        None => telemetry::Telemetry::disabled(),
    };
    let proxy = Proxy::new(settings, serve.events, telemetry)?;
    before_serving(&proxy)?;

    runtime.block_on(async move {
        watch_flags(Arc::clone(&proxy));
        on_termination(Arc::clone(&proxy));
        match serve.front {
            Front::Http { addr, options } => http::serve(proxy, &addr, options)
                .await
                .map_err(|e| format!("--listen {addr}: {e}")),
            Front::Stdio { metrics } => {
                if let Some((addr, options)) = metrics {
                    http::serve_metrics(Arc::clone(&proxy), &addr, options)
                        .await
                        .map_err(|e| format!("--metrics-listen {addr}: {e}"))?;
                }
                let served = stdio::serve(Arc::clone(&proxy))
                    .await
                    .map_err(|e| format!("stdio: {e}"));
                proxy.telemetry.flush().await;
                served
            }
        }
    })
}

/// `OTEL_EXPORTER_OTLP_HEADERS` (or the traces-only variable).
fn otlp_headers() -> Vec<(String, String)> {
    std::env::var("OTEL_EXPORTER_OTLP_HEADERS")
        .or_else(|_| std::env::var("OTEL_EXPORTER_OTLP_TRACES_HEADERS"))
        .map(|text| parse_otlp_headers(&text))
        .unwrap_or_default()
}

/// `k=v,k2=v2`, values percent-decoded (the OTel exporter specification's
/// W3C-baggage-like form); a pair without `=` or a key is skipped.
fn parse_otlp_headers(text: &str) -> Vec<(String, String)> {
    text.split(',')
        .filter_map(|pair| pair.split_once('='))
        .map(|(k, v)| {
            let value = percent_encoding::percent_decode_str(v.trim()).decode_utf8_lossy();
            (k.trim().to_string(), value.into_owned())
        })
        .filter(|(k, _)| !k.is_empty())
        .collect()
}

/// On SIGTERM or SIGINT (an agent stopping its server), the upstream
/// servers go down with the proxy instead of being orphaned.
fn on_termination(proxy: Arc<Proxy>) {
    use tokio::signal::unix::{signal, SignalKind};
    for (kind, code) in [
        (SignalKind::terminate(), 143),
        (SignalKind::interrupt(), 130),
    ] {
        let proxy = Arc::clone(&proxy);
        tokio::spawn(async move {
            let Ok(mut s) = signal(kind) else { return };
            if s.recv().await.is_some() {
                proxy.kill_upstreams();
                // Spans still waiting for export go out first (bounded).
                let _ = tokio::time::timeout(Duration::from_secs(2), proxy.telemetry.flush()).await;
                std::process::exit(code);
            }
        });
    }
}

/// The stdio front reads the servers' answers and writes them to the agent
/// on a thread of its own (a second current-thread runtime), while the
/// main thread reads the agent's requests and writes them upstream: the
/// two directions of a call run on two cores, with no hand-off between
/// threads on the way (measured in docs/performance.md).
/// For [`Settings::reply_runtime`] (stdio only).
pub fn reply_runtime() -> Result<tokio::runtime::Handle, String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    let handle = runtime.handle().clone();
    std::thread::Builder::new()
        .name("toolpin-answers".into())
        .spawn(move || runtime.block_on(std::future::pending::<()>()))
        .map_err(|e| format!("cannot start a thread: {e}"))?;
    Ok(handle)
}

/// Reloads the flags file when it changes on disk (checked twice a
/// second) and on SIGHUP.
fn watch_flags(proxy: Arc<Proxy>) {
    let Some(path) = proxy.settings.flags_path.clone() else {
        return;
    };
    let stamp = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    let polling = Arc::clone(&proxy);
    tokio::spawn(async move {
        let mut last = stamp(&path);
        loop {
            tokio::time::sleep(Duration::from_millis(500)).await;
            let now = stamp(&path);
            if now != last {
                last = now;
                polling.reload_flags();
            }
        }
    });
    tokio::spawn(async move {
        let Ok(mut hup) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())
        else {
            return;
        };
        while hup.recv().await.is_some() {
            proxy.reload_flags();
        }
    });
}

#[cfg(test)]
mod tests {
    use super::parse_otlp_headers;

    #[test]
    fn otlp_headers_are_pairs_with_decoded_values() {
        assert_eq!(
            parse_otlp_headers("api-key=a%20b%3D, x-team = core ,broken,=v,bad=%zz"),
            vec![
                ("api-key".to_string(), "a b=".to_string()),
                ("x-team".to_string(), "core".to_string()),
                ("bad".to_string(), "%zz".to_string()),
            ]
        );
    }
}
