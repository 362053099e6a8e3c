//! `toolpin contract init` and `toolpin contract check` on a copy of
//! examples/refund (issue 17, first slice): what init derives from the
//! lockfile, that it never replaces a file without --force, and the
//! configuration errors check reports (exit 2, one located `error:` line,
//! nothing written).

mod common;

use common::{examples, located, Sandbox};

const FILE: &str = "toolpin.contracts.toml";

fn refund() -> Sandbox {
    let sb = Sandbox::new();
    sb.copy_tree(&examples().join("refund"), "");
    sb
}

/// A refund copy with the starter contracts written.
fn initialized() -> Sandbox {
    let sb = refund();
    sb.run(&["contract", "init"]).ok();
    sb
}

/// The 1-based line of the first line equal to `line`.
fn line_of(text: &str, line: &str) -> usize {
    text.lines()
        .position(|l| l == line)
        .unwrap_or_else(|| panic!("no line {line:?} in\n{text}"))
        + 1
}

#[test]
fn init_writes_the_starter_contracts_beside_the_lockfile() {
    let sb = refund();
    let before = sb.listing();
    let run = sb.run(&["contract", "init"]);
    run.ok();
    assert_eq!(run.stdout, "");
    assert_eq!(
        run.stderr,
        "Wrote toolpin.contracts.toml: 2 contracts for read-only tools (6 calls, 1 default probe); \
2 tools not read-only left commented out; fill in 1 placeholder argument\n"
    );
    let mut expected = before.clone();
    expected.insert(FILE.to_string());
    assert_eq!(sb.listing(), expected, "only the contracts file is new");
    assert!(sb.temp_files().is_empty());

    let text = sb.read_string(FILE);
    assert!(text.starts_with(
        "# toolpin contracts: golden calls against the live tools, derived from toolpin.lock.\n"
    ));
    assert!(text.contains("\nversion = 1\n\n[defaults]\ntimeout_ms = 10000"));
    // The read-only tools: a golden call each; the required order_id has
    // no default, example or enum, so it is a placeholder.
    assert!(text.contains(concat!(
        "[tools.\"orders/orders__lookup_order\"]\n",
        "\n",
        "[tools.\"orders/orders__lookup_order\".arguments]\n",
        "order_id = \"<FILL IN: order_id (string)>\"\n",
        "\n",
        "[[tools.\"orders/orders__lookup_order\".calls]]\n",
        "name = \"golden\"\n",
    )));
    // search_orders: the default and the first enum value, one call per
    // status, and the default probe for page_size; email (optional, no
    // value) is left out.
    assert!(text.contains(concat!(
        "[tools.\"orders/orders__search_orders\".arguments]\n",
        "page_size = 50\n",
        "status = \"open\"\n",
    )));
    let statuses: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("name = \"status="))
        .collect();
    assert_eq!(
        statuses,
        ["open\"", "shipped\"", "delivered\"", "refunded\""]
    );
    assert!(text.contains(concat!(
        "[[tools.\"orders/orders__search_orders\".default_probes]]\n",
        "parameter = \"page_size\"\n",
        "default = 50\n",
    )));
    assert!(!text.contains("email ="));
    // refund_order (readOnlyHint false) and get_invoice (no annotations)
    // are only comments, with side_effects = "allowed" to uncomment.
    for tool in ["orders/orders__refund_order", "billing/get_invoice"] {
        assert!(
            text.contains(&format!(
                "# [tools.\"{tool}\"]\n# side_effects = \"allowed\"\n"
            )),
            "{tool}: {text}"
        );
        assert!(!text.contains(&format!("\n[tools.\"{tool}\"]")), "{tool}");
    }
    // Stable: a second init (forced) writes the same bytes.
    sb.run(&["contract", "init", "--force"]).ok();
    assert_eq!(sb.read_string(FILE), text);
}

#[test]
fn init_never_replaces_a_file_without_force() {
    let sb = initialized();
    sb.write(FILE, "# mine\nversion = 1\n");
    let message = sb.fails(
        &["contract", "init"],
        &[
            "toolpin.contracts.toml already exists",
            "pass --force to replace it",
        ],
    );
    assert!(!message.contains('\n'));
    assert_eq!(sb.read_string(FILE), "# mine\nversion = 1\n");

    let run = sb.run(&["-q", "contract", "init", "--force"]);
    run.ok();
    assert_eq!((run.stdout.as_str(), run.stderr.as_str()), ("", ""));
    assert!(sb
        .read_string(FILE)
        .contains("[tools.\"orders/orders__search_orders\"]"));
    assert!(sb.temp_files().is_empty());
}

#[test]
fn init_follows_the_lockfile_option() {
    let sb = refund();
    sb.write("staging.lock", sb.read("toolpin.lock"));
    sb.run(&["contract", "init", "--lockfile", "staging.lock"])
        .ok();
    assert!(sb.exists("staging.contracts.toml"));
    assert!(!sb.exists(FILE));
    let run = sb.run(&["contract", "check", "--lockfile", "staging.lock"]);
    run.ok();
    assert!(
        run.stdout.starts_with("staging.contracts.toml: ok ("),
        "{run:?}"
    );
}

#[test]
fn init_without_a_lockfile_writes_nothing() {
    let sb = refund();
    std::fs::remove_file(sb.join("toolpin.lock")).expect("remove");
    let before = sb.listing();
    sb.run(&["contract", "init"])
        .error(&["toolpin.lock not found", "toolpin lock"]);
    assert_eq!(sb.listing(), before);
}

#[test]
fn check_says_ok_in_one_line() {
    let sb = initialized();
    let run = sb.run(&["contract", "check"]);
    run.ok();
    assert_eq!(run.stderr, "");
    assert_eq!(
        run.stdout,
        "toolpin.contracts.toml: ok (2 contracts, 6 calls, 1 default probe); \
1 placeholder argument to fill in before the calls are made: orders/orders__lookup_order `order_id`\n"
    );
    // Filled in, the note goes.
    let filled = sb
        .read_string(FILE)
        .replace("\"<FILL IN: order_id (string)>\"", "\"ORD-1234\"");
    sb.write(FILE, filled);
    let run = sb.run(&["contract", "check"]);
    run.ok();
    assert_eq!(
        run.stdout,
        "toolpin.contracts.toml: ok (2 contracts, 6 calls, 1 default probe)\n"
    );
    let run = sb.run(&["-q", "contract", "check"]);
    run.ok();
    assert_eq!((run.stdout.as_str(), run.stderr.as_str()), ("", ""));
}

#[test]
fn check_refuses_a_tool_that_is_not_pinned() {
    let sb = initialized();
    let text = sb.read_string(FILE) + "\n[tools.\"orders/cancel_order\"]\n";
    sb.write(FILE, &text);
    let message = sb.fails(
        &["contract", "check"],
        &["tools.\"orders/cancel_order\": no such tool is pinned in toolpin.lock"],
    );
    assert_eq!(
        located(&message, FILE),
        (line_of(&text, "[tools.\"orders/cancel_order\"]"), 8)
    );
}

#[test]
fn check_refuses_a_tool_that_is_not_read_only_without_side_effects_allowed() {
    let sb = initialized();
    // Uncomment refund_order's contract, then drop its side_effects line.
    let text = sb.read_string(FILE);
    let uncommented = text
        .replace(
            "# [tools.\"orders/orders__refund_order\"]\n# side_effects = \"allowed\"\n",
            "[tools.\"orders/orders__refund_order\"]\n",
        )
        .replace(
            "# [[tools.\"orders/orders__refund_order\".calls]]\n# name = \"golden\"\n",
            "[[tools.\"orders/orders__refund_order\".calls]]\nname = \"golden\"\n",
        );
    assert_ne!(uncommented, text);
    sb.write(FILE, &uncommented);
    let message = sb.fails(
        &["contract", "check"],
        &[
            "tools.\"orders/orders__refund_order\": the pinned tool is not read-only",
            "side_effects = \"allowed\"",
        ],
    );
    assert_eq!(
        located(&message, FILE),
        (
            line_of(&uncommented, "[tools.\"orders/orders__refund_order\"]"),
            8
        )
    );
    // With side_effects = "allowed" it is accepted.
    let allowed = uncommented.replace(
        "[tools.\"orders/orders__refund_order\"]\n",
        "[tools.\"orders/orders__refund_order\"]\nside_effects = \"allowed\"\n",
    );
    sb.write(FILE, allowed);
    let run = sb.run(&["contract", "check"]);
    run.ok();
    assert!(
        run.stdout
            .starts_with("toolpin.contracts.toml: ok (3 contracts, 7 calls, 1 default probe)"),
        "{run:?}"
    );
}

