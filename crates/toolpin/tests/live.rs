//! End-to-end tests of the `toolpin` binary against real MCP servers: the
//! reference npm servers (everything over stdio, Streamable HTTP and legacy
//! SSE; filesystem; memory), `mcp-server-time` (protocol 2026-07-28), test
//! servers written with the official Python SDK (`tests/servers/py/
//! paginated.py`, `orders.py`), and raw JSON-RPC servers that misbehave on
//! purpose (`misbehave.py`, `vendor.py`, `http_echo.py`).
//!
//! `scripts/setup` installs the servers. Every server a test starts, and
//! every server toolpin starts for it, has the test's scratch directory on
//! its command line or as its working directory; each test ends by asserting
//! that no such process is left.

mod common;

use std::collections::BTreeMap;
use std::fs;
use std::net::{Ipv4Addr, SocketAddrV4, TcpListener, TcpStream};
use std::ops::Deref;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::thread;
use std::time::{Duration, Instant};

use common::*;
use serde_json::{json, Value};

// ---------------------------------------------------------------------------
// where the servers are

struct Servers {
    node_bin: PathBuf,
    python: PathBuf,
    time: PathBuf,
    py: PathBuf,
}

/// The installed servers; a missing one fails the test with the fix.
fn servers() -> &'static Servers {
    static SERVERS: OnceLock<Servers> = OnceLock::new();
    SERVERS.get_or_init(|| {
        let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let repo = repo.canonicalize().unwrap_or(repo);
        let s = Servers {
            node_bin: repo.join("tests/servers/node_modules/.bin"),
            python: repo.join(".venv/bin/python"),
            time: repo.join(".venv/bin/mcp-server-time"),
            py: repo.join("tests/servers/py"),
        };
        let needed = [
            s.node_bin.join("mcp-server-everything"),
            s.node_bin.join("mcp-server-filesystem"),
            s.node_bin.join("mcp-server-memory"),
            s.python.clone(),
            s.time.clone(),
            s.py.join("misbehave.py"),
        ];
        for path in needed {
            assert!(
                path.exists(),
                "{} is missing: run scripts/setup to install the test servers",
                path.display()
            );
        }
        s
    })
}

/// A TOML basic string.
fn q(text: impl AsRef<str>) -> String {
    json!(text.as_ref()).to_string()
}

/// A TOML array of strings.
fn list(items: &[String]) -> String {
    format!("[{}]", items.iter().map(q).collect::<Vec<_>>().join(", "))
}

// ---------------------------------------------------------------------------
// a sandbox that also owns processes

/// A [`Sandbox`] whose `bin/` holds links to the servers (so their command
/// lines name the sandbox), and which owns the HTTP servers a test starts.
struct Live {
    sb: Sandbox,
    root: PathBuf,
    daemons: Vec<Child>,
}

impl Deref for Live {
    type Target = Sandbox;
    fn deref(&self) -> &Sandbox {
        &self.sb
    }
}

impl Live {
    fn new() -> Self {
        let s = servers();
        let sb = Sandbox::new();
        let root = sb.path().canonicalize().expect("canonical sandbox");
        fs::create_dir_all(root.join("bin")).expect("bin");
        for name in [
            "mcp-server-everything",
            "mcp-server-filesystem",
            "mcp-server-memory",
        ] {
            symlink(s.node_bin.join(name), root.join("bin").join(name)).expect("link");
        }
        symlink(&s.time, root.join("bin/mcp-server-time")).expect("link");
        for entry in fs::read_dir(&s.py).expect("py servers") {
            let path = entry.expect("entry").path();
            if path.extension().is_some_and(|e| e == "py") {
                let name = path.file_name().expect("name");
                symlink(&path, root.join("bin").join(name)).expect("link");
            }
        }
        Self {
            sb,
            root,
            daemons: Vec::new(),
        }
    }

    fn bin(&self, name: &str) -> String {
        self.root.join("bin").join(name).display().to_string()
    }

    /// `command = [...]` for a reference npm server.
    fn node(&self, name: &str, args: &[&str]) -> String {
        let mut argv = vec![self.bin(name)];
        argv.extend(args.iter().map(|a| a.to_string()));
        list(&argv)
    }

    /// `command = [...]` for a Python test server.
    fn py(&self, script: &str, args: &[&str]) -> String {
        let mut argv = vec![servers().python.display().to_string(), self.bin(script)];
        argv.extend(args.iter().map(|a| a.to_string()));
        list(&argv)
    }

    /// `command = [...]` for misbehave.py in `mode`.
    fn misbehave(&self, mode: &str) -> String {
        self.py("misbehave.py", &[mode])
    }

    /// Starts an HTTP server and waits until `port` accepts connections.
    fn daemon(&mut self, argv: &[String], env: &[(&str, &str)], port: u16) {
        let log = self.root.join(format!("daemon-{port}.log"));
        let mut cmd = Command::new(&argv[0]);
        cmd.args(&argv[1..])
            .current_dir(&self.root)
            .stdin(Stdio::null())
            .stdout(fs::File::create(&log).expect("log"))
            .stderr(fs::File::create(&log).expect("log"));
        for (k, v) in env {
            cmd.env(k, v);
        }
        let child = cmd.spawn().expect("start the HTTP server");
        self.daemons.push(child);
        let child = self.daemons.last_mut().expect("child");
        let start = Instant::now();
        let addr = SocketAddrV4::new(Ipv4Addr::LOCALHOST, port).into();
        loop {
            if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
                return;
            }
            if let Ok(Some(status)) = child.try_wait() {
                panic!(
                    "{argv:?} exited ({status}) before listening: {}",
                    fs::read_to_string(&log).unwrap_or_default()
                );
            }
            assert!(
                start.elapsed() < Duration::from_secs(15),
                "{argv:?} did not listen on port {port}: {}",
                fs::read_to_string(&log).unwrap_or_default()
            );
            thread::sleep(Duration::from_millis(20));
        }
    }

    /// Starts server-everything in `mode` (streamableHttp or sse) on a free
    /// port and returns the port.
    fn everything_http(&mut self, mode: &str) -> u16 {
        let port = free_port();
        let argv = vec![self.bin("mcp-server-everything"), mode.to_string()];
        self.daemon(&argv, &[("PORT", &port.to_string())], port);
        port
    }

    fn kill_daemons(&mut self) {
        for mut child in self.daemons.drain(..) {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Ends the test: stops the HTTP servers, then asserts that no process
    /// started for this sandbox is left.
    fn finish(mut self) {
        self.kill_daemons();
        let deadline = Instant::now() + Duration::from_secs(2);
        loop {
            let left = processes_under(&self.root);
            if left.is_empty() {
                return;
            }
            if Instant::now() > deadline {
                kill_all(&left);
                panic!(
                    "processes left behind for {}: {left:#?}",
                    self.root.display()
                );
            }
            thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        self.kill_daemons();
        kill_all(&processes_under(&self.root));
    }
}

/// A port nothing listens on (just now).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("bind 127.0.0.1:0")
        .port()
}

// ---------------------------------------------------------------------------
// assertions

/// The parsed lockfile `rel`.
fn lockfile(sb: &Sandbox, rel: &str) -> Value {
    sb.read_json(rel)
}

fn server<'a>(lock: &'a Value, name: &str) -> &'a Value {
    lock.pointer(&format!("/servers/{name}"))
        .unwrap_or_else(|| panic!("lockfile has no server {name}:\n{lock:#}"))
}

