//! What `record` and `run` do around the calls: the plan of calls a
//! contracts file asks for ([`plan`]), which tools may be called on a
//! session given what it lists ([`Gate`]), each call's repeats observed
//! ([`seen`]), the snapshot `record` writes ([`snapshot`]) and the
//! judgement `run` makes ([`judge`]). The calls themselves are made by the
//! caller (the CLI, through `toolpin_capture::call`), in plan order, and
//! handed back aligned with the plan.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};
use toolpin_manifest::{Catalog, PinnedTool};

use crate::behaviour::{self, Difference, Observation, Outcome, Snapshot, Volatile};
use crate::file::{self, SideEffects};
use crate::Contracts;

/// The rule of a contract call that was not made ([`Refusal`]).
pub const REFUSED_RULE: &str = "contract-call-refused";

/// Decides, on each session, which contracted tools may be called, from
/// what the session lists (docs/contracts.md, "Safety rules"): a tool is
/// called only while its live definition is the pinned one (the same
/// fingerprint, pinned the way the lockfile pins it), or is still
/// [`file::read_only`], or its contract says `side_effects = "allowed"`;
/// never when the session does not list it. Everything else is a
/// [`Refusal`].
pub struct Gate<'a> {
    /// By `server/tool`: the contract's side effects and the pin.
    tools: BTreeMap<String, (SideEffects, &'a PinnedTool)>,
}

/// Why a tool's calls were not made.
#[derive(Clone, Debug, PartialEq)]
pub struct Refusal {
    /// `server/tool`.
    pub tool_key: String,
    /// The session does not list the tool (else: it lists another
    /// definition, which is not read-only).
    pub unlisted: bool,
    /// In words, for messages: what the session served that stops the
    /// calls.
    pub reason: String,
    /// The pinned and the live annotations, when the tool drifted.
    pub before: Option<Value>,
    pub after: Option<Value>,
}

impl Refusal {
    /// `drifted` or `unavailable`, for a line on stderr.
    pub fn label(&self) -> &'static str {
        if self.unlisted {
            "unavailable"
        } else {
            "drifted"
        }
    }
}

impl<'a> Gate<'a> {
    pub fn new(contracts: &Contracts, catalog: &'a Catalog) -> Gate<'a> {
        let tools = contracts
            .tools
            .iter()
            .filter_map(|c| {
                let (server, tool) = c.key.split_once('/')?;
                let pinned = catalog.servers.get(server)?.tools.get(tool)?;
                Some((c.key.clone(), (c.side_effects, pinned)))
            })
            .collect();
        Gate { tools }
    }

    /// Whether `server`'s tool `tool` (its name as pinned) may be called,
    /// given its definition `live` on the session, pinned as the lockfile
    /// pins it (`None`: the session does not list it).
    pub fn admit(
        &self,
        server: &str,
        tool: &str,
        live: Option<&PinnedTool>,
    ) -> Result<(), Refusal> {
        let tool_key = format!("{server}/{tool}");
        let refusal = |unlisted, reason: String, before, after| Refusal {
            tool_key: tool_key.clone(),
            unlisted,
            reason,
            before,
            after,
        };
        let Some((side_effects, pinned)) = self.tools.get(&tool_key) else {
            return Err(refusal(
                false,
                "no contract of the file names it".into(),
                None,
                None,
            ));
        };
        let Some(live) = live else {
            return Err(refusal(
                true,
                "the server no longer lists it (tools/list on this session)".into(),
                None,
                None,
            ));
        };
        if live.fingerprint == pinned.fingerprint || *side_effects == SideEffects::Allowed {
            return Ok(());
        }
        let now = live.value();
        let Some(why) = file::not_read_only(&now) else {
            // Drifted, and still read-only: safe to call; `check` reports
            // the declaration's drift.
            return Ok(());
        };
        let annotations = |v: &Value| v.get("annotations").cloned().unwrap_or(Value::Null);
        Err(refusal(
            false,
            format!("its live definition is no longer the pinned one and is not read-only: {why}"),
            Some(annotations(&pinned.value())),
            Some(annotations(&now)),
        ))
    }
}

/// The differences that report `refused` tools, one per tool, on the rule
/// [`REFUSED_RULE`], counting the calls of `plan` not made.
pub fn refused(plan: &[Planned], refused: &[Refusal]) -> Vec<Difference> {
    refused
        .iter()
        .map(|r| {
            let calls = plan.iter().filter(|p| p.tool_key == r.tool_key).count();
            Difference {
                rule: REFUSED_RULE,
                call: r.tool_key.clone(),
                pointer: r.before.as_ref().map(|_| "/annotations".to_string()),
                message: format!(
                    "{} not made: {}; `toolpin check` shows the drift",
                    if calls == 1 {
                        "1 call".to_string()
                    } else {
                        format!("{calls} calls")
                    },
                    r.reason
                ),
                before: r.before.clone(),
                after: r.after.clone(),
            }
        })
        .collect()
}

/// What a planned call is for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Role {
    /// A golden call: observed into the snapshot, judged against it and
    /// against its `expect`.
    Call,
    /// One side of a default probe: the call without `parameter`
    /// (`explicit: false`) or with its pinned default (`explicit: true`).
    /// Compared with each other within the run, never with the snapshot's
    /// calls.
    Probe { parameter: String, explicit: bool },
}

