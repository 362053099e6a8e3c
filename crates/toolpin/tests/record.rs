//! The `record` source and `toolpin record` against real agents: the
//! official SDKs (openai, anthropic, google-genai, the openai npm package),
//! the OpenAI Agents SDK with a real MCP server and a tool filter,
//! LangChain, pydantic-ai and the Vercel AI SDK, each installed pinned by
//! scripts/setup (.venv, tests/agents/node_modules, tests/servers).
//!
//! The reference is the test's own copy of every request: each agent runs
//! under tests/agents/tee.py, which sits between the framework and
//! toolpin's endpoint and saves each body byte for byte. The pinned tools
//! must be that request's `tools`: the same values, in the same order,
//! nothing dropped, and `toolpin record` must print the member's very
//! bytes.

mod common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::{Run, Sandbox, BIN};
use serde_json::value::RawValue;
use serde_json::{json, Value};

/// A run that starts an agent framework: Python imports alone take
/// seconds on a loaded two-core machine.
const AGENT_LIMIT: Duration = Duration::from_secs(120);

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn python() -> String {
    let python = repo().join(".venv/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run scripts/setup",
        python.display()
    );
    python.display().to_string()
}

fn agents() -> PathBuf {
    let dir = repo().join("tests/agents");
    assert!(
        dir.join("node_modules/ai").exists(),
        "tests/agents/node_modules is missing: run scripts/setup"
    );
    dir
}

fn everything() -> String {
    let entry = repo()
        .join("tests/servers/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    assert!(
        entry.exists(),
        "server-everything is missing: run scripts/setup"
    );
    entry.display().to_string()
}

/// Runs `toolpin ARGS` in the sandbox with the agent limit.
fn toolpin(sb: &Sandbox, args: &[&str]) -> Run {
    toolpin_env(sb, args, &[])
}

fn toolpin_env(sb: &Sandbox, args: &[&str], env: &[(&str, &str)]) -> Run {
    let mut cmd = Command::new(BIN);
    cmd.args(args).current_dir(sb.path()).env("NO_COLOR", "1");
    for (k, v) in env {
        cmd.env(k, v);
    }
    common::run_bounded_for(cmd, args, AGENT_LIMIT)
}

/// The command that runs `agent` (a file of tests/agents, with `args`)
/// under the tee, saving its requests in `dir`.
fn teed(dir: &Path, agent: &str, args: &[&str]) -> Vec<String> {
    let program = if agent.ends_with(".mjs") {
        "node".to_string()
    } else {
        python()
    };
    let mut argv = vec![
        python(),
        agents().join("tee.py").display().to_string(),
        dir.display().to_string(),
        "--".into(),
        program,
        agents().join(agent).display().to_string(),
    ];
    argv.extend(args.iter().map(|a| a.to_string()));
    argv
}

/// One request the tee saw: its path and body, byte for byte.
struct Seen {
    path: String,
    body: Vec<u8>,
}

fn seen(dir: &Path) -> Vec<Seen> {
    let mut names: Vec<PathBuf> = fs::read_dir(dir)
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    names.retain(|p| p.extension().is_some_and(|e| e == "json"));
    names.sort();
    names
        .into_iter()
        .map(|p| Seen {
            path: fs::read_to_string(p.with_extension("path")).expect("path"),
            body: fs::read(&p).expect("body"),
        })
        .collect()
}

/// The `tools` member of a body exactly as sent.
fn raw_tools(body: &[u8]) -> Option<String> {
    let members: std::collections::BTreeMap<String, Box<RawValue>> =
        serde_json::from_slice(body).expect("a JSON body");
    members.get("tools").map(|t| t.get().to_string())
}