/// `lock` exits 0 with its one summary line.
#[track_caller]
fn lock_ok(sb: &Sandbox, args: &[&str], env: &[(&str, &str)]) -> Run {
    let mut all = vec!["lock"];
    all.extend_from_slice(args);
    let run = sb.run_env(&all, env);
    run.ok();
    assert!(
        run.stderr.starts_with("Pinned ") || run.stderr.starts_with("Unchanged: "),
        "{run:#?}"
    );
    assert_eq!(run.stderr.matches('\n').count(), 1, "{run:#?}");
    run
}

/// `check` exits 0.
#[track_caller]
fn check_ok(sb: &Sandbox, args: &[&str], env: &[(&str, &str)]) -> Run {
    let mut all = vec!["check"];
    all.extend_from_slice(args);
    let run = sb.run_env(&all, env);
    run.ok();
    assert!(
        run.stdout.starts_with("ok: catalog matches the lockfile ("),
        "{run:#?}"
    );
    assert_eq!(run.stderr, "");
    run
}

fn sorted(items: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = items.iter().map(|s| s.to_string()).collect();
    v.sort();
    v
}

const EVERYTHING_TOOLS: [&str; 13] = [
    "echo",
    "get-annotated-message",
    "get-env",
    "get-resource-links",
    "get-resource-reference",
    "get-structured-content",
    "get-sum",
    "get-tiny-image",
    "gzip-file-as-resource",
    "simulate-research-query",
    "toggle-simulated-logging",
    "toggle-subscriber-updates",
    "trigger-long-running-operation",
];

/// Offered only to a client that declares sampling, elicitation and roots.
const EVERYTHING_CAPABILITY_TOOLS: [&str; 3] = [
    "get-roots-list",
    "trigger-elicitation-request",
    "trigger-sampling-request",
];

// ---------------------------------------------------------------------------
// server-everything

#[test]
fn everything_stdio_bare_and_with_client_capabilities() {
    let live = Live::new();
    live.write(
        "toolpin.toml",
        format!(
            "[servers.bare]\ncommand = {}\n\
             [servers.caps]\ncommand = {}\nprefix = \"c_\"\n\
             client_capabilities = {{ sampling = {{}}, elicitation = {{}}, roots = {{ listChanged = true }} }}\n\
             client_info = {{ name = \"my-agent\", version = \"1.2.3\" }}\n",
            live.node("mcp-server-everything", &[]),
            live.node("mcp-server-everything", &["stdio"]),
        ),
    );
    lock_ok(&live, &[], &[]);
    let lock = lockfile(&live, "toolpin.lock");

    assert_eq!(pinned_names(&lock, "bare"), sorted(&EVERYTHING_TOOLS));
    let mut with_caps: Vec<&str> = EVERYTHING_TOOLS.to_vec();
    with_caps.extend(EVERYTHING_CAPABILITY_TOOLS);
    let mut want: Vec<String> = with_caps.iter().map(|n| format!("c_{n}")).collect();
    want.sort();
    assert_eq!(pinned_names(&lock, "caps"), want);
    assert_eq!(pinned_names(&lock, "bare").len(), 13);
    assert_eq!(pinned_names(&lock, "caps").len(), 16);

    // execution.taskSupport is kept on every tool, as served.
    for (srv, prefix) in [("bare", ""), ("caps", "c_")] {
        for name in pinned_names(&lock, srv) {
            let tool = pinned_tool(&lock, srv, &name);
            assert!(
                tool.pointer("/execution/taskSupport")
                    .is_some_and(Value::is_string),
                "{srv}/{name} lost execution.taskSupport: {tool:#}"
            );
        }
        let research = pinned_tool(&lock, srv, &format!("{prefix}simulate-research-query"));
        assert_eq!(research["execution"]["taskSupport"], "required");
        assert_eq!(
            pinned_tool(&lock, srv, &format!("{prefix}echo"))["execution"]["taskSupport"],
            "forbidden"
        );
    }

    // The server's instructions (issue 15): pinned exactly as sent, and
    // part of the server's fingerprint (the lockfile reader verifies it).
    let sent = std::fs::read_to_string(
        servers()
            .node_bin
            .join("../@modelcontextprotocol/server-everything/dist/docs/instructions.md"),
    )
    .expect("server-everything's instructions.md");
    assert!(!sent.trim().is_empty());
    for srv in ["bare", "caps"] {
        assert_eq!(server(&lock, srv)["instructions"], json!(sent), "{srv}");
    }

    // The session record: revision, serverInfo, what toolpin declared.
    let bare = &server(&lock, "bare")["session"];
    assert_eq!(bare["protocol_version"], "2025-11-25");
    assert_eq!(bare["server_info"]["name"], "mcp-servers/everything");
    assert!(bare["server_info"]["version"].is_string(), "{bare:#}");
    assert_eq!(bare["client_capabilities"], json!({}));
    assert_eq!(bare["client_info"]["name"], "toolpin");
    assert!(bare["client_info"]["version"].is_string());
    let caps = &server(&lock, "caps")["session"];
    assert_eq!(caps["protocol_version"], "2025-11-25");
    assert_eq!(caps["server_info"], bare["server_info"]);
    assert_eq!(
        caps["client_capabilities"],
        json!({"sampling": {}, "elicitation": {}, "roots": {"listChanged": true}})
    );
    assert_eq!(
        caps["client_info"],
        json!({"name": "my-agent", "version": "1.2.3"})
    );
    assert_eq!(
        server(&lock, "bare")["source"],
        json!({"command": [live.bin("mcp-server-everything")]})
    );

    check_ok(&live, &[], &[]);
    live.finish();
}

