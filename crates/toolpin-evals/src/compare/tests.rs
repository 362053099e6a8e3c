use std::collections::{BTreeMap, BTreeSet};

use super::*;
use crate::results::{CaseRun, Names, Repeat};

/// A repeat from (case, passed, tool names) triples.
fn repeat(names: &mut Names, runs: &[(&str, bool, &[&str])]) -> Repeat {
    Repeat {
        sources: Vec::new(),
        cases: runs
            .iter()
            .map(|(case, passed, tools)| {
                let mut run = CaseRun::new(*case, *passed);
                run.tool_calls = Some(tools.iter().map(|t| names.id(t)).collect());
                run
            })
            .collect(),
    }
}

fn opts() -> Options {
    Options {
        seed: 11,
        resamples: 2000,
    }
}

#[test]
fn single_runs_use_mcnemar_and_group_flips_by_tool() {
    let mut names = Names::default();
    let mut before = Vec::new();
    let mut after = Vec::new();
    for i in 0..60 {
        let id = format!("case-{i:02}");
        let long = i < 8;
        before.push((id.clone(), true, vec!["lookup"]));
        after.push((
            id,
            !long,
            if long {
                vec!["search", "lookup", "lookup"]
            } else {
                vec!["lookup"]
            },
        ));
    }
    let b: Vec<(&str, bool, &[&str])> = before
        .iter()
        .map(|(c, p, t)| (c.as_str(), *p, t.as_slice()))
        .collect();
    let a: Vec<(&str, bool, &[&str])> = after
        .iter()
        .map(|(c, p, t)| (c.as_str(), *p, t.as_slice()))
        .collect();
    let before = vec![repeat(&mut names, &b)];
    let after = vec![repeat(&mut names, &a)];
    let mut drift = BTreeMap::new();
    drift.insert(
        "lookup".to_string(),
        ToolDrift {
            severity: Severity::Critical,
            rules: vec!["description-changed"],
        },
    );
    let ctx = Context {
        catalog_tools: Some(["lookup", "search"].iter().map(|s| s.to_string()).collect()),
        drift,
        seen: None,
    };
    let r = compare(&before, &after, None, names, &ctx, opts());
    assert_eq!(r.case_ids(Flip::NewFailure).len(), 8);
    assert_eq!(
        r.pass.method,
        Method::McNemar {
            to_failing: 8,
            to_passing: 0
        }
    );
    assert!((r.pass.p_value - 2.0 / 256.0).abs() < 1e-12);
    assert_eq!(r.verdict, Verdict::Regression);
    assert!(r.fails());
    // Both tools were touched by all eight; each case is listed once.
    assert_eq!(r.failures.len(), 2);
    let first = &r.failures[0];
    assert_eq!(r.names.name(first.tool.unwrap()), "lookup");
    assert_eq!((first.touched, first.cases.len()), (8, 8));
    assert_eq!(first.drift.as_ref().unwrap().severity, Severity::Critical);
    assert_eq!((r.failures[1].touched, r.failures[1].cases.len()), (8, 0));
    // "search" was never emitted before, but it is in the catalog.
    assert_eq!(r.new_names.len(), 1);
    assert_eq!(r.new_names[0].name, "search");
    assert_eq!(r.new_names[0].hallucinated, Some(false));
    let calls = r
        .metrics
        .iter()
        .find(|m| m.metric == Metric::ToolCalls)
        .unwrap();
    assert_eq!(
        (
            calls.before_median,
            calls.after_median,
            calls.change.estimate
        ),
        (1.0, 1.0, 0.0)
    );
    assert_eq!(r.names.name(r.tool_moves[0].tool), "search");
    let text = text::render(&r, &r.outcome(), toolpin_report::Style { color: false });
    assert!(
        text.contains(
            "8 of 8 new failures called lookup, which drifted: description-changed (critical)"
        ),
        "{text}"
    );
    assert!(text.contains("verdict     regression"), "{text}");
}

