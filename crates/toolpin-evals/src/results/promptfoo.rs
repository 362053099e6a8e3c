//! promptfoo's `promptfoo eval -o results.json` (output version 3,
//! promptfoo 0.123): one case run per row of `results.results`, a row
//! being one test × one prompt × one provider (× one repeat).
//!
//! - case id: the test's `description`; when several tests share one
//!   description with different vars (a test whose vars are lists expands
//!   into one row per combination), the vars follow it as canonical JSON
//!   (`greet {"name":"Ada"}`); a test with no description is its vars as
//!   canonical JSON, or its assertions when it has no vars. When the file
//!   has more than one provider or more than one prompt, the labels of the
//!   row's provider and prompt follow in brackets (`greet [mock-agent /
//!   terse]`), so that ids stay unique. Row indices are never part of the
//!   id: `testIdx` shifts with `--repeat` and with every test added, and
//!   the id must pair the same case across two runs of the suite.
//! - repeat: promptfoo writes `--repeat N` (and a test's `options.repeat`)
//!   as N rows per case with consecutive `testIdx` and no repeat number;
//!   when the file says it repeated (`runtimeOptions.repeat`,
//!   `config.evaluateOptions.repeat` or a test's `options.repeat` above 1),
//!   the k-th row of a case (by `testIdx`) is repeat k. Otherwise `repeat`
//!   is not set and the file is one repeat.
//! - passed: `success`; score: `score`.
//! - error: the row's `error` when promptfoo counted it an error
//!   (`failureReason` 2: the provider failed), not an assertion's reason.
//! - cost: `cost` (USD) and `tokenUsage.prompt` / `.completion`.
//! - tool calls: from the provider's response, the way promptfoo's own
//!   providers return them: `output` holding OpenAI-style `tool_calls` (the
//!   array itself, or a message with a `tool_calls` member, or a
//!   `function_call`), Anthropic-style `tool_use` content blocks, or a JSON
//!   string of either; plus the MCP calls promptfoo ran itself
//!   (`response.metadata.toolCalls`). A text output is an agent that called
//!   nothing; a row without an output (an error) records no calls.
//! - turns: not in promptfoo's output; left unset.

use std::collections::{BTreeSet, HashMap};
use std::path::Path;

use serde::Deserialize;
use serde_json::Value;

use super::pytest::json_error;
use super::{CaseRun, Cost, Error, Names};

#[derive(Deserialize)]
struct Output {
    results: Results,
    #[serde(default)]
    config: Option<Value>,
    #[serde(default, rename = "runtimeOptions")]
    runtime_options: Option<Value>,
}

#[derive(Deserialize)]
struct Results {
    results: Vec<Row>,
}

#[derive(Deserialize)]
struct Row {
    #[serde(default)]
    description: Option<String>,
    #[serde(default, rename = "testIdx")]
    test_idx: Option<u64>,
    #[serde(default, rename = "testCase")]
    test_case: Option<Value>,
    #[serde(default)]
    vars: Option<Value>,
    #[serde(default)]
    provider: Option<Value>,
    #[serde(default)]
    prompt: Option<Value>,
    #[serde(default)]
    response: Option<Value>,
    success: bool,
    #[serde(default)]
    score: Option<Value>,
    #[serde(default)]
    error: Option<Value>,
    #[serde(default, rename = "failureReason")]
    failure_reason: Option<u64>,
    #[serde(default)]
    cost: Option<Value>,
    #[serde(default, rename = "tokenUsage")]
    token_usage: Option<Value>,
}

/// An object with `results` holding a `results` array, and `evalId` or
/// `config` beside it.
pub(super) fn detect(doc: &serde_json::Map<String, Value>) -> bool {
    let rows = doc
        .get("results")
        .and_then(|r| r.get("results"))
        .is_some_and(Value::is_array);
    rows && (doc.contains_key("evalId") || doc.contains_key("config"))
}