#[test]
fn everything_over_stdio_http_sse_and_sse_fallback_serves_the_same_tools() {
    let mut live = Live::new();
    let http = live.everything_http("streamableHttp");
    let sse = live.everything_http("sse");
    let configs = [
        (
            "stdio",
            format!("command = {}\n", live.node("mcp-server-everything", &[])),
        ),
        ("http", format!("url = \"http://127.0.0.1:{http}/mcp\"\n")),
        (
            "sse",
            format!("url = \"http://127.0.0.1:{sse}/sse\"\ntransport = \"sse\"\n"),
        ),
        // No transport: Streamable HTTP is refused, legacy SSE is tried.
        (
            "fallback",
            format!("url = \"http://127.0.0.1:{sse}/sse\"\n"),
        ),
    ];
    let mut tool_sets = BTreeMap::new();
    for (dir, body) in &configs {
        live.write(
            &format!("{dir}/toolpin.toml"),
            format!("[servers.ev]\n{body}page_timeout = \"5s\"\n"),
        );
        let config = format!("{dir}/toolpin.toml");
        lock_ok(&live, &["-c", &config], &[]);
        let lock = lockfile(&live, &format!("{dir}/toolpin.lock"));
        assert_eq!(
            pinned_names(&lock, "ev"),
            sorted(&EVERYTHING_TOOLS),
            "{dir}"
        );
        let session = &server(&lock, "ev")["session"];
        assert_eq!(session["protocol_version"], "2025-11-25", "{dir}");
        assert_eq!(session["server_info"]["name"], "mcp-servers/everything");
        let fps = live.run(&["fingerprint", "--json", &format!("{dir}/toolpin.lock")]);
        fps.ok();
        let fps: Value = serde_json::from_str(&fps.stdout).expect("fingerprint JSON");
        tool_sets.insert(*dir, fps["servers"]["ev"]["tools"].clone());
        check_ok(&live, &["-c", &config], &[]);
    }
    let stdio = &tool_sets["stdio"];
    assert_eq!(stdio.as_object().map(|m| m.len()), Some(13));
    for (dir, tools) in &tool_sets {
        assert_eq!(
            tools, stdio,
            "tool fingerprints over {dir} differ from stdio"
        );
    }
    let sse_lock = lockfile(&live, "sse/toolpin.lock");
    assert_eq!(server(&sse_lock, "ev")["source"]["transport"], "sse");
    let fallback = lockfile(&live, "fallback/toolpin.lock");
    assert!(server(&fallback, "ev")["source"].get("transport").is_none());
    live.finish();
}

/// `transport = "http"` (or `"streamable-http"`) means Streamable HTTP
/// only: a legacy SSE server refuses it, and legacy SSE is not tried.
#[test]
fn transport_http_does_not_fall_back_to_legacy_sse() {
    let mut live = Live::new();
    let http = live.everything_http("streamableHttp");
    let sse = live.everything_http("sse");
    for transport in ["http", "streamable-http"] {
        live.write(
            "toolpin.toml",
            format!(
                "[servers.ev]\nurl = \"http://127.0.0.1:{sse}/sse\"\ntransport = {}\n",
                q(transport)
            ),
        );
        let message = live
            .run(&["lock"])
            .error(&["server \"ev\": initialize: HTTP 4"]);
        assert!(!message.contains("legacy SSE"), "{message}");
        assert!(!live.exists("toolpin.lock"), "{transport}: {message}");
    }
    live.write(
        "toolpin.toml",
        format!(
            "[servers.ev]\nurl = \"http://127.0.0.1:{http}/mcp\"\ntransport = \"streamable-http\"\n"
        ),
    );
    lock_ok(&live, &[], &[]);
    let lock = lockfile(&live, "toolpin.lock");
    assert_eq!(pinned_names(&lock, "ev"), sorted(&EVERYTHING_TOOLS));
    assert_eq!(
        server(&lock, "ev")["source"]["transport"],
        "streamable-http"
    );
    check_ok(&live, &[], &[]);
    live.finish();
}

// ---------------------------------------------------------------------------
// server-filesystem and server-memory

#[test]
fn filesystem_and_memory_lock_then_check() {
    let live = Live::new();
    live.write("files/readme.txt", "hello");
    let files = live.root.join("files").display().to_string();
    let memory = live.root.join("memory.jsonl").display().to_string();
    live.write(
        "toolpin.toml",
        format!(
            "[servers.fs]\ncommand = {}\n\
             [servers.mem]\ncommand = {}\nenv = {{ MEMORY_FILE_PATH = {} }}\n",
            live.node("mcp-server-filesystem", &[&files]),
            live.node("mcp-server-memory", &[]),
            q(&memory),
        ),
    );
    lock_ok(&live, &[], &[]);
    check_ok(&live, &[], &[]);
    let lock = lockfile(&live, "toolpin.lock");
    let fs_tools = pinned_names(&lock, "fs");
    for want in [
        "read_text_file",
        "write_file",
        "list_directory",
        "list_allowed_directories",
    ] {
        assert!(
            fs_tools.iter().any(|n| n == want),
            "fs lacks {want}: {fs_tools:?}"
        );
    }
    assert_eq!(
        pinned_names(&lock, "mem"),
        sorted(&[
            "add_observations",
            "create_entities",
            "create_relations",
            "delete_entities",
            "delete_observations",
            "delete_relations",
            "open_nodes",
            "read_graph",
            "search_nodes",
        ])
    );
    assert_eq!(
        server(&lock, "mem")["source"]["env"],
        json!({"MEMORY_FILE_PATH": memory})
    );
    assert_eq!(
        server(&lock, "fs")["session"]["protocol_version"],
        "2025-11-25"
    );
    assert_eq!(
        server(&lock, "mem")["session"]["protocol_version"],
        "2025-11-25"
    );
    live.finish();
}

// ---------------------------------------------------------------------------
// mcp-server-time: the stateless revision

