//! End-to-end tests of eval routing and `toolpin evals`: `[evals]` and
//! `[routing]` validation, `check --plan` / `diff --plan`, `evals list`, and
//! `evals run` with a small shell harness that reads `TOOLPIN_MANIFEST`.
//!
//! The scenario is the refund example with the orders server's default page
//! size moved from 50 to 20 (`input-default-changed`, re-run tag
//! `tool-cases`). The harness fails when its catalog holds that change, so
//! it passes on the pinned catalog and fails on the live one.

mod common;

use std::fs;
use std::thread;
use std::time::{Duration, Instant};

use common::*;
use serde_json::{json, Value};

/// Reads the catalog it is handed, leaves a report in its output directory
/// and exits 3 when the catalog holds a default page size of 20.
const HARNESS: &str = r#"#!/bin/sh
set -u
cp "$TOOLPIN_MANIFEST" "$TOOLPIN_OUTPUT_DIR/seen.json"
printf '%s %s %s %s\n' "$TOOLPIN_EVAL" "$TOOLPIN_SIDE" "$TOOLPIN_MANIFEST_FORMAT" "$TOOLPIN_CATALOG_FINGERPRINT" > "$TOOLPIN_OUTPUT_DIR/report.txt"
echo "cases from ${PWD##*/}, greeting ${GREETING:-none}"
if grep -q '"default": 20' "$TOOLPIN_MANIFEST"; then
  echo "search_orders: page size 20, 3 cases fail" >&2
  exit 3
fi
echo "all cases passed"
"#;

/// The refund example with `extra` appended to its toolpin.toml and the
/// harness beside it; `drift` moves the default page size from 50 to 20.
fn refund(extra: &str, drift: bool) -> Sandbox {
    let sb = Sandbox::new();
    sb.copy_tree(&examples().join("refund"), "");
    let toml = sb.read_string("toolpin.toml");
    sb.write("toolpin.toml", format!("{toml}\n{extra}"));
    sb.write("harness.sh", HARNESS);
    // The committed lockfile is current.
    sb.run(&["check"]).ok();
    if drift {
        page_size_20(&sb);
    }
    sb
}

fn page_size_20(sb: &Sandbox) {
    let orders = sb.read_string("tools/orders.json");
    let edited = orders.replacen("\"default\": 50", "\"default\": 20", 1);
    assert_ne!(orders, edited, "the example has a default page size of 50");
    sb.write("tools/orders.json", edited);
}

/// The lockfile's catalog fingerprint, in full.
fn pinned_fingerprint(sb: &Sandbox) -> String {
    sb.read_json("toolpin.lock")["fingerprint"]
        .as_str()
        .expect("fingerprint")
        .to_string()
}

const TOOL_CASES: &str = "[evals.tool-cases]\nrun = \"sh harness.sh\"\n";

// ---------------------------------------------------------------------------
// configuration

type ConfigCase = (
    &'static str,
    &'static [&'static str],
    Option<(usize, usize)>,
);

#[test]
fn config_errors_are_located_and_name_what_is_known() {
    let sb = Sandbox::new();
    // (the eval and routing tables, needles, line and column in them)
    let cases: &[ConfigCase] = &[
        (
            "[evals.x]\nrun = \"true\"\n[routing]\nredteam = [\"x\"]\n",
            &[
                "routing: unknown re-run tag \"redteam\"",
                "(known: assertions, authz, budget, consumers, fallback, fault-injection, red-team, selection, tool-cases, trajectory)",
            ],
            Some((4, 1)),
        ),
        (
            "[evals.x]\nrun = \"true\"\n[routing]\nred-team = [\"x\", \"redteam\"]\n",
            &[
                "routing.red-team: no eval named \"redteam\"; define [evals.redteam] (defined: x)",
            ],
            Some((4, 18)),
        ),
        (
            "[routing]\ntrajectory = [\"trajectory\"]\n",
            &["no eval named \"trajectory\"", "(defined: none)"],
            Some((2, 15)),
        ),
        (
            "[evals.x]\nrun = \"true\"\nmanifest = \"xml\"\n",
            &["key `manifest`", "unknown variant `xml`, expected one of `mcp`, `openai`, `anthropic`"],
            Some((3, 12)),
        ),
        (
            "[evals.x]\nrun = \"true\"\ncommand = \"y\"\n",
            &["unknown field `command`", "`run`, `manifest`, `cwd`, `timeout`, `env`"],
            Some((3, 1)),
        ),
        (
            "[evals.x]\nmanifest = \"mcp\"\n",
            &["missing field `run`"],
            None,
        ),
        (
            "[evals.\"a b\"]\nrun = \"true\"\n",
            &["evals.\"a b\": an eval name may hold only letters, digits, '-' and '_'"],
            Some((1, 8)),
        ),
        (
            "[evals.manifests]\nrun = \"true\"\n",
            &["the name `manifests` is taken"],
            Some((1, 8)),
        ),
        (
            "[evals.x]\nrun = \" \"\n",
            &["evals.x: `run` must be a shell command"],
            Some((2, 7)),
        ),
        (
            "[evals.x]\nrun = \"true\"\ntimeout = \"soon\"\n",
            &["evals.x: `timeout`: \"soon\" is not a duration"],
            Some((3, 11)),
        ),
        (
            "[evals.x]\nrun = \"true\"\nenv = { TOOLPIN_MANIFEST = \"m.json\" }\n",
            &["evals.x: `env.TOOLPIN_MANIFEST` is set by toolpin for each run"],
            Some((3, 9)),
        ),
        (
            "[evals.x]\nrun = \"true\"\nenv = { A = \"${B\" }\n",
            &["evals.x: `env.A`: unclosed `${`"],
            Some((3, 13)),
        ),
        (
            "[routing]\ntrajectory = \"x\"\n",
            &["key `trajectory`", "expected a sequence"],
            Some((2, 14)),
        ),
    ];
    for (text, needles, at) in cases {
        sb.write(
            "toolpin.toml",
            format!("[servers.a]\nfile = \"a.json\"\n{text}"),
        );
        let message = sb.run(&["evals", "list"]).error(needles);
        if let Some((line, column)) = at {
            // Two server lines come first.
            assert_eq!(
                located(&message, "toolpin.toml"),
                (line + 2, *column),
                "{message}"
            );
        }
        // Every command that reads the configuration refuses it the same way.
        let check = sb.run(&["check"]).error(&[]);
        assert_eq!(check, message);
    }
}