pub(super) fn read(path: &Path, bytes: &[u8], names: &mut Names) -> Result<Vec<CaseRun>, Error> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let output: Output = serde_json::from_slice(bytes)
        .map_err(|e| json_error(path, &e, "not a promptfoo output file"))?;
    let rows = output.results.results;

    // Case ids: description, vars where a description is shared.
    let descriptions: Vec<Option<&str>> = rows.iter().map(description).collect();
    let vars: Vec<String> = rows.iter().map(|r| canonical(row_vars(r))).collect();
    let mut vars_per_description: HashMap<&str, BTreeSet<&str>> = HashMap::new();
    for (d, v) in descriptions.iter().zip(&vars) {
        if let Some(d) = d {
            vars_per_description.entry(d).or_default().insert(v);
        }
    }
    let providers: BTreeSet<String> = rows.iter().map(provider_label).collect();
    let prompts: BTreeSet<String> = rows.iter().map(prompt_label).collect();
    let repeated = repeat_count(output.runtime_options.as_ref()) > 1
        || repeat_count(
            output
                .config
                .as_ref()
                .and_then(|c| c.get("evaluateOptions")),
        ) > 1
        || rows
            .iter()
            .any(|r| repeat_count(r.test_case.as_ref().and_then(|t| t.get("options"))) > 1);

    let mut order: Vec<usize> = (0..rows.len()).collect();
    order.sort_by_key(|i| rows[*i].test_idx.unwrap_or(u64::MAX));
    let mut seen: HashMap<String, u32> = HashMap::new();
    let mut runs: Vec<(usize, CaseRun)> = Vec::with_capacity(rows.len());
    for i in order {
        let row = &rows[i];
        let at = |m: String| Error::at(path, format!("results.results[{i}]: {m}"));
        let mut id = match descriptions[i] {
            Some(d) if vars_per_description.get(d).is_some_and(|s| s.len() > 1) => {
                format!("{d} {}", vars[i])
            }
            Some(d) => d.to_string(),
            None if vars[i] != "{}" && vars[i] != "null" => vars[i].clone(),
            None => canonical(row.test_case.as_ref().and_then(|t| t.get("assert"))),
        };
        let mut labels = Vec::new();
        if providers.len() > 1 {
            labels.push(provider_label(row));
        }
        if prompts.len() > 1 {
            labels.push(prompt_label(row));
        }
        if !labels.is_empty() {
            id = format!("{id} [{}]", labels.join(" / "));
        }
        let mut run = CaseRun::new(id.clone(), row.success);
        if repeated {
            let k = seen.entry(id).or_insert(0);
            run.repeat = Some(*k);
            *k += 1;
        }
        run.score = match &row.score {
            None | Some(Value::Null) => None,
            Some(v) => match v.as_f64() {
                Some(s) if s.is_finite() => Some(s),
                _ => return Err(at("`score` is not a finite number".into())),
            },
        };
        run.cost = cost(row).map_err(at)?;
        let response_error = row
            .response
            .as_ref()
            .and_then(|r| r.get("error"))
            .and_then(text);
        let is_error = match row.failure_reason {
            Some(reason) => reason == 2,
            None => !row.success && response_error.is_some(),
        };
        if is_error {
            let message = row.error.as_ref().and_then(text).or(response_error);
            run.error = Some(message.unwrap_or_else(|| "error".to_string()));
        }
        run.tool_calls = row.response.as_ref().and_then(|r| response_calls(r, names));
        runs.push((i, run));
    }
    // Back in file order.
    runs.sort_by_key(|(i, _)| *i);
    Ok(runs.into_iter().map(|(_, r)| r).collect())
}

fn description(row: &Row) -> Option<&str> {
    row.test_case
        .as_ref()
        .and_then(|t| t.get("description"))
        .and_then(Value::as_str)
        .or(row.description.as_deref())
        .filter(|d| !d.is_empty())
}

fn row_vars(row: &Row) -> Option<&Value> {
    row.vars
        .as_ref()
        .or_else(|| row.test_case.as_ref().and_then(|t| t.get("vars")))
}

fn provider_label(row: &Row) -> String {
    let p = row.provider.as_ref();
    let label = p.and_then(|p| p.get("label")).and_then(Value::as_str);
    let id = p.and_then(|p| p.get("id")).and_then(Value::as_str);
    match (label, id, p) {
        (Some(l), _, _) if !l.is_empty() => l.to_string(),
        (_, Some(i), _) => i.to_string(),
        (_, _, Some(Value::String(s))) => s.clone(),
        _ => String::new(),
    }
}

fn prompt_label(row: &Row) -> String {
    let p = row.prompt.as_ref();
    let label = p.and_then(|p| p.get("label")).and_then(Value::as_str);
    let raw = p.and_then(|p| p.get("raw")).and_then(Value::as_str);
    label
        .filter(|l| !l.is_empty())
        .or(raw)
        .unwrap_or("")
        .to_string()
}