#[test]
fn check_locates_parse_errors_and_unknown_keys() {
    let sb = initialized();
    let text = sb
        .read_string(FILE)
        .replace("repeats = 1 ", "repeats = 1000 ");
    sb.write(FILE, &text);
    let message = sb.fails(
        &["contract", "check"],
        &["defaults.repeats must be between 1 and 100, not 1000"],
    );
    assert_eq!(
        located(&message, FILE),
        (
            line_of(
                &text,
                "repeats = 1000            # times each call is made (latency needs more)"
            ),
            11
        )
    );

    let text = sb
        .read_string(FILE)
        .replace("repeats = 1000 ", "retries = 2 ");
    sb.write(FILE, &text);
    let message = sb.fails(&["contract", "check"], &["unknown field `retries`"]);
    assert_eq!(located(&message, FILE).1, 1);

    sb.write(
        FILE,
        "version = 1\n[tools.\"orders/orders__search_orders\"\n",
    );
    let message = sb.fails(&["contract", "check"], &[]);
    assert_eq!(located(&message, FILE).0, 2);
}

#[test]
fn check_without_a_contracts_file_says_how_to_create_one() {
    let sb = refund();
    sb.fails(
        &["contract", "check"],
        &["toolpin.contracts.toml not found", "toolpin contract init"],
    );
}

/// `init` on the lockfile of a real server: server-everything (pinned in
/// tests/servers/package.json, installed by scripts/setup), captured over
/// stdio. Its nine read-only tools get contracts; the four others are
/// comments; the file checks ok and names the three placeholders.
#[test]
fn init_on_the_lockfile_of_server_everything() {
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let server = repo.join("tests/servers/node_modules/.bin/mcp-server-everything");
    assert!(
        server.exists(),
        "{} is missing: run scripts/setup to install the test servers",
        server.display()
    );
    let sb = Sandbox::new();
    let root = sb.path().canonicalize().expect("canonical sandbox");
    std::fs::create_dir_all(root.join("bin")).expect("bin");
    let link = root.join("bin/mcp-server-everything");
    std::os::unix::fs::symlink(&server, &link).expect("link");
    sb.write(
        "toolpin.toml",
        format!(
            "[servers.everything]\ncommand = [{}]\n",
            serde_json::json!(link.display().to_string())
        ),
    );
    sb.run(&["-q", "lock"]).ok();
    let run = sb.run(&["contract", "init"]);
    run.ok();
    assert_eq!(
        run.stderr,
        "Wrote toolpin.contracts.toml: 9 contracts for read-only tools (17 calls, 6 default probes); \
4 tools not read-only left commented out; fill in 3 placeholder arguments\n"
    );
    let text = sb.read_string(FILE);
    let active: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("[tools.\"everything/"))
        .filter_map(|l| l.strip_suffix("\"]"))
        .collect();
    assert_eq!(
        active,
        [
            "echo",
            "get-annotated-message",
            "get-env",
            "get-resource-links",
            "get-resource-reference",
            "get-structured-content",
            "get-sum",
            "get-tiny-image",
            "trigger-long-running-operation",
        ]
    );
    let commented: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("# [tools.\"everything/"))
        .filter_map(|l| l.strip_suffix("\"]"))
        .collect();
    assert_eq!(
        commented,
        [
            "gzip-file-as-resource",
            "simulate-research-query",
            "toggle-simulated-logging",
            "toggle-subscriber-updates",
        ]
    );
    // The enum of get-structured-content: one call per city.
    for city in ["New York", "Chicago", "Los Angeles"] {
        assert!(
            text.contains(&format!(
                "name = \"location={city}\"\narguments = {{ location = \"{city}\" }}\n"
            )),
            "{city}"
        );
    }
    let run = sb.run(&["contract", "check"]);
    run.ok();
    assert_eq!(
        run.stdout,
        "toolpin.contracts.toml: ok (9 contracts, 17 calls, 6 default probes); \
3 placeholder arguments to fill in before the calls are made: \
everything/echo `message`, everything/get-sum `a`, everything/get-sum `b`\n"
    );
    assert_eq!(
        common::processes_under(&root),
        vec![],
        "a server was left running"
    );
}

/// `--env staging` reads toolpin.staging.lock and keeps its contracts in
/// toolpin.staging.contracts.toml; the default ones are not touched.
#[test]
fn each_environment_has_its_own_contracts() {
    let sb = refund();
    let config =
        sb.read_string("toolpin.toml") + "\n[env.staging.servers.billing]\nenabled = false\n";
    sb.write("toolpin.toml", config);
    sb.run(&["-q", "lock", "--env", "staging"]).ok();
    let run = sb.run(&["contract", "init", "--env", "staging"]);
    run.ok();
    assert!(
        run.stderr.starts_with(
            "Wrote toolpin.staging.contracts.toml: 2 contracts for read-only tools (6 calls, 1 default probe); 1 tool not read-only"
        ),
        "{run:?}"
    );
    assert!(!sb.exists(FILE));
    let text = sb.read_string("toolpin.staging.contracts.toml");
    assert!(text.starts_with(
        "# toolpin contracts: golden calls against the live tools, derived from toolpin.staging.lock.\n"
    ));
    assert!(!text.contains("billing/get_invoice"));
    let run = sb.run(&["contract", "check", "--env", "staging"]);
    run.ok();
    assert!(
        run.stdout.starts_with(
            "toolpin.staging.contracts.toml: ok (2 contracts, 6 calls, 1 default probe)"
        ),
        "{run:?}"
    );
    // The default environment's lockfile has billing; staging's does not.
    sb.write(
        "toolpin.staging.contracts.toml",
        text + "\n[tools.\"billing/get_invoice\"]\nside_effects = \"allowed\"\n",
    );
    sb.fails_keeping(
        "toolpin.staging.lock",
        &["contract", "check", "--env", "staging"],
        &["tools.\"billing/get_invoice\": no such tool is pinned in toolpin.staging.lock"],
    );
}

/// Both commands read the lockfile only: the capture flags are accepted
/// (scripts pass the same flags to every command) but not shown.
#[test]
fn help_shows_the_config_flags_and_hides_the_capture_ones() {
    let sb = initialized();
    for command in ["init", "check", "record", "run"] {
        let help = sb.run(&["contract", command, "--help"]);
        help.ok();
        for flag in ["--config", "--env", "--lockfile"] {
            assert!(help.stdout.contains(flag), "{command}: {}", help.stdout);
        }
        assert!(
            !help.stdout.contains("--jobs"),
            "{command}: {}",
            help.stdout
        );
        assert!(!help.stdout.contains("--keep-going"), "{command}");
        assert_eq!(help.stdout.contains("--force"), command == "init");
        assert_eq!(help.stdout.contains("--format"), command == "run");
    }
    sb.run(&["contract", "check", "--jobs", "2", "--keep-going"])
        .ok();
}

// ---------------------------------------------------------------------------
// contract record and run, against live servers (slice 2)

fn repo() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn python() -> String {
    std::env::var("PYTHON").unwrap_or_else(|_| {
        let path = repo().join(".venv/bin/python");
        assert!(path.exists(), ".venv/bin/python; run scripts/setup");
        path.display().to_string()
    })
}