#[test]
fn python_sdk_over_http_speaks_2026_07_28_with_routing_headers_or_the_handshake() {
    let mut live = Live::new();
    let port = free_port();
    let argv = vec![
        servers().python.display().to_string(),
        live.bin("sdk_http.py"),
        port.to_string(),
    ];
    live.daemon(&argv, &[], port);
    live.write(
        "toolpin.toml",
        format!(
            "[servers.auto]\nurl = \"http://127.0.0.1:{port}/mcp\"\n\
             [servers.hs]\nurl = \"http://127.0.0.1:{port}/mcp\"\nprotocol_version = \"2025-11-25\"\nprefix = \"hs_\"\n"
        ),
    );
    lock_ok(&live, &[], &[]);
    let lock = lockfile(&live, "toolpin.lock");
    let auto = server(&lock, "auto");
    assert_eq!(auto["session"]["protocol_version"], "2026-07-28");
    assert_eq!(auto["session"]["server_info"]["version"], "3.1.4");
    let hs = server(&lock, "hs");
    assert_eq!(hs["session"]["protocol_version"], "2025-11-25");
    assert_eq!(pinned_names(&lock, "auto"), sorted(&["add", "shout"]));
    for name in pinned_names(&lock, "auto") {
        let mut a = pinned_tool(&lock, "auto", &name).clone();
        let b = pinned_tool(&lock, "hs", &format!("hs_{name}"));
        a["name"] = b["name"].clone();
        assert_eq!(&a, b, "{name}: the same tool over both revisions");
    }
    check_ok(&live, &[], &[]);
    live.finish();
}

#[test]
fn time_server_speaks_2026_07_28_unless_pinned_to_the_handshake() {
    let live = Live::new();
    live.write(
        "toolpin.toml",
        format!(
            "[servers.t]\ncommand = [{}]\n\
             [servers.hs]\ncommand = [{}]\nprotocol_version = \"2025-11-25\"\nprefix = \"hs_\"\n",
            q(live.bin("mcp-server-time")),
            q(live.bin("mcp-server-time")),
        ),
    );
    lock_ok(&live, &[], &[]);
    let lock = lockfile(&live, "toolpin.lock");
    let t = server(&lock, "t");
    assert_eq!(t["session"]["protocol_version"], "2026-07-28");
    assert_eq!(t["session"]["server_info"]["name"], "mcp-time");
    let hs = server(&lock, "hs");
    assert_eq!(hs["session"]["protocol_version"], "2025-11-25");
    assert_eq!(hs["session"]["server_info"], t["session"]["server_info"]);
    assert_eq!(hs["source"]["protocol_version"], "2025-11-25");
    assert_eq!(
        pinned_names(&lock, "t"),
        sorted(&["convert_time", "get_current_time"])
    );
    // The same tools, whichever revision served them.
    for name in pinned_names(&lock, "t") {
        let mut via_handshake = pinned_tool(&lock, "hs", &format!("hs_{name}")).clone();
        via_handshake["name"] = json!(name);
        assert_eq!(pinned_tool(&lock, "t", &name), &via_handshake, "{name}");
    }
    live.finish();
}

/// A stateless server too slow to answer the `server/discover` probe in
/// time (a Python server starting on a loaded machine) has taken the probe
/// all the same and refuses the handshake that follows; toolpin asks again
/// rather than failing (seen as "-32022 connection is serving the
/// 2026-07-28 protocol" from `toolpin lock` on a busy 2-core machine).
#[test]
fn a_stateless_server_slower_than_the_probe_is_asked_again() {
    let live = Live::new();
    live.write(
        "toolpin.toml",
        format!(
            "[servers.svc]\ncommand = {}\n",
            live.misbehave("slow-discover")
        ),
    );
    lock_ok(&live, &[], &[]);
    let lock = lockfile(&live, "toolpin.lock");
    let svc = server(&lock, "svc");
    assert_eq!(svc["session"]["protocol_version"], "2026-07-28");
    assert_eq!(pinned_names(&lock, "svc"), sorted(&["ok_tool"]));
    live.finish();
}

#[test]
fn pinned_protocol_versions_the_server_does_not_speak_are_clear_errors() {
    let live = Live::new();
    live.write(
        "toolpin.toml",
        format!("[servers.svc]\ncommand = {}\n", live.misbehave("ok")),
    );
    lock_ok(&live, &[], &[]);
    // misbehave.py refuses server/discover and always answers 2025-11-25.
    live.write(
        "toolpin.toml",
        format!(
            "[servers.svc]\ncommand = {}\nprotocol_version = \"2026-07-28\"\n",
            live.misbehave("ok")
        ),
    );
    live.fails(
        &["lock"],
        &[
            "server \"svc\": server/discover: ",
            "does not support protocol 2026-07-28",
        ],
    );
    live.write(
        "toolpin.toml",
        format!(
            "[servers.svc]\ncommand = {}\nprotocol_version = \"2024-11-05\"\n",
            live.misbehave("ok")
        ),
    );
    live.fails(
        &["lock"],
        &[
            "server \"svc\": initialize: ",
            "protocol_version pins 2024-11-05 but the server answered 2025-11-25",
        ],
    );
    live.finish();
}

// ---------------------------------------------------------------------------
// misbehaving servers

/// A sandbox whose lockfile was written from a good server `svc`; then the
/// config is switched to `svc` in `mode` with `extra` settings.
fn misbehaving(mode: &str, extra: &str) -> Live {
    let live = Live::new();
    live.write(
        "toolpin.toml",
        format!("[servers.svc]\ncommand = {}\n", live.misbehave("ok")),
    );
    lock_ok(&live, &[], &[]);
    live.write(
        "toolpin.toml",
        format!(
            "[servers.svc]\ncommand = {}\npage_timeout = \"1s\"\ninit_timeout = \"1s\"\n{extra}",
            live.misbehave(mode)
        ),
    );
    live
}

/// `lock` and `check` both fail alike, leaving the lockfile and directory
/// untouched; returns the message.
#[track_caller]
fn fails_twice(live: &Live, needles: &[&str]) -> String {
    let lock = live.fails(&["lock"], needles);
    let check = live.fails(&["check"], needles);
    // Whether the exit status made it into the message is a race of its
    // own (see stdio_exit_status_is_reported_every_time); compare the rest.
    assert_eq!(
        without_exit_status(&lock),
        without_exit_status(&check),
        "lock and check should fail alike"
    );
    lock
}

/// `message` without " (the server exited with status N)".
fn without_exit_status(message: &str) -> String {
    match message.find(" (the server exited with status ") {
        Some(start) => {
            let end = message[start..]
                .find(')')
                .map_or(message.len(), |e| start + e + 1);
            format!("{}{}", &message[..start], &message[end..])
        }
        None => message.to_string(),
    }
}

#[test]
fn misbehave_endless_cursor_hits_the_repeated_cursor_guard() {
    let live = misbehaving("endless-cursor", "");
    fails_twice(
        &live,
        &[
            "server \"svc\": tools/list page 2: pagination guard: cursor \"same\" was already followed",
            "server said: misbehave: endless-cursor ready",
        ],
    );
    live.finish();
}

