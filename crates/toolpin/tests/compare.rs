//! `toolpin compare` and `toolpin accept --seen-tool` end to end: case
//! records on both sides, the verdict and exit codes, the seen-tools file,
//! and bad input (one line, exit 2, nothing written).

mod common;

use common::{examples, Sandbox};
use serde_json::{json, Value};

/// Case records: `n` cases, `fail` of them failing; each calls `tools`.
fn records(n: usize, fail: &[usize], tools: &[&str], repeat: Option<u32>) -> String {
    let mut out = String::new();
    for i in 0..n {
        let mut rec = json!({
            "case": format!("refund-{i:03}"),
            "passed": !fail.contains(&i),
            "tool_calls": tools.iter().map(|t| json!({"name": t, "arguments": {"order_id": "ORD-1"}})).collect::<Vec<_>>(),
            "turns": tools.len() + 1,
        });
        if let Some(k) = repeat {
            rec["repeat"] = json!(k);
        }
        out.push_str(&rec.to_string());
        out.push('\n');
    }
    out
}

/// The refund example, pinned, with its drifted lookup_order description.
fn refund() -> Sandbox {
    let sb = Sandbox::new();
    sb.copy_tree(&examples().join("refund"), "");
    sb.run(&["lock"]).ok();
    let orders = sb.read_string("tools/orders.json");
    sb.write(
        "tools/orders.json",
        orders.replace(
            "\"Look up an order by ID.\"",
            "\"Look up an order by ID. Prefer search_orders when the ID is unknown.\"",
        ),
    );
    sb.write("pinned.json", sb.read("toolpin.lock"));
    sb.run(&["lock"]).ok();
    sb.write("live.lock", sb.read("toolpin.lock"));
    sb.write("toolpin.lock", sb.read("pinned.json"));
    sb
}

#[test]
fn flips_are_grouped_by_tool_and_joined_with_the_drift() {
    let sb = refund();
    sb.write(
        "before.jsonl",
        records(
            60,
            &[59],
            &["orders__lookup_order", "orders__search_orders"],
            None,
        ),
    );
    // Eight long carts now fail, and the agent calls search first.
    let after: Vec<usize> = (0..8).chain([59]).collect();
    sb.write(
        "after.jsonl",
        records(
            60,
            &after,
            &[
                "orders__search_orders",
                "orders__lookup_order",
                "orders__lookup_order",
            ],
            None,
        ),
    );
    let run = sb.run(&[
        "compare",
        "before.jsonl",
        "after.jsonl",
        "--catalogs",
        "pinned.json",
        "live.lock",
        "--color",
        "never",
    ]);
    run.drift();
    let out = &run.stdout;
    assert!(out.contains("pass rate   98.3% → 85.0%"), "{out}");
    assert!(
        out.contains("exact McNemar on 8 new failures vs 0 new passes, p = 0.008"),
        "{out}"
    );
    assert!(out.contains("verdict     regression"), "{out}");
    assert!(
        out.contains("8 of 8 new failures called orders__lookup_order, which drifted: description-changed (critical)"),
        "{out}"
    );
    assert!(out.contains("refund-000  1/1 → 0/1  calls 2 → 3"), "{out}");
    assert!(
        out.contains("tool calls per case  median 2 → 3  change +1"),
        "{out}"
    );
    assert!(out.contains("new tool names: none"), "{out}");

    // JSON and Markdown in one run, to files.
    sb.run(&[
        "compare",
        "before.jsonl",
        "after.jsonl",
        "--catalogs",
        "pinned.json",
        "live.lock",
        "--format",
        "json=out/compare.json",
        "--format",
        "markdown=out/compare.md",
    ])
    .drift();
    let doc = sb.read_json("out/compare.json");
    assert_eq!(doc["version"], 1);
    assert_eq!(doc["verdict"], "regression");
    assert_eq!(doc["fails"], true);
    assert_eq!(doc["cases"]["new_failures"], 8);
    assert_eq!(doc["pass_rate"]["method"], "mcnemar-exact");
    assert_eq!(
        doc["groups"]["new_failures"][0]["tool"],
        "orders__lookup_order"
    );
    assert_eq!(
        doc["groups"]["new_failures"][0]["drift"]["severity"],
        "critical"
    );
    assert_eq!(doc["metrics"][0]["metric"], "tool_calls");
    let case0 = &doc["case_results"][0];
    assert_eq!(case0["case"], "refund-000");
    assert_eq!(case0["flip"], "new-failure");
    assert_eq!(case0["after"]["tools"]["orders__lookup_order"], 2);
    let md = sb.read_string("out/compare.md");
    assert!(md.starts_with("### 🔴 toolpin compare: regression"), "{md}");
    assert!(
        md.contains("| pass rate | 98.3% | 85.0% | −13.3 pts |"),
        "{md}"
    );
    assert!(md.contains("`refund-007`"), "{md}");
}

