//! toolpin's own case records: JSON lines, one object per case run
//! (docs/compare.md has the JSON Schema). Only `case` and `passed` are
//! required; unknown members are ignored so that a harness can keep its own
//! fields beside ours.
//!
//! Read with serde into borrowed fields, line by line: the benchmark's
//! 100 MB of records go through here, and a call's `arguments` (most of the
//! bytes) are skipped without being built.

use std::borrow::Cow;
use std::path::Path;

use serde::de::IgnoredAny;
use serde::Deserialize;

use super::{CaseRun, Cost, Error, Names};

#[derive(Deserialize)]
struct Record<'a> {
    #[serde(borrow)]
    case: Cow<'a, str>,
    passed: bool,
    #[serde(default)]
    score: Option<f64>,
    #[serde(default)]
    repeat: Option<u32>,
    #[serde(default, borrow)]
    tool_calls: Option<Vec<Call<'a>>>,
    #[serde(default)]
    turns: Option<u32>,
    #[serde(default)]
    cost: Option<RecordCost>,
    #[serde(default)]
    error: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct Call<'a> {
    #[serde(borrow)]
    name: Cow<'a, str>,
    #[serde(default)]
    #[allow(dead_code)]
    arguments: IgnoredAny,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RecordCost {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    #[serde(default)]
    usd: Option<f64>,
}

/// Whether the first line is a JSON object with a `case` member.
pub(super) fn detect(head: &[u8]) -> bool {
    let line = match head.iter().position(|b| *b == b'\n') {
        Some(end) => &head[..end],
        None => head,
    };
    match serde_json::from_slice::<serde_json::Map<String, serde_json::Value>>(line) {
        Ok(obj) => obj.contains_key("case"),
        Err(_) => false,
    }
}

pub(super) fn read(path: &Path, bytes: &[u8], names: &mut Names) -> Result<Vec<CaseRun>, Error> {
    let text = std::str::from_utf8(bytes).map_err(|e| {
        let line = bytes[..e.valid_up_to()]
            .iter()
            .filter(|b| **b == b'\n')
            .count()
            + 1;
        Error::at_line(path, line, "not UTF-8")
    })?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut runs = Vec::new();
    for (n, line) in text.split('\n').enumerate() {
        let line = line.trim_end_matches('\r');
        if line.trim().is_empty() {
            continue;
        }
        let at = n + 1;
        let record: Record =
            serde_json::from_str(line).map_err(|e| Error::at_line(path, at, reason(&e)))?;
        if record.case.is_empty() {
            return Err(Error::at_line(path, at, "`case` is empty"));
        }
        let tool_calls = record.tool_calls.map(|calls| {
            calls
                .iter()
                .map(|c| names.id(&c.name))
                .collect::<Vec<u32>>()
        });
        if let Some(score) = record.score {
            if !score.is_finite() {
                return Err(Error::at_line(path, at, "`score` is not a finite number"));
            }
        }
        let cost = record.cost.map(|c| Cost {
            input_tokens: c.input_tokens,
            output_tokens: c.output_tokens,
            usd: c.usd,
        });
        if let Some(usd) = cost.and_then(|c| c.usd) {
            if !usd.is_finite() || usd < 0.0 {
                return Err(Error::at_line(path, at, "`cost.usd` must be a number ≥ 0"));
            }
        }
        let error = match record.error {
            None | Some(serde_json::Value::Null) => None,
            Some(serde_json::Value::String(s)) => Some(s),
            Some(other) => Some(other.to_string()),
        };
        runs.push(CaseRun {
            case: record.case.into_owned(),
            passed: record.passed,
            score: record.score,
            repeat: record.repeat,
            tool_calls,
            turns: record.turns,
            cost,
            error,
            line: Some(at),
        });
    }
    Ok(runs)
}

/// serde_json's message without its " at line 1 column N" tail (the line is
/// ours; the column is kept when it helps).
fn reason(e: &serde_json::Error) -> String {
    let text = e.to_string();
    let text = match text.rfind(" at line ") {
        Some(i) => format!("{} (column {})", &text[..i], e.column()),
        None => text,
    };
    format!("not a case record: {text}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_str(text: &str) -> Result<Vec<CaseRun>, Error> {
        read(
            Path::new("runs.jsonl"),
            text.as_bytes(),
            &mut Names::default(),
        )
    }

    #[test]
    fn reads_the_documented_example() {
        let mut names = Names::default();
        let text = r#"{"case": "refund-017", "passed": true, "score": 1.0, "repeat": 0, "tool_calls": [{"name": "orders__lookup_order", "arguments": {"order_id": "ORD-1"}}], "turns": 4, "cost": {"input_tokens": 812, "output_tokens": 95, "usd": 0.0031}, "error": null}
{"case":"refund-018","passed":false}
"#;
        let runs = read(Path::new("r.jsonl"), text.as_bytes(), &mut names).unwrap();
        assert_eq!(runs.len(), 2);
        assert_eq!(runs[0].case, "refund-017");
        assert_eq!(runs[0].repeat, Some(0));
        assert_eq!(runs[0].turns, Some(4));
        assert_eq!(runs[0].cost.unwrap().input_tokens, Some(812));
        let calls = runs[0].tool_calls.as_ref().unwrap();
        assert_eq!(names.name(calls[0]), "orders__lookup_order");
        assert_eq!(runs[1].tool_calls, None);
        assert_eq!(runs[1].line, Some(2));
    }

    #[test]
    fn errors_name_the_file_and_line() {
        let err = read_str("{\"case\":\"a\",\"passed\":true}\n{\"case\":\"b\"}\n").unwrap_err();
        assert!(
            err.message()
                .starts_with("runs.jsonl:2: not a case record: missing field `passed`"),
            "{err}"
        );
        let err = read_str("{\"case\":\"a\",\"passed\":true}\n\n{oops\n").unwrap_err();
        assert!(err.message().starts_with("runs.jsonl:3: "), "{err}");
        let err = read_str("{\"case\":\"\",\"passed\":true}\n").unwrap_err();
        assert_eq!(err.message(), "runs.jsonl:1: `case` is empty");
        let err = read_str("{\"case\":\"a\",\"passed\":\"yes\"}\n").unwrap_err();
        assert!(err.message().contains("expected a boolean"), "{err}");
    }

    #[test]
    fn detected_by_a_case_member_on_the_first_line() {
        assert!(detect(b"{\"case\":\"a\",\"passed\":true}\n{\"case\":"));
        assert!(!detect(b"{\"tests\":[]}"));
        assert!(!detect(b"{\"case\":"));
    }
}