#[test]
fn misbehave_max_pages_guard() {
    let live = misbehaving("many-tools", "max_pages = 5\n");
    fails_twice(
        &live,
        &["server \"svc\": tools/list page 5: pagination guard: more than 5 pages (max_pages)"],
    );
    live.finish();
}

#[test]
fn misbehave_invalid_json_mid_stream() {
    let live = misbehaving("invalid-json", "");
    fails_twice(
        &live,
        &[
            "server \"svc\": tools/list page 1: ",
            "the server sent invalid JSON on stdout",
            "this is not JSON {oops",
            "server said: misbehave: invalid-json ready",
        ],
    );
    live.finish();
}

#[test]
fn misbehave_hang_on_tools_list_times_out_and_is_killed() {
    let live = misbehaving("hang", "");
    let start = Instant::now();
    live.fails(
        &["lock"],
        &[
            "server \"svc\": tools/list page 1: no answer within 1 s",
            "server said: misbehave: hang ready | misbehave: not answering tools/list",
        ],
    );
    // 1 s page timeout, then at most the close grace before the kill.
    assert!(
        start.elapsed() < Duration::from_secs(6),
        "{:?}",
        start.elapsed()
    );
    live.finish();
}

#[test]
fn misbehave_hang_on_initialize_times_out() {
    let live = misbehaving("hang-init", "");
    fails_twice(
        &live,
        &[
            "server \"svc\": initialize: no answer within 1 s",
            "server said: misbehave: hang-init ready | misbehave: not answering initialize",
        ],
    );
    live.finish();
}

#[test]
fn misbehave_exit_mid_list_reports_the_exit_and_stderr() {
    let live = misbehaving("exit-mid-list", "");
    fails_twice(
        &live,
        &[
            "server \"svc\": tools/list page 2: the server closed its stdout",
            "server said: misbehave: exit-mid-list ready | misbehave: exiting in the middle of tools/list",
        ],
    );
    live.finish();
}

/// The server's exit status belongs in the message every time, not only
/// when the process happened to be reaped before its stdout was seen to
/// close: each mode runs several times.
#[test]
fn stdio_exit_status_is_reported_every_time() {
    for (mode, status) in [("exit-mid-list", 4), ("stderr-then-exit", 3)] {
        let live = misbehaving(mode, "");
        let want = format!("(the server exited with status {status})");
        let messages: Vec<String> = (0..6)
            .map(|_| {
                live.fails(
                    &["lock"],
                    &["server \"svc\": ", "the server closed its stdout"],
                )
            })
            .collect();
        let missing: Vec<&String> = messages.iter().filter(|m| !m.contains(&want)).collect();
        assert!(
            missing.is_empty(),
            "{mode}: {} of {} runs lack {want:?}, e.g. {:?}",
            missing.len(),
            messages.len(),
            missing[0]
        );
        live.finish();
    }
}

#[test]
fn misbehave_duplicate_name_across_pages() {
    let live = misbehaving("dup-across-pages", "");
    fails_twice(
        &live,
        &[
            "server \"svc\": tools/list page 2: duplicate tool name \"shared\" (also on page 1)",
            "server said: misbehave: dup-across-pages ready",
        ],
    );
    live.finish();
}

#[test]
fn misbehave_stderr_then_exit_quotes_the_stderr_tail() {
    let live = misbehaving("stderr-then-exit", "");
    fails_twice(
        &live,
        &[
            "server \"svc\": initialize: the server closed its stdout",
            "server said: misbehave: stderr-then-exit ready | misbehave: loading configuration | misbehave: fatal: cannot start with token <unset>",
        ],
    );
    live.finish();
}

#[test]
fn missing_server_program_is_a_connect_error() {
    let live = misbehaving("ok", "");
    let missing = live.root.join("bin/no-such-server").display().to_string();
    live.write(
        "toolpin.toml",
        format!("[servers.svc]\ncommand = [{}]\n", q(&missing)),
    );
    fails_twice(
        &live,
        &["server \"svc\": connect: cannot start `", "no-such-server"],
    );
    live.finish();
}

#[test]
fn many_tools_10000_over_20_pages() {
    let live = Live::new();
    live.write(
        "toolpin.toml",
        format!(
            "[servers.svc]\ncommand = {}\nmax_pages = 20\n",
            live.misbehave("many-tools")
        ),
    );
    let run = lock_ok(&live, &[], &[]);
    assert!(
        run.stderr.starts_with("Pinned 10000 tools from 1 server"),
        "{run:#?}"
    );
    let lock = lockfile(&live, "toolpin.lock");
    let names = pinned_names(&lock, "svc");
    assert_eq!(names.len(), 10_000);
    assert_eq!(names.first().map(String::as_str), Some("tool_00000"));
    assert_eq!(names.last().map(String::as_str), Some("tool_09999"));
    check_ok(&live, &[], &[]);
    live.finish();
}

#[test]
fn print_env_server_receives_configured_env() {
    let live = Live::new();
    live.write(
        "toolpin.toml",
        format!(
            "[servers.svc]\ncommand = {}\n\
             env = {{ SECRET_TOKEN = \"literal-token-value\", PROBE_VALUE = \"${{PROBE_SET:-fallback-probe}}\" }}\n",
            live.misbehave("print-env")
        ),
    );
    lock_ok(&live, &[], &[]);
    let lock = lockfile(&live, "toolpin.lock");
    // The literal credential reached the server, which echoed it into its
    // description: the lockfile holds its stand-in, and says where (issue
    // 32). PROBE_VALUE is no credential and stays as sent.
    assert_eq!(
        pinned_tool(&lock, "svc", "print_env")["description"],
        "SECRET_TOKEN=<redacted> PROBE_VALUE=fallback-probe"
    );
    assert_eq!(
        server(&lock, "svc")["tools"]["print_env"]["redacted"],
        json!(["/description"])
    );
    assert!(!live
        .read_string("toolpin.lock")
        .contains("literal-token-value"));
    // Recorded as written; the literal value of a secret-looking key is not.
    assert_eq!(
        server(&lock, "svc")["source"]["env"],
        json!({"SECRET_TOKEN": "<redacted>", "PROBE_VALUE": "${PROBE_SET:-fallback-probe}"})
    );
    // The variable set on toolpin's process reaches the server.
    let run = live.run_env(&["check"], &[("PROBE_SET", "from-the-environment")]);
    run.drift();
    assert!(
        run.stdout.contains("PROBE_VALUE=from-the-environment"),
        "{run:#?}"
    );
    live.finish();
}

