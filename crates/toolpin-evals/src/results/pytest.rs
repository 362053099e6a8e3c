//! pytest-json-report's output (`pytest --json-report
//! --json-report-file=F`, pytest-json-report 1.5): one case run per entry
//! of `tests`, the case id being the test's node id
//! (`test_agent.py::TestMemory::test_remembers`).
//!
//! Outcomes: `passed` and `xpassed` are passes; `failed`, `error` and
//! `xfailed` are not; `skipped` tests did not run and are left out. An
//! xfail is read as what the agent did (the check failed), not as "the
//! suite is green": a comparison asks whether the agent behaves differently
//! against two catalogs, and a known failure that starts passing (xpassed)
//! is such a change. JUnit XML, where pytest writes an xfail as a
//! `<skipped type="pytest.xfail">`, is read the same way (junit.rs).
//!
//! What the agent did comes from the test's `user_properties`, written with
//! pytest's `record_property(key, value)` and serialized by the plugin as a
//! list of one-key objects: `tool_calls` (a list of names, or of
//! `{"name": .., "arguments": ..}` objects), `turns`, `score`, `cost`
//! (`{"input_tokens", "output_tokens", "usd"}`) and `repeat`. Other
//! properties are ignored. docs/compare-readers.md has the details.

use std::path::Path;

use serde::Deserialize;
use serde_json::Value;

use super::{CaseRun, Cost, Error, Names};

#[derive(Deserialize)]
struct Report {
    tests: Vec<Test>,
}

#[derive(Deserialize)]
struct Test {
    nodeid: String,
    outcome: String,
    #[serde(default)]
    setup: Option<Stage>,
    #[serde(default)]
    call: Option<Stage>,
    #[serde(default)]
    teardown: Option<Stage>,
    #[serde(default)]
    user_properties: Option<Value>,
}

#[derive(Deserialize)]
struct Stage {
    #[serde(default)]
    outcome: Option<String>,
    #[serde(default)]
    crash: Option<Crash>,
    #[serde(default)]
    longrepr: Option<Value>,
}

#[derive(Deserialize)]
struct Crash {
    #[serde(default)]
    message: Option<String>,
}

/// A JSON object with a `tests` array and one of the report's other
/// top-level keys.
pub(super) fn detect(doc: &serde_json::Map<String, Value>) -> bool {
    matches!(doc.get("tests"), Some(Value::Array(_)))
        && ["summary", "exitcode", "root", "created"]
            .iter()
            .any(|k| doc.contains_key(*k))
}

pub(super) fn read(path: &Path, bytes: &[u8], names: &mut Names) -> Result<Vec<CaseRun>, Error> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let report: Report = serde_json::from_slice(bytes)
        .map_err(|e| json_error(path, &e, "not a pytest-json-report file"))?;
    let mut runs = Vec::with_capacity(report.tests.len());
    for (i, test) in report.tests.iter().enumerate() {
        let at =
            |message: String| Error::at(path, format!("tests[{i}] ({}): {message}", test.nodeid));
        if test.nodeid.is_empty() {
            return Err(Error::at(path, format!("tests[{i}]: `nodeid` is empty")));
        }
        let passed = match test.outcome.as_str() {
            "passed" | "xpassed" => true,
            "failed" | "error" | "xfailed" => false,
            "skipped" => continue,
            other => {
                return Err(at(format!(
                    "unknown outcome {other:?} (expected passed, failed, error, skipped, xfailed or xpassed)"
                )))
            }
        };
        let mut run = CaseRun::new(test.nodeid.clone(), passed);
        if test.outcome == "error" {
            run.error = Some(stage_error(test).unwrap_or_else(|| "error".to_string()));
        }
        if let Some(props) = &test.user_properties {
            let props = properties(props).map_err(at)?;
            apply_properties(&mut run, &props, names).map_err(at)?;
        }
        runs.push(run);
    }
    Ok(runs)
}