/// What the model reads of one sent tool, as the lockfile keeps it,
/// derived here independently of toolpin's readers: the API's envelope
/// taken off, the schema member called `inputSchema`, `required` lists
/// sorted (normalization, docs/fingerprint.md). Hosted OpenAI tools
/// declare no function and are not pinned.
fn expected(api: &str, sent: &Value) -> Vec<Value> {
    let rename = |mut tool: serde_json::Map<String, Value>| {
        for member in [
            "parameters",
            "input_schema",
            "parametersJsonSchema",
            "parameters_json_schema",
        ] {
            if let Some(schema) = tool.remove(member) {
                tool.insert("inputSchema".into(), schema);
            }
        }
        let mut tool = Value::Object(tool);
        sort_required(&mut tool);
        tool
    };
    let items = sent.as_array().expect("tools is an array");
    match api {
        "openai-chat" => items
            .iter()
            .map(|t| rename(t["function"].as_object().expect("function").clone()))
            .collect(),
        "openai-responses" => items
            .iter()
            .filter(|t| t["type"] == "function")
            .map(|t| {
                let mut t = t.as_object().expect("tool").clone();
                t.remove("type");
                rename(t)
            })
            .collect(),
        "anthropic" => items
            .iter()
            .map(|t| rename(t.as_object().expect("tool").clone()))
            .collect(),
        "gemini" => items
            .iter()
            .flat_map(|t| {
                t.get("functionDeclarations")
                    .or_else(|| t.get("function_declarations"))
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default()
            })
            .map(|d| rename(d.as_object().expect("declaration").clone()))
            .collect(),
        other => panic!("no API {other}"),
    }
}