#[test]
fn evals_list_shows_evals_and_default_and_explicit_routing() {
    let sb = Sandbox::new();
    sb.write(
        "toolpin.toml",
        "[servers.a]\nurl = \"${TOOLPIN_TEST_UNSET_URL}\"\n\
         [evals.trajectory]\nrun = \"pytest evals/trajectory -q\"\n\
         [evals.redteam]\nrun = \"python3 redteam.py\"\nmanifest = \"anthropic\"\ntimeout = \"10m\"\nenv = { MODEL = \"${MODEL:-small}\" }\n\
         [routing]\nred-team = [\"redteam\"]\nbudget = [\"trajectory\", \"redteam\", \"trajectory\"]\nauthz = []\n",
    );
    let out = sb.run(&["evals", "list"]);
    out.ok();
    assert_eq!(
        out.stdout,
        "evals:\n\
         \x20 redteam     anthropic  python3 redteam.py  (timeout 600s; env MODEL)\n\
         \x20 trajectory  mcp        pytest evals/trajectory -q\n\
         \n\
         routing:\n\
         \x20 assertions       not routed\n\
         \x20 authz            not routed  ([routing])\n\
         \x20 budget           redteam, trajectory  ([routing])\n\
         \x20 consumers        not routed\n\
         \x20 fallback         not routed\n\
         \x20 fault-injection  not routed\n\
         \x20 red-team         redteam  ([routing])\n\
         \x20 selection        not routed\n\
         \x20 tool-cases       not routed\n\
         \x20 trajectory       trajectory  (same name)\n"
    );
    // Listing captures no server, so the server's variable is not needed.
    sb.run(&["check"])
        .error(&["TOOLPIN_TEST_UNSET_URL is not set"]);
}

// ---------------------------------------------------------------------------
// check --plan

#[test]
fn check_plan_lists_the_eval_and_the_finding_that_pulls_it_in() {
    let sb = refund(TOOL_CASES, true);
    let lock_before = sb.read("toolpin.lock");
    let out = sb.run(&["check", "--plan"]);
    out.drift();
    assert_eq!(
        out.stdout,
        "plan: 1 eval for 1 failing finding\n\
         \n\
         eval tool-cases\n\
         \x20 run   sh harness.sh\n\
         \x20 tags  tool-cases\n\
         \x20 high      input-default-changed  orders/orders__search_orders  /inputSchema/properties/page_size/default\n"
    );

    let out = sb.run(&["check", "--plan", "--format", "json"]);
    out.drift();
    let doc: Value = serde_json::from_str(&out.stdout).expect("JSON plan");
    assert_eq!(
        doc,
        json!({
            "fails": true,
            "fingerprints": {
                "before": pinned_fingerprint(&sb),
                "after": doc["fingerprints"]["after"].clone(),
            },
            "evals": [{
                "eval": "tool-cases",
                "run": "sh harness.sh",
                "manifest": "mcp",
                "tags": ["tool-cases"],
                "findings": [{
                    "finding": 0,
                    "rule": "input-default-changed",
                    "server": "orders",
                    "tool": "orders__search_orders",
                    "pointer": "/inputSchema/properties/page_size/default",
                    "severity": "high",
                    "message": "orders__search_orders: /inputSchema/properties/page_size default 50 → 20",
                    "rerun": ["tool-cases"],
                }],
            }],
            "unrouted": [],
        })
    );
    assert_ne!(doc["fingerprints"]["after"], doc["fingerprints"]["before"]);
    // The plan can go to a file too; the findings report formats cannot
    // replace it.
    sb.run(&["check", "--plan", "--format", "json=plan.json"])
        .drift();
    assert_eq!(sb.read_json("plan.json"), doc);
    let message = sb
        .run(&["check", "--plan", "--format", "sarif"])
        .error(&["--plan prints the plan as text or json, not sarif"]);
    assert!(!message.is_empty());
    // check --plan writes nothing else.
    assert!(sb.read("toolpin.lock") == lock_before);
    assert!(!sb.exists(".toolpin/evals"));
}

#[test]
fn check_plan_with_explicit_routing_dedups_and_shows_unrouted_tags() {
    // A description edit asks for budget, selection and trajectory; the page
    // size change for tool-cases.
    let sb = refund(
        "[evals.agent]\nrun = \"pytest evals/agent -q\"\n\
         [evals.trajectory]\nrun = \"pytest evals/trajectory -q\"\n\
         [routing]\nbudget = [\"agent\"]\nselection = [\"agent\"]\ntool-cases = []\n",
        true,
    );
    let orders = sb.read_string("tools/orders.json");
    sb.write(
        "tools/orders.json",
        orders.replacen(
            "\"Look up an order by ID.\"",
            "\"Look up an order by ID. Prefer search_orders when the ID is unknown.\"",
            1,
        ),
    );
    let out = sb.run(&["check", "--plan"]);
    out.drift();
    assert_eq!(
        out.stdout,
        "plan: 2 evals for 2 failing findings\n\
         \n\
         eval agent\n\
         \x20 run   pytest evals/agent -q\n\
         \x20 tags  budget, selection\n\
         \x20 critical  description-changed  orders/orders__lookup_order  /description\n\
         \n\
         eval trajectory\n\
         \x20 run   pytest evals/trajectory -q\n\
         \x20 tags  trajectory\n\
         \x20 critical  description-changed  orders/orders__lookup_order  /description\n\
         \n\
         not routed: tool-cases ([routing] lists no eval for it)\n\
         \x20 high      input-default-changed  orders/orders__search_orders  /inputSchema/properties/page_size/default\n"
    );

    // Without [routing] and [evals], every tag is reported as not routed.
    let sb = refund("", true);
    let out = sb.run(&["check", "--plan"]);
    out.drift();
    assert_eq!(
        out.stdout,
        "plan: no eval for 1 failing finding\n\
         \n\
         not routed: tool-cases (no [routing] entry and no eval named tool-cases)\n\
         \x20 high      input-default-changed  orders/orders__search_orders  /inputSchema/properties/page_size/default\n"
    );
}

#[test]
fn check_plan_without_drift_has_nothing_to_run() {
    let sb = refund(TOOL_CASES, false);
    let out = sb.run(&["check", "--plan"]);
    out.ok();
    assert_eq!(out.stdout, "no evals to run: no drift\n");
    let out = sb.run(&["check", "--plan", "--format", "json"]);
    out.ok();
    let doc: Value = serde_json::from_str(&out.stdout).expect("JSON");
    assert_eq!(doc["fails"], false);
    assert_eq!(doc["evals"], json!([]));
    assert_eq!(doc["unrouted"], json!([]));

    // Drift the policy accepts asks for nothing either.
    let sb = refund(
        &format!(
            "{TOOL_CASES}[policy]\nignore = [{{ rule = \"input-default-changed\", reason = \"smaller pages accepted in #7\" }}]\n"
        ),
        true,
    );
    let out = sb.run(&["check", "--plan"]);
    out.ok();
    assert_eq!(
        out.stdout,
        "no evals to run: 1 finding, none failing the policy\n"
    );
}

#[test]
fn diff_plan_takes_evals_and_routing_from_the_config() {
    let sb = refund(
        "[evals.orders-suite]\nrun = \"sh harness.sh\"\n[routing]\ntool-cases = [\"orders-suite\"]\n",
        false,
    );
    fs::copy(sb.join("tools/orders.json"), sb.join("before.json")).expect("copy");
    page_size_20(&sb);
    let out = sb.run(&[
        "diff",
        "before.json",
        "tools/orders.json",
        "--plan",
        "-c",
        "toolpin.toml",
    ]);
    out.drift();
    assert_eq!(
        out.stdout,
        "plan: 1 eval for 1 failing finding\n\
         \n\
         eval orders-suite\n\
         \x20 run   sh harness.sh\n\
         \x20 tags  tool-cases\n\
         \x20 high      input-default-changed  orders/search_orders  /inputSchema/properties/page_size/default\n"
    );
    // Without a configuration nothing is routed.
    let out = sb.run(&["diff", "before.json", "tools/orders.json", "--plan"]);
    out.drift();
    assert!(
        out.stdout
            .contains("not routed: tool-cases (no [routing] entry and no eval named tool-cases)"),
        "{}",
        out.stdout
    );
}