#[test]
fn keep_going_reports_every_failing_server() {
    let live = Live::new();
    let config = |a: &str, b: &str| {
        format!(
            "[servers.a]\ncommand = {}\n[servers.b]\ncommand = {}\n[servers.c]\ncommand = {}\n",
            live.misbehave(a),
            live.misbehave(b),
            live.misbehave("print-env"),
        )
    };
    live.write("toolpin.toml", config("ok", "many-tools"));
    lock_ok(&live, &[], &[]);
    let before = live.read("toolpin.lock");
    live.write("toolpin.toml", config("invalid-json", "dup-across-pages"));

    let run = live.run(&["lock", "--keep-going"]);
    assert_eq!(run.code, 2, "{run:#?}");
    assert_eq!(run.stdout, "");
    let lines: Vec<&str> = run.stderr.lines().collect();
    assert_eq!(lines.len(), 2, "{run:#?}");
    assert!(
        lines[0]
            .starts_with("error: server \"a\": tools/list page 1: the server sent invalid JSON"),
        "{lines:?}"
    );
    assert!(
        lines[1]
            .starts_with("error: server \"b\": tools/list page 2: duplicate tool name \"shared\""),
        "{lines:?}"
    );
    assert!(lines[1].ends_with("(2 servers failed)"), "{lines:?}");
    assert!(live.read("toolpin.lock") == before, "the lockfile changed");

    let run = live.run(&["check", "--keep-going"]);
    assert_eq!(run.code, 2, "{run:#?}");
    assert_eq!(run.stderr.lines().count(), 2, "{run:#?}");

    // Without --keep-going the first failure ends the run.
    let message = live.fails(&["lock"], &["server \""]);
    assert!(
        message.starts_with("server \"a\": ") || message.starts_with("server \"b\": "),
        "{message}"
    );
    live.finish();
}

// ---------------------------------------------------------------------------
// SDK servers: pagination, fidelity, drift

#[test]
fn ls_lists_each_servers_tools_without_writing_anything() {
    let live = Live::new();
    live.write(
        "toolpin.toml",
        format!("[servers.p]\ncommand = {}\n", live.py("paginated.py", &[])),
    );
    let run = live.run(&["ls"]);
    assert_eq!(run.code, 0, "{run:?}");
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert!(
        lines[0].starts_with("p (25 tools, ") && lines[0].contains("protocol 2026-07-28"),
        "{}",
        run.stdout
    );
    assert_eq!(lines.len(), 26, "{}", run.stdout);
    assert!(
        lines
            .iter()
            .any(|l| l.trim_start().starts_with("tool_07") && l.ends_with("Tool number 7.")),
        "{}",
        run.stdout
    );
    assert!(!live.root.join("toolpin.lock").exists());
    live.finish();
}

#[test]
fn paginated_sdk_server_25_tools_over_3_pages() {
    let live = Live::new();
    let config = |max_pages: usize| {
        format!(
            "[servers.p]\ncommand = {cmd}\nmax_pages = {max_pages}\n\
             [servers.hs]\ncommand = {cmd}\nmax_pages = {max_pages}\nprefix = \"hs_\"\nprotocol_version = \"2025-11-25\"\n",
            cmd = live.py("paginated.py", &[]),
        )
    };
    // Exactly three pages: a cap of 3 passes, a cap of 2 does not.
    live.write("toolpin.toml", config(3));
    lock_ok(&live, &[], &[]);
    let lock = lockfile(&live, "toolpin.lock");
    let want: Vec<String> = (0..25).map(|i| format!("tool_{i:02}")).collect();
    assert_eq!(pinned_names(&lock, "p"), want);
    let hs_want: Vec<String> = want.iter().map(|n| format!("hs_{n}")).collect();
    assert_eq!(pinned_names(&lock, "hs"), hs_want);
    assert_eq!(
        server(&lock, "p")["session"]["protocol_version"],
        "2026-07-28"
    );
    assert_eq!(
        server(&lock, "hs")["session"]["protocol_version"],
        "2025-11-25"
    );
    assert_eq!(
        server(&lock, "p")["session"]["server_info"]["name"],
        "paginated"
    );
    assert_eq!(
        pinned_tool(&lock, "p", "tool_24"),
        &json!({
            "name": "tool_24",
            "description": "Tool number 24.",
            "inputSchema": {"type": "object", "properties": {"n": {"type": "integer", "default": 24}}}
        })
    );
    live.write("toolpin.toml", config(2));
    live.fails(
        &["lock"],
        &["tools/list page 2: pagination guard: more than 2 pages (max_pages)"],
    );
    live.finish();
}

#[test]
fn vendor_unknown_members_are_kept_exactly() {
    let live = Live::new();
    live.write(
        "toolpin.toml",
        format!("[servers.v]\ncommand = {}\n", live.py("vendor.py", &[])),
    );
    lock_ok(&live, &[], &[]);
    let lock = lockfile(&live, "toolpin.lock");

    let served = Command::new(&servers().python)
        .arg(live.bin("vendor.py"))
        .arg("--print-tools")
        .output()
        .expect("vendor.py --print-tools");
    assert!(served.status.success());
    let served: Value = serde_json::from_slice(&served.stdout).expect("served JSON");
    let tools = served["tools"].as_array().expect("tools");
    assert_eq!(
        pinned_names(&lock, "v"),
        sorted(&["vendor_plain", "vendor_search"])
    );
    for tool in tools {
        let name = tool["name"].as_str().expect("name");
        let got = pinned_tool(&lock, "v", name);
        assert_eq!(got, tool, "{name}: lockfile\n{got:#}\nserved\n{tool:#}");
    }
    // Spot checks of what a typed model would have dropped or coerced.
    let got = pinned_tool(&lock, "v", "vendor_search");
    assert_eq!(got["x-vendor"]["required"], json!(["zeta", "alpha"]));
    assert_eq!(got["annotations"]["readOnlyHint"], "yes");
    assert_eq!(got["annotations"]["openWorldHint"], 1);
    assert_eq!(got["annotations"]["destructiveHint"], Value::Null);
    assert!(got["annotations"]["x-cost"]["cap"].is_f64());
    assert_eq!(got["annotations"]["x-cost"]["usd"], json!(0.0025));
    assert_eq!(
        got["execution"],
        json!({"taskSupport": "optional", "x-queue": "slow"})
    );
    assert_eq!(got["icons"][0]["x-theme"], "dark");
    assert_eq!(got["_meta"]["com.example/rollout"]["percent"], 50);
    assert_eq!(
        got["inputSchema"]["properties"]["q"]["x-widget"],
        "textarea"
    );
    assert_eq!(got["x-text"], "caf\u{e9} \u{2028} \u{1f600} tab\there");
    let session = &server(&lock, "v")["session"];
    assert_eq!(
        session["server_info"],
        json!({"name": "vendor", "version": "9.9.9", "x-build": "abc123"})
    );
    check_ok(&live, &[], &[]);
    live.finish();
}

