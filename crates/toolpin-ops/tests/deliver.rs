//! Delivering the outbox with a sink that never answers, on SQLite and
//! PostgreSQL: the other sinks are not delayed, and two watchers working
//! the same outbox at once send each notification once, even when a pass
//! outlasts the lease (issue 32, fault 10). The sinks are local HTTP
//! stand-ins on loopback; the sends are `toolpin_ops::deliver::send`'s.

#[path = "../../toolpin-ledger/tests/common/mod.rs"]
mod common;
#[path = "../../toolpin-notify/tests/common/mod.rs"]
mod receiver;

use std::collections::BTreeMap;
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use common::Db;
use receiver::{Receiver, Reply};
use toolpin_config::notify::NotifyConfig;
use toolpin_ledger::{Delivery, DeliveryState, EventFilter, Ledger, Sighting};
use toolpin_ops::deliver::{deliver_due, Sender, Sent};

/// A sink that takes connections and never answers.
struct Hang {
    port: u16,
    /// The connections, held open.
    _held: Arc<Mutex<Vec<TcpStream>>>,
}

impl Hang {
    fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let held = Arc::new(Mutex::new(Vec::new()));
        let keep = Arc::clone(&held);
        thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                keep.lock().expect("lock").push(stream);
            }
        });
        Self { port, _held: held }
    }
}

/// `toolpin_ops::deliver::send` with a short request timeout, so that the
/// sink that never answers costs a fraction of a second per try.
struct Short {
    config: NotifyConfig,
    timeout: Duration,
}

impl Sender for Short {
    fn send(&self, delivery: &Delivery, reference: Option<&str>) -> Sent {
        let sink = &self.config.sinks[&delivery.sink];
        match toolpin_ops::deliver::send(sink, delivery, reference, self.timeout) {
            Ok(sent) => Sent::Delivered(sent.reference),
            Err(e) => Sent::Failed {
                why: e.message,
                retryable: e.retryable,
                reference: e.reference,
            },
        }
    }
}

/// Two webhooks: `hang`, which never answers, and `ok` at `ok`.
fn two_sinks(hang: &Hang, ok: &Receiver, timeout: Duration) -> (Short, Vec<String>) {
    let config = receiver::sinks(
        &format!(
            "[hang]\nkind = \"webhook\"\nurl = \"http://127.0.0.1:{}/hook\"\n\n\
             [ok]\nkind = \"webhook\"\nurl = \"{}\"\n",
            hang.port,
            ok.url("/hook")
        ),
        &[],
    );
    let names = config.sinks.keys().cloned().collect();
    (Short { config, timeout }, names)
}

/// The figure: 35 drift events, each owed to both sinks.
const EVENTS: usize = 35;

fn enqueue(ledger: &mut Ledger, at: i64) {
    let sightings: Vec<Sighting> = (0..EVENTS)
        .map(|i| {
            Sighting::drift(
                "staging",
                "orders",
                &format!("orders__tool_{i:02}"),
                Some(common::PINNED),
                Some(common::LIVE),
                at,
            )
        })
        .collect();
    let route = |_: &Sighting| vec!["hang".to_string(), "ok".to_string()];
    ledger.record_batch(&sightings, route).expect("recorded");
}

/// Every delivery to `sink`.
fn deliveries(ledger: &mut Ledger, sink: &str) -> Vec<Delivery> {
    let events = ledger.events(&EventFilter::default()).expect("events");
    let mut out = Vec::new();
    for e in events {
        out.extend(
            ledger
                .deliveries(e.id)
                .expect("deliveries")
                .into_iter()
                .filter(|d| d.sink == sink),
        );
    }
    out
}