// ---------------------------------------------------------------------------
// evals run

#[test]
fn evals_run_pinned_passes_and_live_fails_is_a_regression() {
    let sb = refund(
        &format!(
            "{TOOL_CASES}env = {{ GREETING = \"${{TOOLPIN_TEST_GREETING:-hello}}\" }}\n[evals.smoke]\nrun = \"echo smoke on $TOOLPIN_SIDE\"\n"
        ),
        true,
    );
    let pinned_fp = pinned_fingerprint(&sb);
    let out = sb.run(&["evals", "run"]);
    out.drift();
    let summary = sb.read_json(".toolpin/evals/summary.json");
    let live_fp = summary["catalogs"]["live"]["fingerprint"]
        .as_str()
        .expect("live fingerprint")
        .to_string();
    assert_ne!(live_fp, pinned_fp);
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(
        lines[0],
        format!(
            "catalog {} (pinned) → {} (live)",
            &pinned_fp[..16],
            &live_fp[..16]
        ),
        "{}",
        out.stdout
    );
    assert_eq!(lines[1], "");
    // Durations vary; the rest of each row is fixed.
    let row = |line: &str| -> String {
        line.split_whitespace()
            .filter(|w| !(w.ends_with('s') && w.trim_end_matches('s').parse::<f64>().is_ok()))
            .collect::<Vec<_>>()
            .join(" ")
    };
    assert_eq!(row(lines[2]), "eval pinned live output");
    assert_eq!(row(lines[3]), "smoke exit 0 exit 0 .toolpin/evals/smoke");
    assert_eq!(
        row(lines[4]),
        "tool-cases exit 0 exit 3 .toolpin/evals/tool-cases regressed"
    );
    assert!(lines[4].contains("s  exit 3 "), "{}", lines[4]);
    assert_eq!(
        &lines[5..],
        [
            "",
            "regressed: tool-cases (passed on the pinned catalog, failed on the live one)",
            "summary: .toolpin/evals/summary.json",
        ]
    );

    // Each side's run left its output and the harness's report.
    let base = ".toolpin/evals/tool-cases";
    let sandbox_name = sb
        .path()
        .file_name()
        .expect("name")
        .to_string_lossy()
        .into_owned();
    assert_eq!(
        sb.read_string(&format!("{base}/pinned/stdout.txt")),
        format!("cases from {sandbox_name}, greeting hello\nall cases passed\n")
    );
    assert_eq!(sb.read_string(&format!("{base}/pinned/stderr.txt")), "");
    assert_eq!(
        sb.read_string(&format!("{base}/live/stderr.txt")),
        "search_orders: page size 20, 3 cases fail\n"
    );
    assert_eq!(
        sb.read_string(&format!("{base}/pinned/report.txt")),
        format!("tool-cases pinned mcp {pinned_fp}\n")
    );
    assert_eq!(
        sb.read_string(&format!("{base}/live/report.txt")),
        format!("tool-cases live mcp {live_fp}\n")
    );
    assert_eq!(
        sb.read_string(".toolpin/evals/smoke/live/stdout.txt"),
        "smoke on live\n"
    );

    // The manifests: what each side's harness read, as MCP tools/list
    // results in namespaced-name order.
    let pinned = sb.read_json(".toolpin/evals/manifests/pinned.mcp.json");
    let live = sb.read_json(".toolpin/evals/manifests/live.mcp.json");
    assert_eq!(sb.read_json(&format!("{base}/pinned/seen.json")), pinned);
    assert_eq!(sb.read_json(&format!("{base}/live/seen.json")), live);
    let names: Vec<&str> = live["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| t["name"].as_str().expect("name"))
        .collect();
    assert_eq!(
        names,
        vec![
            "get_invoice",
            "orders__lookup_order",
            "orders__refund_order",
            "orders__search_orders",
        ]
    );
    let page_size = |doc: &Value| {
        doc["tools"]
            .as_array()
            .and_then(|t| t.iter().find(|t| t["name"] == "orders__search_orders"))
            .and_then(|t| t.pointer("/inputSchema/properties/page_size/default"))
            .cloned()
    };
    assert_eq!(page_size(&pinned), Some(json!(50)));
    assert_eq!(page_size(&live), Some(json!(20)));
    // The pinned manifest is the lockfile's tools, unchanged.
    let lock = sb.read_json("toolpin.lock");
    assert_eq!(
        &pinned["tools"][1],
        pinned_tool(&lock, "orders", "orders__lookup_order")
    );
    let text = sb.read_string(".toolpin/evals/manifests/pinned.mcp.json");
    assert!(
        text.ends_with("}\n") && text.starts_with("{\n  \"tools\": ["),
        "{text}"
    );

    // summary.json records both runs of each eval.
    let tc = &summary["evals"][1];
    assert_eq!(tc["eval"], "tool-cases");
    assert_eq!(tc["regressed"], true);
    assert_eq!(tc["manifest"], "mcp");
    assert_eq!(tc["run"], "sh harness.sh");
    assert_eq!(tc["timeout_ms"], Value::Null);
    for (side, code, passed, fp) in [
        ("pinned", 0, true, &pinned_fp),
        ("live", 3, false, &live_fp),
    ] {
        let r = &tc[side];
        assert_eq!(r["status"], "exit", "{r:#}");
        assert_eq!(r["exit_code"], code);
        assert_eq!(r["signal"], Value::Null);
        assert_eq!(r["passed"], passed);
        assert_eq!(r["fingerprint"], json!(fp));
        assert_eq!(r["manifest"], format!("manifests/{side}.mcp.json"));
        assert_eq!(r["dir"], format!("tool-cases/{side}"));
        assert!(r["duration_ms"].is_u64(), "{r:#}");
    }
    assert_eq!(summary["evals"][0]["eval"], "smoke");
    assert_eq!(summary["evals"][0]["regressed"], false);
    assert_eq!(summary["regressed"], json!(["tool-cases"]));
    assert_eq!(summary["exit"], 1);
    assert_eq!(summary["selected"], "all");
    assert_eq!(summary["version"], 1);
    assert_eq!(summary["config"], "toolpin.toml");
    assert_eq!(summary["environment"], "default");
    assert_eq!(summary["catalogs"]["pinned"]["tools"], 4);
    assert!(summary.get("plan").is_none());

    // A second run starts each run directory afresh.
    sb.write(&format!("{base}/live/stale.txt"), "old");
    sb.run(&["evals", "run", "tool-cases"]).drift();
    assert!(!sb.exists(&format!("{base}/live/stale.txt")));
    assert!(sb.exists(&format!("{base}/live/report.txt")));
    // The lockfile is never written.
    assert_eq!(pinned_fingerprint(&sb), pinned_fp);
    assert!(sb.temp_files().is_empty(), "{:?}", sb.temp_files());
}

#[test]
fn evals_run_without_drift_or_without_regression_exits_0() {
    let sb = refund(TOOL_CASES, false);
    let out = sb.run(&["evals", "run"]);
    out.ok();
    assert!(
        out.stdout.contains(
            "\n\nno regressions: every eval did as well on the live catalog as on the pinned one\n"
        ),
        "{}",
        out.stdout
    );
    // Failing on both sides, or better live, is no regression.
    let sb = refund(
        "[evals.always-fails]\nrun = \"exit 5\"\n\
         [evals.fixed-live]\nrun = \"grep -q '\\\"default\\\": 20' \\\"$TOOLPIN_MANIFEST\\\"\"\n",
        true,
    );
    let out = sb.run(&["evals", "run"]);
    out.ok();
    let summary = sb.read_json(".toolpin/evals/summary.json");
    let codes: Vec<(Value, Value)> = summary["evals"]
        .as_array()
        .expect("evals")
        .iter()
        .map(|e| {
            (
                e["pinned"]["exit_code"].clone(),
                e["live"]["exit_code"].clone(),
            )
        })
        .collect();
    assert_eq!(codes, vec![(json!(5), json!(5)), (json!(1), json!(0))]);
    assert_eq!(summary["exit"], 0);
}

/// `manifest = "openai-chat"` (the canonical name) is `manifest = "openai"`:
/// the files and `TOOLPIN_MANIFEST_FORMAT` keep the `openai` spelling.
#[test]
fn evals_manifest_accepts_the_canonical_openai_chat_name() {
    let sb = refund(
        "[evals.oa]\nrun = \"test \\\"$TOOLPIN_MANIFEST_FORMAT\\\" = openai\"\nmanifest = \"openai-chat\"\n",
        true,
    );
    sb.run(&["evals", "run", "--out", "runs"]).ok();
    let listing: Vec<String> = sb
        .listing()
        .into_iter()
        .filter(|p| p.starts_with("runs/manifests/"))
        .collect();
    assert_eq!(
        listing,
        vec![
            "runs/manifests/live.openai.json",
            "runs/manifests/pinned.openai.json",
        ]
    );
    let summary = sb.read_json("runs/summary.json");
    let eval = &summary["evals"][0];
    assert_eq!(eval["manifest"], "openai", "{summary:#}");
    // The harness saw TOOLPIN_MANIFEST_FORMAT=openai on both sides.
    assert_eq!(
        (&eval["pinned"]["exit_code"], &eval["live"]["exit_code"]),
        (&json!(0), &json!(0)),
        "{summary:#}"
    );
}

#[test]
fn evals_run_writes_each_eval_its_own_manifest_format() {
    let sb = refund(
        "[evals.oa]\nrun = \"true\"\nmanifest = \"openai\"\n\
         [evals.an]\nrun = \"test \\\"$TOOLPIN_MANIFEST_FORMAT\\\" = anthropic\"\nmanifest = \"anthropic\"\n",
        true,
    );
    let out = sb.run(&["evals", "run", "--out", "runs"]);
    out.ok();
    assert!(out.stdout.contains("runs/oa"), "{}", out.stdout);
    let listing: Vec<String> = sb
        .listing()
        .into_iter()
        .filter(|p| p.starts_with("runs/manifests/"))
        .collect();
    assert_eq!(
        listing,
        vec![
            "runs/manifests/live.anthropic.json",
            "runs/manifests/live.openai.json",
            "runs/manifests/pinned.anthropic.json",
            "runs/manifests/pinned.openai.json",
        ]
    );
    let openai = sb.read_json("runs/manifests/live.openai.json");
    let search = openai
        .as_array()
        .and_then(|a| {
            a.iter()
                .find(|t| t["function"]["name"] == "orders__search_orders")
        })
        .expect("search_orders");
    assert_eq!(search["type"], "function");
    assert_eq!(
        search["function"]["parameters"]["properties"]["page_size"]["default"],
        20
    );
    assert_eq!(
        search["function"]["description"],
        "Search orders by customer email, date range or status."
    );
    assert!(search["function"].get("annotations").is_none());
    let anthropic = sb.read_json("runs/manifests/pinned.anthropic.json");
    let lookup = anthropic
        .as_array()
        .and_then(|a| a.iter().find(|t| t["name"] == "orders__lookup_order"))
        .expect("lookup_order");
    assert_eq!(
        lookup,
        &json!({
            "name": "orders__lookup_order",
            "description": "Look up an order by ID.",
            "input_schema": {
                "type": "object",
                "properties": {"order_id": {"type": "string", "description": "The order ID, e.g. ORD-1234."}},
                "required": ["order_id"],
            },
        })
    );
    // The OpenAI tools of the billing server go out as they came in.
    let billing = sb.read_json("tools/billing.openai.json");
    let invoice = openai
        .as_array()
        .and_then(|a| a.iter().find(|t| t["function"]["name"] == "get_invoice"))
        .expect("get_invoice");
    let original = billing
        .as_array()
        .and_then(|a| a.iter().find(|t| t["function"]["name"] == "get_invoice"))
        .expect("get_invoice in the source");
    assert_eq!(invoice, original);
}

#[test]
fn evals_run_selects_by_name_and_by_plan() {
    let sb = refund(
        &format!("{TOOL_CASES}[evals.trajectory]\nrun = \"true\"\n"),
        true,
    );
    // By name: only that eval runs.
    sb.run(&["evals", "run", "trajectory"]).ok();
    assert!(sb.exists(".toolpin/evals/trajectory/live/stdout.txt"));
    assert!(!sb.exists(".toolpin/evals/tool-cases"));
    assert_eq!(
        sb.read_json(".toolpin/evals/summary.json")["selected"],
        "names"
    );

    // By plan: the page size change routes to tool-cases only.
    fs::remove_dir_all(sb.join(".toolpin")).expect("clean");
    let out = sb.run(&["evals", "run", "--plan"]);
    out.drift();
    assert!(out.stdout.contains("tool-cases  exit 0"), "{}", out.stdout);
    assert!(!out.stdout.contains("trajectory"), "{}", out.stdout);
    assert!(!sb.exists(".toolpin/evals/trajectory"));
    let summary = sb.read_json(".toolpin/evals/summary.json");
    assert_eq!(summary["selected"], "plan");
    assert_eq!(summary["plan"]["evals"][0]["eval"], "tool-cases");
    assert_eq!(
        summary["plan"]["evals"][0]["findings"][0]["rule"],
        "input-default-changed"
    );

    // No drift: nothing to run, and nothing written.
    let sb = refund(TOOL_CASES, false);
    let out = sb.run(&["evals", "run", "--plan"]);
    out.ok();
    assert_eq!(out.stdout, "nothing to run: no finding fails the policy\n");
    assert!(!sb.exists(".toolpin/evals"));

    // Drift that routes to no eval: say which tags.
    let sb = refund("[evals.trajectory]\nrun = \"true\"\n", true);
    let out = sb.run(&["evals", "run", "--plan"]);
    out.ok();
    assert_eq!(
        out.stdout,
        "nothing to run: the drift routes to no eval (not routed: tool-cases; see `toolpin check --plan`)\n"
    );

    // --plan and names do not mix.
    let out = sb.run(&["evals", "run", "--plan", "trajectory"]);
    assert_eq!(out.code, 2, "{out:#?}");
    assert!(out.stderr.contains("cannot be used with"), "{out:#?}");
}

#[test]
fn evals_run_refuses_unknown_names_and_configs_without_evals() {
    let sb = refund(TOOL_CASES, true);
    sb.fails(
        &["evals", "run", "tool-cases", "trajectroy"],
        &["no eval named \"trajectroy\" in toolpin.toml (defined: tool-cases)"],
    );
    let sb = refund("", true);
    sb.fails(
        &["evals", "run"],
        &["toolpin.toml defines no evals; add an [evals.NAME] table"],
    );
}

#[test]
fn evals_run_harness_that_cannot_start_is_an_error() {
    let sb = refund(
        &format!("{TOOL_CASES}[evals.broken]\nrun = \"toolpin-no-such-harness --cases all\"\n"),
        true,
    );
    // An earlier summary must not outlive a failed run.
    sb.run(&["evals", "run", "tool-cases"]).drift();
    assert!(sb.exists(".toolpin/evals/summary.json"));
    let out = sb.run(&["evals", "run"]);
    out.error(&[
        "eval broken on the pinned catalog could not start",
        "`sh -c \"toolpin-no-such-harness --cases all\"` exited with status 127 (command not found)",
        "stderr: ",
        "toolpin-no-such-harness",
    ]);
    assert!(!sb.exists(".toolpin/evals/summary.json"));

    // A working directory that does not exist stops the run before any
    // eval starts.
    let sb = refund(
        &format!("{TOOL_CASES}[evals.elsewhere]\nrun = \"true\"\ncwd = \"no-such-dir\"\n"),
        true,
    );
    sb.run(&["evals", "run"]).error(&[
        "evals.elsewhere: the working directory",
        "no-such-dir is not a directory (check `cwd`)",
    ]);
    assert!(!sb.exists(".toolpin/evals/tool-cases"));

    // So does a variable the eval's env needs and nobody set.
    let sb = refund(
        &format!("{TOOL_CASES}[evals.keyed]\nrun = \"true\"\nenv = {{ KEY = \"${{TOOLPIN_TEST_UNSET_VAR}}\" }}\n"),
        true,
    );
    sb.run(&["evals", "run"])
        .error(&["evals.keyed: `env.KEY`: environment variable TOOLPIN_TEST_UNSET_VAR is not set"]);
    // …which `check` does not need.
    sb.run(&["check", "--plan"]).drift();
}

#[test]
fn evals_run_timeout_kills_the_harness_and_counts_as_failure() {
    // A unique duration marks the sleeps so the test can look for leftovers.
    let marker = format!("29.{}{}", std::process::id(), 3);
    let sb = refund(
        &format!(
            "[evals.slow]\nrun = \"grep -q '\\\"default\\\": 20' \\\"$TOOLPIN_MANIFEST\\\" && {{ sleep {marker} & sleep {marker}; }}; exit 0\"\ntimeout = \"400ms\"\n"
        ),
        true,
    );
    let start = Instant::now();
    let out = sb.run(&["evals", "run"]);
    out.drift();
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "took {:?}",
        start.elapsed()
    );
    assert!(out.stdout.contains("slow  exit 0"), "{}", out.stdout);
    assert!(out.stdout.contains("timeout"), "{}", out.stdout);
    assert!(out.stdout.contains("regressed: slow"), "{}", out.stdout);
    let summary = sb.read_json(".toolpin/evals/summary.json");
    let live = &summary["evals"][0]["live"];
    assert_eq!(live["status"], "timeout");
    assert_eq!(live["exit_code"], Value::Null);
    assert_eq!(live["passed"], false);
    assert_eq!(summary["evals"][0]["timeout_ms"], 400);
    assert!(
        live["duration_ms"].as_u64().is_some_and(|d| d >= 400),
        "{live:#}"
    );
    // The whole process group went, background sleep included.
    let deadline = Instant::now() + Duration::from_secs(2);
    let mut left = processes_with_cmdline(&["sleep", &marker]);
    while !left.is_empty() && Instant::now() < deadline {
        thread::sleep(Duration::from_millis(20));
        left = processes_with_cmdline(&["sleep", &marker]);
    }
    for pid in &left {
        let _ = std::process::Command::new("kill")
            .args(["-9", &pid.to_string()])
            .status();
    }
    assert!(
        left.is_empty(),
        "the timeout left processes running: {left:?}"
    );
}

