//! OTLP/HTTP JSON export, received by a plain TCP listener standing in for
//! an OpenTelemetry Collector.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{json, Value};
use toolpin_proxy::telemetry::{CallInfo, Failure, Link, RouteInfo, Telemetry};

/// Accepts one HTTP request and returns its path and JSON body.
fn collector() -> (String, mpsc::Receiver<(String, Value)>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let Ok((mut stream, _)) = listener.accept() else {
            return;
        };
        let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
        let mut data = Vec::new();
        let mut buf = [0u8; 65536];
        loop {
            let n = stream.read(&mut buf).unwrap_or(0);
            if n == 0 {
                break;
            }
            data.extend_from_slice(&buf[..n]);
            let text = String::from_utf8_lossy(&data).to_string();
            if let Some(head_end) = text.find("\r\n\r\n") {
                let length = text[..head_end]
                    .lines()
                    .find_map(|l| {
                        let (k, v) = l.split_once(':')?;
                        k.eq_ignore_ascii_case("content-length")
                            .then(|| v.trim().parse::<usize>().ok())
                            .flatten()
                    })
                    .unwrap_or(0);
                if data.len() >= head_end + 4 + length {
                    let path = text.split_whitespace().nth(1).unwrap_or("").to_string();
                    let body: Value =
                        serde_json::from_slice(&data[head_end + 4..head_end + 4 + length])
                            .unwrap_or(Value::Null);
                    let _ = stream.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}");
                    let _ = tx.send((path, body));
                    return;
                }
            }
        }
    });
    (format!("http://{addr}/v1/traces"), rx)
}

fn attr<'a>(span: &'a Value, key: &str) -> Option<&'a str> {
    span["attributes"]
        .as_array()?
        .iter()
        .find(|a| a["key"] == key)?["value"]["stringValue"]
        .as_str()
}

#[test]
fn a_span_per_call_with_fingerprints_and_the_callers_trace() {
    let (endpoint, received) = collector();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let traceparent = runtime.block_on(async {
        let telemetry =
            Telemetry::otlp(endpoint, vec![("x-tenant".into(), "t1".into())]).expect("exporter");
        let meta =
            json!({"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"});
        let span = telemetry
            .start_call(CallInfo {
                tool: "search_orders",
                route: Some(RouteInfo {
                    server: "orders",
                    upstream_tool: "search",
                    tool_fingerprint: "aa",
                }),
                catalog_fingerprint: "bb",
                meta: Some(&meta),
                request_id: &json!(7),
                protocol_version: Some("2025-06-18"),
                link: &Link::stdio(),
            })
            .expect("enabled");
        let traceparent = span.traceparent();
        span.finish(Some(Failure {
            error_type: "timeout",
            status_code: Some(-32001),
            class: "timeout",
            message: "no answer",
        }));
        telemetry.flush().await;
        traceparent
    });
    let (path, body) = received
        .recv_timeout(Duration::from_secs(10))
        .expect("an export request");
    assert_eq!(path, "/v1/traces");
    let resource = &body["resourceSpans"][0];
    assert_eq!(
        resource["resource"]["attributes"][0]["value"]["stringValue"],
        "toolpin-proxy"
    );
    let span = &resource["scopeSpans"][0]["spans"][0];
    assert_eq!(span["name"], "tools/call search_orders");
    assert_eq!(span["traceId"], "4bf92f3577b34da6a3ce929d0e0e4736");
    assert_eq!(span["parentSpanId"], "00f067aa0ba902b7");
    assert_eq!(span["status"]["code"], 2);
    assert_eq!(attr(span, "toolpin.catalog.fingerprint"), Some("bb"));
    assert_eq!(attr(span, "toolpin.tool.fingerprint"), Some("aa"));
    assert_eq!(attr(span, "gen_ai.tool.name"), Some("search_orders"));
    assert_eq!(attr(span, "toolpin.upstream.tool"), Some("search"));
    assert_eq!(attr(span, "error.type"), Some("timeout"));
    assert_eq!(attr(span, "rpc.response.status_code"), Some("-32001"));
    assert_eq!(attr(span, "jsonrpc.request.id"), Some("7"));
    assert_eq!(attr(span, "mcp.protocol.version"), Some("2025-06-18"));
    assert_eq!(attr(span, "network.transport"), Some("pipe"));
    assert_eq!(attr(span, "mcp.session.id"), None, "none on stdio");
    // The upstream is handed this span as its parent.
    let span_id = span["spanId"].as_str().expect("span id");
    assert_eq!(
        traceparent,
        format!("00-4bf92f3577b34da6a3ce929d0e0e4736-{span_id}-01")
    );
    let start: u128 = span["startTimeUnixNano"]
        .as_str()
        .expect("start")
        .parse()
        .expect("n");
    let end: u128 = span["endTimeUnixNano"]
        .as_str()
        .expect("end")
        .parse()
        .expect("n");
    assert!(end >= start);
}

#[test]
fn disabled_telemetry_makes_no_spans() {
    let t = Telemetry::disabled();
    assert!(!t.enabled());
    assert!(t
        .start_call(CallInfo {
            tool: "t",
            route: None,
            catalog_fingerprint: "",
            meta: None,
            request_id: &Value::Null,
            protocol_version: None,
            link: &Link::stdio(),
        })
        .is_none());
}
