//! `toolpin watch --once` and the ledger `check` writes: one event per
//! drift however many runs see it, resolved when upstream goes back or the
//! change is accepted; an unwritable ledger is a warning unless required.

mod common;

#[path = "../../toolpin-notify/tests/common/mod.rs"]
mod receiver;

use common::{one_file_server, Sandbox};
use toolpin_ledger::{EventFilter, EventKind, Ledger, Resolution};

const PINNED: &str = r#"{"tools": [{"name": "lookup_order", "description": "Look up an order by ID.", "inputSchema": {"type": "object"}}]}"#;
const STEERED: &str = r#"{"tools": [{"name": "lookup_order", "description": "Look up an order by ID. Prefer search_orders when the ID is unknown.", "inputSchema": {"type": "object"}}]}"#;

fn locked() -> Sandbox {
    let sb = Sandbox::new();
    sb.write("tools.json", PINNED);
    sb.write(
        "toolpin.toml",
        one_file_server("orders", "tools.json", "vendor = \"Acme\"\n"),
    );
    sb.run(&["lock"]).ok();
    sb
}

/// Runs `args`, asserting the exit code; what watch says is on stderr.
#[track_caller]
fn exits(sb: &Sandbox, args: &[&str], code: i32) -> common::Run {
    let run = sb.run(args);
    assert_eq!(run.code, code, "{run:#?}");
    run
}

fn events(sb: &Sandbox) -> Vec<toolpin_ledger::Event> {
    let mut ledger = Ledger::open(&sb.join(".toolpin/ledger.db")).unwrap();
    ledger.events(&EventFilter::default()).unwrap()
}

#[test]
fn the_same_drift_seen_by_many_runs_is_one_event_resolved_when_upstream_goes_back() {
    let sb = locked();
    let run = exits(&sb, &["watch", "--once"], 0);
    assert_eq!(run.stderr, "default: ok, 1 server match the lockfile\n");
    assert!(events(&sb).is_empty(), "a clean run records no event");
    sb.write("tools.json", STEERED);
    let first = exits(&sb, &["watch", "--once"], 1);
    assert_eq!(
        first.stderr,
        "default: drift in 1 tool (1 new, 0 seen before, 0 more severe)\n"
    );
    for _ in 0..2 {
        let again = exits(&sb, &["watch", "--once"], 1);
        assert!(again.stderr.contains("(0 new, 1 seen before"), "{again:#?}");
    }
    let seen = events(&sb);
    assert_eq!(seen.len(), 1, "{seen:#?}");
    let e = &seen[0];
    assert_eq!(
        (e.kind, e.server.as_str(), e.count),
        (EventKind::Drift, "orders", 3)
    );
    assert_eq!(e.vendor.as_deref(), Some("Acme"));
    assert!(e.unchanged_at.is_some(), "the clean run before is the mark");
    let detail = e.findings[0].detail.as_deref().unwrap_or("");
    assert!(
        detail.contains("{+ Prefer search_orders when the ID is unknown.+}"),
        "{detail}"
    );
    sb.write("tools.json", PINNED);
    let back = exits(&sb, &["watch", "--once"], 0);
    assert!(back.stderr.contains("1 event resolved"), "{back:#?}");
    let after = events(&sb);
    assert_eq!(
        after[0].resolved.as_ref().map(|r| &r.1),
        Some(&Resolution::Reverted)
    );
}

#[test]
fn check_records_too_and_accept_resolves_the_event() {
    let sb = locked();
    sb.write("tools.json", STEERED);
    sb.run(&["check"]).drift();
    sb.run(&["check"]).drift();
    assert_eq!(events(&sb)[0].count, 2);
    sb.run(&["accept", "--reason", "vendor guidance reviewed"])
        .ok();
    let all = events(&sb);
    let drift = all.iter().find(|e| e.kind == EventKind::Drift).unwrap();
    assert!(matches!(
        drift.resolved,
        Some((_, Resolution::Accepted { .. }))
    ));
    assert!(all.iter().any(|e| e.kind == EventKind::Approved));
}

#[test]
fn an_unwritable_ledger_warns_unless_required() {
    let sb = locked();
    sb.write("tools.json", STEERED);
    // A directory where the ledger file should be: it cannot be opened.
    std::fs::create_dir_all(sb.join("ledger-dir")).unwrap();
    sb.write(
        "toolpin.toml",
        one_file_server("orders", "tools.json", "[ledger]\npath = \"ledger-dir\"\n"),
    );
    let run = exits(&sb, &["check"], 1);
    assert!(run.stderr.contains("warning: ledger:"), "{}", run.stderr);
    sb.write(
        "toolpin.toml",
        one_file_server(
            "orders",
            "tools.json",
            "[ledger]\npath = \"ledger-dir\"\nrequired = true\n",
        ),
    );
    sb.run(&["check"]).error(&["ledger:"]);
}

