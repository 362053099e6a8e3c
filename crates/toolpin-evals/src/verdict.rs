//! The one verdict on an eval: did it do worse on the live catalog than on
//! the pinned one? `toolpin evals run` (for each eval) and `toolpin compare`
//! both ask [`decide`], with whatever evidence they have: the runs' exit
//! codes (`evals run` only), the per-case comparison of the result files the
//! harness wrote, over however many repeats and A/A runs there were.
//!
//! The rules, in the order they apply, are the outcomes table of
//! docs/evals.md ("What decides"), one row per [`Basis`]; a test in
//! crates/toolpin/tests/evals.rs reads that table and runs every row.
//!
//! 1. The live runs emitted a tool name never seen: regressed.
//! 2. Six or more cases changed, so the significance test can reject "no
//!    change" at 5%: the test decides. A significant drop (beyond the A/A
//!    spread, with A/A runs) regressed; noise, an improvement or a drop
//!    within the A/A spread did not. The cases account for the exit codes.
//! 3. Fewer cases changed: the test cannot reject whatever they did, so it
//!    is not asked. A case that passed on every run of the pinned catalog
//!    (the pinned runs and the A/A runs) and failed on every live run is a
//!    regression however few cases the suite has, unless something moved
//!    the other way (a case did better live, or the A/A runs moved a case):
//!    that is how chance moves a suite, and a few failures are within it.
//! 4. Otherwise (no result files, or too few changes and no such case, or
//!    something moved the other way), the exit codes: passed (exit 0) in
//!    most pinned runs and failed in most live runs is a regression.
//! 5. Anything else did not regress.

use crate::compare::text::{p_value, pct};
use crate::compare::{MovedBack, Report, Verdict};
use crate::run::RunResult;

/// What decided an outcome: a row of the outcomes table in docs/evals.md.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Basis {
    NewToolNames,
    SignificantDrop,
    NoSignificantDrop,
    NewFailuresEveryRun,
    ExitCodes,
    NoRegression,
}

impl Basis {
    /// Every basis, in the order the rules apply.
    pub const ALL: [Basis; 6] = [
        Basis::NewToolNames,
        Basis::SignificantDrop,
        Basis::NoSignificantDrop,
        Basis::NewFailuresEveryRun,
        Basis::ExitCodes,
        Basis::NoRegression,
    ];

    /// The name in summary.json and the compare document (`outcome.basis`).
    pub fn key(self) -> &'static str {
        match self {
            Basis::NewToolNames => "new-tool-names",
            Basis::SignificantDrop => "significant-drop",
            Basis::NoSignificantDrop => "no-significant-drop",
            Basis::NewFailuresEveryRun => "new-failures-every-run",
            Basis::ExitCodes => "exit-codes",
            Basis::NoRegression => "no-regression",
        }
    }

    /// Whether an outcome on this basis is a regression (exit 1).
    pub fn regressed(self) -> bool {
        matches!(
            self,
            Basis::NewToolNames
                | Basis::SignificantDrop
                | Basis::NewFailuresEveryRun
                | Basis::ExitCodes
        )
    }
}

/// An eval's outcome: what decided it, and what was seen, for people.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    pub basis: Basis,
    pub reason: String,
}

impl Outcome {
    pub fn regressed(&self) -> bool {
        self.basis.regressed()
    }
}

/// `outcome` in summary.json and in the compare document.
pub fn json(outcome: &Outcome) -> serde_json::Value {
    serde_json::json!({
        "regressed": outcome.regressed(),
        "basis": outcome.basis.key(),
        "reason": outcome.reason,
    })
}

/// The runs' exit statuses, by side (`evals run`; `toolpin compare` has
/// none).
#[derive(Clone, Copy, Debug)]
pub struct Exits<'a> {
    pub pinned: &'a [RunResult],
    pub live: &'a [RunResult],
}

/// Passed on the pinned catalog in most runs and failed on the live one in
/// most: with one run each, passed pinned and failed live.
pub fn exit_code_regression(pinned: &[RunResult], live: &[RunResult]) -> bool {
    !pinned.is_empty() && passing(pinned) && !passing(live)
}

fn passing(runs: &[RunResult]) -> bool {
    2 * passed(runs) > runs.len()
}

fn passed(runs: &[RunResult]) -> usize {
    runs.iter().filter(|r| r.status.passed()).count()
}

fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// The outcome of an eval from the evidence there is (see the module
/// documentation for the rules).
pub fn decide(comparison: Option<&Report>, exits: Option<Exits>) -> Outcome {
    let words = if exits.is_some() {
        Words::EVALS
    } else {
        Words::COMPARE
    };
    if let Some(r) = comparison {
        if let Some(outcome) = from_comparison(r) {
            return outcome;
        }
    }
    // What the result files showed, when they leave it to the exit codes.
    let seen = comparison.map(|r| untested(r, words));
    if let Some(e) = exits {
        if exit_code_regression(e.pinned, e.live) {
            let codes = if e.pinned.len() == 1 && e.live.len() == 1 {
                "passed on the pinned catalog, failed on the live one".to_string()
            } else {
                format!(
                    "passed in {}/{} pinned runs, failed in {}/{} live runs",
                    passed(e.pinned),
                    e.pinned.len(),
                    e.live.len() - passed(e.live),
                    e.live.len()
                )
            };
            return Outcome {
                basis: Basis::ExitCodes,
                reason: match seen {
                    Some(seen) => format!("{codes}; in the result files {seen}"),
                    None => codes,
                },
            };
        }
    }
    let reason = match (seen, exits) {
        (Some(seen), _) => seen,
        (None, Some(_)) => "the live runs did as well as the pinned ones".to_string(),
        (None, None) => "no evidence of a regression".to_string(),
    };
    Outcome {
        basis: Basis::NoRegression,
        reason,
    }
}

/// How the two sides are named: `evals run` runs the pinned and the live
/// catalog, `compare` reads before and after.
#[derive(Clone, Copy)]
struct Words {
    before: &'static str,
    after: &'static str,
}

impl Words {
    const EVALS: Words = Words {
        before: "pinned",
        after: "live",
    };
    const COMPARE: Words = Words {
        before: "before",
        after: "after",
    };
}

/// What a comparison whose test could not decide showed, when no rule of
/// its own decides: nothing changed, or why the cases that failed on every
/// after run are not taken at their word.
fn untested(r: &Report, w: Words) -> String {
    let changed = r.pass.changed;
    if changed == 0 {
        return "no case changed".to_string();
    }
    let every = r.failed_every_run.len();
    let few = format!(
        "{} changed, too few for a significance test",
        count(changed, "case", "cases")
    );
    match (&r.moved_back, every) {
        (_, 0) => format!(
            "{few}, and none failed on every {} run after passing on every {} one",
            w.after, w.before
        ),
        (Some(back), _) => format!(
            "{few}; {} failed on every {} run, but {}, as chance moves a suite",
            count(every, "case", "cases"),
            w.after,
            match back {
                MovedBack::Better(id) => format!("{id} did better {} than {}", w.after, w.before),
                MovedBack::Aa(id) => format!("{id} did differently on the A/A runs"),
            }
        ),
        // Not reached: from_comparison decides this one.
        (None, _) => few,
    }
}

