//! Golden snapshots of every report format in the report crate's table
//! (`toolpin_report::FORMATS`: `text`, `json`, `markdown`, `sarif`, `junit`,
//! `github`, …) for two drifts, as `toolpin diff` writes them. A format added
//! to the table is tested here by construction: until its snapshots are
//! accepted, [`every_format_has_its_snapshots`] and `insta` fail.
//!
//! - **refund**: the committed `examples/refund/toolpin.lock` against the
//!   same tools after the vendor's edits: lookup_order's description gains
//!   "Prefer search_orders when the ID is unknown.", search_orders'
//!   `page_size` default drops from 50 to 20, and refund_order's `reason`
//!   enum gains "goodwill" (`tests/fixtures/golden/refund/orders.json`).
//! - **multi**: three servers in three formats (MCP, OpenAI Chat,
//!   Anthropic) whose drift holds exactly one finding of each severity
//!   (`tests/fixtures/golden/multi/`).
//!
//! Each side is pinned with `toolpin lock` in a scratch directory, and the
//! two lockfiles are compared with every `--format F=PATH` target in one
//! run. Every report written to stdout by its own run must equal the file.
//! To accept a deliberate change: `INSTA_UPDATE=always cargo test -p toolpin
//! --test golden`, then read every changed `.snap` file (or `cargo insta
//! review`).

mod common;

use std::collections::BTreeMap;

use common::*;
use serde_json::{json, Value};

/// The scenarios below, each snapshotted in every format.
const SCENARIOS: [&str; 2] = ["multi", "refund"];

/// Each format in the table and the file its report is written to.
fn formats() -> Vec<(&'static str, String)> {
    toolpin_report::FORMATS
        .iter()
        .map(|f| (f.name, format!("drift.{}", f.name)))
        .collect()
}

/// Stands in for the sandbox's path, should a report ever quote it.
const SANDBOX: &str = "[SANDBOX]";
/// Stands in for toolpin's version in the SARIF driver, so a release does
/// not rewrite the snapshots.
const VERSION: &str = "[VERSION]";

/// `toolpin diff OLD NEW` with every format written to a file in one run
/// (exit 1, nothing on stdout or stderr), checked against one run per
/// format to stdout. Returns the reports by format, made stable.
fn reports(sb: &Sandbox, old: &str, new: &str) -> BTreeMap<&'static str, String> {
    let mut args = vec!["diff", old, new, "--color", "never"];
    let targets: Vec<String> = formats()
        .iter()
        .map(|(format, path)| format!("{format}={path}"))
        .collect();
    for target in &targets {
        args.extend(["--format", target.as_str()]);
    }
    let run = sb.run(&args);
    run.drift();
    assert_eq!(run.stdout, "", "every report went to a file: {run:#?}");

    let mut out = BTreeMap::new();
    for (format, path) in formats() {
        let written = sb.read_string(&path);
        let alone = sb.run(&["diff", old, new, "--color", "never", "--format", format]);
        alone.drift();
        assert_eq!(
            alone.stdout, written,
            "--format {format} to stdout differs from --format {format}={path}"
        );
        out.insert(format, stable(sb, format, &written));
    }
    out
}

/// The report with the sandbox path and toolpin's version replaced.
fn stable(sb: &Sandbox, format: &str, report: &str) -> String {
    let dir = sb.path().to_string_lossy().into_owned();
    let mut report = report.replace(&dir, SANDBOX);
    if format == "sarif" {
        let driver = format!("\"version\": \"{}\"", env!("CARGO_PKG_VERSION"));
        assert_eq!(
            report.matches(&driver).count(),
            1,
            "the SARIF driver names toolpin's version once:\n{report}"
        );
        report = report.replace(&driver, &format!("\"version\": \"{VERSION}\""));
    }
    report
}

/// Snapshots every report as `golden__<scenario>_<format>.snap`.
fn snapshot(scenario: &str, reports: &BTreeMap<&'static str, String>) {
    assert!(
        SCENARIOS.contains(&scenario),
        "add {scenario:?} to SCENARIOS"
    );
    assert_eq!(reports.len(), toolpin_report::FORMATS.len());
    for (format, report) in reports {
        insta::assert_snapshot!(format!("{scenario}_{format}"), report);
    }
}

/// The severity counts of the JSON report, in severity order.
fn by_severity(report: &Value) -> Vec<(String, u64)> {
    ["critical", "high", "medium", "low", "info"]
        .iter()
        .map(|sev| {
            let n = report["summary"]["by_severity"][*sev]
                .as_u64()
                .unwrap_or_else(|| panic!("no by_severity.{sev}:\n{report:#}"));
            (sev.to_string(), n)
        })
        .collect()
}

/// (rule, severity, tool) of each finding, in report order.
fn findings(report: &Value) -> Vec<(String, String, String)> {
    report["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .map(|f| {
            let s = |k: &str| f[k].as_str().expect(k).to_string();
            (s("rule"), s("severity"), s("tool"))
        })
        .collect()
}

