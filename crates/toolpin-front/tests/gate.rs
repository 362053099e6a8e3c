//! A gate on loopback with small limits, spoken to over raw TCP: what it
//! closes, when, why it says it did, and what it never closes.

use std::sync::Arc;
use std::time::{Duration, Instant};

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response, StatusCode};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use toolpin_front::{close_after, BodyError, Closed, Gate, Limits, Tally, EVICT_AFTER};

/// Answers `POST` with the length of its body (at most 1 KiB), and `GET
/// /slow` after 1.5 s.
async fn handle(gate: Arc<Gate>, req: Request<Incoming>) -> Response<Full<Bytes>> {
    let reply = |status: StatusCode, text: String| {
        let mut r = Response::new(Full::new(Bytes::from(text)));
        *r.status_mut() = status;
        r
    };
    if req.uri().path() == "/slow" {
        tokio::time::sleep(Duration::from_millis(1500)).await;
        return reply(StatusCode::OK, "slow".into());
    }
    match gate.body(req.into_body(), 1024).await {
        Ok(b) => reply(StatusCode::OK, b.len().to_string()),
        Err(e @ BodyError::TimedOut(_)) => {
            let mut r = reply(StatusCode::REQUEST_TIMEOUT, e.to_string());
            close_after(&mut r);
            r
        }
        Err(e @ BodyError::TooLarge(_)) => reply(StatusCode::PAYLOAD_TOO_LARGE, e.to_string()),
        Err(e) => reply(StatusCode::BAD_REQUEST, e.to_string()),
    }
}

/// A gate serving on a free loopback port until the test ends.
async fn start(limits: Limits) -> (Arc<Gate>, String, tokio::sync::oneshot::Sender<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr").to_string();
    let gate = Gate::new(limits, Arc::new(Tally::default()));
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = Arc::clone(&gate);
    let handler = {
        let gate = Arc::clone(&gate);
        move |req| handle(Arc::clone(&gate), req)
    };
    tokio::spawn(serving.serve(
        listener,
        handler,
        |_, _| {},
        async {
            let _ = stopped.await;
        },
        Duration::from_secs(1),
    ));
    (gate, addr, stop)
}

/// Reads until the gate closes the connection (at most 10 s): what came,
/// and when it ended.
async fn until_closed(stream: &mut TcpStream) -> (String, Duration) {
    let start = Instant::now();
    let mut got = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut got)).await;
    assert!(read.is_ok(), "not closed within 10 s: {got:?}");
    (String::from_utf8_lossy(&got).into_owned(), start.elapsed())
}