#[test]
fn drift_orders_variant_change_names_description_and_default() {
    let live = Live::new();
    live.write(
        "toolpin.toml",
        format!(
            "[servers.orders]\ncommand = {}\nenv = {{ ORDERS_VARIANT = \"${{ORDERS_VARIANT:-a}}\" }}\n",
            live.py("orders.py", &[])
        ),
    );
    lock_ok(&live, &[], &[("ORDERS_VARIANT", "a")]);
    let lock = lockfile(&live, "toolpin.lock");
    assert_eq!(
        server(&lock, "orders")["source"]["env"],
        json!({"ORDERS_VARIANT": "${ORDERS_VARIANT:-a}"})
    );
    assert_eq!(
        pinned_tool(&lock, "orders", "lookup_order")["description"],
        "Look up an order by its ID and return its status."
    );
    assert_eq!(
        pinned_tool(&lock, "orders", "search_orders")
            .pointer("/inputSchema/properties/page_size/default"),
        Some(&json!(50))
    );
    let before = live.read("toolpin.lock");

    let run = live.run_env(&["check"], &[("ORDERS_VARIANT", "b")]);
    run.drift();
    let text = &run.stdout;
    assert!(
        text.starts_with("drift: 0 added, 0 removed, 2 changed"),
        "{text}"
    );
    assert!(text.contains("orders/lookup_order"), "{text}");
    assert!(
        text.contains("description-changed  /description  security"),
        "{text}"
    );
    assert!(text.contains("names another tool: search_orders"), "{text}");
    assert!(
        text.contains("+ Look up an order by its ID and return its status. Prefer search_orders when the ID is unknown."),
        "{text}"
    );
    assert!(text.contains("orders/search_orders"), "{text}");
    assert!(
        text.contains("input-default-changed  /inputSchema/properties/page_size/default"),
        "{text}"
    );
    assert!(
        text.contains("/inputSchema/properties/page_size default 50 → 20"),
        "{text}"
    );

    let run = live.run_env(&["check", "--format", "json"], &[("ORDERS_VARIANT", "b")]);
    run.drift();
    let report: Value = serde_json::from_str(&run.stdout).expect("JSON report");
    let findings = report["findings"].as_array().expect("findings");
    assert_eq!(findings.len(), 2, "{report:#}");
    let description = findings
        .iter()
        .find(|f| f["tool"] == "lookup_order")
        .expect("lookup_order finding");
    assert_eq!(description["rule"], "description-changed");
    assert_eq!(description["pointer"], "/description");
    assert_eq!(
        description["after"],
        "Look up an order by its ID and return its status. Prefer search_orders when the ID is unknown."
    );
    let default = findings
        .iter()
        .find(|f| f["tool"] == "search_orders")
        .expect("search_orders finding");
    assert_eq!(default["rule"], "input-default-changed");
    assert_eq!(
        default["severity"], "high",
        "page_size is a decisive default"
    );
    assert_eq!(
        default["pointer"],
        "/inputSchema/properties/page_size/default"
    );
    assert_eq!(
        (&default["before"], &default["after"]),
        (&json!(50), &json!(20))
    );
    assert!(
        live.read("toolpin.lock") == before,
        "check wrote the lockfile"
    );
    live.finish();
}

// ---------------------------------------------------------------------------
// secrets

/// A value that occurs nowhere by chance.
fn unique_secret(tag: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!("{tag}-{}-{nanos:x}-Zq9", std::process::id())
}

#[track_caller]
fn assert_no_secret(what: &str, text: &str, secrets: &[&str]) {
    for secret in secrets {
        assert!(
            !text.contains(secret),
            "{what} leaks the secret {secret:?}:\n{text}"
        );
    }
}

#[track_caller]
fn assert_run_clean(run: &Run, secrets: &[&str]) {
    assert_no_secret(&format!("stdout of {:?}", run.args), &run.stdout, secrets);
    assert_no_secret(&format!("stderr of {:?}", run.args), &run.stderr, secrets);
}

#[test]
fn secrets_in_headers_and_bearer_token_never_leak() {
    let mut live = Live::new();
    let secret = unique_secret("hdr");
    let wrong = unique_secret("wrong");
    let port = free_port();
    let argv = vec![
        servers().python.display().to_string(),
        live.bin("http_echo.py"),
        port.to_string(),
    ];
    live.daemon(
        &argv,
        &[("EXPECTED_TOKEN", &secret), ("EXPECTED_API_KEY", &secret)],
        port,
    );
    live.write(
        "toolpin.toml",
        format!(
            "[servers.echo]\nurl = \"http://127.0.0.1:{port}/mcp\"\n\
             headers = {{ X-Api-Key = \"${{MY_TOKEN}}\" }}\nbearer_token_env = \"MY_TOKEN\"\n"
        ),
    );
    let env = [("MY_TOKEN", secret.as_str())];
    let all = [secret.as_str(), wrong.as_str()];

    let run = lock_ok(&live, &[], &env);
    assert_run_clean(&run, &all);
    let lock = lockfile(&live, "toolpin.lock");
    assert_eq!(pinned_names(&lock, "echo"), vec!["echo".to_string()]);
    assert_eq!(
        server(&lock, "echo")["source"],
        json!({
            "url": format!("http://127.0.0.1:{port}/mcp"),
            "headers": {"X-Api-Key": "${MY_TOKEN}"},
            "bearer_token_env": "MY_TOKEN",
        })
    );
    assert_no_secret("the lockfile", &live.read_string("toolpin.lock"), &all);
    assert_run_clean(&check_ok(&live, &[], &env), &all);
    let json_check = live.run_env(&["check", "--format", "json"], &env);
    json_check.ok();
    assert_run_clean(&json_check, &all);
    let fp = live.run_env(&["fingerprint", "--json"], &env);
    fp.ok();
    assert_run_clean(&fp, &all);

    // The server refuses a wrong token and echoes what it got in its 401
    // body; toolpin quotes the body, but never the value.
    let refused = [("MY_TOKEN", wrong.as_str())];
    let before = live.read("toolpin.lock");
    for args in [&["lock"][..], &["check"], &["check", "--format", "json"]] {
        let run = live.run_env(args, &refused);
        let message = run.error(&["server \"echo\": initialize: HTTP 401", "${MY_TOKEN}"]);
        assert_run_clean(&run, &all);
        assert!(
            message.contains("unauthorized: got Authorization"),
            "{message}"
        );
    }
    // No token at all: the configuration names the variable.
    let run = live.run(&["lock"]);
    run.error(&["servers.echo: ", "environment variable MY_TOKEN is not set"]);
    assert!(
        live.read("toolpin.lock") == before,
        "a failed run changed the lockfile"
    );

    // A secret in the URL of a server that is not there.
    let dead = free_port();
    live.write(
        "toolpin.toml",
        format!("[servers.echo]\nurl = \"http://127.0.0.1:{dead}/mcp?key=${{MY_TOKEN}}\"\n"),
    );
    let run = live.run_env(&["lock"], &env);
    run.error(&["server \"echo\": ", "cannot connect"]);
    assert_run_clean(&run, &all);
    assert!(live.read("toolpin.lock") == before);
    live.finish();
}