#[test]
fn interrupting_evals_run_ends_the_running_harness() {
    use std::os::unix::process::ExitStatusExt;
    let marker = format!("28.{}{}", std::process::id(), 9);
    let sb = refund(
        &format!("[evals.long]\nrun = \"sleep {marker} & sleep {marker}\"\n"),
        false,
    );
    let mut child = std::process::Command::new(BIN)
        .args(["evals", "run"])
        .current_dir(sb.path())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn toolpin");
    // Wait for the harness to be running.
    let deadline = Instant::now() + RUN_LIMIT;
    while processes_with_cmdline(&["sleep", &marker]).len() < 2 {
        assert!(Instant::now() < deadline, "the harness never started");
        thread::sleep(Duration::from_millis(20));
    }
    let _ = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status();
    let status = child.wait().expect("wait");
    assert_eq!(
        status.signal(),
        Some(2),
        "toolpin dies of the interrupt: {status}"
    );
    let deadline = Instant::now() + Duration::from_secs(2);
    let mut left = processes_with_cmdline(&["sleep", &marker]);
    while !left.is_empty() && Instant::now() < deadline {
        thread::sleep(Duration::from_millis(20));
        left = processes_with_cmdline(&["sleep", &marker]);
    }
    for pid in &left {
        let _ = std::process::Command::new("kill")
            .args(["-9", &pid.to_string()])
            .status();
    }
    assert!(
        left.is_empty(),
        "the interrupt left the harness running: {left:?}"
    );
    assert!(!sb.exists(".toolpin/evals/summary.json"));
}