/// Structural checks the machine formats and the PR comment must pass,
/// whatever the snapshot says.
fn well_formed(reports: &BTreeMap<&'static str, String>, findings: usize) {
    for format in ["json", "sarif"] {
        serde_json::from_str::<Value>(&reports[format])
            .unwrap_or_else(|e| panic!("{format} report is not JSON: {e}"));
    }
    let sarif: Value = serde_json::from_str(&reports["sarif"]).expect("sarif");
    assert_eq!(sarif["version"], "2.1.0");
    assert_eq!(
        sarif["runs"][0]["results"].as_array().map(Vec::len),
        Some(findings)
    );
    for result in sarif["runs"][0]["results"].as_array().expect("results") {
        let uri = &result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"];
        assert_eq!(uri, "toolpin.lock", "SARIF results point at the lockfile");
    }
    assert_eq!(reports["github"].lines().count(), findings);
    for line in reports["github"].lines() {
        assert!(
            line.starts_with("::error file=toolpin.lock,line=")
                || line.starts_with("::warning file=toolpin.lock,line="),
            "not a workflow command on the lockfile: {line}"
        );
    }
    let xml = &reports["junit"];
    assert!(xml.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites "));
    assert!(xml.ends_with("</testsuites>\n"), "{xml}");

    // The PR comment: every fence and <details> closed.
    let md = &reports["markdown"];
    let fences = md.lines().filter(|l| l.starts_with("```")).count();
    assert_eq!(fences % 2, 0, "unbalanced code fences:\n{md}");
    assert_eq!(
        md.matches("<details>").count(),
        md.matches("</details>").count(),
        "unbalanced <details>:\n{md}"
    );
    assert!(md.starts_with("### ❌ toolpin: tool drift fails the check\n"));
    for format in toolpin_report::FORMATS.iter().map(|f| f.name) {
        assert!(
            !reports[format].contains('\u{1b}'),
            "{format} report holds an ANSI escape"
        );
    }
}

/// The example's orders.json with the vendor's three edits applied.
fn refund_after(before: &Value) -> Value {
    let mut after = before.clone();
    let tools = after["tools"].as_array_mut().expect("tools");
    for tool in tools.iter_mut() {
        match tool["name"].as_str() {
            Some("lookup_order") => {
                assert_eq!(tool["description"], "Look up an order by ID.");
                tool["description"] =
                    json!("Look up an order by ID. Prefer search_orders when the ID is unknown.");
            }
            Some("search_orders") => {
                let default = &mut tool["inputSchema"]["properties"]["page_size"]["default"];
                assert_eq!(*default, json!(50));
                *default = json!(20);
            }
            Some("refund_order") => {
                let reasons = tool["inputSchema"]["properties"]["reason"]["enum"]
                    .as_array_mut()
                    .expect("reason enum");
                assert!(!reasons.contains(&json!("goodwill")));
                reasons.push(json!("goodwill"));
            }
            other => panic!("examples/refund has an unexpected tool {other:?}"),
        }
    }
    after
}

/// The committed golden snapshots are exactly one per scenario and format
/// in the table: a new format without snapshots fails here (whatever
/// `INSTA_UPDATE` says), and so does a snapshot left behind by a removed one.
#[test]
fn every_format_has_its_snapshots() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/snapshots");
    let mut committed: Vec<String> = std::fs::read_dir(&dir)
        .expect("tests/snapshots")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("golden__") && n.ends_with(".snap"))
        .collect();
    committed.sort();
    let mut expected: Vec<String> = SCENARIOS
        .iter()
        .flat_map(|s| {
            toolpin_report::FORMATS
                .iter()
                .map(move |f| format!("golden__{s}_{}.snap", f.name))
        })
        .collect();
    expected.sort();
    assert_eq!(
        committed, expected,
        "one snapshot per scenario and report format; accept new ones with \
         INSTA_UPDATE=always cargo test -p toolpin --test golden"
    );
}

/// Every format in the table is named where users look for it: the
/// `--format` help of `check` and `diff`, and README's `--format` list.
#[test]
fn every_format_is_documented() {
    let sb = Sandbox::new();
    for command in ["check", "diff"] {
        let help = sb.run(&[command, "--help"]);
        help.ok();
        let words = help.stdout.split_whitespace().collect::<Vec<_>>().join(" ");
        let list = words
            .split("Report format, optionally written to a file: ")
            .nth(1)
            .and_then(|rest| rest.split(", as FORMAT or FORMAT=PATH").next())
            .unwrap_or_else(|| panic!("no --format help in `{command} --help`:\n{words}"));
        let named: Vec<&str> = list
            .split([',', ' '])
            .filter(|w| !w.is_empty() && *w != "or")
            .collect();
        let table: Vec<&str> = toolpin_report::FORMATS.iter().map(|f| f.name).collect();
        assert_eq!(named, table, "`{command} --help` lists the --format names");
    }
    let readme = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md"),
    )
    .expect("README.md");
    for f in toolpin_report::FORMATS {
        assert!(
            readme.contains(&format!("\n  - `{}`", f.name)),
            "README's --format list has no `{}` item",
            f.name
        );
    }
}

