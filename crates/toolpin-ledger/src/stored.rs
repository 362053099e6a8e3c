//! How the records are stored: the findings as JSON text with their kinds
//! as bits, a detail's cap, and the severity order recording compares by.
//! The records themselves are `toolpin-ledger-model`'s.

use serde_json::{Map, Value};

use crate::{FindingRecord, Severity};

/// The most bytes of a finding's detail the ledger keeps.
pub const MAX_DETAIL: usize = 4096;

/// `text` cut to at most [`MAX_DETAIL`] bytes at a character boundary,
/// with `…` when cut.
pub(crate) fn capped(text: &str) -> String {
    if text.len() <= MAX_DETAIL {
        return text.to_string();
    }
    let mut end = MAX_DETAIL - '…'.len_utf8();
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

/// Whether `new` is more severe than `old` (anything is more severe than
/// no severity at all).
pub(crate) fn more_severe(new: Option<Severity>, old: Option<Severity>) -> bool {
    match (new, old) {
        (Some(n), Some(o)) => n < o,
        (Some(_), None) => true,
        (None, _) => false,
    }
}

/// The findings as the JSON text stored: an array of objects with
/// `rule`, `pointer`, `severity`, `kind`, `message` and, when there is
/// one, `detail`.
pub(crate) fn findings_json(findings: &[FindingRecord]) -> String {
    let items = findings
        .iter()
        .map(|f| {
            let mut m = Map::new();
            m.insert("rule".into(), Value::String(f.rule.clone()));
            m.insert("pointer".into(), Value::String(f.pointer.clone()));
            m.insert("severity".into(), Value::String(f.severity.name().into()));
            m.insert("kind".into(), Value::String(f.kind.clone()));
            m.insert("message".into(), Value::String(f.message.clone()));
            if let Some(detail) = &f.detail {
                m.insert("detail".into(), Value::String(capped(detail)));
            }
            Value::Object(m)
        })
        .collect();
    Value::Array(items).to_string()
}

/// The finding kinds, in the order of their bits in the `finding_kinds`
/// column (migration 3): structural 1, semantic 2, description 4,
/// behavioural 8.
pub const FINDING_KINDS: [&str; 4] = ["structural", "semantic", "description", "behavioural"];

/// The `finding_kinds` bit set of `findings` (a kind this build does not
/// know sets no bit).
pub(crate) fn kind_bits(findings: &[FindingRecord]) -> i64 {
    findings
        .iter()
        .filter_map(|f| FINDING_KINDS.iter().position(|k| *k == f.kind))
        .fold(0, |bits, i| bits | (1 << i))
}

/// Reads [`findings_json`]'s text back.
pub(crate) fn parse_findings(text: &str) -> Result<Vec<FindingRecord>, String> {
    let value: Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
    let items = value.as_array().ok_or("findings are not an array")?;
    items
        .iter()
        .map(|item| {
            let field = |name: &str| {
                item.get(name)
                    .and_then(Value::as_str)
                    .map(str::to_string)
                    .ok_or_else(|| format!("a finding has no {name}"))
            };
            let severity = field("severity")?;
            Ok(FindingRecord {
                rule: field("rule")?,
                pointer: field("pointer")?,
                severity: Severity::parse(&severity)
                    .ok_or_else(|| format!("unknown severity {severity:?}"))?,
                kind: field("kind")?,
                message: field("message")?,
                detail: item
                    .get("detail")
                    .and_then(Value::as_str)
                    .map(str::to_string),
            })
        })
        .collect()
}