fn sort_required(v: &mut Value) {
    match v {
        Value::Object(map) => {
            for (key, value) in map.iter_mut() {
                match value {
                    Value::Array(items)
                        if key == "required" && items.iter().all(Value::is_string) =>
                    {
                        items.sort_by(|a, b| a.as_str().cmp(&b.as_str()));
                        items.dedup();
                    }
                    _ => sort_required(value),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(sort_required),
        _ => {}
    }
}

fn api_of(path: &str) -> &'static str {
    let path = path.split('?').next().unwrap_or(path);
    if path.ends_with("/chat/completions") {
        "openai-chat"
    } else if path.ends_with("/responses") {
        "openai-responses"
    } else if path.ends_with("/messages") {
        "anthropic"
    } else if path.contains(":generateContent") || path.contains(":streamGenerateContent") {
        "gemini"
    } else {
        panic!("a request to {path}")
    }
}

fn config(sb: &Sandbox, argv: &[String], extra: &str) {
    let record = serde_json::to_string(argv).expect("argv");
    sb.write(
        "toolpin.toml",
        format!("[servers.agent]\nrecord = {record}\ntimeout = \"110s\"\n{extra}"),
    );
}

/// Words of the agents' prompts and the dummy key, none of which may be
/// written anywhere.
const NEVER_WRITTEN: [&str; 7] = [
    "You are a refund agent",
    "Refund ORD-1",
    "Where is my parcel",
    "Weather in Oslo",
    "You track parcels",
    "ada@example.com",
    "toolpin-record-dummy-key",
];

/// Locks an agent's tools and checks the lockfile against the tee's copy
/// of its requests; then checks `toolpin record` prints the sent bytes.
/// Returns the lockfile.
fn pins_what_was_sent(agent: &str, args: &[&str], api: &str, tools: usize) -> Value {
    let sb = Sandbox::new();
    let tee = sb.join("sent");
    config(&sb, &teed(&tee, agent, args), "");
    let run = toolpin(&sb, &["lock"]);
    run.ok();
    let lock = sb.read_json("toolpin.lock");
    let requests = seen(&tee);
    assert!(!requests.is_empty(), "the tee saw no request");
    let first = &requests[0];
    assert_eq!(api_of(&first.path), api, "{}", first.path);
    let raw = raw_tools(&first.body).expect("the first request carries tools");
    let sent: Value = serde_json::from_str(&raw).expect("tools");
    // Every request sent the same array: one catalog, the server itself.
    for r in &requests {
        let other: Value = serde_json::from_str(&raw_tools(&r.body).expect("tools")).expect("json");
        assert_eq!(other, sent, "{agent} sent different arrays");
    }
    let server = &lock["servers"]["agent"];
    assert_eq!(server["format"], api, "{server:#}");
    let want = expected(api, &sent);
    assert_eq!(want.len(), tools, "{agent}: the test's expectation");
    let pinned: Vec<Value> = want
        .iter()
        .map(|t| {
            let name = t["name"].as_str().expect("name");
            server["tools"][name]["tool"].clone()
        })
        .collect();
    assert_eq!(
        pinned, want,
        "{agent}: pinned tools differ from the request's"
    );
    assert_eq!(
        server["tools"].as_object().expect("tools").len(),
        want.len(),
        "{agent}: extra tools pinned"
    );
    let order: Vec<&str> = want
        .iter()
        .map(|t| t["name"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(server["session"]["recorded"]["order"], json!(order));
    assert_eq!(server["session"]["recorded"]["request"], 1);
    assert_eq!(server["source"]["record"][4], json!(python_or_node(agent)));
    let lock_text = sb.read_string("toolpin.lock");
    for word in NEVER_WRITTEN {
        assert!(!lock_text.contains(word), "{word:?} reached the lockfile");
    }

    // `toolpin record` prints the member exactly as the framework sent it.
    let tee2 = sb.join("sent-again");
    let mut args_record = vec!["record", "--"];
    let argv = teed(&tee2, agent, args);
    args_record.extend(argv.iter().map(String::as_str));
    let printed = toolpin(&sb, &args_record);
    printed.ok();
    let again = seen(&tee2);
    let raw_again = raw_tools(&again[0].body).expect("tools");
    assert_eq!(
        printed.stdout,
        format!("{raw_again}\n"),
        "{agent}: not byte for byte"
    );
    assert!(
        printed
            .stderr
            .starts_with(&format!("recorded {} model request", again.len())),
        "{}",
        printed.stderr
    );
    for word in NEVER_WRITTEN {
        assert!(!printed.stderr.contains(word) && !printed.stdout.contains(word));
    }
    lock
}

fn python_or_node(agent: &str) -> String {
    if agent.ends_with(".mjs") {
        "node".into()
    } else {
        python()
    }
}

#[test]
fn openai_chat_completions() {
    let lock = pins_what_was_sent("openai_chat.py", &[], "openai-chat", 2);
    let tool = &lock["servers"]["agent"]["tools"]["lookup_order"]["tool"];
    assert_eq!(tool["strict"], true, "{tool:#}");
}

#[test]
fn openai_responses() {
    let lock = pins_what_was_sent("openai_responses.py", &[], "openai-responses", 2);
    assert_eq!(
        lock["servers"]["agent"]["tools"]["cancel_order"]["tool"]["strict"],
        false
    );
}

#[test]
fn anthropic_messages() {
    let lock = pins_what_was_sent("anthropic_agent.py", &[], "anthropic", 2);
    assert_eq!(
        lock["servers"]["agent"]["tools"]["open_ticket"]["tool"]["cache_control"],
        json!({"type": "ephemeral"})
    );
}

#[test]
fn google_genai() {
    let lock = pins_what_was_sent("gemini_agent.py", &[], "gemini", 2);
    let forecast = &lock["servers"]["agent"]["tools"]["get_forecast"]["tool"];
    assert_eq!(forecast["inputSchema"]["properties"]["days"]["default"], 3);
    assert_eq!(
        lock["servers"]["agent"]["session"]["recorded"]["model"],
        "gemini-2.5-flash"
    );
}

#[test]
fn openai_agents_sdk_with_an_mcp_server_and_a_tool_filter() {
    let lock = pins_what_was_sent("agents_sdk.py", &[&everything()], "openai-responses", 4);
    let tools = lock["servers"]["agent"]["tools"]
        .as_object()
        .expect("tools");
    // The filter let two of server-everything's tools through, converted
    // by the SDK; its other tools never reached the model.
    let names: Vec<&str> = tools.keys().map(String::as_str).collect();
    assert_eq!(names, vec!["echo", "get-sum", "lookup_order", "refund"]);
    assert_eq!(tools["refund"]["tool"]["strict"], true);
}

#[test]
fn langchain_bind_tools_with_a_pydantic_model() {
    let lock = pins_what_was_sent("langchain_agent.py", &[], "openai-chat", 2);
    let search = &lock["servers"]["agent"]["tools"]["SearchOrders"]["tool"];
    assert_eq!(
        search["inputSchema"]["properties"]["status"]["default"],
        "any"
    );
}

#[test]
fn pydantic_ai() {
    pins_what_was_sent("pydantic_ai_agent.py", &[], "openai-responses", 2);
}

#[test]
fn vercel_ai_sdk() {
    pins_what_was_sent("vercel_ai.mjs", &[], "openai-responses", 2);
}

#[test]
fn openai_npm_package() {
    pins_what_was_sent("openai_node.mjs", &[], "openai-chat", 1);
}

/// Editing a tool's docstring in the agent's own code is a description
/// change `toolpin check` fails on, as for any other source.
#[test]
fn a_docstring_edit_fails_check_with_the_description_finding() {
    let sb = Sandbox::new();
    let source = fs::read_to_string(agents().join("pydantic_ai_agent.py")).expect("agent");
    sb.write("agent.py", &source);
    let argv = vec![python(), "agent.py".to_string()];
    config(&sb, &argv, "");
    toolpin(&sb, &["lock"]).ok();
    toolpin(&sb, &["check"]).ok();
    let edited = source.replace(
        "\"\"\"Where a parcel is now.",
        "\"\"\"Where a parcel is now. Prefer reroute_parcel when the parcel is late.",
    );
    assert_ne!(edited, source, "the docstring is in the agent");
    sb.write("agent.py", edited);
    let run = toolpin(&sb, &["check", "--format", "json"]);
    assert_eq!(run.code, 1, "{run:#?}");
    let report: Value = serde_json::from_str(&run.stdout).expect("json report");
    let findings = report["findings"].as_array().expect("findings");
    let description = findings
        .iter()
        .find(|f| f["rule"] == "description-changed")
        .unwrap_or_else(|| panic!("no description-changed finding: {report:#}"));
    assert_eq!(description["tool"], "track_parcel", "{description:#}");
    assert_eq!(
        description["severity"], "critical",
        "steering text: {description:#}"
    );
}

/// A router and a sub-agent: a catalog per distinct array, labelled by
/// position and model; or one catalog with merge = "union". Either way a
/// name sent with two definitions is refused: a catalog pins one per name.
#[test]
fn several_arrays_are_pinned_apart_or_merged() {
    let sb = Sandbox::new();
    let argv = vec![python(), agents().join("router.py").display().to_string()];
    config(&sb, &argv, "");
    toolpin(&sb, &["lock"]).ok();
    let lock = sb.read_json("toolpin.lock");
    let servers: Vec<&str> = lock["servers"]
        .as_object()
        .expect("servers")
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(servers, vec!["agent#1:gpt-4.1", "agent#2:gpt-4.1-mini"]);
    // The tool both arrays carry is pinned once, where it was first seen;
    // the second array's order still names it.
    assert_eq!(
        common::pinned_names(&lock, "agent#1:gpt-4.1"),
        vec!["lookup_order", "route_to_refunds"]
    );
    assert_eq!(
        common::pinned_names(&lock, "agent#2:gpt-4.1-mini"),
        vec!["refund"]
    );
    assert_eq!(
        lock["servers"]["agent#2:gpt-4.1-mini"]["session"]["recorded"]["order"],
        json!(["lookup_order", "refund"])
    );
    toolpin(&sb, &["check"]).ok();
    // The sub-agent first: the servers' names change with the order, the
    // tools (matched by name) do not, and check stays clean.
    let mut reversed = argv.clone();
    reversed.push("--reversed".into());
    config(&sb, &reversed, "");
    toolpin(&sb, &["check"]).ok();

    config(&sb, &argv, "merge = \"union\"\n");
    toolpin(&sb, &["lock"]).ok();
    let lock = sb.read_json("toolpin.lock");
    assert_eq!(
        lock["servers"]["agent"]["session"]["recorded"]["order"],
        json!(["route_to_refunds", "lookup_order", "refund"])
    );
    assert_eq!(lock["servers"].as_object().map(|s| s.len()), Some(1));

    let mut conflicting = argv.clone();
    conflicting.push("--conflict".into());
    for merge in ["union", "distinct"] {
        config(&sb, &conflicting, &format!("merge = \"{merge}\"\n"));
        sb.fails(
            &["lock"],
            &[
                "tool \"lookup_order\" differs between request 1 (gpt-4.1) and request 2 (gpt-4.1-mini)",
                "a catalog pins one definition per name",
            ],
        );
    }
}

/// Sets up a lockfile from a file source, then points the server at a
/// failing `record` command: `lock` must fail with one line and exit 2
/// and leave the lockfile and directory as they were.
fn fails_to_record(argv: &[&str], extra: &str, needles: &[&str]) -> String {
    let sb = Sandbox::new();
    sb.write("tools.json", r#"{"tools": [{"name": "a"}]}"#);
    sb.write("toolpin.toml", "[servers.agent]\nfile = \"tools.json\"\n");
    sb.run(&["lock"]).ok();
    let argv: Vec<String> = argv.iter().map(|a| a.to_string()).collect();
    let record = serde_json::to_string(&argv).expect("argv");
    sb.write(
        "toolpin.toml",
        format!("[servers.agent]\nrecord = {record}\n{extra}"),
    );
    let message = sb.fails(&["lock"], needles);
    // `toolpin record` says the same.
    let mut args = vec!["record", "--"];
    args.extend(argv.iter().map(String::as_str));
    if let Some(t) = extra.strip_prefix("timeout = ") {
        args.splice(1..1, ["--timeout", t.trim().trim_matches('"')]);
    }
    sb.run(&args).error(needles);
    message
}

#[test]
fn a_failing_command_is_explained_with_its_stderr() {
    fails_to_record(
        &[
            "sh",
            "-c",
            "echo starting >&2; echo 'ModuleNotFoundError: agents' >&2; exit 3",
        ],
        "",
        &["exited with status 3", "ModuleNotFoundError: agents"],
    );
}

#[test]
fn a_command_that_calls_no_model_says_which_variables_were_set() {
    fails_to_record(
        &["true"],
        "",
        &[
            "no request reached toolpin: does the client read OPENAI_BASE_URL?",
            "OPENAI_BASE_URL, OPENAI_API_BASE, ANTHROPIC_BASE_URL, GOOGLE_GEMINI_BASE_URL",
            "http://127.0.0.1:",
        ],
    );
}

/// A client that POSTs argv[3] to the base URL in the variable argv[1]
/// plus the path argv[2], with the key in TEST_KEY (if set) in its
/// headers.
const POST: &str = "import os, sys, urllib.request as u\n\
key = os.environ.get('TEST_KEY', 'none')\n\
req = u.Request(os.environ[sys.argv[1]] + sys.argv[2], data=sys.argv[3].encode(), method='POST',\n\
    headers={'Content-Type': 'application/json', 'Authorization': 'Bearer ' + key, 'x-api-key': key})\n\
try:\n    print(u.urlopen(req).read().decode())\nexcept Exception as e:\n    sys.exit(str(e))\n";

/// A client that POSTs the file argv[3] to the base URL in the variable
/// argv[1] plus the path argv[2] (the body is not on the command line,
/// which the errors show).
const POST_FILE: &str = "import os, sys, urllib.request as u\n\
req = u.Request(os.environ[sys.argv[1]] + sys.argv[2], data=open(sys.argv[3], 'rb').read(), method='POST',\n\
    headers={'Content-Type': 'application/json'})\n\
try:\n    print(u.urlopen(req).read().decode())\nexcept Exception as e:\n    sys.exit(str(e))\n";

/// docs/record.md: the messages and the system prompt are never in an
/// error. A request toolpin cannot read is named by method and path, with
/// what is wrong, and nothing of its body.
#[test]
fn a_request_toolpin_cannot_read_is_named_by_path_without_its_content() {
    let python = python();
    let prompt = "You are the refund agent of ACME-SECRET-PROMPT";
    for (variable, path, body, needles) in [
        (
            "OPENAI_BASE_URL",
            "/chat/completions",
            format!("{prompt}, not json"),
            vec!["POST /v1/chat/completions: not JSON at line 1, column 1"],
        ),
        (
            "OPENAI_BASE_URL",
            "/embeddings",
            format!(r#"{{"model": "e", "input": "{prompt}"}}"#),
            vec!["POST /v1/embeddings: not a model API toolpin records"],
        ),
        (
            "ANTHROPIC_BASE_URL",
            "/v1/messages",
            format!(r#"{{"model": "m", "system": "x", "stream": "{prompt}"}}"#),
            vec!["POST /v1/messages: not a request body (a member of the wrong type) at line 1"],
        ),
    ] {
        let sb = Sandbox::new();
        sb.write("body.json", &body);
        let argv = [
            python.clone(),
            "-c".into(),
            POST_FILE.into(),
            variable.into(),
            path.into(),
            "body.json".into(),
        ];
        let mut args = vec!["record", "--"];
        args.extend(argv.iter().map(String::as_str));
        let run = toolpin(&sb, &args);
        let message = run.error(&needles);
        assert!(
            message.contains("sent 1 request toolpin cannot read"),
            "{message}"
        );
        config(&sb, &argv, "");
        let lock = toolpin(&sb, &["lock"]);
        assert_eq!(lock.code, 2, "{lock:#?}");
        for text in [&run.stdout, &run.stderr, &lock.stdout, &lock.stderr] {
            assert!(!text.contains("SECRET"), "the body is quoted: {text}");
        }
        assert!(!sb.exists("toolpin.lock"));
    }
}

/// Kills, when dropped, the processes whose command line is `NAME 90`:
/// the daemons a test's commands left behind on purpose (90 s: long
/// enough to outlive the test's three commands on a loaded machine).
struct Daemons(String);

impl Daemons {
    /// Those running now, waiting up to 5 s for `count` to have started.
    fn running(&self, count: usize) -> Vec<i32> {
        let start = std::time::Instant::now();
        loop {
            let pids = common::processes_with_cmdline(&[&self.0, "90"]);
            if pids.len() >= count || start.elapsed() > Duration::from_secs(5) {
                return pids;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Daemons {
    fn drop(&mut self) {
        for pid in common::processes_with_cmdline(&[&self.0, "90"]) {
            let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
        }
    }
}

/// An agent that starts a daemon in a session of its own (outside the
/// process group toolpin kills) leaves it holding stderr: the recording
/// ends when the agent exits or times out, not when the daemon does. An
/// `exec` source is run by the same code.
#[test]
fn a_detached_grandchild_holding_the_pipes_is_not_waited_for() {
    let daemons = Daemons(format!("toolpin-record-detached-{}", std::process::id()));
    let marker = &daemons.0;
    let python = python();
    let sb = Sandbox::new();
    // The daemon: `sleep 90` renamed, in a new session, holding the pipes.
    sb.write(
        "daemon.py",
        format!(
            "import subprocess\n\
subprocess.Popen(['bash', '-c', 'exec -a {marker} sleep 90'], start_new_session=True)\n"
        ),
    );
    // An agent that hangs after starting one (with `setsid`: a shell
    // starts in milliseconds, so the daemon is up long before the timeout
    // even on a loaded machine): the timeout ends it.
    let hangs = format!("setsid -f bash -c 'exec -a {marker} sleep 90'; sleep 60");
    let run = toolpin(
        &sb,
        &["record", "--timeout", "2s", "--", "bash", "-c", &hangs],
    );
    run.error(&["did not finish within 2s and was killed"]);
    assert!(
        run.elapsed < Duration::from_secs(12),
        "record --timeout 2s took {:?}",
        run.elapsed
    );
    // An agent that exits at once (without a model request).
    let quick = toolpin(
        &sb,
        &["record", "--timeout", "60s", "--", &python, "daemon.py"],
    );
    quick.error(&["no request reached toolpin"]);
    assert!(
        quick.elapsed < Duration::from_secs(12),
        "record took {:?}",
        quick.elapsed
    );
    // An `exec` source printing its tools.
    sb.write(
        "prints.sh",
        format!(
            "setsid -f bash -c 'exec -a {marker} sleep 90'\necho '{{\"tools\": [{{\"name\": \"a\"}}]}}'\n"
        ),
    );
    sb.write(
        "toolpin.toml",
        "[servers.x]\nexec = [\"sh\", \"prints.sh\"]\ntimeout = \"60s\"\n",
    );
    let lock = sb.run(&["lock"]);
    lock.ok();
    assert!(
        lock.elapsed < Duration::from_secs(12),
        "lock took {:?}",
        lock.elapsed
    );
    assert_eq!(
        common::pinned_names(&sb.read_json("toolpin.lock"), "x"),
        ["a"]
    );
    // The daemons were left running, not waited for (nor killed: they are
    // not the command's).
    assert_eq!(daemons.running(3).len(), 3);
}

#[test]
fn a_command_past_its_timeout_is_killed_with_its_process_group() {
    let marker = format!("toolpin-record-timeout-{}", std::process::id());
    let script = format!("exec -a {marker}-a sleep 300 & exec -a {marker}-b sleep 300");
    let start = std::time::Instant::now();
    fails_to_record(
        &["bash", "-c", &script],
        "timeout = \"1s\"",
        &["did not finish within 1s and was killed"],
    );
    assert!(start.elapsed() < Duration::from_secs(30));
    std::thread::sleep(Duration::from_millis(200));
    for child in ["a", "b"] {
        let name = format!("{marker}-{child}");
        assert!(
            common::processes_with_cmdline(&[&name, "300"]).is_empty(),
            "{name} outlived the timeout: the process group was not killed"
        );
    }
}

/// Keys in headers stay in memory: a request carrying them is recorded
/// and no output or file holds them.
#[test]
fn header_secrets_are_never_written() {
    let sb = Sandbox::new();
    let tools = r#"{"model": "claude-x", "messages": [], "tools": [{"name": "t", "input_schema": {"type": "object"}}]}"#;
    let argv = [
        python(),
        "-c".into(),
        POST.into(),
        "ANTHROPIC_BASE_URL".into(),
        "/v1/messages".into(),
        tools.into(),
    ];
    config(&sb, &argv, "");
    let key = [("TEST_KEY", "sk-live-SECRET")];
    let run = toolpin_env(&sb, &["lock"], &key);
    run.ok();
    let lock = sb.read_string("toolpin.lock");
    assert!(lock.contains("\"format\": \"anthropic\""), "{lock}");
    for text in [&lock, &run.stdout, &run.stderr] {
        assert!(!text.contains("SECRET"), "{text}");
    }
    let mut args = vec!["record", "--"];
    args.extend(argv.iter().map(String::as_str));
    let printed = toolpin_env(&sb, &args, &key);
    printed.ok();
    assert_eq!(
        printed.stdout,
        "[{\"name\": \"t\", \"input_schema\": {\"type\": \"object\"}}]\n"
    );
    assert!(!printed.stderr.contains("SECRET"));
}