/// One pass with a sink that never answers: the healthy sink gets all 35
/// at once, the hanging one is tried once (its other notifications wait,
/// no attempt spent), and the pass lasts about one timeout, not 35.
fn a_sink_that_never_answers_delays_no_other_sink(db: &Db) {
    let hang = Hang::start();
    let ok = Receiver::start(vec![Reply::new(200, "")]);
    let (sender, names) = two_sinks(&hang, &ok, Duration::from_secs(1));
    let mut ledger = db.open();
    enqueue(&mut ledger, toolpin_ops::now());

    let start = Instant::now();
    let done =
        deliver_due(&mut ledger, &sender, Some(&names), &toolpin_ops::now).expect("delivered");
    let took = start.elapsed();

    assert_eq!(ok.requests().len(), EVENTS, "{done:?}");
    assert_eq!(
        (done.delivered, done.retrying, done.given_up),
        (EVENTS, 1, 0),
        "{done:?}"
    );
    assert_eq!(done.errors.len(), 1, "{done:?}");
    assert!(
        done.errors[0].starts_with("notify.hang: webhook: timed out after 1s"),
        "{done:?}"
    );
    assert!(took < Duration::from_secs(8), "the pass took {took:?}");
    let mut attempts: Vec<i64> = deliveries(&mut ledger, "hang")
        .iter()
        .map(|d| d.attempts)
        .collect();
    attempts.sort_unstable();
    let mut want = vec![0; EVENTS - 1];
    want.push(1);
    assert_eq!(attempts, want);
    assert!(deliveries(&mut ledger, "ok")
        .iter()
        .all(|d| d.state == DeliveryState::Delivered && d.attempts == 1));
}

/// The clock both watchers read: unix seconds that pass `SCALE` times
/// faster than real ones, so that the 300 s lease runs out in 3 s and the
/// 120 s budget in 1.2 s.
struct Fast {
    base: i64,
    start: Instant,
}

const SCALE: i64 = 100;

impl Fast {
    fn now(&self) -> i64 {
        self.base + self.start.elapsed().as_millis() as i64 * SCALE / 1000
    }
}

/// Watcher A makes one pass while watcher B (another connection, as
/// another process would) makes a pass every 300 ms, in a clock where
/// A's pass outlasts the lease: each notification reaches the healthy
/// sink exactly once. Without the lease taken right before each send, B
/// takes the notifications whose lease ran out while A still holds them,
/// and both send them.
fn two_watchers_send_each_notification_once(db: &Db) {
    let hang = Hang::start();
    let ok = Receiver::start(vec![Reply::new(200, "").after(Duration::from_millis(100))]);
    let (sender, names) = two_sinks(&hang, &ok, Duration::from_millis(500));
    let clock = Fast {
        base: 1_800_000_000,
        start: Instant::now(),
    };
    enqueue(&mut db.open(), clock.now());
    let a_done = AtomicBool::new(false);
    let distinct = |ok: &Receiver| {
        let ids: std::collections::BTreeSet<String> = ok
            .requests()
            .iter()
            .filter_map(|r| r.header("x-toolpin-delivery").map(str::to_string))
            .collect();
        ids.len()
    };
    let now = || clock.now();
    let started = Instant::now();
    thread::scope(|s| {
        s.spawn(|| {
            let mut ledger = db.open();
            deliver_due(&mut ledger, &sender, Some(&names), &now).expect("A");
            a_done.store(true, Ordering::SeqCst);
        });
        s.spawn(|| {
            let mut ledger = db.open();
            for _ in 0..100 {
                thread::sleep(Duration::from_millis(300));
                deliver_due(&mut ledger, &sender, Some(&names), &now).expect("B");
                if a_done.load(Ordering::SeqCst) && distinct(&ok) == EVENTS {
                    break;
                }
            }
        });
    });
    let mut sent: BTreeMap<String, usize> = BTreeMap::new();
    for r in ok.requests() {
        let id = r.header("x-toolpin-delivery").unwrap_or("").to_string();
        *sent.entry(id).or_default() += 1;
    }
    let twice: Vec<&String> = sent
        .iter()
        .filter(|(_, n)| **n > 1)
        .map(|(id, _)| id)
        .collect();
    assert!(twice.is_empty(), "sent more than once: {twice:?}");
    assert_eq!(sent.len(), EVENTS, "{sent:?}");
    let mut ledger = db.open();
    assert!(deliveries(&mut ledger, "ok")
        .iter()
        .all(|d| d.state == DeliveryState::Delivered));
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
}

both!(
    a_sink_that_never_answers_delays_no_other_sink,
    two_watchers_send_each_notification_once,
);