/// One call to make.
#[derive(Clone, Debug)]
pub struct Planned {
    /// `server/tool#call`, or for a probe `server/tool#probe:PARAMETER`.
    pub key: String,
    /// `server/tool`.
    pub tool_key: String,
    pub server: String,
    /// The namespaced tool name, as pinned.
    pub tool: String,
    pub arguments: Map<String, Value>,
    pub timeout_ms: u64,
    pub repeats: u64,
    pub volatile: Volatile,
    pub role: Role,
    /// For a golden call: its contract's and its own index in the file
    /// (`contracts.tools[a].calls[b]`).
    at: Option<(usize, usize)>,
}

/// The calls the enabled contracts ask for, in file order: each tool's
/// golden calls, then its default probes (without, then with).
pub fn plan(contracts: &Contracts) -> Vec<Planned> {
    let mut out = Vec::new();
    for (a, contract) in contracts
        .tools
        .iter()
        .enumerate()
        .filter(|(_, c)| c.enabled)
    {
        let Some((server, tool)) = contract.key.split_once('/') else {
            continue;
        };
        let volatile = contract.volatile_values();
        let base = |key: String, arguments, timeout_ms, repeats, role, at| Planned {
            key,
            tool_key: contract.key.clone(),
            server: server.to_string(),
            tool: tool.to_string(),
            arguments,
            timeout_ms,
            repeats,
            volatile: volatile.clone(),
            role,
            at,
        };
        for (b, call) in contract.calls.iter().enumerate().filter(|(_, c)| c.enabled) {
            out.push(base(
                format!("{}#{}", contract.key, call.name),
                contract.call_arguments(call),
                call.timeout_ms,
                call.repeats.clamp(1, crate::file::MAX_REPEATS),
                Role::Call,
                Some((a, b)),
            ));
        }
        for probe in contract.default_probes.iter().filter(|p| p.enabled) {
            let (without, with) = contract.probe_arguments(probe);
            for (arguments, explicit) in [(without, false), (with, true)] {
                out.push(base(
                    behaviour::probe_key(&contract.key, &probe.parameter),
                    arguments,
                    probe.timeout_ms,
                    1,
                    Role::Probe {
                        parameter: probe.parameter.clone(),
                        explicit,
                    },
                    None,
                ));
            }
        }
    }
    out
}

/// One planned call, observed over its repeats.
#[derive(Clone, Debug)]
pub struct Seen {
    pub observation: Observation,
    /// The first successful result (not an `isError` one), for `expect`.
    pub payload: Option<Value>,
}

/// Observes the repeats of `planned` (each with its latency in ms).
pub fn seen(planned: &Planned, outcomes: Vec<(Outcome, f64)>) -> Seen {
    let observation = behaviour::observe(&outcomes, &planned.volatile);
    // The first successful result is kept (moved, not copied).
    let payload = outcomes.into_iter().find_map(|(o, _)| match o {
        Outcome::Result(r) if r.get("isError") != Some(&Value::Bool(true)) => Some(r),
        _ => None,
    });
    Seen {
        observation,
        payload,
    }
}