/// A sandbox pinned to `server = command`, with init's contracts.
fn pinned(toml: &str) -> Sandbox {
    let sb = Sandbox::new();
    sb.write("toolpin.toml", toml);
    sb.run(&["lock"]).ok();
    sb.run(&["contract", "init"]).ok();
    sb
}

/// `contract run` with the findings document on stdout.
const RUN: &[&str] = &["contract", "run", "--format", "json"];

/// The findings of a run (`--format json`): `rule: server/tool#call:
/// message` each, the message without the call's name before it.
fn findings(stdout: &str) -> Vec<String> {
    let doc: serde_json::Value =
        serde_json::from_str(stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    doc["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .map(|f| {
            let s = |k: &str| f[k].as_str().unwrap_or_else(|| panic!("{k} in {f}"));
            let call = s("call");
            let message = s("message");
            let message = message
                .strip_prefix(&format!("{call}: "))
                .unwrap_or_else(|| panic!("the message names the call: {f}"));
            format!(
                "{}: {}/{}#{call}: {message}",
                s("rule"),
                s("server"),
                s("tool")
            )
        })
        .collect()
}

fn everything_bin() -> std::path::PathBuf {
    repo()
        .join("tests/servers/node_modules/.bin/mcp-server-everything")
        .canonicalize()
        .expect("mcp-server-everything; run scripts/setup")
}

#[test]
fn record_then_run_against_server_everything_finds_nothing_repeatedly() {
    let sb = pinned(&format!(
        "[servers.everything]\ncommand = [{:?}, \"stdio\"]\n",
        everything_bin().display().to_string()
    ));
    record_and_run_everything(&sb, 5);
}

/// An HTTP server killed when the test ends, however it ends.
struct Daemon(std::process::Child);

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn record_then_run_over_streamable_http() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let _daemon = Daemon(
        std::process::Command::new(everything_bin())
            .arg("streamableHttp")
            .env("PORT", port.to_string())
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("start server-everything over HTTP"),
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            std::time::Instant::now() < deadline,
            "server-everything did not listen on {port}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let sb = pinned(&format!(
        "[servers.everything]\nurl = \"http://127.0.0.1:{port}/mcp\"\n"
    ));
    record_and_run_everything(&sb, 2);
}

/// Fills init's placeholders, records, and runs `times` times: no findings.
fn record_and_run_everything(sb: &Sandbox, times: usize) {
    let contracts = sb.read_string(FILE);
    // Fill any placeholder init left with a plain string (get-sum's numbers
    // then fail validation, the same way every time).
    let contracts = contracts.replace("\"<FILL IN: ", "\"filled <");
    // trigger-long-running-operation takes longer than the call's timeout
    // by design: left out.
    let long = "[tools.\"everything/trigger-long-running-operation\"]\n";
    assert!(contracts.contains(long));
    let contracts = contracts.replace(long, &format!("{long}enabled = false\n"));
    sb.write(FILE, &contracts);
    sb.run(&["contract", "check"]).ok();
    let record = sb.run(&["contract", "record"]);
    record.ok();
    assert!(
        record.stderr.starts_with("Wrote toolpin.behaviour.json: "),
        "{record:#?}"
    );
    let snapshot: serde_json::Value =
        serde_json::from_str(&sb.read_string("toolpin.behaviour.json")).unwrap();
    assert!(snapshot["fingerprint"].as_str().unwrap().len() >= 64);
    assert!(!snapshot["calls"].as_object().unwrap().is_empty());
    for _ in 0..times {
        let run = sb.run(&["contract", "run"]);
        run.ok();
        assert!(
            run.stdout
                .starts_with("ok: the live tools behave as recorded ("),
            "{run:#?}"
        );
        assert_eq!(run.stdout.lines().count(), 1, "{run:#?}");
    }
}

fn behaviour_sandbox() -> Sandbox {
    behaviour_sandbox_with("")
}

/// The behaviour server pinned, init's contracts (get_order's placeholder
/// `order_id` filled in) plus `extra`, recorded.
fn behaviour_sandbox_with(extra: &str) -> Sandbox {
    let script = repo()
        .join("tests/servers/py/behaviour.py")
        .canonicalize()
        .unwrap();
    let sb = pinned(&format!(
        "[servers.orders]\ncommand = [{:?}, {:?}]\nenv = {{ TOOLPIN_TEST_DRIFT = \"${{TOOLPIN_TEST_DRIFT:-none}}\" }}\n",
        python(),
        script.display().to_string()
    ));
    let placeholder = "order_id = \"<FILL IN: order_id (string)>\"";
    let text = sb.read_string(FILE);
    assert!(text.contains(placeholder), "{text}");
    sb.write(
        FILE,
        text.replace(placeholder, "order_id = \"ord-0998\"") + extra,
    );
    sb.run(&["contract", "record"]).ok();
    sb
}

#[test]
fn twenty_runs_against_the_unchanged_server_find_nothing() {
    let sb = behaviour_sandbox_with(BAD_CALL);
    for n in 0..20 {
        let run = sb.run(&["contract", "run"]);
        assert_eq!(run.code, 0, "run {n}: {run:#?}");
        assert!(
            run.stdout
                .starts_with("ok: the live tools behave as recorded (2 tools, behaviour "),
            "run {n}: {run:#?}"
        );
        assert_eq!(run.stdout.lines().count(), 1, "run {n}: {run:#?}");
    }
}

#[test]
fn a_behaviour_finding_goes_through_the_policy_and_every_report_format() {
    let sb = behaviour_sandbox();
    let status = [("TOOLPIN_TEST_DRIFT", "status")];
    let run = sb.run_env(
        &[
            "contract",
            "run",
            "--format",
            "text",
            "--format",
            "json=out/findings.json",
            "--format",
            "markdown=out/comment.md",
            "--format",
            "sarif=out/drift.sarif",
            "--format",
            "junit=out/junit.xml",
            "--format",
            "github=out/annotations.txt",
        ],
        &status,
    );
    assert_eq!(run.code, 1, "{run:#?}");
    assert!(
        run.stdout
            .starts_with("drift: behaviour moved in 1 tool (1 finding)\nbehaviour "),
        "{run:#?}"
    );
    assert!(
        run.stdout.contains("\norders/search_orders\n  high      result-value-set-changed  /rows/*/status\n    golden: values at `/rows/*/status`: new \"refunded\"\n    - [\n"),
        "{run:#?}"
    );
    let doc: serde_json::Value =
        serde_json::from_str(&sb.read_string("out/findings.json")).unwrap();
    let f = &doc["findings"][0];
    assert_eq!(
        (&f["rule"], &f["call"], &f["pointer"], &f["kind"]),
        (
            &serde_json::json!("result-value-set-changed"),
            &serde_json::json!("golden"),
            &serde_json::json!("/rows/*/status"),
            &serde_json::json!("behavioural")
        )
    );
    assert_eq!(doc["verdict"]["fails"], true, "{doc}");
    // The document is the findings document: docs/findings.schema.json.
    let check = std::process::Command::new(python())
        .args([
            "-c",
            "import json, sys, jsonschema\n\
             schema = json.load(open(sys.argv[1]))\n\
             jsonschema.Draft202012Validator.check_schema(schema)\n\
             jsonschema.Draft202012Validator(schema).validate(json.load(open(sys.argv[2])))",
        ])
        .arg(repo().join("docs/findings.schema.json"))
        .arg(sb.join("out/findings.json"))
        .output()
        .expect("python");
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );
    let md = sb.read_string("out/comment.md");
    assert!(
        md.starts_with("### ❌ toolpin: behaviour drift fails the check"),
        "{md}"
    );
    assert!(md.contains("\nBehaviour fingerprint `"), "{md}");
    let sarif: serde_json::Value =
        serde_json::from_str(&sb.read_string("out/drift.sarif")).unwrap();
    let result = &sarif["runs"][0]["results"][0];
    assert_eq!(result["ruleId"], "result-value-set-changed");
    assert_eq!(result["properties"]["call"], "golden");
    let junit = sb.read_string("out/junit.xml");
    assert!(junit.contains("result-value-set-changed"), "{junit}");
    assert!(junit.contains("<failure"), "{junit}");
    let github = sb.read_string("out/annotations.txt");
    assert!(
        github.starts_with("::error file=toolpin.lock,line="),
        "{github}"
    );

    // The eval plan: the finding's re-run tags.
    let plan = sb.run_env(&["contract", "run", "--plan"], &status);
    assert_eq!(plan.code, 1, "{plan:#?}");
    assert!(plan.stdout.contains("tool-cases"), "{plan:#?}");

    // The policy applies: an ignore entry accepts it (exit 0, reported as
    // ignored); a level of off drops it.
    let toml = sb.read_string("toolpin.toml");
    sb.write(
        "toolpin.toml",
        format!("{toml}\n[[policy.ignore]]\nrule = \"result-value-set-changed\"\ntool = \"orders/search_orders\"\nreason = \"refunds are new, agreed\"\n"),
    );
    let run = sb.run_env(RUN, &status);
    assert_eq!(run.code, 0, "{run:#?}");
    let doc: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(
        doc["verdict"]["ignored"][0]["reason"], "refunds are new, agreed",
        "{doc}"
    );
    sb.write(
        "toolpin.toml",
        format!("{toml}\n[policy.rules]\nresult-value-set-changed = \"off\"\n"),
    );
    let run = sb.run_env(&["contract", "run"], &status);
    assert_eq!(run.code, 0, "{run:#?}");
    assert!(run.stdout.starts_with("ok: "), "{run:#?}");
}