#[test]
fn a_small_move_is_noise_and_exits_0() {
    // Four cases newly fail and four newly pass: enough changes for the
    // test, which finds nothing.
    let sb = Sandbox::new();
    sb.write("before.jsonl", records(60, &[0, 1, 2, 3], &["a"], None));
    sb.write("after.jsonl", records(60, &[4, 5, 6, 7], &["a"], None));
    let run = sb.run(&["compare", "before.jsonl", "after.jsonl"]);
    run.ok();
    assert!(run.stdout.contains("verdict     not distinguishable from noise: no change cannot be ruled out at 5% (p = 1.000)"), "{}", run.stdout);
    assert!(
        run.stdout.contains(
            "outcome     no regression: not distinguishable from noise, 93.3% → 93.3% (p = 1.000)"
        ),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("detectable  a change of 10.0 points or more, with 60 cases × 1 repeat"),
        "{}",
        run.stdout
    );
    // One case that passed before and fails after, and nothing else moved
    // (issue 32): no test can call one change significant, which does not
    // make it noise. It is what was seen, and it fails the comparison.
    sb.write("before.jsonl", records(60, &[3, 9], &["a"], None));
    sb.write("after.jsonl", records(60, &[3, 9, 20], &["a"], None));
    let run = sb.run(&["compare", "before.jsonl", "after.jsonl"]);
    run.drift();
    assert!(run.stdout.contains("verdict     too few cases changed for a significance test: 1 case changed, and a test at 5% needs 6 or more (p = 1.000 at best)"), "{}", run.stdout);
    assert!(
        run.stdout.contains(
            "outcome     regression: 1 new failure; too few cases for a significance test"
        ),
        "{}",
        run.stdout
    );
    // Nothing written but the report.
    assert!(!sb.exists("toolpin.seen-tools.json"));
}

#[test]
fn repeats_from_one_file_several_files_and_directories() {
    let sb = Sandbox::new();
    let mut one = String::new();
    for k in 0..3 {
        one.push_str(&records(30, &[], &["a"], Some(k)));
    }
    sb.write("before.jsonl", &one);
    for k in 0..3 {
        sb.write(
            &format!("after/run{k}/cases.jsonl"),
            records(30, &[1, 2, 3, 4, 5, 6, 7], &["a"], None),
        );
        sb.write(&format!("after/run{k}/stdout.txt"), "not a result file\n");
    }
    let run = sb.run(&["compare", "before.jsonl", "after", "--format", "json"]);
    run.drift();
    let doc: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(doc["repeats"], json!({"before": 3, "after": 3, "aa": 0}));
    assert_eq!(doc["pass_rate"]["method"], "paired-permutation");
    assert_eq!(doc["verdict"], "regression");
    // --after adds repeats to the after side.
    sb.write("extra.jsonl", records(30, &[], &["a"], None));
    let run = sb.run(&[
        "compare",
        "before.jsonl",
        "after",
        "--after",
        "extra.jsonl",
        "--format",
        "json",
    ]);
    let doc: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(doc["repeats"]["after"], 4);
    // The same A/A runs as the before side: no spread at all.
    let run = sb.run(&[
        "compare",
        "before.jsonl",
        "after",
        "--aa",
        "before.jsonl",
        "--format",
        "json",
    ]);
    let doc: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(doc["aa"]["change"]["estimate"], 0.0);
    assert_eq!(doc["aa"]["significant"], false);
}