/// Each probe's two sides, by probe key: (without, with).
fn probes<'a>(
    plan: &'a [Planned],
    seen: &'a [Option<Seen>],
) -> BTreeMap<&'a str, (&'a str, Option<&'a Observation>, Option<&'a Observation>)> {
    let mut out: BTreeMap<&str, (&str, Option<&Observation>, Option<&Observation>)> =
        BTreeMap::new();
    for (p, s) in plan.iter().zip(seen) {
        if let Role::Probe {
            parameter,
            explicit,
        } = &p.role
        {
            let entry = out.entry(&p.key).or_insert((parameter, None, None));
            let o = s.as_ref().map(|s| &s.observation);
            if *explicit {
                entry.2 = o;
            } else {
                entry.1 = o;
            }
        }
    }
    out
}

/// The golden calls' observations, by key.
fn calls(plan: &[Planned], seen: &[Option<Seen>]) -> BTreeMap<String, Observation> {
    plan.iter()
        .zip(seen)
        .filter(|(p, _)| p.role == Role::Call)
        .filter_map(|(p, s)| Some((p.key.clone(), s.as_ref()?.observation.clone())))
        .collect()
}

/// The snapshot `record` writes, and a note for each default probe that
/// does not hold (the server does not do what its pinned default says;
/// `run` will not report it again as a change).
pub fn snapshot(plan: &[Planned], seen: &[Option<Seen>]) -> (Snapshot, Vec<String>) {
    let mut notes = Vec::new();
    let mut held = BTreeMap::new();
    for (key, (parameter, without, with)) in probes(plan, seen) {
        let (Some(without), Some(with)) = (without, with) else {
            continue;
        };
        let why = behaviour::probe_differs(parameter, without, with);
        if let Some(why) = &why {
            notes.push(format!("{key}: {why}"));
        }
        held.insert(key.to_string(), why.is_none());
    }
    (Snapshot::with_probes(calls(plan, seen), held), notes)
}

/// What a run found.
#[derive(Debug, Default)]
pub struct Judged {
    pub differences: Vec<Difference>,
    /// Calls the snapshot does not hold (added since `record`).
    pub unrecorded: Vec<String>,
    /// Every `server/tool` a call was made to.
    pub called: BTreeSet<String>,
    /// The fingerprint of what this run observed, as a snapshot's.
    pub fingerprint: String,
}

/// What one golden call showed.
#[derive(Debug)]
pub struct CallJudgement {
    /// Whether the snapshot holds the call (one added since `record` is
    /// checked against its assertions only).
    pub recorded: bool,
    pub differences: Vec<Difference>,
}

/// Judges calls one at a time, so that a caller can judge each as it
/// arrives (while the server works on the next), then the run as a whole
/// ([`Judge::finish`]).
pub struct Judge<'a> {
    contracts: &'a Contracts,
    snapshot: &'a Snapshot,
    /// Per contract: its pinned outputSchema, compiled, when a call of it
    /// asserts `output_schema = true`.
    schemas: Vec<Option<crate::expect::OutputSchema>>,
}