#[test]
fn an_unreachable_server_is_unavailable_not_drift() {
    let sb = behaviour_sandbox();
    let toml = sb.read_string("toolpin.toml");
    sb.write(
        "toolpin.toml",
        toml.replace(&python(), "/nonexistent/python"),
    );
    let run = sb.run(&["contract", "run"]);
    assert_eq!(run.code, 2, "{run:#?}");
    assert!(
        run.stderr.contains("unavailable: server \"orders\": "),
        "{run:#?}"
    );
    assert!(!run.stdout.contains("result-"), "{run:#?}");
}

#[test]
fn the_behavioural_rule_ids_are_in_the_registry() {
    let sb = Sandbox::new();
    for id in [
        "result-field-missing",
        "result-value-set-changed",
        "result-count-changed",
        "latency-regressed",
        "error-class-changed",
    ] {
        let run = sb.run(&["rules", id]);
        run.ok();
        assert!(run.stdout.contains(id), "{run:#?}");
    }
}

#[test]
fn run_evaluates_fields_values_and_counts() {
    let sb = behaviour_sandbox_with(concat!(
        "\n[[tools.\"orders/search_orders\".calls]]\n",
        "name = \"asserted\"\n",
        "[tools.\"orders/search_orders\".calls.expect]\n",
        "fields = [{ pointer = \"/structuredContent/rows/*/status\", type = \"string\" }, { pointer = \"/total\", type = \"integer\" }]\n",
        "values = [{ pointer = \"/rows/*/status\", set = [\"open\", \"pending\", \"closed\"], exact = true }]\n",
        "counts = [{ pointer = \"/rows\", min = 50, max = 50 }]\n",
    ));
    let clean = sb.run(RUN);
    clean.ok();
    assert!(findings(&clean.stdout).is_empty(), "{clean:#?}");

    let run = sb.run_env(RUN, &[("TOOLPIN_TEST_DRIFT", "status")]);
    assert_eq!(run.code, 1, "{run:#?}");
    let found = findings(&run.stdout);
    assert_eq!(
        rule_calls(&run.stdout),
        [
            "contract-failed: orders/search_orders#asserted",
            "result-value-set-changed: orders/search_orders#asserted",
            "result-value-set-changed: orders/search_orders#golden",
        ],
        "{run:#?}"
    );
    assert!(
        found.contains(&"contract-failed: orders/search_orders#asserted: values at `/rows/*/status` outside the pinned set: \"refunded\"".to_string()),
        "{found:?}"
    );

    // A count assertion: 20 rows where 50 are expected.
    let sb = behaviour_sandbox_with(concat!(
        "\n[[tools.\"orders/search_orders\".calls]]\n",
        "name = \"twenty\"\n",
        "arguments = { page_size = 20 }\n",
        "expect = { counts = [{ pointer = \"/rows\", min = 50 }] }\n",
    ));
    let run = sb.run(RUN);
    assert_eq!(run.code, 1, "{run:#?}");
    assert_eq!(
        findings(&run.stdout),
        ["contract-failed: orders/search_orders#twenty: `/rows` holds 20 items, expected at least 50"],
        "{run:#?}"
    );
}

/// The findings of a run as `rule: call`, sorted.
fn rule_calls(stdout: &str) -> Vec<String> {
    let mut out: Vec<String> = findings(stdout)
        .iter()
        .map(|f| f.split(": ").take(2).collect::<Vec<_>>().join(": "))
        .collect();
    out.sort();
    out
}

/// get_order's deliberate bad call: a validation error unless switched.
const BAD_CALL: &str = concat!(
    "\n[[tools.\"orders/get_order\".calls]]\n",
    "name = \"bad\"\n",
    "arguments = { order_id = \"bad\" }\n",
    "expect = { error = \"validation\" }\n",
);

#[test]
fn every_behaviour_switch_is_exactly_its_finding() {
    let sb = behaviour_sandbox_with(BAD_CALL);
    let snapshot: serde_json::Value =
        serde_json::from_str(&sb.read_string("toolpin.behaviour.json")).unwrap();
    let golden = &snapshot["calls"]["orders/search_orders#golden"];
    assert_eq!(golden["formats"]["/rows/*/country"], "country-name");
    assert_eq!(golden["formats"]["/rows/*/created"], "rfc3339");
    assert_eq!(
        golden["order"]["/rows"],
        serde_json::json!({"/created": "descending", "/id": "descending"})
    );
    assert_eq!(
        snapshot["calls"]["orders/get_order#bad"]["class"],
        "validation"
    );
    assert_eq!(
        snapshot["calls"]["orders/get_order#golden"]["formats"]["/currency"],
        "iso-4217"
    );
    // Twice clean: the snapshot's formats and order keys are stable.
    for _ in 0..2 {
        let clean = sb.run(RUN);
        clean.ok();
        assert!(findings(&clean.stdout).is_empty(), "{clean:#?}");
    }
    let search = "orders/search_orders#golden";
    for (switch, expected) in [
        // The golden call passes page_size = 50; only the default probe,
        // which also calls without it, sees the server's default move.
        (
            "page20",
            vec!["default-behaviour-changed: orders/search_orders#probe:page_size".to_string()],
        ),
        (
            "status",
            vec![format!("result-value-set-changed: {search}")],
        ),
        ("iso", vec![format!("result-format-changed: {search}")]),
        ("reorder", vec![format!("result-order-changed: {search}")]),
        ("slow", vec![format!("latency-regressed: {search}")]),
        // The bad call's class changed, and its expectation fails: two.
        (
            "ratelimit",
            vec![
                "contract-failed: orders/get_order#bad".to_string(),
                "error-class-changed: orders/get_order#bad".to_string(),
            ],
        ),
    ] {
        let run = sb.run_env(RUN, &[("TOOLPIN_TEST_DRIFT", switch)]);
        assert_eq!(run.code, 1, "{switch}: {run:#?}");
        assert_eq!(rule_calls(&run.stdout), expected, "{switch}: {run:#?}");
        let found = findings(&run.stdout);
        match switch {
            "iso" => assert_eq!(
                found,
                [format!("result-format-changed: {search}: `/rows/*/country` held country-name values when recorded, iso-3166-alpha-2 now")]
            ),
            "reorder" => assert_eq!(
                found,
                [format!("result-order-changed: {search}: `/rows` was sorted by `/created` descending, `/id` descending when recorded, now by `/created` ascending, `/id` ascending")]
            ),
            "ratelimit" => {
                assert!(found.contains(&"error-class-changed: orders/get_order#bad: the call answered validation when recorded, rate-limit now".to_string()), "{found:?}");
                assert!(found.contains(&"contract-failed: orders/get_order#bad: expected a validation error, the call failed with a rate-limit error".to_string()), "{found:?}");
            }
            _ => {}
        }
    }
}

