//! A contract run's differences as a drift [`Comparison`], so that they go
//! through the same policy, eval routing and report formats as declaration
//! drift, with the same exit codes.
//!
//! Each [`Difference`] becomes one [`Finding`] of its behavioural rule, on
//! the tool the call was made to; the finding names the call
//! ([`Finding::call`]) and its pointer is into the call's result.

use std::collections::{BTreeMap, BTreeSet};

use toolpin_drift::finding::{Fingerprints, Summary};
use toolpin_drift::{rule, Comparison, Finding, Severity};

use crate::behaviour::Difference;

/// The comparison of a run: `differences` in tool, call, pointer and rule
/// order; `called` every `server/tool` a call was made to (for the counts
/// of tools that behave as recorded); `before` the snapshot's fingerprint,
/// `after` that of the observations just made.
pub fn comparison(
    differences: &[Difference],
    called: &BTreeSet<String>,
    before: &str,
    after: &str,
) -> Comparison {
    let mut findings: Vec<Finding> = differences.iter().map(finding).collect();
    findings.sort_by(|a, b| {
        (&a.server, &a.tool, &a.call, &a.pointer, a.rule)
            .cmp(&(&b.server, &b.tool, &b.call, &b.pointer, b.rule))
    });
    let changed: BTreeSet<(&str, &str)> = findings
        .iter()
        .map(|f| (f.server.as_str(), f.tool.as_str()))
        .collect();
    let mut by_severity = BTreeMap::new();
    for sev in Severity::ALL {
        by_severity.insert(
            sev.name(),
            findings.iter().filter(|f| f.severity == sev).count(),
        );
    }
    let summary = Summary {
        tools_added: 0,
        tools_removed: 0,
        tools_changed: changed.len(),
        tools_unchanged: called.len().saturating_sub(changed.len()),
        findings: findings.len(),
        by_severity,
    };
    Comparison {
        findings,
        summary,
        fingerprints: Fingerprints {
            before: before.to_string(),
            after: after.to_string(),
        },
        // No declaration moved: nothing here is accepted with
        // `toolpin accept`; a behaviour change is re-recorded.
        tools: Vec::new(),
    }
}

/// The rule a difference names; one the registry lacks (a bug, caught by
/// the tests) is reported as a failed contract rather than dropped.
fn rule_of(id: &str) -> &'static rule::Rule {
    rule::by_id(id)
        .or_else(|| rule::by_id("contract-failed"))
        .expect("contract-failed is in the registry (tests/rules.rs)")
}

fn finding(d: &Difference) -> Finding {
    let (tool_key, call) = d.call.split_once('#').unwrap_or((&d.call, ""));
    let (server, tool) = tool_key.split_once('/').unwrap_or(("", tool_key));
    let mut f = Finding::new(
        rule_of(d.rule),
        server,
        tool,
        d.pointer.clone().unwrap_or_default(),
    )
    .message(if call.is_empty() {
        d.message.clone()
    } else {
        format!("{call}: {}", d.message)
    })
    .values(d.before.as_ref(), d.after.as_ref());
    if !call.is_empty() {
        f = f.call(call);
    }
    // A result goes into the model's context as it is.
    f.model_reads = true;
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    fn diff(rule: &'static str, call: &str, pointer: Option<&str>) -> Difference {
        Difference {
            rule,
            call: call.to_string(),
            pointer: pointer.map(str::to_string),
            message: "it moved".to_string(),
            ..Difference::default()
        }
    }

    #[test]
    fn differences_become_findings_of_their_rules_in_order() {
        let called = BTreeSet::from(["orders/get_order".to_string(), "orders/search".to_string()]);
        let c = comparison(
            &[
                diff("latency-regressed", "orders/search#default", None),
                diff(
                    "result-count-changed",
                    "orders/search#default",
                    Some("/rows"),
                ),
                diff("error-class-changed", "orders/get_order#bad", None),
            ],
            &called,
            &"a".repeat(64),
            &"b".repeat(64),
        );
        let got: Vec<(&str, &str, Option<&str>, &str, &str)> = c
            .findings
            .iter()
            .map(|f| {
                (
                    f.rule,
                    f.tool.as_str(),
                    f.call.as_deref(),
                    f.pointer.as_str(),
                    f.message.as_str(),
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                (
                    "error-class-changed",
                    "get_order",
                    Some("bad"),
                    "",
                    "bad: it moved"
                ),
                (
                    "latency-regressed",
                    "search",
                    Some("default"),
                    "",
                    "default: it moved"
                ),
                (
                    "result-count-changed",
                    "search",
                    Some("default"),
                    "/rows",
                    "default: it moved"
                ),
            ]
        );
        let f = &c.findings[2];
        assert_eq!(
            (f.server.as_str(), f.kind, f.severity),
            ("orders", toolpin_drift::Kind::Behavioural, Severity::High)
        );
        assert!(f.model_reads);
        assert_eq!(c.summary.tools_changed, 2);
        assert_eq!(c.summary.tools_unchanged, 0);
        assert_eq!(c.summary.findings, 3);
        assert_eq!(c.summary.by_severity["high"], 2);
        assert!(c.tools.is_empty());
    }

    #[test]
    fn every_rule_the_comparison_emits_is_registered() {
        for id in [
            "result-field-missing",
            "result-value-set-changed",
            "result-count-changed",
            "result-format-changed",
            "result-order-changed",
            "default-behaviour-changed",
            "latency-regressed",
            "error-class-changed",
            "result-nonconformant",
            "contract-failed",
        ] {
            let f = finding(&diff(id, "s/t#c", None));
            assert_eq!(f.rule, id);
        }
    }

    #[test]
    fn nothing_moved_is_clean() {
        let called = BTreeSet::from(["s/t".to_string()]);
        let c = comparison(&[], &called, &"a".repeat(64), &"a".repeat(64));
        assert!(c.is_clean());
        assert_eq!(c.summary.tools_unchanged, 1);
    }
}