#[test]
fn secrets_in_stdio_env_never_leak() {
    let live = Live::new();
    let secret = unique_secret("env");
    let config = |mode: &str| {
        format!(
            "[servers.svc]\ncommand = {}\nenv = {{ SECRET_TOKEN = \"${{MY_TOKEN}}\" }}\n",
            live.misbehave(mode)
        )
    };
    let env = [("MY_TOKEN", secret.as_str())];
    live.write("toolpin.toml", config("ok"));
    assert_run_clean(&lock_ok(&live, &[], &env), &[&secret]);
    let lock = lockfile(&live, "toolpin.lock");
    assert_eq!(
        server(&lock, "svc")["source"]["env"],
        json!({"SECRET_TOKEN": "${MY_TOKEN}"})
    );
    assert_no_secret(
        "the lockfile",
        &live.read_string("toolpin.lock"),
        &[&secret],
    );
    assert_run_clean(&check_ok(&live, &[], &env), &[&secret]);
    let run = live.run_env(&["check", "--format", "json"], &env);
    run.ok();
    assert_run_clean(&run, &[&secret]);

    // The server prints the token on stderr and dies: the stderr tail is
    // quoted with the value replaced by its reference.
    live.write("toolpin.toml", config("stderr-then-exit"));
    for args in [&["lock"][..], &["check"]] {
        let before = live.read("toolpin.lock");
        let run = live.run_env(args, &env);
        run.error(&[
            "server \"svc\": initialize: ",
            "fatal: cannot start with token ${MY_TOKEN}",
        ]);
        assert_run_clean(&run, &[&secret]);
        assert!(live.read("toolpin.lock") == before);
    }
    live.finish();
}

#[test]
fn literal_secret_header_value_is_not_quoted_in_errors() {
    // The lockfile records the literal value of a secret-looking header as
    // "<redacted>"; an error quoting the server's answer must not print it
    // either.
    let mut live = Live::new();
    let literal = unique_secret("literal");
    let port = free_port();
    let argv = vec![
        servers().python.display().to_string(),
        live.bin("http_echo.py"),
        port.to_string(),
    ];
    live.daemon(&argv, &[("EXPECTED_TOKEN", "the-right-token")], port);
    live.write(
        "toolpin.toml",
        format!(
            "[servers.echo]\nurl = \"http://127.0.0.1:{port}/mcp\"\n\
             headers = {{ Authorization = \"Bearer the-right-token\" }}\n"
        ),
    );
    lock_ok(&live, &[], &[]);
    let lock = lockfile(&live, "toolpin.lock");
    assert_eq!(
        server(&lock, "echo")["source"]["headers"],
        json!({"Authorization": "<redacted>"})
    );
    live.write(
        "toolpin.toml",
        format!(
            "[servers.echo]\nurl = \"http://127.0.0.1:{port}/mcp\"\n\
             headers = {{ Authorization = \"Bearer {literal}\" }}\n"
        ),
    );
    let message = live.fails(&["lock"], &["server \"echo\": initialize: HTTP 401"]);
    assert_no_secret("the error", &message, &[&literal]);
    live.finish();
}

// ---------------------------------------------------------------------------
// concurrency

#[test]
fn six_servers_captured_with_jobs_6() {
    let live = Live::new();
    let memory = live.root.join("memory.jsonl").display().to_string();
    live.write("files/a.txt", "a");
    let files = live.root.join("files").display().to_string();
    live.write(
        "toolpin.toml",
        format!(
            "[servers.everything]\ncommand = {}\n\
             [servers.fs]\ncommand = {}\n\
             [servers.memory]\ncommand = {}\nenv = {{ MEMORY_FILE_PATH = {} }}\n\
             [servers.time]\ncommand = [{}]\n\
             [servers.paginated]\ncommand = {}\n\
             [servers.vendor]\ncommand = {}\n",
            live.node("mcp-server-everything", &[]),
            live.node("mcp-server-filesystem", &[&files]),
            live.node("mcp-server-memory", &[]),
            q(&memory),
            q(live.bin("mcp-server-time")),
            live.py("paginated.py", &[]),
            live.py("vendor.py", &[]),
        ),
    );
    let start = Instant::now();
    let run = lock_ok(&live, &["--jobs", "6"], &[]);
    let elapsed = start.elapsed();
    assert!(run.stderr.contains(" from 6 servers "), "{run:#?}");
    let lock = lockfile(&live, "toolpin.lock");
    let counts: BTreeMap<String, usize> = lock["servers"]
        .as_object()
        .expect("servers")
        .iter()
        .map(|(name, pin)| {
            (
                name.clone(),
                pin["tools"].as_object().map_or(0, |t| t.len()),
            )
        })
        .collect();
    assert_eq!(counts["everything"], 13);
    assert_eq!(counts["memory"], 9);
    assert_eq!(counts["time"], 2);
    assert_eq!(counts["paginated"], 25);
    assert_eq!(counts["vendor"], 2);
    assert!(counts["fs"] >= 10, "{counts:?}");
    assert!(elapsed < Duration::from_secs(15), "{elapsed:?}");
    check_ok(&live, &["--jobs", "6"], &[]);
    live.finish();
}