impl<'a> Judge<'a> {
    pub fn new(contracts: &'a Contracts, catalog: &Catalog, snapshot: &'a Snapshot) -> Judge<'a> {
        let schemas = contracts
            .tools
            .iter()
            .map(|c| {
                let asserted = c.enabled
                    && c.calls.iter().any(|call| {
                        call.enabled
                            && call
                                .expect
                                .output_schema
                                .as_ref()
                                .is_some_and(|o| *o.get_ref())
                    });
                asserted
                    .then(|| crate::expect::output_schema(catalog, &c.key))
                    .flatten()
            })
            .collect();
        Judge {
            contracts,
            snapshot,
            schemas,
        }
    }

    /// The fingerprint of the snapshot judged against.
    pub fn snapshot_fingerprint(&self) -> &str {
        &self.snapshot.fingerprint
    }

    /// A golden call against its snapshot entry and its `expect`; `None`
    /// for a probe's side (probes are judged in pairs by [`Judge::finish`]).
    pub fn call(&self, planned: &Planned, seen: &Seen) -> Option<CallJudgement> {
        let (a, b) = planned.at?;
        let call = self.contracts.tools.get(a)?.calls.get(b)?;
        let key = planned.key.as_str();
        let recorded = self.snapshot.calls.get(key);
        let mut differences = match recorded {
            Some(recorded) => behaviour::compare(key, recorded, &seen.observation),
            None => Vec::new(),
        };
        differences.extend(behaviour::check_expect(
            key,
            &call.expect,
            seen.observation.class,
            seen.payload.as_ref(),
            self.schemas.get(a).and_then(Option::as_ref),
        ));
        if let Some(budget) = &call.expect.latency {
            let budget = budget.get_ref();
            differences.extend(behaviour::over_budget(
                key,
                &seen.observation,
                budget.p50_ms.as_ref().map(|s| *s.get_ref()),
                budget.p95_ms.as_ref().map(|s| *s.get_ref()),
            ));
        }
        Some(CallJudgement {
            recorded: recorded.is_some(),
            differences,
        })
    }

    /// The run: each call's judgement (`judged[i]` for `plan[i]`, made by
    /// [`Judge::call`], or `None` to have it made here), the default
    /// probes, the tools whose calls were `refused` (one difference each,
    /// [`refused`]), and the fingerprint of what was observed. A call not
    /// seen (its server was unavailable, or its tool refused) is not
    /// judged.
    pub fn finish(
        &self,
        plan: &[Planned],
        seen: &[Option<Seen>],
        judged: Vec<Option<CallJudgement>>,
        refusals: &[Refusal],
    ) -> Judged {
        let mut out = Judged::default();
        out.differences.extend(refused(plan, refusals));
        let mut judged = judged.into_iter();
        for (p, s) in plan.iter().zip(seen) {
            let early = judged.next().flatten();
            let Some(s) = s else { continue };
            out.called.insert(p.tool_key.clone());
            if let Some(j) = early.or_else(|| self.call(p, s)) {
                if !j.recorded {
                    out.unrecorded.push(p.key.clone());
                }
                out.differences.extend(j.differences);
            }
        }
        let mut held = BTreeMap::new();
        for (key, (parameter, without, with)) in probes(plan, seen) {
            let (Some(without), Some(with)) = (without, with) else {
                continue;
            };
            held.insert(
                key.to_string(),
                behaviour::probe_differs(parameter, without, with).is_none(),
            );
            out.differences.extend(behaviour::probe_difference(
                key,
                parameter,
                self.snapshot.probes.get(key).copied(),
                without,
                with,
            ));
        }
        // As `Snapshot::with_probes` would, without copying the observations.
        let observed: BTreeMap<&str, &Observation> = plan
            .iter()
            .zip(seen)
            .filter(|(p, _)| p.role == Role::Call)
            .filter_map(|(p, s)| Some((p.key.as_str(), &s.as_ref()?.observation)))
            .collect();
        out.fingerprint = behaviour::fingerprint(&observed, &held);
        out
    }
}