fn limits(max_connections: usize) -> Limits {
    Limits {
        max_connections,
        header_read_timeout: Duration::from_millis(300),
        connection_idle: Duration::from_secs(5),
        body_timeout: Duration::from_millis(300),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_that_stops_short_is_answered_408_and_its_connection_closed() {
    let (gate, addr, _stop) = start(limits(8)).await;
    let mut c = TcpStream::connect(&addr).await.expect("connect");
    c.write_all(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n0123456789")
        .await
        .expect("send");
    let (answer, after) = until_closed(&mut c).await;
    assert!(answer.starts_with("HTTP/1.1 408 "), "{answer}");
    assert!(answer.contains("connection: close"), "{answer}");
    assert!(after >= Duration::from_millis(250), "{after:?}");
    // A whole body on a connection of its own is read.
    let mut c = TcpStream::connect(&addr).await.expect("connect");
    c.write_all(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nConnection: close\r\n\r\nabc")
        .await
        .expect("send");
    let (answer, _) = until_closed(&mut c).await;
    assert!(
        answer.starts_with("HTTP/1.1 200 ") && answer.ends_with("\r\n\r\n3"),
        "{answer}"
    );
    let counts = gate.tally().counts();
    assert_eq!(
        counts.closed.get(&Closed::BodyTimeout),
        Some(&1),
        "{counts:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unfinished_headers_are_closed_at_the_header_read_timeout() {
    let (gate, addr, _stop) = start(limits(8)).await;
    let mut c = TcpStream::connect(&addr).await.expect("connect");
    c.write_all(b"GET / HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        .await
        .expect("send");
    let (answer, after) = until_closed(&mut c).await;
    assert_eq!(answer, "");
    assert!(
        after >= Duration::from_millis(250) && after < Duration::from_secs(3),
        "{after:?}"
    );
    let counts = gate.tally().counts();
    assert_eq!(
        counts.closed.get(&Closed::HeaderTimeout),
        Some(&1),
        "{counts:?}"
    );
}

/// At the cap, the connection quiet longest is closed for the next one,
/// once it has been quiet for EVICT_AFTER; a request in flight is never
/// cut, so with every connection busy the next waits for one to end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_the_cap_the_connection_idle_longest_makes_room_never_one_in_flight() {
    let (gate, addr, _stop) = start(limits(2)).await;
    let mut oldest = TcpStream::connect(&addr).await.expect("connect");
    tokio::time::sleep(Duration::from_millis(100)).await;
    let _younger = TcpStream::connect(&addr).await.expect("connect");
    let started = Instant::now();
    let mut third = TcpStream::connect(&addr).await.expect("connect");
    third
        .write_all(
            b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok",
        )
        .await
        .expect("send");
    let (answer, _) = until_closed(&mut third).await;
    assert!(answer.starts_with("HTTP/1.1 200 "), "{answer}");
    let waited = started.elapsed();
    assert!(
        waited >= EVICT_AFTER - Duration::from_millis(200) && waited < Duration::from_secs(4),
        "answered after {waited:?}"
    );
    let (rest, _) = until_closed(&mut oldest).await;
    assert_eq!(rest, "", "the oldest was closed without an answer");
    assert_eq!(gate.tally().counts().closed.get(&Closed::Evicted), Some(&1));
    drop(_younger);

    // Two requests in flight fill the cap: the next connection is served
    // only once one of them is answered, and neither is cut.
    let (gate, addr, _stop) = start(limits(2)).await;
    let mut slow = Vec::new();
    for _ in 0..2 {
        let mut c = TcpStream::connect(&addr).await.expect("connect");
        c.write_all(b"GET /slow HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .await
            .expect("send");
        slow.push(c);
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let started = Instant::now();
    let mut next = TcpStream::connect(&addr).await.expect("connect");
    next.write_all(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        .await
        .expect("send");
    let (answer, _) = until_closed(&mut next).await;
    assert!(answer.starts_with("HTTP/1.1 200 "), "{answer}");
    assert!(
        started.elapsed() >= Duration::from_millis(1100),
        "{:?}",
        started.elapsed()
    );
    for mut c in slow {
        let (answer, _) = until_closed(&mut c).await;
        assert!(answer.ends_with("slow"), "{answer}");
    }
    assert_eq!(gate.tally().counts().closed.get(&Closed::Evicted), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_stops_accepting_and_lets_the_request_in_flight_finish() {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr").to_string();
    let gate = Gate::new(limits(8), Arc::new(Tally::default()));
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let handler = {
        let gate = Arc::clone(&gate);
        move |req| handle(Arc::clone(&gate), req)
    };
    let served = tokio::spawn(Arc::clone(&gate).serve(
        listener,
        handler,
        |_, _| {},
        async {
            let _ = stopped.await;
        },
        Duration::from_secs(5),
    ));
    let mut c = TcpStream::connect(&addr).await.expect("connect");
    c.write_all(b"GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .expect("send");
    tokio::time::sleep(Duration::from_millis(200)).await;
    let _ = stop.send(());
    let (answer, _) = until_closed(&mut c).await;
    assert!(
        answer.starts_with("HTTP/1.1 200 ") && answer.ends_with("slow"),
        "{answer}"
    );
    let done = tokio::time::timeout(Duration::from_secs(5), served).await;
    assert!(matches!(done, Ok(Ok(Ok(())))), "{done:?}");
    assert_eq!(gate.held(), 0);
    assert!(TcpStream::connect(&addr).await.is_err(), "still accepting");
}