#[test]
fn a_new_tool_name_fails_until_it_is_acknowledged() {
    let sb = refund();
    sb.write(
        "before.jsonl",
        records(10, &[], &["orders__lookup_order"], None),
    );
    sb.write(
        "after.jsonl",
        records(
            10,
            &[],
            &["orders__lookup_order", "orders__cancel_order"],
            None,
        ),
    );
    let run = sb.run(&[
        "compare",
        "before.jsonl",
        "after.jsonl",
        "--catalogs",
        "pinned.json",
        "live.lock",
    ]);
    run.drift();
    assert!(
        run.stdout
            .contains("new tool names: 1 never seen before (exit 1 until acknowledged)"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains(
            "orders__cancel_order  in neither catalog: the agent made it up; emitted in refund-000"
        ),
        "{}",
        run.stdout
    );
    assert!(
        !sb.exists("toolpin.seen-tools.json"),
        "compare writes nothing"
    );
    assert!(!sb.exists("toolpin.approvals.jsonl"));

    sb.run(&["accept", "--seen-tool", "x", "--reason", "   "])
        .error(&["--reason must say why"]);
    let bad = sb.run(&["accept", "--seen-tool", "", "--reason", "x"]);
    bad.error(&["is not a tool name"]);
    let run = sb.run_env(
        &[
            "accept",
            "--seen-tool",
            "orders__cancel_order",
            "--reason",
            "the vendor added it in 2.3",
        ],
        &[("TOOLPIN_AUTHOR", "Ada <ada@example.com>")],
    );
    run.ok();
    assert!(
        run.stderr
            .contains("Acknowledged 1 tool name (orders__cancel_order) in toolpin.seen-tools.json"),
        "{}",
        run.stderr
    );
    assert_eq!(
        sb.read_string("toolpin.seen-tools.json"),
        "{\n  \"version\": 1,\n  \"tools\": [\n    \"orders__cancel_order\"\n  ]\n}\n"
    );
    let log = sb.read_string("toolpin.approvals.jsonl");
    let rec: Value = serde_json::from_str(log.lines().last().unwrap()).unwrap();
    assert_eq!(rec["change"], "seen-tool");
    assert_eq!(rec["tool"], "orders__cancel_order");
    assert_eq!(rec["reason"], "the vendor added it in 2.3");
    assert_eq!(rec["author"], "Ada <ada@example.com>");
    assert_eq!(rec["decision"], "accepted");
    assert_eq!(rec["catalog"]["before"], rec["catalog"]["after"]);
    // The lockfile did not move.
    assert_eq!(sb.read("toolpin.lock"), sb.read("pinned.json"));
    // Acknowledged: clean.
    sb.run(&["compare", "before.jsonl", "after.jsonl"]).ok();
    // Again: nothing new to record.
    let again = sb.run(&[
        "accept",
        "--seen-tool",
        "orders__cancel_order",
        "--reason",
        "again",
    ]);
    again.ok();
    assert!(again.stderr.contains("already lists"), "{}", again.stderr);
    assert_eq!(sb.read_string("toolpin.approvals.jsonl"), log);
}

#[test]
fn bad_input_is_one_line_exit_2_and_writes_nothing() {
    let sb = Sandbox::new();
    sb.write("toolpin.lock", "{}");
    sb.write("ok.jsonl", records(3, &[], &[], None));
    sb.write("dup.jsonl", "{\"case\":\"a\",\"passed\":true}\n{\"case\":\"b\",\"passed\":true}\n{\"case\":\"a\",\"passed\":false}\n");
    sb.fails(
        &["compare", "ok.jsonl", "dup.jsonl"],
        &["dup.jsonl:3: case \"a\" appears twice in one repeat (first on line 1)"],
    );
    sb.write(
        "broken.jsonl",
        "{\"case\":\"a\",\"passed\":true}\n{\"case\":\"b\",\"pass\n",
    );
    sb.fails(
        &["compare", "ok.jsonl", "broken.jsonl"],
        &["broken.jsonl:2: not a case record"],
    );
    sb.write("notes.txt", "hello\n");
    sb.fails(
        &["compare", "ok.jsonl", "notes.txt"],
        &[
            "notes.txt: not a result file toolpin reads",
            "--input-format",
        ],
    );
    sb.fails(
        &["compare", "ok.jsonl", "missing.jsonl"],
        &["missing.jsonl: no such file or directory"],
    );
    sb.write("empty/notes.txt", "nothing\n");
    sb.fails(
        &["compare", "ok.jsonl", "empty"],
        &["empty: no result files in this directory"],
    );
    sb.write("blank.jsonl", "\n\n");
    sb.fails(
        &[
            "compare",
            "ok.jsonl",
            "blank.jsonl",
            "--input-format",
            "records",
        ],
        &["after: no case runs in blank.jsonl"],
    );
    sb.fails(
        &["compare", "ok.jsonl", "ok.jsonl", "--input-format", "yaml"],
        &["unknown input format \"yaml\""],
    );
    sb.fails(
        &["compare", "ok.jsonl", "ok.jsonl", "--format", "sarif"],
        &["text, json or markdown, not sarif"],
    );
    sb.write("toolpin.seen-tools.json", "[1]");
    sb.fails(
        &["compare", "ok.jsonl", "ok.jsonl"],
        &["toolpin.seen-tools.json: not a seen-tools file"],
    );
}