#[test]
fn run_evaluates_formats_order_output_schema_and_error() {
    let sb = behaviour_sandbox_with(&format!(
        "{BAD_CALL}{}",
        concat!(
            "\n[[tools.\"orders/get_order\".calls]]\n",
            "name = \"typed\"\n",
            "arguments = { order_id = \"ord-0997\" }\n",
            "expect = { output_schema = true, formats = [{ pointer = \"/currency\", format = \"iso-4217\" }, { pointer = \"/created\", format = \"rfc3339\" }] }\n",
            "\n[[tools.\"orders/search_orders\".calls]]\n",
            "name = \"asserted\"\n",
            "[tools.\"orders/search_orders\".calls.expect]\n",
            "formats = [{ pointer = \"/rows/*/country\", format = \"country-name\" }, { pointer = \"/rows/*/id\", regex = \"^ord-[0-9]{4}$\", min_length = 8, max_length = 8 }]\n",
            "order = [{ pointer = \"/structuredContent/rows\", key = \"/created\", direction = \"descending\" }]\n",
            "output_schema = true\n",
        )
    ));
    let clean = sb.run(RUN);
    clean.ok();
    assert!(findings(&clean.stdout).is_empty(), "{clean:#?}");

    let asserted = "orders/search_orders#asserted";
    let run = sb.run_env(RUN, &[("TOOLPIN_TEST_DRIFT", "iso")]);
    assert_eq!(run.code, 1, "{run:#?}");
    assert_eq!(
        rule_calls(&run.stdout),
        [
            format!("contract-failed: {asserted}"),
            format!("result-format-changed: {asserted}"),
            "result-format-changed: orders/search_orders#golden".to_string(),
        ],
        "{run:#?}"
    );
    assert!(findings(&run.stdout).contains(&format!("contract-failed: {asserted}: 50 of 50 values at `/rows/*/country` are not country-name, the first \"DE\"")), "{run:#?}");

    let run = sb.run_env(RUN, &[("TOOLPIN_TEST_DRIFT", "reorder")]);
    assert_eq!(run.code, 1, "{run:#?}");
    assert_eq!(
        rule_calls(&run.stdout),
        [
            format!("contract-failed: {asserted}"),
            format!("result-order-changed: {asserted}"),
            "result-order-changed: orders/search_orders#golden".to_string(),
        ],
        "{run:#?}"
    );
    assert!(findings(&run.stdout).contains(&format!("contract-failed: {asserted}: `/structuredContent/rows` is not sorted by `/created` descending: item 1 (\"2026-12-01T22:24:00Z\") comes after item 0 (\"2026-12-01T22:07:00Z\")")), "{run:#?}");

    let run = sb.run_env(RUN, &[("TOOLPIN_TEST_DRIFT", "ratelimit")]);
    assert_eq!(run.code, 1, "{run:#?}");
    assert_eq!(
        rule_calls(&run.stdout),
        [
            "contract-failed: orders/get_order#bad",
            "error-class-changed: orders/get_order#bad",
        ],
        "{run:#?}"
    );
}

#[test]
fn a_bad_volatile_pattern_is_a_located_configuration_error() {
    let sb = behaviour_sandbox();
    let text = sb.read_string(FILE);
    let text = text.replacen(
        "[defaults]\n",
        "[defaults]\nvolatile_patterns = [\"^ord-[0-9]+$\", \"(unclosed\"]\n",
        1,
    );
    let line = line_of(
        &text,
        "volatile_patterns = [\"^ord-[0-9]+$\", \"(unclosed\"]",
    );
    sb.write(FILE, &text);
    let run = sb.run(&["contract", "check"]);
    assert_eq!(run.code, 2, "{run:#?}");
    assert!(
        run.stderr.starts_with(&format!("error: toolpin.contracts.toml:{line}:38: defaults.volatile_patterns: \"(unclosed\" is not a valid regex: ")),
        "{run:#?}"
    );
}

#[test]
fn the_rule_ids_of_the_assertions_and_snapshot_additions_are_in_the_registry() {
    let sb = Sandbox::new();
    for id in [
        "result-format-changed",
        "result-order-changed",
        "result-nonconformant",
        "contract-failed",
    ] {
        let run = sb.run(&["rules", id]);
        run.ok();
        assert!(run.stdout.contains(id), "{run:#?}");
    }
}

/// Processes with `needle` as an argument, from /proc.
fn processes_with(needle: &str) -> Vec<String> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        if let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) {
            let args: Vec<String> = cmdline
                .split(|b| *b == 0)
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect();
            if args.iter().any(|a| a == needle) {
                out.push(args.join(" "));
            }
        }
    }
    out
}

#[test]
fn what_a_stdio_server_leaves_in_its_group_goes_with_it() {
    let script = repo()
        .join("tests/servers/py/behaviour.py")
        .canonicalize()
        .unwrap();
    // A shell that starts a background job, then becomes the server: the
    // job outlived the session when the server exited cleanly.
    let marker = format!("{}.25", 300 + std::process::id() % 600);
    let sb = pinned(&format!(
        "[servers.orders]\ncommand = [\"sh\", \"-c\", {:?}]\n",
        format!("sleep {marker} & exec {} {}", python(), script.display())
    ));
    assert!(
        processes_with(&marker).is_empty(),
        "after lock: {:?}",
        processes_with(&marker)
    );
    let text = sb.read_string(FILE).replace(
        "order_id = \"<FILL IN: order_id (string)>\"",
        "order_id = \"ord-0998\"",
    );
    sb.write(FILE, &text);
    sb.run(&["contract", "record"]).ok();
    sb.run(&["contract", "run"]).ok();
    assert!(
        processes_with(&marker).is_empty(),
        "after run: {:?}",
        processes_with(&marker)
    );
}

#[test]
fn run_without_a_snapshot_or_with_an_edited_one_is_an_error_that_changes_nothing() {
    let sb = behaviour_sandbox();
    let recorded = sb.read_string("toolpin.behaviour.json");
    std::fs::remove_file(sb.join("toolpin.behaviour.json")).unwrap();
    let before = sb.listing();
    let run = sb.run(&["contract", "run"]);
    assert_eq!(run.code, 2, "{run:#?}");
    assert!(
        run.stderr
            .contains("toolpin.behaviour.json not found; run `toolpin contract record` first"),
        "{run:#?}"
    );
    assert!(run.stdout.is_empty(), "{run:#?}");
    assert_eq!(sb.listing(), before);

    // One count edited by hand: the fingerprint no longer matches.
    let edited = recorded.replacen("\"/rows\": 50", "\"/rows\": 49", 1);
    assert_ne!(edited, recorded);
    sb.write("toolpin.behaviour.json", &edited);
    let run = sb.run(&["contract", "run"]);
    assert_eq!(run.code, 2, "{run:#?}");
    assert!(run.stderr.contains("edited by hand"), "{run:#?}");
    assert!(run.stdout.is_empty(), "{run:#?}");
    assert_eq!(sb.read_string("toolpin.behaviour.json"), edited);
}