#[test]
fn evals_run_python_harness_reads_the_manifest() {
    // The same check written the way most harnesses are: Python reading
    // the JSON it is pointed at.
    let sb = refund(
        "[evals.py]\nrun = \"python3 check.py\"\nmanifest = \"anthropic\"\n",
        true,
    );
    sb.write(
        "check.py",
        "import json, os, sys\n\
         tools = json.load(open(os.environ['TOOLPIN_MANIFEST']))\n\
         size = next(t for t in tools if t['name'] == 'orders__search_orders')['input_schema']['properties']['page_size']['default']\n\
         open(os.path.join(os.environ['TOOLPIN_OUTPUT_DIR'], 'cases.json'), 'w').write(json.dumps({'page_size': size}))\n\
         sys.exit(0 if size == 50 else 1)\n",
    );
    let out = sb.run(&["evals", "run"]);
    out.drift();
    assert_eq!(
        sb.read_json(".toolpin/evals/py/pinned/cases.json"),
        json!({"page_size": 50})
    );
    assert_eq!(
        sb.read_json(".toolpin/evals/py/live/cases.json"),
        json!({"page_size": 20})
    );
}

// ---------------------------------------------------------------------------
// What decides (issue 32): every exit-code path of `evals run` against the
// outcomes table of docs/evals.md