fn repeat_count(options: Option<&Value>) -> u64 {
    options
        .and_then(|o| o.get("repeat"))
        .and_then(|r| r.as_u64().or_else(|| r.as_str()?.parse().ok()))
        .unwrap_or(1)
}

/// JSON with object keys sorted, compact: the same vars give the same text
/// whatever order promptfoo wrote them in.
fn canonical(value: Option<&Value>) -> String {
    fn write(v: &Value, out: &mut String) {
        match v {
            Value::Object(map) => {
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort();
                out.push('{');
                for (n, k) in keys.into_iter().enumerate() {
                    if n > 0 {
                        out.push(',');
                    }
                    out.push_str(&Value::String(k.clone()).to_string());
                    out.push(':');
                    if let Some(item) = map.get(k) {
                        write(item, out);
                    }
                }
                out.push('}');
            }
            Value::Array(items) => {
                out.push('[');
                for (n, item) in items.iter().enumerate() {
                    if n > 0 {
                        out.push(',');
                    }
                    write(item, out);
                }
                out.push(']');
            }
            other => out.push_str(&other.to_string()),
        }
    }
    let mut out = String::new();
    match value {
        Some(v) => write(v, &mut out),
        None => out.push_str("null"),
    }
    out
}

fn text(v: &Value) -> Option<String> {
    match v {
        Value::Null => None,
        Value::String(s) if s.is_empty() => None,
        Value::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    }
}

fn cost(row: &Row) -> Result<Option<Cost>, String> {
    let usd = match &row.cost {
        None | Some(Value::Null) => None,
        Some(v) => match v.as_f64() {
            Some(u) if u.is_finite() && u >= 0.0 => Some(u),
            _ => return Err("`cost` must be a number ≥ 0".into()),
        },
    };
    let tokens = |key: &str| {
        row.token_usage
            .as_ref()
            .and_then(|t| t.get(key))
            .and_then(Value::as_u64)
    };
    let cost = Cost {
        input_tokens: tokens("prompt"),
        output_tokens: tokens("completion"),
        usd,
    };
    Ok((cost != Cost::default()).then_some(cost))
}

/// The tools a provider's response says the agent called, `None` when the
/// response has no output to say it.
fn response_calls(response: &Value, names: &mut Names) -> Option<Vec<u32>> {
    let output = response.get("output").filter(|o| !o.is_null());
    let mcp = response
        .get("metadata")
        .and_then(|m| m.get("toolCalls"))
        .and_then(Value::as_array);
    if output.is_none() && mcp.is_none() {
        return None;
    }
    let mut found = Vec::new();
    if let Some(output) = output {
        calls_in(output, &mut found, 0);
    }
    for call in mcp.into_iter().flatten() {
        if let Some(name) = call.get("name").and_then(Value::as_str) {
            found.push(name.to_string());
        }
    }
    Some(found.iter().map(|n| names.id(n)).collect())
}

/// The name of one OpenAI-style call (`{"function": {"name"}}`), legacy
/// `function_call` (`{"name", "arguments"}`) or Anthropic `tool_use` block.
fn call_name(v: &Value) -> Option<&str> {
    let obj = v.as_object()?;
    if let Some(name) = obj
        .get("function")
        .and_then(|f| f.get("name"))
        .and_then(Value::as_str)
    {
        return Some(name);
    }
    let name = obj.get("name")?.as_str()?;
    let kind = obj.get("type").and_then(Value::as_str);
    let call_like = obj.contains_key("arguments")
        || obj.contains_key("input")
        || matches!(kind, Some("tool_use" | "function_call" | "function"));
    call_like.then_some(name)
}

