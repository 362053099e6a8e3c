//! The refund story end to end (issue 16, point 7): the example's stand-in
//! agent reads the tool descriptions it is handed, the vendor's "Prefer
//! search_orders when the ID is unknown" makes it search first and run out
//! of tool budget on long carts, and `toolpin evals run --repeat 5 --aa`
//! shows the flips under orders__lookup_order, tool calls per case rising,
//! a significant drop, and an A/A spread that is not.

mod common;

use common::{examples, Sandbox};
use serde_json::Value;

fn refund() -> Sandbox {
    let sb = Sandbox::new();
    sb.copy_tree(&examples().join("refund"), "");
    sb.run(&["lock"]).ok();
    sb
}

fn drift(sb: &Sandbox) {
    let orders = sb.read_string("tools/orders.json");
    let edited = orders.replace(
        "\"Look up an order by ID.\"",
        "\"Look up an order by ID. Prefer search_orders when the ID is unknown.\"",
    );
    assert_ne!(orders, edited);
    sb.write("tools/orders.json", edited);
}

#[test]
fn the_vendor_sentence_is_a_significant_regression_under_lookup_order() {
    let sb = refund();
    drift(&sb);
    let run = sb.run(&[
        "evals",
        "run",
        "-c",
        "toolpin.evals.toml",
        "--repeat",
        "5",
        "--aa",
        "--color",
        "never",
    ]);
    run.drift();
    let out = &run.stdout;
    assert!(
        out.contains("new failures called orders__lookup_order, which drifted: description-changed (critical)"),
        "{out}"
    );
    assert!(
        out.contains("regressed: refund (a significant drop in the pass rate)"),
        "{out}"
    );
    let summary = sb.read_json(".toolpin/evals/summary.json");
    assert_eq!(summary["repeats"], 5);
    assert_eq!(summary["aa"], true);
    let eval = &summary["evals"][0];
    assert_eq!(eval["regressed"], true);
    // The first repeat keeps the members summary.json always had.
    assert_eq!(eval["pinned"]["dir"], "refund/pinned/0");
    assert_eq!(eval["runs"]["live"].as_array().map(Vec::len), Some(5));
    assert_eq!(eval["runs"]["aa"].as_array().map(Vec::len), Some(5));
    let c = &eval["comparison"];
    assert_eq!(c["verdict"], "regression", "{c:#}");
    let before = c["pass_rate"]["before"].as_f64().unwrap();
    let after = c["pass_rate"]["after"].as_f64().unwrap();
    assert!((0.88..=0.96).contains(&before), "{before}");
    assert!((0.72..=0.84).contains(&after), "{after}");
    assert_eq!(c["pass_rate"]["method"], "paired-permutation");
    assert!(c["pass_rate"]["p_value"].as_f64().unwrap() < 0.05);
    assert_eq!(c["aa"]["significant"], false, "{:#}", c["aa"]);
    let group = &c["groups"]["new_failures"][0];
    assert_eq!(group["tool"], "orders__lookup_order");
    assert_eq!(group["drift"]["severity"], "critical");
    assert_eq!(group["touched"], c["cases"]["new_failures"]);
    let calls = &c["metrics"][0];
    assert_eq!(calls["metric"], "tool_calls");
    assert!(
        calls["after_median"].as_f64() > calls["before_median"].as_f64(),
        "{calls:#}"
    );
    assert!(calls["change"]["low"].as_f64().unwrap() > 0.0, "{calls:#}");
    assert_eq!(c["new_tool_names"], Value::Array(vec![]));
    // The harness saw which repeat it was and its seed.
    let cases = sb.read_string(".toolpin/evals/refund/live/3/cases.jsonl");
    let first: Value = serde_json::from_str(cases.lines().next().unwrap()).unwrap();
    assert_eq!(first["repeat"], 3);
}

#[test]
fn no_drift_is_no_regression() {
    let sb = refund();
    let run = sb.run(&[
        "evals",
        "run",
        "-c",
        "toolpin.evals.toml",
        "--repeat",
        "3",
        "--color",
        "never",
    ]);
    run.ok();
    assert!(
        run.stdout
            .contains("verdict     not distinguishable from noise"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("new failures: none"), "{}", run.stdout);
    let summary = sb.read_json(".toolpin/evals/summary.json");
    assert_eq!(summary["exit"], 0);
    assert_eq!(
        summary["evals"][0]["comparison"]["pass_rate"]["change"]["estimate"],
        0.0
    );
}

/// The refund example with one eval whose harness is `script`.
fn with_harness(script: &str) -> Sandbox {
    let sb = refund();
    let toml = sb.read_string("toolpin.toml");
    sb.write(
        "partial.toml",
        format!("{toml}\n[evals.partial]\nrun = \"sh harness.sh\"\n"),
    );
    sb.write("harness.sh", script);
    sb
}

#[test]
fn result_files_on_one_side_only_or_broken_are_errors() {
    // Only the pinned runs write results.
    let sb = with_harness(
        "[ \"$TOOLPIN_SIDE\" = pinned ] && echo '{\"case\":\"a\",\"passed\":true}' > \"$TOOLPIN_OUTPUT_DIR/cases.jsonl\"\nexit 0\n",
    );
    let message = sb
        .run(&["evals", "run", "-c", "partial.toml"])
        .error(&["eval partial: the live runs wrote no result files, the others did"]);
    assert!(!message.contains('\n'));
    assert!(!sb.exists(".toolpin/evals/summary.json"));
    // A result file that does not parse names its file and line.
    let sb = with_harness(
        "printf '{\"case\":\"a\",\"passed\":true}\\n{\"case\":\"b\"}\\n' > \"$TOOLPIN_OUTPUT_DIR/cases.jsonl\"\n",
    );
    sb.run(&["evals", "run", "-c", "partial.toml"]).error(&[
        "eval partial: ",
        "pinned/cases.jsonl:2: not a case record: missing field `passed`",
    ]);
    // No result files at all: exit codes decide, as before.
    let sb = with_harness("exit 0\n");
    let run = sb.run(&["evals", "run", "-c", "partial.toml", "--repeat", "2"]);
    run.ok();
    assert!(run.stdout.contains("eval partial: the harness wrote no result files into TOOLPIN_OUTPUT_DIR: compared by exit code only"), "{}", run.stdout);
    assert_eq!(
        sb.read_json(".toolpin/evals/summary.json")["evals"][0]["comparison"],
        serde_json::Value::Null
    );
}