/// The rows of the outcomes table in docs/evals.md ("What decides"):
/// (basis, evidence, exit), in the table's order.
fn outcomes_table() -> Vec<(String, String, i32)> {
    let doc = fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/evals.md"),
    )
    .expect("docs/evals.md");
    let section = doc
        .split("\n### What decides\n")
        .nth(1)
        .expect("docs/evals.md has a `### What decides` section");
    let section = section.split("\n### ").next().unwrap_or(section);
    let mut rows = Vec::new();
    for line in section.lines().filter(|l| l.starts_with("| `")) {
        let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
        assert_eq!(cells.len(), 4, "a row of four cells: {line}");
        let basis = cells[0].trim_matches('`').to_string();
        let exit: i32 = cells[3].parse().unwrap_or_else(|_| panic!("exit: {line}"));
        rows.push((basis, cells[1].to_string(), exit));
    }
    rows
}

/// A harness whose cases are decided by its environment, so that each
/// scenario below is a few variables:
/// - `N` cases, `c00`, `c01`, …;
/// - `FAILS`: space-separated `RUN:REPEAT:FROM-TO`, the cases that fail on
///   that run (`pinned`, `live`, `aa` or `*`) and repeat (a number or `*`);
/// - `RECORDS=1`: write one case record per case into TOOLPIN_OUTPUT_DIR;
/// - `EXIT`: `cases` (1 when a case failed, as pytest does) or a number;
///   `LIVE_EXIT` overrides it for the live runs;
/// - `NEW_TOOL`: the tool the live runs call instead of `lookup`.
const CASES_HARNESS: &str = r#"#!/bin/sh
set -u
i=0
failed=0
while [ "$i" -lt "$N" ]; do
  pass=true
  for f in ${FAILS:-}; do
    run=${f%%:*}; rest=${f#*:}; rep=${rest%%:*}; range=${rest#*:}
    from=${range%-*}; to=${range#*-}
    if { [ "$run" = "*" ] || [ "$run" = "$TOOLPIN_RUN" ]; } && { [ "$rep" = "*" ] || [ "$rep" = "$TOOLPIN_REPEAT" ]; } && [ "$i" -ge "$from" ] && [ "$i" -le "$to" ]; then
      pass=false
    fi
  done
  [ "$pass" = false ] && failed=1
  tool=lookup
  if [ -n "${NEW_TOOL:-}" ] && [ "$TOOLPIN_RUN" = live ]; then tool=$NEW_TOOL; fi
  if [ "${RECORDS:-0}" = 1 ]; then
    printf '{"case":"c%02d","passed":%s,"tool_calls":[{"name":"%s"}]}\n' "$i" "$pass" "$tool" >> "$TOOLPIN_OUTPUT_DIR/cases.jsonl"
  fi
  i=$((i + 1))
done
code=${EXIT:-cases}
if [ "$TOOLPIN_RUN" = live ] && [ -n "${LIVE_EXIT:-}" ]; then code=$LIVE_EXIT; fi
[ "$code" = cases ] && code=$failed
exit "$code"
"#;

/// One way an eval can end: its evidence, `--repeat` and `--aa`, the
/// harness's variables, and the row of the outcomes table it must land on.
struct Scenario {
    what: &'static str,
    repeat: u32,
    aa: bool,
    env: &'static str,
    basis: &'static str,
}

const fn scenario(
    what: &'static str,
    repeat: u32,
    aa: bool,
    env: &'static str,
    basis: &'static str,
) -> Scenario {
    Scenario {
        what,
        repeat,
        aa,
        env,
        basis,
    }
}

/// Exit codes only (no records); result files only (records, exit 0
/// whatever happens); both (records, exit 1 when a case failed); with and
/// without repeats and A/A runs.
const SCENARIOS: &[Scenario] = &[
    // exit codes only
    scenario(
        "exit codes only: pinned passes, live fails",
        1,
        false,
        r#"N = "12", FAILS = "live:*:0-3", EXIT = "cases""#,
        "exit-codes",
    ),
    scenario(
        "exit codes only: both fail",
        1,
        false,
        r#"N = "12", FAILS = "*:*:0-0", EXIT = "cases""#,
        "no-regression",
    ),
    scenario(
        "exit codes only: only live passes",
        1,
        false,
        r#"N = "12", FAILS = "pinned:*:0-0", EXIT = "cases""#,
        "no-regression",
    ),
    scenario(
        "exit codes only, repeats: live fails in 2 of 3",
        3,
        false,
        r#"N = "12", FAILS = "live:0:0-0 live:1:0-0", EXIT = "cases""#,
        "exit-codes",
    ),
    scenario(
        "exit codes only, repeats: live fails in 1 of 3",
        3,
        false,
        r#"N = "12", FAILS = "live:0:0-0", EXIT = "cases""#,
        "no-regression",
    ),
    scenario(
        "exit codes only, A/A: pinned and A/A pass, live fails",
        1,
        true,
        r#"N = "12", FAILS = "live:*:0-3", EXIT = "cases""#,
        "exit-codes",
    ),
    // result files only
    scenario(
        "result files: 4 of 12 cases fail on the live run",
        1,
        false,
        r#"N = "12", FAILS = "live:*:0-3", RECORDS = "1", EXIT = "0""#,
        "new-failures-every-run",
    ),
    scenario(
        "result files: 8 of 20 cases fail on the live run",
        1,
        false,
        r#"N = "20", FAILS = "live:*:0-7", RECORDS = "1", EXIT = "0""#,
        "significant-drop",
    ),
    scenario(
        "result files: 4 new failures and 4 new passes",
        1,
        false,
        r#"N = "20", FAILS = "pinned:*:0-3 live:*:4-7", RECORDS = "1", EXIT = "0""#,
        "no-significant-drop",
    ),
    scenario(
        "result files: a tool name never seen",
        1,
        false,
        r#"N = "12", RECORDS = "1", EXIT = "0", NEW_TOOL = "orders__made_up""#,
        "new-tool-names",
    ),
    scenario(
        "result files: a case fails live, another does better live",
        1,
        false,
        r#"N = "12", FAILS = "pinned:*:5-5 live:*:0-0", RECORDS = "1", EXIT = "0""#,
        "no-regression",
    ),
    scenario(
        "result files, A/A: 4 cases fail every live run, and the A/A runs moved another",
        2,
        true,
        r#"N = "12", FAILS = "live:*:0-3 aa:1:9-9", RECORDS = "1", EXIT = "0""#,
        "no-regression",
    ),
    scenario(
        "result files: nothing changed",
        1,
        false,
        r#"N = "12", RECORDS = "1", EXIT = "0""#,
        "no-regression",
    ),
    // both
    scenario(
        "both, repeats and A/A: 4 of 12 fail on every live run (the issue's suite)",
        2,
        true,
        r#"N = "12", FAILS = "live:*:0-3", RECORDS = "1", EXIT = "cases""#,
        "new-failures-every-run",
    ),
    scenario(
        "both: the live run exits 1 after writing records that all passed",
        1,
        false,
        r#"N = "12", RECORDS = "1", EXIT = "cases", LIVE_EXIT = "1""#,
        "exit-codes",
    ),
    scenario(
        "both, repeats: a case fails 1 of 3 live runs",
        3,
        false,
        r#"N = "12", FAILS = "live:0:0-0", RECORDS = "1", EXIT = "cases""#,
        "no-regression",
    ),
    scenario(
        "both, repeats: 18 cases move both ways, the exit codes say pinned 2/3, live 1/3",
        3,
        false,
        r#"N = "30", FAILS = "pinned:2:0-5 live:1:6-11 live:2:12-17", RECORDS = "1", EXIT = "cases""#,
        "no-significant-drop",
    ),
    // A/A
    scenario(
        "A/A: the case failing live also fails an A/A run",
        1,
        true,
        r#"N = "12", FAILS = "live:*:0-0 aa:*:0-0", RECORDS = "1", EXIT = "0""#,
        "no-regression",
    ),
    scenario(
        "A/A: a significant drop within the A/A spread",
        1,
        true,
        r#"N = "20", FAILS = "live:*:0-7 aa:*:8-15", RECORDS = "1", EXIT = "0""#,
        "no-significant-drop",
    ),
    scenario(
        "A/A: a significant drop beyond the A/A spread",
        1,
        true,
        r#"N = "20", FAILS = "live:*:0-9", RECORDS = "1", EXIT = "0""#,
        "significant-drop",
    ),
];

#[test]
fn every_outcome_of_evals_run_is_the_one_docs_evals_md_gives() {
    let table = outcomes_table();
    // The table and the code name the same outcomes, in the same order,
    // with the same exit codes.
    let code: Vec<(String, i32)> = toolpin_evals::verdict::Basis::ALL
        .iter()
        .map(|b| (b.key().to_string(), i32::from(b.regressed())))
        .collect();
    let docs: Vec<(String, i32)> = table.iter().map(|(b, _, e)| (b.clone(), *e)).collect();
    assert_eq!(
        docs, code,
        "docs/evals.md's outcomes table and verdict.rs disagree"
    );
    // Every row is reached by some scenario, and every scenario names a row.
    for (basis, _, _) in &table {
        assert!(
            SCENARIOS.iter().any(|s| s.basis == basis),
            "no scenario reaches the row `{basis}`"
        );
    }
    let sb = refund("", false);
    sb.write("cases.sh", CASES_HARNESS);
    let toml = sb.read_string("toolpin.toml");
    for (k, sc) in SCENARIOS.iter().enumerate() {
        let exit = table
            .iter()
            .find(|(b, _, _)| b == sc.basis)
            .map(|(_, _, e)| *e)
            .unwrap_or_else(|| panic!("{}: no row `{}` in docs/evals.md", sc.what, sc.basis));
        let name = format!("s{k:02}");
        sb.write(
            "toolpin.toml",
            format!(
                "{toml}\n[evals.{name}]\nrun = \"sh cases.sh\"\nenv = {{ {} }}\n",
                sc.env
            ),
        );
        let repeat = sc.repeat.to_string();
        let mut args = vec!["evals", "run", "--repeat", &repeat, "--color", "never"];
        if sc.aa {
            args.push("--aa");
        }
        let out = sb.run(&args);
        assert_eq!(
            out.code, exit,
            "{}: exit {}, docs say {exit}\n{out:#?}",
            sc.what, out.code
        );
        assert_eq!(out.stderr, "", "{}", sc.what);
        let summary = sb.read_json(".toolpin/evals/summary.json");
        let eval = &summary["evals"][0];
        assert_eq!(
            eval["outcome"]["basis"], sc.basis,
            "{}: {:#}",
            sc.what, eval["outcome"]
        );
        assert_eq!(eval["regressed"], exit == 1, "{}", sc.what);
        assert_eq!(eval["outcome"]["regressed"], exit == 1, "{}", sc.what);
        assert_eq!(summary["exit"], exit, "{}", sc.what);
        // The last lines say what decided.
        let reason = eval["outcome"]["reason"].as_str().expect("reason");
        assert!(!reason.is_empty(), "{}", sc.what);
        if exit == 1 {
            assert!(
                out.stdout
                    .contains(&format!("regressed: {name} ({reason})\n")),
                "{}: {}",
                sc.what,
                out.stdout
            );
        } else {
            assert!(
                out.stdout.contains("\nno regressions: "),
                "{}: {}",
                sc.what,
                out.stdout
            );
        }
        // With result files the comparison carries the same outcome.
        if sc.env.contains("RECORDS") {
            assert_eq!(
                eval["comparison"]["outcome"], eval["outcome"],
                "{}",
                sc.what
            );
        } else {
            assert_eq!(eval["comparison"], Value::Null, "{}", sc.what);
        }
    }
}

/// The issue's suite (issue 32, fault 2): 12 pytest tests, 4 of which read
/// the default page size the drift moves from 50 to 20.
fn pytest_suite(fixture: bool) -> String {
    let (arg, call) = if fixture {
        (
            "toolpin_case",
            "    toolpin_case.call(\"orders__search_orders\", {})\n",
        )
    } else {
        ("", "")
    };
    let mut suite = String::from("import toolpin\n\n");
    for i in 0..8 {
        suite += &format!(
            "\ndef test_stable_{i}({arg}):\n{call}    assert toolpin.load_tools(\"openai\")\n\n"
        );
    }
    for i in 0..4 {
        suite += &format!(
            "\ndef test_page_size_{i}({arg}):\n{call}    tools = {{t[\"function\"][\"name\"]: t[\"function\"] for t in toolpin.load_tools(\"openai\")}}\n    assert tools[\"orders__search_orders\"][\"parameters\"][\"properties\"][\"page_size\"][\"default\"] == 50\n\n"
        );
    }
    suite
}

#[test]
fn a_pytest_suite_failing_4_of_12_on_every_live_run_regresses_with_the_plugin_as_without() {
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let python = repo.join(".venv/bin/python");
    assert!(python.exists(), "run scripts/setup");
    let pytest = |plugin: &str, dir: &str| {
        format!(
            "[evals.{dir}]\nrun = \'\'\'PYTHONPATH=\"{}\" \"{}\" -m pytest -q {plugin}-p no:cacheprovider {dir}\'\'\'\n",
            repo.join("python").display(),
            python.display()
        )
    };
    let sb = refund(
        &(pytest("-p toolpin.pytest_plugin ", "with_plugin") + &pytest("", "without_plugin")),
        true,
    );
    sb.write("with_plugin/test_suite.py", pytest_suite(true));
    sb.write("without_plugin/test_suite.py", pytest_suite(false));

    // With the plugin, and A/A runs as steady as the pinned ones: 100% →
    // 66.7%, too few cases for a significance test (p = 0.125 at best),
    // which was "not distinguishable from noise", exit 0.
    let out = sb.run(&["evals", "run", "with_plugin", "--aa", "--color", "never"]);
    out.drift();
    assert!(
        out.stdout.contains("pass rate   100.0% → 66.7%"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("verdict     too few cases changed for a significance test: 4 cases changed, and a test at 5% needs 6 or more (p = 0.125 at best)"),
        "{}",
        out.stdout
    );
    let reason = "4 new failures, every run; too few cases for a significance test";
    assert!(
        out.stdout.ends_with(&format!(
            "regressed: with_plugin ({reason})\nsummary: .toolpin/evals/summary.json\n"
        )),
        "{}",
        out.stdout
    );
    let summary = sb.read_json(".toolpin/evals/summary.json");
    assert_eq!(summary["exit"], 1);
    assert_eq!(summary["regressed"], json!(["with_plugin"]));
    let eval = &summary["evals"][0];
    assert_eq!(
        eval["outcome"],
        json!({"regressed": true, "basis": "new-failures-every-run", "reason": reason})
    );
    let c = &eval["comparison"];
    assert_eq!(c["verdict"], "untested", "{c:#}");
    assert_eq!(c["fails"], true);
    assert_eq!(c["cases"]["new_failures"], 4);
    assert_eq!(c["cases"]["failed_every_run"], 4);
    assert_eq!(c["aa"]["change"]["estimate"], 0.0);
    for run in ["pinned", "aa"] {
        assert_eq!(eval["runs"][run][0]["exit_code"], 0, "{run}");
    }
    assert_eq!(eval["runs"]["live"][0]["exit_code"], 1);

    // The same suite without the plugin: the exit codes alone.
    let out = sb.run(&["evals", "run", "without_plugin", "--color", "never"]);
    out.drift();
    let summary = sb.read_json(".toolpin/evals/summary.json");
    assert_eq!(summary["evals"][0]["outcome"]["basis"], "exit-codes");
    assert_eq!(summary["evals"][0]["comparison"], Value::Null);
}

/// A stored zip of `members`, with `aliases` more central-directory
/// entries, each pointing at the first sample's bytes (issue 32, fault 12:
/// the zip bomb that inflated one member thousands of times).
fn zip_with_aliases(members: &[(&str, &[u8])], aliases: usize) -> Vec<u8> {
    fn crc32(data: &[u8]) -> u32 {
        let mut crc = !0u32;
        for b in data {
            crc ^= u32::from(*b);
            for _ in 0..8 {
                crc = if crc & 1 != 0 {
                    0xEDB8_8320 ^ (crc >> 1)
                } else {
                    crc >> 1
                };
            }
        }
        !crc
    }
    let header = |buf: &mut Vec<u8>, name: &str, data: &[u8], central: Option<u32>| {
        buf.extend_from_slice(if central.is_some() {
            b"PK\x01\x02"
        } else {
            b"PK\x03\x04"
        });
        if central.is_some() {
            buf.extend_from_slice(&20u16.to_le_bytes());
        }
        buf.extend_from_slice(&20u16.to_le_bytes());
        buf.extend_from_slice(&[0; 8]); // flags, method (stored), time, date
        buf.extend_from_slice(&crc32(data).to_le_bytes());
        buf.extend_from_slice(&(data.len() as u32).to_le_bytes());
        buf.extend_from_slice(&(data.len() as u32).to_le_bytes());
        buf.extend_from_slice(&(name.len() as u16).to_le_bytes());
        buf.extend_from_slice(&0u16.to_le_bytes());
        if let Some(offset) = central {
            buf.extend_from_slice(&[0; 10]);
            buf.extend_from_slice(&offset.to_le_bytes());
        }
        buf.extend_from_slice(name.as_bytes());
    };
    let (mut out, mut cd, mut offsets) = (Vec::new(), Vec::new(), Vec::new());
    for (name, data) in members {
        offsets.push(out.len() as u32);
        header(&mut out, name, data, None);
        out.extend_from_slice(data);
    }
    for ((name, data), offset) in members.iter().zip(&offsets) {
        header(&mut cd, name, data, Some(*offset));
    }
    for k in 0..aliases {
        header(
            &mut cd,
            &format!("samples/a{k:04}_epoch_1.json"),
            members[1].1,
            Some(offsets[1]),
        );
    }
    let count = (members.len() + aliases) as u16;
    let cd_offset = out.len() as u32;
    out.extend_from_slice(&cd);
    out.extend_from_slice(b"PK\x05\x06\0\0\0\0");
    out.extend_from_slice(&count.to_le_bytes());
    out.extend_from_slice(&count.to_le_bytes());
    out.extend_from_slice(&(cd.len() as u32).to_le_bytes());
    out.extend_from_slice(&cd_offset.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
    out
}

#[test]
fn an_inspect_log_whose_entries_overlap_is_refused_by_evals_run_and_compare() {
    let header = br#"{"eval": {"task": "t", "config": {"epochs": 1}}}"#;
    let sample = br#"{"id": "a", "epoch": 1, "scores": {"s": {"value": "C"}}}"#;
    let log = r#"{"version": 2, "status": "success", "eval": {"task": "t"}, "samples": [{"id": "a", "scores": {"s": {"value": "C"}}}]}"#;
    let sb = refund(
        "[evals.inspect]\nrun = \"if [ $TOOLPIN_RUN = live ]; then cp bomb.eval $TOOLPIN_OUTPUT_DIR/; else cp log.json $TOOLPIN_OUTPUT_DIR/; fi\"\n",
        false,
    );
    sb.write("log.json", log);
    // The archive is read as it is, before: one honest entry reads.
    sb.write(
        "bomb.eval",
        zip_with_aliases(
            &[("header.json", header), ("samples/a_epoch_1.json", sample)],
            0,
        ),
    );
    sb.run(&["compare", "log.json", "bomb.eval"]).ok();
    // 500 more entries naming the sample's bytes: each was inflated.
    sb.write(
        "bomb.eval",
        zip_with_aliases(
            &[("header.json", header), ("samples/a_epoch_1.json", sample)],
            500,
        ),
    );
    let refused = "bomb.eval: refused: the entries samples/a0000_epoch_1.json and samples/a0001_epoch_1.json overlap (one member's bytes named twice, as zip bombs do)";
    let message = sb
        .run(&["compare", "log.json", "bomb.eval"])
        .error(&[refused]);
    assert_eq!(message, refused);
    sb.run(&["evals", "run"])
        .error(&["eval inspect: ", "live/bomb.eval: refused: the entries samples/a0000_epoch_1.json and samples/a0001_epoch_1.json overlap"]);
    assert!(!sb.exists(".toolpin/evals/summary.json"));
}