#[test]
fn a_seen_name_is_not_new_and_a_made_up_one_is_named() {
    let mut names = Names::default();
    let before = vec![repeat(
        &mut names,
        &[("a", true, &["x"]), ("b", true, &["x"])],
    )];
    let after = vec![repeat(
        &mut names,
        &[("a", true, &["x", "y"]), ("b", true, &["zz"])],
    )];
    let seen: BTreeSet<String> = ["y".to_string()].into();
    let ctx = Context {
        catalog_tools: Some(["x".to_string(), "y".to_string()].into()),
        drift: BTreeMap::new(),
        seen: Some(&seen),
    };
    let r = compare(&before, &after, None, names, &ctx, opts());
    assert_eq!(r.new_names.len(), 1);
    assert_eq!(r.new_names[0].name, "zz");
    assert_eq!(r.new_names[0].hallucinated, Some(true));
    assert_eq!(r.verdict, Verdict::Noise);
    assert_eq!(r.outcome().basis, crate::verdict::Basis::NewToolNames);
    assert!(r.fails());
}

#[test]
fn one_sided_cases_are_listed_not_dropped() {
    let mut names = Names::default();
    let before = vec![repeat(&mut names, &[("a", true, &[]), ("gone", true, &[])])];
    let after = vec![repeat(&mut names, &[("a", true, &[]), ("new", false, &[])])];
    let r = compare(&before, &after, None, names, &Context::default(), opts());
    assert_eq!(r.case_ids(Flip::OnlyBefore).len(), 1);
    assert_eq!(r.case_ids(Flip::OnlyAfter).len(), 1);
    assert_eq!(r.pass.paired, 1);
    let text = text::render(&r, &r.outcome(), toolpin_report::Style { color: false });
    assert!(
        text.contains("only before: 1 cases") && text.contains("gone"),
        "{text}"
    );
    assert!(
        text.contains("only after: 1 cases") && text.contains("new  — → 0/1"),
        "{text}"
    );
    let doc = json::render(&r, &r.outcome());
    assert_eq!(doc["cases"]["only_after"], 1);
}

/// Repeats where every case passes 4 of 5 on both sides, against repeats
/// where 20 of 100 cases drop to 1 of 5.
fn flaky(names: &mut Names, drop: usize, seed: usize) -> Vec<Repeat> {
    (0..5)
        .map(|k| {
            let runs: Vec<(String, bool)> = (0..100)
                .map(|i| {
                    let fails_at = (i + seed) % 5;
                    let passed = if i < drop {
                        k == fails_at
                    } else {
                        k != fails_at
                    };
                    (format!("c{i:03}"), passed)
                })
                .collect();
            let r: Vec<(&str, bool, &[&str])> = runs
                .iter()
                .map(|(c, p)| (c.as_str(), *p, &[][..]))
                .collect();
            repeat(names, &r)
        })
        .collect()
}

#[test]
fn repeats_use_the_paired_bootstrap_and_the_aa_spread() {
    let mut names = Names::default();
    let before = flaky(&mut names, 0, 0);
    let after = flaky(&mut names, 20, 0);
    let aa = flaky(&mut names, 0, 2);
    let r = compare(
        &before,
        &after,
        Some(&aa),
        names.clone(),
        &Context::default(),
        opts(),
    );
    assert_eq!(r.pass.method, Method::Permutation);
    assert!(
        (r.pass.delta.estimate - (-0.12)).abs() < 1e-9,
        "{:?}",
        r.pass.delta
    );
    assert!(r.pass.delta.high < 0.0);
    let aa = r.aa.as_ref().unwrap();
    assert_eq!(aa.delta.estimate, 0.0);
    assert_eq!(r.verdict, Verdict::Regression);
    assert!(
        r.detectable > 0.0 && r.detectable < 0.12,
        "{}",
        r.detectable
    );
    // The same change on 1 of 5 cases cannot be tested, and that case
    // did not fail on every run: no regression.
    let mut names = Names::default();
    let before: Vec<Repeat> = flaky(&mut names, 0, 0)
        .into_iter()
        .map(|mut r| {
            r.cases.truncate(5);
            r
        })
        .collect();
    let after: Vec<Repeat> = flaky(&mut names, 1, 0)
        .into_iter()
        .map(|mut r| {
            r.cases.truncate(5);
            r
        })
        .collect();
    let small = compare(&before, &after, None, names, &Context::default(), opts());
    assert_eq!(small.verdict, Verdict::Untested);
    assert_eq!(small.pass.changed, 1);
    assert!(small.failed_every_run.is_empty());
    assert!(!small.fails());
    assert!(small.detectable > 0.5);
}