#[test]
fn record_then_run_against_mcp_server_time_over_both_revisions_finds_nothing() {
    let time = repo()
        .join(".venv/bin/mcp-server-time")
        .canonicalize()
        .expect("mcp-server-time; run scripts/setup");
    let time = format!("{:?}", time.display().to_string());
    // `t` speaks the stateless revision (2026-07-28), `hs` the handshake.
    let sb = pinned(&format!(
        "[servers.t]\ncommand = [{time}, \"--local-timezone\", \"UTC\"]\n\
         [servers.hs]\ncommand = [{time}, \"--local-timezone\", \"UTC\"]\nprotocol_version = \"2025-11-25\"\nprefix = \"hs_\"\n"
    ));
    let text = sb.read_string(FILE);
    // init leaves the required timezones and time as placeholders.
    let placeholders = text.matches("= \"<FILL IN: ").count();
    assert_eq!(placeholders, 8, "{text}");
    let filled = text
        .replace("\"<FILL IN: timezone (string)>\"", "\"Europe/Berlin\"")
        .replace("\"<FILL IN: source_timezone (string)>\"", "\"UTC\"")
        .replace("\"<FILL IN: target_timezone (string)>\"", "\"Asia/Tokyo\"")
        .replace("\"<FILL IN: time (string)>\"", "\"16:30\"");
    assert!(!filled.contains("= \"<FILL IN: "), "{filled}");
    // The current time's day of the week moves at midnight: volatile, as
    // a person would mark it.
    let filled = filled.replace(
        "[tools.\"t/get_current_time\"]\n",
        "[tools.\"t/get_current_time\"]\nvolatile = [\"/day_of_week\"]\n",
    );
    let filled = filled.replace(
        "[tools.\"hs/hs_get_current_time\"]\n",
        "[tools.\"hs/hs_get_current_time\"]\nvolatile = [\"/day_of_week\"]\n",
    );
    sb.write(FILE, &filled);
    sb.run(&["contract", "check"]).ok();
    sb.run(&["contract", "record"]).ok();
    let snapshot: serde_json::Value =
        serde_json::from_str(&sb.read_string("toolpin.behaviour.json")).unwrap();
    let calls = snapshot["calls"].as_object().unwrap();
    assert_eq!(calls.len(), 4, "{snapshot:#}");
    for (key, call) in calls {
        assert_eq!(call["class"], "ok", "{key}: {call:#}");
    }
    assert_eq!(
        calls["t/convert_time#golden"]["formats"],
        calls["hs/hs_convert_time#golden"]["formats"]
    );
    for _ in 0..3 {
        let run = sb.run(&["contract", "run"]);
        run.ok();
        assert!(
            run.stdout
                .starts_with("ok: the live tools behave as recorded (4 tools, behaviour "),
            "{run:#?}"
        );
    }
}

/// A contract failure in the ledger: one event however many runs see it,
/// resolved as reverted when the tool behaves as recorded again, and as
/// accepted when the new behaviour is recorded.
#[test]
fn a_contract_failure_is_one_ledger_event_until_behaviour_returns_or_is_re_recorded() {
    use toolpin_ledger::{EventFilter, EventKind, Ledger, Resolution, Severity};
    let sb = behaviour_sandbox();
    let status = [("TOOLPIN_TEST_DRIFT", "status")];
    let failures = |sb: &Sandbox| {
        let mut ledger = Ledger::open(&sb.join(".toolpin/ledger.db")).unwrap();
        ledger
            .events(&EventFilter::default())
            .unwrap()
            .into_iter()
            .filter(|e| e.kind == EventKind::ContractFailed)
            .collect::<Vec<_>>()
    };
    for _ in 0..2 {
        let run = sb.run_env(&["contract", "run"], &status);
        assert_eq!(run.code, 1, "{run:#?}");
    }
    let seen = failures(&sb);
    assert_eq!(seen.len(), 1, "{seen:#?}");
    let e = &seen[0];
    assert_eq!(
        (e.server.as_str(), e.tool.as_str()),
        ("orders", "search_orders")
    );
    assert_eq!((e.count, e.severity), (2, Some(Severity::High)));
    assert_eq!(e.findings[0].rule, "result-value-set-changed");
    assert!(e.pinned.is_some() && e.live.is_some(), "{e:?}");
    assert!(e.resolved.is_none());

    // Behaving as recorded again resolves it.
    let run = sb.run(&["contract", "run"]);
    assert_eq!(run.code, 0, "{run:#?}");
    let seen = failures(&sb);
    assert_eq!(
        seen[0].resolved.as_ref().map(|r| &r.1),
        Some(&Resolution::Reverted)
    );

    // Failing again is a new event; recording the new behaviour accepts it.
    assert_eq!(sb.run_env(&["contract", "run"], &status).code, 1);
    sb.run_env(&["contract", "record"], &status).ok();
    let seen = failures(&sb);
    assert_eq!(seen.len(), 2, "{seen:#?}");
    assert!(
        matches!(seen[1].resolved, Some((_, Resolution::Accepted { .. }))),
        "{seen:#?}"
    );
}

// ---------------------------------------------------------------------------
// Safety on the session (issue 32, fault 4): each session lists its tools
// before any call, and a tool is called only while its live definition is
// the pinned one, or is still read-only (and not destructive). The server
// (tests/servers/py/turned.py) writes down every call it gets, so that a
// test can prove a tool was never called.

/// Where turned.py writes down its calls, in the sandbox.
const CALLS: &str = "calls.log";

/// turned.py pinned as served unchanged (search_orders read-only, an enum
/// of three statuses; count_orders read-only; purge_cache claiming both
/// readOnlyHint and destructiveHint), init's contracts, recorded, and the
/// calls of that recording checked and forgotten. TOOLPIN_TEST_TURN in a
/// command's environment turns search_orders.
fn turned_sandbox() -> Sandbox {
    let script = repo()
        .join("tests/servers/py/turned.py")
        .canonicalize()
        .unwrap();
    let sb = Sandbox::new();
    sb.write(
        "toolpin.toml",
        format!(
            "[servers.orders]\ncommand = [{:?}, {:?}]\nenv = {{ TOOLPIN_TEST_TURN = \"${{TOOLPIN_TEST_TURN:-none}}\", TOOLPIN_TEST_CALLS = {:?} }}\n{NO_LATENCY}",
            python(),
            script.display().to_string(),
            sb.join(CALLS).display().to_string()
        ),
    );
    sb.run(&["lock"]).ok();
    sb.run(&["contract", "init"]).ok();
    sb.run(&["contract", "record"]).ok();
    // The recording called both read-only tools: search_orders once per
    // status, the golden call and its default probe's two sides.
    let calls = calls_made(&sb);
    let count = |tool: &str| calls.iter().filter(|c| *c == tool).count();
    assert_eq!(
        (count("count_orders"), count("search_orders")),
        (1, 6),
        "{calls:?}"
    );
    sb
}

/// The tools the server was called for since the last look, in order;
/// forgets them.
fn calls_made(sb: &Sandbox) -> Vec<String> {
    let path = sb.join(CALLS);
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    let _ = std::fs::remove_file(&path);
    text.lines()
        .map(|l| {
            let call: serde_json::Value =
                serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"));
            call["tool"].as_str().expect("tool").to_string()
        })
        .collect()
}

/// `contract run` and `contract record` with search_orders turned by
/// `mode`: exit 1, search_orders never called (count_orders still is),
/// one `contract-call-refused` finding saying `reason`, the snapshot left
/// as it was. Returns the sandbox.
fn never_called_when(mode: &str, label: &str, reason: &str) -> Sandbox {
    let sb = turned_sandbox();
    let snapshot = sb.read("toolpin.behaviour.json");
    let turn = [("TOOLPIN_TEST_TURN", mode)];

    let run = sb.run_env(RUN, &turn);
    assert_eq!(run.code, 1, "{mode}: {run:#?}");
    assert_eq!(calls_made(&sb), ["count_orders"], "{mode}: {run:#?}");
    let doc: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(doc["verdict"]["fails"], true, "{doc}");
    let findings = doc["findings"].as_array().unwrap();
    assert_eq!(findings.len(), 1, "{mode}: {doc}");
    let f = &findings[0];
    assert_eq!(
        (&f["rule"], &f["server"], &f["tool"], &f["severity"]),
        (
            &serde_json::json!("contract-call-refused"),
            &serde_json::json!("orders"),
            &serde_json::json!("search_orders"),
            &serde_json::json!("critical")
        ),
        "{mode}: {f}"
    );
    let message = f["message"].as_str().unwrap();
    assert!(
        message.starts_with(&format!("6 calls not made: {reason}")),
        "{mode}: {message}"
    );

    let record = sb.run_env(&["contract", "record"], &turn);
    assert_eq!(record.code, 1, "{mode}: {record:#?}");
    assert!(
        record.stderr.starts_with(&format!(
            "{label}: orders/search_orders: 6 calls not made: {reason}"
        )),
        "{mode}: {record:#?}"
    );
    assert!(
        record
            .stderr
            .contains("1 tool not called; toolpin.behaviour.json not written"),
        "{mode}: {record:#?}"
    );
    assert_eq!(calls_made(&sb), ["count_orders"], "{mode}: {record:#?}");
    assert_eq!(sb.read("toolpin.behaviour.json"), snapshot, "{mode}");
    sb
}