/// The message of the first stage (setup, call, teardown) that failed.
fn stage_error(test: &Test) -> Option<String> {
    [&test.setup, &test.call, &test.teardown]
        .into_iter()
        .flatten()
        .find(|s| s.outcome.as_deref() == Some("failed"))
        .and_then(|s| {
            let message = s.crash.as_ref().and_then(|c| c.message.clone());
            message.or_else(|| match &s.longrepr {
                Some(Value::String(text)) => Some(text.clone()),
                _ => None,
            })
        })
        .map(|m| first_line(&m))
}

/// The first non-empty line of a message, trimmed.
pub(super) fn first_line(message: &str) -> String {
    message
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("")
        .to_string()
}

/// `user_properties` as (key, value) pairs: the plugin writes a list of
/// one-key objects; a list of `[key, value]` pairs (pytest's own tuples)
/// is taken too.
fn properties(value: &Value) -> Result<Vec<(&str, &Value)>, String> {
    let Value::Array(items) = value else {
        return Err("`user_properties` is not a list".to_string());
    };
    let mut out = Vec::new();
    for item in items {
        match item {
            Value::Object(obj) => out.extend(obj.iter().map(|(k, v)| (k.as_str(), v))),
            Value::Array(pair) if pair.len() == 2 => match &pair[0] {
                Value::String(k) => out.push((k.as_str(), &pair[1])),
                _ => return Err("a `user_properties` pair has a key that is not a string".into()),
            },
            _ => {
                return Err("`user_properties` holds an entry that is not a one-key object".into())
            }
        }
    }
    Ok(out)
}

/// Sets what the recorded properties say on `run`. Shared with junit.rs,
/// whose properties carry the same values as text.
pub(super) fn apply_properties(
    run: &mut CaseRun,
    props: &[(&str, &Value)],
    names: &mut Names,
) -> Result<(), String> {
    for (key, value) in props {
        match *key {
            "tool_calls" => run.tool_calls = Some(tool_calls(value, names)?),
            "turns" => run.turns = Some(count(value, "turns")?),
            "repeat" => run.repeat = Some(count(value, "repeat")?),
            "score" => match value.as_f64() {
                Some(s) if s.is_finite() => run.score = Some(s),
                _ => return Err("the `score` property is not a finite number".into()),
            },
            "cost" => run.cost = Some(cost(value)?),
            _ => {}
        }
    }
    Ok(())
}

/// A list of tool names, or of `{"name": ..}` objects (OpenAI-style
/// `{"function": {"name": ..}}` too), as name ids.
pub(super) fn tool_calls(value: &Value, names: &mut Names) -> Result<Vec<u32>, String> {
    let Value::Array(items) = value else {
        return Err("the `tool_calls` property is not a list".into());
    };
    let mut ids = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let name = match item {
            Value::String(s) => Some(s.as_str()),
            Value::Object(obj) => obj
                .get("name")
                .and_then(Value::as_str)
                .or_else(|| obj.get("function")?.get("name")?.as_str()),
            _ => None,
        };
        match name {
            Some(n) if !n.is_empty() => ids.push(names.id(n)),
            _ => {
                return Err(format!(
                    "`tool_calls[{i}]` is neither a tool name nor an object with a `name`"
                ))
            }
        }
    }
    Ok(ids)
}

fn count(value: &Value, what: &str) -> Result<u32, String> {
    value
        .as_u64()
        .and_then(|n| u32::try_from(n).ok())
        .ok_or_else(|| format!("the `{what}` property is not a whole number ≥ 0"))
}

fn cost(value: &Value) -> Result<Cost, String> {
    let Value::Object(obj) = value else {
        return Err("the `cost` property is not an object".into());
    };
    let tokens = |key: &str| -> Result<Option<u64>, String> {
        match obj.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => v
                .as_u64()
                .map(Some)
                .ok_or_else(|| format!("`cost.{key}` is not a whole number ≥ 0")),
        }
    };
    let usd = match obj.get("usd") {
        None | Some(Value::Null) => None,
        Some(v) => match v.as_f64() {
            Some(u) if u.is_finite() && u >= 0.0 => Some(u),
            _ => return Err("`cost.usd` must be a number ≥ 0".into()),
        },
    };
    Ok(Cost {
        input_tokens: tokens("input_tokens")?,
        output_tokens: tokens("output_tokens")?,
        usd,
    })
}