/// Compares what was `seen` with the `snapshot` and with the contracts'
/// assertions, all at once: [`Judge`] call by call, then as a whole.
pub fn judge(
    contracts: &Contracts,
    catalog: &Catalog,
    snapshot: &Snapshot,
    plan: &[Planned],
    seen: &[Option<Seen>],
) -> Judged {
    Judge::new(contracts, catalog, snapshot).finish(plan, seen, Vec::new(), &[])
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::collections::BTreeMap as Map2;
    use toolpin_manifest::ServerPin;

    const FILE: &str = r#"
version = 1
[tools."orders/search"]
arguments = { page_size = 50 }
[[tools."orders/search".calls]]
name = "golden"
[[tools."orders/search".default_probes]]
parameter = "page_size"
default = 50
"#;

    fn catalog() -> Catalog {
        let tool = json!({"name": "search", "annotations": {"readOnlyHint": true},
            "inputSchema": {"type": "object", "properties": {"page_size": {"type": "integer", "default": 50}}}});
        let pin =
            ServerPin::new("orders", json!({"file": "t.json"}), "mcp", vec![tool]).expect("pin");
        Catalog::new("default", Map2::from([("orders".to_string(), pin)])).expect("catalog")
    }

    fn rows(n: usize) -> Outcome {
        let rows: Vec<Value> = (0..n).map(|i| json!({"n": i})).collect();
        Outcome::Result(json!({"structuredContent": {"rows": rows}}))
    }

    /// The plan's calls seen with `rows[i]` rows each.
    fn seen_with(plan: &[Planned], rows_each: &[usize]) -> Vec<Option<Seen>> {
        plan.iter()
            .zip(rows_each)
            .map(|(p, n)| Some(seen(p, vec![(rows(*n), 1.0)])))
            .collect()
    }

    /// `tool` pinned as the lockfile pins it.
    fn pin(tool: Value) -> PinnedTool {
        PinnedTool::new(&tool, &mut Vec::new())
    }

    #[test]
    fn the_gate_calls_the_pinned_tool_or_a_still_read_only_one_only() {
        let contracts = Contracts::parse(FILE, "c.toml").expect("parse");
        let catalog = catalog();
        let gate = Gate::new(&contracts, &catalog);
        let pinned = catalog.servers["orders"].tools["search"].value();
        let with = |annotations: Value, description: &str| {
            let mut t = pinned.clone();
            t["annotations"] = annotations;
            t["description"] = json!(description);
            pin(t)
        };
        // The pinned definition, and a reworded one still read-only.
        assert_eq!(
            gate.admit("orders", "search", Some(&pin(pinned.clone()))),
            Ok(())
        );
        let reworded = with(json!({"readOnlyHint": true}), "Finds orders.");
        assert_eq!(gate.admit("orders", "search", Some(&reworded)), Ok(()));
        // Not listed: unavailable.
        let r = gate.admit("orders", "search", None).expect_err("unlisted");
        assert!(r.unlisted);
        assert_eq!(r.label(), "unavailable");
        assert_eq!(
            r.reason,
            "the server no longer lists it (tools/list on this session)"
        );
        // Drifted and no longer read-only, however it says so.
        for (annotations, why) in [
            (
                json!({"readOnlyHint": false, "destructiveHint": true}),
                "its annotations say readOnlyHint: false and destructiveHint: true",
            ),
            (
                json!({"readOnlyHint": false}),
                "its annotations say readOnlyHint: false",
            ),
            (
                json!({"title": "Search"}),
                "its annotations do not say readOnlyHint: true",
            ),
            (Value::Null, "it has no annotations, so it is not read-only"),
            (
                json!({"readOnlyHint": true, "destructiveHint": true}),
                "its annotations say both readOnlyHint: true and destructiveHint: true",
            ),
        ] {
            let live = with(annotations.clone(), "Deletes every order.");
            let r = gate
                .admit("orders", "search", Some(&live))
                .expect_err("refused");
            assert_eq!(
                (r.label(), r.tool_key.as_str()),
                ("drifted", "orders/search")
            );
            assert_eq!(
                r.reason,
                format!(
                    "its live definition is no longer the pinned one and is not read-only: {why}"
                )
            );
            assert_eq!(r.before, Some(json!({"readOnlyHint": true})));
            assert_eq!(r.after, Some(annotations));
        }
        // One difference per refused tool, counting the calls not made.
        let refusal = gate.admit("orders", "search", None).expect_err("unlisted");
        let d = refused(&plan(&contracts), &[refusal]);
        assert_eq!(d.len(), 1);
        assert_eq!(
            (d[0].rule, d[0].call.as_str()),
            (REFUSED_RULE, "orders/search")
        );
        assert_eq!(
            d[0].message,
            "3 calls not made: the server no longer lists it (tools/list on this session); `toolpin check` shows the drift"
        );
        // side_effects = "allowed": the user's call, while it is listed.
        let allowed = Contracts::parse(
            &FILE.replace(
                "arguments = { page_size = 50 }",
                "side_effects = \"allowed\"\narguments = { page_size = 50 }",
            ),
            "c.toml",
        )
        .expect("parse");
        let gate = Gate::new(&allowed, &catalog);
        let destructive = with(json!({"destructiveHint": true}), "Deletes every order.");
        assert_eq!(gate.admit("orders", "search", Some(&destructive)), Ok(()));
        assert!(gate.admit("orders", "search", None).is_err());
    }

    #[test]
    fn a_probe_is_two_calls_without_and_with_the_default() {
        let contracts = Contracts::parse(FILE, "c.toml").expect("parse");
        let plan = plan(&contracts);
        let got: Vec<(&str, &Role, Option<&Value>)> = plan
            .iter()
            .map(|p| (p.key.as_str(), &p.role, p.arguments.get("page_size")))
            .collect();
        let probe = |explicit| Role::Probe {
            parameter: "page_size".into(),
            explicit,
        };
        assert_eq!(
            got,
            [
                ("orders/search#golden", &Role::Call, Some(&json!(50))),
                ("orders/search#probe:page_size", &probe(false), None),
                (
                    "orders/search#probe:page_size",
                    &probe(true),
                    Some(&json!(50))
                ),
            ]
        );
    }

    #[test]
    fn a_default_that_moves_is_one_finding_of_the_probe() {
        let contracts = Contracts::parse(FILE, "c.toml").expect("parse");
        let plan = plan(&contracts);
        let (snapshot, notes) = snapshot(&plan, &seen_with(&plan, &[50, 50, 50]));
        assert!(notes.is_empty(), "{notes:?}");
        assert_eq!(
            snapshot.probes,
            Map2::from([("orders/search#probe:page_size".to_string(), true)])
        );
        assert_eq!(snapshot.calls.len(), 1);
        // Unchanged: nothing.
        let j = judge(
            &contracts,
            &catalog(),
            &snapshot,
            &plan,
            &seen_with(&plan, &[50, 50, 50]),
        );
        assert!(j.differences.is_empty(), "{:?}", j.differences);
        assert_eq!(j.fingerprint, snapshot.fingerprint);
        // Left out, the server now gives 20: the probe, and only it.
        let j = judge(
            &contracts,
            &catalog(),
            &snapshot,
            &plan,
            &seen_with(&plan, &[50, 20, 50]),
        );
        let rules: Vec<(&str, &str)> = j
            .differences
            .iter()
            .map(|d| (d.rule, d.call.as_str()))
            .collect();
        assert_eq!(
            rules,
            [("default-behaviour-changed", "orders/search#probe:page_size")]
        );
        assert!(
            j.differences[0]
                .message
                .contains("held 20 items, with its pinned default 50"),
            "{:?}",
            j.differences
        );
        assert_ne!(j.fingerprint, snapshot.fingerprint);
    }

    #[test]
    fn a_probe_that_never_held_is_noted_at_record_and_not_reported_as_a_change() {
        let contracts = Contracts::parse(FILE, "c.toml").expect("parse");
        let plan = plan(&contracts);
        let (snapshot, notes) = snapshot(&plan, &seen_with(&plan, &[50, 20, 50]));
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(!snapshot.probes["orders/search#probe:page_size"]);
        let j = judge(
            &contracts,
            &catalog(),
            &snapshot,
            &plan,
            &seen_with(&plan, &[50, 20, 50]),
        );
        assert!(j.differences.is_empty(), "{:?}", j.differences);
        // A snapshot from before probes were kept: the probe is judged.
        let old = Snapshot::new(snapshot.calls.clone());
        let j = judge(
            &contracts,
            &catalog(),
            &old,
            &plan,
            &seen_with(&plan, &[50, 20, 50]),
        );
        assert_eq!(j.differences.len(), 1);
    }

    #[test]
    fn a_call_not_seen_is_not_judged() {
        let contracts = Contracts::parse(FILE, "c.toml").expect("parse");
        let plan = plan(&contracts);
        let (snapshot, _) = snapshot(&plan, &seen_with(&plan, &[50, 50, 50]));
        let j = judge(
            &contracts,
            &catalog(),
            &snapshot,
            &plan,
            &[None, None, None],
        );
        assert!(j.differences.is_empty());
        assert!(j.called.is_empty());
    }
}