#[test]
fn watch_needs_once_or_every() {
    let sb = locked();
    let run = exits(&sb, &["watch"], 2);
    assert!(run.stderr.contains("--once"), "{run:#?}");
    let run = exits(&sb, &["watch", "--every", "5s"], 2);
    assert!(run.stderr.contains("at least 10 s"), "{run:#?}");
}

/// Several watchers at once on one SQLite ledger: every run's sighting is
/// counted, in one event, and nothing is duplicated.
#[test]
fn watchers_running_at_once_lose_and_duplicate_nothing() {
    let sb = locked();
    sb.write("tools.json", STEERED);
    const WATCHERS: usize = 6;
    let children: Vec<_> = (0..WATCHERS)
        .map(|_| {
            std::process::Command::new(common::BIN)
                .args(["watch", "--once"])
                .current_dir(sb.path())
                .env("NO_COLOR", "1")
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in children {
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(!stderr.contains("warning"), "{stderr}");
    }
    let all = events(&sb);
    assert_eq!(all.len(), 1, "{all:#?}");
    assert_eq!(all[0].count, WATCHERS as i64);
}

/// A ledger that is corrupt or from a newer toolpin: `check` warns (when
/// `[ledger]` is configured) and still reports; `required = true` makes it
/// exit 2 with one line, and the file is left as it was.
#[test]
fn a_corrupt_or_newer_ledger_is_one_line_and_left_alone() {
    let sb = locked();
    sb.write(
        "toolpin.toml",
        one_file_server("orders", "tools.json", "vendor = \"Acme\"\n[ledger]\n"),
    );
    sb.write("tools.json", STEERED);
    sb.write(
        ".toolpin/ledger.db",
        "this is not a database, but it is mine\n",
    );
    let run = exits(&sb, &["check"], 1);
    assert!(
        run.stderr.contains("warning: ledger: ") && run.stderr.contains("not a toolpin ledger"),
        "{}",
        run.stderr
    );
    sb.write(
        "toolpin.toml",
        one_file_server(
            "orders",
            "tools.json",
            "vendor = \"Acme\"\n[ledger]\nrequired = true\n",
        ),
    );
    let line = sb
        .run(&["watch", "--once"])
        .error(&["ledger: ", "not a toolpin ledger"]);
    assert_eq!(line.lines().count(), 1, "{line}");
    assert_eq!(
        sb.read_string(".toolpin/ledger.db"),
        "this is not a database, but it is mine\n"
    );

    // A ledger a newer toolpin migrated.
    std::fs::remove_file(sb.join(".toolpin/ledger.db")).unwrap();
    drop(Ledger::open(&sb.join(".toolpin/ledger.db")).unwrap());
    // As a newer toolpin would leave it: a migration this one does not know.
    let bumped = std::process::Command::new("python3")
        .args([
            "-c",
            "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); \
             c.execute(\"INSERT INTO migrations (version, name) VALUES (99, 'later')\"); c.commit(); c.close()",
        ])
        .arg(sb.join(".toolpin/ledger.db"))
        .status()
        .unwrap();
    assert!(bumped.success(), "the schema version was bumped");
    let before = std::fs::read(sb.join(".toolpin/ledger.db")).unwrap();
    sb.run(&["check"])
        .error(&["is newer than this toolpin reads", "upgrade toolpin"]);
    assert_eq!(
        std::fs::read(sb.join(".toolpin/ledger.db")).unwrap(),
        before
    );
}

/// A SQLite database of something else named as the ledger is refused in
/// one line (a warning, or exit 2 when required) and is left byte for
/// byte: no toolpin table is added to it.
#[test]
fn a_foreign_sqlite_database_named_as_the_ledger_is_refused_and_left_alone() {
    let sb = locked();
    sb.write("tools.json", STEERED);
    let made = std::process::Command::new("python3")
        .args([
            "-c",
            "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); \
             c.execute('CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)'); \
             c.execute(\"INSERT INTO users VALUES (1, 'ann')\"); c.commit(); c.close()",
        ])
        .arg(sb.join("app.db"))
        .status()
        .unwrap();
    assert!(made.success(), "the application's database was made");
    let before = std::fs::read(sb.join("app.db")).unwrap();
    let listing = sb.listing();
    sb.write(
        "toolpin.toml",
        one_file_server("orders", "tools.json", "[ledger]\npath = \"app.db\"\n"),
    );
    let run = exits(&sb, &["check"], 1);
    assert!(
        run.stderr.contains(
            "warning: ledger: app.db: not a toolpin ledger (a SQLite database with other tables: users); point [ledger] path at a file of its own"
        ),
        "{}",
        run.stderr
    );
    sb.write(
        "toolpin.toml",
        one_file_server(
            "orders",
            "tools.json",
            "[ledger]\npath = \"app.db\"\nrequired = true\n",
        ),
    );
    sb.run(&["watch", "--once"])
        .error(&["ledger: app.db: not a toolpin ledger", "[ledger] path"]);
    assert_eq!(std::fs::read(sb.join("app.db")).unwrap(), before);
    assert_eq!(sb.listing(), listing, "files were added");
}

/// `watch --every` asked to stop while it delivers finishes the delivery
/// in flight and stops: it does not send the rest of the backlog first
/// (which, at one slow sink, took minutes). What it did not send waits in
/// the outbox with no attempt spent.
#[test]
fn watch_every_stops_after_the_delivery_in_flight_on_sigterm() {
    const TOOLS: usize = 20;
    let slow = receiver::Receiver::start(vec![
        receiver::Reply::new(200, "").after(std::time::Duration::from_millis(500))
    ]);
    let sb = Sandbox::new();
    let tools = |steer: &str| {
        let tools: Vec<serde_json::Value> = (0..TOOLS)
            .map(|i| {
                serde_json::json!({"name": format!("tool_{i:02}"),
                    "description": format!("Tool {i}.{steer}"), "inputSchema": {"type": "object"}})
            })
            .collect();
        serde_json::json!({ "tools": tools }).to_string()
    };
    sb.write("tools.json", tools(""));
    sb.write(
        "toolpin.toml",
        one_file_server(
            "orders",
            "tools.json",
            &format!(
                "[ledger]\npath = \"ledger.db\"\n\n[notify.slow]\nkind = \"webhook\"\nurl = \"{}\"\n",
                slow.url("/hook")
            ),
        ),
    );
    sb.run(&["lock"]).ok();
    sb.write("tools.json", tools(" Prefer other tools."));
    sb.run(&["check"]).drift();

    let mut watch = std::process::Command::new(common::BIN)
        .args(["watch", "--every", "1h"])
        .current_dir(sb.path())
        .env("NO_COLOR", "1")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    while slow.requests().is_empty() && start.elapsed() < std::time::Duration::from_secs(15) {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(!slow.requests().is_empty(), "watch sent nothing");
    let asked = std::time::Instant::now();
    let term = std::process::Command::new("kill")
        .args(["-TERM", &watch.id().to_string()])
        .status()
        .unwrap();
    assert!(term.success());
    let status = loop {
        if let Some(status) = watch.try_wait().unwrap() {
            break status;
        }
        if asked.elapsed() > std::time::Duration::from_secs(20) {
            let _ = watch.kill();
            let _ = watch.wait();
            panic!("watch did not stop within 20 s of SIGTERM");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let stopped_in = asked.elapsed();
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut watch.stderr.take().unwrap(), &mut stderr).unwrap();
    assert_eq!(status.code(), Some(1), "the last run's drift: {stderr}");
    assert!(stderr.ends_with("watch: stopped\n"), "{stderr}");
    assert!(
        stopped_in < std::time::Duration::from_secs(3),
        "stopped {stopped_in:?} after SIGTERM: {stderr}"
    );
    let sent = slow.requests().len();
    assert!(sent <= 2, "{sent} sent after the stop was asked for");
    let mut ledger = Ledger::open(&sb.join("ledger.db")).unwrap();
    let mut states = (0, 0);
    for e in ledger.events(&EventFilter::default()).unwrap() {
        for d in ledger.deliveries(e.id).unwrap() {
            match d.state {
                toolpin_ledger::DeliveryState::Delivered => states.0 += 1,
                toolpin_ledger::DeliveryState::Pending if d.attempts == 0 => states.1 += 1,
                other => panic!("{other:?} after {} attempts", d.attempts),
            }
        }
    }
    assert_eq!(states, (sent, TOOLS - sent));
}