#[test]
fn a_tool_turned_destructive_upstream_is_never_called_and_fails_every_report_format() {
    let sb = never_called_when(
        "destructive",
        "drifted",
        "its live definition is no longer the pinned one and is not read-only: its annotations say readOnlyHint: false and destructiveHint: true",
    );
    let turn = [("TOOLPIN_TEST_TURN", "destructive")];
    let run = sb.run_env(
        &[
            "contract",
            "run",
            "--format",
            "text",
            "--format",
            "json=out/findings.json",
            "--format",
            "markdown=out/comment.md",
            "--format",
            "sarif=out/drift.sarif",
            "--format",
            "junit=out/junit.xml",
            "--format",
            "github=out/annotations.txt",
        ],
        &turn,
    );
    assert_eq!(run.code, 1, "{run:#?}");
    assert_eq!(calls_made(&sb), ["count_orders"]);
    assert!(!run.stdout.contains("ok: "), "{run:#?}");
    assert!(
        run.stdout.contains("\norders/search_orders\n  critical  contract-call-refused  /annotations  security\n    6 calls not made: its live definition is no longer the pinned one and is not read-only"),
        "{run:#?}"
    );
    let doc: serde_json::Value =
        serde_json::from_str(&sb.read_string("out/findings.json")).unwrap();
    assert_eq!(doc["findings"][0]["rule"], "contract-call-refused");
    assert_eq!(
        (&doc["findings"][0]["before"], &doc["findings"][0]["after"]),
        (
            &serde_json::json!({"readOnlyHint": true}),
            &serde_json::json!({"destructiveHint": true, "readOnlyHint": false})
        ),
        "{doc}"
    );
    assert_eq!(doc["verdict"]["fails"], true);
    let check = std::process::Command::new(python())
        .args([
            "-c",
            "import json, sys, jsonschema\n\
             jsonschema.Draft202012Validator(json.load(open(sys.argv[1]))).validate(json.load(open(sys.argv[2])))",
        ])
        .arg(repo().join("docs/findings.schema.json"))
        .arg(sb.join("out/findings.json"))
        .output()
        .expect("python");
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );
    let md = sb.read_string("out/comment.md");
    assert!(md.starts_with("### ❌ toolpin:"), "{md}");
    assert!(md.contains("contract-call-refused"), "{md}");
    let sarif: serde_json::Value =
        serde_json::from_str(&sb.read_string("out/drift.sarif")).unwrap();
    let result = &sarif["runs"][0]["results"][0];
    assert_eq!(result["ruleId"], "contract-call-refused");
    assert_eq!(result["level"], "error", "{result}");
    let junit = sb.read_string("out/junit.xml");
    assert!(
        junit.contains("contract-call-refused") && junit.contains("<failure"),
        "{junit}"
    );
    let github = sb.read_string("out/annotations.txt");
    assert!(
        github.starts_with("::error file=toolpin.lock,line=")
            && github.contains("contract-call-refused"),
        "{github}"
    );

    // `check` says the same in the same minute: the declaration drifted.
    let check = sb.run_env(&["check"], &turn);
    assert_eq!(check.code, 1, "{check:#?}");
    assert!(
        check.stdout.contains("annotation-readonly-revoked"),
        "{check:#?}"
    );
    calls_made(&sb);

    // No policy turns the refusal off: a level of off, an ignore entry, a
    // watch list without the tool.
    let toml = sb.read_string("toolpin.toml");
    for policy in [
        // Under the [policy.rules] table the sandbox ends with.
        "contract-call-refused = \"off\"\n",
        "[[policy.ignore]]\nrule = \"contract-call-refused\"\ntool = \"orders/search_orders\"\nreason = \"we know\"\n",
        "[policy]\nwatch = [\"orders/count_orders\"]\nfail-on = \"critical\"\n",
    ] {
        sb.write("toolpin.toml", format!("{toml}{policy}"));
        let run = sb.run_env(&["contract", "run"], &turn);
        assert_eq!(run.code, 1, "{policy}: {run:#?}");
        assert!(
            run.stdout.contains("critical  contract-call-refused"),
            "{policy}: {run:#?}"
        );
        assert_eq!(calls_made(&sb), ["count_orders"], "{policy}");
    }
}

#[test]
fn a_tool_that_lost_its_annotations_upstream_is_never_called() {
    never_called_when(
        "bare",
        "drifted",
        "its live definition is no longer the pinned one and is not read-only: it has no annotations, so it is not read-only",
    );
}

#[test]
fn a_tool_the_server_no_longer_lists_is_never_called() {
    never_called_when(
        "gone",
        "unavailable",
        "the server no longer lists it (tools/list on this session)",
    );
}

#[test]
fn a_tool_that_now_claims_read_only_and_destructive_is_never_called() {
    never_called_when(
        "contradict",
        "drifted",
        "its live definition is no longer the pinned one and is not read-only: its annotations say both readOnlyHint: true and destructiveHint: true",
    );
}