fn calls_in(v: &Value, found: &mut Vec<String>, depth: usize) {
    if depth > 4 {
        return;
    }
    match v {
        Value::String(s) => {
            let t = s.trim_start();
            if t.starts_with('[') || t.starts_with('{') {
                if let Ok(parsed) = serde_json::from_str::<Value>(s) {
                    calls_in(&parsed, found, depth + 1);
                }
            }
        }
        Value::Array(items) => {
            for item in items {
                if let Some(name) = call_name(item) {
                    found.push(name.to_string());
                }
            }
        }
        Value::Object(obj) => {
            if let Some(calls) = obj.get("tool_calls") {
                calls_in(calls, found, depth + 1);
            } else if let Some(call) = obj.get("function_call") {
                if let Some(name) = call_name(call) {
                    found.push(name.to_string());
                }
            } else if let Some(name) = call_name(v) {
                found.push(name.to_string());
            } else if let Some(content) = obj.get("content").filter(|c| c.is_array()) {
                calls_in(content, found, depth + 1);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_str(text: &str, names: &mut Names) -> Result<Vec<CaseRun>, Error> {
        read(Path::new("results.json"), text.as_bytes(), names)
    }

    #[test]
    fn ids_repeats_and_calls() {
        let mut names = Names::default();
        let text = r#"{"evalId": "e", "runtimeOptions": {"repeat": 2}, "results": {"version": 3, "results": [
 {"testIdx": 0, "testCase": {"description": "d", "vars": {"b": 1, "a": 2}}, "vars": {"b": 1, "a": 2}, "success": true, "score": 1, "response": {"output": "[{\"type\": \"tool_use\", \"name\": \"t1\", \"input\": {}}]"}, "cost": 0.5, "tokenUsage": {"prompt": 3, "completion": 4}},
 {"testIdx": 1, "testCase": {"description": "d", "vars": {"a": 2, "b": 1}}, "vars": {"a": 2, "b": 1}, "success": false, "score": 0, "response": {"output": {"content": "hi", "tool_calls": [{"function": {"name": "t2"}}]}}},
 {"testIdx": 2, "testCase": {"description": "d", "vars": {"a": 3}}, "vars": {"a": 3}, "success": true, "response": {"output": "plain"}},
 {"testIdx": 3, "testCase": {"description": "d", "vars": {"a": 3}}, "vars": {"a": 3}, "success": false, "failureReason": 2, "error": "boom", "response": {"error": "boom"}},
 {"testIdx": 4, "testCase": {"vars": {"q": "x"}}, "success": true, "failureReason": 1, "error": "assertion said no"}
]}}"#;
        let runs = read_str(text, &mut names).unwrap();
        let ids: Vec<(&str, Option<u32>)> =
            runs.iter().map(|r| (r.case.as_str(), r.repeat)).collect();
        assert_eq!(
            ids,
            [
                (r#"d {"a":2,"b":1}"#, Some(0)),
                (r#"d {"a":2,"b":1}"#, Some(1)),
                (r#"d {"a":3}"#, Some(0)),
                (r#"d {"a":3}"#, Some(1)),
                (r#"{"q":"x"}"#, Some(0)),
            ]
        );
        let calls = |r: &CaseRun| -> Option<Vec<String>> {
            r.tool_calls
                .as_ref()
                .map(|c| c.iter().map(|i| names.name(*i).to_string()).collect())
        };
        assert_eq!(calls(&runs[0]), Some(vec!["t1".to_string()]));
        assert_eq!(calls(&runs[1]), Some(vec!["t2".to_string()]));
        assert_eq!(calls(&runs[2]), Some(vec![]));
        assert_eq!(calls(&runs[3]), None);
        assert_eq!(runs[3].error.as_deref(), Some("boom"));
        assert_eq!(runs[4].error, None);
        assert_eq!(runs[0].cost.unwrap().output_tokens, Some(4));
        assert_eq!(runs[0].cost.unwrap().usd, Some(0.5));
    }

    #[test]
    fn bad_input_is_one_line() {
        let mut names = Names::default();
        let err = read_str(
            r#"{"evalId": "e", "results": {"results": [{"success": "yes"}]}}"#,
            &mut names,
        )
        .unwrap_err();
        assert!(
            err.message()
                .starts_with("results.json:1: not a promptfoo output file"),
            "{err}"
        );
        let err = read_str(
            r#"{"evalId": "e", "results": {"results": [{"success": true, "score": "x"}]}}"#,
            &mut names,
        )
        .unwrap_err();
        assert_eq!(
            err.message(),
            "results.json: results.results[0]: `score` is not a finite number"
        );
    }

    #[test]
    fn detected_by_top_level_keys() {
        let doc = |s: &str| serde_json::from_str::<serde_json::Map<String, Value>>(s).unwrap();
        assert!(detect(&doc(
            r#"{"evalId": "x", "results": {"results": []}}"#
        )));
        assert!(!detect(&doc(
            r#"{"evalId": "x", "results": {"scores": []}}"#
        )));
    }
}