#[test]
fn the_report_is_reproducible_for_a_seed() {
    let mut names = Names::default();
    let before = flaky(&mut names, 0, 0);
    let after = flaky(&mut names, 3, 1);
    let report = || {
        let r = compare(
            &before,
            &after,
            None,
            names.clone(),
            &Context::default(),
            opts(),
        );
        json::render(&r, &r.outcome())
    };
    let (a, b) = (report(), report());
    assert_eq!(a, b);
    assert_eq!(a["seed"], 11);
}

#[test]
fn markdown_stays_within_the_comment_budget() {
    let mut names = Names::default();
    let n = 20_000;
    let mk = |names: &mut Names, fail: bool| {
        let ids: Vec<String> = (0..n)
            .map(|i| format!("a-rather-long-case-identifier-{i:06}"))
            .collect();
        let runs: Vec<(&str, bool, &[&str])> = ids
            .iter()
            .map(|c| (c.as_str(), !fail, &["t"][..]))
            .collect();
        vec![repeat(names, &runs)]
    };
    let before = mk(&mut names, false);
    let after = mk(&mut names, true);
    let r = compare(
        &before,
        &after,
        None,
        names,
        &Context::default(),
        Options {
            seed: 1,
            resamples: 200,
        },
    );
    let md = markdown::render(&r, &r.outcome());
    assert!(md.len() <= markdown::BUDGET, "{}", md.len());
    assert!(md.contains("20000 new failures"), "{}", &md[..500]);
}

#[test]
fn calls_are_counted_per_tool_over_the_runs() {
    // One case calling 5,000 distinct names in a scrambled order on each of
    // three runs, and `x` twice: each name counted 3 times, `x` 6, sorted
    // by id, once each (a search per call made this quadratic in the
    // distinct names).
    let mut names = Names::default();
    let x = names.id("x");
    let ids: Vec<u32> = (0..5000).map(|i| names.id(&format!("t{i:04}"))).collect();
    let runs: Vec<Repeat> = (0..3u32)
        .map(|k| {
            let mut run = CaseRun::new("c", true);
            let mut calls: Vec<u32> = (0..5000)
                .map(|i| ids[(i * 7919 + k as usize * 13) % 5000])
                .collect();
            calls.extend([x, x]);
            run.tool_calls = Some(calls);
            Repeat {
                sources: Vec::new(),
                cases: vec![run],
            }
        })
        .collect();
    let r = compare(&runs, &runs, None, names, &Context::default(), opts());
    let tally = r.cases[0].before.as_ref().unwrap();
    assert_eq!(tally.call_runs, 3);
    assert_eq!(tally.calls, 3 * 5002);
    assert_eq!(tally.tools.len(), 5001);
    assert!(tally.tools.windows(2).all(|w| w[0].0 < w[1].0));
    assert_eq!(tally.tools[x as usize], (x, 6));
    assert!(tally
        .tools
        .iter()
        .filter(|(id, _)| *id != x)
        .all(|(_, n)| *n == 3));
    assert_eq!(r.cases[0].touched().len(), 5001);
}