#[test]
fn a_tool_that_drifted_but_is_still_read_only_is_called() {
    let sb = turned_sandbox();
    let run = sb.run_env(&["contract", "run"], &[("TOOLPIN_TEST_TURN", "reworded")]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert!(
        run.stdout
            .starts_with("ok: the live tools behave as recorded (2 tools, "),
        "{run:#?}"
    );
    assert_eq!(calls_made(&sb).len(), 7);
}

#[test]
fn a_tool_claiming_read_only_and_destructive_gets_no_contract_and_is_refused() {
    let script = repo()
        .join("tests/servers/py/turned.py")
        .canonicalize()
        .unwrap();
    let sb = pinned(&format!(
        "[servers.orders]\ncommand = [{:?}, {:?}]\nenv = {{ TOOLPIN_TEST_CALLS = {:?} }}\n",
        python(),
        script.display().to_string(),
        CALLS
    ));
    // init: commented out, with the reason.
    let text = sb.read_string(FILE);
    assert!(
        text.contains(concat!(
            "# Not called: its annotations say both readOnlyHint: true and destructiveHint: true.\n",
            "# To call it anyway, uncomment this contract and give the arguments yourself.\n",
            "#\n",
            "# [tools.\"orders/purge_cache\"]\n",
            "# side_effects = \"allowed\"\n",
        )),
        "{text}"
    );
    assert!(!text.contains("\n[tools.\"orders/purge_cache\"]"), "{text}");
    let run = sb.run(&["contract", "init", "--force"]);
    assert_eq!(
        run.stderr,
        "Wrote toolpin.contracts.toml: 2 contracts for read-only tools (5 calls, 1 default probe); \
1 tool not read-only left commented out\n"
    );
    // A contract written by hand: refused by check, record and run, before
    // any call.
    let hand = format!("{text}\n[tools.\"orders/purge_cache\"]\n[[tools.\"orders/purge_cache\".calls]]\nname = \"golden\"\n");
    sb.write(FILE, &hand);
    for command in ["check", "record", "run"] {
        let message = sb.fails(
            &["contract", command],
            &["tools.\"orders/purge_cache\": the pinned tool is not read-only (its annotations say both readOnlyHint: true and destructiveHint: true); set side_effects = \"allowed\""],
        );
        assert_eq!(
            located(&message, FILE),
            (line_of(&hand, "[tools.\"orders/purge_cache\"]"), 8),
            "{command}"
        );
    }
    assert!(!sb.exists(CALLS), "nothing was called");
    // With side_effects = "allowed" it is the user's call.
    sb.write(
        FILE,
        hand.replace(
            "\n[tools.\"orders/purge_cache\"]\n",
            "\n[tools.\"orders/purge_cache\"]\nside_effects = \"allowed\"\n",
        ),
    );
    sb.run(&["contract", "check"]).ok();
}

// ---------------------------------------------------------------------------
// The bounds of an observation (issue 32, fault 13): a result with many
// members, a deep one and a large one keep a bounded snapshot, with a note.

/// What the bounds tests judge is what was kept, not how long a large
/// answer took on a loaded machine.
const NO_LATENCY: &str = "\n[policy.rules]\nlatency-regressed = \"off\"\n";

/// tests/servers/py/wide.py pinned over stdio, its members, depth and pad
/// from the environment, with init's contract.
fn wide_sandbox() -> Sandbox {
    let script = repo()
        .join("tests/servers/py/wide.py")
        .canonicalize()
        .unwrap();
    pinned(&format!(
        "[servers.wide]\ncommand = [{:?}, {:?}]\nenv = {{ TOOLPIN_TEST_MEMBERS = \"${{TOOLPIN_TEST_MEMBERS:-10}}\", TOOLPIN_TEST_DEPTH = \"${{TOOLPIN_TEST_DEPTH:-0}}\", TOOLPIN_TEST_PAD = \"${{TOOLPIN_TEST_PAD:-0}}\" }}\n{NO_LATENCY}",
        python(),
        script.display().to_string()
    ))
}

#[test]
fn a_wide_and_deep_result_is_kept_within_the_bounds_with_a_note() {
    let sb = wide_sandbox();
    let wide = [
        ("TOOLPIN_TEST_MEMBERS", "5000"),
        ("TOOLPIN_TEST_DEPTH", "40"),
    ];
    let record = sb.run_env(&["contract", "record"], &wide);
    record.ok();
    assert!(
        record.stderr.contains("note: wide/report#golden: the members bound was hit: ")
            && record.stderr.contains("note: wide/report#golden: the depth bound was hit: 1 value deeper than 32 levels not kept (with all they hold)"),
        "{record:#?}"
    );
    let snapshot = sb.read_json("toolpin.behaviour.json");
    let call = &snapshot["calls"]["wide/report#golden"];
    assert_eq!(call["shape"].as_object().unwrap().len(), 1000, "{call}");
    // The deep member: kept down to level 32, no further.
    assert!(call["shape"]
        .get(("/deep".to_string() + &"/d".repeat(31)).as_str())
        .is_some());
    assert!(call["shape"]
        .get(("/deep".to_string() + &"/d".repeat(32)).as_str())
        .is_none());
    let members = call["bounded"]["members"].as_str().unwrap();
    assert!(
        members.ends_with(" values at pointers past the first 1000 not kept"),
        "{members}"
    );
    assert!(sb.read("toolpin.behaviour.json").len() < 150_000);
    // The same answer again is the same behaviour: nothing moved.
    let run = sb.run_env(&["contract", "run"], &wide);
    assert_eq!(run.code, 0, "{run:#?}");
    assert!(run.stdout.starts_with("ok: "), "{run:#?}");
}

/// The one call of a snapshot written by `record`.
fn golden(sb: &Sandbox) -> serde_json::Value {
    sb.read_json("toolpin.behaviour.json")["calls"]["wide/report#golden"].clone()
}

const NOT_READ: &str = "an answer larger than 16777216 bytes was not read";

#[test]
fn an_answer_over_the_byte_bound_is_not_read_over_stdio() {
    let sb = wide_sandbox();
    let large = [("TOOLPIN_TEST_PAD", "17000000")];
    let record = sb.run_env(&["contract", "record"], &large);
    record.ok();
    assert!(
        record.stderr.contains(&format!(
            "note: wide/report#golden: the result-bytes bound was hit: {NOT_READ}"
        )),
        "{record:#?}"
    );
    let call = golden(&sb);
    assert_eq!(call["class"], "other", "{call}");
    assert_eq!(call["bounded"]["result-bytes"], NOT_READ, "{call}");
    assert!(call.get("shape").is_none(), "{call}");
    // The session goes on after it: the same call again, then a small
    // answer, which is a change of class that says why.
    let run = sb.run_env(&["contract", "run"], &large);
    assert_eq!(run.code, 0, "{run:#?}");
    let run = sb.run(RUN);
    assert_eq!(run.code, 1, "{run:#?}");
    assert_eq!(
        findings(&run.stdout),
        [format!("error-class-changed: wide/report#golden: the call answered other ({NOT_READ}) when recorded, ok now")]
    );
}

#[test]
fn an_answer_over_the_byte_bound_is_not_read_over_http() {
    let script = repo()
        .join("tests/servers/py/wide.py")
        .canonicalize()
        .unwrap();
    // Answers as event streams, then as JSON bodies.
    for json in ["0", "1"] {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let _daemon = Daemon(
            std::process::Command::new(python())
                .arg(&script)
                .arg(port.to_string())
                .env("TOOLPIN_TEST_PAD", "17000000")
                .env("TOOLPIN_TEST_JSON", json)
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .expect("start wide.py over HTTP"),
        );
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                std::time::Instant::now() < deadline,
                "wide.py did not listen on {port}"
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        let sb = pinned(&format!(
            "[servers.wide]\nurl = \"http://127.0.0.1:{port}/mcp\"\n{NO_LATENCY}"
        ));
        sb.run(&["contract", "record"]).ok();
        let call = golden(&sb);
        assert_eq!(call["class"], "other", "json={json}: {call}");
        assert_eq!(
            call["bounded"]["result-bytes"], NOT_READ,
            "json={json}: {call}"
        );
        let run = sb.run(&["contract", "run"]);
        assert_eq!(run.code, 0, "json={json}: {run:#?}");
    }
}

#[test]
fn a_session_whose_listing_breaks_a_capture_guard_is_unavailable_and_nothing_is_judged() {
    let script = repo()
        .join("tests/servers/py/misbehave.py")
        .canonicalize()
        .unwrap();
    let sb = Sandbox::new();
    sb.write(
        "toolpin.toml",
        format!(
            "[servers.m]\ncommand = [\"sh\", \"-c\", {:?}]\nenv = {{ MISBEHAVE_MODE = \"${{MISBEHAVE_MODE:-ok}}\" }}\n",
            format!("exec {} {} \"$MISBEHAVE_MODE\"", python(), script.display())
        ),
    );
    sb.run(&["lock"]).ok();
    sb.write(
        FILE,
        "version = 1\n[tools.\"m/ok_tool\"]\nside_effects = \"allowed\"\n[[tools.\"m/ok_tool\".calls]]\nname = \"golden\"\n",
    );
    sb.run(&["contract", "record"]).ok();
    let snapshot = sb.read("toolpin.behaviour.json");
    // The listing follows capture's guards: a cursor that never advances
    // ends the session before any call.
    for command in ["record", "run"] {
        let r = sb.run_env(
            &["contract", command],
            &[("MISBEHAVE_MODE", "endless-cursor")],
        );
        assert_eq!(r.code, 2, "{command}: {r:#?}");
        assert!(
            r.stderr.contains("unavailable: server \"m\": tools/list page 2: pagination guard: cursor \"same\" was already followed"),
            "{command}: {r:#?}"
        );
        assert!(!r.stdout.contains("ok: "), "{command}: {r:#?}");
    }
    assert_eq!(sb.read("toolpin.behaviour.json"), snapshot);
}