/// Rules 1 to 3; `None` when the comparison leaves it to the exit codes.
fn from_comparison(r: &Report) -> Option<Outcome> {
    let p = &r.pass;
    let rates = format!("{} → {}", pct(p.before), pct(p.after));
    let drop = r.verdict == Verdict::Regression;
    if !r.new_names.is_empty() {
        return Some(Outcome {
            basis: Basis::NewToolNames,
            reason: if drop {
                "a significant drop in the pass rate, and tool names never seen".into()
            } else {
                "tool names never seen".into()
            },
        });
    }
    if p.testable() {
        let (basis, reason) = match r.verdict {
            Verdict::Regression => (
                Basis::SignificantDrop,
                "a significant drop in the pass rate".to_string(),
            ),
            Verdict::Improvement => (
                Basis::NoSignificantDrop,
                format!("an improvement, {rates} ({})", p_value(p.p_value)),
            ),
            _ if p.significant => (
                Basis::NoSignificantDrop,
                format!(
                    "a change within the A/A spread, {rates} ({})",
                    p_value(p.p_value)
                ),
            ),
            _ => (
                Basis::NoSignificantDrop,
                format!(
                    "not distinguishable from noise, {rates} ({})",
                    p_value(p.p_value)
                ),
            ),
        };
        return Some(Outcome { basis, reason });
    }
    // With nothing moving the other way (no case better after, and no case
    // moved by the A/A runs), the cases that failed on every after run are
    // what was seen, however few.
    let every = r.failed_every_run.len();
    if every > 0 && r.moved_back.is_none() {
        let runs = if r.repeats[0] > 1 || r.repeats[1] > 1 {
            ", every repeat"
        } else if r.aa_repeats > 0 {
            ", every run"
        } else {
            ""
        };
        return Some(Outcome {
            basis: Basis::NewFailuresEveryRun,
            reason: format!(
                "{}{runs}; too few cases for a significance test",
                count(every, "new failure", "new failures")
            ),
        });
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::{CaseRun, Names, Repeat};
    use crate::run::Status;
    use std::time::Duration;

    fn run(status: Status) -> RunResult {
        RunResult {
            status,
            duration: Duration::from_millis(10),
        }
    }

    #[test]
    fn only_pass_then_fail_is_a_regression() {
        let cases = [
            (Status::Exit(0), Status::Exit(0), false),
            (Status::Exit(0), Status::Exit(1), true),
            (Status::Exit(0), Status::Timeout, true),
            (Status::Exit(0), Status::Signal(9), true),
            (Status::Exit(1), Status::Exit(0), false),
            (Status::Exit(1), Status::Exit(2), false),
            (Status::Timeout, Status::Timeout, false),
        ];
        for (pinned, live, want) in cases {
            assert_eq!(
                exit_code_regression(&[run(pinned)], &[run(live)]),
                want,
                "{pinned:?} → {live:?}"
            );
            let outcome = decide(
                None,
                Some(Exits {
                    pinned: &[run(pinned)],
                    live: &[run(live)],
                }),
            );
            assert_eq!(outcome.regressed(), want, "{outcome:?}");
        }
    }

    #[test]
    fn with_repeats_most_runs_decide() {
        let (ok, bad) = (run(Status::Exit(0)), run(Status::Exit(1)));
        let three =
            |a: &RunResult, b: &RunResult, c: &RunResult| vec![a.clone(), b.clone(), c.clone()];
        assert!(exit_code_regression(
            &three(&ok, &ok, &bad),
            &three(&bad, &bad, &ok)
        ));
        assert!(!exit_code_regression(
            &three(&ok, &ok, &bad),
            &three(&ok, &bad, &ok)
        ));
        assert!(!exit_code_regression(
            &three(&ok, &bad, &bad),
            &three(&bad, &bad, &bad)
        ));
        let outcome = decide(
            None,
            Some(Exits {
                pinned: &three(&ok, &ok, &bad),
                live: &three(&bad, &bad, &ok),
            }),
        );
        assert_eq!(
            outcome,
            Outcome {
                basis: Basis::ExitCodes,
                reason: "passed in 2/3 pinned runs, failed in 2/3 live runs".into()
            }
        );
    }

    /// `n` cases per repeat; `fails(repeat, case)` says which fail.
    fn side(n: usize, repeats: u32, fails: impl Fn(u32, usize) -> bool) -> Vec<Repeat> {
        (0..repeats)
            .map(|k| Repeat {
                sources: Vec::new(),
                cases: (0..n)
                    .map(|i| CaseRun::new(format!("c{i:02}"), !fails(k, i)))
                    .collect(),
            })
            .collect()
    }

    fn report(before: &[Repeat], after: &[Repeat], aa: Option<&[Repeat]>) -> Report {
        crate::compare::compare(
            before,
            after,
            aa,
            Names::default(),
            &crate::compare::Context::default(),
            crate::compare::Options {
                seed: 1,
                resamples: 2000,
            },
        )
    }

    #[test]
    fn cases_failing_every_live_run_regress_however_small_the_suite() {
        // Issue 32: 12 cases, 4 failing on every live run, the A/A runs
        // as stable as the pinned ones. The test cannot reject anything
        // with 4 cases changed (p = 0.125 at best), which is no reason to
        // call it noise.
        let pinned = side(12, 2, |_, _| false);
        let live = side(12, 2, |_, i| i < 4);
        let aa = side(12, 2, |_, _| false);
        let r = report(&pinned, &live, Some(&aa));
        assert_eq!(r.verdict, Verdict::Untested);
        assert_eq!((r.pass.changed, r.failed_every_run.len()), (4, 4));
        let want = Outcome {
            basis: Basis::NewFailuresEveryRun,
            reason: "4 new failures, every repeat; too few cases for a significance test".into(),
        };
        assert_eq!(r.outcome(), want);
        // The exit codes agree (pinned 0, live 1), and do not change it.
        let (ok, bad) = (run(Status::Exit(0)), run(Status::Exit(1)));
        let exits = Exits {
            pinned: &[ok.clone(), ok.clone()],
            live: &[bad.clone(), bad.clone()],
        };
        assert_eq!(decide(Some(&r), Some(exits)), want);
        // A case that failed once on the unchanged catalog (an A/A run) is
        // not a case that passed on every pinned run, and it shows that the
        // suite moves by chance: the other three are not taken at their
        // word, and the exit codes decide.
        let aa = side(12, 2, |k, i| k == 1 && i == 0);
        let r = report(&pinned, &live, Some(&aa));
        assert_eq!(r.failed_every_run.len(), 3);
        assert_eq!(r.moved_back, Some(MovedBack::Aa("c00".into())));
        assert_eq!(
            r.outcome(),
            Outcome {
                basis: Basis::NoRegression,
                reason: "4 cases changed, too few for a significance test; 3 cases failed on every after run, but c00 did differently on the A/A runs, as chance moves a suite".into()
            }
        );
        let outcome = decide(Some(&r), Some(exits));
        assert_eq!(outcome.basis, Basis::ExitCodes);
        assert_eq!(outcome.reason, "passed in 2/2 pinned runs, failed in 2/2 live runs; in the result files 4 cases changed, too few for a significance test; 3 cases failed on every live run, but c00 did differently on the A/A runs, as chance moves a suite");
        // A case doing better live than pinned is the same sign.
        let live_back = side(12, 2, |_, i| i < 3);
        let pinned_back = side(12, 2, |_, i| i == 11);
        let r = report(&pinned_back, &live_back, None);
        assert_eq!(r.moved_back, Some(MovedBack::Better("c11".into())));
        assert_eq!(r.outcome().basis, Basis::NoRegression);
        // One run per side: the one new failure is what was seen.
        let r = report(
            &side(60, 1, |_, i| i == 3),
            &side(60, 1, |_, i| i == 3 || i == 20),
            None,
        );
        assert_eq!(
            r.outcome().reason,
            "1 new failure; too few cases for a significance test"
        );
        assert!(r.fails());
    }

    #[test]
    fn too_few_changes_and_no_case_failing_every_run_leave_it_to_the_exit_codes() {
        // A flaky case (fails 1 of 3 live runs): no case failed on every
        // live run, so the exit codes decide.
        let pinned = side(12, 3, |_, _| false);
        let live = side(12, 3, |k, i| k == 0 && i == 0);
        let r = report(&pinned, &live, None);
        assert_eq!(r.verdict, Verdict::Untested);
        assert!(r.failed_every_run.is_empty());
        assert_eq!(r.outcome().basis, Basis::NoRegression);
        let ok = run(Status::Exit(0));
        let bad = run(Status::Exit(1));
        let exits = Exits {
            pinned: &[ok.clone(), ok.clone(), ok.clone()],
            live: &[bad.clone(), ok.clone(), ok.clone()],
        };
        assert_eq!(decide(Some(&r), Some(exits)).basis, Basis::NoRegression);
        // A live run that crashed after writing its records: the cases
        // show nothing, the exit codes do.
        let same = side(12, 1, |_, _| false);
        let r = report(&same, &same, None);
        let outcome = decide(
            Some(&r),
            Some(Exits {
                pinned: std::slice::from_ref(&ok),
                live: std::slice::from_ref(&bad),
            }),
        );
        assert_eq!(outcome.basis, Basis::ExitCodes);
        assert!(
            outcome.reason.starts_with("passed on the pinned catalog, failed on the live one; in the result files no case changed"),
            "{}",
            outcome.reason
        );
    }

    #[test]
    fn with_enough_changes_the_test_decides_and_the_exit_codes_are_explained() {
        // 30 cases × 3 repeats: 6 cases pass one more live run, 12 one
        // fewer. The pinned runs passed (exit 0) in 2 of 3, the live runs
        // in 1 of 3, but 18 cases changed both ways: noise.
        let pinned = side(30, 3, |k, i| k == 2 && i < 6);
        let live = side(30, 3, |k, i| {
            (k == 1 && (6..12).contains(&i)) || (k == 2 && (12..18).contains(&i))
        });
        let r = report(&pinned, &live, None);
        assert_eq!(r.pass.changed, 18);
        assert_eq!(r.verdict, Verdict::Noise);
        let (ok, bad) = (run(Status::Exit(0)), run(Status::Exit(1)));
        let exits = Exits {
            pinned: &[ok.clone(), ok.clone(), bad.clone()],
            live: &[ok.clone(), bad.clone(), bad.clone()],
        };
        assert!(exit_code_regression(exits.pinned, exits.live));
        let outcome = decide(Some(&r), Some(exits));
        assert_eq!(outcome.basis, Basis::NoSignificantDrop);
        assert!(
            outcome.reason.starts_with("not distinguishable from noise"),
            "{}",
            outcome.reason
        );
        // Six cases failing every live run: significant.
        let r = report(&side(30, 1, |_, _| false), &side(30, 1, |_, i| i < 6), None);
        assert_eq!(r.outcome().basis, Basis::SignificantDrop);
    }

    #[test]
    fn keys_are_distinct_and_only_four_regress() {
        let keys: std::collections::BTreeSet<&str> = Basis::ALL.iter().map(|b| b.key()).collect();
        assert_eq!(keys.len(), Basis::ALL.len());
        assert_eq!(Basis::ALL.iter().filter(|b| b.regressed()).count(), 4);
    }
}