/// A JSON document that does not parse: `PATH:LINE: what: reason`.
pub(super) fn json_error(path: &Path, e: &serde_json::Error, what: &str) -> Error {
    let text = e.to_string();
    let text = match text.rfind(" at line ") {
        Some(i) => text[..i].to_string(),
        None => text,
    };
    if e.line() > 0 {
        Error::at_line(path, e.line(), format!("{what}: {text}"))
    } else {
        Error::at(path, format!("{what}: {text}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_str(text: &str, names: &mut Names) -> Result<Vec<CaseRun>, Error> {
        read(Path::new("report.json"), text.as_bytes(), names)
    }

    #[test]
    fn outcomes_and_properties() {
        let mut names = Names::default();
        let text = r#"{"created": 1, "exitcode": 1, "root": "/r", "summary": {}, "tests": [
 {"nodeid": "t.py::a", "outcome": "passed", "user_properties": [{"tool_calls": [{"name": "x__y", "arguments": {}}, "z"]}, {"turns": 3}, {"score": 0.5}, {"cost": {"input_tokens": 7, "usd": 0.01}}, {"other": [1]}]},
 {"nodeid": "t.py::b", "outcome": "skipped"},
 {"nodeid": "t.py::c", "outcome": "error", "setup": {"outcome": "failed", "crash": {"message": "RuntimeError: boom\nmore"}}},
 {"nodeid": "t.py::d", "outcome": "xfailed", "extra": true},
 {"nodeid": "t.py::e", "outcome": "failed", "user_properties": [["repeat", 2]]}
]}"#;
        let runs = read_str(text, &mut names).unwrap();
        let got: Vec<(&str, bool)> = runs.iter().map(|r| (r.case.as_str(), r.passed)).collect();
        assert_eq!(
            got,
            [
                ("t.py::a", true),
                ("t.py::c", false),
                ("t.py::d", false),
                ("t.py::e", false)
            ]
        );
        let calls: Vec<&str> = runs[0]
            .tool_calls
            .as_ref()
            .unwrap()
            .iter()
            .map(|i| names.name(*i))
            .collect();
        assert_eq!(calls, ["x__y", "z"]);
        assert_eq!(runs[0].turns, Some(3));
        assert_eq!(runs[0].score, Some(0.5));
        assert_eq!(runs[0].cost.unwrap().input_tokens, Some(7));
        assert_eq!(runs[1].error.as_deref(), Some("RuntimeError: boom"));
        assert_eq!(runs[1].tool_calls, None);
        assert_eq!(runs[3].repeat, Some(2));
    }

    #[test]
    fn bad_input_is_one_line() {
        let mut names = Names::default();
        let err = read_str("{\"tests\": [{\"nodeid\": \"a\"", &mut names).unwrap_err();
        assert!(
            err.message()
                .starts_with("report.json:1: not a pytest-json-report file"),
            "{err}"
        );
        let err = read_str(r#"{"tests": [{"nodeid": "a", "outcome": "passed", "user_properties": [{"tool_calls": "x"}]}]}"#, &mut names).unwrap_err();
        assert_eq!(
            err.message(),
            "report.json: tests[0] (a): the `tool_calls` property is not a list"
        );
        let err = read_str(
            r#"{"tests": [{"nodeid": "a", "outcome": "weird"}]}"#,
            &mut names,
        )
        .unwrap_err();
        assert!(err.message().contains("unknown outcome \"weird\""), "{err}");
        assert!(!err.message().contains('\n'));
    }

    #[test]
    fn detected_by_top_level_keys() {
        let doc = |s: &str| serde_json::from_str::<serde_json::Map<String, Value>>(s).unwrap();
        assert!(detect(&doc(r#"{"tests": [], "summary": {}}"#)));
        assert!(!detect(&doc(r#"{"tests": []}"#)));
        assert!(!detect(&doc(r#"{"tests": {}, "root": "/"}"#)));
    }
}