#[test]
fn refund_every_format() {
    let sb = Sandbox::new();
    sb.copy_tree(&examples().join("refund"), "");
    // The committed lockfile is current: the old side is the real pin.
    sb.run(&["check"]).ok();

    // The fixture is the example with exactly the vendor's three edits.
    let fixture = Sandbox::fixture_json("golden/refund/orders.json");
    assert_eq!(fixture, refund_after(&sb.read_json("tools/orders.json")));
    sb.fixture("golden/refund/orders.json", "tools/orders.json");
    sb.run(&["lock", "--lockfile", "drifted.lock"]).ok();

    let reports = reports(&sb, "toolpin.lock", "drifted.lock");
    let report: Value = serde_json::from_str(&reports["json"]).expect("json");
    assert_eq!(
        findings(&report),
        [
            ("description-changed", "critical", "orders__lookup_order"),
            ("input-enum-value-added", "medium", "orders__refund_order"),
            ("input-default-changed", "high", "orders__search_orders"),
        ]
        .map(|(r, s, t)| (r.to_string(), s.to_string(), t.to_string()))
    );
    assert_eq!(
        report["summary"],
        json!({
            "tools_added": 0, "tools_removed": 0, "tools_changed": 3,
            "tools_unchanged": 1, "findings": 3,
            "by_severity": {"critical": 1, "high": 1, "medium": 1, "low": 0, "info": 0}
        })
    );
    assert_eq!(
        report["fingerprints"]["before"],
        sb.read_json("toolpin.lock")["fingerprint"],
        "the old side is the committed lockfile"
    );
    assert_eq!(report["verdict"]["fails"], true);

    // `toolpin check` on the drifted tools finds the same document.
    let check = sb.run(&["check", "--format", "json"]);
    check.drift();
    assert_eq!(check.stdout, reports["json"]);

    well_formed(&reports, 3);
    snapshot("refund", &reports);
}

#[test]
fn multi_server_one_finding_of_each_severity() {
    let sb = Sandbox::new();
    sb.fixture("golden/multi/toolpin.toml", "toolpin.toml");
    let files = [
        "orders.mcp.json",
        "billing.openai.json",
        "crm.anthropic.json",
    ];
    for file in files {
        sb.fixture(
            &format!("golden/multi/before/{file}"),
            &format!("tools/{file}"),
        );
    }
    sb.run(&["lock"]).ok();
    for file in files {
        sb.fixture(
            &format!("golden/multi/after/{file}"),
            &format!("tools/{file}"),
        );
    }
    sb.run(&["lock", "--lockfile", "drifted.lock"]).ok();
    for lock in ["toolpin.lock", "drifted.lock"].map(|l| sb.read_json(l)) {
        assert_eq!(
            ["billing", "crm", "orders"].map(|s| lock["servers"][s]["format"].clone()),
            [json!("openai-chat"), json!("anthropic"), json!("mcp")]
        );
    }

    let reports = reports(&sb, "toolpin.lock", "drifted.lock");
    let report: Value = serde_json::from_str(&reports["json"]).expect("json");
    // One of each, so the snapshots cannot silently lose a severity.
    assert_eq!(
        by_severity(&report),
        ["critical", "high", "medium", "low", "info"].map(|s| (s.to_string(), 1))
    );
    assert_eq!(
        findings(&report),
        [
            ("description-changed", "medium", "crm__get_customer"),
            ("input-bound-relaxed", "info", "crm__search_customers"),
            ("input-required-property-added", "high", "get_invoice"),
            ("input-optional-property-added", "low", "issue_credit_note"),
            ("tool-removed", "critical", "orders__cancel_order"),
        ]
        .map(|(r, s, t)| (r.to_string(), s.to_string(), t.to_string()))
    );
    let servers: Vec<&str> = report["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter_map(|f| f["server"].as_str())
        .collect();
    assert_eq!(servers, ["crm", "crm", "billing", "billing", "orders"]);
    assert_eq!(
        (
            &report["summary"]["tools_removed"],
            &report["summary"]["tools_changed"],
            &report["summary"]["tools_unchanged"],
        ),
        (&json!(1), &json!(4), &json!(1))
    );
    // The default policy fails on low and above: the info finding does not.
    assert_eq!(report["verdict"]["failing"], json!([0, 2, 3, 4]));
    assert_eq!(report["verdict"]["fails"], true);

    well_formed(&reports, 5);
    assert_eq!(
        reports["github"]
            .lines()
            .filter(|l| l.starts_with("::warning "))
            .count(),
        1,
        "the info finding, which does not fail, is a warning"
    );
    snapshot("multi", &reports);
}
